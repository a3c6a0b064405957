import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import type { ApprovalDecision } from '../approval/approval.js';
import type { NamedTool } from '../approval/named-tool.js';
import type {
  AlwaysScope,
  AlwaysScopeChoice,
  ApprovalAnswer,
  ApprovalContext,
  ApprovalHandler,
  ApprovalRequest,
  CallDecision,
  DecidedBy,
  NetworkConnectionRecord,
  RunEvent,
  RunEventBody,
  RunStatus,
  RunUsage,
  SavedBy,
  SavedRule,
  SaveOffer,
  ToolCallRecord,
} from '../run/types.js';

// The types of one gated call and its events live with the call pipeline (`run/`); the worker
// API names them too.
export type {
  AlwaysScope,
  AlwaysScopeChoice,
  ApprovalAnswer,
  ApprovalContext,
  ApprovalHandler,
  ApprovalRequest,
  CallDecision,
  DecidedBy,
  NetworkConnectionRecord,
  RunEvent,
  RunEventBody,
  RunStatus,
  RunUsage,
  SavedBy,
  SavedRule,
  SaveOffer,
  ToolCallRecord,
};

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

export interface StepRecord {
  step: number;
  text: string;
  finishReason: string;
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
}

/**
 * A call waiting for an answer in a deferred run: answer it by `id`. Show `review` (the whole
 * input, readable, nothing hidden) to the person who decides.
 */
export interface PendingApproval {
  id: string;
  toolName: string;
  input: unknown;
  toolCallId: string;
  /** What "always" covers for this request: exactly this call. */
  scope: AlwaysScope;
  argv?: string[];
  /** The input as a person reviews it (see `ApprovalRequest.review`). */
  review: string;
  /** Whether `review` shows the whole input; when false only `approve` or `deny` is accepted. */
  reviewable: boolean;
  /** The size of the input as canonical JSON, in bytes. */
  inputBytes: number;
  /** SHA-256 (hex) of the input as canonical JSON. */
  inputSha256: string;
  /** Present when the answer `save` is accepted: the rule it writes, and the file. */
  save?: SaveOffer;
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
  /** Every connection through the egress proxy (network by host) during this call, with its decision. */
  connections: NetworkConnectionRecord[];
  usage: RunUsage;
  /** The whole conversation, to continue it with `options.messages`. */
  messages: ModelMessage[];
}

export type { ApprovalDecision };
