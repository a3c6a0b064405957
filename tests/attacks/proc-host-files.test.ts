/**
 * Class: what is visible outside. A call's `/proc` is its own (its PID namespace), but a few of
 * its files show the host whatever the namespace: `/proc/keys` and `/proc/key-users` list the
 * keys of every user the call's user namespace maps — toolgate's own user, whose key
 * descriptions often say what they unlock (`ssh-passphrase:deploy@prod`) — and `timer_list`
 * and `sched_debug` show the host's processes. (The key system calls themselves are refused by
 * seccomp.) Each is covered with `/dev/null` in every call's view, whatever the spelling of the
 * path and whatever the entry point.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliExecuteTool, exec, shellToolset, type CommandResult } from '../../ts/src/index.js';
import { runToolgate } from '../helpers/cli.js';
import { CALL } from '../helpers/commands.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const env = { PATH: '/usr/bin:/bin' };

/** Adds a `user` key to this process's user keyring on the host; returns its id. */
function addHostKey(description: string): number {
  // add_key(2) is 248 on x86_64; KEY_SPEC_USER_KEYRING is -4.
  const out = execFileSync('python3', [
    '-c',
    'import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n' +
      "print(libc.syscall(248, b'user', sys.argv[1].encode(), b'hunter2', 7, ctypes.c_int(-4)))",
    description,
  ]).toString();
  return Number(out.trim());
}

const keys: number[] = [];
afterEach(() => {
  // KEYCTL_INVALIDATE (21, keyctl is 250): the key goes at once.
  for (const id of keys.splice(0)) execFileSync('python3', ['-c', `import ctypes\nctypes.CDLL(None).syscall(250, 21, ${id})`]);
});

/** A key of the host user, listed by the host's own /proc/keys; returns its description. */
function hostKey(): string {
  const description = `ssh-passphrase:deploy@prod-${randomBytes(4).toString('hex')}`;
  const id = addHostKey(description);
  expect(id).toBeGreaterThan(0);
  keys.push(id);
  expect(execFileSync('cat', ['/proc/keys']).toString()).toContain(description);
  return description;
}

/** Reads each of the masked files under several spellings; prints `path: <bytes read>|error`. */
const READER = `import os
for path in ('/proc/keys', '/proc//key-users', '/proc/self/../keys', '/proc/thread-self/../../proc/keys', '/proc/timer_list', '/proc/sched_debug'):
    try:
        with open(path, 'rb') as f:
            print(path + ':', repr(f.read(200000)))
    except OSError as error:
        print(path + ':', 'error', error.errno)
`;

describe.runIf(MOUNT_VIEW && process.arch === 'x64')("the host's keys and processes are not visible in a call's /proc", () => {
  it('exec with sandbox, every spelling', async () => {
    const description = hostKey();
    const result = await exec({ command: 'python3', args: ['-c', READER], cwd: tempDir('toolgate-keys-'), env, sandbox: 'enforce' });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).not.toContain(description);
    expect(result.stdout.split('\n').filter((line) => line.includes(": b''")).length, result.stdout).toBeGreaterThanOrEqual(4);
  });

  it('cli_execute and the shell toolset', async () => {
    const description = hostKey();
    const work = tempDir('toolgate-keys-');
    writeFileSync(join(work, 'reader.py'), READER);
    const cli = cliExecuteTool({ workDir: work, allowedBinaries: ['python3'], approval: { default: 'preApproved' } });
    const viaCli = (await cli.execute!({ binary: 'python3', args: ['reader.py'] }, CALL)) as CommandResult;
    expect(viaCli.stdout).toContain('/proc/keys:');
    expect(viaCli.stdout).not.toContain(description);
    const shell = shellToolset({ workDir: work, default: 'preApproved' });
    const command = `python3 -c "import os; print(open(os.sep.join(['', 'proc', 'keys'])).read() + open('/proc/key-users').read())"`;
    const viaShell = (await shell.execute!({ command }, CALL)) as CommandResult;
    expect(viaShell.exitCode, viaShell.stderr).toBe(0);
    expect(viaShell.stdout).not.toContain(description);
  });

  it('toolgate sandbox (the one-shot launcher)', () => {
    const description = hostKey();
    const work = tempDir('toolgate-keys-');
    const run = runToolgate(['sandbox', '--work-dir', work, '--', 'cat', '/proc/keys', '/proc/key-users'], { cwd: work });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).not.toContain(description);
  });
});
