import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asSchema } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalOf, loadWorker, mcpToolset, type McpToolset, offeredTools, runWorker, ToolgateError } from '../ts/src/index.js';
import { offeredToolNames, scriptedModel, toolResultsSeen } from './helpers/mock-model.js';
import { nodeModulesDir, packageFile, REPO_ROOT } from './helpers/checkout.js';
import { attackFixture } from './helpers/sandbox.js';

const ROOT = REPO_ROOT;
const NODE_MODULES = nodeModulesDir('@modelcontextprotocol/server-filesystem');
const FILESYSTEM_SERVER = packageFile('@modelcontextprotocol/server-filesystem', 'dist/index.js');
const MISBEHAVING = join(ROOT, 'tests/fixtures/mcp/misbehaving-server.mjs');
/** The servers are Node programs: the sandbox must let them read the code they run. */
const READ = [ROOT, NODE_MODULES];

const open: McpToolset[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((toolset) => toolset.close()));
});

/** Resolves once `check` holds; fails after 20 s. */
async function until(check: () => boolean): Promise<void> {
  for (let tries = 0; tries < 400; tries++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`not within 20 s: ${check.toString()}`);
}

async function toolset(options: Parameters<typeof mcpToolset>[0]): Promise<McpToolset> {
  const built = await mcpToolset(options);
  open.push(built);
  return built;
}

function toolNamed(set: McpToolset, name: string) {
  const found = set.tools.find((tool) => tool.name === name);
  if (!found) throw new Error(`no tool ${name}; have ${set.tools.map((tool) => tool.name).join(', ')}`);
  return found;
}

async function call(set: McpToolset, name: string, input: unknown): Promise<unknown> {
  return toolNamed(set, name).execute!(input as never, { toolCallId: 'c1', messages: [] });
}

async function failure(work: Promise<unknown>): Promise<ToolgateError> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolgateError);
  return error as ToolgateError;
}

function textOf(output: unknown): string {
  return (output as { content: { type: string; text?: string }[] }).content.map((part) => part.text ?? '').join('\n');
}

