import { callNative } from './errors.js';
import { native } from './binding.js';

/**
 * Splits a command string into words exactly as the `shell` tool does: POSIX quoting, no
 * expansion. Throws `ARGUMENT_REJECTED` for pipes, redirections, lists, substitutions and
 * newlines, and for unterminated quotes.
 */
export function splitCommand(command: string): string[] {
  return callNative(() => native.splitCommand(command));
}
