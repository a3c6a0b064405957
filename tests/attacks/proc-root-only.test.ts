/**
 * Class 5 (what is visible outside), neighbours of the /proc/keys, timer_list and sched_debug
 * masks. The call's user namespace maps its uid 0 to toolgate's user; when that is root, the
 * owner bits of root-only (0400) kernel files in the call's own /proc apply to it, with no
 * capability needed: the host kernel's slab caches (slabinfo, made root-only because heap
 * exploits use it), vmalloc areas with their callers (vmallocinfo), and the state of every
 * physical page of the host (kpageflags, kpagecount, kpagecgroup, pagetypeinfo). Docker/runc
 * mask or refuse these; the host gives them to root alone.
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exec, shellToolset } from '../../ts/src/index.js';
import { CALL } from '../helpers/commands.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const env = { PATH: '/usr/bin:/bin' };
const ROOT_ONLY = ['/proc/slabinfo', '/proc/vmallocinfo', '/proc/kpageflags', '/proc/kpagecount', '/proc/kpagecgroup', '/proc/pagetypeinfo'].filter(
  (path) => {
    try {
      const st = statSync(path);
      return st.uid === 0 && (st.mode & 0o077) === 0;
    } catch {
      return false;
    }
  },
);

const READER = `import sys
for path in sys.argv[1:]:
    try:
        with open(path, 'rb') as f:
            print(path, len(f.read(4096)))
    except OSError as error:
        print(path, 'error', error.errno)
`;

describe.runIf(MOUNT_VIEW && process.getuid?.() === 0 && ROOT_ONLY.length > 0)("root-only /proc files of the host kernel stay unreadable in a call", () => {
  it('exec with sandbox', async () => {
    const work = tempDir('toolgate-proc-root-');
    writeFileSync(join(work, 'read.py'), READER);
    const result = await exec({ command: 'python3', args: ['read.py', ...ROOT_ONLY], cwd: work, env, sandbox: 'enforce' });
    // Safe: each is refused or reads nothing (a /dev/null mask).
    for (const path of ROOT_ONLY) expect(result.stdout, result.stdout).toMatch(new RegExp(`^${path} (error \\d+|0)$`, 'm'));
  });

  it('the shell toolset', async () => {
    const work = tempDir('toolgate-proc-root-');
    const shell = shellToolset({ workDir: work, default: 'preApproved' });
    writeFileSync(join(work, 'read.py'), `import sys\nsys.argv += ${JSON.stringify(ROOT_ONLY)}\n${READER}`);
    const result = (await shell.execute!({ command: 'python3 read.py' }, CALL)) as { stdout: string };
    for (const path of ROOT_ONLY) expect(result.stdout, result.stdout).toMatch(new RegExp(`^${path} (error \\d+|0)$`, 'm'));
  });
});
