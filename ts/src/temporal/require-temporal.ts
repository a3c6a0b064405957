/**
 * `toolgate/temporal` needs the Temporal TypeScript SDK, which toolgate does not install (it is an
 * optional peer dependency): without it, importing `toolgate/temporal` fails with one clear line
 * instead of a module-resolution stack trace.
 */
export const TEMPORAL_PACKAGES = ['@temporalio/activity', '@temporalio/common', '@temporalio/workflow'] as const;

const INSTALL = 'npm install @temporalio/client @temporalio/worker @temporalio/workflow @temporalio/activity @temporalio/common';

/** Resolves when the Temporal packages toolgate's activities and workflow import are installed. */
export async function requireTemporal(): Promise<void> {
  const missing: string[] = [];
  for (const name of TEMPORAL_PACKAGES) {
    try {
      await import(name);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
      missing.push(name);
    }
  }
  if (missing.length > 0) {
    const error = new Error(`toolgate/temporal needs the Temporal SDK (missing: ${missing.join(', ')}); install it: ${INSTALL}`);
    // One line: the message says everything, a stack trace into the loader would not help.
    error.stack = `Error: ${error.message}`;
    throw error;
  }
}
