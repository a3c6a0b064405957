import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel, type LanguageModel, type ModelMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolgateError } from '../native/errors.js';
import { anchorModelSpec, MODEL_PROVIDERS, resolveModel } from '../worker/models.js';
import { xmlToolCalls } from '../worker/xml-tool-calls.js';
import { loadScriptedModel, scriptedModel, scriptTurnIndex } from './scripted-model.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-scripted-'));
  dirs.push(dir);
  return dir;
}

/** A real tool that adds, counting its calls. */
function adder() {
  const calls: { a: number; b: number }[] = [];
  const add = tool({
    description: 'adds two numbers',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: async (input) => {
      calls.push(input);
      return { sum: input.a + input.b };
    },
  });
  return { calls, tools: { add } };
}

const ADD_THEN_ANSWER = {
  turns: [
    { toolCalls: [{ toolName: 'add', input: { a: 2, b: 3 } }], expect: { userMessage: 'add 2 and 3' } },
    { text: 'The sum is 5.', expect: { toolResult: '"sum":5' } },
  ],
};

type V3 = Extract<LanguageModel, { specificationVersion: 'v3' }>;
type Prompt = Parameters<V3['doGenerate']>[0]['prompt'];
const asV3 = (model: LanguageModel) => model as V3;

async function rejection(promise: PromiseLike<unknown>): Promise<ToolgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ToolgateError);
    return error as ToolgateError;
  }
  throw new Error('expected a rejection');
}

describe('scriptedModel', () => {
  it('is a v3 language model that drives generateText through real tools', async () => {
    const model = scriptedModel(ADD_THEN_ANSWER);
    expect(asV3(model)).toMatchObject({ specificationVersion: 'v3', provider: 'scripted', modelId: 'inline' });
    const { calls, tools } = adder();
    const result = await generateText({ model, tools, prompt: 'Please add 2 and 3.', stopWhen: stepCountIs(5) });
    expect(calls).toEqual([{ a: 2, b: 3 }]);
    expect(result.text).toBe('The sum is 5.');
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(result.steps[0]!.toolCalls[0]).toMatchObject({ toolCallId: 'call-1-1', toolName: 'add', input: { a: 2, b: 3 } });
  });

  it('streams text word by word and tool calls through streamText', async () => {
    const model = scriptedModel([
      { text: 'Adding now.', toolCalls: [{ toolName: 'add', input: { a: 1, b: 1 } }] },
      { text: 'One and one make two.' },
    ]);
    const { calls, tools } = adder();
    const result = streamText({ model, tools, prompt: 'add', stopWhen: stepCountIs(5) });
    const deltas: string[] = [];
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') deltas.push(part.text);
      if (part.type === 'error') throw part.error;
    }
    expect(calls).toEqual([{ a: 1, b: 1 }]);
    expect(deltas).toEqual(['Adding ', 'now.', 'One ', 'and ', 'one ', 'make ', 'two.']);
    expect(await result.text).toBe('One and one make two.');
  });

  it('picks the turn from the prompt alone: a fresh model continues a conversation at the right turn', async () => {
    const script = { turns: [{ toolCalls: [{ toolName: 'add', input: { a: 1, b: 2 } }] }, { toolCalls: [{ toolName: 'add', input: { a: 3, b: 4 } }] }, { text: 'done' }] };
    const first = adder();
    const opening = await generateText({ model: scriptedModel(script), tools: first.tools, prompt: 'go', stopWhen: stepCountIs(1) });
    const messages: ModelMessage[] = [{ role: 'user', content: 'go' }, ...opening.response.messages];
    // A new model object, as in another process: it plays turn 2, not turn 1.
    const second = adder();
    const rest = await generateText({ model: scriptedModel(script), tools: second.tools, messages, stopWhen: stepCountIs(5) });
    expect(first.calls).toEqual([{ a: 1, b: 2 }]);
    expect(second.calls).toEqual([{ a: 3, b: 4 }]);
    expect(rest.text).toBe('done');
    expect(rest.steps[0]!.toolCalls[0]!.toolCallId).toBe('call-2-1');
  });

  it('counts assistant messages, whatever else the prompt holds', () => {
    const prompt: Prompt = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
      { role: 'user', content: [{ type: 'text', text: 'more' }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'x', toolName: 'add', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'x', toolName: 'add', output: { type: 'text', value: '3' } }] },
    ];
    expect(scriptTurnIndex(prompt)).toBe(2);
    expect(scriptTurnIndex([])).toBe(0);
  });

  it('refuses to run past the end of the script, naming it and its turn count', async () => {
    const model = scriptedModel([{ toolCalls: [{ toolName: 'add', input: { a: 1, b: 1 } }] }], { name: 'short.json' });
    const { tools } = adder();
    const error = await rejection(generateText({ model, tools, prompt: 'add', stopWhen: stepCountIs(5) }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('scripted model short.json: the run asks for turn 2, but the script has 1 turn;');
    // Streaming fails the same way, as an error part.
    const streamed = streamText({ model, tools, prompt: 'add', stopWhen: stepCountIs(5), onError: () => {} });
    const errors: unknown[] = [];
    for await (const part of streamed.fullStream) if (part.type === 'error') errors.push(part.error);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toContain('the script has 1 turn');
  });

  it('stops the run when an expectation fails, quoting what came instead', async () => {
    const model = scriptedModel(
      [{ toolCalls: [{ toolName: 'add', input: { a: 2, b: 2 } }] }, { text: 'five', expect: { toolResult: '"sum":5' } }],
      { name: 'wrong.json' },
    );
    const { tools } = adder();
    const error = await rejection(generateText({ model, tools, prompt: 'add', stopWhen: stepCountIs(5) }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('turn 2 (turns[1].expect.toolResult) expects a tool result containing "\\"sum\\":5"');
    expect(error.message).toContain('the tool results since turn 1 were "{\\"sum\\":4}"');

    const task = scriptedModel([{ text: 'ok', expect: { userMessage: 'Fibonacci' } }], { name: 'task.json' });
    const taskError = await rejection(generateText({ model: task, prompt: 'count words' }));
    expect(taskError.message).toContain('turn 1 (turns[0].expect.userMessage) expects a user message containing "Fibonacci", but the user messages at the start were "count words"');
  });

  it('sees denials and errors as tool results', async () => {
    const model = asV3(scriptedModel([{ text: 'a' }, { text: 'b', expect: { toolResult: 'denied: not today' } }, { text: 'c', expect: { toolResult: 'error: disk full' } }]));
    const call = (id: string) => ({ role: 'assistant' as const, content: [{ type: 'tool-call' as const, toolCallId: id, toolName: 'w', input: {} }] });
    const denied: Prompt = [
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      call('1'),
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: '1', toolName: 'w', output: { type: 'execution-denied', reason: 'not today' } }] },
    ];
    await expect(model.doGenerate({ prompt: denied })).resolves.toMatchObject({ content: [{ type: 'text', text: 'b' }] });
    const failed: Prompt = [
      ...denied,
      call('2'),
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: '2', toolName: 'w', output: { type: 'error-text', value: 'disk full' } }] },
    ];
    await expect(model.doGenerate({ prompt: failed })).resolves.toMatchObject({ content: [{ type: 'text', text: 'c' }] });
    // The results of an earlier turn do not count for a later one.
    const stale = asV3(scriptedModel([{ text: 'a' }, { text: 'b' }, { text: 'c', expect: { toolResult: 'not today' } }]));
    const error = await rejection(stale.doGenerate({ prompt: [...denied, { role: 'assistant', content: [{ type: 'text', text: 'b' }] }] }));
    expect(error.message).toContain('no tool result came since turn 2');
  });

  it('checks the script when it is made, and honours an aborted signal', async () => {
    expect(() => scriptedModel([{ toolCalls: [{ name: 'add' }] }] as never, { name: 'x.json' })).toThrow(/x\.json: turns\[0\]\.toolCalls\[0\]\.name/);
    const controller = new AbortController();
    controller.abort(new Error('stop now'));
    await expect(asV3(scriptedModel([{ text: 'a' }])).doGenerate({ prompt: [], abortSignal: controller.signal })).rejects.toThrow('stop now');
  });

  it('plays XML tool calls through the xmlToolCalls middleware', async () => {
    const block = (a: number, b: number) => `<tool>{"server_name": "local", "tool_name": "add", "arguments": {"a": ${a}, "b": ${b}}}</tool>`;
    const base = scriptedModel([{ text: block(20, 22) }, { text: 'It is 42.', expect: { toolResult: '"sum":42' } }]);
    const model = wrapLanguageModel({ model: asV3(base), middleware: xmlToolCalls() });
    const { calls, tools } = adder();
    const result = await generateText({ model, tools, prompt: 'add', stopWhen: stepCountIs(5) });
    expect(calls).toEqual([{ a: 20, b: 22 }]);
    expect(result.text).toBe('It is 42.');
  });
});

