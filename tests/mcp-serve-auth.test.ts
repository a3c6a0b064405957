/**
 * `toolgate mcp serve` against clients that should not get in or should not see more than their
 * own session (issue 23, sections 3 and 7): a bearer token on every HTTP request, loopback
 * included, never taken from the command line; idle sessions closed; elicitation answered only
 * by the session whose call asks; the whole input shown in the elicitation. Real processes, the
 * official SDK client, raw HTTP for what a hostile client sends.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { packageFile } from './helpers/checkout.js';
import { CLI } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { rawControls } from './helpers/terminal.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A worker whose `write_file` asks and `read_file` runs, working in its own folder. */
function workerIn(dir = tempDir()): { dir: string; file: string } {
  const file = join(dir, 'worker.yaml');
  writeFileSync(file, 'name: served\ntoolsets:\n  filesystem:\n    approval: { default: ask, tools: { read_file: preApproved } }\n');
  return { dir, file };
}

type Elicit = (params: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>;

function client(elicit?: Elicit): Client {
  const created = new Client({ name: 'auth-test', version: '1.0.0' }, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) created.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params));
  cleanup.push(() => created.close());
  return created;
}

const bearer = (token: string) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });

function textOf(result: unknown): string {
  return (result as CallToolResult).content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

function stopped(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

interface Serving {
  url: URL;
  token: string;
  tokenFile?: string;
  child: ChildProcess;
  stderr: () => string;
}

/** `toolgate mcp serve <worker> --http 0 …`: the URL, and the token it was given or generated. */
async function serveHttp(worker: string, extra: string[] = [], env: Record<string, string> = {}, given?: string): Promise<Serving> {
  const child = spawn(process.execPath, [CLI, 'mcp', 'serve', worker, '--http', '0', ...extra], {
    cwd: dirname(worker),
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, TOOLGATE_MCP_TOKEN: '', ...env },
  });
  cleanup.push(() => stopped(child));
  let stderr = '';
  const url = await new Promise<URL>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /on (http:\/\/\S+)\n.*Bearer <the token (in \S+|you gave)>/.exec(stderr);
      if (found) resolve(new URL(found[1]!));
    });
    child.once('exit', (code) => reject(new Error(`toolgate mcp serve exited with ${code}: ${stderr}`)));
  });
  const tokenFile = /Bearer <the token in (\S+)>/.exec(stderr)?.[1];
  const token = given ?? (env.TOOLGATE_MCP_TOKEN || readFileSync(tokenFile!, 'utf8').trim());
  return { url, token, ...(tokenFile ? { tokenFile } : {}), child, stderr: () => stderr };
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** A raw initialize request, as any local process can send one. */
function initialize(url: URL | string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: INITIALIZE,
  });
}

describe('toolgate mcp serve over HTTP: the bearer token', () => {
  it('is required on loopback too; no other way of sending it counts, and unauthenticated requests open no session', async () => {
    const { file } = workerIn();
    const serving = await serveHttp(file);
    const { url, token } = serving;
    // Generated, in a private folder, readable by the user only.
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(serving.tokenFile!).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(serving.tokenFile!)).mode & 0o777).toBe(0o700);

    const withQuery = (name: string, value: string) => {
      const copy = new URL(url);
      copy.searchParams.set(name, value);
      return copy;
    };
    const attempts: [string, URL, Record<string, string>][] = [
      ['no token', url, {}],
      ['a wrong token', url, { authorization: 'Bearer wrong-token-0123456789' }],
      ['the token with a suffix', url, { authorization: `Bearer ${token}x` }],
      ['a prefix of the token', url, { authorization: `Bearer ${token.slice(0, -1)}` }],
      ['the bare token', url, { authorization: token }],
      ['Basic authentication', url, { authorization: `Basic ${Buffer.from(`user:${token}`).toString('base64')}` }],
      ['another header', url, { 'x-api-key': token, 'mcp-token': token }],
      ['?token=', withQuery('token', token), {}],
      ['?access_token=', withQuery('access_token', token), {}],
      ['?authorization=', withQuery('authorization', `Bearer ${token}`), {}],
    ];
    for (const [what, target, headers] of attempts) {
      const response = await initialize(target, headers);
      await response.text();
      expect(response.status, what).toBe(401);
      expect(response.headers.get('www-authenticate'), what).toBe('Bearer');
    }
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(url, { method, headers: { 'mcp-session-id': 'guess' } });
      expect(response.status, method).toBe(401);
    }
    // Hundreds of unauthenticated clients leave every session free for the real one.
    await Promise.all(Array.from({ length: 100 }, () => initialize(url).then((response) => response.text())));
    const mcp = client();
    await mcp.connect(new StreamableHTTPClientTransport(url, bearer(token)));
    expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain('write_file');
    // The SDK client without the token cannot even initialize.
    await expect(client().connect(new StreamableHTTPClientTransport(url))).rejects.toThrow();

    // The generated token's folder goes when serving ends.
    await stopped(serving.child);
    expect(existsSync(dirname(serving.tokenFile!))).toBe(false);
  });

  it('is never taken from the command line; TOOLGATE_MCP_TOKEN and --token-file are read, short tokens refused', async () => {
    const { file, dir } = workerIn();
    const onCommandLine = spawnSync(process.execPath, [CLI, 'mcp', 'serve', file, '--http', '0', '--token', 'a-long-enough-token-123'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(onCommandLine.status).toBe(1);
    expect(onCommandLine.stderr).toContain('/proc/<pid>/cmdline');
    expect(onCommandLine.stderr).toContain('--token-file');

    const tokenFile = join(dir, 'token.txt');
    writeFileSync(tokenFile, 'from-a-file-0123456789\n', { mode: 0o600 });
    const fromFile = await serveHttp(file, ['--token-file', tokenFile], {}, 'from-a-file-0123456789');
    expect(fromFile.stderr()).toContain('Bearer <the token you gave>');
    expect(fromFile.token).toBe('from-a-file-0123456789');
    expect((await initialize(fromFile.url, { authorization: 'Bearer from-a-file-0123456789' })).status).toBe(200);
    expect((await initialize(fromFile.url, { authorization: 'Bearer wrong' })).status).toBe(401);

    const fromEnvironment = await serveHttp(file, [], { TOOLGATE_MCP_TOKEN: 'from-the-environment-01' });
    expect((await initialize(fromEnvironment.url, { authorization: 'Bearer from-the-environment-01' })).status).toBe(200);

    writeFileSync(tokenFile, 'short\n');
    const short = spawnSync(process.execPath, [CLI, 'mcp', 'serve', file, '--http', '0', '--token-file', tokenFile], { encoding: 'utf8', timeout: 30_000 });
    expect(short.status).toBe(1);
    expect(short.stderr).toContain('at least 16 characters');
  });
});

