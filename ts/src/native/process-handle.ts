import { awaitNative } from './errors.js';
import { attachProcess, withRefusals, type RefusedConnection } from './network-call.js';
import type { native } from './binding.js';

type ProcessHandle = native.ProcessHandle;

/** What a process produced (the binding's one result shape). */
export type ProcessResult = native.ProcessResult;

/**
 * The one place an AbortSignal reaches a process: runs a prepared native process and kills its
 * whole process group when `signal` aborts (also before it starts, in which case it never
 * does). An aborted run rejects with the signal's reason once the processes are gone, unless
 * `abortIsData` (then it resolves with `aborted: true`, as `exec` documents).
 */
export async function runProcess(
  handle: ProcessHandle,
  signal: AbortSignal | undefined,
  abortIsData = false,
): Promise<ProcessResult> {
  if (signal?.aborted) {
    handle.kill();
    throw signal.reason;
  }
  const onAbort = () => handle.kill();
  signal?.addEventListener('abort', onAbort, { once: true });
  const collect = attachProcess(handle);
  try {
    const result = await awaitNative(handle.wait());
    if (result.aborted && signal?.aborted && !abortIsData) throw signal.reason;
    return result;
  } catch (error) {
    if (signal?.aborted && !abortIsData) throw signal.reason;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    collect?.();
  }
}

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
  /**
   * The destinations the egress proxy refused (network by host), each with the reason the
   * program was sent; absent when nothing was refused.
   */
  refusedConnections?: RefusedConnection[];
}

/** Runs a checked command and returns what the model sees. */
export async function runCommand(handle: ProcessHandle, signal: AbortSignal | undefined): Promise<CommandResult> {
  const result = await runProcess(handle, signal);
  return {
    stdout: result.stdout,
    stderr: result.stderr,
    exitCode: result.exitCode ?? null,
    truncated: result.truncated,
    timedOut: result.timedOut,
    ...withRefusals(result),
  };
}
