import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import type { ApprovalDecision } from '../approval/approval.js';
import type { NamedTool } from '../approval/named-tool.js';
import type { native } from '../native/binding.js';

/** What `runWorker` needs of a worker; `loadWorker` returns a superset of it. */
export interface RunnableWorker {
  name: string;
  instructions?: string;
  /** `provider:model` (see `resolveModel`) or an AI SDK model. */
  model?: string | LanguageModel;
  /** Tools already gated with `wrapWithDefaultApproval`; blocked ones are never offered. */
  tools: ToolSet | readonly NamedTool[];
  maxSteps?: number;
  /** Model patterns (`*` wildcards) the worker is written for; a named model outside them is refused. */
  compatibleModels?: readonly string[];
  /**
   * `xml`: the model calls tools by writing Forge's `<tool>{...}</tool>` blocks in its text (for
   * models without native tool calling; see `xmlToolCalls`). Default `native`.
   */
  toolCallFormat?: 'native' | 'xml';
  /** `false` refuses an empty task (golem-forge's `allow_empty_input`). Default true. */
  allowEmptyInput?: boolean;
  /**
   * A JSON Schema (object, or its JSON text) the `task_completion` result must match (golem-forge's
   * `output_schema_ref`); a result that does not is sent back to the model to fix.
   */
  outputSchema?: object | string;
}

/**
 * What an "always" answer covers, with the sentence to show before someone picks it:
 * `call` — exactly this call (the default); `prefix` — command tools: every command whose words
 * start with `prefix`; `tool` — every call of the tool.
 */
export interface AlwaysScope {
  kind: 'call' | 'prefix' | 'tool';
  tool: string;
  /** `call`: the input of the approved call. */
  input?: unknown;
  /** `prefix`: the words a command must start with. */
  prefix?: string[];
  description: string;
}

/**
 * A wider scope for "always", chosen explicitly: `'call'` (exactly this call, the default),
 * `'tool'` (every call of the tool) or `{ prefix: 'rm -rf' }` (command tools: commands starting
 * with these words, which must cover the call being answered).
 */
export type AlwaysScopeChoice = 'call' | 'tool' | { prefix: string };

/** A tool call waiting for a human decision. */
export interface ApprovalRequest {
  toolName: string;
  input: unknown;
  toolCallId: string;
  /** What answering "always" covers: exactly this call. Show it before the person picks. */
  scope: AlwaysScope;
  /** The command's words, for command tools (`shell`, `cli_execute`). */
  argv?: string[];
}

/**
 * The answer to an approval request: run it, refuse it (the model sees the reason), or run it
 * and every later call the "always" scope covers in this run — exactly this call unless a wider
 * `scope` is chosen explicitly.
 */
export type ApprovalAnswer =
  | 'approve'
  | 'always'
  | 'deny'
  | { decision: 'approve' }
  | { decision: 'always'; scope?: AlwaysScopeChoice }
  | { decision: 'deny'; reason?: string };

/** What a handler gets besides the request: the run's signal (aborted on Ctrl-C or by the caller). */
export interface ApprovalContext {
  signal?: AbortSignal;
}

export type ApprovalHandler = (request: ApprovalRequest, context: ApprovalContext) => ApprovalAnswer | Promise<ApprovalAnswer>;

/**
 * The decision recorded for a call the model made: `preApproved`, `approved` (by a person),
 * `always` (an earlier "always" covered it), `denied`, `blocked` (its approval or a rule),
 * `refused` (a policy, when it ran), `unknown-tool`, `invalid-input`.
 */
export type CallDecision = native.CallDecision;

/** Who decided: `config`, `rule`, `user`, `always`, `no-handler`, `policy` or `schema`. */
export type DecidedBy = native.DecidedBy;

/** Something that happened in a run. Events of a worker called by another carry its name in `worker`. */
export type RunEvent = RunEventBody & { worker?: string };

export type RunEventBody =
  | { type: 'step-start'; step: number }
  | { type: 'step-end'; step: number; text: string; finishReason: string; toolCalls: number }
  /** A tool starts; `decision` is what let it start (the final one is in `call-recorded`). */
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown; decision: 'preApproved' | 'approved' | 'always' }
  | { type: 'approval-asked'; toolCallId: string; toolName: string; input: unknown; scope: AlwaysScope }
  | {
      type: 'approval-answered';
      toolCallId: string;
      toolName: string;
      decision: 'approved' | 'always' | 'denied';
      reason?: string;
      /** Who answered: the handler, an earlier "always", or nobody (fail closed). */
      source: 'handler' | 'always' | 'no-handler';
      /** For `always`: what it covers from now on. */
      scope?: AlwaysScope;
    }
  | { type: 'tool-result'; toolCallId: string; toolName: string; output: unknown; durationMs: number }
  | { type: 'tool-error'; toolCallId: string; toolName: string; error: string; errorCode?: string; durationMs: number }
  /** Every call the model made ends with one of these, whatever was decided. */
  | { type: 'call-recorded'; record: ToolCallRecord }
  /** Text the model is writing (`streamWorker` and the CLI only). */
  | { type: 'text-delta'; step: number; text: string }
  | { type: 'error'; error: unknown };

