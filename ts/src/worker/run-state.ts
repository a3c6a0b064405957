import type { ModelMessage, ToolSet } from 'ai';
import { approvalOf } from '../approval/approval.js';
import { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { planOf } from './plans.js';
import type { AlwaysScope, ApprovalAnswers, PendingApproval, RunnableWorker, RunUsage } from './types.js';

/**
 * The fingerprint a run state carries. A worker loaded from a file: the content of every file
 * of its graph and its work directories (the core reads them). A worker built in code: its
 * name, instructions and tools (names, descriptions, approvals).
 */
export function workerFingerprint(worker: RunnableWorker, tools: ReadonlyMap<string, ToolSet[string]>): string {
  const plan = planOf(worker);
  if (plan) return callNative(() => native.workerPlanFingerprint(plan));
  const description = {
    name: worker.name,
    instructions: worker.instructions ?? '',
    tools: [...tools].map(([name, tool]) => ({
      name,
      description: tool.description ?? '',
      approval: approvalOf(tool) ?? null,
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
