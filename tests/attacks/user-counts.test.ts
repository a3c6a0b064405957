/**
 * Class 6 (limits), neighbours of the inotify cap: per-user kernel counts that a call shares
 * with toolgate's host user. The pending-signal quota (RLIMIT_SIGPENDING) is charged up the user
 * namespace chain to the host user: a call that took it all would leave every process of the
 * host user without (an MCP server: for the whole run). Each user namespace toolgate makes gets
 * half of it as its ceiling. (epoll's watches are counted per host user with no namespace limit:
 * documented in docs/sandbox.md, not bounded.)
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exec } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';

const env = { PATH: '/usr/bin:/bin' };

const QUEUE_ALL = `import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
class sigval(ctypes.Union): _fields_ = [('i', ctypes.c_int), ('p', ctypes.c_void_p)]
n = 0
while n < 1000000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(0)) == 0:
    n += 1
print('queued', n, flush=True)
time.sleep(3)
`;

/** On the host: tries to queue one real-time signal to itself every 50 ms for `seconds`. */
const HOST_PROBE = `import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
class sigval(ctypes.Union): _fields_ = [('i', ctypes.c_int), ('p', ctypes.c_void_p)]
failed = 0
end = time.time() + float(sys.argv[1])
while time.time() < end:
    if libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(0)) != 0:
        failed += 1
    else:
        signal.sigtimedwait([signal.SIGRTMIN], 0)
    time.sleep(0.05)
print('failed', failed, flush=True)
`;

describe('a call cannot take the host user\'s per-user kernel counts', () => {
  it('pending signals: a host process of the same user can still queue one while a call holds its quota', async () => {
    const work = tempDir('toolgate-sigq-');
    writeFileSync(join(work, 'queue.py'), QUEUE_ALL);
    const probe = spawn('python3', ['-c', HOST_PROBE, '5'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let probeOut = '';
    probe.stdout.on('data', (chunk: Buffer) => (probeOut += chunk.toString()));
    const probeDone = new Promise((resolve) => probe.on('close', resolve));
    const result = await exec({ command: 'python3', args: ['queue.py'], cwd: work, env, sandbox: 'enforce' });
    await probeDone;
    expect(result.stdout).toMatch(/queued \d+/);
    // Safe: the host user's own processes were never refused a signal while the call ran.
    expect(probeOut.trim(), `call: ${result.stdout}`).toBe('failed 0');
  }, 20_000);
});
