import type { ApprovalConfig } from '../approval/approval.js';
import { gateToolset } from '../approval/gate-toolset.js';
import type { NamedTool } from '../approval/named-tool.js';
import { bindTool } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { awaitNative, callNative } from '../native/errors.js';
import { delegateTool } from '../worker/delegate-tool.js';
import { buildPlannedWorkers, type LoadWorkerOptions } from '../worker/load-worker.js';

export interface WorkerToolsOptions extends LoadWorkerOptions {
  /** Approval of the worker tools (default `ask`). */
  approval?: ApprovalConfig;
}

/**
 * The `workers` toolset outside a worker file: each worker file becomes a tool
 * `{ input, instructions?, attachments? }` that runs it as a sub-agent with the caller's model (unless it names
 * its own) and the caller's approval handler, in `workDir` (which the called worker may only
 * narrow with `restrict`). Each worker, with everything it may call, is planned and frozen now;
 * a file that changes later is refused when the tool is called. Default approval `ask`.
 */
export async function workerTools(workerPaths: readonly string[], options: WorkerToolsOptions = {}): Promise<NamedTool[]> {
  const checked = callNative(() => native.checkWorkerToolsOptions(options));
  const tools: NamedTool[] = [];
  for (const path of workerPaths) {
    const plan = await awaitNative(native.planWorker(path, checked.workDir, checked.readonly));
    const [called] = await buildPlannedWorkers(plan);
    const [info] = plan.workers();
    if (!called || !info) throw new Error(`the plan of '${path}' has no worker`);
    const description = info.description ?? `Runs the worker '${info.name}' on a task and returns its answer.`;
    const binding = callNative(() => native.workerPlanFingerprint(plan));
    tools.push(bindTool(delegateTool({ name: info.name, description, worker: 0 }, plan, () => called), { plan: binding, worker: 0 }));
  }
  return gateToolset('workers', tools, options.approval);
}
