import { describe, expect, it } from 'vitest';
import type { ModelStepInput, ModelStepResult, PlannedCall, RunPlan, ToolCallInput, ToolCallResult } from './contract.js';
import { checkRunInput, lostCallReason, RunLoop, type RunLoopActivities } from './durable-loop.js';

const TIMEOUTS = { heartbeatTimeoutMs: 30_000, toolCallTimeoutMs: 3_600_000, modelStepTimeoutMs: 600_000, readOnlyAttempts: 3 };
const PLAN: RunPlan = { name: 'w', identity: '{}', maxSteps: 5, readOnlyTools: [], audited: false, timeouts: TIMEOUTS };
const REF = { worker: '/w.yaml', identity: '{}', runId: 'run-1' };
const SCOPE = { kind: 'call' as const, tool: 'bump', description: 'exactly this call' };

const call = (id: string, action: PlannedCall['action'], extra: object = {}): PlannedCall =>
  ({ toolCallId: id, toolName: 'bump', input: { id }, action, ...extra }) as PlannedCall;
const ask = (id: string) =>
  call(id, 'ask', { request: { toolName: 'bump', input: { id }, toolCallId: id, scope: SCOPE, review: `id: ${id}`, reviewable: true, inputBytes: 10, inputSha256: 'x' } });

function reply(step: number, calls: PlannedCall[], extra: Partial<ModelStepResult> = {}): ModelStepResult {
  return {
    messages: [{ role: 'assistant', content: `step ${step}` }],
    step: { step, text: `step ${step}`, finishReason: calls.length ? 'tool-calls' : 'stop', toolCalls: [] },
    usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
    finishReason: calls.length ? 'tool-calls' : 'stop',
    text: `step ${step}`,
    calls,
    ...extra,
  };
}

/** Activities that replay `replies`, run every call at once, and wait by polling (answers come from the test). */
function activities(replies: ModelStepResult[], options: { covered?: (input: ToolCallInput[]) => boolean[]; timesOut?: boolean } = {}) {
  const ran: ToolCallInput[] = [];
  const steps: ModelStepInput[] = [];
  const fake: RunLoopActivities = {
    modelStep: async (input) => {
      steps.push(structuredClone(input));
      const next = replies[input.step - 1];
      if (!next) throw new Error(`no reply for step ${input.step}`);
      return next;
    },
    toolCall: async (input): Promise<ToolCallResult> => {
      ran.push(input);
      const denied = input.answer && !input.answer.approved;
      return {
        result: { type: 'tool-result', toolCallId: input.toolCallId, toolName: input.toolName, output: { type: 'text', value: denied ? 'denied' : 'ran' } },
        record: { toolCallId: input.toolCallId, toolName: input.toolName, input: input.input, decision: denied ? 'denied' : (input.answer?.decision ?? 'preApproved'), decidedBy: input.answer?.decidedBy ?? 'config', durationMs: 0 },
      };
    },
    coveredCalls: async (input) => (options.covered ?? (() => input.calls.map(() => false)))(input.calls as ToolCallInput[]),
    wait: (settled, timeoutMs) =>
      new Promise((resolve) => {
        const check = () => {
          if (settled()) resolve(true);
          else if (options.timesOut && timeoutMs !== undefined) resolve(false);
          else setTimeout(check, 1);
        };
        check();
      }),
    now: () => 0,
  };
  return { fake, ran, steps };
}

