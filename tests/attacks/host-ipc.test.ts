/**
 * Class: host IPC and what is visible outside. With the network off a sandboxed process may make
 * unix sockets but reach nobody with them: `connect` and `sendto` with an address are refused by
 * the seccomp filter. A datagram socket sends to the address given with each message, and
 * `sendmsg`/`sendmmsg` keep that address in the message header where no filter can read it: a
 * host service's datagram socket in the work directory (or a read root) would receive it. So
 * unix datagram sockets (`SOCK_DGRAM`, and `SOCK_RAW`, which the kernel makes a datagram socket
 * for unix) cannot be made at all, by `socket` or by `socketpair`; stream and sequenced-packet
 * pairs still work.
 *
 * And the launcher's own command line (the server's, which every call's init inherits, or the
 * one-shot launcher's) names host paths, toolgate's process id and the whole policy: a call's
 * `/proc/1/cmdline` must not show it.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exec } from '../../ts/src/index.js';
import { runToolgate } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const env = { PATH: '/usr/bin:/bin' };
const listeners: { kill: () => void }[] = [];
afterEach(() => {
  for (const listener of listeners.splice(0)) listener.kill();
});

/** A host process (no sandbox) receiving on a unix datagram socket at `path`; resolves with what it got. */
async function hostListener(path: string): Promise<() => Promise<string>> {
  const child = spawn('python3', [
    '-u',
    '-c',
    `import socket, sys, threading\ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\ns.bind(${JSON.stringify(path)})\nt = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\nt.bind(${JSON.stringify(`${path}.stream`)})\nt.listen(5)\ndef accept():\n    while True:\n        c, _ = t.accept()\n        print(c.recv(200))\nthreading.Thread(target=accept, daemon=True).start()\nprint('ready')\ns.settimeout(4)\ntry:\n    while True: print(s.recv(200))\nexcept socket.timeout:\n    pass\n`,
  ]);
  listeners.push({ kill: () => child.kill('SIGKILL') });
  let out = '';
  child.stdout.on('data', (data) => (out += String(data)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve) => {
    const check = () => (out.includes('ready') ? resolve() : setTimeout(check, 20));
    check();
  });
  return async () => {
    await exited;
    return out;
  };
}

/** Ways to send a datagram to `path` from inside; each prints `name ok` or `name errno`. */
function sender(path: string): string {
  return `import socket, os
target = ${JSON.stringify(path)}
def attempt(name, fn):
    try:
        fn()
        print(name, 'ok')
    except OSError as error:
        print(name, error.errno)
def dgram_sendmsg():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendmsg([b'SENT-dgram-sendmsg'], [], 0, target)
def raw_sendmsg():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_RAW)
    s.sendmsg([b'SENT-raw-sendmsg'], [], 0, target)
def pair_sendmsg():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendmsg([b'SENT-pair-sendmsg'], [], 0, target)
def dgram_sendto():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b'SENT-dgram-sendto', target)
def dgram_connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    s.connect(target)
    s.send(b'SENT-dgram-connect')
def stream_connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(target + '.stream')
    s.sendall(b'SENT-stream-connect')
def stream_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.sendall(b'x')
    assert b.recv(1) == b'x'
def seqpacket_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.sendmsg([b'x'], [], 0)
    assert b.recv(1) == b'x'
for name, fn in [('dgram_sendmsg', dgram_sendmsg), ('raw_sendmsg', raw_sendmsg), ('pair_sendmsg', pair_sendmsg),
                 ('dgram_sendto', dgram_sendto), ('dgram_connect', dgram_connect), ('stream_connect', stream_connect),
                 ('stream_pair', stream_pair), ('seqpacket_pair', seqpacket_pair)]:
    attempt(name, fn)
`;
}

/** A work directory holding a host process's datagram socket and the sender program (`send.py`). */
async function hostSocket(): Promise<{ work: string; received: () => Promise<string> }> {
  const work = tempDir('toolgate-dgram-');
  const path = join(work, 'host.sock');
  const received = await hostListener(path);
  writeFileSync(join(work, 'send.py'), sender(path));
  return { work, received };
}

