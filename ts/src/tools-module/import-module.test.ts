import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importModule, loadedFiles } from './import-module.js';
import { loadCustomTools } from './load-custom-tools.js';
import { LIMITS } from '../native/constants.js';
import { tempDir } from '../../../tests/helpers/fs.js';

const NEVER_SETTLES = 'await new Promise(() => {});\nexport const add = (a: number, b: number) => a + b;\n';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function moduleFile(name: string, source: string): string {
  const dir = tempDir();
  const path = join(dir, name);
  writeFileSync(path, source);
  return path;
}

async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error('expected the import to fail');
}

describe('importModule timeout', () => {
  it('defaults to the core\'s 30 seconds', () => {
    expect(LIMITS.defaultImportTimeoutMs).toBe(30_000);
  });

  it.each([
    ['a TypeScript module', 'tools.ts', NEVER_SETTLES],
    ['an ES module', 'tools.mjs', 'await new Promise(() => {});\nexport const x = 1;\n'],
    ['a module awaiting a timer that never fires', 'tools.ts', 'await new Promise((resolve) => { const t = setTimeout(resolve, 1e9); t.unref(); });\nexport const x = 1;\n'],
  ])('fails %s whose top-level await never settles with MODULE_INVALID naming the file', async (_, name, source) => {
    const path = moduleFile(name, source);
    const started = Date.now();
    const error = await rejection(importModule(path, { timeoutMs: 300 }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(`tools module ${path} did not finish loading within 300 ms`);
    expect(error.message).toContain('top-level await that never settles');
    expect(Date.now() - started).toBeLessThan(20_000); // did not hang
  });

  it('names the tools module when a module it imports never settles', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'stuck.ts'), NEVER_SETTLES);
    writeFileSync(join(dir, 'tools.ts'), "import { add } from './stuck.ts';\nexport const sum = add;\n");
    const error = await rejection(importModule(join(dir, 'tools.ts'), { timeoutMs: 300 }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(`tools module ${join(dir, 'tools.ts')} did not finish loading`);
  });

  it('lets a slow module finish within the limit and fails it past the limit', async () => {
    const slow = 'await new Promise((resolve) => setTimeout(resolve, 600));\nexport const ready = true;\n';
    const tooSlow = await rejection(importModule(moduleFile('slow.ts', slow), { timeoutMs: 100 }));
    expect(tooSlow.code).toBe('MODULE_INVALID');
    expect(tooSlow.message).toContain('within 100 ms');
    const loaded = await importModule(moduleFile('slow.ts', slow), { timeoutMs: 20_000 });
    expect(loaded.ready).toBe(true);
  });

  it('keeps reporting errors thrown while loading as before', async () => {
    const error = await rejection(importModule(moduleFile('throws.ts', "throw new Error('boom at load');\n"), { timeoutMs: 5_000 }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain('threw while loading: boom at load');
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e300, 2 ** 31])('loadCustomTools refuses an import timeout of %s with CONFIG_INVALID', async (importTimeoutMs) => {
    const error = await rejection(loadCustomTools(moduleFile('ok.ts', 'export const x = 1;\n'), { importTimeoutMs }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('importTimeoutMs');
  });

  it('loadCustomTools passes its import timeout on', async () => {
    const error = await rejection(loadCustomTools(moduleFile('tools.ts', NEVER_SETTLES), { importTimeoutMs: 300 }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain('tools.ts');
  });

  it('ends a program whose only pending work is the stuck module with the error, not silently', () => {
    const path = moduleFile('tools.ts', NEVER_SETTLES);
    const importer = resolve(import.meta.dirname, 'import-module.ts');
    const script =
      `const { importModule } = await import(${JSON.stringify(importer)});\n` +
      `try { await importModule(${JSON.stringify(path)}, { timeoutMs: 300 }); console.log('loaded'); }\n` +
      'catch (error) { console.log(`${error.code}: ${error.message}`); }\n';
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stdout).toContain(`MODULE_INVALID: tools module ${path} did not finish loading within 300 ms`);
    expect(child.status).toBe(0);
  });
});

describe('importModule errors', () => {
  it.each(['tools', 'my tools (v2)', 'odd [dir] %20 #1'])('names the place a module threw from, in a folder named %j', async (name) => {
    const dir = join(tempDir(), name);
    mkdirSync(dir);
    const path = join(dir, 'tools.ts');
    writeFileSync(path, "const value = 1;\nfunction fail(): never {\n  throw new Error('boom ' + value);\n}\nfail();\nexport const x = value;\n");
    const error = await rejection(importModule(path, { timeoutMs: 5_000 }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toMatch(new RegExp(`threw while loading: boom 1 \\(at ${escapeRegExp(path)}:3:\\d+\\)$`));
  });
});

describe('loadedFiles', () => {
  it('lists the module, the local files it imports at any depth, and JSON it reads', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'tools.ts'), "import { helper } from './lib/helper';\nexport const x = helper();\n");
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'lib/helper.ts'), "import data from './data.json';\nimport { deep } from './deep/deep';\nexport const helper = () => data.a + deep;\n");
    writeFileSync(join(dir, 'lib/data.json'), '{ "a": 1 }\n');
    mkdirSync(join(dir, 'lib/deep'));
    writeFileSync(join(dir, 'lib/deep/deep.ts'), 'export const deep = 2;\n');
    const path = join(dir, 'tools.ts');
    await importModule(path);
    const files = loadedFiles(path);
    for (const file of ['tools.ts', 'lib/helper.ts', 'lib/data.json', 'lib/deep/deep.ts']) expect(files).toContain(join(dir, file));
    // Imported again (the module is cached), the answer is the same.
    await importModule(path);
    expect(loadedFiles(path).sort()).toEqual(files.sort());
  });

  it('includes the packages a module imports first, and knows a module it never imported only by itself', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'node_modules/leftpad-toolgate-test'), { recursive: true });
    writeFileSync(join(dir, 'node_modules/leftpad-toolgate-test/package.json'), '{ "name": "leftpad-toolgate-test", "main": "index.js" }\n');
    writeFileSync(join(dir, 'node_modules/leftpad-toolgate-test/index.js'), "module.exports = (s) => ' ' + s;\n");
    writeFileSync(join(dir, 'tools.ts'), "import pad from 'leftpad-toolgate-test';\nexport const x = pad('x');\n");
    const path = join(dir, 'tools.ts');
    await importModule(path);
    expect(loadedFiles(path)).toContain(join(dir, 'node_modules/leftpad-toolgate-test/index.js'));
    expect(loadedFiles('/nowhere/tools.ts')).toEqual(['/nowhere/tools.ts']);
  });

  it('follows a native ES module (.mjs, .js in a module package) to what it imports, packages included', async () => {
    const dir = tempDir();
    const files: Record<string, string> = {
      'tools.mjs': [
        "import { helper } from './lib/helper.mjs';",
        "export * from './lib/reexported.mjs';",
        "import pad from 'esm-only-toolgate-test';",
        "import { readFileSync } from 'node:fs';",
        "// import './lib/commented-out.mjs';",
        "const text = \"import './lib/in-a-string.mjs'\";",
        "export async function later() { return import('./lib/dynamic.mjs'); }",
        'export const x = helper() + pad + typeof readFileSync + text.length;',
        '',
      ].join('\n'),
      'lib/helper.mjs': "import { deep } from './deep/deep.js';\nexport const helper = () => deep;\n",
      'lib/deep/package.json': '{ "type": "module" }\n',
      'lib/deep/deep.js': "import data from '../data.cjs';\nexport const deep = data.a;\n",
      'lib/data.cjs': 'module.exports = { a: 1 };\n',
      'lib/reexported.mjs': 'export const y = 2;\n',
      'lib/dynamic.mjs': 'export const z = 3;\n',
      'lib/commented-out.mjs': 'export const no = 1;\n',
      'lib/in-a-string.mjs': 'export const no = 1;\n',
      'node_modules/esm-only-toolgate-test/package.json':
        '{ "name": "esm-only-toolgate-test", "type": "module", "exports": { "import": "./index.js" } }\n',
      'node_modules/esm-only-toolgate-test/index.js': "import { part } from './part.js';\nexport default part;\n",
      'node_modules/esm-only-toolgate-test/part.js': "export const part = 'p';\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    const path = join(dir, 'tools.mjs');
    await importModule(path);
    const loaded = loadedFiles(path);
    for (const file of [
      'tools.mjs',
      'lib/helper.mjs',
      'lib/deep/deep.js',
      'lib/data.cjs',
      'lib/reexported.mjs',
      'lib/dynamic.mjs',
      'node_modules/esm-only-toolgate-test/index.js',
    ]) {
      expect(loaded, file).toContain(join(dir, file));
    }
    // A package is protected as its folder (the core's rule): its own imports are not read.
    expect(loaded).not.toContain(join(dir, 'node_modules/esm-only-toolgate-test/part.js'));
    expect(loaded).not.toContain(join(dir, 'lib/commented-out.mjs'));
    expect(loaded).not.toContain(join(dir, 'lib/in-a-string.mjs'));
    // What decides what a name loads: the package.json files up to the first there is (none
    // here: up to /), and the node_modules folder a package was found in.
    for (const file of ['package.json', 'lib/package.json', 'lib/deep/package.json', 'node_modules/esm-only-toolgate-test']) {
      expect(loaded, file).toContain(join(dir, file));
    }
    expect(loaded.filter((file) => !file.startsWith(dir)).every((file) => file.endsWith('/package.json'))).toBe(true);
  });

  it('names the files require would take for a package (node_modules/<name>.js, …) before each folder it looks in', async () => {
    const dir = tempDir();
    const files: Record<string, string> = {
      'lib/tools.cjs': "const pad = require('pkg-cjs-toolgate-test');\nexports.x = pad('a');\n",
      'node_modules/pkg-cjs-toolgate-test/package.json': '{ "name": "pkg-cjs-toolgate-test", "main": "index.js" }\n',
      'node_modules/pkg-cjs-toolgate-test/index.js': "module.exports = (s) => ' ' + s;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    const path = join(dir, 'lib/tools.cjs');
    await importModule(path);
    const loaded = loadedFiles(path);
    for (const file of [
      'lib/node_modules/pkg-cjs-toolgate-test.js',
      'lib/node_modules/pkg-cjs-toolgate-test.json',
      'lib/node_modules/pkg-cjs-toolgate-test.node',
      'lib/node_modules/pkg-cjs-toolgate-test',
      'node_modules/pkg-cjs-toolgate-test.js',
      'node_modules/pkg-cjs-toolgate-test',
      'node_modules/pkg-cjs-toolgate-test/index.js',
    ]) {
      expect(loaded, file).toContain(join(dir, file));
    }
    // Found there: nothing further up is looked in.
    expect(loaded).not.toContain(join(dirname(dir), 'node_modules/pkg-cjs-toolgate-test.js'));
  });

  it('follows a transpiled module to a native ES module it imports, and to what decides the name', async () => {
    const dir = tempDir();
    const files: Record<string, string> = {
      'package.json': '{ "name": "project", "imports": { "#helper": "./lib/helper.mjs" } }\n',
      'tools.ts': [
        "import { dep } from './lib/dep.mjs';",
        "import { helper } from '#helper';",
        "import pad from 'linked-toolgate-test';",
        'export const x: string = dep + helper + pad;',
        '',
      ].join('\n'),
      'lib/dep.mjs': "export const dep = 'dep';\n",
      'lib/helper.mjs': "export const helper = 'helper';\n",
      'vendor/linked/package.json': '{ "name": "linked-toolgate-test", "type": "module", "main": "index.js" }\n',
      'vendor/linked/index.js': "export default 'pad';\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync('../vendor/linked', join(dir, 'node_modules/linked-toolgate-test'));
    const path = join(dir, 'tools.ts');
    await importModule(path);
    const loaded = loadedFiles(path);
    for (const file of ['lib/dep.mjs', 'lib/helper.mjs', 'package.json', 'node_modules/linked-toolgate-test', 'vendor/linked/index.js']) {
      expect(loaded, file).toContain(join(dir, file));
    }
  });
});
