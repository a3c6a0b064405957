/** `toolgate sandbox` and `toolgate check --sandbox`, end to end through the built CLI. */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { CLI, runToolgate } from './helpers/cli.js';
import { HOST_PID, waitUntilGone } from './helpers/processes.js';
import { type AttackFixture, attackFixture } from './helpers/sandbox.js';

let fx: AttackFixture;
beforeEach(() => {
  fx = attackFixture();
});

const sandbox = (...args: string[]) => runToolgate(['sandbox', '--work-dir', fx.work, ...args], { cwd: fx.work });

describe('toolgate sandbox', () => {
  it("passes the program's exit code through; a denial is the program's own error", () => {
    expect(sandbox('--', 'sh', '-c', 'exit 7').status).toBe(7);
    const denied = sandbox('--', 'cat', fx.secretFile);
    expect(denied.status).toBe(1);
    expect(denied.stderr).toContain('Permission denied');
    expect(denied.stderr).not.toContain('toolgate sandbox:');
    expect(denied.stdout).not.toContain(fx.secret);
    // A program ended by a signal: 128 + its number, like a shell.
    expect(sandbox('--', 'sh', '-c', 'kill -TERM $$').status).toBe(128 + 15);
  });

  it('runs in the work directory with a private HOME, removed afterwards, and the terminal stdin', () => {
    const run = sandbox('--', 'sh', '-c', 'echo made > here.txt && echo "$HOME" && cat');
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(join(fx.work, 'here.txt'), 'utf8')).toBe('made\n');
    const home = run.stdout.split('\n')[0]!;
    expect(home).toMatch(/\/toolgate-call-[0-9a-f]+\/home$/);
    expect(existsSync(home)).toBe(false);
    const piped = runToolgate(['sandbox', '--work-dir', fx.work, '--', 'cat'], { input: 'from stdin' });
    expect(piped.stdout).toBe('from stdin');
  });

  it('widens with --read and --write, and nothing else is writable', () => {
    expect(sandbox('--read', fx.outside, '--', 'cat', fx.secretFile).stdout).toContain(fx.secret);
    const target = join(fx.outside, 'written');
    expect(sandbox('--', 'touch', target).status).toBe(1);
    expect(existsSync(target)).toBe(false);
    expect(sandbox('--write', fx.outside, '--', 'touch', target).status).toBe(0);
    expect(existsSync(target)).toBe(true);
  });

  it('allows the network only with --network', async () => {
    const server = createServer((_request, response) => response.end('PONG'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      // Asynchronously: the server answering runs in this process.
      const run = (...flags: string[]) =>
        new Promise<{ code: number; stdout: string }>((resolve) => {
          execFile(process.execPath, [CLI, 'sandbox', '--work-dir', fx.work, ...flags, '--', 'curl', '-s', '--max-time', '5', url], (error, stdout) =>
            resolve({ code: error ? Number(error.code) : 0, stdout }),
          );
        });
      const denied = await run();
      expect(denied.code).not.toBe(0);
      expect(denied.stdout).not.toContain('PONG');
      expect(await run('--network')).toEqual({ code: 0, stdout: 'PONG' });
    } finally {
      server.close();
    }
  });

  it('ends every descendant with the program', async () => {
    const run = sandbox('--', 'sh', '-c', `setsid -f sh -c '${HOST_PID}; echo $pid > daemon.pid; exec sleep 60'; while [ ! -s daemon.pid ]; do sleep 0.05; done`);
    expect(run.status, run.stderr).toBe(0);
    const pid = Number(readFileSync(join(fx.work, 'daemon.pid'), 'utf8'));
    expect(await waitUntilGone(pid, 2000)).toBe(true);
  });

  it('reports usage errors and missing programs like env does', () => {
    const missing = sandbox('--', 'no-such-program-toolgate');
    expect(missing.status).toBe(127);
    expect(missing.stderr).toContain('BINARY_NOT_FOUND');
    expect(sandbox('ls').status).toBe(2);
    expect(sandbox('--bogus', '--', 'ls').status).toBe(2);
    const unusable = sandbox('--read', join(fx.base, 'missing'), '--', 'ls');
    expect(unusable.status).toBe(2);
    expect(unusable.stderr).toContain("read entry '");
    expect(runToolgate(['sandbox', '--help']).stdout).toContain('Usage: toolgate sandbox');
  });

  it('fails closed with 125 when the sandbox cannot be enforced, and runs with --best-effort', () => {
    const env = { ...process.env, TOOLGATE_SANDBOX_LAUNCHER: join(fx.base, 'no-such-launcher') };
    const enforced = runToolgate(['sandbox', '--work-dir', fx.work, '--', 'cat', 'x.txt'], { env });
    expect(enforced.status).toBe(125);
    expect(enforced.stderr).toContain('SANDBOX_UNAVAILABLE');
    const best = runToolgate(['sandbox', '--best-effort', '--work-dir', fx.work, '--', 'cat', 'x.txt'], { env });
    expect(best.status).toBe(0);
    expect(best.stdout).toBe('hello\n');
    expect(best.stderr).toContain('toolgate sandbox (best-effort)');
  });
});