async function until<T>(probe: () => T | undefined): Promise<T> {
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

describe('RunLoop', () => {
  it('runs calls that need no approval at once, asks the others, and answers the model in call order', async () => {
    const rejected = call('c', 'rejected', {
      result: { type: 'tool-result', toolCallId: 'c', toolName: 'bump', output: { type: 'error-text', value: 'invalid' } },
      record: { toolCallId: 'c', toolName: 'bump', input: {}, decision: 'invalid-input', decidedBy: 'schema', durationMs: 0 },
    });
    const { fake, ran, steps } = activities([reply(1, [ask('a'), call('b', 'run'), rejected]), reply(2, [])]);
    const loop = new RunLoop(REF, PLAN, fake);
    const running = loop.run('go');
    const [pending] = await until(() => (loop.pendingCalls().length ? loop.pendingCalls() : undefined));
    expect(pending).toMatchObject({ id: '1.1', toolCallId: 'a', scope: SCOPE });
    expect(ran.map((input) => input.toolCallId)).toEqual(['b']);
    expect(loop.answer({ '1.1': 'approve' })).toEqual({ answered: ['1.1'], pending: [] });
    const result = await running;
    expect(result.status).toBe('completed');
    expect(result.text).toBe('step 2');
    expect(ran.map((input) => [input.toolCallId, input.answer?.decision])).toEqual([['b', undefined], ['a', 'approved']]);
    expect(result.toolCalls.map((record) => record.toolCallId)).toEqual(['c', 'b', 'a']);
    // The second step saw one tool message with the three results in the model's order.
    const tool = steps[1]!.messages.at(-1) as { role: string; content: { toolCallId: string }[] };
    expect(tool.role).toBe('tool');
    expect(tool.content.map((part) => part.toolCallId)).toEqual(['a', 'b', 'c']);
    expect(result.usage).toEqual({ inputTokens: 2, outputTokens: 4, totalTokens: 6 });
  });

  it('an "always" given while other calls wait asks the core which of them it covers', async () => {
    const { fake, ran } = activities([reply(1, [ask('a'), ask('b')]), reply(2, [])], { covered: (calls) => calls.map((input) => input.toolCallId === 'b') });
    const loop = new RunLoop(REF, PLAN, fake);
    const running = loop.run('go');
    await until(() => (loop.pendingCalls().length === 2 ? true : undefined));
    loop.answer({ '1.1': 'always' });
    await running;
    expect(ran.map((input) => [input.toolCallId, input.answer?.decision, input.answer?.decidedBy])).toEqual([
      ['a', 'always', 'user'],
      ['b', 'always', 'always'],
    ]);
  });

  it('later model steps get the "always" scopes given so far', async () => {
    const { fake, steps } = activities([reply(1, [ask('a')]), reply(2, [])]);
    const loop = new RunLoop(REF, PLAN, fake);
    const running = loop.run('go');
    await until(() => (loop.pendingCalls().length ? true : undefined));
    loop.answer({ '1.1': 'always' });
    await running;
    expect(steps[0]!.always).toEqual([]);
    expect(steps[1]!.always).toEqual([SCOPE]);
  });

  it('an approval timeout denies what still waits, with a reason naming the timeout', async () => {
    const { fake, ran } = activities([reply(1, [ask('a')]), reply(2, [])], { timesOut: true });
    const loop = new RunLoop(REF, { ...PLAN, approvalTimeoutMs: 1000 }, fake, '1s');
    await loop.run('go');
    expect(ran[0]!.answer).toMatchObject({ approved: false, decidedBy: 'no-handler' });
    expect(ran[0]!.answer!.reason).toContain('approval timeout (1s)');
    expect(loop.pendingCalls()).toEqual([]);
  });

  it('at the step limit, calls that would ask are not asked and the run stops at max-steps', async () => {
    const { fake, ran } = activities([reply(1, [call('b', 'run'), ask('a')])]);
    const result = await new RunLoop(REF, { ...PLAN, maxSteps: 1 }, fake).run('go');
    expect(result.status).toBe('max-steps');
    expect(ran.map((input) => input.toolCallId)).toEqual(['b']);
  });

  it('ends where the model step says, and retries a result that broke the output schema', async () => {
    const retry = { type: 'tool-result' as const, toolCallId: 't', toolName: 'task_completion', output: { type: 'error-text', value: 'fix it' } };
    const { fake, steps } = activities([
      reply(1, [], { retry }),
      reply(2, [], { end: { status: 'question', text: 'which one?', question: 'which one?' } }),
    ]);
    const result = await new RunLoop(REF, PLAN, fake).run('go');
    expect(result).toMatchObject({ status: 'question', text: 'which one?', question: 'which one?' });
    expect(steps[1]!.messages.at(-1)).toEqual({ role: 'tool', content: [retry] });
  });

  it('the update refuses answers for calls that do not wait', () => {
    const loop = new RunLoop(REF, PLAN, activities([]).fake);
    expect(() => loop.checkAnswers({ '1.1': 'approve' })).toThrow('no call is waiting');
    expect(loop.answer({ '1.1': 'approve' })).toEqual({ answered: [], pending: [] });
  });
});

describe('checkRunInput', () => {
  it('names what is wrong with the argument', () => {
    expect(checkRunInput({ worker: '/w.yaml', input: 'x' })).toBeUndefined();
    expect(checkRunInput({ worker: '/w.yaml', input: 'x', maxSteps: 3, approvalTimeout: '3 days' })).toBeUndefined();
    expect(checkRunInput(null)).toContain('takes one argument');
    expect(checkRunInput([])).toContain('not a list');
    expect(checkRunInput({ worker: 'w.yaml', input: 'x' })).toContain("'worker' must be the absolute path");
    expect(checkRunInput({ worker: '/w.yaml' })).toContain("'input' must be the task");
    expect(checkRunInput({ worker: '/w.yaml', input: 'x', maxsteps: 3 })).toContain("unknown key 'maxsteps'");
    expect(checkRunInput({ worker: '/w.yaml', input: 'x', maxSteps: '3' })).toContain("'maxSteps' must be a number");
    expect(checkRunInput({ worker: '/w.yaml', input: 'x', approvalTimeout: {} })).toContain("'approvalTimeout'");
  });
});

describe('lostCallReason', () => {
  it('says what happened to the activity', () => {
    expect(lostCallReason('HEARTBEAT', 'x', TIMEOUTS)).toContain('no heartbeat for 30 s');
    expect(lostCallReason('START_TO_CLOSE', 'x', TIMEOUTS)).toContain('3600 s');
    expect(lostCallReason(undefined, 'worker shut down', TIMEOUTS)).toBe('its activity failed: worker shut down');
  });
});
