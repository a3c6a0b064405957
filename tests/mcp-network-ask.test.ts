/**
 * An MCP stdio server's connections during its tool calls (issue 24, `network.ask`): the server
 * starts when its toolset loads, outside any run, but while one of its tool calls is in progress
 * the connections it opens belong to that call. The run's approval handler is asked (`toolName:
 * 'network'`, `input.tool` the MCP tool's name as the model sees it), `always` holds for the rest
 * of the run, a denial's reason reaches the tool's result, the records and the audit log name the
 * tool, and a deferred run stops for the question and reaches the host once resumed with an
 * approval. Outside calls (at start-up) and with nobody to ask, `ask` refuses, also for a
 * connection opened outside a call and used in one, or opened in a call and used after it; with two calls of
 * one server in flight at once the proxy cannot tell whose a connection is, and refuses naming both.
 * `toolgate run --yes` / `--deny` answer such questions, and the audit log names the tool and the flag.
 *
 * The server is a real one (the official SDK, tests/fixtures/mcp/fetch-server.mjs) making requests
 * with Node's `http` module through `HTTP_PROXY` to a server this test starts on 127.0.0.1. As in
 * tests/network.test.ts, `localhost` is the name asked about: it is in no `allow` list, and its
 * address (127.0.0.1, an internal one) is allowed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadWorker, mcpToolset, type McpToolset } from '../ts/src/index.js';
import { resumeWorker, runWorker, type ApprovalAnswer, type ApprovalRequest, type RunEvent } from '../ts/src/worker/index.js';
import { nodeModulesDir, REPO_ROOT } from './helpers/checkout.js';
import { runToolgateAsync, type CliRun } from './helpers/cli.js';
import { startFakeOpenAiServer, toolResultsIn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

const SERVER = join(REPO_ROOT, 'tests/fixtures/mcp/fetch-server.mjs');
/** The server is a Node program: the sandbox must let it read the code it runs. */
const READ = [REPO_ROOT, nodeModulesDir('@modelcontextprotocol/sdk')];
const NETWORK = '{ allow: ["127.0.0.1"], ask: true }';
const SECRET = 'mcp-network-ask-secret-of-at-least-32-bytes';

let web: Server;
let port: number;
/** The paths the local server was sent, in order. */
const served: string[] = [];
beforeAll(async () => {
  web = createServer((request, response) => {
    served.push(request.url ?? '');
    response.end(`hello from ${request.url}`);
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  port = (web.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => web.close(() => resolve()));
});

const open: McpToolset[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((toolset) => toolset.close()));
});

const url = (path: string) => `http://localhost:${port}${path}`;

/** A worker file whose `mcp` toolset runs the fetch server under `network`, tools pre-approved. */
function workerFile(env: Record<string, string> = {}): string {
  const dir = tempDir();
  const file = join(dir, 'worker.yaml');
  const envText = Object.entries(env)
    .map(([name, value]) => `${name}: ${JSON.stringify(value)}`)
    .join(', ');
  writeFileSync(
    file,
    [
      'name: fetcher',
      'instructions: test',
      `sandbox: { read: [${READ.map((dir) => JSON.stringify(dir)).join(', ')}], network: ${NETWORK} }`,
      'audit: { file: ./audit.jsonl }',
      'toolsets:',
      '  mcp:',
      `    servers: { s: { command: node, args: [${JSON.stringify(SERVER)}], env: { ${envText} } } }`,
      '    approval: { default: preApproved }',
      '',
    ].join('\n'),
  );
  return file;
}

interface McpOutput {
  content: { type: string; text?: string }[];
  refusedConnections?: { host: string; port: number; reason: string }[];
}

const textOf = (output: unknown) => (output as McpOutput).content.map((part) => part.text ?? '').join('\n');

/** Runs one model step per entry (each a list of MCP tool calls) through the worker. */
async function run(file: string, steps: { toolName: string; input: unknown }[][], onApproval?: (request: ApprovalRequest) => ApprovalAnswer) {
  const worker = await loadWorker(file);
  const asked: ApprovalRequest[] = [];
  const events: RunEvent[] = [];
  try {
    const model = scriptedModel([...steps.map((toolCalls) => ({ toolCalls })), { text: 'done' }]);
    const result = await runWorker(worker, 'fetch', {
      model,
      ...(onApproval
        ? {
            onApproval: (request: ApprovalRequest) => {
              asked.push(request);
              return onApproval(request);
            },
          }
        : {}),
      onEvent: (event: RunEvent) => events.push(event),
    });
    const outputs = result.toolCalls.map((call) => call.output as McpOutput);
    const connections = events.flatMap((event) => (event.type === 'network-connection' ? [event.record] : []));
    return { result, outputs, asked, connections };
  } finally {
    await worker.close();
  }
}

