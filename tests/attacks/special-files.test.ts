/**
 * Class: special files where a file tool expects a file. A FIFO without a writer makes a plain
 * `open` block forever (and with it a thread of libuv's pool, which `fs.promises.readFile`
 * needs too); a process in the work directory can swap a checked file for one at any moment.
 * Every file tool opens without blocking and judges the descriptor: FIFOs, sockets and devices
 * are refused (`INVALID_INPUT`) or skipped by walks, never read. The racer here is a real
 * other process that swaps a file for a FIFO as fast as it can while the tools run; the test's
 * own timeout is what a hang would hit.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { codeAgentTools, filesystemToolset, ToolgateError } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { byName, call } from '../helpers/tools.js';
import { skip, which } from './fixture.js';

const mkfifo = which('mkfifo');
const CALLS = 120;

let racer: ChildProcess | undefined;
let server: Server | undefined;

afterEach(async () => {
  // The racer and its last `mkfifo` (its own process group) are gone before the directory is removed.
  if (racer?.pid !== undefined) {
    const exited = new Promise((resolve) => racer!.once('exit', resolve));
    try {
      process.kill(-racer.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    if (racer.exitCode === null && racer.signalCode === null) await exited;
  }
  racer = undefined;
  server?.close();
  server = undefined;
});

function fifo(path: string): void {
  execFileSync(mkfifo!, [path]);
}

/** The code a call failed with, or `ok`. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (error instanceof ToolgateError) return error.code;
    if (error instanceof Error && error.name === 'AbortError') return 'ABORTED';
    throw error;
  }
}

function setup() {
  const root = tempDir('toolgate-special-');
  mkdirSync(join(root, 'sub'));
  writeFileSync(join(root, 'file.txt'), 'needle\n');
  writeFileSync(join(root, 'sub', 'other.txt'), 'needle\n');
  const tools = codeAgentTools({ workDir: root, approval: { default: 'preApproved' } });
  return { root, tools, tool: (name: string) => byName(tools, name) };
}

describe('special files', () => {
  it('a FIFO, a socket and a FIFO named .gitignore are refused or skipped, never read', async () => {
    if (!mkfifo) return skip('mkfifo is not installed');
    const { root, tool } = setup();
    fifo(join(root, 'pipe'));
    fifo(join(root, '.gitignore'));
    fifo(join(root, 'sub', '.ignore'));
    server = createServer();
    await new Promise<void>((resolve) => server!.listen(join(root, 'socket'), resolve));

    for (const path of ['pipe', 'socket', '.gitignore', 'sub/.ignore']) {
      const refused = await outcome(call(tool('file_read'), { path }));
      expect(refused, path).toBe('INVALID_INPUT');
      expect(await outcome(call(tool('file_edit'), { path, old_text: 'a', new_text: 'b' })), path).not.toBe('ok');
    }
    const read = await call(tool('file_read'), { path: 'pipe' }).catch((error: Error) => error.message);
    expect(read).toMatch(/'pipe' is a FIFO \(named pipe\), not a regular file/);
    expect(await call(tool('grep_search'), { pattern: 'needle' })).toBe('file.txt:1:needle\nsub/other.txt:1:needle\n');
    // Searching the FIFO itself: refused as no directory, never opened.
    expect(await outcome(call(tool('grep_search'), { pattern: 'needle', path: 'pipe' }))).toBe('INVALID_INPUT');
    const listed = await call<string>(tool('glob_search'), { pattern: '**/*' });
    expect(listed).not.toMatch(/pipe|socket/);
    const drawn = await call<string>(tool('directory_tree'), {});
    expect(drawn).not.toMatch(/pipe|socket/);
    expect(drawn).toContain('other.txt');

    // The filesystem toolset reads through the same opens.
    const files = filesystemToolset({ root });
    expect(await outcome(call(byName(files, 'read_file'), { path: 'pipe' }))).toBe('INVALID_INPUT');
  });

  it(`${CALLS} rounds of reads, edits and searches against a process swapping a file for a FIFO never hang`, { timeout: 120_000 }, async () => {
    if (!mkfifo) return skip('mkfifo is not installed');
    const { root, tool } = setup();
    const swap = join(root, 'swap');
    mkdirSync(swap);
    writeFileSync(join(swap, 'target'), 'needle\n');
    // The racer: another process that renames a fresh file, then a fresh FIFO, over `target`
    // and over `.gitignore`, in a loop.
    const script = `
      const { execFileSync } = require('node:child_process');
      const { renameSync, writeFileSync, rmSync } = require('node:fs');
      const { join } = require('node:path');
      const [dir, mkfifo] = process.argv.slice(1);
      for (;;) {
        for (const name of ['target', '.gitignore']) {
          const staged = join(dir, name + '.next');
          writeFileSync(staged, 'needle\\n');
          renameSync(staged, join(dir, name));
          rmSync(staged, { force: true });
          execFileSync(mkfifo, [staged]);
          renameSync(staged, join(dir, name));
        }
      }`;
    racer = spawn(process.execPath, ['-e', script, swap, mkfifo], { stdio: 'ignore', detached: true });

    const seen = new Map<string, number>();
    for (let round = 0; round < CALLS; round++) {
      const results = await Promise.all([
        outcome(call(tool('file_read'), { path: 'swap/target' })),
        outcome(call(tool('file_edit'), { path: 'swap/target', old_text: 'needle', new_text: 'needle' })),
        outcome(call(tool('grep_search'), { pattern: 'needle', path: 'swap' })),
        outcome(call(tool('grep_search'), { pattern: 'needle', path: 'swap/target' })),
        outcome(call(tool('glob_search'), { pattern: 'swap/**' })),
      ]);
      for (const result of results) seen.set(result, (seen.get(result) ?? 0) + 1);
    }
    expect(racer.exitCode, 'the racer kept running').toBeNull();
    // Every call returned: a result, or a refusal for what it found (or a file gone mid-swap).
    expect([...seen.values()].reduce((a, b) => a + b, 0)).toBe(CALLS * 5);
    for (const code of seen.keys()) expect(['ok', 'INVALID_INPUT', 'FILE_NOT_FOUND', 'TOOL_FAILED']).toContain(code);
    // The host's own file system calls still have their threads.
    const own = join(root, 'own.txt');
    writeFileSync(own, 'still here');
    expect(await readFile(own, 'utf8')).toBe('still here');
    expect(readFileSync(own, 'utf8')).toBe('still here');
  });

  it('aborted searches over a tree full of FIFOs settle, and the libuv pool stays free', async () => {
    if (!mkfifo) return skip('mkfifo is not installed');
    const { root, tool } = setup();
    for (let i = 0; i < 50; i++) fifo(join(root, `pipe-${i}`));
    for (let i = 0; i < 500; i++) writeFileSync(join(root, 'sub', `file-${i}.txt`), 'needle\n');
    const calls = Array.from({ length: 8 }, () => {
      const controller = new AbortController();
      const pending = outcome(call(tool('grep_search'), { pattern: 'needle' }, controller.signal));
      controller.abort();
      return pending;
    });
    for (const result of await Promise.all(calls)) expect(['ok', 'ABORTED', 'TOOL_FAILED'], result).toContain(result);
    expect(await readFile(join(root, 'file.txt'), 'utf8')).toBe('needle\n');
  });
});
