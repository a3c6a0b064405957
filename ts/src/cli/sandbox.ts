import { type ChildProcess, spawn } from 'node:child_process';
import { fchmodSync, fchownSync, fstatSync, futimesSync } from 'node:fs';
import { constants } from 'node:os';
import { isatty } from 'node:tty';
import { parseArgs } from 'node:util';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { type SandboxOption, warnSandbox } from '../native/sandbox.js';
import { terminalText } from '../native/terminal-text.js';

export const HELP = `Usage: toolgate sandbox [options] -- <program> [args...]

Runs any program under toolgate's kernel sandbox (its own view of the file system, Landlock,
seccomp, PID/IPC/network namespaces, limits) like a tool's process would run: the work
directory read-write, the system runtime read-only, a private empty HOME and TMPDIR, no
network, and nothing else. Every descendant ends with the program. A denial is the program's
own error.

Without --tty the program has no terminal, as a tool's process: its input, output and errors
are relayed through pipes (so it cannot read what you type elsewhere, change the terminal's
modes or take it over). With --tty it is given this terminal: each of stdin, stdout and stderr
that IS a terminal is passed through as it is; every other one (a file as in '> out.log' or
'< ~/.ssh/id_rsa', /dev/null, a pipe, a socket) is still relayed through a pipe, so the
program never holds a descriptor of a host file. It can then read what you type while it
runs, change the terminal's modes and open /dev/tty (injecting input with TIOCSTI stays
refused); with no terminal among the three, --tty gives none. When the program ends (also
when a signal ends it), toolgate puts back the owner, group, mode and access/modification
times of each terminal device passed through, as they were before it started (a group it
cannot give back leaves the terminal owner-only, 0600, with a warning). Use --tty for
interactive programs you trust with your terminal.

Options:
  --work-dir <dir>   Work directory and the program's cwd (default: the current directory)
  --network          Allow network access (every host)
  --allow-host <H[:P]>
                     Allow connections to host H (port P only, when given) through
                     toolgate's egress proxy, and nothing else (repeatable). H is a name,
                     *.name (its subdomains), an IP address or a CIDR range; [v6]:P
  --deny-host <H[:P]>
                     Refuse H even where --allow-host allows it (repeatable)
  --read <path>      Also allow reading and executing <path> (repeatable)
  --write <path>     Also allow writing <path> (repeatable)
  --tty              Pass the streams that are terminals through (see above)
  --best-effort      Run with what this kernel offers instead of refusing (warns once)
  -h, --help         Show this help

The environment is toolgate's child environment (PATH, LANG, LC_*, TZ, USER, LOGNAME, the
proxy variables, TERM) with a private HOME and TMPDIR. With --allow-host the proxy variables
(http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY=, npm's and pip's) point at the egress proxy,
and each refused connection is named on stderr when the program ends. 'toolgate check --sandbox' shows what
this kernel supports.

Exit status: the program's (128 + n when signal n ended it); 125 when the sandbox could not be
set up, 126 when the program could not be executed, 127 when it was not found; 2 for a usage
error.
`;

