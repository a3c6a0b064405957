import type { ApprovalInfo } from '../approval/approval.js';
import { native } from '../native/binding.js';
import { ToolgateError } from '../native/errors.js';
import type { GateAnswer } from './approval-gate.js';
import type { NetworkConnectionRecord, RunEvent, SavedRule, ToolCallRecord } from './types.js';

/**
 * Records every call the model made with the decision actually taken, and reports each as it
 * ends (`call-recorded`). A call that a policy refused when it ran is recorded as the core
 * classifies the error (`COMMAND_BLOCKED` is `blocked` by a rule, `PATH_OUTSIDE_ROOT` is
 * `refused` by policy), never as the approval that let it start.
 */
export class Recorder {
  readonly records: ToolCallRecord[] = [];
  /** Every connection through the egress proxy (network by host), as it closed. */
  readonly connections: NetworkConnectionRecord[] = [];
  readonly #emit: (event: RunEvent) => void;

  constructor(emit: (event: RunEvent) => void) {
    this.#emit = emit;
  }

  /**
   * A call starts running; `answer` is the gate's, when it asked or an "always" covered it;
   * `savedRule` the rule of the project permissions file that answered it without asking.
   */
  started(
    toolCallId: string,
    toolName: string,
    input: unknown,
    answer: GateAnswer | undefined,
    approval: ApprovalInfo | undefined,
    savedRule?: SavedRule,
  ): ToolCallRecord {
    const decision = answer ? (answer.decision === 'always' ? 'always' : 'approved') : 'preApproved';
    const record: ToolCallRecord = {
      toolCallId,
      toolName,
      input,
      decision,
      // A tool decided per call (shell rules, its own needsApproval) ran because its rule said so.
      decidedBy: answer ? answer.decidedBy : savedRule ? 'saved' : approval?.dynamic ? 'rule' : 'config',
      ...(answer?.flag ? { flag: answer.flag } : {}),
      ...(answer?.savedRule ? { savedRule: answer.savedRule } : !answer && savedRule ? { savedRule } : {}),
      durationMs: 0,
      ...(answer?.scope ? { scope: answer.scope } : {}),
    };
    this.records.push(record);
    this.#emit({ type: 'tool-call', toolCallId, toolName, input, decision });
    return record;
  }

  succeeded(record: ToolCallRecord, output: unknown, durationMs: number): void {
    record.durationMs = durationMs;
    record.output = output;
    this.#emit({ type: 'tool-result', toolCallId: record.toolCallId, toolName: record.toolName, output, durationMs });
    this.#emit({ type: 'call-recorded', record });
  }

  failed(record: ToolCallRecord, error: unknown, durationMs: number): void {
    record.durationMs = durationMs;
    record.error = error instanceof Error ? error.message : String(error);
    if (error instanceof ToolgateError) {
      record.errorCode = error.code;
      const refusal = native.refusalOf(error.code);
      if (refusal) {
        record.decision = refusal.decision;
        record.decidedBy = refusal.decidedBy;
      }
    }
    this.#emit({
      type: 'tool-error',
      toolCallId: record.toolCallId,
      toolName: record.toolName,
      error: record.error,
      ...(record.errorCode ? { errorCode: record.errorCode } : {}),
      durationMs,
    });
    this.#emit({ type: 'call-recorded', record });
  }

  /** A call that needed approval and did not get it. */
  denied(toolCallId: string, toolName: string, input: unknown, answer: GateAnswer): void {
    this.#finished({
      toolCallId,
      toolName,
      input,
      decision: 'denied',
      decidedBy: answer.decidedBy,
      ...(answer.flag ? { flag: answer.flag } : {}),
      durationMs: 0,
      ...(answer.reason ? { reason: answer.reason } : {}),
    });
  }

  /** A call the AI SDK refused before any tool saw it: an unknown (or blocked) tool, or input that fails the schema. */
  rejected(toolCallId: string, toolName: string, input: unknown, decision: 'unknown-tool' | 'invalid-input' | 'blocked', error: string): void {
    this.#finished({
      toolCallId,
      toolName,
      input,
      decision,
      decidedBy: decision === 'blocked' ? 'config' : 'schema',
      durationMs: 0,
      error,
      ...(decision === 'blocked' ? { errorCode: 'TOOL_BLOCKED' } : decision === 'invalid-input' ? { errorCode: 'INVALID_INPUT' } : { errorCode: 'TOOL_NOT_FOUND' }),
    });
  }

  /** A connection the egress proxy decided (`network-connection`). */
  connection(record: NetworkConnectionRecord): void {
    this.connections.push(record);
    this.#emit({ type: 'network-connection', record });
  }

  #finished(record: ToolCallRecord): void {
    this.records.push(record);
    this.#emit({ type: 'call-recorded', record });
  }
}
