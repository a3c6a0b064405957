import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { jsonSchema, zodSchema } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as zodMini } from 'zod/mini';
import { z as zod3 } from 'zod/v3';
import { privateCacheDir } from './import-module.js';
import { describeValue, isToolInputSchema, isToolName, isZodSchema } from './values.js';
import { tempDir } from '../../../tests/helpers/fs.js';

const standardSchema = (vendor: string) => ({
  '~standard': { version: 1, vendor, validate: (value: unknown) => ({ value }) },
});

describe('isZodSchema', () => {
  it.each([
    ['zod 4 object', z.object({ n: z.number() })],
    ['zod 4 string with refinements', z.string().min(1).describe('x')],
    ['zod 4 transform pipe', z.string().transform((s) => s.length)],
    ['zod 4 mini object', zodMini.object({ n: zodMini.number() })],
    ['zod 3 object', zod3.object({ n: zod3.number() })],
    ['zod 3 effects', zod3.string().refine((s) => s.length > 0)],
  ])('accepts a %s', (_, schema) => {
    expect(isZodSchema(schema)).toBe(true);
  });

  it.each([
    ['a plain object', { n: 1 }],
    ['a zod shape', { n: z.number() }],
    ['a JSON Schema', { type: 'object', properties: { n: { type: 'number' } } }],
    ['a look-alike with parse and safeParse', { _def: {}, parse: () => 1, safeParse: () => 1 }],
    ['a look-alike with _zod but no standard interface', { _zod: { def: {} } }],
    ['a non-zod Standard Schema', standardSchema('valibot')],
    ['a zod-vendor Standard Schema without zod internals', standardSchema('zod')],
    ['an AI SDK jsonSchema()', jsonSchema({ type: 'object' })],
    ['a function', () => z.object({})],
    ['an array', [z.number()]],
    ['null', null],
    ['undefined', undefined],
  ])('refuses %s', (_, value) => {
    expect(isZodSchema(value)).toBe(false);
  });
});

describe('isToolInputSchema', () => {
  it.each([
    ['zod 4', z.object({})],
    ['zod 3', zod3.object({})],
    ['jsonSchema()', jsonSchema({ type: 'object', properties: {} })],
    ['zodSchema()', zodSchema(z.object({}))],
    ['another Standard Schema', standardSchema('arktype')],
    ['a lazy schema', () => jsonSchema({ type: 'object' })],
  ])('accepts %s', (_, schema) => {
    expect(isToolInputSchema(schema)).toBe(true);
  });

  it.each([
    ['a plain JSON Schema', { type: 'object', properties: {} }],
    ['a zod shape', { n: z.number() }],
    ['a string', 'object'],
    ['a class', class Schema {}],
  ])('refuses %s', (_, value) => {
    expect(isToolInputSchema(value)).toBe(false);
  });
});

describe('describeValue', () => {
  it.each([
    [undefined, 'undefined'],
    [null, 'null'],
    [1, 'a number'],
    ['s', 'a string'],
    [1n, 'a bigint'],
    [Symbol('s'), 'a symbol'],
    [[1], 'an array'],
    [() => 1, 'a function'],
    [class A {}, 'a class'],
    [z.object({}), 'a zod schema'],
    [jsonSchema({ type: 'object' }), 'an AI SDK schema (jsonSchema(...))'],
    [standardSchema('valibot'), 'a valibot schema (not zod)'],
    [{ n: z.number() }, 'a plain object of zod schemas (a zod shape), not a zod schema'],
    [{ type: 'object' }, 'a plain JSON Schema object'],
    [{ a: 1 }, 'a plain object'],
  ])('%s is %s', (value, expected) => {
    expect(describeValue(value)).toBe(expected);
  });
});

describe('isToolName', () => {
  it('accepts what model providers accept and nothing else', () => {
    for (const name of ['add', 'get_weather', 'delete-everything', 'A1', 'x'.repeat(64)]) expect(isToolName(name), name).toBe(true);
    for (const name of ['', 'has space', 'dot.name', '$dollar', 'ünïcode', 'x'.repeat(65), 'new\nline']) {
      expect(isToolName(name), name).toBe(false);
    }
  });
});

