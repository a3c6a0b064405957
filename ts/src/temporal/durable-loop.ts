/**
 * The agent loop of a durable run, as the workflow runs it: model step, the calls of the step
 * (those that need no approval at once; the others asked, waited for, then run or recorded as
 * denied), the results back to the model, until a loop-breaking tool, an answer without calls,
 * or the step limit. It mirrors `runLoop` (`ts/src/worker/run-loop.ts`) step for step; what it
 * cannot do deterministically (call the model, decide about or run a call) it asks of the
 * activities it is given.
 *
 * Pure code: the workflow bundle imports it; waiting and the clock are handed in.
 */
import type { ModelMessage } from 'ai';
import { callAnswer, checkAnswers } from './answers.js';
import type {
  ActivityTimeouts,
  CallAnswer,
  CoveredCallsInput,
  ModelStepInput,
  ModelStepResult,
  PendingToolCall,
  PlannedCall,
  RunPlan,
  RunRef,
  ToolCallInput,
  ToolCallResult,
  ToolgateAnswerResult,
  ToolgateAnswers,
  ToolgateRunInput,
  ToolgateRunResult,
  ToolResultPart,
} from './contract.js';
import type { AlwaysScope, RunUsage, StepRecord, ToolCallRecord } from '../worker/types.js';

/** What the loop asks of the outside world (activities, and the workflow's own waiting and clock). */
export interface RunLoopActivities {
  modelStep(input: ModelStepInput): Promise<ModelStepResult>;
  /** Runs (or, with a denial, records) one call; a call whose worker host died comes back with its outcome unknown. */
  toolCall(input: ToolCallInput): Promise<ToolCallResult>;
  /** For each call, whether one of the "always" scopes covers it (the core decides). */
  coveredCalls(input: CoveredCallsInput): Promise<boolean[]>;
  /** Resolves `true` when `settled()` holds, `false` when `timeoutMs` passed first (waits forever without one). */
  wait(settled: () => boolean, timeoutMs: number | undefined): Promise<boolean>;
  /** The workflow's clock (deterministic in a workflow). */
  now(): number;
}

const RUN_INPUT_KEYS = ['worker', 'input', 'maxSteps', 'approvalTimeout'];

/** What is wrong with `toolgateRun`'s argument, or `undefined` when its shape is right (values are checked by the core). */
export function checkRunInput(run: unknown): string | undefined {
  if (run === null || typeof run !== 'object' || Array.isArray(run)) {
    return `toolgateRun takes one argument { worker, input, maxSteps?, approvalTimeout? }, not ${run === null ? 'null' : Array.isArray(run) ? 'a list' : typeof run}`;
  }
  const value = run as Record<string, unknown>;
  const unknown = Object.keys(value).filter((key) => !RUN_INPUT_KEYS.includes(key));
  if (unknown.length > 0) return `toolgateRun: unknown key '${unknown[0]}'; accepted keys are ${RUN_INPUT_KEYS.join(', ')}`;
  if (typeof value.worker !== 'string' || !value.worker.startsWith('/')) {
    return `toolgateRun: 'worker' must be the absolute path of the worker file on the worker hosts, not ${JSON.stringify(value.worker) ?? 'undefined'}`;
  }
  if (typeof value.input !== 'string') return `toolgateRun: 'input' must be the task as a string, not ${typeof value.input}`;
  if (value.maxSteps !== undefined && typeof value.maxSteps !== 'number') return `toolgateRun: 'maxSteps' must be a number, not ${typeof value.maxSteps}`;
  const timeout = value.approvalTimeout;
  if (timeout !== undefined && typeof timeout !== 'string' && typeof timeout !== 'number') {
    return `toolgateRun: 'approvalTimeout' must be milliseconds or a duration such as '3 days', not ${typeof timeout}`;
  }
  return undefined;
}

/** Why a call's activity was lost, in words for the record and the model. */
export function lostCallReason(timeoutType: string | undefined, message: string, timeouts: ActivityTimeouts): string {
  if (timeoutType === 'HEARTBEAT') {
    return `the worker host running it stopped answering (no heartbeat for ${timeouts.heartbeatTimeoutMs / 1000} s) before the call finished`;
  }
  if (timeoutType === 'START_TO_CLOSE') return `it did not finish within the tool call timeout (${timeouts.toolCallTimeoutMs / 1000} s)`;
  if (timeoutType) return `its activity timed out (${timeoutType})`;
  return `its activity failed: ${message}`;
}