describe('toolgate mcp serve over HTTP and the MCP Inspector CLI', () => {
  it('lists the tools with the bearer header, and gets nothing without it', async () => {
    const { file } = workerIn();
    const { url, token } = await serveHttp(file);
    const inspector = packageFile('@modelcontextprotocol/inspector', 'cli/build/index.js');
    const inspect = (headers: string[]) =>
      spawnSync(process.execPath, [inspector, url.href, '--transport', 'http', '--method', 'tools/list', ...headers.flatMap((header) => ['--header', header])], {
        encoding: 'utf8',
        timeout: 60_000,
      });
    const listed = inspect([`Authorization: Bearer ${token}`]);
    expect(listed.status, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { tools: { name: string }[] }).tools.map((tool) => tool.name)).toContain('write_file');
    const anonymous = inspect([]);
    expect(anonymous.status).not.toBe(0);
    expect(anonymous.stdout).not.toContain('write_file');
  });
});

describe('toolgate mcp serve over HTTP: sessions', () => {
  it('closes idle sessions, so idle clients cannot hold every place', async () => {
    const { file } = workerIn();
    const { url, token } = await serveHttp(file, ['--idle-timeout', '1']);
    const auth = { authorization: `Bearer ${token}` };
    const first = await initialize(url, auth);
    await first.text();
    const firstId = first.headers.get('mcp-session-id')!;
    // Open sessions until the cap refuses one (64 at once), or until enough were opened that
    // the cap would have been hit had none expired meanwhile (a slow machine).
    let opened = 1;
    let refused = false;
    while (!refused && opened < 300) {
      const response = await initialize(url, auth);
      await response.text();
      refused = response.status === 503;
      if (!refused) {
        expect(response.status).toBe(200);
        opened++;
      }
    }
    expect(refused || opened >= 64).toBe(true);
    // Within a bounded wait the idle sessions are closed and a new client gets in.
    let status = 503;
    for (let attempt = 0; attempt < 150 && status !== 200; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const response = await initialize(url, auth);
      await response.text();
      status = response.status;
    }
    expect(status).toBe(200);
    // An expired session is gone for good.
    const list = () =>
      fetch(url, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': firstId },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
    let stale = await list();
    for (let attempt = 0; attempt < 150 && stale.status !== 404; attempt++) {
      await stale.text();
      await new Promise((resolve) => setTimeout(resolve, 200));
      stale = await list();
    }
    expect(stale.status).toBe(404);
  });

  it("answers a call only through its own session's elicitation; another session cannot approve it", async () => {
    const { dir, file } = workerIn();
    const { url, token } = await serveHttp(file);
    const target = join(dir, 'written.txt');
    let release: (answer: ElicitResult) => void = () => {};
    const askedA: string[] = [];
    const askedB: string[] = [];
    const a = client((params) => {
      askedA.push(params.message);
      return new Promise<ElicitResult>((resolve) => (release = resolve));
    });
    const b = client((params) => {
      askedB.push(params.message);
      return { action: 'accept', content: { decision: 'approve' } };
    });
    await a.connect(new StreamableHTTPClientTransport(url, bearer(token)));
    const bTransport = new StreamableHTTPClientTransport(url, bearer(token));
    await b.connect(bTransport);

    const pending = a.callTool({ name: 'write_file', arguments: { path: target, content: 'from a' } });
    for (let i = 0; i < 100 && askedA.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(askedA).toHaveLength(1);
    // B answers what it can reach: forged elicitation results on its own session, and on none.
    for (const sessionId of [bTransport.sessionId!, undefined]) {
      for (let id = 0; id < 5; id++) {
        const forged = await fetch(url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
          },
          body: JSON.stringify({ jsonrpc: '2.0', id, result: { action: 'accept', content: { decision: 'approve' } } }),
        });
        await forged.text();
      }
    }
    expect(existsSync(target)).toBe(false);
    release({ action: 'accept', content: { decision: 'deny', reason: 'a says no' } });
    const denied = await pending;
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('a says no');
    expect(existsSync(target)).toBe(false);
    expect(askedB).toEqual([]);

    // B's own call asks B, and only B.
    const approved = await b.callTool({ name: 'write_file', arguments: { path: target, content: 'from b' } });
    expect(approved.isError, textOf(approved)).toBeFalsy();
    expect(askedB).toHaveLength(1);
    expect(askedA).toHaveLength(1);
    expect(readFileSync(target, 'utf8')).toBe('from b');
  });
});

