import type { LanguageModelMiddleware } from 'ai';

/**
 * Forge's text tool calls for models without native tool calling. The model is told about the
 * tools in the system prompt and calls one by writing
 * `<tool>{"server_name": "local", "tool_name": "…", "arguments": {…}}</tool>` in its reply; the
 * middleware turns each block into a real tool call, so the AI SDK's tool execution, toolgate's
 * approvals and sandboxes apply unchanged.
 */

type Params = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0]['params'];
type Prompt = Params['prompt'];
type Message = Prompt[number];
type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
type Content = GenerateResult['content'][number];
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer T> ? T : never;

export interface XmlToolCallsOptions {
  /** The `server_name` shown to the model in the call format (default `local`). */
  serverName?: string;
  /** The most `<tool>` blocks turned into calls per reply (default 16); more are reported to the model. */
  maxCallsPerReply?: number;
}

/** Longest `<tool>` block accepted: a bigger one is reported back to the model as malformed. */
export const MAX_XML_TOOL_CALL_BYTES = 256 * 1024;
const DEFAULT_MAX_CALLS = 16;
const BLOCK = /<tool>([\s\S]*?)<\/tool>/g;
/** The tool name given to a malformed block that names none: the SDK reports it as an unknown tool. */
const UNNAMED = 'unnamed_tool_call';

/**
 * An AI SDK language-model middleware for `wrapLanguageModel({ model, middleware: xmlToolCalls() })`:
 * the tools of each call are described in the system prompt in Forge's `<tool>` format and taken
 * out of the provider request; earlier tool calls and results in the conversation are written as
 * `<tool>` and `<tool_result>` text; `<tool>` blocks in the reply (plain JSON or wrapped in
 * CDATA, several per reply) become tool calls. A block that is not valid JSON becomes a call whose
 * input cannot be parsed, so the AI SDK reports the error to the model as that call's result and
 * the model can try again. Streaming calls are answered from one generate call, replayed as a
 * stream.
 */
export function xmlToolCalls(options: XmlToolCallsOptions = {}): LanguageModelMiddleware {
  const serverName = options.serverName ?? 'local';
  const maxCalls = options.maxCallsPerReply ?? DEFAULT_MAX_CALLS;
  if (!Number.isInteger(maxCalls) || maxCalls < 1 || maxCalls > 256) {
    throw new RangeError(`xmlToolCalls: maxCallsPerReply is ${maxCalls}; give an integer from 1 to 256`);
  }
  return {
    specificationVersion: 'v3',
    transformParams: async ({ params }) => describeTools(params, serverName),
    wrapGenerate: async ({ doGenerate }) => parseReply(await doGenerate(), maxCalls),
    wrapStream: async ({ doGenerate }) => replayAsStream(parseReply(await doGenerate(), maxCalls)),
  };
}

/** The system prompt section that teaches the call format and lists the tools. */
export function xmlToolPrompt(tools: readonly { name: string; description?: string; inputSchema: unknown }[], serverName = 'local'): string {
  const lines = [
    'You can call tools. To call one, write a block like this in your reply, with the JSON on one line:',
    `<tool>{"server_name": "${serverName}", "tool_name": "<tool name>", "arguments": {<arguments matching the tool's input schema>}}</tool>`,
    'You may write several <tool> blocks in one reply. Write nothing after your last block: each call runs, and its result comes back to you in a <tool_result> block in the next message.',
    'Available tools:',
  ];
  for (const tool of tools) {
    lines.push(`- ${tool.name}: ${tool.description ?? ''}`.trimEnd(), `  input schema: ${JSON.stringify(tool.inputSchema)}`);
  }
  return lines.join('\n');
}

function describeTools(params: Params, serverName: string): Params {
  const tools = (params.tools ?? []).flatMap((tool) => (tool.type === 'function' ? [tool] : []));
  const prompt = params.prompt.flatMap((message) => rewrite(message, serverName));
  if (tools.length === 0) return { ...params, prompt, tools: undefined, toolChoice: undefined };
  const section = xmlToolPrompt(tools, serverName);
  const [first, ...rest] = prompt;
  const withTools: Prompt =
    first?.role === 'system'
      ? [{ ...first, content: `${first.content}\n\n${section}` }, ...rest]
      : [{ role: 'system', content: section }, ...prompt];
  return { ...params, prompt: withTools, tools: undefined, toolChoice: undefined };
}

/** Earlier tool calls and results as text, since the provider is not told about tools. */
function rewrite(message: Message, serverName: string): Message[] {
  if (message.role === 'assistant') {
    const content = message.content.map((part) =>
      part.type === 'tool-call'
        ? {
            type: 'text' as const,
            text: `<tool>${JSON.stringify({ server_name: serverName, tool_name: part.toolName, arguments: part.input ?? {} })}</tool>`,
          }
        : part,
    );
    return [{ ...message, content }];
  }
  if (message.role === 'tool') {
    const texts = message.content.flatMap((part) => {
      if (part.type !== 'tool-result') return [];
      return [{ type: 'text' as const, text: `<tool_result tool_name="${part.toolName}">${resultText(part.output)}</tool_result>` }];
    });
    return texts.length > 0 ? [{ role: 'user', content: texts }] : [];
  }
  return [message];
}