function addUsage(total: RunUsage, step: RunUsage): void {
  total.inputTokens += step.inputTokens;
  total.outputTokens += step.outputTokens;
  total.totalTokens += step.totalTokens;
}

/**
 * One durable run: the conversation, the steps, the records, the "always" answers given, and
 * the calls waiting for answers (which the workflow's query and update reach through
 * `pendingCalls`, `checkAnswers` and `answer`).
 */
export class RunLoop {
  readonly #ref: RunRef;
  readonly #plan: RunPlan;
  readonly #activities: RunLoopActivities;
  readonly #approvalTimeout: ToolgateRunInput['approvalTimeout'];
  readonly #messages: ModelMessage[] = [];
  readonly #steps: StepRecord[] = [];
  readonly #records: ToolCallRecord[] = [];
  readonly #usage: RunUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  readonly #always: AlwaysScope[] = [];
  readonly #pending = new Map<string, PendingToolCall>();
  readonly #answers = new Map<string, CallAnswer>();

  constructor(ref: RunRef, plan: RunPlan, activities: RunLoopActivities, approvalTimeout?: ToolgateRunInput['approvalTimeout']) {
    this.#ref = ref;
    this.#plan = plan;
    this.#activities = activities;
    this.#approvalTimeout = approvalTimeout;
  }

