/**
 * Class 1/2, variants of this round's set-ID fix: raw syscall numbers (fchmodat2 with and
 * without AT_SYMLINK_NOFOLLOW, fchmodat, chmod with high bits in the mode word, open with high
 * flag bits, O_TMPFILE), mkdirat with S_ISGID, a security.capability xattr (v2 and v3), a POSIX
 * ACL. None may leave a set-ID file or a file capability in the work directory.
 */
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exec } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';

const PROBE = `import os, ctypes, struct
libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
open('f', 'w').write('#!/bin/sh\\nid\\n'); os.chmod('f', 0o755)
libc.syscall(452, -100, b'f', 0o4755, 0)
libc.syscall(452, -100, b'f', 0o4755, 0x100)
libc.syscall(268, -100, b'f', 0o2755)
libc.syscall(90, b'f', (1 << 32) | 0o4755)
libc.syscall(257, -100, b'.', os.O_TMPFILE | os.O_RDWR, 0o4755)
libc.syscall(2, b'g', os.O_CREAT | os.O_WRONLY | (1 << 32), 0o4755)
libc.syscall(258, -100, b'd', 0o2755)
for blob in (struct.pack('<IIIII', 0x02000001, 1 << 7, 0, 0, 0), struct.pack('<IIIIII', 0x03000001, 1 << 7, 0, 0, 0, 0)):
    try: os.setxattr('f', 'security.capability', blob)
    except OSError: pass
try:
    print('cap', os.getxattr('f', 'security.capability'))
except OSError:
    print('no cap')
`;

describe('set-ID variants', () => {
  it('raw syscalls, mkdirat S_ISGID and security.capability leave nothing set-ID', async () => {
    const work = tempDir('toolgate-setid5-');
    writeFileSync(join(work, 'p.py'), PROBE);
    const result = await exec({ command: 'python3', args: ['p.py'], cwd: work, env: { PATH: '/usr/bin:/bin' }, sandbox: 'enforce' });
    expect(result.stdout, result.stderr).toContain('no cap');
    for (const entry of readdirSync(work)) expect(statSync(join(work, entry)).mode & 0o6000, entry).toBe(0);
  });
});
