import { AlwaysAnswers, alwaysScope, alwaysScopeFor, type AlwaysScope, type AlwaysScopeChoice } from '../approval/always.js';
import { commandWordsOf } from '../approval/approval.js';
import { savedRulesOf, type SavedRule } from '../approval/saved-rules.js';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequest, DecidedBy, RunEvent, SavedBy } from './types.js';

/** How the gate answered a request. */
export interface GateAnswer {
  approved: boolean;
  decision: 'approved' | 'always' | 'denied';
  decidedBy: DecidedBy;
  /** With `decidedBy: 'flag'`: the flag that answered (`--yes`, `--deny`). */
  flag?: string;
  reason?: string;
  /** For `always`: what the answer covers. */
  scope?: AlwaysScope;
  /** For an answer `save`: the rule it wrote to the project permissions file. */
  savedRule?: SavedRule;
}

/** Marks an answer given by a command-line flag, not a person (see `flagAnswer`). */
const FLAG = Symbol('toolgate: answered by a flag');

/**
 * An answer given by a command-line flag that answers every request without asking (`--yes`,
 * `--deny`): the record says `decidedBy: 'flag'` and names the flag, since a flag is not a
 * person.
 */
export function flagAnswer(answer: { decision: 'approve' } | { decision: 'deny'; reason?: string }, flag: string): ApprovalAnswer {
  return Object.assign({ ...answer }, { [FLAG]: flag });
}

function flagOf(answer: ApprovalAnswer): string | undefined {
  return typeof answer === 'object' ? (answer as { [FLAG]?: string })[FLAG] : undefined;
}

const NO_HANDLER_REASON =
  'denied: no approval handler is configured, so every call that needs approval is refused (fail closed)';
const NESTED_DEFER_REASON =
  'denied: this call is made inside a worker called by another, and approvals there cannot be deferred to a later request; give the run an onApproval handler, or approve the worker tool preApproved calls only';

function normalize(answer: ApprovalAnswer): { decision: 'approve' | 'always' | 'save' | 'deny'; reason?: string; scope?: AlwaysScopeChoice; by?: SavedBy } {
  return typeof answer === 'string' ? { decision: answer } : answer;
}

