import { awaitNative, callNative } from './errors.js';
import { native } from './binding.js';

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
  /** Kill the whole process group after this many milliseconds. */
  timeoutMs?: number;
  /** Cap for each of stdout and stderr in bytes (default 1 MiB); the rest is discarded. */
  maxOutputBytes?: number;
  /** Aborting kills the whole process group; the result then has `aborted: true`. */
  signal?: AbortSignal;
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
}

/**
 * Runs a program without a shell, with exactly the given environment, in its own process
 * group. Exit codes, signals, timeouts and aborts are reported in the result; only a failure
 * to start throws (`BINARY_NOT_FOUND`, `SPAWN_FAILED`).
 */
export async function exec(options: ExecOptions): Promise<ExecResult> {
  const { signal } = options;
  signal?.throwIfAborted();
  const handle = callNative(() =>
    native.prepareProcess({
      command: options.command,
      args: options.args ? [...options.args] : undefined,
      cwd: options.cwd ?? process.cwd(),
      env: options.env ? { ...options.env } : undefined,
      stdin:
        options.stdin === undefined
          ? undefined
          : typeof options.stdin === 'string'
            ? options.stdin
            : Buffer.from(options.stdin.buffer, options.stdin.byteOffset, options.stdin.byteLength),
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes,
    }),
  );
  const onAbort = () => handle.kill();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await awaitNative(handle.wait());
    return { ...result, exitCode: result.exitCode ?? null, signal: result.signal ?? null };
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
