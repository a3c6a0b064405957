import type { native } from '../native/binding.js';
import type { NetworkConnectionRecord } from './network.js';
import type {
  AlwaysScope,
  AlwaysScopeChoice,
  ApprovalAnswer,
  ApprovalContext,
  ApprovalHandler,
  ApprovalRequest,
  SavedBy,
  SaveOffer,
} from '../approval/request.js';
import type { SavedRule } from '../approval/saved-rules.js';

export type { AlwaysScope, AlwaysScopeChoice, ApprovalAnswer, ApprovalContext, ApprovalHandler, ApprovalRequest, NetworkConnectionRecord, SavedBy, SavedRule, SaveOffer };

/**
 * The decision recorded for a call the model made: `preApproved`, `approved` (by a person),
 * `always` (an earlier "always" covered it), `denied`, `blocked` (its approval or a rule),
 * `refused` (a policy, when it ran), `unknown-tool`, `invalid-input`.
 */
export type CallDecision = native.CallDecision;

/**
 * Who decided: `config`, `rule`, `user`, `flag` (`--yes` / `--deny`, named in `flag`), `saved`
 * (a rule of the project permissions file), `always`, `no-handler`, `policy` or `schema`.
 */
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
  /** An answer `save` wrote a rule to the project permissions file. */
  | { type: 'rule-saved'; toolCallId: string; toolName: string; rule: SavedRule }
  /** An answer `save` could not write its rule (the call was still approved, once). */
  | { type: 'rule-not-saved'; toolCallId: string; toolName: string; error: string }
  /** A connection through the egress proxy (network by host), with its decision; reported as it closes. */
  | { type: 'network-connection'; record: NetworkConnectionRecord }
  /** Text the model is writing (`streamWorker` and the CLI only). */
  | { type: 'text-delta'; step: number; text: string }
  | { type: 'error'; error: unknown };

export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  input: unknown;
  decision: CallDecision;
  decidedBy: DecidedBy;
  /** With `decidedBy: 'flag'`: the flag that decided (`--yes`, `--deny`). */
  flag?: string;
  /**
   * The saved rule behind the decision: the rule that answered the call (`decidedBy: 'saved'`),
   * or the rule an answer `save` wrote.
   */
  savedRule?: SavedRule;
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

export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** Why the run ended. */
export type RunStatus = 'completed' | 'task-completed' | 'question' | 'conversed' | 'max-steps' | 'approval-required';