const fetchCall = (path: string) => [{ toolName: 's_fetch', input: { url: url(path) } }];

describe('an MCP server asking about a host during its tool call (runWorker)', () => {
  it('approve reaches the host; the question and the record name the MCP tool', async () => {
    const { outputs, asked, connections } = await run(workerFile(), [fetchCall('/one'), fetchCall('/two')], () => 'approve');
    expect(outputs.map(textOf)).toEqual(['200 hello from /one', '200 hello from /two']);
    expect(asked).toHaveLength(2);
    expect(asked[0]).toMatchObject({ toolName: 'network', input: { host: 'localhost', port, tool: 's_fetch' } });
    expect(connections.map((record) => [record.tool, record.decision, record.decidedBy])).toEqual([
      ['s_fetch', 'asked-approved', 'user'],
      ['s_fetch', 'asked-approved', 'user'],
    ]);
    expect(connections[0]!.toolCallId).not.toBe('');
    expect(outputs[0]!.refusedConnections).toBeUndefined();
  });

  it('always covers the host and port for the rest of the run: the second call is not asked', async () => {
    const { outputs, asked, connections } = await run(workerFile(), [fetchCall('/a1'), fetchCall('/a2')], () => 'always');
    expect(outputs.map(textOf)).toEqual(['200 hello from /a1', '200 hello from /a2']);
    expect(asked).toHaveLength(1);
    expect(connections.map((record) => record.decidedBy)).toEqual(['user', 'run-allowance']);
  });

  it('deny refuses with the reason the model reads in the tool result, and the audit log names the tool', async () => {
    const file = workerFile();
    const before = served.length;
    const { outputs, connections } = await run(file, [fetchCall('/denied')], () => ({ decision: 'deny', reason: 'not during this task' }));
    expect(textOf(outputs[0])).toMatch(/^403 /);
    expect(outputs[0]!.refusedConnections).toEqual([
      { host: 'localhost', port, reason: expect.stringContaining('denied when asked: not during this task') },
    ]);
    expect(connections).toMatchObject([{ tool: 's_fetch', decision: 'denied', decidedBy: 'user' }]);
    expect(served.length).toBe(before);
    const network = readFileSync(join(file, '..', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.event === 'network');
    expect(network).toMatchObject([{ host: 'localhost', port, tool: 's_fetch', decision: 'denied', decidedBy: 'user' }]);
  });

  it('with nobody to ask (no handler), it is refused', async () => {
    const { outputs, connections } = await run(workerFile(), [fetchCall('/nobody')]);
    expect(textOf(outputs[0])).toMatch(/^403 /);
    expect(outputs[0]!.refusedConnections?.[0]?.reason).toContain('network.ask has nobody to ask');
    expect(connections).toMatchObject([{ tool: 's_fetch', decision: 'denied', decidedBy: 'no-handler' }]);
  });

  it('a connection at the server start-up is refused even with a handler: no tool call is in progress', async () => {
    const { outputs, asked, connections } = await run(workerFile({ FETCH_AT_START: url('/startup') }), [[{ toolName: 's_startup', input: {} }]], () => 'approve');
    const startup = textOf(outputs[0]);
    expect(startup).toMatch(/^403 /);
    expect(startup).toContain('outside any of its tool calls');
    expect(asked).toEqual([]);
    // Not the call's: its result names no refusal, and the run has no record of it.
    expect(outputs[0]!.refusedConnections).toBeUndefined();
    expect(connections).toEqual([]);
  });

  it('a connection opened outside a call and used in one, or opened in a call and used after it, asks nobody', async () => {
    const held = (which: string) => [{ toolName: 's_send_held', input: { url: url(`/held-${which}`), which } }];
    const before = served.length;
    const { outputs, asked } = await run(workerFile({ HOLD_AT_START: '1' }), [held('start'), [{ toolName: 's_hold', input: {} }], held('call')], () => 'approve');
    expect(asked).toEqual([]);
    const [fromStart, hold, fromCall] = outputs.map(textOf);
    expect(hold).toBe('held');
    expect(fromStart).toMatch(/^HTTP\/1.1 403/);
    expect(fromStart).toContain('outside any of its tool calls');
    // Opened during `s_hold` (accepted then, or after its result): either way nobody is asked.
    expect(fromCall).toMatch(/^HTTP\/1.1 403/);
    expect(fromCall).toMatch(/the tool call 's_hold' \(call [^)]+\) the connection was opened in has ended|outside any of its tool calls/);
    expect(served.length).toBe(before);
  });

  it('two calls of one server in flight at once: nobody is asked, the refusal names both calls', async () => {
    const pair = [
      { toolName: 's_fetch_pair', input: { url: url('/p1') } },
      { toolName: 's_fetch_pair', input: { url: url('/p2') } },
    ];
    const { outputs, asked } = await run(workerFile(), [pair], () => 'approve');
    expect(asked).toEqual([]);
    for (const output of outputs) {
      expect(textOf(output)).toMatch(/^403 /);
      expect(textOf(output)).toMatch(/the tool calls 's_fetch_pair' \(call [^)]+\) and 's_fetch_pair' \(call [^)]+\) of this server are in progress at once/);
      expect(output.refusedConnections).toHaveLength(1);
    }
  });
});

