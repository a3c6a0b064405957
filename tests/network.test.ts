/**
 * Network by host end to end (issue 24): worker files with `sandbox.network: { allow, deny, ask }`
 * run real programs (curl, python) whose only way out is toolgate's egress proxy, against servers
 * this test starts on 127.0.0.1. Asking goes through the run's approval handler (`toolName:
 * 'network'`), deferred runs stop and resume in another process, every decision is a record and an
 * audit line, and a refused connection is named in the call's result.
 *
 * Local servers are on 127.0.0.1, an internal address: a worker reaches them only with the address
 * itself in `allow` (a name resolving there is not enough). `localhost` is the name used for
 * asking: it is in no `allow` list, so it is asked about, and its address is allowed.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { resumeWorker, runWorker, type ApprovalAnswer, type ApprovalRequest, type RunEvent } from '../ts/src/worker/index.js';
import { CLI, runToolgate } from './helpers/cli.js';
import { startFakeOpenAiServer, toolResultsIn, type FakeTurn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

/** The sandbox mode of these workers (the netns proxy network where the kernel gives one). */
const MODE = 'best-effort';
const SECRET = 'network-secret-of-at-least-32-bytes-0123';

let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((request, response) => response.end(`hello from ${request.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A worker file with a shell toolset that runs anything without asking, under `network`. */
function workerFile(network: string, extra: string[] = []): string {
  const dir = tempDir();
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    ['name: fetcher', 'instructions: test', `sandbox: { mode: ${MODE}, network: ${network} }`, ...extra, 'toolsets:', '  shell: { default: preApproved }', ''].join('\n'),
  );
  return file;
}

interface ShellOutput {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  refusedConnections?: { host: string; port: number; reason: string }[];
}

/** Runs `commands` as one model step each through the worker; the outputs, the asks and the connection records. */
async function run(file: string, commands: string[], onApproval?: (request: ApprovalRequest) => ApprovalAnswer) {
  const worker = await loadWorker(file);
  const model = scriptedModel([...commands.map((command) => ({ toolCalls: [{ toolName: 'shell', input: { command } }] })), { text: 'done' }]);
  const asked: ApprovalRequest[] = [];
  const events: RunEvent[] = [];
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
  const outputs = result.toolCalls.map((call) => call.output as ShellOutput);
  const connections = events.flatMap((event) => (event.type === 'network-connection' ? [event.record] : []));
  return { result, outputs, asked, connections };
}

/**
 * Runs the CLI in `cwd` without blocking this process (its servers answer the child meanwhile).
 */
async function toolgate(cwd: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, TOOLGATE_STATE_SECRET: SECRET, XDG_CACHE_HOME: join(cwd, '.cache') }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end();
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { status, stdout, stderr };
}

const curl = (url: string) => `curl -sS --max-time 10 ${url}`;

describe('network by host in a worker run', () => {
  it('reaches an allowed address with curl and python, and records the connection', async () => {
    const file = workerFile(`{ allow: ["127.0.0.1:${port}"] }`);
    const python = `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/py').read().decode())"`;
    const { outputs, connections } = await run(file, [curl(`http://127.0.0.1:${port}/curl`), python]);
    expect(outputs[0]!.stdout).toBe('hello from /curl');
    expect(outputs[1]!.stdout.trim()).toBe('hello from /py');
    expect(outputs[0]!.refusedConnections).toBeUndefined();
    expect(connections).toHaveLength(2);
    expect(connections[0]).toMatchObject({ host: '127.0.0.1', port, tool: 'shell', decision: 'allowed', decidedBy: 'rule', rule: `127.0.0.1:${port}` });
    expect(connections[0]!.bytesDown).toBeGreaterThan(0);
    expect(connections[0]!.bytesUp).toBeGreaterThan(0);
  });

  it('refuses a port not allowed, naming the host, the port and the fix in the result', async () => {
    const file = workerFile(`{ allow: ["127.0.0.1:${port === 1 ? 2 : 1}"] }`);
    const { outputs, connections } = await run(file, [curl(`http://127.0.0.1:${port}/`)]);
    expect(outputs[0]!.stdout).not.toContain('hello');
    expect(outputs[0]!.refusedConnections).toEqual([{ host: '127.0.0.1', port, reason: expect.stringContaining(`connection to 127.0.0.1:${port} refused`) }]);
    expect(outputs[0]!.refusedConnections![0]!.reason).toContain('network.allow');
    expect(connections[0]).toMatchObject({ decision: 'denied', decidedBy: 'address' });
  });

  it('deny wins over allow, in every spelling of the address', async () => {
    const file = workerFile(`{ allow: ["127.0.0.0/8", localhost], deny: ["127.0.0.1:${port}"] }`);
    const spellings = ['127.0.0.1', '2130706433', '0x7f000001', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]'];
    const { outputs, connections } = await run(
      file,
      spellings.map((host) => curl(`http://${host}:${port}/`)),
    );
    for (const [index, output] of outputs.entries()) {
      expect(output.stdout, spellings[index]).not.toContain('hello');
      expect(output.refusedConnections?.[0]?.reason, spellings[index]).toMatch(/refused/);
    }
    expect(connections.every((record) => record.decision === 'denied')).toBe(true);
  });

  it('a name resolving to loopback is refused unless the address itself is allowed', async () => {
    const byName = await run(workerFile('{ allow: [localhost, LOCALHOST., "*.localhost"] }'), [curl(`http://localhost:${port}/`), curl(`http://LocalHost.:${port}/`)]);
    for (const output of byName.outputs) {
      expect(output.stdout).not.toContain('hello');
      expect(output.refusedConnections?.[0]?.reason).toContain('allowing the name is not enough');
    }
    const withAddress = await run(workerFile('{ allow: [localhost, "127.0.0.1"] }'), [curl(`http://localhost:${port}/named`)]);
    expect(withAddress.outputs[0]!.stdout).toBe('hello from /named');
  });

  it('refuses credentials in the URL and internal addresses behind an allowed name', async () => {
    const file = workerFile('{ allow: ["127.0.0.1:1"], ask: true }');
    // A request with user info, the cloud metadata address and the unspecified address: none
    // is asked about (an answer never opens an internal address), all are refused.
    const commands = [
      `curl -sS --max-time 10 -x "$http_proxy" http://user:secret@169.254.169.254/latest/meta-data/`,
      curl('http://169.254.169.254/latest/meta-data/'),
      curl(`http://0.0.0.0:${port}/`),
      curl(`http://[::1]:${port}/`),
    ];
    const { outputs, asked } = await run(file, commands, () => 'approve');
    expect(asked).toEqual([]);
    for (const output of outputs) expect(output.stdout).not.toContain('hello');
    expect(outputs[1]!.refusedConnections?.[0]?.reason).toContain('169.254.169.254');
  });
});

