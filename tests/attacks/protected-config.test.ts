/**
 * Issue 22 §2: the agent rewrites its own configuration, and the next run executes it outside
 * the sandbox. In the old default layout (the work directory is the worker file's folder) the
 * worker file, its tools module and what that imports, its executable-tool directory, its MCP
 * server script, `.git/hooks`, `.git/config`, and the configuration a later load would find
 * (`toolgate.permissions.yaml`, `golem-forge.config.yaml`, a planted tool) all sit where the
 * agent writes. Every one is protected: the file tools refuse to change it (`PATH_BLOCKED`,
 * rule `protected`), and every sandboxed process sees it read-only and cannot create it —
 * through `cli_execute`, `shell`, an executable tool's run, an MCP server and `exec` with a
 * sandbox, by writing, appending, truncating, renaming over, deleting and recreating, and
 * swapping in a symlink or a hard link. Afterwards a second `loadWorker`, in a new process,
 * loads the original files.
 *
 * The process attacks need the kernel view (`MOUNT_VIEW`, see protected-fixture.ts); the file
 * tools, the reports and the examples' layout (configuration outside the work directory, where
 * Landlock alone keeps processes away from it) are tested everywhere.
 */
import { readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exec, loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { native } from '../../ts/src/native/binding.js';
import { REPO_ROOT } from '../helpers/checkout.js';
import { tempDir } from '../helpers/fs.js';
import { call, failure, writeFiles } from '../helpers/tools.js';
import {
  ATTACK_PY,
  loadInNewProcess,
  MODES,
  MOUNT_VIEW,
  oldLayout,
  PAYLOAD,
  snapshotOf,
  TARGETS,
  VICTIM_WORKER,
} from './protected-fixture.js';

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

async function victim(workerText?: string) {
  const { work, originals } = oldLayout();
  if (workerText) {
    writeFiles(work, { 'worker.yaml': workerText });
    Object.assign(originals, snapshotOf(work));
  }
  const worker = await loadWorker(join(work, 'worker.yaml'), {});
  open.push(worker);
  return { work, originals, worker, tool: (name: string) => worker.tools[name] as NamedTool };
}

/** Every file-tool call the model could make on the configuration. */
const FILE_ATTACKS: [tool: string, input: Record<string, unknown>][] = [
  ['file_write', { path: 'tools.ts', content: `export const x = '${PAYLOAD}';\n` }],
  ['write_file', { path: 'worker.yaml', content: `name: victim\nsandbox: { mode: off }\n# ${PAYLOAD}\n` }],
  ['file_write', { path: './worker.yaml', content: PAYLOAD }],
  ['file_edit', { path: 'tools.ts', old_text: 'return helper();', new_text: `return '${PAYLOAD}';` }],
  ['file_edit', { path: 'lib/helper.ts', old_text: "'original'", new_text: `'${PAYLOAD}'` }],
  ['file_write', { path: 'lib/helper.ts', content: PAYLOAD }],
  ['file_patch', { operations: [{ action: 'update', path: 'server.mjs', content: PAYLOAD }] }],
  ['file_write', { path: 'srv/payload.mjs', content: 'export const payload = 1;\n' }],
  ['file_patch', { operations: [{ action: 'move', path: 'attack.py', new_path: 'tools.ts' }] }],
  ['file_patch', { operations: [{ action: 'delete', path: 'tools.ts' }] }],
  ['file_patch', { operations: [{ action: 'add', path: 'notes.md', content: 'x' }, { action: 'add', path: 'toolgate-tools/planted', content: PAYLOAD }] }],
  ['delete_file', { path: 'worker.yaml' }],
  ['delete_file', { path: 'toolgate-tools/scribble' }],
  ['write_file', { path: 'toolgate-tools/planted', content: `#!/bin/sh\necho ${PAYLOAD}\n` }],
  ['file_write', { path: '.git/hooks/pre-commit', content: `#!/bin/sh\necho ${PAYLOAD}\n` }],
  ['file_write', { path: '.git/config', content: `[core]\n\tfsmonitor = echo ${PAYLOAD}\n` }],
  ['file_write', { path: 'toolgate.permissions.yaml', content: `# ${PAYLOAD}\n` }],
  ['file_write', { path: 'golem-forge.config.yaml', content: `model: ${PAYLOAD}\n` }],
];

describe('protected configuration and the file tools (the configuration inside the work directory)', () => {
  it('refuses every change of the configuration and every planted file, naming the path and the fix', async () => {
    const { work, originals, tool } = await victim();
    for (const [name, input] of FILE_ATTACKS) {
      const error = await failure(tool(name), input);
      expect(error.code, `${name} ${JSON.stringify(input)}: ${error.message}`).toBe('PATH_BLOCKED');
      expect(error.message, name).toMatch(/is protected configuration \(.+; rule protected\)/);
      expect(error.message, name).toContain('approval.paths');
    }
    expect(snapshotOf(work)).toEqual(originals);
    // Reading is not refused: the configuration is read-only, not secret.
    expect(await call(tool('file_read'), { path: 'worker.yaml' })).toContain('name: victim');
    expect(await call(tool('read_file'), { path: 'tools.ts' })).toMatchObject({ kind: 'text' });
    // Ordinary files are written as before.
    await call(tool('file_write'), { path: 'notes.md', content: 'fine\n' });
  });

  it('names the protected file in the refusal: the tools module, an import of it, a tool directory', async () => {
    const { tool } = await victim();
    const module = await failure(tool('file_write'), { path: 'tools.ts', content: 'x' });
    expect(module.message).toContain("the tools module of 'victim'");
    const imported = await failure(tool('file_write'), { path: 'lib/helper.ts', content: 'x' });
    expect(imported.message).toContain('imported by the tools module');
    const planted = await failure(tool('write_file'), { path: 'toolgate-tools/planted', content: 'x' });
    expect(planted.message).toContain("an executable-tool directory of 'victim'");
    const hook = await failure(tool('file_write'), { path: '.git/hooks/pre-commit', content: 'x' });
    expect(hook.message).toContain('git hooks');
  });

  it('lets an explicit path rule open one protected file to a change that asks, never one that runs unasked', async () => {
    const rules = `${VICTIM_WORKER.replace(
      '  code_agent: { approval: { default: preApproved } }',
      "  code_agent:\n    approval:\n      default: preApproved\n      paths:\n        - { pattern: '/tools.ts', approval: preApproved }\n        - { pattern: '**', approval: preApproved }",
    )}`;
    const { work, tool } = await victim(rules);
    const write = tool('file_write');
    const options = { toolCallId: 'approved-1', messages: [] };
    const needs = write.needsApproval as (input: unknown, options: object) => Promise<boolean>;
    expect(await needs({ path: 'tools.ts', content: 'x' }, options)).toBe(true);
    // After a person approved it, the write runs.
    const execute = write.execute as (input: unknown, options: object) => Promise<unknown>;
    await execute({ path: 'tools.ts', content: '// changed with approval\n' }, options);
    expect(snapshotOf(work)['tools.ts']).toContain('changed with approval');
    // The catch-all rule names nothing: the worker file stays refused, without asking.
    expect(await needs({ path: 'worker.yaml', content: 'x' }, { toolCallId: 'approved-2', messages: [] })).toBe(false);
    expect((await failure(write, { path: 'worker.yaml', content: 'x' })).code).toBe('PATH_BLOCKED');
  });

  it('a second loadWorker in a new process loads the original files', async () => {
    const { work, tool } = await victim();
    for (const [name, input] of FILE_ATTACKS) await failure(tool(name), input);
    expect(loadInNewProcess(join(work, 'worker.yaml'))).toEqual({ version: 'original', mode: 'enforce' });
  });

  it('reports every protected and hidden path of every sandbox with its reason, for toolgate check', async () => {
    const { work } = oldLayout();
    writeFiles(work, { '.env': 'TOKEN=1\n' });
    writeFiles(work, {
      'worker.yaml': VICTIM_WORKER.replace(
        '  code_agent: { approval: { default: preApproved } }',
        "  code_agent:\n    approval:\n      paths: [{ pattern: '.env*', approval: blocked }]",
      ),
    });
    const plan = await native.planWorker(join(work, 'worker.yaml'), null, false);
    const sandboxes = plan.guardedPaths(0);
    expect(sandboxes.map((sandbox) => sandbox.sandbox)).toEqual(['worker', 'shell', 'cli_execute', 'executables', 'mcp']);
    const lines = Object.fromEntries(sandboxes[1]!.paths.map((line) => [line.path.slice(work.length + 1), line]));
    expect(lines['worker.yaml']).toMatchObject({ kind: 'protected', exists: true, enforced: true, reason: "the worker file of 'victim'" });
    expect(lines['tools.ts']?.reason).toBe("the tools module of 'victim'");
    expect(lines['server.mjs']?.reason).toContain("the MCP server 'srv'");
    expect(lines['srv/payload.mjs']?.reason).toContain("the MCP server 'srv'");
    expect(lines['toolgate-tools']?.reason).toContain('executable-tool directory');
    expect(lines['.git/hooks']).toMatchObject({ kind: 'protected', enforced: true });
    expect(lines['toolgate.permissions.yaml']).toMatchObject({ exists: false, enforced: true });
    expect(lines['.env']).toMatchObject({ kind: 'hidden', enforced: true });
    expect(lines['.env']?.reason).toContain("'.env*' (blocked)");
  });
});

/** Runs one attack through one way of starting a process; returns what the program said. */
type Channel = (worker: LoadedWorker, target: string, mode: string) => Promise<string>;
const text = (value: unknown) => JSON.stringify(value);
const CHANNELS: Record<string, Channel> = {
  cli_execute: async (worker, target, mode) =>
    text(await call(worker.tools.cli_execute as NamedTool, { binary: 'python3', args: ['attack.py', target, mode] })),
  shell: async (worker, target, mode) => text(await call(worker.tools.shell as NamedTool, { command: `python3 attack.py ${target} ${mode}` })),
  'executable tool run': async (worker, target, mode) => text(await call(worker.tools.custom_tool_scribble as NamedTool, { target, mode })),
  'MCP server': async (worker, target, mode) => text(await call(worker.tools.srv_scribble as NamedTool, { target, mode })),
};

describe.runIf(MOUNT_VIEW)('protected configuration and processes (needs the kernel view: sandboxSupport().view)', () => {
  for (const [channel, attack] of Object.entries(CHANNELS)) {
    it(`${channel}: no process changes or plants configuration (${TARGETS.length} paths × ${MODES.length} ways)`, { timeout: 300_000 }, async () => {
      const { work, originals, worker } = await victim();
      for (const target of TARGETS) {
        for (const mode of MODES) {
          const said = await attack(worker, target, mode).catch((error: Error) => `threw ${error.message}`);
          expect(snapshotOf(work)[target], `${channel} ${mode} ${target}: ${said}`).toBe(originals[target]);
        }
      }
      expect(snapshotOf(work)).toEqual(originals);
      expect(loadInNewProcess(join(work, 'worker.yaml'))).toEqual({ version: 'original', mode: 'enforce' });
    });
  }

  it('exec with a sandbox: the git configuration always, and what `protect` names', { timeout: 120_000 }, async () => {
    const { work, originals } = oldLayout();
    const sandbox = { protect: ['worker.yaml', 'tools.ts', 'lib/**', 'server.mjs', 'srv/**', '/toolgate-tools/', 'toolgate.permissions.yaml', 'golem-forge.config.yaml'] };
    for (const target of TARGETS) {
      for (const mode of MODES) {
        const result = await exec({ command: 'python3', args: ['attack.py', target, mode], cwd: work, env: { PATH: process.env.PATH ?? '' }, sandbox });
        expect(snapshotOf(work)[target], `${mode} ${target}: ${result.stdout}${result.stderr}`).toBe(originals[target]);
      }
    }
  });
});

describe.runIf(MOUNT_VIEW)('the imports of an ES module tools module (Node runs it, not jiti)', () => {
  // `.mjs`, and `.js` in a `"type": "module"` package, each importing a helper that imports
  // another: every file is protected like the module itself.
  const layouts: [name: string, files: Record<string, string>, imports: string[]][] = [
    [
      '.mjs',
      {
        'tools.mjs': "import { helper } from './lib/helper.mjs';\nexport function version() { return helper(); }\n",
        'lib/helper.mjs': "import { deep } from './deep.mjs';\nexport function helper() { return deep; }\n",
        'lib/deep.mjs': "export const deep = 'original';\n",
      },
      ['lib/helper.mjs', 'lib/deep.mjs'],
    ],
    [
      '.js in a module package',
      {
        'package.json': '{ "type": "module" }\n',
        'tools.js': "import { helper } from './lib/helper.js';\nexport function version() { return helper(); }\n",
        'lib/helper.js': "export { deep as value } from './deep.js';\nimport { deep } from './deep.js';\nexport function helper() { return deep; }\n",
        'lib/deep.js': "export const deep = 'original';\n",
      },
      ['lib/helper.js', 'lib/deep.js'],
    ],
    [
      'a .ts module importing a .mjs',
      {
        'tools.ts': "import { helper } from './lib/helper.mjs';\nexport function version(): string { return helper(); }\n",
        'lib/helper.mjs': "import { deep } from './deep.mjs';\nexport function helper() { return deep; }\n",
        'lib/deep.mjs': "export const deep = 'original';\n",
      },
      ['lib/helper.mjs', 'lib/deep.mjs'],
    ],
    [
      'an #internal import (package.json decides what it names)',
      {
        'package.json': '{ "name": "victim", "imports": { "#helper": "./lib/helper.mjs" } }\n',
        'tools.mjs': "import { helper } from '#helper';\nexport function version() { return helper(); }\n",
        'lib/helper.mjs': "export function helper() { return 'original'; }\n",
      },
      ['package.json', 'lib/helper.mjs'],
    ],
    [
      'a package importing another package (the second is not named by the module)',
      {
        'tools.mjs': "import { a } from 'pkg-a';\nexport function version() { return a(); }\n",
        'node_modules/pkg-a/package.json': '{ "name": "pkg-a", "type": "module", "exports": "./index.js" }\n',
        'node_modules/pkg-a/index.js': "import { b } from 'pkg-b';\nexport function a() { return b; }\n",
        'node_modules/pkg-b/package.json': '{ "name": "pkg-b", "type": "module", "exports": "./index.js" }\n',
        'node_modules/pkg-b/index.js': "import { c } from '@scope/pkg-c';\nexport const b = c;\n",
        'node_modules/@scope/pkg-c/package.json': '{ "name": "@scope/pkg-c", "type": "module", "exports": "./dist/index.mjs" }\n',
        'node_modules/@scope/pkg-c/dist/index.mjs': "export const c = 'original';\n",
      },
      // Also a package file and a shim that do not exist yet.
      ['node_modules/pkg-b/index.js', 'node_modules/pkg-b/package.json', 'node_modules/@scope/pkg-c/dist/index.mjs', 'node_modules/pkg-a/index.js', 'node_modules/pkg-b/extra.js', 'node_modules/.bin/pkg-b'],
    ],
  ];
  for (const [name, files, imports] of layouts) {
    it(`${name}: no process or file tool changes what it imports`, { timeout: 120_000 }, async () => {
      const work = tempDir('toolgate-esm-');
      const module = Object.keys(files).find((file) => file.startsWith('tools.'))!;
      writeFiles(work, {
        ...files,
        'worker.yaml': [
          'name: victim',
          'toolsets:',
          `  custom: { module: ./${module}, approval: { default: preApproved } }`,
          '  cli_execute: { allowed_binaries: [python3] }',
          '  filesystem: { approval: { default: preApproved } }',
          '',
        ].join('\n'),
        'attack.py': ATTACK_PY,
      });
      const before = Object.fromEntries(imports.map((file) => [file, snapshotOf(work, [file])[file]]));
      const worker = await loadWorker(join(work, 'worker.yaml'), {});
      open.push(worker);
      const cli = worker.tools.cli_execute as NamedTool;
      for (const target of imports) {
        for (const mode of MODES) {
          const said = JSON.stringify(await call(cli, { binary: 'python3', args: ['attack.py', target, mode] }));
          expect(snapshotOf(work, [target])[target], `${mode} ${target}: ${said}`).toBe(before[target]);
        }
        const refused = await failure(worker.tools.write_file as NamedTool, { path: target, content: PAYLOAD });
        expect(refused.code).toBe('PATH_BLOCKED');
      }
      expect(Object.fromEntries(imports.map((file) => [file, snapshotOf(work, [file])[file]]))).toEqual(before);
    });
  }
});

describe.runIf(MOUNT_VIEW)('a tools module named through a symlinked folder', () => {
  it('the folder cannot be swapped for one holding another module', { timeout: 120_000 }, async () => {
    const work = tempDir('toolgate-linked-');
    writeFiles(work, {
      'pkg/tools.mjs': "export function version() { return 'original'; }\n",
      'worker.yaml': [
        'name: victim',
        'toolsets:',
        '  custom: { module: ./lib/tools.mjs, approval: { default: preApproved } }',
        '  cli_execute: { allowed_binaries: [python3] }',
        '',
      ].join('\n'),
      'swap.py': [
        'import os, shutil',
        "os.unlink('lib')",
        "os.makedirs('lib')",
        `open('lib/tools.mjs', 'w').write("export function version() { return '${PAYLOAD}'; }\\n")`,
        "print('swapped')",
        '',
      ].join('\n'),
    });
    symlinkSync('pkg', join(work, 'lib'));
    const worker = await loadWorker(join(work, 'worker.yaml'), {});
    open.push(worker);
    const said = JSON.stringify(await call(worker.tools.cli_execute as NamedTool, { binary: 'python3', args: ['swap.py'] }));
    // Whatever the process managed inside the call, the link is back afterwards.
    expect(readlinkSync(join(work, 'lib')), said).toBe('pkg');
    expect(readFileSync(join(work, 'lib/tools.mjs'), 'utf8')).toBe("export function version() { return 'original'; }\n");
    expect(said).toContain('put back the symlink');
  });
});

describe('the examples layout: the configuration outside the work directory', () => {
  it('no process reaches the configuration, with or without the kernel view', { timeout: 120_000 }, async () => {
    const base = tempDir('toolgate-layout-');
    writeFiles(base, {
      'worker.yaml': [
        'name: victim',
        'sandbox: { root: ./workspace }',
        'toolsets:',
        '  custom: { module: ./tools.ts, approval: { default: preApproved } }',
        '  cli_execute: { allowed_binaries: [python3] }',
        '',
      ].join('\n'),
      'tools.ts': "import { z } from 'zod';\nexport function version(): string {\n  return 'original';\n}\nexport const versionSchema = z.object({});\n",
      'workspace/attack.py': ATTACK_PY,
    });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(base, 'node_modules'));
    const before = snapshotOf(base);
    const worker = await loadWorker(join(base, 'worker.yaml'), {});
    open.push(worker);
    const cli = worker.tools.cli_execute as NamedTool;
    for (const target of ['worker.yaml', 'tools.ts', 'toolgate.permissions.yaml', 'golem-forge.config.yaml']) {
      for (const mode of MODES) {
        // `up`: the program itself goes to the parent folder, where the configuration is.
        const result = (await call(cli, { binary: 'python3', args: ['attack.py', target, mode, 'up'] })) as { stdout: string };
        expect(result.stdout, `${mode} ${target}`).toMatch(/^refused/);
      }
    }
    expect(snapshotOf(base)).toEqual(before);
    expect(loadInNewProcess(join(base, 'worker.yaml'))).toEqual({ version: 'original', mode: 'enforce' });
  });
});