function resultText(output: { type: string; value?: unknown; reason?: string }): string {
  switch (output.type) {
    case 'text':
      return String(output.value);
    case 'error-text':
      return `error: ${String(output.value)}`;
    case 'error-json':
      return `error: ${JSON.stringify(output.value)}`;
    case 'execution-denied':
      return `the call was denied${output.reason ? `: ${output.reason}` : ''}`;
    default:
      return JSON.stringify(output.value);
  }
}

let counter = 0;
function callId(): string {
  counter += 1;
  return `xml-call-${Date.now().toString(36)}-${counter}`;
}

/**
 * One `<tool>` block read: the tool and its arguments as JSON text. A malformed block keeps the
 * tool name when one can be found and gets an input that is a sentence, not JSON, saying what is
 * wrong: the AI SDK then fails the call with that text and the model sees it as the call's error.
 */
export function readToolBlock(inner: string): { toolName: string; input: string; error?: string } {
  let text = inner.trim();
  const cdata = /^<!\[CDATA\[([\s\S]*)\]\]>$/.exec(text);
  if (cdata) text = (cdata[1] ?? '').trim();
  const named = /"tool_name"\s*:\s*"([^"]{1,128})"/.exec(text)?.[1] ?? UNNAMED;
  const malformed = (toolName: string, error: string) => ({
    toolName,
    error,
    input: `malformed <tool> block: ${error}. Write <tool>{"server_name": "local", "tool_name": "<name>", "arguments": {...}}</tool> with valid JSON. The block was: ${text.slice(0, 500)}`,
  });
  if (text.length > MAX_XML_TOOL_CALL_BYTES) return malformed(named, `the block is longer than ${MAX_XML_TOOL_CALL_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return malformed(named, `the JSON does not parse (${(error as Error).message})`);
  }
  const call = parsed as { tool_name?: unknown; arguments?: unknown };
  if (typeof parsed !== 'object' || parsed === null || typeof call.tool_name !== 'string' || call.tool_name === '') {
    return malformed(named, 'it has no "tool_name" string');
  }
  const args = call.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return malformed(call.tool_name, '"arguments" is not a JSON object');
  }
  return { toolName: call.tool_name, input: JSON.stringify(args) };
}

function parseReply(result: GenerateResult, maxCalls: number): GenerateResult {
  const content: Content[] = [];
  let calls = 0;
  for (const part of result.content) {
    if (part.type !== 'text') {
      content.push(part);
      continue;
    }
    let rest = '';
    let last = 0;
    const found: Content[] = [];
    for (const match of part.text.matchAll(BLOCK)) {
      rest += part.text.slice(last, match.index);
      last = match.index + match[0].length;
      calls += 1;
      const block = readToolBlock(match[1] ?? '');
      // Past the limit the input is a sentence, not JSON: the SDK reports it to the model.
      const input = calls > maxCalls ? `more than ${maxCalls} <tool> blocks in one reply; write at most ${maxCalls}` : block.input;
      found.push({ type: 'tool-call', toolCallId: callId(), toolName: block.toolName, input });
    }
    rest += part.text.slice(last);
    if (rest.trim() !== '') content.push({ ...part, text: rest.trim() });
    content.push(...found);
  }
  if (calls === 0) return result;
  return { ...result, content, finishReason: { unified: 'tool-calls', raw: result.finishReason.raw } };
}

function replayAsStream(result: GenerateResult): StreamResult {
  const parts: StreamPart[] = [{ type: 'stream-start', warnings: result.warnings }];
  if (result.response) parts.push({ type: 'response-metadata', ...result.response });
  let id = 0;
  for (const part of result.content) {
    if (part.type === 'text') {
      const textId = `text-${id++}`;
      parts.push({ type: 'text-start', id: textId }, { type: 'text-delta', id: textId, delta: part.text }, { type: 'text-end', id: textId });
    } else if (part.type === 'reasoning') {
      const reasoningId = `reasoning-${id++}`;
      parts.push(
        { type: 'reasoning-start', id: reasoningId },
        { type: 'reasoning-delta', id: reasoningId, delta: part.text },
        { type: 'reasoning-end', id: reasoningId },
      );
    } else {
      parts.push(part as StreamPart);
    }
  }
  parts.push({
    type: 'finish',
    finishReason: result.finishReason,
    usage: result.usage,
    ...(result.providerMetadata ? { providerMetadata: result.providerMetadata } : {}),
  });
  const stream = new ReadableStream<StreamPart>({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
  return { stream, ...(result.request ? { request: result.request } : {}) };
}