describe('asking about a host', () => {
  const asking = () => workerFile('{ allow: ["127.0.0.1"], ask: true }');
  /** Two calls to `localhost` (read once the server listens). */
  const twice = () => [curl(`http://localhost:${port}/one`), curl(`http://localhost:${port}/two`)];

  it('approve opens one connection, and the request names the host, the port and the tool', async () => {
    const { outputs, asked, connections } = await run(asking(), twice(), () => 'approve');
    expect(outputs.map((output) => output.stdout)).toEqual(['hello from /one', 'hello from /two']);
    expect(asked).toHaveLength(2);
    expect(asked[0]).toMatchObject({ toolName: 'network', input: { host: 'localhost', port, tool: 'shell' } });
    expect(connections.map((record) => [record.decision, record.decidedBy])).toEqual([
      ['asked-approved', 'user'],
      ['asked-approved', 'user'],
    ]);
  });

  it('always covers the host and port for the rest of the run', async () => {
    const { outputs, asked, connections } = await run(asking(), twice(), () => 'always');
    expect(outputs.map((output) => output.stdout)).toEqual(['hello from /one', 'hello from /two']);
    expect(asked).toHaveLength(1);
    expect(connections.map((record) => record.decidedBy)).toEqual(['user', 'run-allowance']);
  });

  it('deny refuses with the reason the model reads in the result', async () => {
    const { outputs } = await run(asking(), [twice()[0]!], () => ({ decision: 'deny', reason: 'not during this task' }));
    expect(outputs[0]!.stdout).not.toContain('hello');
    expect(outputs[0]!.refusedConnections?.[0]).toMatchObject({ host: 'localhost', port, reason: expect.stringContaining('not during this task') });
  });

  it('with nobody to ask, it is refused (fail closed)', async () => {
    const { outputs, connections } = await run(asking(), [twice()[0]!]);
    expect(outputs[0]!.stdout).not.toContain('hello');
    expect(connections[0]).toMatchObject({ decision: 'denied', decidedBy: 'no-handler' });
  });

  it('is never asked about a denied host, or without ask: true', async () => {
    const denied = await run(workerFile('{ allow: ["127.0.0.1"], deny: [localhost], ask: true }'), [twice()[0]!], () => 'approve');
    const quiet = await run(workerFile('{ allow: ["127.0.0.1"] }'), [twice()[0]!], () => 'approve');
    expect(denied.asked).toEqual([]);
    expect(quiet.asked).toEqual([]);
    expect(denied.connections[0]).toMatchObject({ decidedBy: 'rule', rule: 'localhost' });
    expect(quiet.connections[0]).toMatchObject({ decidedBy: 'policy' });
  });

  it('a deferred run stops for the host and its resumed run reaches it once approved', async () => {
    const worker = await loadWorker(asking());
    const first = await runWorker(worker, 'fetch', {
      model: scriptedModel([{ toolCalls: [{ toolName: 'shell', input: { command: twice()[0]! } }] }]),
      onApproval: 'defer',
      stateSecret: SECRET,
    });
    expect(first.status).toBe('approval-required');
    const pending = first.pending!.find((request) => request.toolName === 'network')!;
    expect(pending.input).toEqual({ host: 'localhost', port, tool: 'shell' });
    const resumed = await resumeWorker(worker, first.state!, { [pending.id]: 'approve' }, {
      model: scriptedModel([{ toolCalls: [{ toolName: 'shell', input: { command: twice()[0]! } }] }, { text: 'done' }]),
      stateSecret: SECRET,
    });
    expect(resumed.status).toBe('completed');
    expect((resumed.toolCalls.at(-1)!.output as ShellOutput).stdout).toBe('hello from /one');
  });
});

