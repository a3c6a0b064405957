/**
 * Issue 22 §2 and issue 25 item 8: the project permissions file `toolgate.permissions.yaml`
 * (beside the top-level worker file) holds saved approvals that every later run reads. An agent
 * that could write it would approve its own next calls. It is protected configuration: the file
 * tools refuse every change of it under every name (`PATH_BLOCKED`, rule `protected`) — written,
 * edited, patched, deleted, moved onto or away, through a symlink, through a hard link made
 * before or after the tools were prepared, by `../` traversal, by its absolute path, and created
 * when it does not exist yet — and every sandboxed process sees it read-only (`SandboxPolicy.protect`,
 * passed even when it is missing). In the examples layout (the worker file outside the work
 * directory) processes cannot name it (`PATH_OUTSIDE_ROOT` for `cp`, `tee`, `sed -i` arguments)
 * nor reach it (Landlock). toolgate itself still writes it on a "save" answer
 * (tests/permissions.test.ts).
 */
import { linkSync, lstatSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { native } from '../../ts/src/native/binding.js';
import { tempDir } from '../helpers/fs.js';
import { call, failure, writeFiles } from '../helpers/tools.js';
import { MOUNT_VIEW, PAYLOAD } from './protected-fixture.js';

const PERMISSIONS = 'toolgate.permissions.yaml';
const SAVED = '# saved answers\nversion: 1\nrules: []\n';

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

/** Every toolset that writes files or starts processes, everything pre-approved. */
const VICTIM = `name: victim
toolsets:
  filesystem: { approval: { default: preApproved } }
  code_agent: { approval: { default: preApproved } }
  cli_execute: { allowed_binaries: [cp, tee, sed] }
  shell: { default: preApproved }
`;

/** What the permissions file is now: content and inode, `<missing>` or the symlink. */
function state(path: string): string {
  try {
    const stat = lstatSync(path);
    return stat.isSymbolicLink() ? '<symlink>' : `${readFileSync(path, 'utf8')} (inode ${stat.ino})`;
  } catch {
    return '<missing>';
  }
}

/** The old layout: the work directory is the worker file's folder, the permissions file in it. */
async function oldLayout(existing: boolean) {
  const work = tempDir('toolgate-permissions-');
  writeFiles(work, { 'worker.yaml': VICTIM, 'sub/keep.txt': 'x\n', 'evil.txt': `${PAYLOAD}\n` });
  if (existing) {
    writeFiles(work, { [PERMISSIONS]: SAVED });
    linkSync(join(work, PERMISSIONS), join(work, 'hard-before.yaml'));
  }
  // Symlinks the agent's processes could have planted: to the file (dangling while it is
  // missing) and to the folder holding it.
  symlinkSync(PERMISSIONS, join(work, 'link.yaml'));
  symlinkSync('.', join(work, 'here'));
  const worker = await loadWorker(join(work, 'worker.yaml'), {});
  open.push(worker);
  const tool = (name: string) => worker.tools[name] as NamedTool;
  return { work, worker, tool, before: state(join(work, PERMISSIONS)) };
}

/** Every spelling that names the permissions file. */
function spellings(work: string): string[] {
  return [PERMISSIONS, `./${PERMISSIONS}`, `sub/../${PERMISSIONS}`, `here/${PERMISSIONS}`, 'link.yaml', join(work, PERMISSIONS)];
}

/** Every file-tool call that would change the file named `path`. */
function changes(path: string, existing: boolean): [string, Record<string, unknown>][] {
  const attacks: [string, Record<string, unknown>][] = [
    ['write_file', { path, content: `rules: [{ tool: shell, command: '*' }] # ${PAYLOAD}\n` }],
    ['file_write', { path, content: PAYLOAD }],
    ['file_patch', { operations: [{ action: 'add', path, content: PAYLOAD }] }],
    ['file_patch', { operations: [{ action: 'move', path: 'evil.txt', new_path: path }] }],
  ];
  if (existing) {
    attacks.push(
      ['file_edit', { path, old_text: 'rules: []', new_text: `rules: [] # ${PAYLOAD}` }],
      ['file_patch', { operations: [{ action: 'update', path, content: PAYLOAD }] }],
      ['file_patch', { operations: [{ action: 'delete', path }] }],
      ['file_patch', { operations: [{ action: 'move', path, new_path: 'moved.yaml' }] }],
      ['delete_file', { path }],
    );
  }
  return attacks;
}

describe('the permissions file and the file tools (inside the work directory)', () => {
  for (const existing of [true, false]) {
    it(`refuses every change under every name (${existing ? 'written' : 'not written yet'})`, async () => {
      const { work, tool, before } = await oldLayout(existing);
      let attempts = 0;
      for (const path of spellings(work)) {
        for (const [name, input] of changes(path, existing)) {
          const error = await failure(tool(name), input);
          attempts++;
          expect(error.code, `${name} ${JSON.stringify(input)}: ${error.message}`).toBe('PATH_BLOCKED');
          expect(error.message, `${name} ${path}`).toMatch(/protected configuration \(the project permissions file/);
          expect(state(join(work, PERMISSIONS)), `${name} ${path}`).toBe(before);
        }
      }
      expect(attempts).toBeGreaterThanOrEqual(existing ? 50 : 20);
      expect(state(join(work, 'moved.yaml'))).toBe('<missing>');
      // Reading it is not a change.
      if (existing) expect(await call(tool('file_read'), { path: PERMISSIONS })).toContain('version: 1');
    });
  }

  it('refuses a hard link to it, made before or after the tools were prepared', async () => {
    const { work, tool, before } = await oldLayout(true);
    linkSync(join(work, PERMISSIONS), join(work, 'hard-after.yaml'));
    for (const path of ['hard-before.yaml', 'hard-after.yaml', 'sub/../hard-after.yaml']) {
      for (const [name, input] of [
        ['write_file', { path, content: PAYLOAD }],
        ['file_write', { path, content: PAYLOAD }],
        ['file_edit', { path, old_text: 'rules: []', new_text: PAYLOAD }],
        ['file_patch', { operations: [{ action: 'update', path, content: PAYLOAD }] }],
      ] as [string, Record<string, unknown>][]) {
        const error = await failure(tool(name), input);
        expect(error.code, `${name} ${path}: ${error.message}`).toBe('PATH_BLOCKED');
        expect(error.message).toContain(`the same file as '${PERMISSIONS}'`);
      }
    }
    expect(state(join(work, PERMISSIONS))).toBe(before);
  });

  it('is in the protect list of every sandbox of the graph, missing or not, and toolgate check says so', async () => {
    for (const existing of [true, false]) {
      const { work } = await oldLayout(existing);
      const plan = await native.planWorker(join(work, 'worker.yaml'), null, false);
      const sandboxes = plan.guardedPaths(0);
      expect(sandboxes.map((sandbox) => sandbox.sandbox)).toEqual(['worker', 'shell', 'cli_execute']);
      for (const sandbox of sandboxes) {
        const line = sandbox.paths.find((guarded) => guarded.path === join(work, PERMISSIONS));
        expect(line, `${sandbox.sandbox}`).toMatchObject({ kind: 'protected', exists: existing, enforced: true });
      }
      const checks = JSON.parse(plan.checkPath(0, PERMISSIONS, [], null)) as { tool: string; by: string; rule: string | null }[];
      expect(checks.find((check) => check.tool === 'write_file')).toMatchObject({ by: 'protected', rule: 'protected' });
      expect(checks.find((check) => check.tool === 'read_file')?.by).toBe('tool');
    }
  });
});

/** Process writes the agent could try, with the file named `target`. */
function processWrites(target: string): { cli: string[][]; shell: string[] } {
  return {
    cli: [
      ['cp', 'evil.txt', target],
      ['tee', target],
      ['tee', '-a', target],
      ['sed', '-i', `s/rules/${PAYLOAD}/`, target],
      ['cp', '--no-target-directory', 'evil.txt', target],
      ['sed', '-i.bak', '-e', `s/rules/${PAYLOAD}/`, target],
    ],
    shell: [
      `cp evil.txt ${target}`,
      `echo ${PAYLOAD} | tee ${target}`,
      `echo ${PAYLOAD} | tee -a ${target}`,
      `sed -i s/rules/${PAYLOAD}/ ${target}`,
      `echo ${PAYLOAD} > ${target}`,
      `echo ${PAYLOAD} >> ${target}`,
      `rm -f ${target}; echo ${PAYLOAD} > ${target}`,
      `ln -f evil.txt ${target}`,
      `ln -sf evil.txt ${target}`,
      `mv evil.txt ${target}`,
    ],
  };
}

/** Runs a tool call, returning what it said or the error it threw. */
async function attempt(tool: NamedTool, input: unknown): Promise<{ code?: string; said: string }> {
  try {
    return { said: JSON.stringify(await call(tool, input)) };
  } catch (error) {
    const { code, message } = error as Error & { code?: string };
    return { code, said: message };
  }
}

describe('the permissions file and processes, in the examples layout (outside the work directory)', () => {
  it('cp, tee, sed -i and redirections cannot name or reach it, on any kernel', { timeout: 120_000 }, async () => {
    const base = tempDir('toolgate-permissions-layout-');
    writeFiles(base, {
      'worker.yaml': `${VICTIM.replace('name: victim\n', 'name: victim\nsandbox: { root: ./workspace }\n')}`,
      [PERMISSIONS]: SAVED,
      'workspace/evil.txt': `${PAYLOAD}\n`,
    });
    const worker = await loadWorker(join(base, 'worker.yaml'), {});
    open.push(worker);
    const before = state(join(base, PERMISSIONS));
    for (const target of [`../${PERMISSIONS}`, join(base, PERMISSIONS), `./../${PERMISSIONS}`]) {
      const { cli, shell } = processWrites(target);
      for (const args of cli) {
        const [binary, ...rest] = args;
        const result = await attempt(worker.tools.cli_execute as NamedTool, { binary, args: rest });
        expect(result.code, `${args.join(' ')}: ${result.said}`).toBe('PATH_OUTSIDE_ROOT');
        expect(state(join(base, PERMISSIONS)), `${args.join(' ')}: ${result.said}`).toBe(before);
      }
      for (const command of shell) {
        const result = await attempt(worker.tools.shell as NamedTool, { command });
        expect(state(join(base, PERMISSIONS)), `${command}: ${result.said}`).toBe(before);
      }
      // The file tools: outside the work directory.
      const error = await failure(worker.tools.write_file as NamedTool, { path: target, content: PAYLOAD });
      expect(error.code).toBe('PATH_OUTSIDE_ROOT');
    }
    expect(state(join(base, PERMISSIONS))).toBe(before);
  });
});

describe.runIf(MOUNT_VIEW)('the permissions file and processes in the work directory (needs the kernel view)', () => {
  for (const existing of [true, false]) {
    it(`no process changes or creates it (${existing ? 'written' : 'not written yet'})`, { timeout: 120_000 }, async () => {
      const { work, worker, before } = await oldLayout(existing);
      for (const target of [PERMISSIONS, `sub/../${PERMISSIONS}`, 'link.yaml', `here/${PERMISSIONS}`]) {
        const { cli, shell } = processWrites(target);
        for (const args of cli) {
          const [binary, ...rest] = args;
          const result = await attempt(worker.tools.cli_execute as NamedTool, { binary, args: rest });
          expect(state(join(work, PERMISSIONS)), `${args.join(' ')}: ${result.said}`).toBe(before);
        }
        for (const command of shell) {
          const result = await attempt(worker.tools.shell as NamedTool, { command });
          expect(state(join(work, PERMISSIONS)), `${command}: ${result.said}`).toBe(before);
        }
      }
    });
  }
});
