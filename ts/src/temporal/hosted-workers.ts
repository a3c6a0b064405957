import type { ToolSet } from 'ai';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { gatedTools } from '../run/gated-call.js';
import { loadWorker, type LoadedWorker, type LoadWorkerOptions } from '../worker/load-worker.js';
import { planOf } from '../worker/plans.js';
import type { RunRef } from './contract.js';

/** A worker file loaded on this host, with what a durable run needs of it. */
export interface HostedWorker {
  worker: LoadedWorker;
  plan: native.WorkerPlan;
  /** The plan identity (the core's JSON text) of the version loaded. */
  identity: string;
  /** The tools whose calls only read (the core's list). */
  readOnlyTools: string[];
  /** The tools by name, blocked ones included (as the agent loop keeps them). */
  tools: Map<string, ToolSet[string]>;
  blocked: Set<string>;
}

async function host(path: string, options: LoadWorkerOptions): Promise<HostedWorker> {
  const worker = await loadWorker(path, options);
  try {
    const plan = planOf(worker);
    if (!plan) throw new ToolgateError('INTERNAL_ERROR', `the worker loaded from '${path}' has no plan`);
    const identity = callNative(() => native.workerPlanIdentity(plan));
    const readOnlyTools = callNative(() => native.workerPlanReadOnlyTools(plan));
    const { tools, blocked } = gatedTools(worker.tools, worker.toolApproval);
    return { worker, plan, identity, readOnlyTools, tools, blocked };
  } catch (error) {
    await worker.close();
    throw error;
  }
}

/** Whether no file of a loaded plan changed since it was loaded (the core's frozen-file check). */
function unchanged(hosted: HostedWorker): boolean {
  try {
    const count = hosted.plan.workers().length;
    for (let index = 0; index < count; index++) hosted.plan.verify(index);
    return true;
  } catch {
    return false;
  }
}

/**
 * The worker files a worker host has loaded, one version of each path at a time. A version whose
 * files changed since it was loaded is dropped and the file loaded again, so a new run gets the
 * new version, and a run pinned to the old one is refused (`pinned`) instead of running other code.
 */
export class HostedWorkers {
  readonly #options: LoadWorkerOptions;
  readonly #allowed: ((path: string) => void) | undefined;
  readonly #loaded = new Map<string, Promise<HostedWorker>>();

  /** `allowed` throws for a worker file this host does not run (`workerFiles`). */
  constructor(options: LoadWorkerOptions, allowed?: (path: string) => void) {
    this.#options = options;
    this.#allowed = allowed;
  }

  /** The current version of the worker file at `path` on this host. */
  async current(path: string): Promise<HostedWorker> {
    this.#allowed?.(path);
    const entry = this.#loaded.get(path);
    if (entry) {
      const hosted = await entry.catch(() => undefined);
      if (hosted && unchanged(hosted)) return hosted;
      if (this.#loaded.get(path) === entry) {
        this.#loaded.delete(path);
        await hosted?.worker.close();
      }
    }
    let loading = this.#loaded.get(path);
    if (!loading) {
      loading = host(path, this.#options);
      this.#loaded.set(path, loading);
      // A failed load is not kept: the next call tries again (the file may have been fixed).
      loading.catch(() => {
        if (this.#loaded.get(path) === loading) this.#loaded.delete(path);
      });
    }
    return loading;
  }

  /**
   * The worker of a run, checked against the identity the run started with: a host whose files
   * differ throws `CONFIG_INVALID` naming the file (the core compares), and nothing runs.
   */
  async pinned(ref: RunRef): Promise<HostedWorker> {
    const hosted = await this.current(ref.worker);
    callNative(() => native.checkWorkerPlanIdentity(hosted.plan, ref.identity, ref.runId));
    return hosted;
  }

  /** Ends what the loaded workers started (their MCP servers). */
  async close(): Promise<void> {
    const all = [...this.#loaded.values()];
    this.#loaded.clear();
    await Promise.all(all.map(async (entry) => (await entry.catch(() => undefined))?.worker.close()));
  }
}
