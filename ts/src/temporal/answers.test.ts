import { describe, expect, it } from 'vitest';
import { callAnswer, checkAnswers, MAX_ANSWER_REASON_CHARS } from './answers.js';
import type { PendingToolCall } from './contract.js';

const call = (id: string, scope: PendingToolCall['scope'] = { kind: 'call', tool: 'bump', input: { n: 1 }, description: 'exactly this call' }): PendingToolCall => ({
  id,
  toolName: 'bump',
  input: { n: 1 },
  toolCallId: `call-${id}`,
  scope,
  review: 'n: 1',
  reviewable: scope !== null,
  inputBytes: 7,
  inputSha256: 'ab'.repeat(32),
});

const waiting = new Map([
  ['1.1', call('1.1')],
  ['1.2', call('1.2', null)],
]);

describe('checkAnswers', () => {
  it('accepts answers for pending ids in every form', () => {
    expect(() => checkAnswers({ '1.1': 'approve' }, waiting)).not.toThrow();
    expect(() => checkAnswers({ '1.1': 'always', '1.2': 'deny' }, waiting)).not.toThrow();
    expect(() => checkAnswers({ '1.2': { decision: 'deny', reason: 'no' } }, waiting)).not.toThrow();
    expect(() => checkAnswers({ '1.1': { decision: 'approve' } }, waiting)).not.toThrow();
  });

  it('rejects an id that is not pending, naming the ones that are', () => {
    expect(() => checkAnswers({ '2.1': 'approve' }, waiting)).toThrow("no pending call has the id '2.1' (pending: 1.1, 1.2); nothing was answered");
    expect(() => checkAnswers({ '1.1': 'approve', x: 'deny' }, waiting)).toThrow("'x'");
    expect(() => checkAnswers({ '1.1': 'approve' }, new Map())).toThrow('no call is waiting');
    // Inherited keys are not ids.
    expect(() => checkAnswers({ constructor: 'approve' }, waiting)).toThrow("'constructor'");
  });

  it('rejects malformed answers and arguments', () => {
    expect(() => checkAnswers({ '1.1': 'yes' }, waiting)).toThrow("answer 'approve', 'deny', 'always' or { decision, reason }");
    expect(() => checkAnswers({ '1.1': { decision: 'maybe' } }, waiting)).toThrow("use 'approve', 'deny' or 'always'");
    expect(() => checkAnswers({ '1.1': { decision: 'deny', reason: 7 } }, waiting)).toThrow('give a string');
    expect(() => checkAnswers({ '1.1': { decision: 'deny', scope: 'tool' } }, waiting)).toThrow("unknown key 'scope'");
    expect(() => checkAnswers({ '1.1': { decision: 'deny', reason: 'x'.repeat(MAX_ANSWER_REASON_CHARS + 1) } }, waiting)).toThrow('at most');
    expect(() => checkAnswers({}, waiting)).toThrow('names no call');
    for (const bad of [null, 'approve', ['approve'], 3]) expect(() => checkAnswers(bad, waiting)).toThrow('takes an object');
  });

  it("refuses 'always' for an input too long to review", () => {
    expect(() => checkAnswers({ '1.2': 'always' }, waiting)).toThrow("'1.2' cannot be answered 'always'");
    expect(() => checkAnswers({ '1.2': { decision: 'always' } }, waiting)).toThrow('too long to review');
  });
});

describe('callAnswer', () => {
  it("turns answers into the gate's answers", () => {
    const pending = call('1.1');
    expect(callAnswer('approve', pending)).toEqual({ approved: true, decision: 'approved', decidedBy: 'user' });
    expect(callAnswer('deny', pending)).toEqual({ approved: false, decision: 'denied', decidedBy: 'user', reason: 'the user denied this tool call' });
    expect(callAnswer({ decision: 'deny', reason: 'not now' }, pending)).toMatchObject({ approved: false, reason: 'not now' });
    expect(callAnswer('always', pending)).toEqual({ approved: true, decision: 'always', decidedBy: 'user', scope: pending.scope });
  });
});
