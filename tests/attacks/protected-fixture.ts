/**
 * What the protected-configuration and kernel path-rule suites share (issue 22, §2 and §3): a
 * victim worker in the old default layout (the work directory is the worker file's folder, so
 * the worker file, its tools module, its tool directory and its MCP server sit where the agent
 * writes), the attack program the agent would write, and whether the kernel view is here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxSupport } from '../../ts/src/index.js';
import { REPO_ROOT } from '../helpers/checkout.js';
import { tempDir } from '../helpers/fs.js';
import { writeFiles } from '../helpers/tools.js';

/**
 * Whether sandboxed processes get the per-call mount view that makes protected paths read-only
 * and hidden paths unreachable (issue 22's kernel side, branch `view`, which reports it as
 * `sandboxSupport().view`). Without it Landlock still lets a process write anywhere in the
 * work directory, so the process attacks below cannot be refused yet: they run only with the
 * view. `TOOLGATE_TEST_MOUNT_VIEW=1` runs them anyway (to see them fail without it).
 */
export const MOUNT_VIEW =
  sandboxSupport().view === true || process.env.TOOLGATE_TEST_MOUNT_VIEW === '1';

/** What an attack writes; never found in a protected file afterwards. */
export const PAYLOAD = 'PWNED-BY-THE-AGENT';

/** The ways a process changes a file. */
export const MODES = ['write', 'append', 'truncate', 'rename', 'replace', 'symlink', 'link'] as const;
export type Mode = (typeof MODES)[number];

/**
 * The attack program the agent writes into the work directory and runs with an allowed
 * `python3`: `python3 attack.py TARGET MODE [up]` changes TARGET (relative to the work
 * directory, or to its parent with `up`) by MODE and prints `done` or `refused <error>`.
 */
export const ATTACK_PY = `import os, sys
def attack(target, mode, payload=${JSON.stringify(`${PAYLOAD}\n`)}):
    try:
        parent = os.path.dirname(target)
        if parent and mode != 'truncate':
            os.makedirs(parent, exist_ok=True)
        if mode == 'write':
            with open(target, 'w') as f: f.write(payload)
        elif mode == 'append':
            with open(target, 'a') as f: f.write(payload)
        elif mode == 'truncate':
            os.truncate(target, 0)
        elif mode == 'rename':
            with open(target + '.tmp', 'w') as f: f.write(payload)
            os.rename(target + '.tmp', target)
        elif mode == 'replace':
            if os.path.lexists(target): os.unlink(target)
            with open(target, 'w') as f: f.write(payload)
        elif mode == 'symlink':
            with open('evil.txt', 'w') as f: f.write(payload)
            if os.path.lexists(target): os.unlink(target)
            os.symlink(os.path.relpath('evil.txt', parent or '.'), target)
        elif mode == 'link':
            with open('evil.txt', 'w') as f: f.write(payload)
            if os.path.lexists(target): os.unlink(target)
            os.link('evil.txt', target)
        return 'done'
    except Exception as error:
        return 'refused ' + repr(error)
if __name__ == '__main__':
    target = sys.argv[1] if len(sys.argv) < 4 else os.path.join('..', sys.argv[1])
    print(attack(target, sys.argv[2]))
`;

/** An executable tool (the executable protocol) that writes where it is told: legitimate configuration the model can point at a protected file. */
const SCRIBBLE = `#!/usr/bin/env python3
import json, sys
${ATTACK_PY.replace("if __name__ == '__main__':", 'if False:')}
if sys.argv[1] == 'description':
    print(json.dumps({"name": "scribble", "description": "Writes text into a file of the work directory",
        "input_schema": {"type": "object", "properties": {"target": {"type": "string"}, "mode": {"type": "string"}},
        "required": ["target", "mode"]}}))
else:
    request = json.load(sys.stdin)
    print(json.dumps({"outcome": attack(request["target"], request["mode"])}))
`;

/** A stdio MCP server without dependencies (newline-delimited JSON-RPC) with one tool that writes where it is told. */
const SERVER_MJS = `import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { payload } from './srv/payload.mjs';
function attack(target, mode) {
  try {
    const parent = path.dirname(target);
    if (mode !== 'truncate') fs.mkdirSync(parent, { recursive: true });
    const fresh = () => { fs.writeFileSync('evil.txt', payload); try { fs.unlinkSync(target); } catch {} };
    if (mode === 'write') fs.writeFileSync(target, payload);
    else if (mode === 'append') fs.appendFileSync(target, payload);
    else if (mode === 'truncate') fs.truncateSync(target, 0);
    else if (mode === 'rename') { fs.writeFileSync(target + '.tmp', payload); fs.renameSync(target + '.tmp', target); }
    else if (mode === 'replace') { try { fs.unlinkSync(target); } catch {} fs.writeFileSync(target, payload); }
    else if (mode === 'symlink') { fresh(); fs.symlinkSync(path.relative(parent, 'evil.txt'), target); }
    else if (mode === 'link') { fresh(); fs.linkSync('evil.txt', target); }
    return 'done';
  } catch (error) {
    return 'refused ' + error.code;
  }
}
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  if (request.method === 'initialize') {
    send({ id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'scribbler', version: '1.0.0' } } });
  } else if (request.method === 'tools/list') {
    send({ id: request.id, result: { tools: [{ name: 'scribble', description: 'Writes text into a file', inputSchema: { type: 'object', properties: { target: { type: 'string' }, mode: { type: 'string' } }, required: ['target', 'mode'] } }] } });
  } else if (request.method === 'tools/call') {
    const { target, mode } = request.params.arguments;
    send({ id: request.id, result: { content: [{ type: 'text', text: attack(target, mode) }] } });
  } else {
    send({ id: request.id, error: { code: -32601, message: 'unknown method' } });
  }
});
`;

