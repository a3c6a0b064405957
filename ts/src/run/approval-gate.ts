import { AlwaysAnswers, alwaysScope, alwaysScopeFor, type AlwaysScope, type AlwaysScopeChoice } from '../approval/always.js';
import { commandWordsOf } from '../approval/approval.js';
import { ToolgateError } from '../native/errors.js';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequest, DecidedBy, RunEvent } from './types.js';

/** How the gate answered a request. */
export interface GateAnswer {
  approved: boolean;
  decision: 'approved' | 'always' | 'denied';
  decidedBy: DecidedBy;
  reason?: string;
  /** For `always`: what the answer covers. */
  scope?: AlwaysScope;
}

const NO_HANDLER_REASON =
  'denied: no approval handler is configured, so every call that needs approval is refused (fail closed)';
const NESTED_DEFER_REASON =
  'denied: this call is made inside a worker called by another, and approvals there cannot be deferred to a later request; give the run an onApproval handler, or approve the worker tool preApproved calls only';

function normalize(answer: ApprovalAnswer): { decision: 'approve' | 'always' | 'deny'; reason?: string; scope?: AlwaysScopeChoice } {
  return typeof answer === 'string' ? { decision: answer } : answer;
}

/** Resolves with `promise`, or rejects with the signal's reason when it aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Answers approval requests for one run (or one MCP session): an earlier "always" that covers
 * the call answers it, else the handler is asked, else the call is denied (fail closed). It
 * keeps the run's "always" answers (`AlwaysAnswers`; their scopes are the core's) and the answer
 * given for each call. Workers called by the run share it, so an "always" holds for them too.
 */
export class ApprovalGate {
  readonly #handler: ApprovalHandler | 'defer' | undefined;
  readonly #emit: (event: RunEvent) => void;
  readonly #signal: AbortSignal | undefined;
  readonly #always: AlwaysAnswers;
  readonly #answers = new Map<string, GateAnswer>();

  constructor(
    handler: ApprovalHandler | 'defer' | undefined,
    emit: (event: RunEvent) => void,
    signal: AbortSignal | undefined,
    always: readonly AlwaysScope[] = [],
  ) {
    this.#handler = handler;
    this.#emit = emit;
    this.#signal = signal;
    this.#always = new AlwaysAnswers(always);
  }

  /** Who answers: a handler function, `defer` (a deferred run stops for a person), or nobody. */
  get answeredBy(): 'handler' | 'defer' | 'nobody' {
    return typeof this.#handler === 'function' ? 'handler' : this.#handler === 'defer' ? 'defer' : 'nobody';
  }

  /** The "always" answers given so far (for a run state). */
  get alwaysScopes(): AlwaysScope[] {
    return this.#always.scopes;
  }

  /** The request for a call: what "always" would cover, and the command's words for command tools. */
  request(tool: object | undefined, toolName: string, input: unknown, toolCallId: string): ApprovalRequest {
    const argv = commandWordsOf(tool, input);
    return {
      toolName,
      input,
      toolCallId,
      scope: alwaysScopeFor(toolName, input, argv),
      ...(argv ? { argv } : {}),
    };
  }

  /** Whether an earlier "always" covers this call. An input the core cannot read is not covered. */
  coveredByAlways(tool: object | undefined, toolName: string, input: unknown): boolean {
    return this.#always.covers(tool, toolName, input);
  }

  /**
   * Records that a call runs under an earlier "always" without a round trip (ai 7, and requests
   * answered when a deferred run stopped). A call already answered keeps its answer: ai 7 asks
   * again for the call a person just answered "always", which must stay decided by the person.
   */
  noteAlways(toolCallId: string): void {
    if (!this.#answers.has(toolCallId)) this.#answers.set(toolCallId, { approved: true, decision: 'always', decidedBy: 'always' });
  }

  /** Adds "always" answers given elsewhere (a resumed state's). */
  addAlways(scopes: readonly AlwaysScope[]): void {
    this.#always.add(scopes);
  }

  /** Records an answer given elsewhere (a resumed state's answers). */
  remember(toolCallId: string, answer: GateAnswer): void {
    this.#answers.set(toolCallId, answer);
  }

  /**
   * Answers one call that needs approval and remembers the answer (`answerFor`). Emits
   * `approval-asked` before the handler is asked and `approval-answered` after. A handler that
   * answers something else than an answer throws `INVALID_INPUT`; an abort while asking throws
   * the signal's reason (the run's, or `signal`'s: a question that ends with its call).
   */
  async decide(tool: object | undefined, toolName: string, input: unknown, toolCallId: string, signal?: AbortSignal): Promise<GateAnswer> {
    const base = { toolCallId, toolName };
    let answer: GateAnswer;
    let source: 'handler' | 'always' | 'no-handler';
    if (this.coveredByAlways(tool, toolName, input)) {
      answer = { approved: true, decision: 'always', decidedBy: 'always' };
      source = 'always';
    } else if (!this.#handler || this.#handler === 'defer') {
      const reason = this.#handler === 'defer' ? NESTED_DEFER_REASON : NO_HANDLER_REASON;
      answer = { approved: false, decision: 'denied', decidedBy: 'no-handler', reason };
      source = 'no-handler';
    } else {
      let request: ApprovalRequest;
      try {
        request = this.request(tool, toolName, input, toolCallId);
      } catch (error) {
        // The core cannot read this input (nested deeper than JSON allows): nobody can review it.
        const reason = `denied: the input cannot be shown for review (${error instanceof Error ? error.message : String(error)})`;
        answer = { approved: false, decision: 'denied', decidedBy: 'policy', reason };
        this.#answers.set(toolCallId, answer);
        this.#emit({ type: 'approval-answered', ...base, decision: 'denied', source: 'no-handler', reason });
        return answer;
      }
      this.#emit({ type: 'approval-asked', ...base, input, scope: request.scope });
      const handler = this.#handler;
      const asking = signal && this.#signal ? AbortSignal.any([this.#signal, signal]) : (signal ?? this.#signal);
      const given = normalize(await untilAborted(Promise.resolve().then(() => handler(request, asking ? { signal: asking } : {})), asking));
      // Ctrl-C (or the caller's abort) while asking stops the run, whatever was answered.
      this.#signal?.throwIfAborted();
      source = 'handler';
      if (given.decision === 'deny') {
        answer = { approved: false, decision: 'denied', decidedBy: 'user', reason: given.reason ?? 'the user denied this tool call' };
      } else if (given.decision === 'always') {
        const scope = given.scope === undefined || given.scope === 'call' ? request.scope : alwaysScope(request, given.scope);
        answer = { approved: true, decision: 'always', decidedBy: 'user', scope };
        this.#always.add([scope]);
      } else if (given.decision === 'approve') {
        answer = { approved: true, decision: 'approved', decidedBy: 'user' };
      } else {
        throw new ToolgateError(
          'INVALID_INPUT',
          `the approval handler answered ${JSON.stringify(given)}; answer 'approve', 'always', 'deny' or { decision: 'deny', reason }`,
        );
      }
    }
    this.#answers.set(toolCallId, answer);
    this.#emit({
      type: 'approval-answered',
      ...base,
      decision: answer.decision,
      source,
      ...(answer.reason ? { reason: answer.reason } : {}),
      ...(answer.scope ? { scope: answer.scope } : {}),
    });
    return answer;
  }

  /** The answer given for a call, if it went through the gate. */
  answerFor(toolCallId: string): GateAnswer | undefined {
    return this.#answers.get(toolCallId);
  }
}
