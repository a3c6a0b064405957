import { approvalScopeKey } from '../approval/approval.js';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequest, RunEvent } from './types.js';

export interface GateAnswer {
  approved: boolean;
  decision: 'approved' | 'always' | 'denied';
  reason?: string;
}

const NO_HANDLER_REASON =
  'denied: no approval handler is configured, so every call that needs approval is refused (fail closed)';

function normalize(answer: ApprovalAnswer): { decision: 'approve' | 'always' | 'deny'; reason?: string } {
  return typeof answer === 'string' ? { decision: answer } : answer;
}

/**
 * Answers approval requests for one run: remembers "always" answers by scope key, asks the
 * handler otherwise, and denies when there is no handler.
 */
export class ApprovalGate {
  readonly #handler: ApprovalHandler | undefined;
  readonly #emit: (event: RunEvent) => void;
  readonly #always = new Set<string>();
  readonly #answers = new Map<string, GateAnswer>();

  constructor(handler: ApprovalHandler | undefined, emit: (event: RunEvent) => void) {
    this.#handler = handler;
    this.#emit = emit;
  }

  /** Whether an earlier "always" covers this call. */
  coveredByAlways(tool: object | undefined, request: ApprovalRequest): boolean {
    return this.#always.has(approvalScopeKey(tool, request.toolName, request.input));
  }

  /** Records that a call ran under an earlier "always" without a round trip (ai 7). */
  noteAlways(toolCallId: string): void {
    this.#answers.set(toolCallId, { approved: true, decision: 'always' });
  }

  async decide(tool: object | undefined, request: ApprovalRequest): Promise<GateAnswer> {
    const base = { toolCallId: request.toolCallId, toolName: request.toolName };
    let answer: GateAnswer;
    let source: 'handler' | 'always' | 'no-handler';
    if (this.coveredByAlways(tool, request)) {
      answer = { approved: true, decision: 'always' };
      source = 'always';
    } else if (!this.#handler) {
      answer = { approved: false, decision: 'denied', reason: NO_HANDLER_REASON };
      source = 'no-handler';
    } else {
      this.#emit({ type: 'approval-asked', ...base, input: request.input });
      const given = normalize(await this.#handler(request));
      source = 'handler';
      if (given.decision === 'deny') {
        answer = { approved: false, decision: 'denied', reason: given.reason ?? 'the user denied this tool call' };
      } else {
        answer = { approved: true, decision: given.decision === 'always' ? 'always' : 'approved' };
        if (given.decision === 'always') this.#always.add(approvalScopeKey(tool, request.toolName, request.input));
      }
    }
    this.#answers.set(request.toolCallId, answer);
    this.#emit({
      type: 'approval-answered',
      ...base,
      decision: answer.decision,
      source,
      ...(answer.reason ? { reason: answer.reason } : {}),
    });
    return answer;
  }

  /** The answer given for a call, if it went through the gate. */
  answerFor(toolCallId: string): GateAnswer | undefined {
    return this.#answers.get(toolCallId);
  }
}