/** `toolgate mcp serve <worker>` over stdio, without a controlling terminal. */
function serveStdio(worker: string): StdioClientTransport {
  return new StdioClientTransport({ command: 'setsid', args: [process.execPath, CLI, 'mcp', 'serve', worker], cwd: dirname(worker), stderr: 'pipe' });
}

describe('toolgate mcp serve: what the elicitation shows', () => {
  it('the whole input, padding and escape sequences made visible; no 4,000-character cut', async () => {
    const { dir, file } = workerIn();
    const asked: ElicitRequest['params'][] = [];
    const mcp = client((params) => {
      asked.push(params);
      return { action: 'accept', content: { decision: 'deny' } };
    });
    await mcp.connect(serveStdio(file));
    const tail = ";import os;os.remove('victim.txt')";
    const paddings: [string, string, string][] = [
      ['spaces', ' '.repeat(4100), '⟨4100 spaces⟩'],
      ['tabs', '\t'.repeat(4100), '⟨4100 tabs⟩'],
      ['no-break spaces', '\u00a0'.repeat(4100), '⟨4100 × U+00A0⟩'],
      ['line separators', '\u2028'.repeat(4100), '⟨4100 × U+2028⟩'],
      ['zero-width spaces', '\u200b'.repeat(4100), '⟨4100 × U+200B⟩'],
      ['newlines', '\n'.repeat(4100), '⟨4099 empty lines⟩'],
      ['visible filler', 'x'.repeat(9000), 'x'.repeat(9000)],
    ];
    for (const [what, padding, mark] of paddings) {
      const content = `print('hello')${padding}${tail}`;
      await mcp.callTool({ name: 'write_file', arguments: { path: join(dir, 'a.py'), content } });
      const message = asked.at(-1)!.message;
      expect(message, what).toContain(mark);
      expect(message, what).toContain(tail);
      expect(rawControls(message), what).toEqual([]);
      expect(message, what).toContain('"Always" covers');
    }
    for (const hostile of ['\u001b]52;c;aGk=\u0007', '\u001b[2J', '\u001b]0;pwned\u0007', 'evil\u202etxt.exe', 'a\u200db']) {
      await mcp.callTool({ name: 'write_file', arguments: { path: join(dir, `${hostile}.txt`), content: hostile } });
      expect(rawControls(asked.at(-1)!.message), JSON.stringify(hostile)).toEqual([]);
    }
    expect(existsSync(join(dir, 'a.py'))).toBe(false);
  });

  it('an input too long to show whole says so with its size and digest, and offers neither always nor save', async () => {
    const { dir, file } = workerIn();
    const asked: ElicitRequest['params'][] = [];
    let answer: ElicitResult = { action: 'accept', content: { decision: 'always' } };
    const mcp = client((params) => {
      asked.push(params);
      return answer;
    });
    await mcp.connect(serveStdio(file));
    const content = `${'ab'.repeat(40_000)}\nimport os; os.remove('victim.txt')`;
    const target = join(dir, 'long.py');
    const refused = await mcp.callTool({ name: 'write_file', arguments: { path: target, content } });
    const { message, requestedSchema } = asked[0] as ElicitRequest['params'] & { requestedSchema: { properties: { decision: { enum: string[] } } } };
    expect(message).toMatch(/too long to show whole \(\d+ bytes, sha256 [0-9a-f]{64}\)/);
    expect(message).not.toContain('"Always" covers');
    expect(requestedSchema.properties.decision.enum).toEqual(['approve', 'deny']);
    // "always" was not offered: answering it anyway is refused, nothing runs.
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('no valid answer');
    expect(existsSync(target)).toBe(false);
    answer = { action: 'accept', content: { decision: 'approve' } };
    const once = await mcp.callTool({ name: 'write_file', arguments: { path: target, content } });
    expect(once.isError, textOf(once)).toBeFalsy();
    expect(readFileSync(target, 'utf8')).toBe(content);
  });
});