describe('a deferred run', () => {
  it('stops for the host an MCP tool asked about; the resumed run reaches it once approved', async () => {
    const worker = await loadWorker(workerFile());
    try {
      const first = await runWorker(worker, 'fetch', { model: scriptedModel([{ toolCalls: fetchCall('/deferred') }]), onApproval: 'defer', stateSecret: SECRET });
      expect(first.status).toBe('approval-required');
      const pending = first.pending!.find((request) => request.toolName === 'network')!;
      expect(pending.input).toEqual({ host: 'localhost', port, tool: 's_fetch' });
      expect(textOf(first.toolCalls[0]!.output)).toContain('needs approval');
      const resumed = await resumeWorker(worker, first.state!, { [pending.id]: 'approve' }, {
        model: scriptedModel([{ toolCalls: fetchCall('/deferred') }, { text: 'done' }]),
        stateSecret: SECRET,
      });
      expect(resumed.status).toBe('completed');
      expect(textOf(resumed.toolCalls.at(-1)!.output)).toBe('200 hello from /deferred');
    } finally {
      await worker.close();
    }
  });
});

/** `toolgate <args>` in `cwd`, without blocking this process (its servers answer the child meanwhile). */
function toolgate(cwd: string, args: string[]): Promise<CliRun> {
  return runToolgateAsync(args, { cwd, env: { ...process.env, XDG_CACHE_HOME: join(cwd, '.cache') } });
}

describe('toolgate run', () => {
  it('--yes answers an MCP tool\'s question and --deny refuses it; the audit log names the tool and the flag', async () => {
    const file = workerFile();
    const dir = dirname(file);
    for (const flag of ['--yes', '--deny'] as const) {
      const model = await startFakeOpenAiServer([{ toolCalls: [{ name: 's_fetch', arguments: { url: url(`/cli${flag}`) } }] }, { text: 'finished' }]);
      try {
        const ran = await toolgate(dir, ['run', 'worker.yaml', 'fetch', '--model', 'openai-compatible:fake', '--base-url', model.baseUrl, flag]);
        expect(ran.status, ran.stderr).toBe(0);
        const result = Object.values(toolResultsIn(model.requests[1]!)).join('\n');
        if (flag === '--yes') expect(result).toContain('200 hello from /cli--yes');
        else expect(result).toContain(`connection to localhost:${port} refused`);
      } finally {
        await model.close();
      }
    }
    const network = readFileSync(join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.event === 'network');
    expect(network.map((line) => [line.tool, line.decision, line.decidedBy, line.flag])).toEqual([
      ['s_fetch', 'asked-approved', 'flag', '--yes'],
      ['s_fetch', 'denied', 'flag', '--deny'],
    ]);
  });
});

describe('an MCP tool called outside any run', () => {
  it('has nobody to ask: refused, and the result names the refusal', async () => {
    const toolset = await mcpToolset({
      servers: { s: { command: 'node', args: [SERVER] } },
      approval: { default: 'preApproved' },
      sandbox: { read: READ, network: { allow: ['127.0.0.1'], ask: true } },
      workDir: tempDir(),
    });
    open.push(toolset);
    const fetch = toolset.tools.find((tool) => tool.name === 's_fetch')!;
    const output = (await fetch.execute!({ url: url('/alone') } as never, { toolCallId: 'c1', messages: [] })) as McpOutput;
    expect(textOf(output)).toMatch(/^403 /);
    expect(output.refusedConnections).toEqual([{ host: 'localhost', port, reason: expect.stringContaining('this call has no approval handler') }]);
    // The address allowed by itself is reached, asking nobody.
    const direct = (await fetch.execute!({ url: `http://127.0.0.1:${port}/direct` } as never, { toolCallId: 'c2', messages: [] })) as McpOutput;
    expect(textOf(direct)).toBe('200 hello from /direct');
    expect(direct.refusedConnections).toBeUndefined();
  });
});