describe('the transpile cache directory', () => {
  const saved = process.env.XDG_CACHE_HOME;
  afterEach(() => {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
  });

  it('is a private directory under XDG_CACHE_HOME', () => {
    const root = tempDir();
    process.env.XDG_CACHE_HOME = root;
    const dir = privateCacheDir();
    expect(dir).toBe(join(root, 'toolgate', 'jiti'));
    expect(statSync(dir as string).mode & 0o777).toBe(0o700);
  });

  it('is not used when others can write to it', () => {
    const root = tempDir();
    process.env.XDG_CACHE_HOME = root;
    mkdirSync(join(root, 'toolgate', 'jiti'), { recursive: true });
    chmodSync(join(root, 'toolgate', 'jiti'), 0o777);
    expect(privateCacheDir()).toBe(false);
  });

  it('is not used when it is a symlink (someone else may own the target)', () => {
    const root = tempDir();
    const elsewhere = tempDir();
    process.env.XDG_CACHE_HOME = root;
    mkdirSync(join(root, 'toolgate'));
    symlinkSync(elsewhere, join(root, 'toolgate', 'jiti'));
    expect(privateCacheDir()).toBe(false);
  });

  it('is not used when it cannot be created', () => {
    const root = tempDir();
    process.env.XDG_CACHE_HOME = join(root, 'file');
    writeFileSync(join(root, 'file'), '');
    expect(privateCacheDir()).toBe(false);
  });
});

describe('the transpile cache against a planted file', () => {
  const ROOT = resolve(import.meta.dirname, '../../..');

  /** Loads `module` in a fresh Node process with the given cache root and temp dir. */
  function loadInSubprocess(module: string, cacheRoot: string, tmp: string, marker: string): void {
    const script = `import { loadCustomTools } from ${JSON.stringify(join(ROOT, 'ts/src/tools-module/load-custom-tools.ts'))};
await loadCustomTools(${JSON.stringify(module)});`;
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, XDG_CACHE_HOME: cacheRoot, TMPDIR: tmp, MARKER: marker },
      stdio: 'pipe',
    });
  }

  /** Loads once to get the real cache entry, then replaces its code (keeping jiti's validity suffix). */
  function plant(cacheDir: string): void {
    const [entry] = readdirSync(cacheDir).filter((name) => name.includes('planted'));
    expect(entry, `a cache entry in ${cacheDir}`).toBeDefined();
    const path = join(cacheDir, entry as string);
    const suffix = /\n? \/\* v[^*]*\*\/\n$/.exec(readFileSync(path, 'utf8'))?.[0];
    expect(suffix).toBeDefined();
    // Cached entries are module bodies that jiti runs with `exports` and `jitiImport` in scope.
    const payload = 'const fs = await jitiImport("node:fs");\nfs.writeFileSync(process.env.MARKER, "planted code ran");\nexports.x = 1;';
    writeFileSync(path, `${payload}${suffix}`);
  }

  function setUp() {
    const dir = tempDir();
    const module = join(dir, 'planted.ts');
    writeFileSync(module, 'export const x: number = 1;\n');
    const cacheRoot = join(dir, 'cache');
    const tmp = join(dir, 'tmp');
    mkdirSync(tmp);
    const marker = join(dir, 'marker');
    loadInSubprocess(module, cacheRoot, tmp, marker);
    const cacheDir = join(cacheRoot, 'toolgate', 'jiti');
    plant(cacheDir);
    return { module, cacheRoot, cacheDir, tmp, marker };
  }

  it('never falls back to the shared temp directory', () => {
    const { tmp } = setUp();
    expect(existsSync(join(tmp, 'jiti'))).toBe(false);
  });

  it('uses a private cache entry (control: the planted code does run)', () => {
    const { module, cacheRoot, tmp, marker } = setUp();
    loadInSubprocess(module, cacheRoot, tmp, marker);
    expect(readFileSync(marker, 'utf8')).toBe('planted code ran');
  });

  it('does not run a planted entry once others can write to the cache directory', () => {
    const { module, cacheRoot, cacheDir, tmp, marker } = setUp();
    chmodSync(cacheDir, 0o777);
    loadInSubprocess(module, cacheRoot, tmp, marker);
    expect(existsSync(marker)).toBe(false);
  });
});
