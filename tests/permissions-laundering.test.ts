/**
 * A "save" never launders a permissions file toolgate did not write (docs/permissions.md). A
 * process of the agent that runs for the whole session (an MCP stdio server, checked only after
 * each of its calls) could create `toolgate.permissions.yaml` while it does not exist; had the
 * next save merged it, its rules would have become toolgate's own write — kept by the check after
 * the call, approvals in the next run. The save refuses such a file and leaves it as it is, while
 * two toolgate processes saving at once still both land. Through the native plan API, in real
 * processes.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/fs.js';

const PERMISSIONS = 'toolgate.permissions.yaml';
const BINDING = join(import.meta.dirname, '..', 'native', 'binding.js');
const WORKER = 'name: keeper\nmodel: scripted:./script.json\ntoolsets:\n  shell:\n    default: ask\n';
const PLANTED =
  'version: 1\nrules:\n  - worker: keeper\n    tool: shell\n    prefix: python3\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n';

function project(): { dir: string; worker: string } {
  const dir = tempDir();
  const worker = join(dir, 'worker.yaml');
  writeFileSync(worker, WORKER);
  return { dir, worker };
}

/**
 * A process that plans the worker (reading the permissions file), says so (`<name>.ready`),
 * waits for `<name>.go`, then saves `echo <name>` and prints what came of it.
 */
function saver(dir: string, worker: string, name: string) {
  const code = `
    import { existsSync, writeFileSync } from 'node:fs';
    const native = await import(${JSON.stringify(BINDING)});
    const plan = await native.planWorker(${JSON.stringify(worker)}, null, false);
    writeFileSync(${JSON.stringify(join(dir, `${name}.ready`))}, '');
    while (!existsSync(${JSON.stringify(join(dir, `${name}.go`))})) await new Promise((r) => setTimeout(r, 20));
    try {
      native.planSaveRule(plan, 0, 'shell', JSON.stringify({ command: 'echo ${name}' }), ['echo', '${name}'], 'approval-handler');
      console.log('saved');
    } catch (error) {
      console.log('refused: ' + error.message);
    }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const done = new Promise<string>((resolve) => child.on('close', () => resolve(out.trim())));
  const ready = async () => {
    while (!existsSync(join(dir, `${name}.ready`))) await new Promise((r) => setTimeout(r, 20));
  };
  return { ready, go: () => writeFileSync(join(dir, `${name}.go`), ''), done };
}

describe('saving into a permissions file toolgate did not write', () => {
  it('a file planted after the run read none is refused and left for the check to remove', async () => {
    const { dir, worker } = project();
    const run = saver(dir, worker, 'ls');
    await run.ready();
    writeFileSync(join(dir, PERMISSIONS), PLANTED); // the MCP server's plant
    run.go();
    const said = await run.done;
    expect(said).toMatch(/^refused: /);
    expect(said).toContain(join(dir, PERMISSIONS));
    expect(said).toContain('did not exist when this run read its rules');
    expect(said).toContain('if you did not write it, delete it');
    expect(readFileSync(join(dir, PERMISSIONS), 'utf8')).toBe(PLANTED);
  }, 60_000);

  it('a file changed since the run read it is refused', async () => {
    const { dir, worker } = project();
    writeFileSync(join(dir, PERMISSIONS), '# mine\nversion: 1\nrules:\n');
    const run = saver(dir, worker, 'ls');
    await run.ready();
    writeFileSync(join(dir, PERMISSIONS), PLANTED);
    run.go();
    const said = await run.done;
    expect(said).toMatch(/^refused: .*now holds content toolgate did not read or write/);
    expect(readFileSync(join(dir, PERMISSIONS), 'utf8')).toBe(PLANTED);
  }, 60_000);

  it("another toolgate process's save is merged: both land", async () => {
    const { dir, worker } = project();
    const first = saver(dir, worker, 'first');
    const second = saver(dir, worker, 'second');
    // both read the file missing; the second saves first, then the first saves
    await Promise.all([first.ready(), second.ready()]);
    second.go();
    expect(await second.done).toBe('saved');
    first.go();
    expect(await first.done).toBe('saved');
    const text = readFileSync(join(dir, PERMISSIONS), 'utf8');
    expect(text).toContain('command: echo first\n');
    expect(text).toContain('command: echo second\n');
  }, 60_000);
});
