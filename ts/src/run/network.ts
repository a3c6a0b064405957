/**
 * Network by host, as a run sees it: the egress proxy (in the core) asks the run's approval
 * handler about a host neither allowed nor denied, as a request with `toolName: 'network'` and
 * `input: { host, port, tool }`, and every connection it decides becomes a record of the run.
 *
 * - The question goes through the run's gate (`ApprovalGate`): the same handler, terminal
 *   prompt, MCP elicitation, `--yes`/`--deny` and fail-closed rule as every tool call. The
 *   answers: approve (this connection), `always` (this host and port for the rest of the run,
 *   kept by the core for every call of the run), deny (its reason is sent to the program, and
 *   the call's result names the refusal).
 * - A deferred run (`onApproval: 'defer'`) cannot pause a running process: the connection is
 *   refused at once with a message saying that it waits for approval, the run stops after
 *   that step with the request pending (`approval-required`), and when it resumes an approval
 *   applies to the next call of that tool to that host and port (the model retries), `always`
 *   to the rest of the run, a denial to that next call with its reason.
 * - A question still open when its tool call ends is withdrawn (its signal aborts).
 */
import { savedRulesOf, type SavedRule } from '../approval/saved-rules.js';
import { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { runAsNetworkCall, type NetworkRunLink } from '../native/network-call.js';
import type { ApprovalGate } from './approval-gate.js';
import type { AlwaysScope, RunEvent } from './types.js';

/** The tool name of a network approval request (the contract). */
export const NETWORK_TOOL = 'network';

/** The input of a network approval request (the contract). */
export interface NetworkRequestInput {
  host: string;
  port: number;
  /** The tool whose process connected. */
  tool: string;
}

/**
 * One connection through the egress proxy and its decision: a record of the run and a line of
 * its audit log.
 */
export interface NetworkConnectionRecord {
  host: string;
  port: number;
  toolCallId: string;
  tool: string;
  protocol: 'http' | 'connect' | 'socks5' | 'unknown';
  decision: 'allowed' | 'asked-approved' | 'always' | 'denied';
  decidedBy: 'rule' | 'policy' | 'address' | 'user' | 'flag' | 'saved' | 'run-allowance' | 'no-handler' | 'deferred' | 'request' | 'limit';
  /** With `decidedBy: 'flag'`: the command-line flag that answered (`--yes`, `--deny`), not a person. */
  flag?: string;
  /** The `allow`/`deny` entry that decided (with `decidedBy: 'saved'`: the saved rule, in words). */
  rule?: string;
  /** With `decidedBy: 'saved'`: the permissions file and line of the rule. */
  savedIn?: string;
  /** The refusal the program was sent, or what failed after an allowed decision. */
  message?: string;
  /** The address connected to. */
  address?: string;
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
}

/** A network request a deferred run stopped for. */
export interface DeferredNetworkRequest extends NetworkRequestInput {
  /** The id of the pending request (also its `toolCallId`). */
  requestId: string;
  /** The tool call whose process connected. */
  toolCallId: string;
}

/** What the proxy sends the handler (the core's `AskRequest`). */
interface AskRequestJson extends NetworkRequestInput {
  toolCallId: string;
}

/** The id of the approval request about `host:port` for one tool call. */
export function networkRequestId(toolCallId: string, host: string, port: number): string {
  return `network:${toolCallId}:${host}:${port}`;
}

/** The input of a network request, when `input` is one. */
export function networkInput(input: unknown): NetworkRequestInput | undefined {
  const value = input as Partial<NetworkRequestInput> | null;
  if (!value || typeof value.host !== 'string' || typeof value.port !== 'number' || typeof value.tool !== 'string') return undefined;
  return { host: value.host, port: value.port, tool: value.tool };
}

/** The refusal text of a deferred question (what the program, and through it the model, reads). */
function deferredReason(host: string, port: number): string {
  return `${host}:${port} needs approval, and this run asks for it when this step ends (the run stops with the request pending); once it is approved, run the command again`;
}

/**
 * One run's network approvals and records (an MCP session's too). Workers the run calls share
 * it, as they share its gate.
 */
export class NetworkApprovals implements NetworkRunLink {
  readonly native: native.NetworkRun;
  readonly #gate: ApprovalGate;
  readonly #record: (record: NetworkConnectionRecord) => void;
  readonly #deferred = new Map<string, DeferredNetworkRequest>();
  readonly #calls = new Map<string, AbortController>();
  /** Questions a command-line flag answered (`--yes`, `--deny`), by request id: their records name it. */
  readonly #flags = new Map<string, string>();
  /** Questions a saved rule of the project permissions file answered, by request id. */
  readonly #saved = new Map<string, SavedRule>();
  /** The tool of each running call: its worker's saved rules answer, and "save" writes, network rules. */
  readonly #owners = new Map<string, object>();
  /** Questions are asked one at a time (a person answers one prompt at a time). */
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * `record` receives every connection record (the run's recorder). A gate with a handler is
   * asked; a deferred one defers; a gate with nobody to ask gets no question at all (the core
   * refuses such hosts, recorded as `no-handler`).
   */
  constructor(gate: ApprovalGate, record: (record: NetworkConnectionRecord) => void) {
    this.#gate = gate;
    this.#record = record;
    const ask = gate.answeredBy === 'nobody' ? undefined : (json: string) => this.#ask(json);
    this.native = callNative(() => new native.NetworkRun(ask));
  }

  /** The requests a deferred run stops for, oldest first; taken once. */
  takeDeferred(): DeferredNetworkRequest[] {
    const requests = [...this.#deferred.values()];
    this.#deferred.clear();
    return requests;
  }

  /** Whether a deferred question waits (the run stops after the current step). */
  get hasDeferred(): boolean {
    return this.#deferred.size > 0;
  }

  /** Restores `always` answers a resumed run carries (the gate's scopes with `toolName: 'network'`). */
  restoreAlways(scopes: readonly AlwaysScope[]): void {
    for (const scope of scopes) {
      const input = scope.tool === NETWORK_TOOL ? networkInput(scope.input) : undefined;
      if (input) callNative(() => this.native.allowAlways(input.host, input.port));
    }
  }

  /** Applies an answer given when a deferred run resumed: to the next call of the tool, or (`always`) the rest of the run. */
  answerDeferred(input: NetworkRequestInput, answer: { approved: boolean; always: boolean; reason?: string }): void {
    if (answer.approved && answer.always) callNative(() => this.native.allowAlways(input.host, input.port));
    else callNative(() => this.native.answerNextCall(input.host, input.port, input.tool, answer.approved, answer.reason ?? null));
  }

  /** Takes the records the proxy made since the last time and hands each to the run. */
  collect(): void {
    const { records } = callNative(() => this.native.takeRecords());
    for (const taken of records) {
      const record = taken as NetworkConnectionRecord;
      const requestId = networkRequestId(record.toolCallId, record.host, record.port);
      const flag = record.decidedBy === 'user' ? this.#flags.get(requestId) : undefined;
      const saved = record.decidedBy === 'user' ? this.#saved.get(requestId) : undefined;
      if (flag) this.#record({ ...record, decidedBy: 'flag', flag });
      else if (saved) this.#record({ ...record, decidedBy: 'saved', rule: saved.rule, savedIn: `${saved.file}:${saved.line}` });
      else this.#record(record);
    }
  }

  /**
   * A call's processes may ask from now on; `ended` withdraws its open questions and collects its
   * records. `tool` (the tool whose processes connect) brings its worker's saved rules.
   */
  callStarted(toolCallId: string, tool?: object): { ended: () => void } {
    const controller = new AbortController();
    this.#calls.set(toolCallId, controller);
    if (tool) this.#owners.set(toolCallId, tool);
    return {
      ended: () => {
        controller.abort(new Error(`tool call ${toolCallId} ended before the question about its connection was answered`));
        if (this.#calls.get(toolCallId) === controller) {
          this.#calls.delete(toolCallId);
          this.#owners.delete(toolCallId);
        }
        this.collect();
        for (const key of this.#saved.keys()) if (key.startsWith(`network:${toolCallId}:`)) this.#saved.delete(key);
      },
    };
  }

  /** The proxy's question, answered through the gate; always resolves with an answer. */
  async #ask(json: string): Promise<string> {
    let request: AskRequestJson;
    try {
      request = JSON.parse(json) as AskRequestJson;
    } catch {
      return JSON.stringify({ decision: 'deny', reason: 'the question could not be read' });
    }
    const { host, port, tool, toolCallId } = request;
    const requestId = networkRequestId(toolCallId, host, port);
    // A saved rule answers before anyone is asked (the core asks only where no allow/deny decided).
    const owner = this.#owners.get(toolCallId);
    const saved = savedRulesOf(owner)?.covering(NETWORK_TOOL, { host, port, tool }, undefined);
    if (saved) {
      this.#saved.set(requestId, saved);
      return JSON.stringify({ decision: 'approve' });
    }
    if (this.#gate.answeredBy === 'defer') {
      if (!this.#deferred.has(requestId)) this.#deferred.set(requestId, { host, port, tool, toolCallId, requestId });
      return JSON.stringify({ decision: 'defer', reason: deferredReason(host, port) });
    }
    const signal = this.#calls.get(toolCallId)?.signal;
    const asked = this.#queue.then(() => {
      signal?.throwIfAborted();
      return this.#gate.decide(owner, NETWORK_TOOL, { host, port, tool }, requestId, signal);
    });
    this.#queue = asked.catch(() => undefined);
    try {
      const answer = await asked;
      if (answer.flag) this.#flags.set(requestId, answer.flag);
      if (!answer.approved) return JSON.stringify({ decision: 'deny', ...(answer.reason ? { reason: answer.reason } : {}) });
      return JSON.stringify({ decision: answer.decision === 'always' ? 'always' : 'approve' });
    } catch (error) {
      return JSON.stringify({ decision: 'deny', reason: `no answer: ${error instanceof Error ? error.message : String(error)}` });
    }
  }
}

/**
 * Runs `execute` as one tool call of a run: the processes it starts ask the run's handler about
 * hosts and record into the run. Its records are collected, and its open questions withdrawn,
 * when it ends.
 */
export async function withNetworkCall<T>(
  approvals: NetworkApprovals | undefined,
  toolCallId: string,
  toolName: string,
  execute: () => Promise<T>,
  tool?: object,
): Promise<T> {
  if (!approvals) return execute();
  const call = approvals.callStarted(toolCallId, tool);
  try {
    return await runAsNetworkCall(approvals, toolCallId, toolName, execute);
  } finally {
    call.ended();
  }
}

/** A run event for a record. */
export function connectionEvent(record: NetworkConnectionRecord): RunEvent {
  return { type: 'network-connection', record };
}