describe('toolgate check --sandbox', () => {
  it('prints what this kernel supports and the effective policy', () => {
    const run = runToolgate(['check', '--sandbox', '--work-dir', fx.work, '--network', '--read', fx.outside]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/landlock +ABI [1-9]/);
    expect(run.stdout).toMatch(/seccomp +yes/);
    expect(run.stdout).toMatch(/user namespaces +(yes|no)/);
    expect(run.stdout).toMatch(/enforce +available/);
    expect(run.stdout).toMatch(/network +open \(network: true, every host\)/);
    expect(run.stdout).toContain(`${fx.work} (read-write)`);
    expect(run.stdout).toContain(fx.outside);
    const json = JSON.parse(runToolgate(['check', '--sandbox', '--json', '--work-dir', fx.work]).stdout);
    expect(json.support.landlockAbi).toBeGreaterThan(0);
    expect(json.support.launcher).toMatch(/toolgate-sandbox$/);
    expect(json.policy).toMatchObject({ mode: 'enforce', network: false, workDir: fx.work, readonly: false });
  });

  it("shows a worker's sandbox and each toolset's", () => {
    const worker = join(fx.base, 'w.yaml');
    writeFileSync(
      worker,
      'name: w\nsandbox: { root: ./work, readonly: true, network: true }\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { network: false }\n  cli_execute: { allowed_binaries: [ls] }\n',
    );
    const run = runToolgate(['check', '--sandbox', worker]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(`worker w (${worker})`);
    expect(run.stdout).toContain(`${fx.work} (read-only)`);
    expect(run.stdout).toMatch(/cli_execute +the worker sandbox/);
    expect(run.stdout).toMatch(/ {2}shell\n {4}mode +enforce\n {4}network +off/);
    const json = JSON.parse(runToolgate(['check', '--sandbox', '--json', worker]).stdout);
    expect(json.workers[0].toolsets.map((entry: { toolset: string }) => entry.toolset)).toEqual(['shell', 'cli_execute']);
  });

  it('exits 1 when enforce is unavailable here, 2 for a bad worker file', () => {
    const env = { ...process.env, TOOLGATE_SANDBOX_LAUNCHER: join(fx.base, 'no-such-launcher') };
    const run = runToolgate(['check', '--sandbox'], { env, cwd: fx.work });
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/launcher +not found/);
    expect(run.stdout).toContain('unavailable: missing');
    writeFileSync(join(fx.base, 'bad.yaml'), 'name: bad\nsandbox: { netwrk: true }\n');
    const bad = runToolgate(['check', '--sandbox', join(fx.base, 'bad.yaml')]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('netwrk');
  });

  it('is listed in the help', () => {
    const help = runToolgate(['--help']).stdout;
    expect(help).toContain('sandbox [options] -- <program> [args]');
    expect(help).toContain('check --sandbox [worker]');
  });
});