describe('mcp toolset: @modelcontextprotocol/server-filesystem in the sandbox', () => {
  it('offers server_tool names with the server schemas, gated ask by default, whitelist and approval applied', async () => {
    const fx = attackFixture();
    const set = await toolset({
      servers: { files: { command: 'node', args: [FILESYSTEM_SERVER, '/'] } },
      tools: ['files.read_text_file', 'files.list_directory', 'files.write_file'],
      approval: { tools: { 'files.read_text_file': 'preApproved', files_write_file: 'blocked' } },
      sandbox: { read: READ },
      workDir: fx.work,
    });
    expect(set.tools.map((tool) => tool.name).sort()).toEqual(['files_list_directory', 'files_read_text_file', 'files_write_file']);
    expect(approvalOf(toolNamed(set, 'files_read_text_file'))?.decision).toBe('preApproved');
    expect(approvalOf(toolNamed(set, 'files_list_directory'))?.decision).toBe('ask');
    expect(offeredTools(set.tools).map((tool) => tool.name)).not.toContain('files_write_file');
    expect(toolNamed(set, 'files_read_text_file').description).toMatch(/read/i);
    const schema = (await asSchema(toolNamed(set, 'files_read_text_file').inputSchema).jsonSchema) as { properties?: Record<string, unknown> };
    expect(Object.keys(schema.properties ?? {})).toContain('path');
    expect(textOf(await call(set, 'files_read_text_file', { path: join(fx.work, 'x.txt') }))).toContain('hello');
  });

  it('the kernel keeps a server allowed "/" from reading outside the work dir (several paths)', async () => {
    const fx = attackFixture();
    writeFileSync(join(fx.work, 'inside.txt'), 'inside\n');
    const set = await toolset({
      servers: { files: { command: 'node', args: [FILESYSTEM_SERVER, '/'] } },
      approval: { default: 'preApproved' },
      sandbox: { read: READ },
      workDir: fx.work,
    });
    const attempts = [
      fx.secretFile,
      join(fx.work, '..', 'outside', 'secret.txt'),
      join(fx.work, 'escape', 'secret.txt'),
      `file://${fx.secretFile}`,
      '/proc/1/environ',
      `/proc/${process.pid}/environ`,
      `/proc/${process.pid}/root${fx.secretFile}`,
      `${fx.work}/./escape/../escape/secret.txt`,
    ];
    for (const path of attempts) {
      const outcome = await call(set, 'files_read_text_file', { path }).then(
        (output) => textOf(output),
        (error: unknown) => (error as Error).message,
      );
      expect(outcome, path).not.toContain(fx.secret);
      // Nor toolgate's own environment (the host process is outside the server's PID namespace).
      expect(outcome, path).not.toContain(`PATH=${process.env.PATH}\0`);
    }
    // The server's own features: search, tree, several files at once, media, edit, move.
    const features: [string, unknown][] = [
      ['files_search_files', { path: fx.base, pattern: 'secret' }],
      ['files_directory_tree', { path: fx.outside }],
      ['files_read_multiple_files', { paths: [fx.secretFile, join(fx.work, 'escape/secret.txt')] }],
      ['files_read_media_file', { path: fx.secretFile }],
      ['files_edit_file', { path: fx.secretFile, edits: [{ oldText: 'TOP', newText: 'PWNED' }] }],
      ['files_move_file', { source: fx.secretFile, destination: join(fx.work, 'stolen.txt') }],
      ['files_move_file', { source: join(fx.work, 'x.txt'), destination: join(fx.outside, 'planted-by-move.txt') }],
    ];
    for (const [name, input] of features) {
      const outcome = await call(set, name, input).then(textOf, (error: unknown) => (error as Error).message);
      expect(outcome, name).not.toContain(fx.secret);
      expect(Buffer.from(outcome).toString(), name).not.toContain(Buffer.from(fx.secret).toString('base64'));
    }
    expect(readFileSync(fx.secretFile, 'utf8')).toContain(fx.secret);
    expect(existsSync(join(fx.work, 'stolen.txt'))).toBe(false);
    expect(existsSync(join(fx.outside, 'planted-by-move.txt'))).toBe(false);
    const listed = await call(set, 'files_list_directory', { path: fx.outside }).then(textOf, (error: unknown) => (error as Error).message);
    expect(listed).not.toContain('secret.txt');
    // Writing outside fails too; inside works.
    await call(set, 'files_write_file', { path: join(fx.outside, 'planted.txt'), content: 'x' }).catch(() => undefined);
    expect(existsSync(join(fx.outside, 'planted.txt'))).toBe(false);
    expect(textOf(await call(set, 'files_read_text_file', { path: join(fx.work, 'inside.txt') }))).toContain('inside');
  });
});