  /** The calls waiting for an answer now (the `toolgate.pending` query). */
  pendingCalls(): PendingToolCall[] {
    return [...this.#pending.values()];
  }

  /** The update's validator: throws when `given` is not a set of answers for calls waiting now. */
  checkAnswers(given: unknown): void {
    checkAnswers(given, this.#pending);
  }

  /** The update: takes the answers (checked), an "always" at once for the rest of the run. */
  answer(given: ToolgateAnswers): ToolgateAnswerResult {
    const answered: string[] = [];
    for (const [id, answer] of Object.entries(given)) {
      const call = this.#pending.get(id);
      if (!call) continue;
      const gateAnswer = callAnswer(answer, call);
      if (gateAnswer.scope) this.#addAlways(gateAnswer.scope);
      this.#answers.set(id, gateAnswer);
      this.#pending.delete(id);
      answered.push(id);
    }
    return { answered, pending: this.pendingCalls() };
  }

  #addAlways(scope: AlwaysScope): void {
    if (!this.#always.some((known) => JSON.stringify(known) === JSON.stringify(scope))) this.#always.push(scope);
  }

  #finish(status: ToolgateRunResult['status'], text: string, question?: string): ToolgateRunResult {
    return {
      status,
      text,
      ...(question === undefined ? {} : { question }),
      runId: this.#ref.runId,
      steps: this.#steps,
      toolCalls: this.#records,
      usage: this.#usage,
      messages: this.#messages,
    };
  }

  /** Runs the loop from the task to the run's end. */
  async run(input: string): Promise<ToolgateRunResult> {
    this.#messages.push({ role: 'user', content: input });
    for (let step = 1; ; step++) {
      const reply = await this.#activities.modelStep({
        ...this.#ref,
        messages: this.#messages,
        always: [...this.#always],
        step,
        maxSteps: this.#plan.maxSteps,
      });
      this.#messages.push(...reply.messages);
      this.#steps.push(reply.step);
      addUsage(this.#usage, reply.usage);
      for (const call of reply.calls) if (call.action === 'rejected') this.#records.push(call.record);
      if (reply.end) return this.#finish(reply.end.status, reply.end.text, reply.end.question);
      if (reply.retry) {
        this.#messages.push({ role: 'tool', content: [reply.retry] } as ModelMessage);
        continue;
      }
      if (reply.calls.length === 0) return this.#finish('completed', reply.text);

      const results: (ToolResultPart | undefined)[] = reply.calls.map((call) => (call.action === 'rejected' ? call.result : undefined));
      // Calls that need no approval (or are answered already) run at once, as the AI SDK runs them.
      await this.#runCalls(reply.calls, results, (call) => (call.action === 'run' ? null : call.action === 'answered' ? call.answer : undefined));
      const asking = reply.calls.flatMap((call, index) => (call.action === 'ask' ? [{ call, index }] : []));
      if (asking.length > 0 && step < this.#plan.maxSteps) {
        const asked = asking.map(({ call, index }) => ({ id: `${step}.${index + 1}`, ...(call as Extract<PlannedCall, { action: 'ask' }>).request }));
        const answers = await this.#waitForAnswers(asked);
        const byIndex = new Map(asking.map(({ index }, position) => [index, answers[position]!]));
        await this.#runCalls(reply.calls, results, (_call, index) => byIndex.get(index));
      }
      const content = results.filter((result): result is ToolResultPart => result !== undefined);
      if (content.length > 0) this.#messages.push({ role: 'tool', content } as ModelMessage);
      // At the step limit the calls that asked were not asked (as in runWorker): the run stops.
      if (step >= this.#plan.maxSteps) return this.#finish('max-steps', reply.text);
    }
  }

  /**
   * Runs the calls `answerOf` selects (`null`: no approval needed; an answer: the gate's;
   * `undefined`: not now) concurrently, and keeps results and records in the model's order.
   */
  async #runCalls(
    calls: readonly PlannedCall[],
    results: (ToolResultPart | undefined)[],
    answerOf: (call: PlannedCall, index: number) => CallAnswer | null | undefined,
  ): Promise<void> {
    const selected = calls.flatMap((call, index) => {
      const answer = answerOf(call, index);
      return answer === undefined ? [] : [{ call, index, answer }];
    });
    const done = await Promise.all(
      selected.map(({ call, answer }) =>
        this.#activities.toolCall({
          ...this.#ref,
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          input: call.input,
          ...(answer ? { answer } : {}),
        }),
      ),
    );
    for (const [position, { index }] of selected.entries()) {
      const outcome = done[position]!;
      results[index] = outcome.result;
      this.#records.push(outcome.record);
    }
  }

  /**
   * Exposes `asked` as pending and waits — running nothing — until every call is answered, or
   * the approval timeout passes (the rest are denied, with a reason the model reads). An
   * "always" given meanwhile may cover calls still waiting: the core is asked which.
   */
  async #waitForAnswers(asked: readonly PendingToolCall[]): Promise<CallAnswer[]> {
    for (const call of asked) this.#pending.set(call.id, call);
    const timeoutMs = this.#plan.approvalTimeoutMs;
    const deadline = timeoutMs === undefined ? undefined : this.#activities.now() + timeoutMs;
    let alwaysSeen = this.#always.length;
    for (;;) {
      const seen = alwaysSeen;
      const settled = () => this.#pending.size === 0 || this.#always.length !== seen;
      // At least 1 ms: a timer of 0 is no timer.
      const remaining = deadline === undefined ? undefined : Math.max(1, deadline - this.#activities.now());
      const inTime = await this.#activities.wait(settled, remaining);
      if (!inTime || this.#pending.size === 0) break;
      alwaysSeen = this.#always.length;
      const waiting = this.pendingCalls();
      const covered = await this.#activities.coveredCalls({
        ...this.#ref,
        always: [...this.#always],
        calls: waiting.map(({ toolCallId, toolName, input }) => ({ toolCallId, toolName, input })),
      });
      for (const [position, call] of waiting.entries()) {
        if (!covered[position] || !this.#pending.has(call.id)) continue;
        this.#answers.set(call.id, { approved: true, decision: 'always', decidedBy: 'always' });
        this.#pending.delete(call.id);
      }
    }
    for (const call of this.pendingCalls()) {
      this.#answers.set(call.id, {
        approved: false,
        decision: 'denied',
        decidedBy: 'no-handler',
        reason: `denied: nobody answered within the approval timeout (${String(this.#approvalTimeout ?? `${timeoutMs} ms`)}), so the call was not run`,
      });
      this.#pending.delete(call.id);
    }
    return asked.map((call) => {
      const answer = this.#answers.get(call.id)!;
      this.#answers.delete(call.id);
      return answer;
    });
  }
}
