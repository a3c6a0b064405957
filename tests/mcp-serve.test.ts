import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { packageFile } from './helpers/checkout.js';
import { tempDir } from './helpers/fs.js';
import { mcpToolset, ToolgateError } from '../ts/src/index.js';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'dist/cli/main.js');
const WORKER = 'examples/mcp/worker.yaml';
const WRITTEN = join(ROOT, 'examples/mcp/workspace/written-by-test.txt');

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
  rmSync(WRITTEN, { force: true });
});

/** A client of the official SDK; `elicit` answers elicitation requests (and declares the capability). */
function client(elicit?: (message: string) => ElicitResult): Client {
  const created = new Client({ name: 'toolgate-test', version: '1.0.0' }, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) created.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params.message));
  cleanup.push(() => created.close());
  return created;
}

/** `toolgate mcp serve` over stdio, in a session without a controlling terminal (setsid). */
function stdioServe(extra: string[] = []): StdioClientTransport {
  return new StdioClientTransport({
    command: 'setsid',
    args: [process.execPath, BIN, 'mcp', 'serve', WORKER, ...extra],
    cwd: ROOT,
    stderr: 'pipe',
  });
}

function textOf(result: unknown): string {
  return (result as CallToolResult).content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/** The bearer token a `toolgate mcp serve --http` printed the file of (it generated one). */
function tokenFrom(stderr: string): string {
  const file = /Bearer <the token in (\S+)>/.exec(stderr)?.[1];
  if (!file) throw new Error(`no token file in: ${stderr}`);
  return readFileSync(file, 'utf8').trim();
}

/** Client options that send the bearer token. */
const bearer = (token: string) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });

/** `toolgate mcp serve --http 0 …`, the URL it printed, and the token clients send. */
async function httpServe(extra: string[] = [], env: Record<string, string> = {}): Promise<{ url: URL; child: ChildProcess; token: string; stderr: () => string }> {
  const child = spawn('setsid', [process.execPath, BIN, 'mcp', 'serve', WORKER, '--http', '0', ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, TOOLGATE_MCP_TOKEN: '', ...env },
  });
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  );
  let stderr = '';
  const url = await new Promise<URL>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /on (http:\/\/\S+)\n.*Bearer <the token (in \S+|you gave)>/.exec(stderr);
      if (found) resolve(new URL(found[1]!));
    });
    child.once('exit', (code) => reject(new Error(`toolgate mcp serve exited with ${code}: ${stderr}`)));
  });
  const token = env.TOOLGATE_MCP_TOKEN || tokenFrom(stderr);
  return { url, child, token, stderr: () => stderr };
}

