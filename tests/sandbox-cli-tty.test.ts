/**
 * `toolgate sandbox --tty` passes through only the standard streams that are terminals, and
 * puts back what the program could change on those terminals' device nodes through its
 * descriptors (owner, group, mode, times). Each test runs toolgate on a pseudo-terminal of its
 * own made by util-linux `script`; redirections are the shell's, outside the sandbox.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { CLI } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;

/** A shell word. */
const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

let work: string;
let host: string;
beforeEach(() => {
  work = tempDir('toolgate-tty-work-');
  host = tempDir('toolgate-tty-host-'); // outside every root of the sandbox
});

/** Runs a shell command line on a fresh pseudo-terminal; its output, without carriage returns. */
function onTerminal(commandLine: string): { status: number | null; stdout: string } {
  const run = spawnSync('script', ['-qec', commandLine, '/dev/null'], { encoding: 'utf8', input: '', timeout: 15_000 });
  return { status: run.status, stdout: String(run.stdout).replaceAll('\r', '') };
}

/** `toolgate sandbox --tty -- python3 -c <code>` as a shell command line. */
const sandboxPython = (code: string) => [process.execPath, CLI, 'sandbox', '--tty', '--work-dir', work, '--', 'python3', '-c', code].map(quote).join(' ');

/** A private host file, mode 0600. */
function privateFile(name: string, text: string): string {
  const path = join(host, name);
  writeFileSync(path, text);
  chmodSync(path, 0o600);
  return path;
}

const octal = (mode: number) => (mode & 0o7777).toString(8);

/**
 * Python: what each standard stream is, written to `kinds` in the work directory (not to a
 * stream), and their inode numbers to `inodes`. A relayed stream is one end of the socket pair
 * Node makes for a child's stdio pipe: `sock`.
 */
const KINDS = `
import os, stat
def kind(fd):
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return 'closed'
    if os.isatty(fd): return 'tty'
    for name in ('FIFO', 'SOCK', 'REG', 'DIR', 'CHR'):
        if getattr(stat, 'S_IS' + name)(mode): return name.lower()
    return 'other'
open('kinds', 'w').write(' '.join(kind(fd) for fd in (0, 1, 2)))
open('inodes', 'w').write(' '.join(str(os.fstat(fd).st_ino) for fd in (0, 1, 2)))
`;

/** Python: every change a descriptor's holder can make to the file behind `fd`. */
const tamper = (fd: number) =>
  `import os\nfor change in (lambda: os.fchmod(${fd}, 0o666), lambda: os.utime(${fd}, (86400, 86400)), lambda: os.fchown(${fd}, -1, os.getgid())):\n    try:\n        change()\n    except OSError:\n        pass\n`;

