import { tool } from 'ai';
import { z } from 'zod';
import { runWorker } from '../worker/run-worker.js';
import { type ApprovalConfig, wrapWithDefaultApproval } from '../approval/approval.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { loadWorker, loadWorkerSpec } from '../worker/load-worker.js';

/**
 * The `workers` toolset: each allowed worker becomes a tool `{ input, instructions? }` that runs
 * it as a sub-agent with the caller's model (unless it names its own), the caller's approval
 * handler and its "always" answers, in the caller's sandbox (which the called worker may only
 * narrow with `restrict`, and cannot make writable). Default approval `ask`. Depth and cycles are checked when
 * the calling worker is loaded, and again at run time.
 */
export function workerTools(
  workerPaths: readonly string[],
  sandbox: { workDir: string; readonly: boolean },
  approval: ApprovalConfig = {},
): NamedTool[] {
  return workerPaths.map((path) => {
    const spec = loadWorkerSpec(path, sandbox);
    const delegate = named(
      spec.name,
      tool({
        description: spec.description ?? `Runs the worker '${spec.name}' on a task and returns its answer.`,
        inputSchema: z.object({
          input: z.string().describe('The task for the worker'),
          instructions: z.string().optional().describe('Extra guidance for this task, added to the worker instructions'),
        }),
        execute: async ({ input, instructions }, { abortSignal }) => {
          const child = await loadWorker(path, sandbox);
          const result = await runWorker(
            { ...child, instructions: instructions ? `${child.instructions}\n\n${instructions}` : child.instructions },
            input,
            abortSignal ? { signal: abortSignal } : {},
          );
          return { status: result.status, result: result.text };
        },
      }),
    );
    return wrapWithDefaultApproval(delegate, {
      default: approval.default ?? 'ask',
      ...(approval.tools ? { tools: approval.tools } : {}),
    });
  });
}