describe('loadScriptedModel and resolveModel', () => {
  it('loads a file relative to the current directory, named by its absolute path', async () => {
    const dir = scratch();
    const file = join(dir, 'script.json');
    writeFileSync(file, JSON.stringify(ADD_THEN_ANSWER));
    const model = loadScriptedModel(relative(process.cwd(), file));
    expect(asV3(model).modelId).toBe(file);
    const { calls, tools } = adder();
    expect((await generateText({ model, tools, prompt: 'add 2 and 3', stopWhen: stepCountIs(5) })).text).toBe('The sum is 5.');
    expect(calls).toHaveLength(1);

    const resolved = await resolveModel(`scripted:${relative(process.cwd(), file)}`, { env: {} });
    expect(asV3(resolved)).toMatchObject({ provider: 'scripted', modelId: file });
    expect(MODEL_PROVIDERS).toContain('scripted');
  });

  it('reports a missing, an empty and a malformed script spec clearly', async () => {
    const dir = scratch();
    expect((await rejection(resolveModel(`scripted:${join(dir, 'none.json')}`))).code).toBe('FILE_NOT_FOUND');
    const empty = await rejection(resolveModel('scripted:'));
    expect(empty.message).toContain('names no script; write scripted:<file>');
    writeFileSync(join(dir, 'bad.json'), '{"turns": [{"text": "a"}, {"toolCalls": [{"toolName": "x", "inputs": {}}]}]}');
    const bad = await rejection(resolveModel(`scripted:${join(dir, 'bad.json')}`));
    expect(bad.code).toBe('CONFIG_INVALID');
    expect(bad.message).toContain(`${join(dir, 'bad.json')}: turns[1].toolCalls[0].inputs: unknown key 'inputs'`);
  });

  it('anchors a relative scripted path to a folder and leaves every other spec alone', () => {
    expect(anchorModelSpec('scripted:s.json', '/srv/app')).toBe('scripted:/srv/app/s.json');
    expect(anchorModelSpec('scripted:../s.json', '/srv/app')).toBe('scripted:/srv/s.json');
    expect(anchorModelSpec('scripted:/abs/s.json', '/srv/app')).toBe('scripted:/abs/s.json');
    expect(anchorModelSpec('scripted:', '/srv/app')).toBe('scripted:');
    expect(anchorModelSpec('openai:gpt-4o-mini', '/srv/app')).toBe('openai:gpt-4o-mini');
    expect(anchorModelSpec('openai-compatible:scripted:x', '/srv/app')).toBe('openai-compatible:scripted:x');
  });
});
