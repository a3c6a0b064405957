/**
 * The one error class of toolgate. `code` is stable and documented; the message says what was
 * refused and what to change.
 */
export const TOOLGATE_ERROR_CODES = [
  'PATH_OUTSIDE_ROOT',
  'BINARY_NOT_ALLOWED',
  'SHELL_NOT_ALLOWED',
  'BINARY_NOT_FOUND',
  'SPAWN_FAILED',
  'ARGUMENT_REJECTED',
  'COMMAND_BLOCKED',
  'GUARDRAIL_BLOCKED',
  'OUTPUT_BLOCKED',
  'TIMEOUT',
  'TOOL_BLOCKED',
  'APPROVAL_DENIED',
  'INVALID_INPUT',
  'TOOL_NOT_FOUND',
  'TOOL_FAILED',
  'CONFIG_INVALID',
  'MODULE_INVALID',
  'FILE_NOT_FOUND',
  'IO_ERROR',
] as const;

export type ToolgateErrorCode = (typeof TOOLGATE_ERROR_CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(TOOLGATE_ERROR_CODES);

export function isToolgateErrorCode(value: unknown): value is ToolgateErrorCode {
  return typeof value === 'string' && KNOWN_CODES.has(value);
}

export class ToolgateError extends Error {
  override readonly name = 'ToolgateError';
  readonly code: ToolgateErrorCode;

  constructor(code: ToolgateErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** `CODE: message`, the form in which the native addon rejects promises. */
const CODE_PREFIX = /^([A-Z_]+): ([\s\S]*)$/;

/**
 * Turns an error thrown by the native addon into a `ToolgateError`. Synchronous native
 * functions set `err.code`; rejected native promises carry the code as a message prefix.
 * Anything else is passed through untouched.
 */
export function fromNativeError(error: unknown): unknown {
  if (error instanceof ToolgateError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (isToolgateErrorCode(code)) return new ToolgateError(code, error.message, { cause: error });
  const prefixed = CODE_PREFIX.exec(error.message);
  if (prefixed && isToolgateErrorCode(prefixed[1])) {
    return new ToolgateError(prefixed[1], prefixed[2] ?? '', { cause: error });
  }
  return error;
}

/** Runs a native call and rethrows its errors as `ToolgateError`s. */
export function callNative<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw fromNativeError(error);
  }
}

/** Awaits a native promise and rethrows its rejection as a `ToolgateError`. */
export async function awaitNative<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw fromNativeError(error);
  }
}
