import type { ModelMessage, ToolSet } from 'ai';
import { approvalOf } from '../approval/approval.js';
import { bindingOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { planOf } from './plans.js';
import type { AlwaysScope, ApprovalAnswers, PendingApproval, RunnableWorker, RunUsage } from './types.js';

/**
 * The binding a run state carries (the core digests it: every policy that decides a call). Its
 * name, instructions, the plan it was loaded from (every file, work directory, rule, sandbox and
 * approval of the graph), and each tool: name, description, approval, and what toolgate built it
 * with (its work directory, rules, sandbox and settings, or its plan). A state is resumed only on
 * a worker with the same binding, whether it was loaded from a file or built in code.
 */
export function workerFingerprint(worker: RunnableWorker, tools: ReadonlyMap<string, ToolSet[string]>): string {
  const plan = planOf(worker);
  const description = {
    name: worker.name,
    instructions: worker.instructions ?? '',
    plan: plan ? callNative(() => native.workerPlanFingerprint(plan)) : null,
    tools: [...tools].map(([name, tool]) => ({
      name,
      description: tool.description ?? '',
      approval: approvalOf(tool) ?? null,
      binding: bindingOf(tool) ?? null,
    })),
  };
  return callNative(() => native.workerDescriptionFingerprint(JSON.stringify(description)));
}

/** A call waiting for approval when a deferred run stops. */
export interface PendingCall {
  toolCallId: string;
  approvalId: string;
  toolName: string;
  input: unknown;
  argv?: string[];
}

export interface StateDraft {
  worker: string;
  fingerprint: string;
  runId: string;
  steps: number;
  maxSteps: number;
  always: AlwaysScope[];
  pending: PendingCall[];
  usage: RunUsage;
  messages: ModelMessage[];
}

/** Seals a stopped run (the core signs it and names each pending request). */
export function sealState(draft: StateDraft, secret: string): { state: string; pending: PendingApproval[] } {
  const sealed = callNative(() => native.sealRunState(JSON.stringify(draft), secret));
  const pending = (JSON.parse(sealed.pendingJson) as (PendingApproval & { approvalId: string })[]).map(
    ({ id, toolName, input, toolCallId, scope, argv, review, reviewable, inputBytes, inputSha256 }): PendingApproval => ({
      id,
      toolName,
      input,
      toolCallId,
      scope,
      ...(argv ? { argv } : {}),
      review,
      reviewable,
      inputBytes,
      inputSha256,
    }),
  );
  return { state: sealed.state, pending };
}

/** A resumed state, its answers checked by the core. */
export interface OpenedState {
  runId: string;
  worker: string;
  steps: number;
  maxSteps: number;
  always: AlwaysScope[];
  usage: RunUsage;
  messages: ModelMessage[];
  answers: {
    pending: PendingCall & { id: string; scope: AlwaysScope };
    approved: boolean;
    reason: string | null;
    always: AlwaysScope | null;
    /** The answer was `save`: the call's scope is to be saved as a rule. */
    save: boolean;
  }[];
}

/**
 * Opens a state with its answers: the core checks the signature, the worker's fingerprint, the
 * age, that every answer names a pending request, and records the state resumed (`STATE_INVALID`
 * otherwise). Nothing runs before this returns.
 */
export function openState(
  state: string,
  secret: string,
  fingerprint: string,
  answers: ApprovalAnswers,
  ledger: string | undefined,
): OpenedState {
  const answersJson = JSON.stringify(answers) ?? 'null';
  return JSON.parse(callNative(() => native.resumeRunState(state, secret, fingerprint, answersJson, ledger ?? null))) as OpenedState;
}
