/**
 * The answers of `toolgate.answer`, checked before the workflow accepts them (the update's
 * validator: a rejected update changes nothing and leaves no trace in history) and turned into
 * the approval gate's answers.
 *
 * Pure code: the workflow bundle imports it.
 */
import type { CallAnswer, PendingToolCall, ToolgateAnswer } from './contract.js';

/** The longest `reason` an answer may give (it is shown to the model). */
export const MAX_ANSWER_REASON_CHARS = 4096;

const DECISIONS = ['approve', 'deny', 'always'] as const;
type Decision = (typeof DECISIONS)[number];

function isDecision(value: unknown): value is Decision {
  return typeof value === 'string' && (DECISIONS as readonly string[]).includes(value);
}

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) return typeof value;
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** One answer, normalized; throws with a message saying what is wrong and what is accepted. */
function readAnswer(id: string, answer: unknown): { decision: Decision; reason?: string } {
  if (isDecision(answer)) return { decision: answer };
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
    throw new TypeError(`the answer for '${id}' is ${describe(answer)}; answer 'approve', 'deny', 'always' or { decision, reason }`);
  }
  const { decision, reason, ...rest } = answer as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new TypeError(`the answer for '${id}' has unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => `'${key}'`).join(', ')}; accepted keys are decision, reason`);
  }
  if (!isDecision(decision)) {
    throw new TypeError(`the answer for '${id}' has decision ${describe(decision)}; use 'approve', 'deny' or 'always'`);
  }
  if (reason === undefined) return { decision };
  if (typeof reason !== 'string') throw new TypeError(`the reason for '${id}' is ${describe(reason)}; give a string`);
  if (reason.length > MAX_ANSWER_REASON_CHARS) {
    throw new TypeError(`the reason for '${id}' is ${reason.length} characters long; at most ${MAX_ANSWER_REASON_CHARS} are accepted`);
  }
  return { decision, reason };
}

/**
 * Checks an update's answers against the calls waiting now: an object naming at least one id,
 * every id pending, every answer well-formed, and no `'always'` for a call whose input is too
 * long to review. Throws a `TypeError` naming the first problem (the update is rejected and
 * nothing changes).
 */
export function checkAnswers(answers: unknown, pending: ReadonlyMap<string, PendingToolCall>): void {
  if (answers === null || typeof answers !== 'object' || Array.isArray(answers)) {
    throw new TypeError(`toolgate.answer takes an object { [id]: answer }, not ${describe(answers)}`);
  }
  const ids = Object.keys(answers);
  if (ids.length === 0) throw new TypeError('toolgate.answer names no call; give { [id]: answer } for a pending id (see the toolgate.pending query)');
  const waiting = [...pending.keys()];
  for (const id of ids) {
    const call = pending.get(id);
    if (!call) {
      const known = waiting.length === 0 ? 'no call is waiting' : `pending: ${waiting.join(', ')}`;
      throw new TypeError(`no pending call has the id '${id}' (${known}); nothing was answered`);
    }
    const { decision } = readAnswer(id, (answers as Record<string, unknown>)[id]);
    if (decision === 'always' && (call.scope === null || !call.reviewable)) {
      throw new TypeError(
        `'${id}' cannot be answered 'always': its input (${call.inputBytes} bytes, sha256 ${call.inputSha256}) is too long to review, so it may only be approved once`,
      );
    }
  }
}

/** The gate's answer for a checked answer (`checkAnswers` first). "Always" covers the call's scope. */
export function callAnswer(answer: ToolgateAnswer, call: PendingToolCall): CallAnswer {
  const { decision, reason } = readAnswer(call.id, answer);
  if (decision === 'deny') return { approved: false, decision: 'denied', decidedBy: 'user', reason: reason ?? 'the user denied this tool call' };
  if (decision === 'always' && call.scope) return { approved: true, decision: 'always', decidedBy: 'user', scope: call.scope };
  return { approved: true, decision: 'approved', decidedBy: 'user' };
}
