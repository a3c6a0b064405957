import type { FilePart, ModelMessage, ToolContent, UserContent } from 'ai';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { audited, checkApprovalOption, checkInput, prepareRun, runLoop, type RunSetup } from './run-loop.js';
import type { GateAnswer } from '../run/approval-gate.js';
import { planOf } from './plans.js';
import { NETWORK_TOOL, networkInput } from '../run/network.js';
import { openState, workerFingerprint } from './run-state.js';
import type { ApprovalAnswers, ResumeWorkerOptions, RunnableWorker, RunWorkerOptions, WorkerRunResult } from './types.js';

export { DEFAULT_MAX_STEPS, MAX_WORKER_DEPTH } from './run-loop.js';

/** Prepares a fresh run (shared by `runWorker` and `streamWorker`). */
export async function prepareFreshRun(worker: RunnableWorker, input: string, options: RunWorkerOptions, stream: boolean): Promise<RunSetup> {
  checkInput(worker, input);
  const checked = callNative(() => native.checkRunWorkerOptions(options));
  checkApprovalOption(options.onApproval, checked.stateSecret ?? undefined, stream ? 'streamWorker' : 'runWorker');
  return prepareRun(worker, options, {
    maxSteps: checked.maxSteps ?? undefined,
    stream,
    ...(checked.stateSecret ? { stateSecret: checked.stateSecret } : {}),
    audit: checked.audit ?? null,
  });
}

/**
 * Runs a fresh run to its end, audited. `files` (attachments a calling worker sent, read and
 * checked by the core) go into the user message beside the task text, as file parts.
 */
export function runFresh(
  setup: RunSetup,
  input: string,
  earlier: readonly ModelMessage[] | undefined,
  files: readonly FilePart[] = [],
): Promise<WorkerRunResult> {
  const content: UserContent = files.length === 0 ? input : [{ type: 'text', text: input }, ...files];
  const messages: ModelMessage[] = [...(earlier ?? []), { role: 'user', content }];
  return audited(setup, { input, resumed: false }, () =>
    runLoop(setup, { messages, stepsTaken: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } }),
  );
}

/**
 * Runs a worker's agent loop on the AI SDK. Tools that need approval go through the SDK's own
 * approval flow: the SDK stops with approval requests, `onApproval` answers them, and the SDK
 * executes the approved calls when the loop continues — every tool executes exactly once.
 *
 * With `onApproval: 'defer'` (and a `stateSecret`) the run stops at the first step that needs
 * approvals and returns `{ status: 'approval-required', pending, state }`; `resumeWorker`
 * continues it, in this process or another.
 */
export function runWorker(worker: RunnableWorker, input: string, options: RunWorkerOptions = {}): Promise<WorkerRunResult> {
  return runWorkerWithFiles(worker, input, [], options);
}

/** `runWorker` with files beside the task (a delegated call's attachments, already checked). */
export async function runWorkerWithFiles(
  worker: RunnableWorker,
  input: string,
  files: readonly FilePart[],
  options: RunWorkerOptions = {},
): Promise<WorkerRunResult> {
  const setup = await prepareFreshRun(worker, input, options, false);
  return runFresh(setup, input, options.messages, files);
}

/** Whether any answer is `save`. */
function answersSave(answers: ApprovalAnswers): boolean {
  return Object.values(answers ?? {}).some(
    (answer) => answer === 'save' || (typeof answer === 'object' && answer !== null && (answer as { decision?: unknown }).decision === 'save'),
  );
}