describe.runIf(MOUNT_VIEW)('with the network off no datagram reaches a host socket (needs the kernel view)', () => {
  it('exec with sandbox: socket, SOCK_RAW, socketpair, sendto and connect are all refused', async () => {
    const { work, received } = await hostSocket();
    const result = await exec({ command: '/usr/bin/python3', args: ['send.py'], cwd: work, env, sandbox: 'enforce' });
    expect(result.exitCode, result.stderr).toBe(0);
    for (const name of ['dgram_sendmsg', 'raw_sendmsg', 'pair_sendmsg', 'dgram_sendto', 'dgram_connect', 'stream_connect']) {
      expect(result.stdout).toContain(`${name} 1\n`); // EPERM
    }
    // What stays usable inside: stream and sequenced-packet pairs.
    expect(result.stdout).toContain('stream_pair ok');
    expect(result.stdout).toContain('seqpacket_pair ok');
    expect(await received()).not.toContain('SENT');
  });

  it('toolgate sandbox (the one-shot launcher)', async () => {
    const { work, received } = await hostSocket();
    const run = runToolgate(['sandbox', '--work-dir', work, '--', 'python3', join(work, 'send.py')], { cwd: work });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('pair_sendmsg 1\n');
    expect(run.stdout).toContain('dgram_sendmsg 1\n');
    expect(await received()).not.toContain('SENT');
  });

  it('the network by host (the egress proxy): no unix socket to connect or send with either', async () => {
    const { work, received } = await hostSocket();
    const result = await exec({ command: '/usr/bin/python3', args: ['send.py'], cwd: work, env, sandbox: { network: { allow: ['example.com'] } } });
    expect(result.exitCode, result.stderr).toBe(0);
    for (const name of ['dgram_sendmsg', 'raw_sendmsg', 'pair_sendmsg', 'dgram_sendto', 'dgram_connect', 'stream_connect']) {
      expect(result.stdout).toContain(`${name} 1\n`);
    }
    expect(result.stdout).toContain('stream_pair ok');
    expect(result.stdout).toContain('seqpacket_pair ok');
    const oneShot = runToolgate(['sandbox', '--allow-host', 'example.com', '--work-dir', work, '--', 'python3', join(work, 'send.py')], { cwd: work });
    expect(oneShot.stdout).toContain('stream_connect 1\n');
    expect(oneShot.stdout).toContain('dgram_sendmsg 1\n');
    expect(await received()).not.toContain('SENT');
  });

  it('without the filter (control): the same program reaches the host socket', async () => {
    const { work, received } = await hostSocket();
    const result = await exec({ command: '/usr/bin/python3', args: ['send.py'], cwd: work, env });
    expect(result.stdout).toContain('pair_sendmsg ok');
    const got = await received();
    expect(got).toContain('SENT-pair-sendmsg');
    expect(got).toContain('SENT-stream-connect');
  });
});

describe.runIf(MOUNT_VIEW)("a call does not see its launcher's command line (needs the kernel view)", () => {
  const hostNames = (text: string) => ['--parent', '--clean', '--read', '--write', '--call-dir', String(process.pid), '/dev/shm/toolgate'].filter((name) => text.includes(name));

  it('exec with sandbox (the launcher server)', async () => {
    const work = tempDir('toolgate-cmdline-');
    // PID 1 (the call's init) and the parent of every process of the call.
    const result = await exec({ command: '/usr/bin/sh', args: ['-c', 'cat /proc/1/cmdline; echo; cat /proc/$PPID/cmdline'], cwd: work, env, sandbox: 'enforce' });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(hostNames(result.stdout), result.stdout).toEqual([]);
    expect(result.stdout).not.toContain(work);
  });

  it("the call's cgroups are named from its own root, not the host's (a cgroup namespace)", async () => {
    const work = tempDir('toolgate-cgroup-');
    const own = readFileSync('/proc/self/cgroup', 'utf8');
    const result = await exec({ command: '/usr/bin/cat', args: ['/proc/self/cgroup'], cwd: work, env, sandbox: 'enforce' });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('toolgate-sandbox-');
    // Every line's path is the namespace's root (or below it), never the host's own cgroup.
    for (const line of own.trim().split('\n')) {
      const path = line.split(':').slice(2).join(':');
      if (path !== '/') expect(result.stdout).not.toContain(path);
    }
    const oneShot = runToolgate(['sandbox', '--work-dir', work, '--', 'cat', '/proc/self/cgroup'], { cwd: work });
    expect(oneShot.status, oneShot.stderr).toBe(0);
    expect(oneShot.stdout).not.toContain('toolgate-sandbox-');
  });

  it('toolgate sandbox (the one-shot launcher, whose arguments are the policy)', () => {
    const work = tempDir('toolgate-cmdline-');
    const run = runToolgate(['sandbox', '--work-dir', work, '--', 'sh', '-c', 'cat /proc/1/cmdline; echo; cat /proc/$PPID/cmdline'], { cwd: work });
    expect(run.status, run.stderr).toBe(0);
    expect(hostNames(run.stdout), run.stdout).toEqual([]);
  });
});
