import { awaitNative } from './errors.js';
import type { native } from './binding.js';

/** What `cli_execute` and `shell` return. A non-zero exit is data, not an error. */
export interface CommandResult {
  stdout: string;
  stderr: string;
  /** The exit code, or `null` when a signal ended the process (for instance on timeout). */
  exitCode: number | null;
  /** Whether stdout or stderr was cut at the output cap. */
  truncated: boolean;
  /** Whether the timeout killed the process group. */
  timedOut: boolean;
}

type CommandHandle = InstanceType<typeof native.CommandHandle>;

/**
 * Runs a checked native command. Aborting `signal` kills the whole process group; the call
 * then rejects with the signal's reason once the processes are gone.
 */
export async function runCommand(handle: CommandHandle, signal: AbortSignal | undefined): Promise<CommandResult> {
  if (signal?.aborted) {
    handle.kill();
    throw signal.reason;
  }
  const onAbort = () => handle.kill();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await awaitNative(handle.wait());
    if (result.aborted && signal?.aborted) throw signal.reason;
    return {
      stdout: result.stdout,
      stderr: result.stderr,
      exitCode: result.exitCode ?? null,
      truncated: result.truncated,
      timedOut: result.timedOut,
    };
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** A human-readable size for tool descriptions: `1 MiB`, `64 KiB`, `100 bytes`. */
export function describeBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