/** Prepares a resumed run: the core checks the state and the answers before anything runs. */
export async function prepareResumedRun(
  worker: RunnableWorker,
  state: string,
  answers: ApprovalAnswers,
  options: ResumeWorkerOptions,
  stream: boolean,
): Promise<{ setup: RunSetup; run: () => Promise<WorkerRunResult> }> {
  const checked = callNative(() => native.checkResumeWorkerOptions(options));
  checkApprovalOption(options.onApproval, checked.stateSecret, 'resumeWorker');
  if (typeof state !== 'string') {
    throw new ToolgateError('STATE_INVALID', `the state to resume is ${typeof state}; pass the state string runWorker returned, unchanged`);
  }
  // Everything that can fail before the state is opened does, so that a missing API key or a
  // bad option does not use up the state (opening records it resumed).
  const setup = await prepareRun(worker, options, {
    maxSteps: 1,
    stream,
    stateSecret: checked.stateSecret,
    audit: checked.audit ?? null,
  });
  // An answer `save` writes to the project permissions file of a worker loaded from one:
  // refused before the state is used up when there is none.
  if (answersSave(answers) && !planOf(worker)) {
    throw new ToolgateError(
      'INVALID_INPUT',
      "an answer 'save' writes a rule to the project permissions file of a worker loaded from a file (loadWorker); this worker was built in code: answer 'approve' or 'always'",
    );
  }
  const opened = openState(state, checked.stateSecret, workerFingerprint(worker, setup.original), answers, checked.stateLedger ?? undefined);
  setup.maxSteps = opened.maxSteps;
  setup.runId = opened.runId;
  setup.gate.addAlways(opened.always);
  setup.network.restoreAlways(opened.always);
  const run = () =>
    audited(setup, { resumed: true }, () => {
      const responses = [];
      for (const answer of opened.answers) {
        const { pending } = answer;
        const gateAnswer: GateAnswer = answer.approved
          ? { approved: true, decision: answer.always ? ('always' as const) : ('approved' as const), decidedBy: 'user' as const, ...(answer.always ? { scope: answer.always } : {}) }
          : { approved: false, decision: 'denied' as const, decidedBy: 'user' as const, reason: answer.reason ?? 'the user denied this tool call' };
        if (answer.save) {
          // A network question's rule goes to the permissions file of the tool whose process asked.
          const owner = pending.toolName === NETWORK_TOOL ? (networkInput(pending.input)?.tool ?? pending.toolName) : pending.toolName;
          const rule = setup.gate.saveRule(setup.original.get(owner), pending, 'deferred-answer');
          if (rule) gateAnswer.savedRule = rule;
        }
        setup.gate.remember(pending.toolCallId, gateAnswer, pending.input);
        setup.emit({
          type: 'approval-answered',
          toolCallId: pending.toolCallId,
          toolName: pending.toolName,
          decision: gateAnswer.decision,
          source: 'handler',
          ...(gateAnswer.reason ? { reason: gateAnswer.reason } : {}),
          ...(answer.always ? { scope: answer.always } : {}),
        });
        // A host a process asked about: the answer is for the call the model retries (no AI
        // SDK request waits for it, and it is no call of the model's to record).
        const host = pending.toolName === NETWORK_TOOL ? networkInput(pending.input) : undefined;
        if (host) {
          if (answer.always) setup.gate.addAlways([answer.always]);
          setup.network.answerDeferred(host, { approved: gateAnswer.approved, always: answer.always !== null, ...(gateAnswer.reason ? { reason: gateAnswer.reason } : {}) });
          continue;
        }
        if (!gateAnswer.approved) setup.recorder.denied(pending.toolCallId, pending.toolName, pending.input, gateAnswer);
        responses.push({
          type: 'tool-approval-response' as const,
          approvalId: pending.approvalId,
          approved: gateAnswer.approved,
          ...(gateAnswer.reason ? { reason: gateAnswer.reason } : {}),
        });
      }
      const messages = withResponses(setup, opened.messages, responses);
      return runLoop(setup, { messages, stepsTaken: opened.steps, usage: { ...opened.usage } });
    });
  return { setup, run };
}

/**
 * The conversation of a resumed state with the answers added. When the run stopped, requests an
 * earlier "always" covered were answered at once, in the last message; the AI SDK reads the
 * answers of one message only, so the new answers join that message, and those calls are
 * recorded as "always".
 */
function withResponses(setup: RunSetup, stored: ModelMessage[], responses: ToolContent): ModelMessage[] {
  if (responses.length === 0) return stored;
  const last = stored.at(-1);
  const answered = last?.role === 'tool' ? last.content.filter((part) => part.type === 'tool-approval-response') : [];
  if (!last || answered.length === 0) return [...stored, { role: 'tool', content: responses }];
  const callOf = new Map<string, string>();
  for (const message of stored) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) if (part.type === 'tool-approval-request') callOf.set(part.approvalId, part.toolCallId);
  }
  for (const part of answered) {
    const toolCallId = callOf.get(part.approvalId);
    if (part.approved && toolCallId) setup.gate.noteAlways(toolCallId);
  }
  return [...stored.slice(0, -1), { role: 'tool', content: [...(last.content as ToolContent), ...responses] }];
}

/**
 * Continues a run that stopped with `approval-required`, in this process or another: `answers`
 * maps each pending `id` to `'approve' | 'always' | 'save' | 'deny' | { decision: 'deny', reason }`
 * (or `{ decision: 'always', scope }` for a wider, explicit "always"; `'save'` writes the call's
 * scope as a rule to the project permissions file of a worker loaded from a file, see
 * docs/permissions.md). The core first checks that the
 * state was signed with `stateSecret`, belongs to this version of the worker, was never resumed
 * before, and that the answers are for its pending requests (`STATE_INVALID` otherwise); then the
 * approved calls run (each exactly once) and the loop goes on. It may stop again with
 * `approval-required` when `onApproval` is `'defer'`.
 */
export async function resumeWorker(
  worker: RunnableWorker,
  state: string,
  answers: ApprovalAnswers,
  options: ResumeWorkerOptions,
): Promise<WorkerRunResult> {
  const { run } = await prepareResumedRun(worker, state, answers, options, false);
  return run();
}
