/**
 * `toolgate sandbox --allow-host/--deny-host` under the default sandbox (`enforce`), end to end
 * through the built CLI (issue 24): the one-shot launcher's init makes the program's network
 * namespace and the egress proxy's listener in it, and hands the listener to toolgate over the
 * socket pair it inherited as descriptor 3. The program reaches allowed hosts through the proxy
 * (curl, Python, Node's fetch), a refusal is named on stderr, and every other way out fails:
 * a direct connection (to the allowed address too), UDP, name resolution, a listener of its own,
 * and the handoff socket, which the program never holds.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { HAS_SCRIPT, inPty } from './helpers/pty.js';
import { expectNoWayOut, probeProgram } from './helpers/network-probe.js';

let server: Server;
let port: number;
/** Requests the host's server answered, by path. */
const served: string[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    served.push(request.url ?? '');
    response.end(`hello from ${request.url ?? ''}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface Ran {
  status: number;
  stdout: string;
  stderr: string;
}

/** `toolgate sandbox <args>` in `dir`, asynchronously (the host's server runs in this process). */
function sandbox(dir: string, args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'sandbox', '--work-dir', dir, ...args], { cwd: dir, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const PYTHON = ['/usr/bin/python3', '/usr/local/bin/python3'].find((path) => existsSync(path));

describe('toolgate sandbox --allow-host under enforce', () => {
  it('reaches the allowed host through the proxy that the variables name, with curl, Node and Python; nothing is said about best-effort', async () => {
    const dir = tempDir();
    const allow = ['--allow-host', `127.0.0.1:${port}`];
    const curl = await sandbox(dir, [...allow, '--', 'curl', '-sS', '--max-time', '10', `http://127.0.0.1:${port}/curl`]);
    expect(curl.stdout, curl.stderr).toBe('hello from /curl');
    expect(curl.status).toBe(0);
    expect(curl.stderr).not.toContain('best-effort');
    const node = await sandbox(dir, [
      ...allow,
      '--read',
      process.execPath,
      '--',
      process.execPath,
      '-e',
      // Node 20's fetch ignores the proxy variables (NODE_USE_ENV_PROXY is Node 24's): a request
      // in absolute form to the proxy that HTTP_PROXY names.
      `const proxy = new URL(process.env.HTTP_PROXY); require('node:http').get({ host: proxy.hostname, port: proxy.port, path: 'http://127.0.0.1:${port}/node', headers: { host: '127.0.0.1:${port}' } }, (r) => { let body = ''; r.on('data', (c) => (body += c)); r.on('end', () => console.log(body)); })`,
    ]);
    expect(node.stdout.trim(), node.stderr).toBe('hello from /node');
    if (PYTHON) {
      const python = await sandbox(dir, [...allow, '--', PYTHON, '-c', `import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/python', timeout=10).read().decode())`]);
      expect(python.stdout.trim(), python.stderr).toBe('hello from /python');
    }
    expect(served).toEqual(expect.arrayContaining(['/curl', '/node']));
  });

  it('refuses a denied host, another port and a loopback name, naming each on stderr', async () => {
    const dir = tempDir();
    const denied = await sandbox(dir, ['--allow-host', '127.0.0.1', '--deny-host', `127.0.0.1:${port}`, '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${port}/denied`]);
    expect(denied.stdout).toBe('403');
    expect(denied.stderr).toContain(`connection to 127.0.0.1:${port} refused`);
    expect(denied.stderr).toContain('network.deny');
    const otherPort = await sandbox(dir, ['--allow-host', `127.0.0.1:${port + 1 > 65535 ? port - 1 : port + 1}`, '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${port}/port`]);
    expect(otherPort.stdout).toBe('403');
    expect(otherPort.stderr).toContain(`127.0.0.1:${port}`);
    // `localhost` resolves to loopback: allowing the name is not enough.
    const name = await sandbox(dir, ['--allow-host', 'localhost', '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', `http://localhost:${port}/name`]);
    expect(name.stdout).toBe('403');
    expect(name.stderr).toContain('loopback');
    expect(served).not.toContain('/denied');
    expect(served).not.toContain('/port');
    expect(served).not.toContain('/name');
  });

  it('leaves no other way out: direct connections, UDP, DNS, a listener of its own, the handoff socket', async () => {
    const dir = tempDir();
    const ran = await sandbox(dir, ['--allow-host', `127.0.0.1:${port}`, '--read', process.execPath, '--', process.execPath, '-e', probeProgram(port)]);
    expectNoWayOut(ran.stdout, ran.stderr);
    expect(ran.status).toBe(0);
  });

  it.runIf(PYTHON !== undefined)("cannot take the init's listener (or any descriptor of it): /proc/1/fd, pidfd_getfd", async () => {
    // The init (PID 1 of the program's namespace) keeps its copy of the proxy's listener.
    const steal = [
      'import ctypes, os',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'opened = 0',
      'for name in (os.listdir("/proc/1/fd") if os.access("/proc/1/fd", os.R_OK) else []):',
      '    try:',
      '        os.open("/proc/1/fd/" + name, os.O_RDONLY); opened += 1',
      '    except OSError:',
      '        pass',
      'print("opened=%d" % opened)',
      'pidfd = libc.syscall(434, 1, 0)  # pidfd_open(1)',
      'stolen = [fd for fd in range(0, 300) if pidfd >= 0 and libc.syscall(438, pidfd, fd, 0) >= 0]  # pidfd_getfd',
      'print("stolen=%d" % len(stolen))',
    ].join('\n');
    const ran = await sandbox(tempDir(), ['--allow-host', `127.0.0.1:${port}`, '--', PYTHON!, '-c', steal]);
    expect(ran.stdout, ran.stderr).toBe('opened=0\nstolen=0\n');
  });

  it.runIf(HAS_SCRIPT)('works with --tty too: the program keeps the terminal and still has only the proxy', async () => {
    const dir = tempDir();
    const session = inPty(
      [process.execPath, CLI, 'sandbox', '--tty', '--work-dir', dir, '--allow-host', `127.0.0.1:${port}`, '--', 'sh', '-c', `curl -sS --max-time 10 http://127.0.0.1:${port}/tty; echo; [ -t 0 ] && echo on-a-terminal; echo sockets=$(ls -l /proc/$$/fd | grep -c socket)`],
      { cwd: dir, env: { PATH: process.env.PATH } },
    );
    expect(await session.exit).toBe(0);
    const shown = session.output().replace(/\r/g, '');
    expect(shown).toContain('hello from /tty\non-a-terminal\nsockets=0\n');
  });

  it('runs nothing when the proxy cannot be handed its listener: a launcher given no handoff socket', async () => {
    // The launcher's command line as toolgate makes it, spawned without descriptor 3.
    const dir = tempDir();
    const { native } = await import('../ts/src/native/binding.js');
    const launch = new native.SandboxLaunch({ workDir: dir, sandbox: { network: { allow: [`127.0.0.1:${port}`] } } }, 'touch', ['ran']);
    expect(launch.handoffFd).not.toBeNull();
    expect(launch.args).toEqual(expect.arrayContaining(['--proxy-handoff', '3']));
    const ran = await new Promise<Ran>((resolve) =>
      execFile(launch.file, launch.args, { cwd: launch.cwd, env: launch.env }, (error, stdout, stderr) => resolve({ status: error ? Number(error.code ?? 1) : 0, stdout, stderr })),
    );
    launch.closeHandoff();
    expect(ran.status).toBe(125);
    expect(ran.stderr).toContain('not the handoff socket');
    expect(existsSync(`${dir}/ran`)).toBe(false);
    expect(launch.finish()).toEqual([]);
  });
});
