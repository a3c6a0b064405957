/**
 * Class 6 (limits): ways around a limit, and a limit hit the result does not name.
 *
 * - `fileSizeMb` is `RLIMIT_FSIZE`, which the kernel checks against a file's *size*.
 *   `fallocate(FALLOC_FL_KEEP_SIZE)` reserves disk blocks past the end of a file without
 *   changing its size, so a 0-byte file holds any amount of the work directory's disk,
 *   `fileSizeMb: 1` or not, and no limit is named.
 * - `cpuSeconds`: a child killed by `SIGXCPU` (its own `RLIMIT_CPU`) whose parent waits for it
 *   and goes on: the docs say "that process can end by SIGXCPU a little before the cgroup's
 *   count of the whole call reaches the limit (the call then goes on, the limit named)"; the
 *   result names nothing.
 * - per-user kernel quotas are shared with the host: the call's user namespace maps its uid to
 *   toolgate's, and inotify instances are charged to that uid in every ancestor namespace. One
 *   sandboxed process takes all of `fs.inotify.max_user_instances` (128 by default) and every
 *   other process of toolgate's user on the host (an editor's file watcher, systemd --user,
 *   toolgate's own launcher server started meanwhile) gets EMFILE from `inotify_init` while
 *   the call runs. (The same holds for `max_user_watches`, and for epoll's
 *   `fs.epoll.max_user_watches`, whose exhaustion makes every `epoll_ctl(ADD)` of the user
 *   fail — not run here, it would break every root process on this machine.)
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exec } from '../../ts/src/index.js';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

describe.runIf(MOUNT_VIEW)('limits cannot be stepped around', () => {
  it('fileSizeMb: fallocate(KEEP_SIZE) cannot make one file hold more disk than the limit', async () => {
    const work = tempDir('toolgate-falloc-');
    writeFileSync(join(work, 'prog.py'), `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('hog', os.O_CREAT | os.O_WRONLY, 0o644)
# FALLOC_FL_KEEP_SIZE = 1: 64 MiB of blocks past the end, the size stays 0
r = libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(64 << 20))
print('fallocate', r, ctypes.get_errno())
`);
    const result = await exec({ command: 'python3', args: ['prog.py'], cwd: work, env, sandbox: { limits: { fileSizeMb: 1 } } });
    const hog = statSync(join(work, 'hog'));
    // The disk the file holds (512-byte blocks) stays within fileSizeMb, or the call names the limit.
    const heldMb = (hog.blocks * 512) / (1 << 20);
    expect(heldMb <= 1 || result.limit === 'fileSizeMb', `${result.stdout} size ${hog.size}, ${heldMb} MiB held, limit ${result.limit}`).toBe(true);
  });

  it('cpuSeconds: a busy child whose parent would go on is named, for each way of waiting for it', async () => {
    // Where a cgroup counts the call's CPU time the whole call ends at the limit; where only
    // RLIMIT_CPU does, the child ends by SIGXCPU and its parent goes on. The limit is named
    // either way.
    for (const script of [
      '/usr/bin/python3 -c "while True: pass"; echo "child ended with $?"',
      '(while :; do :; done); echo after',
      'sh -c "while :; do :; done" & wait; echo after',
    ]) {
      const result = await exec({
        command: 'sh',
        args: ['-c', script],
        cwd: tempDir('toolgate-cpu-'),
        env: { PATH: '/usr/bin:/bin' },
        sandbox: { limits: { cpuSeconds: 1 } },
        timeoutMs: 20_000,
      });
      expect(result.timedOut, script).toBe(false);
      expect(result.limit, `${script}: ${JSON.stringify(result)}`).toBe('cpuSeconds');
    }
  });
});

/** Whether the host user can make an inotify instance right now (no sandbox). */
function hostInotify(): string {
  const run = spawnSync('python3', ['-c', 'import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nfd = libc.inotify_init()\nprint("ok" if fd >= 0 else "errno %d" % ctypes.get_errno())'], { encoding: 'utf8' });
  return run.stdout.trim();
}

const HOLD = `import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 100000:
    if libc.inotify_init() < 0:
        break
    n += 1
print('held', n, flush=True)
sys.stdin.readline()
`;

describe.runIf(MOUNT_VIEW)("a call cannot use up the host user's kernel quotas", () => {
  it('inotify instances: the host user can still make one while a sandboxed call holds its own', { timeout: 20_000 }, async () => {
    expect(hostInotify()).toBe('ok'); // control
    const work = tempDir('toolgate-inotify-');
    writeFileSync(join(work, 'hold.py'), HOLD);
    // toolgate sandbox runs the holder; it waits on its stdin, which we close after looking.
    const child = spawn(process.execPath, [CLI, 'sandbox', '--work-dir', work, '--', 'python3', 'hold.py'], { cwd: work, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const closed = new Promise((resolve) => child.on('close', resolve));
    try {
      for (let i = 0; i < 200 && !out.includes('held'); i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(out).toContain('held');
      const during = hostInotify();
      expect(during, `sandboxed process ${out.trim()}; host inotify_init: ${during}`).toBe('ok');
    } finally {
      child.stdin.end();
      await closed;
    }
    expect(hostInotify()).toBe('ok');
  });

  it('the same through exec with sandbox (the launcher server)', { timeout: 20_000 }, async () => {
    const work = tempDir('toolgate-inotify-');
    writeFileSync(join(work, 'hold2.py'), `import ctypes, subprocess
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 100000 and libc.inotify_init() >= 0:
    n += 1
# Ask a program outside (the test, through the work directory) to try while this holds them.
open('held', 'w').write(str(n))
import time
for _ in range(100):
    try:
        print(open('answer').read()); break
    except FileNotFoundError:
        time.sleep(0.05)
`);
    const running = exec({ command: 'python3', args: ['hold2.py'], cwd: work, env, sandbox: 'enforce', timeoutMs: 15_000 });
    for (let i = 0; i < 200 && !existsSync(join(work, 'held')); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    const during = hostInotify();
    writeFileSync(join(work, 'answer'), during);
    const result = await running;
    expect(result.stdout.trim(), result.stderr).toBe('ok');
  });
});

