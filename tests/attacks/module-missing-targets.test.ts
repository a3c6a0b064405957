/**
 * Class 2: a tools module whose import resolves through package.json (an `imports` #alias, a
 * self-reference through `exports`, a folder's `main`) to a file that does NOT exist yet (an
 * optional plugin in try/catch, or a `main` Node skips for `index.js`). The agent creates that
 * file from a sandboxed process; the next load imports it on the host.
 */
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/checkout.js';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { importModule, loadedFiles } from '../../ts/src/tools-module/import-module.js';
import { tempDir } from '../helpers/fs.js';
import { call, writeFiles } from '../helpers/tools.js';
import { ATTACK_PY, loadInNewProcess, MOUNT_VIEW } from './protected-fixture.js';

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

const OPTIONAL = (specifier: string) =>
  `import { z } from 'zod';\nlet deep = 'original';\ntry { ({ deep } = await import(${JSON.stringify(specifier)})); } catch {}\nexport function version() { return deep; }\nexport const versionSchema = z.object({});\n`;

type Layout = [name: string, files: Record<string, string>, target: string];
const layouts: Layout[] = [
  [
    'an optional import of a package.json "imports" #alias whose target is missing',
    { 'tools.mjs': OPTIONAL('#plugin'), 'package.json': JSON.stringify({ type: 'module', imports: { '#plugin': './lib/plugin.mjs' } }) },
    'lib/plugin.mjs',
  ],
  [
    'an optional self-reference through package.json "exports" whose target is missing',
    { 'tools.mjs': OPTIONAL('selfpkg/plugin'), 'package.json': JSON.stringify({ name: 'selfpkg', type: 'module', exports: { './plugin': './lib/plugin.mjs' } }) },
    'lib/plugin.mjs',
  ],
  [
    "require of a folder whose package.json main is missing (Node falls back to index.js)",
    {
      'tools.cjs': "const { z } = require('zod');\nconst p = require('./lib');\nexports.version = () => p.v;\nexports.versionSchema = z.object({});\n",
      'lib/package.json': JSON.stringify({ main: './entry.cjs' }),
      'lib/index.js': "exports.v = 'original';\n",
    },
    'lib/entry.cjs',
  ],
];

describe('loadedFiles names the file an alias or manifest would load once it exists', () => {
  it.each(layouts)('%s', { timeout: 15_000 }, async (_, files, target) => {
    const dir = tempDir('toolgate-mmt-');
    writeFiles(dir, files);
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    const module = join(dir, Object.keys(files).find((file) => file.startsWith('tools.'))!);
    await importModule(module);
    expect(loadedFiles(module)).toContain(join(dir, target));
  });
});

describe.runIf(MOUNT_VIEW)('end to end: the agent creates the missing target, the next load runs it', () => {
  it.each(layouts)('%s', { timeout: 20_000 }, async (_, files, target) => {
    const work = tempDir('toolgate-mmt-e2e-');
    const module = Object.keys(files).find((file) => file.startsWith('tools.'))!;
    writeFiles(work, {
      ...files,
      'worker.yaml': ['name: victim', 'toolsets:', `  custom: { module: ./${module}, approval: { default: preApproved } }`, '  cli_execute: { allowed_binaries: [python3] }', ''].join('\n'),
      'attack.py': ATTACK_PY,
    });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(work, 'node_modules'));
    const worker = await loadWorker(join(work, 'worker.yaml'), {});
    open.push(worker);
    const code = target.endsWith('.cjs') ? "exports.v = 'PWNED';\n" : "export const deep = 'PWNED';\n";
    const said = await call(worker.tools.cli_execute as NamedTool, {
      binary: 'python3',
      args: ['-c', `import os; os.makedirs(os.path.dirname(${JSON.stringify(target)}) or '.', exist_ok=True); open(${JSON.stringify(target)},'w').write(${JSON.stringify(code)}); print('wrote')`],
    });
    await worker.close();
    open.length = 0;
    expect(loadInNewProcess(join(work, 'worker.yaml')).version, JSON.stringify(said)).toBe('original');
  });
});
