import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import type { ApprovalDecision } from '../approval/approval.js';
import type { NamedTool } from '../approval/named-tool.js';

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

/** A tool call waiting for a human decision. */
export interface ApprovalRequest {
  toolName: string;
  input: unknown;
  toolCallId: string;
}

/**
 * The answer to an approval request: run it, refuse it (the model sees the reason), or run it and
 * every later call of the same scope in this run (for `shell` / `cli_execute`: the same program
 * and first argument; for other tools: every call of the tool).
 */
export type ApprovalAnswer =
  | 'approve'
  | 'always'
  | 'deny'
  | { decision: 'approve' | 'always' }
  | { decision: 'deny'; reason?: string };

export type ApprovalHandler = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** How a tool call came to run (or not). */
export type CallDecision = 'preApproved' | 'approved' | 'always' | 'denied';

/** Something that happened in a run. Events of a worker called by another carry its name in `worker`. */
export type RunEvent = RunEventBody & { worker?: string };

export type RunEventBody =
  | { type: 'step-start'; step: number }
  | { type: 'step-end'; step: number; text: string; finishReason: string; toolCalls: number }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown; decision: CallDecision }
  | { type: 'approval-asked'; toolCallId: string; toolName: string; input: unknown }
  | {
      type: 'approval-answered';
      toolCallId: string;
      toolName: string;
      decision: 'approved' | 'always' | 'denied';
      reason?: string;
      /** Who answered: the handler, an earlier "always", or nobody (fail closed). */
      source: 'handler' | 'always' | 'no-handler';
    }
  | { type: 'tool-result'; toolCallId: string; toolName: string; output: unknown; durationMs: number }
  | { type: 'tool-error'; toolCallId: string; toolName: string; error: string; errorCode?: string; durationMs: number }
  | { type: 'error'; error: unknown };

export interface RunWorkerOptions {
  /** Overrides the worker's model. */
  model?: string | LanguageModel;
  /** Asked for every approval request; without it every request is denied (fail closed). */
  onApproval?: ApprovalHandler;
  /** Model steps for the whole run (default: the worker's `max_steps`, else 20). */
  maxSteps?: number;
  /** Stops the loop and kills running tool processes; `runWorker` then rejects with the reason. */
  signal?: AbortSignal;
  onEvent?: (event: RunEvent) => void;
  /** Earlier conversation to continue (for example after an `ask_question`). */
  messages?: ModelMessage[];
}

export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  input: unknown;
  decision: CallDecision;
  /** Time spent in `execute`; 0 for denied calls. */
  durationMs: number;
  output?: unknown;
  error?: string;
  /** The `ToolgateError` code of a failed call (`COMMAND_BLOCKED`, `PATH_OUTSIDE_ROOT`, …). */
  errorCode?: string;
  /** The reason a denied call was refused. */
  reason?: string;
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
export type RunStatus = 'completed' | 'task-completed' | 'question' | 'conversed' | 'max-steps';

export interface WorkerRunResult {
  status: RunStatus;
  /** The final answer: the `task_completion` result, the question, the `converse` message, or the model's last text. */
  text: string;
  /** Set when the run ended with `ask_question`. */
  question?: string;
  steps: StepRecord[];
  toolCalls: ToolCallRecord[];
  usage: RunUsage;
  /** The whole conversation, to continue it with `options.messages`. */
  messages: ModelMessage[];
}

export type { ApprovalDecision };
