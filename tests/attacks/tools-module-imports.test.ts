/**
 * Every local file a tools module can reach by a static string is protected, whatever form
 * names it: an import with comments, line breaks or a template literal around its specifier, a
 * module of any extension Node and jiti load (.ts .mts .cts .tsx .js .mjs .cjs .jsx), a worker
 * thread or a file read and run as code, named by `new URL(…, import.meta.url)` or a path joined
 * to the module's folder. The files are imported on the host at the next load, with the agent's
 * environment: a process that could rewrite one would run its code outside the sandbox.
 *
 * `loadedFiles` (what the SDK reports to the core) is checked everywhere; the attack itself
 * (a sandboxed process writing each file) where the kernel gives the per-call mount view.
 */
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { importModule, loadedFiles } from '../../ts/src/tools-module/import-module.js';
import { moduleReferences } from '../../ts/src/tools-module/module-references.js';
import { REPO_ROOT } from '../helpers/checkout.js';
import { tempDir } from '../helpers/fs.js';
import { call, writeFiles } from '../helpers/tools.js';
import { ATTACK_PY, loadInNewProcess, MOUNT_VIEW, snapshotOf } from './protected-fixture.js';

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

const DEEP = "export const deep = 'original';\n";
const CODE = "return 'original';\n";
const VERSION_TS = 'export function version(): string { return deep; }\n';
const VERSION_JS = 'export function version() { return deep; }\n';

/** A layout: its files (the tools module is the one named `tools.*`) and the files that must stay as they are. */
type Layout = [name: string, files: Record<string, string>, targets: string[]];

