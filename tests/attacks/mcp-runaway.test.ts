/**
 * Class: limits, for MCP stdio servers. A server runs for the whole toolset, so a call that
 * makes it run away — a fork bomb held at its `processes` limit, a busy loop, a hang — never
 * ends by itself: the SDK gives up waiting at the call's `timeout`, and the server's processes
 * would go on using the machine for the rest of the run (and its next calls would time out
 * too). A call that times out stops the server with its whole process tree; the failure says
 * so, and names the limit the server ran into where the launcher reported one.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpToolset, type NamedTool, ToolgateError } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { call, writeFiles } from '../helpers/tools.js';

/** A stdio MCP server (plain JSON-RPC lines) whose `bomb` forks without end and `hang` never answers. */
const SERVER = `import json, os, sys, time
def send(message):
    sys.stdout.write(json.dumps(dict(jsonrpc='2.0', **message)) + '\\n')
    sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    if 'id' not in request:
        continue
    method = request['method']
    if method == 'initialize':
        send(dict(id=request['id'], result=dict(protocolVersion=request['params']['protocolVersion'], capabilities=dict(tools={}), serverInfo=dict(name='s', version='1'))))
    elif method == 'tools/list':
        tools = [dict(name=name, description=name, inputSchema=dict(type='object', properties={})) for name in ('bomb', 'hang', 'ping')]
        send(dict(id=request['id'], result=dict(tools=tools)))
    elif method == 'tools/call' and request['params']['name'] == 'ping':
        send(dict(id=request['id'], result=dict(content=[dict(type='text', text='pong')])))
    elif method == 'tools/call' and request['params']['name'] == 'bomb':
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    elif method == 'tools/call':
        time.sleep(3600)
`;

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const toolset of open.splice(0)) await toolset.close();
});

/** How many processes on the host carry `marker` on their command line. */
function processesWith(marker: string): number {
  try {
    return Number(execFileSync('pgrep', ['-c', '-f', marker], { encoding: 'utf8' }).trim());
  } catch {
    return 0; // pgrep exits 1 when nothing matches
  }
}

async function serverTools(marker: string) {
  const work = tempDir('toolgate-runaway-');
  writeFiles(work, { 'server.py': SERVER });
  const toolset = await mcpToolset({
    workDir: work,
    servers: { s: { command: 'python3', args: [join(work, 'server.py'), marker] } },
    approval: { default: 'preApproved' },
    timeoutMs: 3_000,
    sandbox: { limits: { processes: 24 } },
  });
  open.push(toolset);
  const byName = (name: string) => toolset.tools.find((tool) => tool.name === name) as NamedTool;
  return { byName };
}

async function failure(promise: Promise<unknown>): Promise<ToolgateError> {
  const error = await promise.then(
    () => {
      throw new Error('the call succeeded');
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(ToolgateError);
  return error as ToolgateError;
}

describe('an MCP server that runs away in a call is stopped at its timeout', () => {
  it('a fork bomb at its processes limit: stopped with every process, the limit named', { timeout: 60_000 }, async () => {
    const marker = `toolgate-bomb-${process.pid}-${Date.now()}`;
    const { byName } = await serverTools(marker);
    expect(JSON.stringify(await call(byName('s_ping'), {}))).toContain('pong');
    const error = await failure(call(byName('s_bomb'), {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain("timed out: no answer to a call of 'bomb' within 3 s (timeout); the server was stopped");
    expect(error.message).toContain('processes');
    // None of its processes is left, and the next call says why the server is gone.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(processesWith(marker)).toBe(0);
    const next = await failure(call(byName('s_ping'), {}));
    expect(next.message).toContain('was stopped');
  });

  it('a server that hangs: stopped, its next call fails at once naming why', { timeout: 60_000 }, async () => {
    const marker = `toolgate-hang-${process.pid}-${Date.now()}`;
    const { byName } = await serverTools(marker);
    const error = await failure(call(byName('s_hang'), {}));
    expect(error.message).toContain('was stopped');
    expect(processesWith(marker)).toBe(0);
    const next = await failure(call(byName('s_ping'), {}));
    expect(next.message).toContain('was stopped');
  });
});
