/**
 * `toolgate/temporal` needs the Temporal TypeScript SDK, which toolgate does not install (it is an
 * optional peer dependency). This module is the entry's first import: without the SDK, importing
 * `toolgate/temporal` fails here with one clear line instead of a module-resolution stack trace.
 * It is synchronous (no top-level await), so the entry also loads through `require`.
 */
import { createRequire } from 'node:module';

/** The Temporal packages toolgate's activities and workflow load. */
export const TEMPORAL_PACKAGES = ['@temporalio/activity', '@temporalio/common', '@temporalio/workflow'] as const;

const INSTALL = 'npm install @temporalio/client @temporalio/worker @temporalio/workflow @temporalio/activity @temporalio/common';

/** Where `name` would load from, or `undefined` when it is not installed. */
function located(name: string): string | undefined {
  try {
    return typeof import.meta.resolve === 'function' ? import.meta.resolve(name) : createRequire(import.meta.url).resolve(name);
  } catch {
    return undefined;
  }
}

/** Throws one line naming the missing Temporal packages and the command that installs them. */
export function requireTemporal(): void {
  const missing = TEMPORAL_PACKAGES.filter((name) => located(name) === undefined);
  if (missing.length === 0) return;
  const error = new Error(`toolgate/temporal needs the Temporal SDK (missing: ${missing.join(', ')}); install it: ${INSTALL}`);
  // One line: the message says everything, a stack trace into the loader would not help.
  error.stack = `Error: ${error.message}`;
  throw error;
}

requireTemporal();
