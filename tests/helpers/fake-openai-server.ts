import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake model answers in one turn. */
export type FakeTurn = { text: string } | { toolCalls: { name: string; arguments: unknown }[] };

/** A chat message as the OpenAI chat completions API carries it. */
export interface ChatMessage {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { function: { name: string } }[];
  /** Set by streaming clients (`streamText`): the answer comes as server-sent events. */
  stream?: boolean;
}

export interface FakeOpenAiServer {
  /** Base URL to pass as --base-url (ends in /v1). */
  baseUrl: string;
  /** Every chat request received, in order. */
  requests: ChatRequest[];
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A local OpenAI-compatible chat server on 127.0.0.1 that plays back scripted turns: the one
 * allowed fake (the language model) for end-to-end runs of the real CLI. A turn may be computed
 * from the request, e.g. to answer with what a tool returned.
 */
export async function startFakeOpenAiServer(turns: readonly (FakeTurn | ((request: ChatRequest) => FakeTurn))[]): Promise<FakeOpenAiServer> {
  const requests: ChatRequest[] = [];
  let callCounter = 0;
  const server: Server = createServer(async (request, response) => {
    try {
      if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${request.url}` } }));
        return;
      }
      const body = JSON.parse(await readBody(request)) as ChatRequest;
      requests.push(body);
      const scripted = turns[requests.length - 1];
      if (!scripted) {
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: `the fake model ran out of turns after ${turns.length}` } }));
        return;
      }
      const turn = typeof scripted === 'function' ? scripted(body) : scripted;
      const message =
        'text' in turn
          ? { role: 'assistant', content: turn.text }
          : {
              role: 'assistant',
              content: null,
              tool_calls: turn.toolCalls.map((call) => ({
                id: `call_${++callCounter}`,
                type: 'function',
                function: { name: call.name, arguments: JSON.stringify(call.arguments) },
              })),
            };
      if (body.stream) {
        streamTurn(response, body, message, 'text' in turn ? 'stop' : 'tool_calls', requests.length);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message, finish_reason: 'text' in turn ? 'stop' : 'tool_calls' }],
          usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
        }),
      );
    } catch (error) {
      response.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

/** A turn as the streaming API sends it: the text in a few deltas, each tool call whole. */
function streamTurn(
  response: import('node:http').ServerResponse,
  body: ChatRequest,
  message: { content: string | null; tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[] },
  finishReason: string,
  index: number,
): void {
  const chunk = (delta: Record<string, unknown>, finish: string | null, usage?: Record<string, number>) =>
    `data: ${JSON.stringify({
      id: `chatcmpl-${index}`,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(usage ? { usage } : {}),
    })}\n\n`;
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.write(chunk({ role: 'assistant', content: '' }, null));
  const text = message.content ?? '';
  // Words as separate deltas, so that streaming is visible to the tests.
  for (const piece of text.match(/\S+\s*|\s+/g) ?? []) response.write(chunk({ content: piece }, null));
  for (const [position, call] of (message.tool_calls ?? []).entries()) {
    response.write(chunk({ tool_calls: [{ index: position, ...call }] }, null));
  }
  response.write(chunk({}, finishReason, { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 }));
  response.end('data: [DONE]\n\n');
}

/** The content of every tool result message in a request, by tool call id. */
export function toolResultsIn(request: ChatRequest): Record<string, string> {
  const results: Record<string, string> = {};
  for (const message of request.messages) {
    if (message.role === 'tool' && message.tool_call_id) results[message.tool_call_id] = String(message.content ?? '');
  }
  return results;
}
