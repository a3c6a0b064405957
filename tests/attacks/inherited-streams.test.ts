/**
 * Class: metadata outside the writable roots, through a descriptor the program inherits. A
 * call without input gets `/dev/null` as stdin; opened by toolgate (or its launcher) on the
 * host, that descriptor is the host's node on the host's writable `/dev` mount, which the view's
 * read-only mounts do not cover. The program runs as toolgate's user, who owns that node when
 * toolgate runs as root: `fchmod`, `fchown` and `futimens` on fd 0 would change the host's
 * `/dev/null` for every process of the machine. Each stream that is `/dev/null` is the view's
 * read-only node instead, so each such change fails with `EROFS`.
 *
 * The probes change nothing when they succeed (the same mode and owner; only the times move),
 * so a regression does not break the machine the tests run on.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliExecuteTool, exec, executableTools, shellToolset } from '../../ts/src/index.js';
import { CALL } from '../helpers/commands.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

/** Tries each change on fds 0-2 and prints `fd op result` per line. */
const PROBE = `import os, stat
null = os.stat('/dev/null').st_rdev
for fd in (0, 1, 2):
    st = os.fstat(fd)
    if not stat.S_ISCHR(st.st_mode) or st.st_rdev != null:
        print(fd, 'not-null', 'skip')
        continue
    for name, op in (
        ('fchmod', lambda: os.fchmod(fd, 0o666)),
        ('fchown', lambda: os.fchown(fd, st.st_uid, st.st_gid)),
        ('futimens', lambda: os.utime(fd)),
        ('fsetxattr', lambda: os.setxattr(fd, 'user.toolgate-probe', b'1')),
        ('chmod-proc', lambda: os.chmod('/proc/self/fd/%d' % fd, 0o666)),
    ):
        try:
            op()
            print(fd, name, 'CHANGED')
        except OSError as error:
            print(fd, name, error.errno)
    print(fd, 'read', repr(os.read(fd, 10)) if fd == 0 else 'n/a')
`;

const env = { PATH: '/usr/bin:/bin' };

function probeDir(): string {
  const work = tempDir('toolgate-streams-');
  writeFileSync(join(work, 'probe.py'), PROBE);
  return work;
}

/** The probe's lines for fd 0 (stdin, `/dev/null`): nothing may be `CHANGED`, and reading it gives end of input. */
function expectUnchangeable(stdout: string): void {
  const lines = stdout.split('\n').filter((line) => line.startsWith('0 '));
  expect(lines.length, stdout).toBeGreaterThanOrEqual(6);
  expect(stdout).not.toContain('CHANGED');
  expect(lines).toContain("0 read b''");
}

describe.runIf(MOUNT_VIEW)("a call's /dev/null streams cannot change the host's /dev/null (needs the kernel view)", () => {
  it('exec with sandbox', async () => {
    const before = statSync('/dev/null');
    const result = await exec({ command: '/usr/bin/python3', args: ['probe.py'], cwd: probeDir(), env, sandbox: 'enforce' });
    expect(result.exitCode, result.stderr).toBe(0);
    expectUnchangeable(result.stdout);
    const after = statSync('/dev/null');
    expect(after.mtimeMs).toBe(before.mtimeMs);
    expect(after.mode).toBe(before.mode);
  });

  it('cli_execute with a read-only work directory', async () => {
    const work = probeDir();
    const tool = cliExecuteTool({ workDir: work, allowedBinaries: ['python3'], readOnly: true, approval: { default: 'preApproved' } });
    const result = (await tool.execute!({ binary: 'python3', args: ['probe.py'] }, CALL)) as { stdout: string };
    expectUnchangeable(result.stdout);
  });

  it('the shell toolset', async () => {
    const work = probeDir();
    const result = (await shellToolset({ workDir: work, default: 'preApproved' }).execute!({ command: 'python3 probe.py' }, CALL)) as { stdout: string };
    expectUnchangeable(result.stdout);
  });

  it('cli_execute', async () => {
    const work = probeDir();
    const tool = cliExecuteTool({ workDir: work, allowedBinaries: ['python3'], approval: { default: 'preApproved' } });
    const result = (await tool.execute!({ binary: 'python3', args: ['probe.py'] }, CALL)) as { stdout: string };
    expectUnchangeable(result.stdout);
  });

  it("an executable tool's description at discovery, before any approval", async () => {
    const work = probeDir();
    const tools = join(work, 'toolgate-tools');
    mkdirSync(tools);
    // The description is the probe's verdict: a tool named `clean` only when nothing changed.
    writeFileSync(
      join(tools, 'probe'),
      `#!/usr/bin/python3\nimport json, subprocess\nout = subprocess.run(['python3', ${JSON.stringify(join(work, 'probe.py'))}], stdin=0, capture_output=True, text=True).stdout\n` +
        `name = 'clean' if 'CHANGED' not in out and "0 read b''" in out else 'changed'\n` +
        `print(json.dumps({'name': name, 'description': out[:900], 'input_schema': {'type': 'object', 'properties': {}}}))\n`,
      { mode: 0o755 },
    );
    const diagnostics: unknown[] = [];
    const loaded = await executableTools({ workDir: work, dirs: [tools], onDiagnostics: (found) => diagnostics.push(...found) });
    const names = loaded.map((tool) => tool.name).join(',');
    expect(names, JSON.stringify(diagnostics)).toContain('clean');
    expect(names).not.toContain('changed');
  });
});
