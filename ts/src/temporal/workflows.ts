/**
 * toolgate's workflow module: `workflowsPath` points here (in `dist/`), and Temporal's bundler
 * bundles it for the workflow sandbox.
 *
 * Deterministic code only: it imports `@temporalio/workflow` and toolgate's pure modules
 * (`contract.ts`, `answers.ts`, `durable-loop.ts`) — never the native addon, `ai`, Node's built-ins,
 * the clock or randomness. Every decision about a call (does it need approval, does an "always"
 * cover it, may it run, what it did) is made on a worker host, in an activity, by the same code
 * as `runWorker`; the workflow keeps the conversation and waits.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  defineQuery,
  defineUpdate,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import {
  ANSWER_UPDATE,
  PENDING_QUERY,
  type PendingToolCall,
  type RunEndInput,
  type RunPlan,
  type ToolgateActivityFunctions,
  type ToolgateAnswerResult,
  type ToolgateAnswers,
  type ToolgateRunInput,
  type ToolgateRunResult,
} from './contract.js';
import { checkRunInput, lostCallReason, RunLoop, type RunLoopActivities } from './durable-loop.js';

const pendingQuery = defineQuery<PendingToolCall[]>(PENDING_QUERY);
const answerUpdate = defineUpdate<ToolgateAnswerResult, [ToolgateAnswers]>(ANSWER_UPDATE);

// Plan loading discovers executable tools and connects MCP servers: minutes at most, and
// retried (it runs no tool).
const { toolgatePlan } = proxyActivities<ToolgateActivityFunctions>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 3 },
});
const { toolgateCoveredCalls } = proxyLocalActivities<ToolgateActivityFunctions>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 3 },
});

/** A refusal toolgate itself reported (a changed worker file, a bad option): it ends the run. */
function refusalOf(error: unknown): ApplicationFailure | undefined {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable ? cause : undefined;
}

/** The run's error for a refusal: the activity's message (it names the file or option) and code. */
function runFailure(refusal: ApplicationFailure): ApplicationFailure {
  return ApplicationFailure.nonRetryable(refusal.message, refusal.type ?? 'CONFIG_INVALID');
}

/**
 * Runs a worker file on Temporal: each model step and each tool call is an activity on a worker
 * host, approvals wait as the `toolgate.pending` query and are answered by the `toolgate.answer`
 * update. Returns `runWorker`'s result shape (the workflow id is the run id).
 */
export async function toolgateRun(run: ToolgateRunInput): Promise<ToolgateRunResult> {
  const problem = checkRunInput(run);
  if (problem) throw ApplicationFailure.nonRetryable(problem, 'INVALID_INPUT');
  const info = workflowInfo();
  const runId = info.workflowId;
  // The handlers exist from the first moment: an answer before any call waits is rejected.
  let loop: RunLoop | undefined;
  setHandler(pendingQuery, () => loop?.pendingCalls() ?? []);
  setHandler(answerUpdate, (given: ToolgateAnswers) => loop!.answer(given), {
    validator: (given: ToolgateAnswers) => {
      if (!loop) throw new TypeError('the run has not started yet: no call is waiting');
      loop.checkAnswers(given);
    },
  });

  let plan: RunPlan;
  try {
    plan = await toolgatePlan({ ...run, runId });
  } catch (error) {
    const refusal = refusalOf(error);
    throw refusal ? runFailure(refusal) : error;
  }
  const ref = { worker: run.worker, identity: plan.identity, runId };
  const { timeouts } = plan;
  const heartbeat = { heartbeatTimeout: timeouts.heartbeatTimeoutMs };
  const modelSteps = proxyActivities<ToolgateActivityFunctions>({
    ...heartbeat,
    startToCloseTimeout: timeouts.modelStepTimeoutMs,
    retry: { maximumAttempts: 3 },
  });
  // At most once: a call of a tool that may have an effect is never retried blindly.
  const effectfulCalls = proxyActivities<ToolgateActivityFunctions>({
    ...heartbeat,
    startToCloseTimeout: timeouts.toolCallTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
  const readOnlyCalls = proxyActivities<ToolgateActivityFunctions>({
    ...heartbeat,
    startToCloseTimeout: timeouts.toolCallTimeoutMs,
    retry: { maximumAttempts: timeouts.readOnlyAttempts },
  });
  // Recording (a denial, a lost call, the end of the run) runs no tool: retried.
  const records = proxyActivities<ToolgateActivityFunctions>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 } });

  const activities: RunLoopActivities = {
    modelStep: (input) => modelSteps.toolgateModelStep(input),
    toolCall: async (input) => {
      if (input.answer && !input.answer.approved) return records.toolgateToolCall(input);
      const readOnly = plan.readOnlyTools.includes(input.toolName);
      try {
        return await (readOnly ? readOnlyCalls : effectfulCalls).toolgateToolCall(input);
      } catch (error) {
        if (isCancellation(error) || refusalOf(error)) throw error;
        const cause = error instanceof ActivityFailure ? error.cause : error;
        const timeout = cause instanceof TimeoutFailure ? cause.timeoutType : undefined;
        const message = cause instanceof Error ? cause.message : String(cause);
        return records.toolgateLostCall({ ...input, reason: lostCallReason(timeout, message, timeouts) });
      }
    },
    coveredCalls: (input) => toolgateCoveredCalls(input),
    wait: async (settled, timeoutMs) => {
      if (timeoutMs === undefined) {
        await condition(settled);
        return true;
      }
      return condition(settled, timeoutMs);
    },
    now: () => Date.now(),
  };

  loop = new RunLoop(ref, plan, activities, run.approvalTimeout);
  const startedAt = info.startTime.getTime();
  const runEnd = (end: RunEndInput['end']) =>
    // Written also when the run is cancelled.
    CancellationScope.nonCancellable(() => records.toolgateRunEnd({ ...ref, durationMs: Date.now() - startedAt, end }));
  try {
    const result = await loop.run(run.input);
    if (plan.audited) {
      await runEnd({ status: result.status, steps: result.steps.length, usage: result.usage, calls: result.toolCalls.length });
    }
    return result;
  } catch (error) {
    const refusal = refusalOf(error);
    if (plan.audited) {
      const failure = refusal ?? (error instanceof Error ? error : new Error(String(error)));
      await runEnd({ error: failure.message, ...(refusal?.type ? { errorCode: refusal.type } : {}) }).catch(() => undefined);
    }
    throw refusal ? runFailure(refusal) : error;
  }
}
