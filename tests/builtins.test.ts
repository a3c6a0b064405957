import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalOf, BUILTIN_TOOL_NAMES, BUILTINS_DEFAULT_APPROVAL, builtinsToolset, loadWorker } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { byName, call, failure } from './helpers/tools.js';

/** A local server on 127.0.0.1: echoes requests, redirects, serves a large body, fakes a search provider. */
let server: Server;
let base: string;
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];

function handle(request: IncomingMessage, response: ServerResponse): void {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
    const url = request.url ?? '/';
    if (url.startsWith('/redirect-metadata')) {
      response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    } else if (url.startsWith('/redirect-local')) {
      response.writeHead(302, { location: '/echo?after-redirect' }).end();
    } else if (url.startsWith('/large')) {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(5000));
    } else if (url === '/search') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ answer: 'forty-two', results: [{ title: 'T', url: 'https://example.com/a', content: 'snippet' }] }),
      );
    } else {
      response
        .writeHead(201, { 'content-type': 'application/json', 'x-test': 'yes' })
        .end(JSON.stringify({ method: request.method, url, body }));
    }
  });
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('builtinsToolset', () => {
  it('offers every built-in with a schema and the documented approvals', () => {
    const tools = builtinsToolset({ workDir: tempDir() });
    expect(tools.map((tool) => tool.name)).toEqual([...BUILTIN_TOOL_NAMES]);
    expect(BUILTIN_TOOL_NAMES).toEqual([
      'http_request',
      'json_parse',
      'csv_parse',
      'datetime_now',
      'uuid_generate',
      'math_calculate',
      'file_create',
      'web_search',
    ]);
    for (const tool of tools) {
      expect(tool.description?.length).toBeGreaterThan(20);
      expect(approvalOf(tool)?.decision).toBe(BUILTINS_DEFAULT_APPROVAL[tool.name]);
    }
    expect(BUILTINS_DEFAULT_APPROVAL).toMatchObject({ http_request: 'ask', web_search: 'ask', file_create: 'ask', json_parse: 'preApproved' });
  });

  it('applies approval on top and refuses unknown tools, options and names', () => {
    const tools = builtinsToolset({ tools: ['json_parse', 'http_request'], approval: { tools: { http_request: 'blocked', json_parse: 'ask' } } });
    expect(tools.map((tool) => [tool.name, approvalOf(tool)?.decision])).toEqual([
      ['http_request', 'blocked'],
      ['json_parse', 'ask'],
    ]);
    expect(() => builtinsToolset({ tools: ['shell_exec'] })).toThrow(/tools names 'shell_exec'/);
    expect(() => builtinsToolset({ approval: { tools: { http_reqest: 'ask' } } })).toThrow(/http_reqest/);
    expect(() => builtinsToolset({ htp: {} } as never)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => builtinsToolset({ http: { timeoutMs: 0 } })).toThrow(/timeout/);
    expect(() => builtinsToolset({ http: { allow: ['http://127.0.0.1/'] } })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('http_request reaches a local server only when the config allows it', async () => {
    const allowed = byName(builtinsToolset({ http: { allow: ['127.0.0.1'] } }), 'http_request');
    const response = await call<{ status: number; headers: Record<string, string>; body: string; truncated: boolean }>(allowed, {
      url: `${base}/echo`,
      method: 'POST',
      headers: { 'x-sent': 'hello' },
      body: 'payload',
    });
    expect(response.status).toBe(201);
    expect(response.headers['x-test']).toBe('yes');
    expect(JSON.parse(response.body)).toEqual({ method: 'POST', url: '/echo', body: 'payload' });
    expect(seen.at(-1)?.headers['x-sent']).toBe('hello');
    const followed = await call<{ body: string }>(allowed, { url: `${base}/redirect-local` });
    expect(JSON.parse(followed.body).url).toBe('/echo?after-redirect');

    const refused = byName(builtinsToolset(), 'http_request');
    const before = seen.length;
    const port = (server.address() as AddressInfo).port;
    for (const url of [
      `${base}/echo`,
      `http://localhost:${port}/echo`,
      `http://2130706433:${port}/echo`,
      `http://0x7f.1:${port}/echo`,
      `http://[::ffff:127.0.0.1]:${port}/echo`,
      `http://[::1]:${port}/echo`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
    ]) {
      const error = await failure(refused, { url });
      expect(error.code, url).toBe('ARGUMENT_REJECTED');
      expect(error.message, url).toMatch(/refused|internal|loopback|private|link-local/);
    }
    expect(seen.length).toBe(before);
  });

  it('http_request checks every redirect and caps the body', async () => {
    const tools = builtinsToolset({ http: { allow: ['127.0.0.1'], maxResponseBytes: 1000 } });
    const http = byName(tools, 'http_request');
    const error = await failure(http, { url: `${base}/redirect-metadata` });
    expect(error.code).toBe('ARGUMENT_REJECTED');
    expect(error.message).toContain('169.254.169.254');
    const large = await call<{ body: string; truncated: boolean; bytes: number }>(http, { url: `${base}/large` });
    expect(large.truncated).toBe(true);
    expect(large.bytes).toBe(1000);
    expect(large.body).toContain('[response truncated');
    for (const input of [{ url: 'file:///etc/passwd' }, { url: 'ftp://127.0.0.1/' }]) {
      expect((await failure(http, input)).code).toBe('ARGUMENT_REJECTED');
    }
    expect((await failure(http, { url: `${base}/`, method: 'TRACE' })).code).toBe('INVALID_INPUT');
    expect((await failure(http, { url: `${base}/`, headers: { host: 'evil' } })).code).toBe('INVALID_INPUT');
  });

  it('parses JSON with JSONPath and CSV, tells the time, makes UUIDs and calculates', async () => {
    const tools = builtinsToolset();
    const json = await call<{ result: unknown }>(byName(tools, 'json_parse'), {
      data: '{"items":[{"id":1,"price":5},{"id":2,"price":50}]}',
      path: '$.items[?@.price < 10].id',
    });
    expect(JSON.stringify(json)).toContain('1');
    expect(JSON.stringify(json)).not.toContain('50');
    expect((await failure(byName(tools, 'json_parse'), { data: '{oops' })).code).toBe('INVALID_INPUT');
    const csv = await call<{ rows: unknown[] }>(byName(tools, 'csv_parse'), { data: 'a;b\n1;"x;y"\n2;z\n', delimiter: ';' });
    expect(csv.rows).toEqual([
      { a: '1', b: 'x;y' },
      { a: '2', b: 'z' },
    ]);
    const now = await call<Record<string, string>>(byName(tools, 'datetime_now'), { timezone: 'Asia/Tokyo', format: '%Y' });
    expect(JSON.stringify(now)).toMatch(/\+09:00/);
    expect((await failure(byName(tools, 'datetime_now'), { timezone: 'Mars/Base' })).code).toBe('INVALID_INPUT');
    const ids = await call<{ uuids: string[] }>(byName(tools, 'uuid_generate'), { version: 'v7', count: 3 });
    expect(ids.uuids).toHaveLength(3);
    for (const id of ids.uuids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await call(byName(tools, 'math_calculate'), { expression: '(2 + 3) * math::sqrt(16)' })).toMatchObject({ result: 20 });
    for (const expression of ['x = 5', 'a; b', 'x'.repeat(100_000)]) {
      expect((await failure(byName(tools, 'math_calculate'), { expression })).code, expression.slice(0, 20)).toBe('INVALID_INPUT');
    }
  });

  it('file_create writes only under .toolgate/files of the work directory', async () => {
    const dir = tempDir();
    const create = byName(builtinsToolset({ workDir: dir }), 'file_create');
    const result = await call<Record<string, unknown>>(create, { filename: 'notes.md', content: '# hi\n' });
    expect(result).toEqual({ filename: 'notes.md', path: join(dir, '.toolgate/files/notes.md'), mime_type: 'text/markdown', bytes: 5 });
    expect(readFileSync(join(dir, '.toolgate/files/notes.md'), 'utf8')).toBe('# hi\n');
    for (const filename of ['../escape.md', '/etc/x.md', 'sub/x.md', '..\\x.md', 'x.exe', 'x.md/..', '.bashrc.sh']) {
      expect((await failure(create, { filename, content: 'x' })).code, filename).toBe('INVALID_INPUT');
    }
    expect(existsSync(join(dir, 'escape.md'))).toBe(false);
  });

  it('web_search names the missing key and talks to a configured provider', async () => {
    const saved = { tavily: process.env.TAVILY_API_KEY, perplexity: process.env.PERPLEXITY_API_KEY, provider: process.env.WEB_SEARCH_PROVIDER };
    try {
      delete process.env.TAVILY_API_KEY;
      delete process.env.PERPLEXITY_API_KEY;
      delete process.env.WEB_SEARCH_PROVIDER;
      const search = byName(builtinsToolset({ webSearch: { provider: 'tavily', baseUrl: base } }), 'web_search');
      const missing = await failure(search, { query: 'meaning of life' });
      expect(missing.message).toContain('TAVILY_API_KEY');
      process.env.TAVILY_API_KEY = 'test-key';
      const found = await call<Record<string, unknown>>(search, { query: 'meaning of life' });
      expect(JSON.stringify(found)).toContain('forty-two');
      const request = seen.at(-1)!;
      expect(request.url).toBe('/search');
      expect(JSON.stringify(request.headers) + request.body).toContain('test-key');
      expect(JSON.parse(request.body).query).toBe('meaning of life');
    } finally {
      for (const [name, value] of [
        ['TAVILY_API_KEY', saved.tavily],
        ['PERPLEXITY_API_KEY', saved.perplexity],
        ['WEB_SEARCH_PROVIDER', saved.provider],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('a worker file gets the builtins toolset with its approvals', async () => {
    const dir = tempDir();
    const path = join(dir, 'worker.yaml');
    writeFileSync(
      path,
      'name: helper\ntoolsets:\n  builtins:\n    tools: [math_calculate, file_create]\n    approval: { tools: { file_create: blocked } }\n',
    );
    const worker = await loadWorker(path);
    expect(Object.keys(worker.tools)).toEqual(['math_calculate']);
    expect(worker.toolApproval).toMatchObject({ math_calculate: { decision: 'preApproved' }, file_create: { decision: 'blocked' } });
    const math = worker.tools.math_calculate!;
    expect(await call({ ...math, name: 'math_calculate' }, { expression: '2^10' })).toMatchObject({ result: 1024 });
  });
});