const layouts: Layout[] = [
  // Comments, line breaks and template literals around a specifier.
  ['.ts: a block comment between from and the specifier', { 'tools.ts': `import { deep } from /* the helper */ './lib/a.mjs';\n${VERSION_TS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.ts: a line comment between from and the specifier', { 'tools.ts': `import { deep } from // the helper\n  './lib/a.mjs';\n${VERSION_TS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.ts: line breaks everywhere', { 'tools.ts': `import\n{\n  deep\n}\nfrom\n\n'./lib/a.mjs'\n;\n${VERSION_TS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.ts: export … from with a comment', { 'tools.ts': `export { deep } from /* c */ './lib/a.mjs';\nimport { deep } from './lib/b.mjs';\n${VERSION_TS}`, 'lib/a.mjs': DEEP, 'lib/b.mjs': DEEP }, ['lib/a.mjs', 'lib/b.mjs']],
  ['.ts: a side-effect import with a comment', { 'tools.ts': `import /* c */ './lib/side.mjs';\nconst deep = 'original';\n${VERSION_TS}`, 'lib/side.mjs': 'globalThis.sideEffect = 1;\n' }, ['lib/side.mjs']],
  ['.mts: a block comment inside a top-level import()', { 'tools.mts': `const { deep } = await import(/* x */ './lib/a.mjs');\n${VERSION_TS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.mts: a line comment and line breaks inside import()', { 'tools.mts': `const { deep } = await import(\n  // why\n  './lib/a.mjs'\n);\n${VERSION_TS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.mts: import() of a template literal', { 'tools.mts': `const { deep } = await import(\`./lib/a.mjs\`);\n${VERSION_TS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.mjs: import() of a concatenation of literals', { 'tools.mjs': `const { deep } = await import('./lib/' + /* c */ 'a.mjs');\n${VERSION_JS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['.mts imported by .ts: a comment-split import() at top level', { 'tools.ts': `import { deep } from './lib/m.mts';\n${VERSION_TS}`, 'lib/m.mts': "const { deep: d } = await import(/* x */ './deep2.mjs');\nexport const deep: string = d;\n", 'lib/deep2.mjs': DEEP }, ['lib/m.mts', 'lib/deep2.mjs']],
  ['.cts: import = require with a comment', { 'tools.cts': `import a = require(/* c */ './lib/a.cjs');\nexport function version(): string { return a.v; }\n`, 'lib/a.cjs': "exports.v = 'original';\n" }, ['lib/a.cjs']],
  ['.cjs: require of a template literal across lines', { 'tools.cjs': "const a = require(\n  `./lib/a.cjs`\n);\nexports.version = () => a.v;\n", 'lib/a.cjs': "exports.v = 'original';\n" }, ['lib/a.cjs']],
  // Every module extension is read.
  ['a .tsx imported by .ts, importing a .mjs', { 'tools.ts': `import { deep } from './lib/ui.tsx';\n${VERSION_TS}`, 'lib/ui.tsx': "import { deep as d } from './deep.mjs';\nexport const deep: string = d;\n", 'lib/deep.mjs': DEEP }, ['lib/ui.tsx', 'lib/deep.mjs']],
  ['a .jsx the module names (a bundler entry), importing a .mjs', { 'tools.mjs': `export const ui = new URL('./lib/ui.jsx', import.meta.url);\nconst deep = 'original';\n${VERSION_JS}`, 'lib/ui.jsx': "import { deep } from /* c */ './deep.mjs';\nexport const App = () => <p>Don't {deep}</p>;\n", 'lib/deep.mjs': DEEP }, ['lib/ui.jsx', 'lib/deep.mjs']],
  ['a .cts imported by .ts, requiring a .cjs', { 'tools.ts': `import { v as deep } from './lib/c.cts';\n${VERSION_TS}`, 'lib/c.cts': "const d = require(/* c */ './deep.cjs');\nexport const v: string = d.v;\n", 'lib/deep.cjs': "exports.v = 'original';\n" }, ['lib/c.cts', 'lib/deep.cjs']],
  // Worker threads and code read then run, named from the module's own location.
  ['a worker thread started at import time', { 'tools.mjs': "import { Worker } from 'node:worker_threads';\nconst w = new Worker(new URL('./lib/w.mjs', import.meta.url));\nw.on('error', () => {});\nw.unref();\nconst deep = 'original';\n" + VERSION_JS, 'lib/w.mjs': "import './w-dep.mjs';\n", 'lib/w-dep.mjs': 'export const x = 1;\n' }, ['lib/w.mjs', 'lib/w-dep.mjs']],
  ['a worker thread, comments inside new URL', { 'tools.ts': "import { Worker } from 'node:worker_threads';\nconst w = new Worker(new URL(/* c */ './lib/w.mjs', /* base */ import.meta.url));\nw.on('error', () => {});\nw.unref();\nconst deep = 'original';\n" + VERSION_TS, 'lib/w.mjs': 'export const x = 1;\n' }, ['lib/w.mjs']],
  ['import() of new URL(…).href', { 'tools.mjs': `const { deep } = await import(new URL('./lib/a.mjs', import.meta.url).href);\n${VERSION_JS}`, 'lib/a.mjs': DEEP }, ['lib/a.mjs']],
  ['readFileSync(new URL(literal)) run with new Function', { 'tools.mjs': "import { readFileSync } from 'node:fs';\nconst code = readFileSync(new URL('./lib/code.js', import.meta.url), 'utf8');\nconst deep = new Function(code)();\n" + VERSION_JS, 'lib/code.js': CODE }, ['lib/code.js']],
  ['readFileSync(fileURLToPath(new URL(template))) run with vm', { 'tools.ts': "import { readFileSync } from 'node:fs';\nimport { fileURLToPath } from 'node:url';\nimport vm from 'node:vm';\nconst deep = vm.runInThisContext(readFileSync(fileURLToPath(new URL(`./lib/code.txt`, import.meta.url)), 'utf8')) as string;\n" + VERSION_TS, 'lib/code.txt': "'original'\n" }, ['lib/code.txt']],
  ['path.join(import.meta.dirname, …literals) read and run', { 'tools.mjs': "import { readFileSync } from 'node:fs';\nimport path from 'node:path';\nconst deep = new Function(readFileSync(path.join(import.meta.dirname, 'lib', 'code.js'), 'utf8'))();\n" + VERSION_JS, 'lib/code.js': CODE }, ['lib/code.js']],
  ['resolve() of a dirname(fileURLToPath(import.meta.url)) bound to a name', { 'tools.ts': "import { readFileSync } from 'node:fs';\nimport { dirname, resolve } from 'node:path';\nimport { fileURLToPath } from 'node:url';\nconst here = dirname(fileURLToPath(import.meta.url));\nconst deep = new Function(readFileSync(resolve(here, './lib/code.js'), 'utf8'))() as string;\n" + VERSION_TS, 'lib/code.js': CODE }, ['lib/code.js']],
  ['a template literal of import.meta.dirname', { 'tools.mjs': "import { readFileSync } from 'node:fs';\nconst deep = new Function(readFileSync(`${import.meta.dirname}/lib/code.js`, 'utf8'))();\n" + VERSION_JS, 'lib/code.js': CODE }, ['lib/code.js']],
  ['.cjs: path.join(__dirname, literal) read and run', { 'tools.cjs': "const fs = require('node:fs');\nconst path = require('node:path');\nconst deep = new Function(fs.readFileSync(path.join(__dirname, /* c */ 'lib/code.js'), 'utf8'))();\nexports.version = () => deep;\n", 'lib/code.js': CODE }, ['lib/code.js']],
  // require through other names.
  ['require.resolve with a comment, then require', { 'tools.cjs': "const p = require.resolve(/* c */ './lib/c.js');\nconst deep = require(p).v;\nexports.version = () => deep;\n", 'lib/c.js': "exports.v = 'original';\n" }, ['lib/c.js']],
  ['createRequire bound to another name', { 'tools.mjs': "import { createRequire } from 'node:module';\nconst load = createRequire(import.meta.url);\nconst deep = load(\n  './lib/cr.cjs').v;\n" + VERSION_JS, 'lib/cr.cjs': "exports.v = 'original';\n" }, ['lib/cr.cjs']],
  // Files that are missing now, or would take a found file's place.
  ['an optional import of a file that does not exist yet', { 'tools.mjs': "let deep = 'original';\ntry { ({ deep } = await import('./lib/optional.mjs')); } catch {}\n" + VERSION_JS }, ['lib/optional.mjs']],
  ['a helper.js planted beside the helper.ts an import of ./helper.js found', { 'tools.ts': `import { deep } from './lib/helper.js';\n${VERSION_TS}`, 'lib/helper.ts': DEEP }, ['lib/helper.ts', 'lib/helper.js']],
];

describe('loadedFiles follows every form of local reference', () => {
  it.each(layouts)('%s', { timeout: 15_000 }, async (_, files, targets) => {
    const dir = tempDir('toolgate-tmi-');
    writeFiles(dir, files);
    const module = join(dir, Object.keys(files).find((file) => file.startsWith('tools.'))!);
    const imported = await importModule(module);
    expect(typeof imported.version === 'function' || typeof (imported.default as { version?: unknown })?.version === 'function').toBe(true);
    const loaded = loadedFiles(module);
    for (const target of targets) expect(loaded, target).toContain(join(dir, target));
  });

  it('reads JSX text with quotes in a .tsx or .jsx without mistaking them for strings', () => {
    const source = "const el = <p>Don't \"quote\" me</p>;\nconst { x } = await import(/* c */ './x.mjs');\n// import './commented.mjs'\nconst s = \"import './in-a-string.mjs'\";\n";
    for (const file of ['/m/ui.tsx', '/m/ui.jsx', '/m/ui.js']) {
      const specifiers = moduleReferences(source, file).flatMap((reference) => (reference.kind === 'specifier' ? [reference.specifier] : []));
      expect(specifiers, file).toEqual(['./x.mjs']);
    }
  });

  it('reads sloppy-mode JavaScript Node runs (octal literals and escapes) without failing', () => {
    const source = "fs.chmodSync(p, 0755);\nvar s = '\\08';\nrequire(/* c */ './x.cjs');\n";
    expect(moduleReferences(source, '/m/a.cjs')).toEqual([{ kind: 'specifier', specifier: './x.cjs' }]);
  });

  it('fails closed, naming the place, when a file the module names cannot be parsed', async () => {
    const dir = tempDir('toolgate-tmi-');
    writeFiles(dir, {
      'tools.mjs': "export const worker = new URL('./lib/broken.mjs', import.meta.url);\nexport function version() { return 'original'; }\n",
      'lib/broken.mjs': "export const x = ;\nimport('./lib/hidden.mjs');\n",
    });
    await importModule(join(dir, 'tools.mjs'));
    expect(() => loadedFiles(join(dir, 'tools.mjs'))).toThrow(
      expect.objectContaining({ code: 'MODULE_INVALID', message: expect.stringContaining(`cannot read what ${join(dir, 'lib/broken.mjs')}:1:`) }),
    );
  });
});

describe.runIf(MOUNT_VIEW)('a sandboxed process cannot change what a tools module loads', () => {
  it.each(layouts)('%s', { timeout: 15_000 }, async (_, files, targets) => {
    const work = tempDir('toolgate-tmi-');
    const module = Object.keys(files).find((file) => file.startsWith('tools.'))!;
    writeFiles(work, {
      ...files,
      'worker.yaml': ['name: victim', 'toolsets:', `  custom: { module: ./${module}, approval: { default: preApproved } }`, '  cli_execute: { allowed_binaries: [python3] }', ''].join('\n'),
      'attack.py': ATTACK_PY,
    });
    const before = snapshotOf(work, targets);
    const worker = await loadWorker(join(work, 'worker.yaml'), {});
    open.push(worker);
    const said: string[] = [];
    for (const target of targets) {
      said.push(JSON.stringify(await call(worker.tools.cli_execute as NamedTool, { binary: 'python3', args: ['attack.py', target, 'write'] })));
    }
    expect(snapshotOf(work, targets), said.join('\n')).toEqual(before);
  });

  it('end to end: the next load in a new process runs the original, not what the agent wrote', { timeout: 15_000 }, async () => {
    const work = tempDir('toolgate-tmi-e2e-');
    writeFiles(work, {
      'tools.ts': `import { z } from 'zod';\nimport { deep } from /* the helper */ './lib/deep.mjs';\n${VERSION_TS}export const versionSchema = z.object({});\n`,
      'lib/deep.mjs': DEEP,
      'worker.yaml': ['name: victim', 'toolsets:', '  custom: { module: ./tools.ts, approval: { default: preApproved } }', '  cli_execute: { allowed_binaries: [python3] }', ''].join('\n'),
    });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(work, 'node_modules'));
    const worker = await loadWorker(join(work, 'worker.yaml'), {});
    open.push(worker);
    await call(worker.tools.cli_execute as NamedTool, {
      binary: 'python3',
      args: ['-c', "open('lib/deep.mjs','w').write(\"export const deep = 'PWNED';\\n\")"],
    });
    expect(loadInNewProcess(join(work, 'worker.yaml')).version).toBe('original');
  });
});
