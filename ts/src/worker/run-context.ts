import { AsyncLocalStorage } from 'node:async_hooks';
import type { LanguageModel } from 'ai';
import type { ApprovalGate } from '../run/approval-gate.js';
import type { NetworkApprovals } from '../run/network.js';
import type { RunEvent } from './types.js';

/**
 * What a running worker hands down to the workers it calls: tools run inside `generateText`,
 * so the worker tool finds its caller's run here rather than in arguments the AI SDK controls.
 */
export interface RunContext {
  /** 0 for the top-level worker. */
  depth: number;
  /** The worker files of the chain so far, top first. */
  chain: readonly string[];
  /** Shared down the chain, so an "always" given to one worker holds for the workers it calls. */
  gate: ApprovalGate;
  /** Shared with the gate: the egress proxy's questions and records, and the run's `always` hosts. */
  network: NetworkApprovals;
  model: LanguageModel;
  /** A model forced for the whole run (the CLI's --model), which called workers use too. */
  forcedModel: boolean;
  emit: (event: RunEvent) => void;
}

export const runContext = new AsyncLocalStorage<RunContext>();
