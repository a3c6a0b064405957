import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runWorker, type ApprovalRequest, type RunEvent } from '../ts/src/worker/index.js';
import { setCommandWords, wrapWithDefaultApproval } from '../ts/src/approval/approval.js';
import { exec } from '../ts/src/native/exec.js';
import { named, type NamedTool } from '../ts/src/approval/named-tool.js';
import { tempDir } from './helpers/fs.js';
import { offeredToolNames, scriptedModel, toolResultsSeen } from './helpers/mock-model.js';
import { waitUntilGone } from './helpers/processes.js';

/** A tool that counts its executions; `decision` gates it. */
function counter(name: string, decision: 'preApproved' | 'ask' | 'blocked') {
  const calls: unknown[] = [];
  const base = named(
    name,
    tool({
      description: `${name} tool`,
      inputSchema: z.object({ value: z.string() }),
      execute: async ({ value }) => {
        calls.push(value);
        return { echoed: value };
      },
    }),
  );
  return { tool: wrapWithDefaultApproval(base, { default: decision }), calls };
}

describe('runWorker', () => {
  it('runs preApproved tools once and records the call', async () => {
    const echo = counter('echo', 'preApproved');
    const model = scriptedModel([{ toolCalls: [{ toolName: 'echo', input: { value: 'hi' } }] }, { text: 'all done' }]);
    const result = await runWorker({ name: 'w', tools: [echo.tool] }, 'say hi', { model });
    expect(result.status).toBe('completed');
    expect(result.text).toBe('all done');
    expect(echo.calls).toEqual(['hi']);
    expect(result.toolCalls).toMatchObject([{ toolName: 'echo', decision: 'preApproved', output: { echoed: 'hi' } }]);
    expect(result.toolCalls[0]?.durationMs).toBeGreaterThanOrEqual(0);
    expect(result.steps).toHaveLength(2);
    expect(result.usage).toEqual({ inputTokens: 20, outputTokens: 10, totalTokens: 30 });
  });

  it('asks for approval and executes an approved call exactly once', async () => {
    const risky = counter('risky', 'ask');
    const asked: ApprovalRequest[] = [];
    const model = scriptedModel([{ toolCalls: [{ toolName: 'risky', input: { value: 'x' } }] }, { text: 'ok' }]);
    const result = await runWorker({ name: 'w', tools: [risky.tool] }, 'go', {
      model,
      onApproval: (request) => {
        asked.push(request);
        return 'approve';
      },
    });
    expect(asked).toMatchObject([{ toolName: 'risky', input: { value: 'x' } }]);
    expect(risky.calls).toEqual(['x']);
    expect(result.toolCalls).toMatchObject([{ toolName: 'risky', decision: 'approved' }]);
    expect(Object.values(toolResultsSeen(model, 1))).toMatchObject([{ type: 'json', value: { echoed: 'x' } }]);
    // the returned conversation holds the approved call's result, so the run can be continued
    const toolMessages = result.messages.filter((message) => message.role === 'tool');
    expect(JSON.stringify(toolMessages)).toContain('"echoed":"x"');
  });

  it('denies with a reason the model sees, and never executes', async () => {
    const risky = counter('risky', 'ask');
    const model = scriptedModel([{ toolCalls: [{ toolName: 'risky', input: { value: 'x' } }] }, { text: 'understood' }]);
    const result = await runWorker({ name: 'w', tools: [risky.tool] }, 'go', {
      model,
      onApproval: () => ({ decision: 'deny', reason: 'not on a Friday' }),
    });
    expect(risky.calls).toEqual([]);
    expect(result.toolCalls).toMatchObject([{ toolName: 'risky', decision: 'denied', reason: 'not on a Friday' }]);
    expect(Object.values(toolResultsSeen(model, 1))).toEqual([{ type: 'execution-denied', reason: 'not on a Friday' }]);
  });

  it('fails closed when no approval handler is given', async () => {
    const risky = counter('risky', 'ask');
    const model = scriptedModel([{ toolCalls: [{ toolName: 'risky', input: { value: 'x' } }] }, { text: 'ok' }]);
    const events: RunEvent[] = [];
    const result = await runWorker({ name: 'w', tools: [risky.tool] }, 'go', { model, onEvent: (e) => events.push(e) });
    expect(risky.calls).toEqual([]);
    expect(result.toolCalls[0]).toMatchObject({ decision: 'denied' });
    expect(result.toolCalls[0]?.reason).toContain('fail closed');
    expect(events).toContainEqual(expect.objectContaining({ type: 'approval-answered', source: 'no-handler', decision: 'denied' }));
  });

  it('"always" approves later calls of exactly the same call without asking again', async () => {
    const runs: string[] = [];
    const base = named(
      'run',
      tool({
        description: 'run a program',
        inputSchema: z.object({ program: z.string(), arg: z.string() }),
        execute: async ({ program, arg }) => {
          runs.push(`${program} ${arg}`);
          return 'ran';
        },
      }),
    );
    const gated = setCommandWords(wrapWithDefaultApproval(base, { default: 'ask' }), (input) => {
      const { program, arg } = input as { program: string; arg: string };
      return [program, arg];
    });
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'run', input: { program: 'git', arg: 'status' } }] },
      { toolCalls: [{ toolName: 'run', input: { program: 'git', arg: 'status' } }] },
      { toolCalls: [{ toolName: 'run', input: { program: 'git', arg: 'push' } }] },
      { text: 'done' },
    ]);
    const asked: string[] = [];
    const result = await runWorker({ name: 'w', tools: [gated] }, 'go', {
      model,
      onApproval: ({ input }) => {
        const { program, arg } = input as { program: string; arg: string };
        asked.push(`${program} ${arg}`);
        return arg === 'status' ? 'always' : 'deny';
      },
    });
    expect(asked).toEqual(['git status', 'git push']);
    expect(runs).toEqual(['git status', 'git status']);
    expect(result.toolCalls.map((call) => call.decision)).toEqual(['always', 'always', 'denied']);
  });

  it('never offers blocked tools to the model', async () => {
    const open = counter('open', 'preApproved');
    const shut = counter('shut', 'blocked');
    const model = scriptedModel([{ text: 'nothing to do' }]);
    await runWorker({ name: 'w', tools: [open.tool, shut.tool] }, 'go', { model });
    expect(offeredToolNames(model)).toEqual(['ask_question', 'converse', 'open', 'task_completion']);
  });

  it('ends the run on task_completion with its result', async () => {
    const echo = counter('echo', 'preApproved');
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'echo', input: { value: 'a' } }] },
      { toolCalls: [{ toolName: 'task_completion', input: { result: 'the answer is 42' } }] },
      { text: 'never reached' },
    ]);
    const result = await runWorker({ name: 'w', tools: [echo.tool] }, 'go', { model });
    expect(result).toMatchObject({ status: 'task-completed', text: 'the answer is 42' });
    expect(model.doGenerateCalls).toHaveLength(2);
  });

  it('ends the run on ask_question and returns the question', async () => {
    const model = scriptedModel([{ toolCalls: [{ toolName: 'ask_question', input: { question: 'Which branch?' } }] }]);
    const result = await runWorker({ name: 'w', tools: [] }, 'go', { model });
    expect(result).toMatchObject({ status: 'question', question: 'Which branch?', text: 'Which branch?' });
  });

  it('ends the run on converse and returns the reply', async () => {
    const echo = counter('echo', 'preApproved');
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'converse', input: { message: 'Hello! How can I help?' } }] },
      { text: 'never reached' },
    ]);
    const result = await runWorker({ name: 'w', tools: [echo.tool] }, 'hi', { model });
    expect(result).toMatchObject({ status: 'conversed', text: 'Hello! How can I help?' });
    expect(result.question).toBeUndefined();
    expect(model.doGenerateCalls).toHaveLength(1);
    expect(echo.calls).toHaveLength(0);
  });

  it('refuses a tool named converse', async () => {
    const clash = counter('converse', 'preApproved');
    const model = scriptedModel([{ text: 'unused' }]);
    await expect(runWorker({ name: 'w', tools: [clash.tool] }, 'go', { model })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining("'converse' is a reserved tool name"),
    });
  });

  it('stops after maxSteps', async () => {
    const echo = counter('echo', 'preApproved');
    const loop = Array.from({ length: 10 }, () => ({ toolCalls: [{ toolName: 'echo', input: { value: 'again' } }] }));
    const model = scriptedModel(loop);
    const result = await runWorker({ name: 'w', tools: [echo.tool], maxSteps: 5 }, 'go', { model, maxSteps: 3 });
    expect(result.status).toBe('max-steps');
    expect(model.doGenerateCalls).toHaveLength(3);
    expect(echo.calls).toHaveLength(3);
  });

  it('uses the worker max_steps when no option is given', async () => {
    const echo = counter('echo', 'preApproved');
    const model = scriptedModel(Array.from({ length: 10 }, () => ({ toolCalls: [{ toolName: 'echo', input: { value: 'x' } }] })));
    const result = await runWorker({ name: 'w', tools: [echo.tool], maxSteps: 2 }, 'go', { model });
    expect(result.status).toBe('max-steps');
    expect(model.doGenerateCalls).toHaveLength(2);
  });

  it('emits events in order', async () => {
    const echo = counter('echo', 'preApproved');
    const model = scriptedModel([{ toolCalls: [{ toolName: 'echo', input: { value: 'e' } }] }, { text: 'fin' }]);
    const events: RunEvent[] = [];
    await runWorker({ name: 'w', tools: [echo.tool] }, 'go', { model, onEvent: (e) => events.push(e) });
    expect(events.map((e) => e.type)).toEqual(['step-start', 'tool-call', 'tool-result', 'call-recorded', 'step-end', 'step-start', 'step-end']);
  });

  it('aborting stops the loop and kills the running tool process', async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'pid');
    const slow: NamedTool = wrapWithDefaultApproval(
      named(
        'slow',
        tool({
          description: 'runs for a long time',
          inputSchema: z.object({}),
          execute: async (_input, { abortSignal }) =>
            exec({ command: '/bin/sh', args: ['-c', `echo $$ > ${pidFile}; exec sleep 30`], ...(abortSignal ? { signal: abortSignal } : {}) }),
        }),
      ),
      { default: 'preApproved' },
    );
    const controller = new AbortController();
    const model = scriptedModel([{ toolCalls: [{ toolName: 'slow', input: {} }] }, { text: 'never' }]);
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('user pressed ctrl-c')), 500);
    await expect(runWorker({ name: 'w', tools: [slow] }, 'go', { model, signal: controller.signal })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3000);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    expect(await waitUntilGone(pid, 2000)).toBe(true);
  });

  it('rejects reserved tool names and a missing model', async () => {
    const fake = counter('task_completion', 'preApproved');
    await expect(runWorker({ name: 'w', tools: [fake.tool] }, 'go', { model: scriptedModel([]) })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    await expect(runWorker({ name: 'w', tools: [] }, 'go')).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});