describe.runIf(hasScript)('toolgate sandbox --tty passes only terminals', () => {
  it('relays stdout redirected to a host file through a pipe: its mode, times and content stay the host\'s', () => {
    const log = privateFile('out.log', '');
    const before = statSync(log);
    const run = onTerminal(`${sandboxPython(`${tamper(1)}print('written')`)} > ${quote(log)}`);
    expect(run.status, run.stdout).toBe(0);
    const after = statSync(log);
    expect(octal(after.mode)).toBe('600');
    expect(after.atimeMs).not.toBe(86_400_000);
    expect(after.mtimeMs).not.toBe(86_400_000);
    expect(after.gid).toBe(before.gid);
    expect(readFileSync(log, 'utf8')).toBe('written\n');
  });

  it('relays a private key given as stdin through a pipe: it cannot be made readable, and is still read', () => {
    const key = privateFile('id_rsa', 'PRIVATE KEY\n');
    const atime = statSync(key).atimeMs;
    const run = onTerminal(`${sandboxPython(`${tamper(0)}import sys\nprint('read', sys.stdin.read().strip())`)} < ${quote(key)}`);
    expect(run.stdout).toContain('read PRIVATE KEY');
    expect(octal(statSync(key).mode)).toBe('600');
    expect(statSync(key).atimeMs).not.toBe(86_400_000);
    expect(statSync(key).atimeMs).toBeGreaterThanOrEqual(atime);
  });

  it('relays stderr redirected to a host file through a pipe', () => {
    const log = privateFile('err.log', '');
    onTerminal(`${sandboxPython(`${tamper(2)}import sys\nsys.stderr.write('oops\\n')`)} 2> ${quote(log)}`);
    expect(octal(statSync(log).mode)).toBe('600');
    expect(statSync(log).mtimeMs).not.toBe(86_400_000);
    expect(readFileSync(log, 'utf8')).toBe('oops\n');
  });

  it('relays a named FIFO and a directory opened as stdin through a pipe: their modes stay', () => {
    const fifo = join(host, 'fifo');
    expect(spawnSync('mkfifo', ['-m', '600', fifo]).status).toBe(0);
    const run = onTerminal(`(printf 'through the fifo' > ${quote(fifo)} &); ${sandboxPython(`${tamper(0)}import sys\nprint('got', sys.stdin.read())`)} < ${quote(fifo)}`);
    expect(run.stdout).toContain('got through the fifo');
    expect(octal(statSync(fifo).mode)).toBe('600');
    const dir = join(host, 'private');
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o700);
    onTerminal(`${sandboxPython(tamper(0))} < ${quote(dir)}`);
    expect(octal(statSync(dir).mode)).toBe('700');
    expect(statSync(dir).mtimeMs).not.toBe(86_400_000);
  });

  it('passes a stream only when it is a terminal: a file, /dev/null, a directory, a FIFO or a socket is relayed', () => {
    const kinds = (redirections: string) => {
      onTerminal(`${sandboxPython(KINDS)} ${redirections}`);
      return readFileSync(join(work, 'kinds'), 'utf8');
    };
    const file = privateFile('in.txt', 'x');
    expect(kinds('')).toBe('tty tty tty');
    expect(kinds(`< ${quote(file)}`)).toBe('sock tty tty');
    expect(kinds('< /dev/null')).toBe('sock tty tty');
    expect(kinds(`< ${quote(host)}`)).toBe('sock tty tty');
    expect(kinds(`> ${quote(join(host, 'out'))} 2>&1`)).toBe('tty sock sock');
    expect(kinds('| cat')).toBe('tty sock tty');
    // Standard output a socket (a socket pair made by python around toolgate): not that socket.
    const around = join(host, 'socket-inode');
    const socketOut = `import os, socket, subprocess, sys\na, b = socket.socketpair()\nopen(sys.argv[1], 'w').write(str(os.fstat(a.fileno()).st_ino))\nsubprocess.run(sys.argv[2:], stdout=a)\n`;
    onTerminal(['python3', '-c', socketOut, around, process.execPath, CLI, 'sandbox', '--tty', '--work-dir', work, '--', 'python3', '-c', KINDS].map(quote).join(' '));
    expect(readFileSync(join(work, 'kinds'), 'utf8')).toBe('tty sock tty');
    expect(readFileSync(join(work, 'inodes'), 'utf8').split(' ')[1]).not.toBe(readFileSync(around, 'utf8'));
  });

  it('with no terminal among the streams, gives no terminal at all (no controlling terminal, no /dev/tty)', () => {
    const probe = `import os\ntry:\n    os.close(os.open('/dev/tty', os.O_RDWR)); r = 'dev-tty'\nexcept OSError:\n    r = 'no-dev-tty'\nopen('tty', 'w').write(r)\n`;
    const input = privateFile('in.txt', '');
    onTerminal(`${sandboxPython(probe)} < ${quote(input)} > ${quote(join(host, 'out'))} 2>&1`);
    expect(readFileSync(join(work, 'tty'), 'utf8')).toBe('no-dev-tty');
    // The control: with a terminal among them, the program keeps it.
    onTerminal(`${sandboxPython(probe)} < ${quote(input)}`);
    expect(readFileSync(join(work, 'tty'), 'utf8')).toBe('dev-tty');
  });
});

