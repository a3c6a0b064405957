import { randomBytes } from 'node:crypto';
import { native } from '../native/binding.js';
import { awaitNative } from '../native/errors.js';
import type { NetworkConnectionRecord, RunEvent, RunStatus, RunUsage } from './types.js';

/** A new run id (also the id of an MCP serving in the audit log). */
export function newRunId(): string {
  return randomBytes(16).toString('hex');
}

/** Where a run's audit log goes and what it redacts (checked by the core). */
export interface AuditTarget {
  file: string;
  redact: readonly string[];
}

/** How a run ended, for its last audit line. */
export type AuditEnd =
  | { status: RunStatus; steps: number; usage: RunUsage; calls: number; pending?: readonly string[] }
  | { error: unknown };

function outputBytes(output: unknown): number | undefined {
  if (output === undefined) return undefined;
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  return text === undefined ? undefined : Buffer.byteLength(text);
}

function exitCodeOf(output: unknown): number | undefined {
  const code = (output as { exitCode?: unknown } | null | undefined)?.exitCode;
  return typeof code === 'number' ? code : undefined;
}

/**
 * The audit lines of one run, kept in memory and appended to the log when the run ends (one
 * write, then fsync; the core redacts secrets first): `run-start`, one `tool-call` per call the
 * model made (workers it called included) with its decision and who made it, and `run-end`.
 */
export class AuditTrail {
  readonly #lines: Record<string, unknown>[] = [];
  readonly #target: AuditTarget;
  readonly #runId: string;
  readonly #worker: string;
  readonly #started = performance.now();

  constructor(target: AuditTarget, runId: string, worker: string) {
    this.#target = target;
    this.#runId = runId;
    this.#worker = worker;
  }

  #line(event: string, worker: string, fields: Record<string, unknown>): void {
    this.#lines.push({ time: new Date().toISOString(), runId: this.#runId, event, worker, ...fields });
  }

  start(fields: { input?: string; model: string; resumed: boolean; workerFile?: string }): void {
    this.#line(fields.resumed ? 'run-resume' : 'run-start', this.#worker, fields);
  }

  /**
   * A line of an MCP serving (`toolgate mcp serve`, `serveMcp`): `mcp-serve-start` and
   * `mcp-serve-end` frame its `tool-call` lines, which share the serving's run id.
   */
  serving(event: 'mcp-serve-start' | 'mcp-serve-end', fields: Record<string, unknown>): void {
    this.#line(event, this.#worker, { ...fields, ...(event === 'mcp-serve-end' ? { durationMs: Math.round(performance.now() - this.#started) } : {}) });
  }

  /**
   * Takes what the log keeps from a run event: every recorded call (with who decided: a flag is
   * named, a saved rule is named with its file and line) and every connection through the
   * egress proxy.
   */
  collect(event: RunEvent): void {
    if (event.type === 'network-connection') return this.#connection(event.record, event.worker);
    if (event.type !== 'call-recorded') return;
    const { record } = event;
    const exitCode = exitCodeOf(record.output);
    const bytes = outputBytes(record.output);
    this.#line('tool-call', event.worker ?? this.#worker, {
      toolCallId: record.toolCallId,
      toolName: record.toolName,
      input: record.input,
      decision: record.decision,
      decidedBy: record.decidedBy,
      ...(record.flag ? { flag: record.flag } : {}),
      ...(record.savedRule
        ? { savedRule: { rule: record.savedRule.rule, file: record.savedRule.file, line: record.savedRule.line, saved: record.savedRule.saved } }
        : {}),
      durationMs: Math.round(record.durationMs * 10) / 10,
      ...(exitCode === undefined ? {} : { exitCode }),
      ...(bytes === undefined ? {} : { outputBytes: bytes }),
      ...(record.errorCode ? { errorCode: record.errorCode } : {}),
      ...(record.error ? { error: record.error } : {}),
      ...(record.reason ? { reason: record.reason } : {}),
      ...(record.scope ? { alwaysScope: record.scope.description } : {}),
    });
  }

  /**
   * A `network` line: one connection through the egress proxy, with the decision, who made it,
   * the tool call whose process connected and the bytes each way.
   */
  #connection(record: NetworkConnectionRecord, worker: string | undefined): void {
    this.#line('network', worker ?? this.#worker, {
      toolCallId: record.toolCallId,
      tool: record.tool,
      host: record.host,
      port: record.port,
      protocol: record.protocol,
      decision: record.decision,
      decidedBy: record.decidedBy,
      ...(record.flag ? { flag: record.flag } : {}),
      ...(record.rule ? { rule: record.rule } : {}),
      ...(record.address ? { address: record.address } : {}),
      bytesUp: record.bytesUp,
      bytesDown: record.bytesDown,
      durationMs: record.durationMs,
      ...(record.message ? { message: record.message } : {}),
    });
  }

  /**
   * The run's last line. `durationMs` defaults to the time since the trail was made; a run whose
   * end is written in another process than its start (a durable run) gives it.
   */
  end(outcome: AuditEnd, durationMs: number = Math.round(performance.now() - this.#started)): void {
    if ('error' in outcome) {
      const error = outcome.error;
      this.#line('run-end', this.#worker, {
        status: 'error',
        durationMs,
        error: error instanceof Error ? error.message : String(error),
        ...((error as { code?: unknown } | null)?.code ? { errorCode: (error as { code: string }).code } : {}),
      });
    } else {
      this.#line('run-end', this.#worker, { ...outcome, durationMs });
    }
  }

  /** Appends the lines to the log and flushes it to disk. */
  async flush(): Promise<void> {
    const lines = this.#lines.splice(0);
    if (lines.length === 0) return;
    await awaitNative(native.appendAuditLog(this.#target.file, [...this.#target.redact], lines.map((line) => JSON.stringify(line))));
  }
}
