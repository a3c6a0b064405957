import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { PathValidator, ToolgateError } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  base = tempDir();
  root = join(base, 'app');
  outside = join(base, 'outside');
  mkdirSync(join(root, 'src'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, 'src', 'index.ts'), 'export {}');
  writeFileSync(join(outside, 'secret.txt'), 'secret');
});

function refusal(validator: PathValidator, path: string): ToolgateError {
  try {
    const resolved = validator.resolve(path);
    throw new Error(`expected a refusal for ${JSON.stringify(path)}, got ${resolved}`);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolgateError);
    return error as ToolgateError;
  }
}

describe('PathValidator', () => {
  it('resolves paths inside the root', () => {
    const validator = new PathValidator(root);
    expect(validator.root).toBe(root);
    expect(validator.resolve('src/index.ts')).toBe(join(root, 'src/index.ts'));
    expect(validator.resolve(join(root, 'src'))).toBe(join(root, 'src'));
    expect(validator.resolve('a/b/c/new.txt')).toBe(join(root, 'a/b/c/new.txt'));
  });

  it.each([
    ['.. traversal', '../outside/secret.txt'],
    ['nested .. traversal', 'src/../../outside'],
    ['.. through a missing directory', 'missing/../../outside/x'],
    ['absolute path outside', '/etc/passwd'],
    ['root of the file system', '/'],
  ])('refuses %s', (_name, path) => {
    const error = refusal(new PathValidator(root), path);
    expect(error.code).toBe('PATH_OUTSIDE_ROOT');
    expect(error.message).toContain(root);
  });

  it('refuses a sibling directory sharing the root prefix', () => {
    mkdirSync(`${root}2`);
    expect(refusal(new PathValidator(root), `${root}2/file`).code).toBe('PATH_OUTSIDE_ROOT');
  });

  it('refuses symlinked files and directories pointing outside', () => {
    symlinkSync(join(outside, 'secret.txt'), join(root, 'leak.txt'));
    symlinkSync(outside, join(root, 'leakdir'));
    const validator = new PathValidator(root);
    const error = refusal(validator, 'leak.txt');
    expect(error.code).toBe('PATH_OUTSIDE_ROOT');
    expect(error.message).not.toContain(outside);
    expect(refusal(validator, 'leakdir/secret.txt').code).toBe('PATH_OUTSIDE_ROOT');
    expect(refusal(validator, 'leakdir/new.txt').code).toBe('PATH_OUTSIDE_ROOT');
  });

  it('refuses a dangling symlink pointing outside, so a later write cannot create the file', () => {
    const target = join(outside, 'planted.txt');
    symlinkSync(target, join(root, 'dangling'));
    expect(refusal(new PathValidator(root), 'dangling').code).toBe('PATH_OUTSIDE_ROOT');
    expect(existsSync(target)).toBe(false);
  });

  it('works with a root reached through a symlink', () => {
    const link = join(base, 'root-link');
    symlinkSync(root, link);
    const validator = new PathValidator(link);
    expect(validator.root).toBe(root);
    expect(validator.resolve(join(link, 'src/index.ts'))).toBe(join(root, 'src/index.ts'));
    expect(refusal(validator, join(link, '../outside')).code).toBe('PATH_OUTSIDE_ROOT');
  });

  it('treats ~ literally, never as the home directory', () => {
    const validator = new PathValidator(root);
    expect(validator.resolve('~')).toBe(join(root, '~'));
    expect(validator.resolve('~/.ssh/id_rsa')).toBe(join(root, '~/.ssh/id_rsa'));
  });

  it('refuses NUL bytes and paths longer than PATH_MAX as invalid input', () => {
    const validator = new PathValidator(root);
    expect(refusal(validator, 'src\0/../../../etc/passwd').code).toBe('INVALID_INPUT');
    expect(refusal(validator, 'a/'.repeat(3000)).code).toBe('INVALID_INPUT');
  });

  it('refuses a root that does not exist', () => {
    expect(() => new PathValidator(join(base, 'missing'))).toThrow(ToolgateError);
  });
});
