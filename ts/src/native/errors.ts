import { native } from './binding.js';

/** The stable code of a toolgate error; the list is the Rust core's (`binding.d.ts`). */
export type ToolgateErrorCode = native.ErrorCode;

/** The part of toolgate an error comes from (`config`, `paths`, `command`, …). */
export type ToolgateErrorLayer = native.ErrorLayer;

/** Every error code, in documentation order. */
export const TOOLGATE_ERROR_CODES: readonly ToolgateErrorCode[] = native.errorCodes();

const KNOWN_CODES: ReadonlySet<string> = new Set(TOOLGATE_ERROR_CODES);

export function isToolgateErrorCode(value: unknown): value is ToolgateErrorCode {
  return typeof value === 'string' && KNOWN_CODES.has(value);
}

/**
 * The one error class of toolgate. `code` is stable and documented; `layer` says which part of
 * toolgate raised it; the message says what was refused and what to change.
 */
export class ToolgateError extends Error {
  override readonly name = 'ToolgateError';
  readonly code: ToolgateErrorCode;
  readonly layer: ToolgateErrorLayer | undefined;

  constructor(code: ToolgateErrorCode, message: string, options?: { cause?: unknown; layer?: ToolgateErrorLayer }) {
    super(message, options);
    this.code = code;
    this.layer = options?.layer;
  }
}

const LAYERS: ReadonlySet<string> = new Set(native.constants().errorLayers);

function isLayer(value: unknown): value is ToolgateErrorLayer {
  return typeof value === 'string' && LAYERS.has(value);
}

/**
 * Turns an error thrown or rejected by the native addon into a `ToolgateError`: the addon
 * builds every error with `code` and `layer` properties, so nothing is parsed. Anything else is
 * passed through untouched.
 */
export function fromNativeError(error: unknown): unknown {
  if (error instanceof ToolgateError || !(error instanceof Error)) return error;
  const { code, layer } = error as { code?: unknown; layer?: unknown };
  if (!isToolgateErrorCode(code)) return error;
  return new ToolgateError(code, error.message, { cause: error, ...(isLayer(layer) ? { layer } : {}) });
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