describe('toolgate mcp serve over stdio (the official SDK client)', () => {
  it('lists the gated tools (blocked absent) and runs a preApproved one', async () => {
    const mcp = client();
    await mcp.connect(stdioServe());
    const { tools } = await mcp.listTools();
    const names = tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['files_list_directory', 'files_read_text_file', 'files_write_file']);
    expect(names).not.toContain('files_move_file');
    expect(tools.find((tool) => tool.name === 'files_read_text_file')?.inputSchema.type).toBe('object');
    const read = await mcp.callTool({ name: 'files_read_text_file', arguments: { path: join(ROOT, 'examples/mcp/workspace/notes.md') } });
    expect(read.isError).toBeFalsy();
    expect(textOf(read)).toContain('toolgate gates and sandboxes');
    // The served server is itself sandboxed: a file outside the work directory stays unread.
    const outside = await mcp.callTool({ name: 'files_read_text_file', arguments: { path: join(ROOT, 'package.json') } });
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).not.toContain('"name": "toolgate"');
  });

  it('denies an ask tool when the client has no elicitation and there is no terminal, saying how to change it', async () => {
    const mcp = client();
    await mcp.connect(stdioServe());
    const result = await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'x' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/does not support elicitation.*no terminal.*--yes/);
    expect(existsSync(WRITTEN)).toBe(false);
  });

  it('asks through elicitation: approve runs the call, deny refuses it with the reason', async () => {
    const asked: string[] = [];
    let answer: ElicitResult = { action: 'accept', content: { decision: 'deny', reason: 'not today' } };
    const mcp = client((message) => {
      asked.push(message);
      return answer;
    });
    await mcp.connect(stdioServe());
    const denied = await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'first' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('not today');
    expect(existsSync(WRITTEN)).toBe(false);
    expect(asked[0]).toContain('files_write_file');
    expect(asked[0]).toContain(WRITTEN);

    answer = { action: 'decline' };
    expect((await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'x' } })).isError).toBe(true);

    answer = { action: 'accept', content: { decision: 'always' } };
    const approved = await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'approved' } });
    expect(approved.isError, textOf(approved)).toBeFalsy();
    expect(readFileSync(WRITTEN, 'utf8')).toBe('approved');
    expect(asked.at(-1)).toContain('"Always" covers');
    // "always" covers exactly this call for the rest of the session: no further question for it…
    let before = asked.length;
    await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'approved' } });
    expect(asked.length).toBe(before);
    // …but another input is asked again; "always-tool" covers every call of the tool.
    answer = { action: 'accept', content: { decision: 'always-tool' } };
    await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'again' } });
    expect(asked.length).toBe(before + 1);
    expect(readFileSync(WRITTEN, 'utf8')).toBe('again');
    before = asked.length;
    answer = { action: 'accept', content: { decision: 'deny' } };
    await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'third' } });
    expect(asked.length).toBe(before);
    expect(readFileSync(WRITTEN, 'utf8')).toBe('third');
  });

  it('--yes approves asks, blocked stays unlisted and uncallable; --log appends audit log lines', async () => {
    const log = join(tempDir(), 'calls.jsonl');
    const mcp = client();
    await mcp.connect(stdioServe(['--yes', '--log', log]));
    const written = await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'yes' } });
    expect(written.isError, textOf(written)).toBeFalsy();
    const moved = await mcp.callTool({ name: 'files_move_file', arguments: { source: WRITTEN, destination: `${WRITTEN}.moved` } });
    expect(moved.isError).toBe(true);
    expect(existsSync(WRITTEN)).toBe(true);
    const lines = readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    // The audit log of `toolgate run`: a start line, then one tool-call line per call as it ends.
    expect(lines.map((line) => line.event)).toEqual(['mcp-serve-start', 'tool-call', 'tool-call']);
    expect(lines[0]).toMatchObject({ worker: 'mcp-files', transport: 'stdio' });
    // A flag is not a person: the call is recorded as decided by --yes.
    expect(lines[1]).toMatchObject({ worker: 'mcp-files', toolName: 'files_write_file', decision: 'approved', decidedBy: 'flag', flag: '--yes' });
    // The blocked tool is not served, and its call is logged as blocked by the configuration.
    expect(lines[2]).toMatchObject({ toolName: 'files_move_file', decision: 'blocked', decidedBy: 'config', errorCode: 'TOOL_BLOCKED' });
    expect(new Set(lines.map((line) => line.runId)).size).toBe(1);
  });
});

