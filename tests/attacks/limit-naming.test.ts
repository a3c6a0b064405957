/**
 * Class: limits, and a result that says which one a call ran into. `tmpMb` is the size of the
 * call's private tmpfs; a full tmpfs at the call's end names it. A call can run into it and not
 * leave it full: its last write did not fit (`fallocate` of more than is left), or it removed
 * what it wrote before failing. The kernel keeps no count of a tmpfs's `ENOSPC`, so a failed
 * call whose output reports "No space left on device" names `tmpMb` while every other place it
 * may write (the work directory, the `write` roots) has room.
 */
import { describe, expect, it } from 'vitest';
import { cliExecuteTool, exec, shellToolset, type CommandResult } from '../../ts/src/index.js';
import { CALL } from '../helpers/commands.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const env = { PATH: '/usr/bin:/bin' };
const sandbox = { limits: { tmpMb: 4 } };

describe.runIf(MOUNT_VIEW)('a call that ran into tmpMb says so (needs the kernel view: a private tmpfs)', () => {
  it('a write that leaves the tmpfs full', async () => {
    const result = await exec({ command: 'sh', args: ['-c', 'head -c 8000000 /dev/zero > $TMPDIR/big'], cwd: tempDir('toolgate-tmp-'), env, sandbox });
    expect(result.limit).toBe('tmpMb');
  });

  it('a last write that did not fit (fallocate), the tmpfs not full at the end', async () => {
    const result = await exec({
      command: 'sh',
      args: ['-c', 'cd $TMPDIR && fallocate -l 3M a && fallocate -l 2M b'],
      cwd: tempDir('toolgate-tmp-'),
      env,
      sandbox,
    });
    expect(result.stderr).toContain('No space left on device');
    expect(result.exitCode).not.toBe(0);
    expect(result.limit).toBe('tmpMb');
    expect(result.stderr).toContain('sandbox limit: tmpMb (4)');
  });

  it('what was written removed before the program failed (shell: the model reads the limit line)', async () => {
    const shell = shellToolset({ workDir: tempDir('toolgate-tmp-'), default: 'preApproved', sandbox });
    const result = (await shell.execute!(
      { command: `python3 -c 'import os, sys; p = os.environ["TMPDIR"] + "/x"; r = os.system("head -c 8000000 /dev/zero > " + p); os.unlink(p); sys.exit(1)'` },
      CALL,
    )) as CommandResult;
    expect(result.stderr).toContain('No space left on device');
    expect(result.stderr).toContain('sandbox limit: tmpMb');
  });

  it('cli_execute: a Python program that reports ENOSPC itself (a traceback)', async () => {
    const work = tempDir('toolgate-tmp-');
    const tool = cliExecuteTool({ workDir: work, allowedBinaries: ['python3'], approval: { default: 'preApproved' }, sandbox });
    const result = (await tool.execute!(
      { binary: 'python3', args: ['-'], stdin: 'import os\nwith open(os.environ["HOME"] + "/f", "wb") as f:\n    f.write(bytes(6 << 20))\n' },
      CALL,
    )) as CommandResult;
    expect(result.stderr).toContain('No space left on device');
    expect(result.stderr).toContain('sandbox limit: tmpMb');
  });

  it('a call that succeeds, or fails otherwise, names no limit', async () => {
    const work = tempDir('toolgate-tmp-');
    const fine = await exec({ command: 'sh', args: ['-c', 'head -c 1000000 /dev/zero > $TMPDIR/a'], cwd: work, env, sandbox });
    expect(fine.limit).toBeNull();
    const other = await exec({ command: 'sh', args: ['-c', 'echo "no such thing" >&2; exit 3'], cwd: work, env, sandbox });
    expect(other.limit).toBeNull();
    // Success with the words in its output (a log being printed) is no limit either.
    const quoted = await exec({ command: 'sh', args: ['-c', 'echo "earlier: No space left on device"'], cwd: work, env, sandbox });
    expect(quoted.limit).toBeNull();
  });
});
