/**
 * Class 1: URL-shaped arguments are paths to the kernel. With a directory `https:` or a symlink
 * `ftp: -> …` in the work directory (the model can make either), `https://../../outside/secret`
 * and `ftp://secret` name files outside. Each attack is first run without toolgate to show it
 * reads or writes outside, then through `cli_execute` and `shell`, which must refuse it.
 */
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { attackFixture, type AttackFixture, cli, plain, refusedWith, SECRET, shell, which } from './fixture.js';

let fx: AttackFixture;
beforeEach(() => {
  fx = attackFixture();
  mkdirSync(join(fx.work, 'https:', 'host'), { recursive: true });
  mkdirSync(join(fx.work, 'x:'));
  symlinkSync(fx.outside, join(fx.work, 'ftp:'));
  symlinkSync('/', join(fx.work, 'root:'));
});

const READS = [
  ['a directory named https:', () => 'https://../../outside/secret'],
  ['a symlink ftp: to the outside directory', () => 'ftp://secret'],
  ['the same with one slash', () => 'ftp:/secret'],
  ['a symlink root: to /', () => `root:/${fx.secret}`],
  ['dot-dot inside the URL path', () => 'https://host/../../../outside/secret'],
] as const;

describe('URL-shaped arguments that read outside', () => {
  it.each(READS)('refuses cat with %s', async (_name, attack) => {
    const arg = attack();
    expect(plain('cat', [arg], fx.work), 'the attack works without toolgate').toBe(SECRET);
    expect(await refusedWith(() => cli(fx, ['cat'])('cat', [arg]))).toBe('PATH_OUTSIDE_ROOT');
    expect(await refusedWith(() => shell(fx)(`cat '${arg}'`))).toBe('PATH_OUTSIDE_ROOT');
  });

  it('refuses a URL-shaped value of a flag and an element of a list', async () => {
    const run = cli(fx, ['cat', 'head']);
    for (const args of [['--', 'https://../../outside/secret'], ['-n1', 'ftp://secret'], ['--lines=1', 'a,ftp://secret']]) {
      expect(await refusedWith(() => run('head', args)), args.join(' ')).toBe('PATH_OUTSIDE_ROOT');
    }
  });
});

describe('URL-shaped arguments that write outside', () => {
  it.each([
    ['cp to x://../../outside/f', 'cp', ['payload', 'x://../../outside/f']],
    ['cp into a URL-shaped target directory', 'cp', ['-t', 'x://../../outside', 'payload']],
    ['touch through the ftp: symlink', 'touch', ['ftp://f']],
    ['touch through root: to an absolute place', 'touch', ['root://tmp/../$OUT/f']],
  ])('refuses %s', async (_name, binary, rawArgs) => {
    const args = rawArgs.map((arg) => arg.replace('/$OUT', fx.outside));
    // Without toolgate the same command writes outside (a copy of the fixture keeps this one clean).
    const proof = attackFixture();
    mkdirSync(join(proof.work, 'x:'));
    symlinkSync(proof.outside, join(proof.work, 'ftp:'));
    symlinkSync('/', join(proof.work, 'root:'));
    plain(binary, rawArgs.map((arg) => arg.replace('/$OUT', proof.outside)), proof.work);
    expect(existsSync(join(proof.outside, 'f')) || existsSync(join(proof.outside, 'payload')), 'the attack works without toolgate').toBe(true);

    expect(await refusedWith(() => cli(fx, ['cp', 'touch'])(binary, args))).toBe('PATH_OUTSIDE_ROOT');
    expect(existsSync(join(fx.outside, 'f'))).toBe(false);
    expect(existsSync(join(fx.outside, 'payload'))).toBe(false);
  });
});

describe('ordinary URLs', () => {
  it.each([
    'https://example.com/a/b',
    'https://github.com/org/repo.git',
    'git@github.com:org/repo.git',
    'ssh://git@host.example/org/x',
    'http://127.0.0.1:8080/api?limit=10',
  ])('still pass: %s', async (url) => {
    const result = await cli(fx, ['printf'])('printf', ['%s', url]);
    expect(result.stdout).toBe(url);
  });

  it('reach curl and git unchanged', async () => {
    if (which('git')) {
      const result = await cli(fx, ['git'])('git', ['ls-remote', '--get-url', 'https://example.com/x.git']);
      expect(result.stdout.trim()).toBe('https://example.com/x.git');
    }
    if (which('curl')) {
      // Port 9 (discard) on loopback: refused at once, but the URL got through the checks.
      const result = await cli(fx, ['curl'])('curl', ['-s', '--max-time', '5', 'http://127.0.0.1:9/a/b']);
      expect(result.exitCode).not.toBe(0);
    }
  });
});