describe('toolgate mcp serve and the MCP Inspector CLI', () => {
  const INSPECTOR = packageFile('@modelcontextprotocol/inspector', 'cli/build/index.js');
  const inspect = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn('setsid', [process.execPath, INSPECTOR, process.execPath, BIN, 'mcp', 'serve', WORKER, ...args], { cwd: ROOT });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`inspector exited with ${code}: ${stdout}`))));
    });

  it('lists and calls the served tools', async () => {
    const listed = JSON.parse(await inspect(['--method', 'tools/list'])) as { tools: { name: string }[] };
    expect(listed.tools.map((tool) => tool.name).sort()).toEqual(['files_list_directory', 'files_read_text_file', 'files_write_file']);
    const called = JSON.parse(
      await inspect(['--method', 'tools/call', '--tool-name', 'files_read_text_file', '--tool-arg', `path=${join(ROOT, 'examples/mcp/workspace/notes.md')}`]),
    ) as CallToolResult;
    expect(textOf(called)).toContain('toolgate gates and sandboxes');
    const denied = JSON.parse(
      await inspect(['--method', 'tools/call', '--tool-name', 'files_write_file', '--tool-arg', `path=${WRITTEN}`, '--tool-arg', 'content=x']),
    ) as CallToolResult;
    expect(denied.isError).toBe(true);
    expect(existsSync(WRITTEN)).toBe(false);
  });
});

describe('toolgate mcp serve over Streamable HTTP', () => {
  it('serves on loopback: lists, calls, asks through elicitation', async () => {
    const { url, token } = await httpServe();
    expect(url.hostname).toBe('127.0.0.1');
    const mcp = client(() => ({ action: 'accept', content: { decision: 'approve' } }));
    await mcp.connect(new StreamableHTTPClientTransport(url, bearer(token)));
    const names = (await mcp.listTools()).tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['files_list_directory', 'files_read_text_file', 'files_write_file']);
    const written = await mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'over http' } });
    expect(written.isError, textOf(written)).toBeFalsy();
    expect(readFileSync(WRITTEN, 'utf8')).toBe('over http');
    const plain = client();
    await plain.connect(new StreamableHTTPClientTransport(url, bearer(token)));
    const denied = await plain.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'no' } });
    expect(denied.isError).toBe(true);
    expect(readFileSync(WRITTEN, 'utf8')).toBe('over http');
  });

  it('checks the bearer token it was given (TOOLGATE_MCP_TOKEN), refuses other Host names, and caps sessions', async () => {
    const { url } = await httpServe([], { TOOLGATE_MCP_TOKEN: 's3cret-0123456789' });
    const anonymous = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    const wrong = client();
    await expect(wrong.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer nope' } } }))).rejects.toThrow();
    const right = client();
    await right.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer s3cret-0123456789' } } }));
    expect((await right.listTools()).tools.length).toBe(3);

    // DNS rebinding: a browser on another site name reaching 127.0.0.1.
    for (const host of ['evil.example', `evil.example:${url.port}`, `127.0.0.1.evil.example:${url.port}`]) {
      const { request } = await import('node:http');
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const sent = request({ host: '127.0.0.1', port: url.port, path: '/mcp', method: 'POST', headers: { host, authorization: 'Bearer s3cret-0123456789', 'content-type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        sent.once('error', reject);
        sent.end('{}');
      });
      expect(status, host).toBe(403);
    }

    // At most 64 sessions at once; closing one makes room.
    const initialize = () =>
      fetch(url, {
        method: 'POST',
        headers: { authorization: 'Bearer s3cret-0123456789', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'n', version: '1' } } }),
      });
    const opened: string[] = [];
    for (let i = 0; opened.length < 70 && i < 70; i++) {
      const response = await initialize();
      await response.text();
      if (response.status !== 200) {
        expect(response.status).toBe(503);
        break;
      }
      opened.push(response.headers.get('mcp-session-id')!);
    }
    expect(opened.length + 1).toBe(64); // `right` holds one
    await fetch(url, { method: 'DELETE', headers: { authorization: 'Bearer s3cret-0123456789', 'mcp-session-id': opened[0]! } });
    expect((await initialize()).status).toBe(200);
  });
});

