/**
 * What toolgate's workflow and its activities say to each other, and what a client says to the
 * workflow. Every value here travels in workflow history as JSON, so it holds data only: no
 * functions, no secrets (model keys stay on the worker hosts), no file contents beyond what
 * the model saw.
 *
 * This module is imported by the workflow bundle: it must stay free of imports other than types.
 */
import type { ModelMessage } from 'ai';
import type { AlwaysScope, DecidedBy, RunStatus, RunUsage, StepRecord, ToolCallRecord } from '../worker/types.js';

/** The workflow type: `client.workflow.start(TOOLGATE_RUN, { args: [input], … })`. */
export const TOOLGATE_RUN = 'toolgateRun';
/** The query that lists the calls waiting for an answer. */
export const PENDING_QUERY = 'toolgate.pending';
/** The update that answers them. */
export const ANSWER_UPDATE = 'toolgate.answer';

/**
 * A duration as Temporal takes it: milliseconds, or a string such as `'90s'`, `'15 minutes'`,
 * `'3 days'`.
 */
export type DurationText = string | number;

/** The argument of `toolgateRun`. */
export interface ToolgateRunInput {
  /** The absolute path of the worker file on the worker hosts (the same path on every host). */
  worker: string;
  /** The task. */
  input: string;
  /** Model steps for the whole run (default: the worker's `max_steps`, else the core's default). */
  maxSteps?: number;
  /**
   * How long calls wait for an answer before they are denied (the model is told why). Without
   * it they wait until answered or the workflow is cancelled.
   */
  approvalTimeout?: DurationText;
}

/** The result of `toolgateRun`: `runWorker`'s result, without `pending` and `state` (a durable run waits instead). */
export interface ToolgateRunResult {
  status: Exclude<RunStatus, 'approval-required'>;
  text: string;
  question?: string;
  /** The workflow id: also the run id of the audit log. */
  runId: string;
  steps: StepRecord[];
  toolCalls: ToolCallRecord[];
  usage: RunUsage;
  messages: ModelMessage[];
}

/** A call waiting for an answer: what `toolgate.pending` lists (a deferred run's `pending`, plus the input's size and digest). */
export interface PendingToolCall {
  /** Answer it by this id. */
  id: string;
  toolName: string;
  /** The whole input, never shortened. */
  input: unknown;
  toolCallId: string;
  /**
   * What answering `'always'` covers (decided by the core). `null` when the input is too long
   * to review (`reviewable: false`): such a call may be approved once, not for always.
   */
  scope: AlwaysScope | null;
  /** The command's words, for command tools. */
  argv?: string[];
  /**
   * The input as a person reviews it — show this, not `input`: the one display rule of every
   * approval surface (keys and values as lines, long whitespace runs counted, control and
   * invisible characters named; cut with its size and digest when too long).
   */
  review: string;
  /** Whether `review` shows the whole input (its display is at most `MAX_REVIEWABLE_INPUT_BYTES`). */
  reviewable: boolean;
  /** The size of the input as canonical JSON text (keys sorted), in bytes. */
  inputBytes: number;
  /** SHA-256 of the input as canonical JSON text (hex): what an approver saw can be matched with what runs. */
  inputSha256: string;
}

/** An answer to one pending call (`toolgate.answer` maps pending ids to these). */
export type ToolgateAnswer =
  | 'approve'
  | 'deny'
  | 'always'
  | { decision: 'approve' | 'deny' | 'always'; reason?: string };

/** The argument of `toolgate.answer`: pending id → answer. */
export type ToolgateAnswers = Record<string, ToolgateAnswer>;

/** What `toolgate.answer` returns: the ids it answered and the calls still waiting. */
export interface ToolgateAnswerResult {
  answered: string[];
  pending: PendingToolCall[];
}

/** How a call was answered (the approval gate's answer, as data). */
export interface CallAnswer {
  approved: boolean;
  decision: 'approved' | 'always' | 'denied';
  decidedBy: DecidedBy;
  reason?: string;
  scope?: AlwaysScope;
}

// ---- between the workflow and its activities ----

/** What every activity of a run gets: which worker, pinned to which identity, in which run. */
export interface RunRef {
  /** The worker file's absolute path. */
  worker: string;
  /** The plan identity the run started with (the core's JSON text). */
  identity: string;
  runId: string;
}

