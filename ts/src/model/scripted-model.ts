import { resolve } from 'node:path';
import type { LanguageModel } from 'ai';
import { ToolgateError } from '../native/errors.js';
import { checkScript, readScriptFile, type ModelScript, type ScriptedTurn } from './script.js';

// The provider specification (v3) as the installed `ai` sees it; no runtime dependency on a
// provider package, and ai 7 accepts v3 models as they are.
type ModelV3 = Extract<LanguageModel, { specificationVersion: 'v3' }>;
type CallOptions = Parameters<ModelV3['doGenerate']>[0];
type Prompt = CallOptions['prompt'];
type GenerateResult = Awaited<ReturnType<ModelV3['doGenerate']>>;
type StreamResult = Awaited<ReturnType<ModelV3['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer T> ? T : never;

export interface ScriptedModelOptions {
  /** The name errors and the run's model label use (default `inline`; a file's path for `loadScriptedModel`). */
  name?: string;
}

/** The usage a script reports: it reads and writes no tokens. */
const NO_USAGE: GenerateResult['usage'] = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
/** How much of what the model received an `expect` failure quotes. */
const QUOTE_CHARS = 600;

/**
 * The turn a call plays: how many times the model has answered in this conversation, i.e. the
 * assistant messages in the prompt. It depends on the prompt alone, so a run resumed in another
 * process, or a step replayed by a workflow engine, gets the same answer.
 */
export function scriptTurnIndex(prompt: readonly { role: string }[]): number {
  return prompt.filter((message) => message.role === 'assistant').length;
}

function toolOutputText(output: { type: string; value?: unknown; reason?: string }): string {
  switch (output.type) {
    case 'text':
      return String(output.value);
    case 'error-text':
      return `error: ${String(output.value)}`;
    case 'error-json':
      return `error: ${JSON.stringify(output.value)}`;
    case 'execution-denied':
      return `denied${output.reason ? `: ${output.reason}` : ''}`;
    case 'content':
      return (Array.isArray(output.value) ? output.value : [])
        .map((part: { type?: string; text?: string }) => (part.type === 'text' ? String(part.text) : `[${String(part.type)}]`))
        .join('\n');
    default:
      return JSON.stringify(output.value);
  }
}

/** What the model received since its previous turn: tool results and user texts. */
function receivedSinceLastTurn(prompt: Prompt): { toolResults: string[]; userTexts: string[] } {
  let last = -1;
  prompt.forEach((message, index) => {
    if (message.role === 'assistant') last = index;
  });
  const toolResults: string[] = [];
  const userTexts: string[] = [];
  for (const message of prompt.slice(last + 1)) {
    if (message.role === 'tool') {
      for (const part of message.content) if (part.type === 'tool-result') toolResults.push(toolOutputText(part.output));
    } else if (message.role === 'user') {
      for (const part of message.content) {
        if (part.type !== 'text') continue;
        // With `tool_call_format: xml` the results come back as <tool_result> text.
        if (part.text.startsWith('<tool_result')) toolResults.push(part.text);
        else userTexts.push(part.text);
      }
    }
  }
  return { toolResults, userTexts };
}

function quote(texts: readonly string[]): string {
  const joined = texts.join(' | ');
  return joined.length > QUOTE_CHARS ? `${JSON.stringify(joined.slice(0, QUOTE_CHARS))}… (${joined.length} characters)` : JSON.stringify(joined);
}

/** The script's checks of turn `index`; a failed one is `CONFIG_INVALID` saying what came instead. */
function checkExpectations(turn: ScriptedTurn, index: number, prompt: Prompt, name: string): void {
  const expect = turn.expect;
  if (!expect) return;
  const received = receivedSinceLastTurn(prompt);
  const since = index === 0 ? 'at the start' : `since turn ${index}`;
  const checks = [
    { key: 'toolResult', wanted: expect.toolResult, texts: received.toolResults, what: 'tool result' },
    { key: 'userMessage', wanted: expect.userMessage, texts: received.userTexts, what: 'user message' },
  ] as const;
  for (const { key, wanted, texts, what } of checks) {
    if (wanted === undefined || texts.some((text) => text.includes(wanted))) continue;
    const got = texts.length === 0 ? `no ${what} came ${since}` : `the ${what}s ${since} were ${quote(texts)}`;
    throw new ToolgateError(
      'CONFIG_INVALID',
      `scripted model ${name}: turn ${index + 1} (turns[${index}].expect.${key}) expects a ${what} containing ${JSON.stringify(wanted)}, but ${got}; the run went differently from the script`,
      { layer: 'config' },
    );
  }
}

/** The turn this call plays, checked: past the end of the script is an error, never an empty answer. */
function turnFor(script: ModelScript, options: CallOptions, name: string): { turn: ScriptedTurn; index: number } {
  options.abortSignal?.throwIfAborted();
  const index = scriptTurnIndex(options.prompt);
  const turn = script.turns[index];
  if (!turn) {
    const count = script.turns.length;
    throw new ToolgateError(
      'CONFIG_INVALID',
      `scripted model ${name}: the run asks for turn ${index + 1}, but the script has ${count} turn${count === 1 ? '' : 's'}; add turns to the script, or end the run sooner (a turn with only text, or a task_completion call)`,
      { layer: 'config' },
    );
  }
  checkExpectations(turn, index, options.prompt, name);
  return { turn, index };
}

function toolCallsOf(turn: ScriptedTurn, index: number) {
  return (turn.toolCalls ?? []).map((call, position) => ({
    type: 'tool-call' as const,
    // Derived from the turn, so a replayed step produces the same ids.
    toolCallId: `call-${index + 1}-${position + 1}`,
    toolName: call.toolName,
    input: JSON.stringify(call.input ?? {}),
  }));
}

function finishReasonOf(turn: ScriptedTurn): GenerateResult['finishReason'] {
  return turn.toolCalls ? { unified: 'tool-calls', raw: 'tool-calls' } : { unified: 'stop', raw: 'stop' };
}

/**
 * A language model that replays a script instead of calling a provider, for demos, CI and tests
 * that run the whole loop offline (docs/scripted-model.md). Each call answers with the turn
 * whose index is the number of assistant messages in the prompt, so the answer depends only on
 * the conversation: a resumed run or another process continues at the right turn. Running past
 * the end of the script, or a failed `expect`, is a `CONFIG_INVALID` error.
 *
 * `script` is `{ turns: [...] }` or the list of turns; it is checked here (`CONFIG_INVALID`
 * naming the place). The model implements the AI SDK's provider specification (v3).
 */
export function scriptedModel(script: ModelScript | readonly ScriptedTurn[], options: ScriptedModelOptions = {}): LanguageModel {
  const name = options.name ?? 'inline';
  const checked = checkScript(script, name);
  const model: ModelV3 = {
    specificationVersion: 'v3',
    provider: 'scripted',
    modelId: name,
    supportedUrls: {},
    async doGenerate(call: CallOptions): Promise<GenerateResult> {
      const { turn, index } = turnFor(checked, call, name);
      return {
        content: [...(turn.text ? [{ type: 'text' as const, text: turn.text }] : []), ...toolCallsOf(turn, index)],
        finishReason: finishReasonOf(turn),
        usage: NO_USAGE,
        response: { id: `scripted-${index + 1}`, modelId: name },
        warnings: [],
      };
    },
    async doStream(call: CallOptions): Promise<StreamResult> {
      const { turn, index } = turnFor(checked, call, name);
      const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }, { type: 'response-metadata', id: `scripted-${index + 1}`, modelId: name }];
      if (turn.text) {
        const id = `text-${index + 1}`;
        parts.push({ type: 'text-start', id });
        for (const delta of turn.text.match(/\S+\s*|\s+/g) ?? []) parts.push({ type: 'text-delta', id, delta });
        parts.push({ type: 'text-end', id });
      }
      parts.push(...toolCallsOf(turn, index));
      parts.push({ type: 'finish', finishReason: finishReasonOf(turn), usage: NO_USAGE });
      const stream = new ReadableStream<StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      });
      return { stream };
    },
  };
  return model;
}

/**
 * `scriptedModel` for a JSON script file (relative paths from the current directory). The file
 * is read and checked now: missing is `FILE_NOT_FOUND`; larger than 4 MiB or malformed is
 * `CONFIG_INVALID` naming the file, the place and the fix.
 */
export function loadScriptedModel(file: string): LanguageModel {
  const path = resolve(file);
  return scriptedModel(readScriptFile(path), { name: path });
}