/**
 * Python for the shell around toolgate: appends `<label> uid gid mode atime_ns mtime_ns` of the
 * terminal on `fd` to `file` (nothing is written to the terminal, whose times that would change).
 */
const record = (file: string, label: string, fd = 0) =>
  ['python3', '-c', `import os, sys\ns = os.fstat(${fd})\nopen(sys.argv[1], 'a').write('${label} %d %d %o %d %d\\n' % (s.st_uid, s.st_gid, s.st_mode & 0o7777, s.st_atime_ns, s.st_mtime_ns))`, file].map(quote).join(' ');

/** The records of `record`, by label. */
function records(file: string): Record<string, { uid: number; gid: number; mode: string; atimeNs: bigint; mtimeNs: bigint }> {
  const out: ReturnType<typeof records> = {};
  for (const line of readFileSync(file, 'utf8').trim().split('\n')) {
    const [label, uid, gid, mode, atime, mtime] = line.split(' ');
    if (mtime === undefined) continue; // another line (an exit status)
    out[label!] = { uid: Number(uid), gid: Number(gid), mode: mode!, atimeNs: BigInt(atime!), mtimeNs: BigInt(mtime!) };
  }
  return out;
}

/** The same time to within a microsecond (toolgate sets times as fractional seconds). */
const sameTime = (a: bigint, b: bigint) => (a > b ? a - b : b - a) < 1000n;

/**
 * A shell prelude giving the terminal a group the sandboxed program is not in (`tty`, as devpts
 * usually does), so that its `fchown` to its own group is a change; as root the pty may be
 * root's group, and a non-root user's pty is usually the tty group already.
 */
const TTY_GROUP = `python3 -c ${quote("import grp, os\nif os.getuid() == 0:\n    os.fchown(0, -1, grp.getgrnam('tty').gr_gid if 'tty' in [g.gr_name for g in grp.getgrall()] else 5)")}`;

describe.runIf(hasScript)('toolgate sandbox --tty puts back the terminal device it passed', () => {
  it('puts back its times changed with futimens (atime, the idle time, and mtime)', () => {
    const file = join(host, 'records');
    const attack = sandboxPython(`import os\nos.utime(0, (86400, 86400))\nopen('during', 'w').write(str(int(os.fstat(0).st_atime)))`);
    onTerminal(`${record(file, 'before')}; ${attack}; ${record(file, 'after')}`);
    expect(readFileSync(join(work, 'during'), 'utf8')).toBe('86400');
    const { before, after } = records(file);
    expect(sameTime(after!.atimeNs, before!.atimeNs), `${after!.atimeNs} vs ${before!.atimeNs}`).toBe(true);
    expect(sameTime(after!.mtimeNs, before!.mtimeNs), `${after!.mtimeNs} vs ${before!.mtimeNs}`).toBe(true);
  });

  it('puts back its group changed with fchown (or, when it cannot, leaves it owner-only and says so)', () => {
    const file = join(host, 'records');
    const attack = sandboxPython(`import os\nos.fchown(0, -1, os.getgid())\nos.fchmod(0, 0o660)\nopen('during', 'w').write(str(os.fstat(0).st_gid))`);
    const run = onTerminal(`${TTY_GROUP}; ${record(file, 'before')}; ${attack}; ${record(file, 'after')}`);
    const { before, after } = records(file);
    const during = Number(readFileSync(join(work, 'during'), 'utf8'));
    expect(during).not.toBe(before!.gid); // the program did change it
    if (after!.gid === before!.gid) {
      expect(after!.mode).toBe(before!.mode);
    } else {
      expect(Number.parseInt(after!.mode, 8) & 0o077).toBe(0);
      expect(run.stdout).toContain('could not be put back');
    }
    expect(after!.uid).toBe(before!.uid);
  });

  it('puts back mode, group and times together, also when the program is killed by a signal', () => {
    const file = join(host, 'records');
    const attack = sandboxPython(`${tamper(0)}import os, signal\nos.kill(os.getpid(), signal.SIGKILL)`);
    onTerminal(`${TTY_GROUP}; ${record(file, 'before')}; ${attack}; echo "status $?" >> ${quote(file)}; ${record(file, 'after')}`);
    expect(readFileSync(file, 'utf8')).toContain('status 137');
    const { before, after } = records(file);
    expect(after!.mode).toBe(before!.mode);
    expect(after!.gid).toBe(before!.gid);
    expect(sameTime(after!.atimeNs, before!.atimeNs)).toBe(true);
    expect(sameTime(after!.mtimeNs, before!.mtimeNs)).toBe(true);
  });

  it('puts back a terminal passed as stdout or stderr only (stdin redirected)', () => {
    const file = join(host, 'records');
    const input = privateFile('in.txt', '');
    for (const fd of [1, 2]) {
      const attack = sandboxPython(`${tamper(fd)}`);
      onTerminal(`${TTY_GROUP}; ${record(file, `before${fd}`)}; ${attack} < ${quote(input)}; ${record(file, `after${fd}`)}`);
      const all = records(file);
      const [before, after] = [all[`before${fd}`]!, all[`after${fd}`]!];
      expect(after.mode, `fd ${fd}`).toBe(before.mode);
      expect(after.gid, `fd ${fd}`).toBe(before.gid);
      expect(sameTime(after.atimeNs, before.atimeNs), `fd ${fd}`).toBe(true);
    }
    expect(octal(statSync(input).mode)).toBe('600');
  });
});

