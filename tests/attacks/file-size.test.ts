/**
 * Class 6 (limits), a variant of this round's FALLOC_FL_KEEP_SIZE fix: fileSizeMb is
 * RLIMIT_FSIZE, which `fallocate(FALLOC_FL_INSERT_RANGE)` does not consult (ext4/xfs check only
 * s_maxbytes). Inserting a range grows the file past the limit as a hole; a plain `fallocate`
 * (mode 0, allowed) inside the new size then allocates every block of it on disk — no SIGXFSZ,
 * no EFBIG, nothing named.
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exec, shellToolset } from '../../ts/src/index.js';
import { CALL } from '../helpers/commands.js';
import { tempDir } from '../helpers/fs.js';

const env = { PATH: '/usr/bin:/bin' };
const MB = 1 << 20;

const GROW = `import os, ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
MB = 1 << 20
fd = os.open('big', os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
os.write(fd, b'x' * (MB // 2))
os.fsync(fd)
r = libc.fallocate(fd, 0x20, 0, 32 * MB)   # FALLOC_FL_INSERT_RANGE
print('insert', r, ctypes.get_errno())
r = libc.fallocate(fd, 0, 0, os.fstat(fd).st_size)   # allocate inside the (new) size
print('alloc', r, ctypes.get_errno())
`;

describe('fileSizeMb bounds every way a file grows', () => {
  it('exec: fallocate INSERT_RANGE then fallocate inside the size does not make a file past fileSizeMb', async () => {
    const work = tempDir('toolgate-fsize-');
    writeFileSync(join(work, 'grow.py'), GROW);
    const result = await exec({ command: 'python3', args: ['grow.py'], cwd: work, env, sandbox: { mode: 'enforce', limits: { fileSizeMb: 1 } } });
    const st = statSync(join(work, 'big'));
    // Safe: neither the size nor the disk blocks of the file pass the 1 MiB limit.
    expect(st.size, result.stdout).toBeLessThanOrEqual(MB);
    expect(st.blocks * 512, result.stdout).toBeLessThanOrEqual(MB + 64 * 1024);
  });

  it('shell: the same through the shell toolset', async () => {
    const work = tempDir('toolgate-fsize-');
    writeFileSync(join(work, 'grow.py'), GROW);
    const shell = shellToolset({ workDir: work, default: 'preApproved', sandbox: { mode: 'enforce', limits: { fileSizeMb: 1 } } });
    await shell.execute!({ command: 'python3 grow.py' }, CALL);
    const st = statSync(join(work, 'big'));
    expect(st.blocks * 512).toBeLessThanOrEqual(MB + 64 * 1024);
  });
});