/** The input as a person reviews it: the one display rule of every surface (the core's). */
export function reviewOf(input: unknown): Pick<ApprovalRequest, 'review' | 'reviewable' | 'inputBytes' | 'inputSha256'> {
  const reviewed = callNative(() => native.reviewInput(JSON.stringify(input) ?? 'null'));
  return { review: reviewed.review, reviewable: reviewed.reviewable, inputBytes: reviewed.inputBytes, inputSha256: reviewed.inputSha256 };
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

/** What the gates of the workers of one run share: the "always" answers and each call's answer. */
interface SharedAnswers {
  always: AlwaysAnswers;
  answers: Map<string, GateAnswer>;
  answeredInputs: Map<string, string>;
}

/**
 * Answers approval requests for one run (or one MCP session): an earlier "always" that covers
 * the call answers it, else the handler is asked, else the call is denied (fail closed). It
 * keeps the run's "always" answers (`AlwaysAnswers`; their scopes are the core's) and the answer
 * given for each call. Workers called by the run share them through `forWorker`: each gets a
 * gate of its own name, and an "always" covers the tool of the worker it was given for only (two
 * workers may each have a tool of one name).
 */
export class ApprovalGate {
  readonly #handler: ApprovalHandler | 'defer' | undefined;
  readonly #emit: (event: RunEvent) => void;
  readonly #signal: AbortSignal | undefined;
  readonly #always: AlwaysAnswers;
  readonly #answers: Map<string, GateAnswer>;
  /** The input each answer was given for (canonical JSON), by tool call id. */
  readonly #answeredInputs: Map<string, string>;
  /** The name of the worker whose calls this gate answers ('' outside a worker run). */
  readonly #worker: string;

  constructor(
    handler: ApprovalHandler | 'defer' | undefined,
    emit: (event: RunEvent) => void,
    signal: AbortSignal | undefined,
    always: readonly AlwaysScope[] = [],
    worker = '',
    shared?: SharedAnswers,
  ) {
    this.#handler = handler;
    this.#emit = emit;
    this.#signal = signal;
    this.#always = shared?.always ?? new AlwaysAnswers(always);
    this.#answers = shared?.answers ?? new Map();
    this.#answeredInputs = shared?.answeredInputs ?? new Map();
    this.#worker = worker;
  }

  /** The gate of a worker this run calls: the same handler and answers, under its own name. */
  forWorker(worker: string): ApprovalGate {
    const shared = { always: this.#always, answers: this.#answers, answeredInputs: this.#answeredInputs };
    return new ApprovalGate(this.#handler, this.#emit, this.#signal, [], worker, shared);
  }

  /** Who answers: a handler function, `defer` (a deferred run stops for a person), or nobody. */
  get answeredBy(): 'handler' | 'defer' | 'nobody' {
    return typeof this.#handler === 'function' ? 'handler' : this.#handler === 'defer' ? 'defer' : 'nobody';
  }

  /** The "always" answers given so far (for a run state). */
  get alwaysScopes(): AlwaysScope[] {
    return this.#always.scopes;
  }

  /**
   * The request for a call: the input as a person reviews it, what "always" would cover, what
   * "save" would write (a tool of a loaded worker, a reviewable input), and the command's words
   * for command tools.
   */
  request(tool: object | undefined, toolName: string, input: unknown, toolCallId: string): ApprovalRequest {
    const argv = commandWordsOf(tool, input);
    const review = reviewOf(input);
    const save = review.reviewable ? savedRulesOf(tool)?.offer(toolName, input, argv) : undefined;
    return {
      toolName,
      input,
      toolCallId,
      scope: alwaysScopeFor(toolName, input, argv, undefined, this.#worker),
      ...(argv ? { argv } : {}),
      ...review,
      ...(save ? { save } : {}),
    };
  }

  /** Whether an earlier "always" covers this call. An input the core cannot read is not covered. */
  coveredByAlways(tool: object | undefined, toolName: string, input: unknown): boolean {
    return this.#always.covers(tool, toolName, input, this.#worker);
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

  /** Records an answer given elsewhere (a resumed state's answers) for the call's `input`. */
  remember(toolCallId: string, answer: GateAnswer, input: unknown): void {
    this.#answers.set(toolCallId, answer);
    this.#answeredInputs.set(toolCallId, canonicalJson(input));
  }

  /**
   * Whether the call `toolCallId` with `input` may run as approved: the approval given under
   * that id was for this very input, or an "always" covers it. Two calls of one step can share
   * an id (a model's stream may pass a repeated id through); the SDK then runs whichever it
   * matched an approval to, so the input is checked here.
   */
  approvedFor(tool: object | undefined, toolName: string, toolCallId: string, input: unknown): boolean {
    if (this.coveredByAlways(tool, toolName, input)) return true;
    const answer = this.#answers.get(toolCallId);
    return answer?.approved === true && this.#answeredInputs.get(toolCallId) === canonicalJson(input);
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
        this.#answeredInputs.set(toolCallId, canonicalJson(input));
        this.#emit({ type: 'approval-answered', ...base, decision: 'denied', source: 'no-handler', reason });
        return answer;
      }
      this.#emit({ type: 'approval-asked', ...base, input, scope: request.scope });
      const handler = this.#handler;
      const asking = signal && this.#signal ? AbortSignal.any([this.#signal, signal]) : (signal ?? this.#signal);
      const raw = await untilAborted(Promise.resolve().then(() => handler(request, asking ? { signal: asking } : {})), asking);
      // Ctrl-C (or the caller's abort) while asking stops the run, whatever was answered.
      this.#signal?.throwIfAborted();
      source = 'handler';
      const given = normalize(raw);
      const flag = flagOf(raw);
      const by = flag ? { decidedBy: 'flag' as const, flag } : { decidedBy: 'user' as const };
      // "Always" and "save" are offered only for an input shown whole; otherwise they approve
      // this call once.
      const decision =
        (given.decision === 'always' && !request.reviewable) || (given.decision === 'save' && !request.save) ? 'approve' : given.decision;
      if (decision === 'deny') {
        answer = { approved: false, decision: 'denied', ...by, reason: given.reason ?? 'the user denied this tool call' };
      } else if (decision === 'always') {
        const scope = given.scope === undefined || given.scope === 'call' ? request.scope : alwaysScope(request, given.scope);
        answer = { approved: true, decision: 'always', ...by, scope };
        this.#always.add([scope]);
      } else if (decision === 'save') {
        answer = { approved: true, decision: 'approved', ...by };
        const rule = this.saveRule(tool, request, given.by ?? 'approval-handler');
        if (rule) answer.savedRule = rule;
      } else if (decision === 'approve') {
        answer = { approved: true, decision: 'approved', ...by };
      } else {
        throw new ToolgateError(
          'INVALID_INPUT',
          `the approval handler answered ${JSON.stringify(given)}; answer 'approve', 'always', 'save', 'deny' or { decision: 'deny', reason }`,
        );
      }
    }
    this.#answers.set(toolCallId, answer);
    this.#answeredInputs.set(toolCallId, canonicalJson(input));
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

  /**
   * Writes the rule an answer `save` chose (the core saves it, locked and atomic) and reports
   * it (`rule-saved`), or reports why it could not be (`rule-not-saved`: the call is still
   * approved, once). Returns the rule written.
   */
  saveRule(tool: object | undefined, request: Pick<ApprovalRequest, 'toolName' | 'input' | 'argv' | 'toolCallId'>, by: SavedBy): SavedRule | undefined {
    const base = { toolCallId: request.toolCallId, toolName: request.toolName };
    const rules = savedRulesOf(tool);
    try {
      if (!rules) throw new ToolgateError('INVALID_INPUT', 'this tool has no project permissions file to save a rule in (only workers loaded from a file do)');
      const rule = rules.save(request.toolName, request.input, request.argv, by);
      this.#emit({ type: 'rule-saved', ...base, rule });
      return rule;
    } catch (error) {
      this.#emit({ type: 'rule-not-saved', ...base, error: error instanceof Error ? error.message : String(error) });
      return undefined;
    }
  }

  /** The answer given for a call, if it went through the gate. */
  answerFor(toolCallId: string): GateAnswer | undefined {
    return this.#answers.get(toolCallId);
  }
}

/** `value` as JSON with every object's keys in order: one text for one input. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  ) ?? 'undefined';
}
