/** `toolgate sandbox` and `toolgate check --sandbox`, end to end through the built CLI. */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { CLI, runToolgate } from './helpers/cli.js';
import { processesWith, sleepMarker, waitInsideFor } from './helpers/processes.js';
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
    // Outside the view the file does not exist (an older kernel without one: Landlock denies).
    expect(denied.stderr).toMatch(/No such file or directory|Permission denied/);
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
    // A daemon in a session of its own; the program waits until it runs, then ends.
    const marker = sleepMarker();
    const run = sandbox('--', 'sh', '-c', `setsid -f sleep ${marker}; ${waitInsideFor(marker)}`);
    expect(run.status, run.stderr).toBe(0);
    const until = Date.now() + 2000;
    while (processesWith(marker).length > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(processesWith(marker)).toEqual([]);
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

/** A shell word for `script -c`. */
const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/** Runs `toolgate sandbox <args>` on a terminal of its own (a pty made by util-linux `script`). */
function sandboxOnTerminal(...args: string[]) {
  const command = [process.execPath, CLI, 'sandbox', '--work-dir', fx.work, ...args].map(quote).join(' ');
  const run = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', input: '', timeout: 60_000 });
  return { status: run.status, stdout: String(run.stdout).replaceAll('\r', '') };
}

/** What a program can do with a terminal: every attempt prints a word. */
const TERMINAL_PROBE = `
import fcntl, os, termios
out = []
out.append('isatty' if any(os.isatty(fd) for fd in (0, 1, 2)) else 'no-isatty')
out.append('ctty' if int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[4]) != 0 else 'no-ctty')
try:
    os.close(os.open('/dev/tty', os.O_RDWR)); out.append('dev-tty')
except OSError:
    out.append('no-dev-tty')
try:
    os.tcsetpgrp(0, os.getpgrp()); out.append('tcsetpgrp')
except OSError:
    out.append('no-tcsetpgrp')
try:
    fcntl.ioctl(0, termios.TIOCSTI, b'x'); out.append('tiocsti')
except OSError:
    out.append('no-tiocsti')
print(' '.join(out))
`;

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;

describe.skipIf(!hasScript)('toolgate sandbox on a terminal (util-linux script makes one)', () => {
  it('gives the program no terminal without --tty: no tty fds, no controlling terminal, no /dev/tty', () => {
    const probe = sandboxOnTerminal('--', 'python3', '-c', TERMINAL_PROBE);
    expect(probe.status).toBe(0);
    expect(probe.stdout.trim()).toBe('no-isatty no-ctty no-dev-tty no-tcsetpgrp no-tiocsti');
    // The same through a shell and its descendants.
    const shell = sandboxOnTerminal('--', 'sh', '-c', 'test -t 0 || test -t 1 || echo no-tty; (exec 3</dev/tty) 2>/dev/null || echo no-dev-tty; sh -c "exec 3<>/dev/tty" 2>/dev/null || echo child-no-dev-tty');
    expect(shell.stdout.trim().split('\n')).toEqual(['no-tty', 'no-dev-tty', 'child-no-dev-tty']);
    // Its output and input are still relayed.
    expect(sandboxOnTerminal('--', 'echo', 'relayed').stdout.trim()).toBe('relayed');
  });

  it('passes the terminal only with --tty; injecting input, taking the foreground and changing the line discipline stay refused', () => {
    const probe = sandboxOnTerminal('--tty', '--', 'python3', '-c', TERMINAL_PROBE);
    expect(probe.status).toBe(0);
    expect(probe.stdout.trim()).toBe('isatty ctty dev-tty no-tcsetpgrp no-tiocsti');
    // What would outlive the program on the user's terminal: TIOCSETD (N_NULL swallows
    // everything shown after), TIOCSPGRP with SIGTTOU ignored, exclusive mode, suspended output
    // (tcflow TCOOFF), its size; the terminal still shows what comes after.
    const discipline = sandboxOnTerminal(
      '--tty',
      '--',
      'python3',
      '-c',
      "import fcntl, os, signal, struct, termios\nsignal.signal(signal.SIGTTOU, signal.SIG_IGN)\nfor name, request, arg in (('setd', termios.TIOCSETD, struct.pack('i', 27)), ('spgrp', termios.TIOCSPGRP, struct.pack('i', os.getpid())), ('excl', termios.TIOCEXCL, 0), ('xonc', termios.TCXONC, termios.TCOOFF), ('swinsz', termios.TIOCSWINSZ, struct.pack('HHHH', 3, 7, 0, 0))):\n    try:\n        fcntl.ioctl(0, request, arg); print(name, 'done')\n    except OSError as e:\n        print(name, e.errno)\nprint('still-shown')",
    );
    for (const name of ['setd', 'spgrp', 'excl', 'xonc', 'swinsz']) expect(discipline.stdout).toContain(`${name} 1`);
    expect(discipline.stdout).toContain('still-shown');
    // The terminal's file mode, changed by the program through its descriptor, is put back
    // when it ends (one terminal: its mode before, in the program, after toolgate).
    const show = (when: string) => `python3 -c ${quote(`import os, stat; print('${when}', oct(stat.S_IMODE(os.fstat(0).st_mode)))`)}`;
    const sandboxed = [process.execPath, CLI, 'sandbox', '--tty', '--work-dir', fx.work, '--', 'sh', '-c', `python3 -c 'import os; os.fchmod(0, 0o666)'; ${show('during')}`].map(quote).join(' ');
    const modes = spawnSync('script', ['-qec', `${show('before')}; ${sandboxed}; ${show('after')}`, '/dev/null'], { encoding: 'utf8', input: '', timeout: 60_000 });
    const shown = String(modes.stdout).replaceAll('\r', '');
    const before = /before (0o\d+)/.exec(shown)?.[1];
    expect(before, shown).toBeDefined();
    expect(before).not.toBe('0o666');
    expect(shown).toContain('during 0o666');
    expect(shown).toContain(`after ${before}`);
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
    // The view, the network namespace and how limits are enforced; each call's limits.
    expect(run.stdout).toMatch(/view +(yes \(a mount namespace per call|no: )/);
    expect(run.stdout).toMatch(/net namespace +(yes|no)/);
    expect(run.stdout).toMatch(/limits by +(cgroup v[12]|rlimits)/);
    expect(run.stdout).toMatch(/limits +processes 512, memoryMb 4096, tmpMb 512, cpuSeconds unlimited, fileSizeMb 1024/);
    // Every grant with its reason: the work directory, the read root, the runtime; never '/'.
    expect(run.stdout).toContain(`write           ${fx.work}: the work directory`);
    expect(run.stdout).toMatch(new RegExp(`read +${fx.outside}: a read root`));
    expect(run.stdout).toMatch(/read +\/usr: the system runtime/);
    expect(run.stdout).not.toMatch(/^ +(read|write) +\/:/m);
    const json = JSON.parse(runToolgate(['check', '--sandbox', '--json', '--work-dir', fx.work]).stdout);
    expect(json.support.landlockAbi).toBeGreaterThan(0);
    expect(json.support.launcher).toMatch(/toolgate-sandbox$/);
    expect(json.policy).toMatchObject({ mode: 'enforce', network: false, workDir: fx.work, readonly: false });
    expect(json.policy.grants).toContainEqual({ path: fx.work, access: 'write', why: 'the work directory' });
    expect(json.policy.limits).toContainEqual({ name: 'processes', value: 512 });
    expect(typeof json.support.view).toBe('boolean');
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