/** `toolgate sandbox`: runs a program under the sandbox with the terminal's stdio. */
export async function run(argv: readonly string[]): Promise<number> {
  const split = argv.indexOf('--');
  const optionWords = split < 0 ? argv : argv.slice(0, split);
  const command = split < 0 ? [] : argv.slice(split + 1);
  let parsed;
  try {
    parsed = parseArgs({
      args: [...optionWords],
      allowPositionals: false,
      options: {
        'work-dir': { type: 'string' },
        network: { type: 'boolean', default: false },
        'allow-host': { type: 'string', multiple: true, default: [] },
        'deny-host': { type: 'string', multiple: true, default: [] },
        read: { type: 'string', multiple: true, default: [] },
        write: { type: 'string', multiple: true, default: [] },
        tty: { type: 'boolean', default: false },
        'best-effort': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`toolgate sandbox: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.network && (values['allow-host'].length > 0 || values['deny-host'].length > 0)) {
    process.stderr.write(`toolgate sandbox: --network opens every host; give it or --allow-host/--deny-host, not both\n\n${HELP}`);
    return 2;
  }
  const [program, ...args] = command;
  if (program === undefined) {
    process.stderr.write(`toolgate sandbox: give the program after '--': toolgate sandbox -- ls -la\n\n${HELP}`);
    return 2;
  }
  // With --tty, only the standard streams that are terminals are passed through; a file, pipe,
  // socket or /dev/null (`> out.log`, `< ~/.ssh/id_rsa`) is relayed through a pipe as without
  // it, so the program never holds a host file's descriptor. With none, there is no terminal
  // to give (no session, no /dev/tty).
  const terminals = values.tty ? [0, 1, 2].filter(isTerminal) : [];
  const options = {
    ...(values['work-dir'] === undefined ? {} : { workDir: values['work-dir'] }),
    sandbox: sandboxOption(values),
    tty: terminals.length > 0,
  };
  let launch: native.SandboxLaunch;
  try {
    launch = callNative(() => new native.SandboxLaunch(options, program, args));
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    process.stderr.write(`toolgate sandbox: ${error.code}: ${terminalText(error.message, { layout: true })}\n`);
    return error.code === 'BINARY_NOT_FOUND' ? 127 : error.code === 'SANDBOX_UNAVAILABLE' ? 125 : 2;
  }
  warnSandbox(launch.sandboxWarning);
  try {
    return await runInTerminal(launch, terminals);
  } finally {
    for (const refused of launch.finish()) process.stderr.write(`toolgate sandbox: ${refused.reason.replace(/^toolgate: /, '')}\n`);
  }
}

/** Relays our input to the program and its output to ours (no terminal reaches it). */
function relay(child: ChildProcess): void {
  child.stdout?.pipe(process.stdout, { end: false });
  child.stderr?.pipe(process.stderr, { end: false });
  if (child.stdin) {
    child.stdin.on('error', () => {}); // the program stopped reading: not our error
    process.stdin.pipe(child.stdin);
    child.on('exit', () => {
      process.stdin.unpipe(child.stdin ?? undefined);
      process.stdin.pause();
    });
  }
}

/** The sandbox the flags ask for. */
function sandboxOption(values: {
  network: boolean;
  'allow-host': string[];
  'deny-host': string[];
  read: string[];
  write: string[];
  'best-effort': boolean;
}): SandboxOption {
  const byHost = values['allow-host'].length > 0 || values['deny-host'].length > 0;
  return {
    mode: values['best-effort'] ? 'best-effort' : 'enforce',
    network: byHost ? { allow: values['allow-host'], deny: values['deny-host'] } : values.network,
    read: values.read,
    write: values.write,
  };
}

/** Whether descriptor `fd` is a terminal (a tty character device), not a file, pipe or socket. */
function isTerminal(fd: number): boolean {
  try {
    return isatty(fd) && fstatSync(fd).isCharacterDevice();
  } catch {
    return false;
  }
}

/** What a program holding a terminal's descriptor could change on its device node. */
interface DeviceState {
  uid: number;
  gid: number;
  mode: number;
  atimeNs: bigint;
  mtimeNs: bigint;
}

function deviceState(fd: number): DeviceState {
  const stat = fstatSync(fd, { bigint: true });
  return { uid: Number(stat.uid), gid: Number(stat.gid), mode: Number(stat.mode & 0o7777n), atimeNs: stat.atimeNs, mtimeNs: stat.mtimeNs };
}

/** Nanoseconds since the epoch as the seconds `futimesSync` takes (sub-microsecond precision). */
const seconds = (ns: bigint) => Number(ns / 1_000_000_000n) + Number(ns % 1_000_000_000n) / 1e9;

/**
 * Puts back the owner, group, mode and times of the device open as `fd`, where they changed:
 * the owner first (a change of owner clears set-id bits), then the mode, then the times (which
 * neither changes). When the owner or group cannot be put back (only root may give a file to
 * a group it is not in, such as `tty`), every permission for the group and others is removed
 * instead, so that the group the program chose cannot read or write the terminal.
 */
function restoreDevice(fd: number, saved: DeviceState): void {
  const now = deviceState(fd);
  let mode = saved.mode;
  if (now.uid !== saved.uid || now.gid !== saved.gid) {
    try {
      fchownSync(fd, saved.uid, saved.gid);
    } catch {
      mode &= 0o700;
      process.stderr.write(`toolgate sandbox: the program changed the owner or group of the terminal and it could not be put back; its mode is now ${mode.toString(8).padStart(4, '0')}\n`);
    }
  }
  if ((fstatSync(fd).mode & 0o7777) !== mode) fchmodSync(fd, mode);
  if (now.atimeNs !== saved.atimeNs || now.mtimeNs !== saved.mtimeNs) futimesSync(fd, seconds(saved.atimeNs), seconds(saved.mtimeNs));
}

/**
 * The owner, group, mode and times of the terminal devices passed to the program (`fds`) now,
 * and a function that puts them back (once; later calls do nothing): a program given a
 * terminal (`--tty`) holds its device open and, as its owner, could `fchmod` it (`0666`: every
 * local user may then read what is typed), `fchown` it to another of its groups or `futimens`
 * it (the idle time `w` shows), which would outlive it.
 */
function terminalState(fds: readonly number[]): () => void {
  const saved = new Map<string, { fd: number; state: DeviceState }>();
  for (const fd of fds) {
    try {
      const stat = fstatSync(fd);
      const key = `${stat.dev}:${stat.ino}`;
      if (!saved.has(key)) saved.set(key, { fd, state: deviceState(fd) });
    } catch {
      // Not a file we can look at: nothing to put back.
    }
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    for (const { fd, state } of saved.values()) {
      try {
        restoreDevice(fd, state);
      } catch {
        // The terminal is gone.
      }
    }
  };
}

/**
 * Spawns the launcher's command line and resolves with its exit code: the standard streams in
 * `terminals` (with `--tty`, those that are terminals) are this process's own; every other
 * stream is a pipe relayed to and from ours. Like a shell, toolgate
 * ignores the terminal's interrupt and quit keys while the program runs (they reach the
 * launcher, in the same foreground process group, which passes them on to the program).
 */
function runInTerminal(launch: native.SandboxLaunch, terminals: readonly number[]): Promise<number> {
  const ignore = () => {};
  process.on('SIGINT', ignore);
  process.on('SIGQUIT', ignore);
  return new Promise<number>((resolve) => {
    // With --allow-host/--deny-host, the launcher's fd 3 is the socket its init hands the
    // egress proxy's listener over; our copy is closed once it is spawned.
    const handoff = launch.handoffFd;
    const streams = [0, 1, 2].map((fd) => (terminals.includes(fd) ? 'inherit' : 'pipe') as 'inherit' | 'pipe');
    // Saved before the program starts: it may change them from its first instruction.
    const restoreTerminals = terminalState(terminals);
    const child = spawn(launch.file, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      stdio: handoff === null ? streams : [...streams, handoff],
    });
    child.once('spawn', () => launch.closeHandoff());
    relay(child);
    const done = (code: number) => {
      restoreTerminals();
      process.off('SIGINT', ignore);
      process.off('SIGQUIT', ignore);
      resolve(code);
    };
    child.on('error', (error) => {
      launch.closeHandoff();
      process.stderr.write(`toolgate sandbox: could not start '${terminalText(launch.file)}': ${terminalText(error.message)}\n`);
      done(126);
    });
    child.on('exit', (code, signal) => {
      if (code !== null) return done(code);
      done(128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
}