/** The timeouts and retries the worker host configured (`toolgateActivities` options). */
export interface ActivityTimeouts {
  /** Milliseconds without a heartbeat after which a model step or tool call counts as lost. */
  heartbeatTimeoutMs: number;
  /** The longest a tool call may take. */
  toolCallTimeoutMs: number;
  /** The longest a model step may take. */
  modelStepTimeoutMs: number;
  /** Attempts of a call of a tool that only reads (others get exactly one). */
  readOnlyAttempts: number;
}

/** What the plan activity tells the workflow when the run starts. */
export interface RunPlan {
  /** The worker's name. */
  name: string;
  /** The plan identity the whole run is pinned to (recorded in history here). */
  identity: string;
  /** Model steps for the run, checked by the core. */
  maxSteps: number;
  /** Tools whose calls only read (the core's list): their activity may be retried. */
  readOnlyTools: string[];
  /** Whether an audit log is written (then the run's end is appended by an activity too). */
  audited: boolean;
  /** `approvalTimeout` in milliseconds, checked. */
  approvalTimeoutMs?: number;
  timeouts: ActivityTimeouts;
}

/** The plan activity's input. */
export interface PlanInput extends ToolgateRunInput {
  runId: string;
}

/** The model step activity's input. */
export interface ModelStepInput extends RunRef {
  messages: ModelMessage[];
  /** The "always" answers given so far in the run (scopes made by the core). */
  always: AlwaysScope[];
  /** The number of this step (1-based). */
  step: number;
  maxSteps: number;
}

/**
 * One call of a model step and what to do with it, decided on the worker host with the same
 * code as `runWorker` (the tool's `needsApproval`, the "always" answers, the AI SDK's schema check).
 */
export type PlannedCall = {
  toolCallId: string;
  toolName: string;
  input: unknown;
} & (
  | { action: 'run' }
  | { action: 'ask'; request: Omit<PendingToolCall, 'id'> }
  /** Answered already: by an earlier "always", or denied by policy (an input nobody can review). */
  | { action: 'answered'; answer: CallAnswer }
  /** Refused before any tool saw it (unknown tool, invalid input); recorded already. */
  | { action: 'rejected'; result: ToolResultPart; record: ToolCallRecord }
);

/** A result part of the tool message that answers a model step, as the AI SDK writes it. */
export interface ToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: unknown;
}

/** The model step activity's result. */
export interface ModelStepResult {
  /** The model's reply (the assistant message), to append to the conversation. */
  messages: ModelMessage[];
  step: StepRecord;
  usage: RunUsage;
  finishReason: string;
  text: string;
  /** The run ends here: a loop-breaking tool was called. */
  end?: { status: 'task-completed' | 'question' | 'conversed' | 'max-steps'; text: string; question?: string };
  /** `task_completion` broke the output schema: this result tells the model why; the loop goes on. */
  retry?: ToolResultPart;
  /** The calls of the reply, loop-breaking tools left out, in the model's order. */
  calls: PlannedCall[];
}

/** The tool call activity's input. */
export interface ToolCallInput extends RunRef {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** The answer when the call needed approval (a denial records the call without running it). */
  answer?: CallAnswer;
}

/** The tool call activity's result. */
export interface ToolCallResult {
  result: ToolResultPart;
  record: ToolCallRecord;
}

/** A call whose activity was lost (its worker host died): recorded with its outcome unknown. */
export interface LostCallInput extends ToolCallInput {
  /** What happened to the activity, for the record and the model. */
  reason: string;
}

/** The covered-calls activity's input: which of these calls an "always" answer covers now. */
export interface CoveredCallsInput extends RunRef {
  always: AlwaysScope[];
  calls: { toolCallId: string; toolName: string; input: unknown }[];
}

/** The run-end activity's input: the audit log's last line of the run. */
export interface RunEndInput extends RunRef {
  /** How long the run took, from the workflow's start. */
  durationMs: number;
  end: { status: RunStatus; steps: number; usage: RunUsage; calls: number } | { error: string; errorCode?: string };
}

/** The activities toolgate's workflow calls, by their registered names. */
export interface ToolgateActivityFunctions {
  toolgatePlan(input: PlanInput): Promise<RunPlan>;
  toolgateModelStep(input: ModelStepInput): Promise<ModelStepResult>;
  toolgateToolCall(input: ToolCallInput): Promise<ToolCallResult>;
  toolgateLostCall(input: LostCallInput): Promise<ToolCallResult>;
  toolgateCoveredCalls(input: CoveredCallsInput): Promise<boolean[]>;
  toolgateRunEnd(input: RunEndInput): Promise<void>;
}
