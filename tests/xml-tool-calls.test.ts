import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadWorker, readToolBlock, runWorker, xmlToolCalls } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model without tool calling: it only ever answers with the scripted texts, in order. */
function textModel(replies: readonly string[]): MockLanguageModelV3 {
  let next = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const text = replies[next++];
      if (text === undefined) throw new Error(`the scripted model ran out of replies after ${replies.length}`);
      return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE, warnings: [] };
    },
  });
}

function promptText(model: MockLanguageModelV3, index: number): string {
  return JSON.stringify(model.doGenerateCalls[index]?.prompt ?? []);
}

function weatherTool(calls: unknown[]) {
  return tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async (input) => {
      calls.push(input);
      return { city: input.city, sky: 'clear' };
    },
  });
}

describe('xmlToolCalls', () => {
  it('describes the tools in the system prompt and turns <tool> blocks into real calls', async () => {
    const calls: unknown[] = [];
    const base = textModel([
      'Let me check. <tool>{"server_name": "local", "tool_name": "weather", "arguments": {"city": "Oslo"}}</tool>\n' +
        '<tool><![CDATA[{"server_name": "local", "tool_name": "weather", "arguments": {"city": "Bergen"}}]]></tool>',
      'Both are clear.',
    ]);
    const result = await generateText({
      model: wrapLanguageModel({ model: base, middleware: xmlToolCalls() }),
      system: 'You are helpful.',
      tools: { weather: weatherTool(calls) },
      prompt: 'Weather in Oslo and Bergen?',
      stopWhen: stepCountIs(5),
    });
    expect(calls).toEqual([{ city: 'Oslo' }, { city: 'Bergen' }]);
    expect(result.text).toBe('Both are clear.');
    expect(result.steps[0]?.text).toBe('Let me check.');
    const first = base.doGenerateCalls[0]!;
    expect(first.tools).toBeUndefined();
    expect(first.prompt[0]).toMatchObject({ role: 'system' });
    const system = (first.prompt[0] as { content: string }).content;
    expect(system).toMatch(/^You are helpful\.\n\nYou can call tools/);
    expect(system).toContain('<tool>{"server_name": "local", "tool_name": "<tool name>"');
    expect(system).toContain('- weather: The weather in a city');
    expect(system).toContain('"city":{"type":"string"}');
    // The second call sees the earlier calls and their results as text, not as tool messages.
    const second = promptText(base, 1);
    expect(base.doGenerateCalls[1]!.prompt.some((message) => message.role === 'tool')).toBe(false);
    expect(second).toContain('<tool>{\\"server_name\\":\\"local\\",\\"tool_name\\":\\"weather\\",\\"arguments\\":{\\"city\\":\\"Oslo\\"}}</tool>');
    expect(second).toContain('<tool_result tool_name=\\"weather\\">{\\"city\\":\\"Bergen\\",\\"sky\\":\\"clear\\"}</tool_result>');
  });

  it('reports malformed blocks back to the model, which can try again', async () => {
    const calls: unknown[] = [];
    const base = textModel([
      '<tool>{"server_name": "local", "tool_name": "weather", "arguments": {"city": "Oslo"</tool>',
      '<tool>{"server_name": "local", "arguments": {}}</tool>',
      '<tool>{"tool_name": "weather", "arguments": ["Oslo"]}</tool>',
      '<tool>{"tool_name": "weather", "arguments": {"town": "Oslo"}}</tool>',
      '<tool>{"tool_name": "weather", "arguments": {"city": "Oslo"}}</tool>',
      'Clear in Oslo.',
    ]);
    const result = await generateText({
      model: wrapLanguageModel({ model: base, middleware: xmlToolCalls() }),
      tools: { weather: weatherTool(calls) },
      prompt: 'Weather in Oslo?',
      stopWhen: stepCountIs(10),
    });
    expect(result.text).toBe('Clear in Oslo.');
    expect(calls).toEqual([{ city: 'Oslo' }]);
    expect(promptText(base, 1)).toContain('malformed <tool> block: the JSON does not parse');
    expect(promptText(base, 2)).toContain('unnamed_tool_call');
    expect(promptText(base, 3)).toContain('\\"arguments\\" is not a JSON object');
    expect(promptText(base, 4)).toMatch(/error: .*city/);
  });

  it('leaves replies without blocks alone and caps the calls of one reply', async () => {
    const calls: unknown[] = [];
    const many = Array.from({ length: 3 }, (_, i) => `<tool>{"tool_name": "weather", "arguments": {"city": "c${i}"}}</tool>`).join('');
    const base = textModel([many, 'done']);
    const result = await generateText({
      model: wrapLanguageModel({ model: base, middleware: xmlToolCalls({ maxCallsPerReply: 2 }) }),
      tools: { weather: weatherTool(calls) },
      prompt: 'go',
      stopWhen: stepCountIs(5),
    });
    expect(calls).toEqual([{ city: 'c0' }, { city: 'c1' }]);
    expect(promptText(base, 1)).toContain('more than 2 <tool> blocks in one reply');
    expect(result.text).toBe('done');
    expect(() => xmlToolCalls({ maxCallsPerReply: 0 })).toThrow(/maxCallsPerReply/);
  });

  it('works with streamText', async () => {
    const calls: unknown[] = [];
    const base = textModel(['<tool>{"tool_name": "weather", "arguments": {"city": "Rome"}}</tool>', 'Sunny.']);
    const result = streamText({
      model: wrapLanguageModel({ model: base, middleware: xmlToolCalls() }),
      tools: { weather: weatherTool(calls) },
      prompt: 'Rome?',
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe('Sunny.');
    expect(calls).toEqual([{ city: 'Rome' }]);
  });

  it('reads blocks strictly', () => {
    expect(readToolBlock(' {"tool_name": "a", "arguments": {"x": 1}} ')).toEqual({ toolName: 'a', input: '{"x":1}' });
    expect(readToolBlock('<![CDATA[{"tool_name": "a"}]]>')).toEqual({ toolName: 'a', input: '{}' });
    expect(readToolBlock('{"tool_name": "a", "arguments": 1}').error).toContain('not a JSON object');
    expect(readToolBlock('not json').toolName).toBe('unnamed_tool_call');
    expect(readToolBlock(`{"tool_name": "a", "arguments": {"x": "${'y'.repeat(300_000)}"}}`).error).toContain('longer than');
  });

  it('tool_call_format: xml in a worker file runs every call through the same approvals', async () => {
    const dir = tempDir();
    const path = join(dir, 'worker.yaml');
    writeFileSync(
      path,
      'name: calc\ntool_call_format: xml\ntoolsets:\n  builtins:\n    tools: [math_calculate, file_create]\n',
    );
    const worker = await loadWorker(path);
    expect(worker.toolCallFormat).toBe('xml');
    const model = textModel([
      '<tool>{"server_name": "local", "tool_name": "math_calculate", "arguments": {"expression": "6 * 7"}}</tool>',
      '<tool>{"server_name": "local", "tool_name": "file_create", "arguments": {"filename": "x.md", "content": "x"}}</tool>',
      '<tool>{"server_name": "local", "tool_name": "task_completion", "arguments": {"result": "42"}}</tool>',
    ]);
    const asked: string[] = [];
    const result = await runWorker(worker, 'What is 6 * 7?', {
      model,
      onApproval: async (request) => {
        asked.push(request.toolName);
        return { decision: 'deny' as const, reason: 'not now' };
      },
    });
    expect(result).toMatchObject({ status: 'task-completed', text: '42' });
    expect(asked).toEqual(['file_create']);
    expect(result.toolCalls.map((call) => [call.toolName, call.decision])).toEqual([
      ['math_calculate', 'preApproved'],
      ['file_create', 'denied'],
    ]);
    expect(result.toolCalls[0]?.output).toMatchObject({ result: 42 });
    expect(model.doGenerateCalls[0]?.tools).toBeUndefined();
    expect(JSON.stringify(model.doGenerateCalls[0]?.prompt)).toContain('- task_completion:');
    expect(JSON.stringify(model.doGenerateCalls[2]?.prompt)).toContain('not now');
  });
});