describe('mcp toolset: servers that misbehave', () => {
  const misbehaving = (
    work: string,
    extra: { timeoutMs?: number; startupTimeoutMs?: number; args?: string[]; env?: Record<string, string>; limits?: Record<string, number> } = {},
  ) =>
    toolset({
      servers: { bad: { command: 'node', args: [MISBEHAVING, ...(extra.args ?? [])], ...(extra.env ? { env: extra.env } : {}) } },
      approval: { default: 'preApproved' },
      sandbox: { read: READ, ...(extra.limits ? { limits: extra.limits } : {}) },
      workDir: work,
      ...(extra.timeoutMs ? { timeoutMs: extra.timeoutMs } : {}),
      ...(extra.startupTimeoutMs ? { startupTimeoutMs: extra.startupTimeoutMs } : {}),
    });

  it('a server that exits mid-call is TOOL_FAILED naming it, with its stderr', async () => {
    const set = await misbehaving(attackFixture().work);
    const error = await failure(call(set, 'bad_crash', {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain("MCP server 'bad'");
    expect(error.message).toContain('exited with code 3');
    expect(error.message).toContain('about to crash');
    // The connection is gone: later calls fail the same way, without hanging.
    expect((await failure(call(set, 'bad_echo', { text: 'x' }))).code).toBe('TOOL_FAILED');
  });

  it('what a server makes at a missing protected path between its calls is removed at once, and the next call says so', async () => {
    const work = attackFixture().work;
    const set = await toolset({
      servers: { bad: { command: 'node', args: [MISBEHAVING] } },
      approval: { default: 'preApproved' },
      sandbox: { read: READ, protect: ['planted.txt', 'config/planted.yaml'] },
      workDir: work,
    });
    for (const path of ['planted.txt', 'config/planted.yaml']) {
      expect(JSON.stringify(await call(set, 'bad_plant_later', { path, delayMs: 300 }))).toContain('scheduled');
      // Planted after the call's result: removed before the next call, without one.
      const done = join(work, `${path.replaceAll('/', '_')}.done`);
      await until(() => existsSync(done));
      expect(readFileSync(done, 'utf8')).toBe('planted');
      await until(() => !existsSync(join(work, path)));
      const next = JSON.stringify(await call(set, 'bad_echo', { text: 'x' }));
      expect(next).toContain(path);
    }
  });

  it('a server that keeps making protected configuration is stopped, and its next call says why', async () => {
    const work = attackFixture().work;
    const set = await toolset({
      servers: { bad: { command: 'node', args: [MISBEHAVING] } },
      approval: { default: 'preApproved' },
      sandbox: { read: READ, protect: ['planted.txt'] },
      workDir: work,
    });
    expect(JSON.stringify(await call(set, 'bad_plant_loop', { path: 'planted.txt' }))).toContain('looping');
    // Stopped after a few repairs: its calls fail, saying why, and the file stays away.
    let error: ToolgateError | undefined;
    let said = '';
    for (let tries = 0; tries < 100 && !error; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      error = await call(set, 'bad_echo', { text: 'x' }).then(
        (output) => {
          said += JSON.stringify(output);
          return undefined;
        },
        (failed: unknown) => failed as ToolgateError,
      );
    }
    expect(error?.code).toBe('TOOL_FAILED');
    // Said by the call during which it was stopped: the failed one, or the last that answered.
    expect(`${said}${error?.message}`).toContain('the server was stopped');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(existsSync(join(work, 'planted.txt'))).toBe(false);
  });

  it('a server its memory limit ends is TOOL_FAILED naming the limit', async () => {
    const set = await misbehaving(attackFixture().work, { limits: { memoryMb: 160 } });
    const error = await failure(call(set, 'bad_hog', {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain("MCP server 'bad'");
    expect(error.message).toContain('ran into its limit: memoryMb');
    expect((await failure(call(set, 'bad_echo', { text: 'x' }))).message).toContain('ran into its limit: memoryMb');
  });

  it('a call that never answers times out with TOOL_FAILED', async () => {
    const set = await misbehaving(attackFixture().work, { timeoutMs: 500 });
    const started = performance.now();
    const error = await failure(call(set, 'bad_hang', {}));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toMatch(/MCP server 'bad'.*timed out/i);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  for (const kind of ['text', 'json', 'rpc', 'binary', 'huge']) {
    it(`a line that is not a JSON-RPC message (${kind}) ends the connection with TOOL_FAILED "malformed"`, async () => {
      const set = await misbehaving(attackFixture().work, { timeoutMs: 20_000 });
      const error = await failure(call(set, 'bad_garbage', { kind }));
      expect(error.code).toBe('TOOL_FAILED');
      expect(error.message).toContain("MCP server 'bad'");
      expect(error.message).toContain('malformed message');
      expect(error.message.length).toBeLessThan(2000);
    });
  }

  it('an input larger than the limit is INVALID_INPUT and never sent', async () => {
    const set = await misbehaving(attackFixture().work);
    const error = await failure(call(set, 'bad_echo', { text: 'x'.repeat(1024 * 1024 + 1) }));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('bad.echo');
    expect(textOf(await call(set, 'bad_echo', { text: 'still alive' }))).toBe('still alive');
  });

  it('a tool error is TOOL_FAILED with the server message', async () => {
    const set = await misbehaving(attackFixture().work);
    const error = await failure(call(set, 'bad_fails', {}));
    expect(error.message).toContain('bad.fails reported an error: the disk is on fire');
  });

  it('a server that never starts fails within its startup timeout', async () => {
    const started = performance.now();
    const error = await failure(misbehaving(attackFixture().work, { startupTimeoutMs: 700, args: ['--hang-at-start'] }));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toMatch(/MCP server 'bad' \(mcpToolset\) failed to start: .*within 1 s/);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('names fit 64 characters, and two tools with one offered name are refused unless one is left out', async () => {
    const work = attackFixture().work;
    const clash = await failure(misbehaving(work, { args: ['--odd-names'] }));
    expect(clash.code).toBe('CONFIG_INVALID');
    expect(clash.message).toContain("'bad.x.y' and 'bad.x_y' would both be offered as 'bad_x_y'");
    const set = await toolset({
      servers: { bad: { command: 'node', args: [MISBEHAVING, '--odd-names'] } },
      tools: [`bad.${'a'.repeat(100)}`, 'bad.x.y'],
      approval: { default: 'preApproved' },
      sandbox: { read: READ },
      workDir: work,
    });
    const names = set.tools.map((tool) => tool.name);
    expect(names).toContain('bad_x_y');
    const long = names.find((name) => name.startsWith('bad_aaa'))!;
    expect(long.length).toBe(64);
    expect(textOf(await call(set, long, {}))).toBe('a'.repeat(100));
    expect(textOf(await call(set, 'bad_x_y', {}))).toBe('x.y');
  });

  it('a program that does not exist is BINARY_NOT_FOUND; a bad config is CONFIG_INVALID', async () => {
    const work = attackFixture().work;
    expect((await failure(toolset({ servers: { x: { command: 'no-such-mcp-server' } }, workDir: work }))).code).toBe('BINARY_NOT_FOUND');
    expect((await failure(toolset({ servers: { x_y: { command: 'node' } }, workDir: work }))).code).toBe('CONFIG_INVALID');
    expect((await failure(toolset({ servers: { x: { url: 'ftp://host/mcp' } }, workDir: work }))).code).toBe('CONFIG_INVALID');
  });

  it('runs with the sandbox off, still with the reduced environment, and is ended by close()', async () => {
    process.env.TOOLGATE_TEST_SECRET = 'hunter3';
    try {
      const set = await toolset({ servers: { bad: { command: 'node', args: [MISBEHAVING] } }, approval: { default: 'preApproved' }, sandbox: false, workDir: attackFixture().work });
      expect(textOf(await call(set, 'bad_echo', { text: 'off', env: 'TOOLGATE_TEST_SECRET' }))).toBe('off|(unset)');
      await set.close();
      expect((await failure(call(set, 'bad_echo', { text: 'after' }))).code).toBe('TOOL_FAILED');
    } finally {
      delete process.env.TOOLGATE_TEST_SECRET;
    }
  });

  it('a stdio server has no network unless the sandbox allows it', async () => {
    const { createServer } = await import('node:net');
    const listener = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as { port: number }).port;
    try {
      const work = attackFixture().work;
      const closed = await misbehaving(work);
      expect(textOf(await call(closed, 'bad_connect', { port }))).toMatch(/^refused/);
      const open = await toolset({
        servers: { bad: { command: 'node', args: [MISBEHAVING] } },
        approval: { default: 'preApproved' },
        sandbox: { read: READ, network: true },
        workDir: work,
      });
      expect(textOf(await call(open, 'bad_connect', { port }))).toBe('connected');
    } finally {
      listener.close();
    }
  });

  it('the server gets the reduced environment plus its explicit env, never toolgate secrets', async () => {
    process.env.TOOLGATE_TEST_SECRET = 'hunter2';
    try {
      const set = await misbehaving(attackFixture().work, { env: { GIVEN: 'yes', FROM_VAR: '${TOOLGATE_TEST_SECRET}' } });
      expect(textOf(await call(set, 'bad_echo', { text: 'a', env: 'TOOLGATE_TEST_SECRET' }))).toBe('a|(unset)');
      expect(textOf(await call(set, 'bad_echo', { text: 'a', env: 'GIVEN' }))).toBe('a|yes');
      expect(textOf(await call(set, 'bad_echo', { text: 'a', env: 'FROM_VAR' }))).toBe('a|hunter2');
    } finally {
      delete process.env.TOOLGATE_TEST_SECRET;
    }
  });
});

describe('a worker file with toolsets.mcp, run by runWorker with a scripted model', () => {
  it('offers the gated MCP tools, asks for approval, runs the call and closes the server', async () => {
    const fx = attackFixture();
    const path = join(fx.work, 'worker.yaml');
    writeFileSync(
      path,
      [
        'name: mcp-worker',
        'instructions: Echo things.',
        `sandbox: { read: [${READ.map((dir) => JSON.stringify(dir)).join(', ')}] }`,
        'approval: { tools: { bad_fails: blocked } }',
        'toolsets:',
        '  mcp:',
        `    servers: { bad: { command: node, args: [${JSON.stringify(MISBEHAVING)}] } }`,
        '    tools: [bad.echo, bad.fails, bad.crash]',
        '    approval: { tools: { bad.crash: preApproved } }',
        '',
      ].join('\n'),
    );
    const worker = await loadWorker(path);
    try {
      expect(Object.keys(worker.tools).sort()).toEqual(['bad_crash', 'bad_echo']);
      expect(worker.toolApproval.bad_echo?.decision).toBe('ask');
      expect(worker.toolApproval.bad_fails?.decision).toBe('blocked');
      const model = scriptedModel([{ toolCalls: [{ toolName: 'bad_echo', input: { text: 'hi from the model' } }] }, { text: 'done' }]);
      const asked: string[] = [];
      const result = await runWorker(worker, 'echo something', {
        model,
        onApproval: (request) => {
          asked.push(request.toolName);
          return 'approve';
        },
      });
      expect(offeredToolNames(model)).toEqual(['ask_question', 'bad_crash', 'bad_echo', 'converse', 'task_completion']);
      expect(asked).toEqual(['bad_echo']);
      expect(result.toolCalls).toMatchObject([{ toolName: 'bad_echo', decision: 'approved' }]);
      expect(JSON.stringify(toolResultsSeen(model, 1))).toContain('hi from the model');
    } finally {
      await worker.close();
    }
    // The server is gone: its tools fail at once instead of hanging.
    const error = await failure(
      Promise.resolve(worker.tools.bad_echo!.execute!({ text: 'late' } as never, { toolCallId: 'late', messages: [] })),
    );
    expect(error.code).toBe('TOOL_FAILED');
  });

  it('a worker whose server cannot start fails to load with TOOL_FAILED naming the server and the file', async () => {
    const fx = attackFixture();
    const path = join(fx.work, 'worker.yaml');
    writeFileSync(
      path,
      `name: w\ntoolsets:\n  mcp:\n    servers: { bad: { command: node, args: [${JSON.stringify(MISBEHAVING)}, --hang-at-start] } }\n    startup_timeout: 0.5\n    sandbox: { read: [] }\n`,
    );
    const error = await failure(loadWorker(path));
    expect(error.code).toBe('TOOL_FAILED');
    expect(error.message).toContain(`MCP server 'bad' (${path}: toolsets.mcp) failed to start`);
    expect(error.message).toContain('worker.yaml: toolsets.mcp');
  });
});

describe('mcp toolset: no server process outlives close()', () => {
  /** Pids of processes whose command line is exactly `sleep <seconds>`. */
  function sleepers(seconds: number): number[] {
    const found: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${seconds}\0`) found.push(Number(entry));
      } catch {
        // The process ended while we looked.
      }
    }
    return found;
  }

  async function gone(seconds: number): Promise<number[]> {
    for (let i = 0; i < 50 && sleepers(seconds).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    return sleepers(seconds);
  }

  for (const variant of [{ name: 'a grandchild in a new session', args: [] }, { name: 'a server that ignores SIGTERM', args: ['--ignore-term'] }]) {
    it(`ends ${variant.name}`, async () => {
      const seconds = 3000 + Math.floor(Math.random() * 1000);
      const set = await mcpToolset({
        servers: { bad: { command: 'node', args: [MISBEHAVING, ...variant.args] } },
        approval: { default: 'preApproved' },
        sandbox: { read: READ },
        workDir: attackFixture().work,
      });
      await call(set, 'bad_spawn', { seconds });
      expect(sleepers(seconds).length).toBe(1);
      await set.close();
      expect(await gone(seconds)).toEqual([]);
    });
  }
});