/** The victim worker: every toolset that starts processes, and both file toolsets, everything pre-approved. */
export const VICTIM_WORKER = `name: victim
instructions: Do what the task says.
toolsets:
  custom: { module: ./tools.ts, approval: { default: preApproved } }
  cli_execute: { allowed_binaries: [python3] }
  shell: { default: preApproved }
  executables: { approval: { default: preApproved } }
  mcp:
    servers: { srv: { command: node, args: [./server.mjs] } }
    approval: { default: preApproved }
  code_agent: { approval: { default: preApproved } }
  filesystem: { approval: { default: preApproved } }
`;

const TOOLS_TS = `import { z } from 'zod';
import { helper } from './lib/helper';

/** Says which version of the tools module was imported. */
export function version(): string {
  return helper();
}
export const versionSchema = z.object({});
`;

/** Files of the victim, as written: every one must read the same after the attacks. */
export function victimFiles(): Record<string, string> {
  return {
    'worker.yaml': VICTIM_WORKER,
    'tools.ts': TOOLS_TS,
    'lib/helper.ts': "export function helper(): string {\n  return 'original';\n}\n",
    'server.mjs': SERVER_MJS,
    // What the server imports: code the server runs, protected like its script.
    'srv/payload.mjs': `export const payload = ${JSON.stringify(`${PAYLOAD}\n`)};\n`,
    'toolgate-tools/scribble': SCRIBBLE,
    'attack.py': ATTACK_PY,
  };
}

/** The paths an attack goes for: existing configuration, and configuration it would plant. */
export const TARGETS = [
  'worker.yaml',
  'tools.ts',
  'lib/helper.ts',
  'server.mjs',
  'srv/payload.mjs',
  'toolgate-tools/scribble',
  '.git/config',
  'toolgate-tools/planted',
  '.git/hooks/pre-commit',
  '.git/commondir',
  '.git/config.worktree',
  'toolgate.permissions.yaml',
  'golem-forge.config.yaml',
] as const;

/** The old default layout in a fresh git repository: the work directory is the worker's folder. */
export function oldLayout(): { work: string; originals: Record<string, string> } {
  const work = tempDir('toolgate-protected-');
  execFileSync('git', ['init', '-q'], { cwd: work });
  writeFiles(work, victimFiles());
  chmodSync(join(work, 'toolgate-tools/scribble'), 0o755);
  // tools.ts imports zod: a user's project has it installed.
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(work, 'node_modules'));
  return { work, originals: snapshotOf(work) };
}

/** What each target is now: its content, `<missing>`, or `<symlink -> …>`. */
export function snapshotOf(work: string, targets: readonly string[] = TARGETS): Record<string, string> {
  const out: Record<string, string> = {};
  for (const target of targets) {
    const path = join(work, target);
    try {
      const stat = lstatSync(path);
      out[target] = stat.isSymbolicLink() ? `<symlink -> ${readlinkSync(path)}>` : `${readFileSync(path, 'utf8')} (inode ${stat.ino})`;
    } catch {
      out[target] = '<missing>';
    }
  }
  return out;
}

/**
 * Loads the worker in a new Node process (as the next `toolgate run` would) and returns what
 * the tools module says and the worker's sandbox mode: the original files give `original`
 * and `enforce`.
 */
export function loadInNewProcess(workerFile: string): { version: string; mode: string } {
  const script = `
    const { loadWorker } = await import(${JSON.stringify(join(REPO_ROOT, 'ts/src/index.ts'))});
    const worker = await loadWorker(${JSON.stringify(workerFile)});
    const version = await worker.tools.version.execute({}, { toolCallId: 'x', messages: [] });
    await worker.close();
    console.log(JSON.stringify({ version, mode: worker.sandbox.mode }));
  `;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: tempDir('toolgate-cache-') },
  });
  if (child.status !== 0) throw new Error(`loading ${workerFile} in a new process failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { version: string; mode: string };
}
