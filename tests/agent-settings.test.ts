/**
 * `toAgentSettings`: a worker's gated tools and stop conditions on the AI SDK's ToolLoopAgent,
 * with approvals still going through toolgate (asked inside the tool; every call at most once).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolLoopAgent } from 'ai';
import { describe, expect, it } from 'vitest';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { toAgentSettings, type ApprovalRequest, type RunEvent } from '../ts/src/worker/index.js';
import { tempDir } from './helpers/fs.js';
import { offeredToolNames, scriptedModel } from './helpers/mock-model.js';

async function workerIn(dir: string) {
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    'name: agentish\ninstructions: be careful\nmax_steps: 5\ntoolsets:\n  shell:\n    default: ask\n    rules:\n      - { pattern: ls, approval: preApproved }\n      - { pattern: rm, approval: blocked }\n  filesystem:\n    approval: { default: ask, tools: { delete_file: blocked } }\n',
  );
  return loadWorker(file);
}

const shell = (command: string) => ({ toolName: 'shell', input: { command } });

describe('toAgentSettings (ToolLoopAgent)', () => {
  it('asks toolgate for approvals inside the tools, records every call, stops at task_completion', async () => {
    const dir = tempDir();
    const worker = await workerIn(dir);
    const model = scriptedModel([
      { toolCalls: [shell('ls'), shell('touch yes.txt'), shell('touch no.txt'), shell('rm -rf x'), { toolName: 'delete_file', input: { path: 'x' } }] },
      { toolCalls: [shell('touch yes.txt')] },
      { toolCalls: [{ toolName: 'task_completion', input: { result: 'all done' } }] },
      { text: 'never reached' },
    ]);
    const asked: ApprovalRequest[] = [];
    const events: RunEvent[] = [];
    const settings = await toAgentSettings(worker, {
      model,
      onApproval: (request) => {
        asked.push(request);
        return (request.input as { command: string }).command === 'touch yes.txt' ? 'always' : { decision: 'deny', reason: 'not that' };
      },
      onEvent: (event) => events.push(event),
    });
    const agent = new ToolLoopAgent(settings);
    const result = await agent.generate({ prompt: 'make files' });

    expect(result.steps).toHaveLength(3);
    // The answer is the result's text, as runWorker's text is.
    expect(result.text).toBe('all done');
    expect(offeredToolNames(model)).not.toContain('delete_file');
    expect(offeredToolNames(model)).toContain('task_completion');
    expect(asked.map((request) => (request.input as { command: string }).command)).toEqual(['touch yes.txt', 'touch no.txt']);
    expect(existsSync(join(dir, 'yes.txt'))).toBe(true);
    expect(existsSync(join(dir, 'no.txt'))).toBe(false);
    const records = events.flatMap((event) => (event.type === 'call-recorded' ? [event.record] : []));
    const summary = records.map((record) => [record.toolName, (record.input as { command?: string }).command ?? '', record.decision, record.decidedBy]);
    expect(summary).toEqual(
      expect.arrayContaining([
        ['shell', 'ls', 'preApproved', 'rule'],
        ['shell', 'touch yes.txt', 'always', 'user'],
        ['shell', 'touch no.txt', 'denied', 'user'],
        ['shell', 'rm -rf x', 'blocked', 'rule'],
        ['delete_file', '', 'blocked', 'config'],
        ['shell', 'touch yes.txt', 'always', 'always'],
      ]),
    );
    expect(records).toHaveLength(6);
    // the model read the denial's reason
    const denial = JSON.stringify(model.doGenerateCalls[1]?.prompt);
    expect(denial).toContain("tool 'shell' was not run: not that");
  });

  it('fails closed without a handler, and checks its options', async () => {
    const dir = tempDir();
    const worker = await workerIn(dir);
    const model = scriptedModel([{ toolCalls: [shell('touch x.txt')] }, { text: 'ok' }]);
    const agent = new ToolLoopAgent(await toAgentSettings(worker, { model }));
    await agent.generate({ prompt: 'go' });
    expect(existsSync(join(dir, 'x.txt'))).toBe(false);
    await expect(toAgentSettings(worker, { model, onApproval: 'defer' as never })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(toAgentSettings(worker, { model, maxSteps: 0 })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(toAgentSettings(worker, { model, extra: 1 } as never)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('returns the answer of task_completion, ask_question and converse as the text, with generate and stream', async () => {
    const dir = tempDir();
    const worker = await workerIn(dir);
    for (const [toolName, input, answer] of [
      ['task_completion', { result: 'the answer: 42' }, 'the answer: 42'],
      ['ask_question', { question: 'which branch?' }, 'which branch?'],
      ['converse', { message: 'hello there' }, 'hello there'],
    ] as const) {
      const generated = await new ToolLoopAgent(
        await toAgentSettings(worker, { model: scriptedModel([{ toolCalls: [shell('ls')] }, { toolCalls: [{ toolName, input }] }]) }),
      ).generate({ prompt: 'go' });
      expect(generated.text).toBe(answer);
      expect(generated.steps).toHaveLength(2);
      const streamed = await new ToolLoopAgent(await toAgentSettings(worker, { model: scriptedModel([{ toolCalls: [{ toolName, input }] }]) })).stream({
        prompt: 'go',
      });
      let shown = '';
      for await (const delta of streamed.textStream) shown += delta;
      expect(shown).toBe(answer);
      expect(await streamed.text).toBe(answer);
    }
    // A run that ends with the model's own text keeps it.
    const plain = await new ToolLoopAgent(await toAgentSettings(worker, { model: scriptedModel([{ text: 'just text' }]) })).generate({ prompt: 'go' });
    expect(plain.text).toBe('just text');
  });
});