describe('levels and records', () => {
  it("a toolset's network widens its worker's inside one file; the worker's other toolsets keep theirs", async () => {
    const dir = tempDir();
    const file = join(dir, 'worker.yaml');
    writeFileSync(
      file,
      [
        'name: levels',
        'instructions: test',
        `sandbox: { mode: ${MODE}, network: false }`,
        'toolsets:',
        `  shell: { default: preApproved, sandbox: { network: { allow: ["127.0.0.1:${port}"] } } }`,
        '  cli_execute: { allowed_binaries: [curl] }',
        '',
      ].join('\n'),
    );
    const worker = await loadWorker(file);
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'shell', input: { command: curl(`http://127.0.0.1:${port}/shell`) } }] },
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'curl', args: ['-sS', '--max-time', '5', `http://127.0.0.1:${port}/cli`] } }] },
      { text: 'done' },
    ]);
    const result = await runWorker(worker, 'fetch', { model, onApproval: () => 'approve' });
    expect((result.toolCalls[0]!.output as ShellOutput).stdout).toBe('hello from /shell');
    expect((result.toolCalls[1]!.output as ShellOutput).stdout).not.toContain('hello');
  });

  it('writes a network line per decision to the audit log', async () => {
    const file = workerFile('{ allow: ["127.0.0.1"], ask: true }', ['audit: { file: ./audit.jsonl }']);
    await run(file, [curl(`http://127.0.0.1:${port}/a`), curl(`http://localhost:${port}/b`)], () => ({ decision: 'deny', reason: 'no' }));
    const lines = readFileSync(join(file, '..', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const network = lines.filter((line) => line.type === 'network' || line.event === 'network' || line.kind === 'network');
    expect(network).toHaveLength(2);
    expect(network[0]).toMatchObject({ host: '127.0.0.1', port, decision: 'allowed', decidedBy: 'rule', tool: 'shell' });
    expect(network[0]!.bytesDown).toBeGreaterThan(0);
    expect(network[1]).toMatchObject({ host: 'localhost', port, decision: 'denied', decidedBy: 'user' });
  });
});

