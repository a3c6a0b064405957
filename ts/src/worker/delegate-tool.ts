import { tool } from 'ai';
import { z } from 'zod';
import { named, type NamedTool } from '../approval/named-tool.js';
import type { native } from '../native/binding.js';
import { awaitNative, callNative } from '../native/errors.js';
import { runWorkerWithFiles } from './run-worker.js';
import type { RunnableWorker } from './types.js';

/**
 * The tool through which a worker calls another: it runs the called worker as a sub-agent with
 * the caller's model (unless it names its own), the caller's approval handler and its "always"
 * answers. The called worker was planned, and its tools built, when the top worker loaded; before
 * it runs, the plan checks that none of its files changed since (a changed file is refused, never
 * read again), so a model that can write files cannot rewrite a worker it is about to call.
 * `attachments` (paths relative to the caller's work directory) are read by the core, held to
 * the called worker's `attachment_policy` and the caller's path rules, and reach the called
 * worker's model as file parts beside the task.
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
        attachments: z
          .array(z.string())
          .optional()
          .describe('Files for the worker to read, as paths relative to the work directory; they are sent to its model with the task'),
      }),
      execute: async ({ input, instructions, attachments }, { abortSignal }) => {
        callNative(() => plan.verify(delegate.worker));
        const files = attachments?.length ? await awaitNative(plan.readAttachments(delegate.worker, attachments)) : [];
        const child = called();
        const result = await runWorkerWithFiles(
          { ...child, instructions: instructions ? `${child.instructions}\n\n${instructions}` : child.instructions },
          input,
          files.map((file) => ({ type: 'file' as const, data: new Uint8Array(file.data), mediaType: file.mediaType, filename: file.path })),
          abortSignal ? { signal: abortSignal } : {},
        );
        return { status: result.status, result: result.text };
      },
    }),
  );
}
