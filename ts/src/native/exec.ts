import { callNative } from './errors.js';
import { native } from './binding.js';
import { runProcess } from './process-handle.js';
import { type SandboxOption, warnSandbox } from './sandbox.js';

export interface ExecOptions {
  /** An absolute path, a path relative to `cwd`, or a name looked up on `env.PATH`. */
  command: string;
  args?: readonly string[];
  /** Working directory (default: `process.cwd()`). */
  cwd?: string;
  /**
   * The complete environment of the child (default: empty). Nothing is inherited: pass
   * `{ PATH: process.env.PATH }` or the like explicitly.
   */
  env?: Readonly<Record<string, string>>;
  /** Bytes written to the child's stdin; without it stdin is /dev/null. */
  stdin?: string | Uint8Array;
  /** Kill the whole process group after this many milliseconds (1 to 86 400 000). */
  timeoutMs?: number;
  /** Cap for each of stdout and stderr in bytes (default 1 MiB); the rest is discarded. */
  maxOutputBytes?: number;
  /** Aborting kills the whole process group; the result then has `aborted: true`. */
  signal?: AbortSignal;
  /**
   * Run under the kernel sandbox, with `cwd` as its work directory and a private, empty
   * HOME/TMPDIR (replacing those of `env`). Without it (or with `false`) `exec` runs the
   * program unconfined: it is the raw primitive.
   */
  sandbox?: SandboxOption;
}

export interface ExecResult {
  /** The exit code, or `null` when a signal ended the process. */
  exitCode: number | null;
  /** The terminating signal (`'SIGKILL'`), or `null`. */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Whether stdout or stderr was cut at `maxOutputBytes`. */
  truncated: boolean;
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /** Whether the program ran with the sandbox's filesystem policy in force. */
  sandboxed: boolean;
  /**
   * The `sandbox.limits` the call ran into (`processes`, `memoryMb`, `tmpMb`, `cpuSeconds`,
   * `fileSizeMb`, comma-separated), or `null`; stderr then ends with a line naming it.
   */
  limit: string | null;
}

/**
 * Runs a program without a shell, with exactly the given environment, in its own process
 * group. Exit codes, signals, timeouts and aborts are reported in the result; only a failure
 * to start throws (`BINARY_NOT_FOUND`, `SPAWN_FAILED`). With `sandbox`, a denial inside the
 * program is its own error (a non-zero exit), and `SANDBOX_UNAVAILABLE` is thrown when
 * `'enforce'` cannot be met here. The options are checked by the core: an unknown key or a
 * number out of range is `INVALID_INPUT`.
 */
export async function exec(options: ExecOptions): Promise<ExecResult> {
  options.signal?.throwIfAborted();
  const handle = callNative(() => native.prepareProcess(options));
  warnSandbox(handle.sandboxWarning);
  const result = await runProcess(handle, options.signal, true);
  return {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    stdout: result.stdout,
    stderr: result.stderr,
    truncated: result.truncated,
    timedOut: result.timedOut,
    aborted: result.aborted,
    durationMs: result.durationMs,
    sandboxed: result.sandboxed,
    limit: result.limit ?? null,
  };
}