/** As root: whether `setpriv` can run this CLI as `nobody` (it and node readable by everyone). */
const asNobody = (() => {
  if (process.getuid?.() !== 0) return false;
  const probe = spawnSync('setpriv', ['--reuid', '65534', '--regid', '65534', '--clear-groups', process.execPath, CLI, 'sandbox', '--help'], { timeout: 10_000 });
  return probe.status === 0;
})();

/** Python: a pty whose slave root gives to `nobody`:tty 0620, with toolgate --tty run on it as nobody. */
const NOBODY_ON_TTY_GROUP = `
import os, pty, select, subprocess, sys
work, node, cli = sys.argv[1:4]
master, slave = pty.openpty()
os.fchown(slave, 65534, 5); os.fchmod(slave, 0o620)
show = lambda label: '%s %d %o' % (label, os.fstat(slave).st_gid, os.fstat(slave).st_mode & 0o7777)
before = show('before')
attack = 'import os\\nos.fchown(0, -1, os.getgid())\\nos.fchmod(0, 0o666)'
child = subprocess.Popen(['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', node, cli, 'sandbox', '--tty', '--work-dir', work, '--', 'python3', '-c', attack],
                         stdin=slave, stdout=slave, stderr=slave, cwd=work, start_new_session=True)
shown = b''
while True:
    ready = select.select([master], [], [], 0.1)[0]
    if ready: shown += os.read(master, 4096)
    elif child.poll() is not None: break
print(before)
print(shown.decode().replace('\\r', ''))
print(show('after'))
`;

describe.runIf(hasScript && asNobody)('toolgate sandbox --tty as a user outside the tty group', () => {
  it('cannot give the terminal back to the tty group: leaves it owner-only and says so', () => {
    const shared = tempDir('toolgate-tty-nobody-');
    chmodSync(shared, 0o777);
    const run = spawnSync('python3', ['-c', NOBODY_ON_TTY_GROUP, shared, process.execPath, CLI], { encoding: 'utf8', timeout: 15_000 });
    expect(run.stdout).toContain('before 5 620');
    expect(run.stdout).toContain('could not be put back; its mode is now 0600');
    expect(run.stdout).toMatch(/after \d+ 600/);
  });
});
