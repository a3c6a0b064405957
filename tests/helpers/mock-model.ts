import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

/** One scripted model turn: text, or tool calls (ids are generated). */
export type ScriptedTurn = { text: string } | { toolCalls: { toolName: string; input: unknown }[] };

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/**
 * The one allowed fake: a language model that plays back `turns` in order (AI SDK's
 * MockLanguageModelV3), for `generateText` and `streamText` alike (streamed text comes word by
 * word). Running past the script is a test failure, not a silent empty answer.
 */
export function scriptedModel(turns: readonly ScriptedTurn[]): MockLanguageModelV3 {
  let next = 0;
  let callId = 0;
  return new MockLanguageModelV3({
    doStream: async () => {
      const turn = turns[next++];
      if (!turn) throw new Error(`the scripted model ran out of turns after ${turns.length}`);
      const parts: unknown[] = [{ type: 'stream-start', warnings: [] }];
      if ('text' in turn) {
        parts.push({ type: 'text-start', id: 't' });
        for (const delta of turn.text.match(/\S+\s*|\s+/g) ?? []) parts.push({ type: 'text-delta', id: 't', delta });
        parts.push({ type: 'text-end', id: 't' });
      } else {
        for (const call of turn.toolCalls) {
          parts.push({ type: 'tool-call', toolCallId: `call-${++callId}`, toolName: call.toolName, input: JSON.stringify(call.input) });
        }
      }
      const finishReason = 'text' in turn ? { unified: 'stop', raw: 'stop' } : { unified: 'tool-calls', raw: 'tool_calls' };
      parts.push({ type: 'finish', finishReason, usage: USAGE });
      return { stream: simulateReadableStream({ chunks: parts as never[] }) };
    },
    doGenerate: async () => {
      const turn = turns[next++];
      if (!turn) throw new Error(`the scripted model ran out of turns after ${turns.length}`);
      if ('text' in turn) {
        return { content: [{ type: 'text', text: turn.text }], finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE, warnings: [] };
      }
      return {
        content: turn.toolCalls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: `call-${++callId}`,
          toolName: call.toolName,
          input: JSON.stringify(call.input),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: USAGE,
        warnings: [],
      };
    },
  });
}

/** The tool names the model was offered in its `index`-th call. */
export function offeredToolNames(model: MockLanguageModelV3, index = 0): string[] {
  return (model.doGenerateCalls[index]?.tools ?? []).map((tool) => tool.name).sort();
}

/** The tool results the model saw in its `index`-th call, by tool call id. */
export function toolResultsSeen(model: MockLanguageModelV3, index: number): Record<string, unknown> {
  const seen: Record<string, unknown> = {};
  for (const message of model.doGenerateCalls[index]?.prompt ?? []) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') seen[part.toolCallId] = part.output;
  }
  return seen;
}
