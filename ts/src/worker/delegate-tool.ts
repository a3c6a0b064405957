import { tool } from 'ai';
import { z } from 'zod';
import { named, type NamedTool } from '../approval/named-tool.js';
import type { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { runWorker } from './run-worker.js';
import type { RunnableWorker } from './types.js';

/**
 * The tool through which a worker calls another: it runs the called worker as a sub-agent with
 * the caller's model (unless it names its own), the caller's approval handler and its "always"
 * answers. The called worker was planned, and its tools built, when the top worker loaded; before
 * it runs, the plan checks that none of its files changed since (a changed file is refused, never
 * read again), so a model that can write files cannot rewrite a worker it is about to call.
 */
export function delegateTool(
  delegate: native.PlannedDelegate,
  plan: native.WorkerPlan,
  called: () => RunnableWorker & { instructions: string },
): NamedTool {
  return named(
    delegate.name,
    tool({
      description: delegate.description,
      inputSchema: z.object({
        input: z.string().describe('The task for the worker'),
        instructions: z.string().optional().describe('Extra guidance for this task, added to the worker instructions'),
      }),
      execute: async ({ input, instructions }, { abortSignal }) => {
        callNative(() => plan.verify(delegate.worker));
        const child = called();
        const result = await runWorker(
          { ...child, instructions: instructions ? `${child.instructions}\n\n${instructions}` : child.instructions },
          input,
          abortSignal ? { signal: abortSignal } : {},
        );
        return { status: result.status, result: result.text };
      },
    }),
  );
}