describe('the mcp toolset over Streamable HTTP', () => {
  it('reaches a toolgate server with an expanded bearer header, and names a server that is down', async () => {
    const { url } = await httpServe([], { TOOLGATE_MCP_TOKEN: 'tok-1234567890abcdef' });
    process.env.TOOLGATE_TEST_MCP_TOKEN = 'tok-1234567890abcdef';
    try {
      const remote = await mcpToolset({
        servers: { remote: { url: url.href, headers: { Authorization: 'Bearer ${TOOLGATE_TEST_MCP_TOKEN}' } } },
        approval: { default: 'preApproved' },
        sandbox: false,
      });
      cleanup.push(() => remote.close());
      expect(remote.tools.map((tool) => tool.name).sort()).toEqual(['remote_files_list_directory', 'remote_files_read_text_file', 'remote_files_write_file']);
      const read = remote.tools.find((tool) => tool.name === 'remote_files_read_text_file')!;
      const output = await read.execute!({ path: join(ROOT, 'examples/mcp/workspace/notes.md') } as never, { toolCallId: 'h1', messages: [] });
      expect(textOf(output)).toContain('toolgate gates and sandboxes');
      // The remote write asks on the serving side, which has no way to ask: denied there.
      const write = remote.tools.find((tool) => tool.name === 'remote_files_write_file')!;
      const denied = await Promise.resolve(write.execute!({ path: WRITTEN, content: 'x' } as never, { toolCallId: 'h2', messages: [] })).catch((error: unknown) => error);
      expect(denied).toBeInstanceOf(ToolgateError);
      expect((denied as ToolgateError).message).toContain('does not support elicitation');
      expect(existsSync(WRITTEN)).toBe(false);
    } finally {
      delete process.env.TOOLGATE_TEST_MCP_TOKEN;
    }
    const wrong = await mcpToolset({ servers: { remote: { url: url.href, headers: { Authorization: 'Bearer wrong' } } }, sandbox: false }).catch((error: unknown) => error);
    expect((wrong as ToolgateError).code).toBe('TOOL_FAILED');
    expect((wrong as ToolgateError).message).toContain("MCP server 'remote' (mcpToolset) failed to start");
    const down = await mcpToolset({ servers: { gone: { url: 'http://127.0.0.1:9/mcp' } }, sandbox: false }).catch((error: unknown) => error);
    expect((down as ToolgateError).code).toBe('TOOL_FAILED');
    expect((down as ToolgateError).message).toContain("MCP server 'gone' (mcpToolset) failed to start");
  });
});

describe('toolgate mcp serve with a terminal', () => {
  it('asks in the terminal (/dev/tty) when the client cannot elicit', async () => {
    // `script` gives toolgate a pseudo-terminal; the protocol goes over HTTP.
    const command = [process.execPath, BIN, 'mcp', 'serve', WORKER, '--http', '0'].map((word) => `'${word}'`).join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TOOLGATE_MCP_TOKEN: 'terminal-token-0123456789' } });
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        }),
    );
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString()));
    const until = async (pattern: RegExp) => {
      for (let i = 0; i < 200 && !pattern.test(screen); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      const found = pattern.exec(screen);
      if (!found) throw new Error(`the terminal never showed ${pattern}: ${screen}`);
      return found;
    };
    const url = new URL((await until(/on (http:\/\/\S+)/))[1]!);
    const mcp = client();
    await mcp.connect(new StreamableHTTPClientTransport(url, bearer('terminal-token-0123456789')));
    const pending = mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'typed yes' } });
    await until(/approve files_write_file/);
    expect(screen).toContain(WRITTEN);
    child.stdin.write('a\n');
    const approved = await pending;
    expect(approved.isError, textOf(approved)).toBeFalsy();
    expect(readFileSync(WRITTEN, 'utf8')).toBe('typed yes');

    const second = mcp.callTool({ name: 'files_write_file', arguments: { path: WRITTEN, content: 'typed no' } });
    for (let i = 0; i < 200 && screen.split('approve files_write_file').length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    child.stdin.write('d\nnot this one\n');
    const denied = await second;
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('not this one');
    expect(readFileSync(WRITTEN, 'utf8')).toBe('typed yes');
  });
});