/** The audit log of a run: JSON lines appended to `file` when the run ends (see docs/agent.md). */
export interface AuditOptions {
  file: string;
  /** Regular expressions (Rust syntax) redacted besides the worker's `deny_output` patterns and secret variables. */
  redact?: readonly string[];
}

export interface RunWorkerOptions {
  /** Overrides the worker's model. */
  model?: string | LanguageModel;
  /**
   * Asked for every approval request; without it every request is denied (fail closed). `'defer'`
   * stops the run at the first step that needs approvals and returns them with a signed state
   * for `resumeWorker` (needs `stateSecret`).
   */
  onApproval?: ApprovalHandler | 'defer';
  /** Model steps for the whole run (default: the worker's `max_steps`, else 20). */
  maxSteps?: number;
  /** Stops the loop and kills running tool processes; `runWorker` then rejects with the reason. */
  signal?: AbortSignal;
  onEvent?: (event: RunEvent) => void;
  /** Earlier conversation to continue (for example after an `ask_question`). */
  messages?: ModelMessage[];
  /** Signs deferred states (at least 32 bytes); the same secret resumes them. */
  stateSecret?: string;
  /** Appends the run's events to a JSON Lines file (the worker file's `audit.file` otherwise). */
  audit?: AuditOptions;
}

/** `resumeWorker` options. */
export interface ResumeWorkerOptions {
  model?: string | LanguageModel;
  /** Asked for approval requests of the rest of the run, or `'defer'` to stop again. */
  onApproval?: ApprovalHandler | 'defer';
  signal?: AbortSignal;
  onEvent?: (event: RunEvent) => void;
  /** The secret the state was signed with. */
  stateSecret: string;
  /**
   * The directory where resumed states are recorded so that none is resumed twice (default: a
   * private directory in the system's temporary directory). Give a shared directory when
   * several machines resume states.
   */
  stateLedger?: string;
  audit?: AuditOptions;
}

/** How each pending request is answered in `resumeWorker`, by its `id`. */
export type ApprovalAnswers = Record<string, ApprovalAnswer>;

export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  input: unknown;
  decision: CallDecision;
  decidedBy: DecidedBy;
  /** Time spent in `execute`; 0 for calls that did not run. */
  durationMs: number;
  output?: unknown;
  error?: string;
  /** The `ToolgateError` code of a failed or refused call (`COMMAND_BLOCKED`, `PATH_OUTSIDE_ROOT`, …). */
  errorCode?: string;
  /** The reason a denied call was refused. */
  reason?: string;
  /** For `always`: what the answer covers. */
  scope?: AlwaysScope;
}

export interface StepRecord {
  step: number;
  text: string;
  finishReason: string;
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
}

export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** Why the run ended. */
export type RunStatus = 'completed' | 'task-completed' | 'question' | 'conversed' | 'max-steps' | 'approval-required';

/** A call waiting for an answer in a deferred run: answer it by `id`. */
export interface PendingApproval {
  id: string;
  toolName: string;
  input: unknown;
  toolCallId: string;
  /** What "always" covers for this request: exactly this call. */
  scope: AlwaysScope;
  argv?: string[];
}

export interface WorkerRunResult {
  status: RunStatus;
  /** The final answer: the `task_completion` result, the question, the `converse` message, or the model's last text. */
  text: string;
  /** Set when the run ended with `ask_question`. */
  question?: string;
  /** Set with `approval-required`: the requests to answer. */
  pending?: PendingApproval[];
  /** Set with `approval-required`: the signed state to pass to `resumeWorker`. */
  state?: string;
  /** Identifies the run across resumes (and in the audit log). */
  runId: string;
  /** The steps of this call (a resumed run numbers them on from the state). */
  steps: StepRecord[];
  /** The calls of this call (a resumed run starts with the answered requests). */
  toolCalls: ToolCallRecord[];
  usage: RunUsage;
  /** The whole conversation, to continue it with `options.messages`. */
  messages: ModelMessage[];
}

export type { ApprovalDecision };