describe('toolgate sandbox --allow-host / --deny-host', () => {
  it('reaches an allowed host and names a refused one on stderr', async () => {
    const dir = tempDir();
    const allowed = await toolgate(dir, ['sandbox', '--best-effort', '--allow-host', `127.0.0.1:${port}`, '--', 'curl', '-sS', '--max-time', '10', `http://127.0.0.1:${port}/cli`]);
    expect(allowed.stdout).toBe('hello from /cli');
    const denied = await toolgate(dir, ['sandbox', '--best-effort', '--allow-host', '127.0.0.1', '--deny-host', `127.0.0.1:${port}`, '--', 'curl', '-sS', '--max-time', '10', `http://127.0.0.1:${port}/`]);
    expect(denied.stdout).not.toContain('hello');
    expect(denied.stderr).toContain(`127.0.0.1:${port}`);
    expect(denied.stderr).toContain('network.deny');
    const malformed = await toolgate(dir, ['sandbox', '--allow-host', 'https://example.com', '--', 'true']);
    expect(malformed.status).not.toBe(0);
    expect(malformed.stderr).toContain('example.com');
  });

  it('toolgate check --sandbox prints each toolset network policy', () => {
    const file = workerFile('{ allow: [registry.npmjs.org, "127.0.0.1:8080"], deny: [gist.github.com], ask: true }');
    const check = runToolgate(['check', '--sandbox', file]);
    expect(check.stdout).toContain('registry.npmjs.org');
    expect(check.stdout).toContain('gist.github.com');
    expect(check.stdout).toMatch(/ask/);
  });
});

describe('a deferred CLI run asking for a host, resumed in another process', () => {
  it('stops with the network request pending and reaches the host after the answer', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'worker.yaml'),
      ['name: ci', 'instructions: test', `sandbox: { mode: ${MODE}, network: { allow: ["127.0.0.1"], ask: true } }`, 'toolsets:', '  shell: { default: preApproved }', ''].join('\n'),
    );
    const command = curl(`http://localhost:${port}/resumed`);
    const turn: FakeTurn = { toolCalls: [{ name: 'shell', arguments: { command } }] };
    const model = await startFakeOpenAiServer([turn, turn, { text: 'finished' }]);
    try {
      const started = await toolgate(dir, ['run', 'worker.yaml', 'fetch', '--model', 'openai-compatible:fake', '--base-url', model.baseUrl, '--defer-approvals', '--state-file', 'run.json']);
      expect(started.status, started.stderr).toBe(4);
      const pending = (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string; toolName: string; input: unknown }[] }).pending;
      expect(pending).toEqual([expect.objectContaining({ toolName: 'network', input: { host: 'localhost', port, tool: 'shell' } })]);
      const resumed = await toolgate(dir, ['resume', 'run.json', '--answers', `${pending[0]!.id}=approve`, '--state-ledger', join(dir, 'ledger')]);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(Object.values(toolResultsIn(model.requests[2]!)).join('\n')).toContain('hello from /resumed');
    } finally {
      await model.close();
    }
  });
});
