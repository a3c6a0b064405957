import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, stepCountIs, type ToolExecutionOptions } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import {
  approvalOf,
  createCustomTool,
  ExecutableToolRegistry,
  executableTools,
  toToolSet,
  ToolgateError,
  type ExecutableToolDiagnostic,
  type NamedTool,
} from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { sleepMarker, waitForMarker, waitUntilGone } from './helpers/processes.js';

// Nothing in this file may touch the real ~/.cache: defaults point into a temp dir.
process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'toolgate-xdg-'));

const ANY = '{"type":"object"}';

/** A protocol tool in sh: `description` appends to `counter` (when given), `run` is `body`. */
function protocolTool(dir: string, name: string, body: string, schema = ANY, counter?: string): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh
if [ "$1" = description ]; then
  ${counter ? `echo x >> '${counter}'` : ':'}
  cat <<'EOF'
{"name": "${name}", "description": "The ${name} tool", "input_schema": ${schema}}
EOF
  exit 0
fi
${body}
`,
  );
  chmodSync(path, 0o755);
  return path;
}

interface Fixture {
  root: string;
  tools: string;
  work: string;
  cacheDir: string;
}

function fixture(): Fixture {
  const root = tempDir();
  const tools = join(root, 'tools');
  const work = join(root, 'work');
  mkdirSync(tools);
  mkdirSync(work);
  return { root, tools, work, cacheDir: join(root, 'cache') };
}

async function load(f: Fixture, extra: Parameters<typeof executableTools>[0] = {}): Promise<NamedTool[]> {
  return executableTools({ dirs: [f.tools], workDir: f.work, cacheDir: f.cacheDir, onDiagnostics: () => {}, ...extra });
}

function byName(tools: NamedTool[], name: string): NamedTool {
  const found = tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return found;
}

const callOptions = (signal?: AbortSignal): ToolExecutionOptions => ({
  toolCallId: 'call-1',
  messages: [],
  ...(signal ? { abortSignal: signal } : {}),
});

async function execute(t: NamedTool, input: unknown, signal?: AbortSignal): Promise<unknown> {
  return (t.execute as (input: unknown, options: ToolExecutionOptions) => Promise<unknown>)(input, callOptions(signal));
}

async function rejection(promise: Promise<unknown>): Promise<ToolgateError> {
  const error = await promise.then(
    () => new Error('expected a rejection'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ToolgateError);
  return error as ToolgateError;
}

describe('executableTools', () => {
  it('turns each discovered tool into a NamedTool custom_tool_<name>, gated with ask', async () => {
    const f = fixture();
    const schema = '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}';
    protocolTool(f.tools, 'weather', 'cat', schema);
    const dir = join(f.tools, 'greet');
    mkdirSync(dir);
    writeFileSync(join(dir, 'tool.yaml'), 'name: greet\ndescription: Greets\nentrypoint: run.sh\nparameters:\n  - { name: who, type: string, required: true }\n');
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\necho "hello $1"\n');
    chmodSync(join(dir, 'run.sh'), 0o755);

    const tools = await load(f);
    expect(tools.map((t) => t.name)).toEqual(['custom_tool_greet', 'custom_tool_weather']);
    const weather = byName(tools, 'custom_tool_weather');
    expect(weather.description).toBe('The weather tool');
    expect(approvalOf(weather)).toEqual({ decision: 'ask', dynamic: false });
    expect(weather.needsApproval).toBe(true);
    expect((weather.inputSchema as { jsonSchema: unknown }).jsonSchema).toEqual(JSON.parse(schema));

    expect(await execute(weather, { city: 'Oslo' })).toMatchObject({ result: { city: 'Oslo' }, truncated: false });
    const greet = await execute(byName(tools, 'custom_tool_greet'), { who: 'Ada' });
    expect(greet).toMatchObject({ result: 'hello --who=Ada' });
    expect((greet as { durationMs: number }).durationMs).toBeGreaterThan(0);
  });

  it('applies the approval config by bare or prefixed name, strictest first', async () => {
    const f = fixture();
    const marker = join(f.work, 'ran');
    for (const name of ['free', 'locked', 'asked', 'default_one']) protocolTool(f.tools, name, `touch '${marker}'; echo ok`);
    const tools = await load(f, {
      approval: {
        default: 'preApproved',
        tools: { free: 'preApproved', locked: 'preApproved', custom_tool_locked: 'blocked', custom_tool_asked: 'ask' },
      },
    });
    expect(approvalOf(byName(tools, 'custom_tool_free'))?.decision).toBe('preApproved');
    expect(approvalOf(byName(tools, 'custom_tool_default_one'))?.decision).toBe('preApproved');
    expect(approvalOf(byName(tools, 'custom_tool_asked'))?.decision).toBe('ask');
    const locked = byName(tools, 'custom_tool_locked');
    expect(approvalOf(locked)?.decision).toBe('blocked');
    const error = await rejection(Promise.resolve().then(() => execute(locked, {})));
    expect(error.code).toBe('TOOL_BLOCKED');
    expect(existsSync(marker)).toBe(false);

    await expect(load(f, { approval: { default: 'sometimes' as never } })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('checks the input against the schema before the tool runs', async () => {
    const f = fixture();
    const marker = join(f.work, 'ran');
    const schema = '{"type":"object","properties":{"days":{"type":"integer","maximum":7}},"required":["days"],"additionalProperties":false}';
    protocolTool(f.tools, 'forecast', `touch '${marker}'; echo ok`, schema);
    const forecast = byName(await load(f), 'custom_tool_forecast');
    const error = await rejection(execute(forecast, { days: 30, extra: 1 }));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('at /days:');
    expect(error.message).toContain('extra');
    expect(existsSync(marker)).toBe(false);
  });

  it('never passes the parent environment; only the child-environment policy, a private HOME/TMPDIR and the passthrough list', async () => {
    const f = fixture();
    protocolTool(f.tools, 'env_dump', 'env');
    process.env.TOOLGATE_TEST_SECRET = 'hunter2';
    process.env.TOOLGATE_TEST_SHARED = 'shared-value';
    try {
      const tools = await load(f, { envPassthrough: ['TOOLGATE_TEST_SHARED'] });
      const output = (await execute(byName(tools, 'custom_tool_env_dump'), {})) as { result: string };
      expect(output.result).not.toContain('hunter2');
      expect(output.result).toContain('TOOLGATE_TEST_SHARED=shared-value');
      const names = output.result
        .split('\n')
        .map((line) => line.split('=')[0])
        .filter((name): name is string => !!name && !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(name));
      const policy = ['PATH', 'LANG', 'TZ', 'USER', 'LOGNAME', 'HOME', 'TMPDIR', 'TOOLGATE_TEST_SHARED'];
      for (const name of names) expect(policy.includes(name) || /^(LC_|XDG_)/.test(name) || /_proxy$/i.test(name), `unexpected ${name}`).toBe(true);
      // HOME is a fresh directory of toolgate's, not the user's.
      expect(output.result).not.toContain(`HOME=${process.env.HOME}\n`);
    } finally {
      delete process.env.TOOLGATE_TEST_SECRET;
      delete process.env.TOOLGATE_TEST_SHARED;
    }
  });

  it('runs a docstring tool in the sandbox: it reads its own script, nothing beside it or outside the work directory', async () => {
    const f = fixture();
    const secret = join(f.root, 'secret.txt');
    writeFileSync(secret, 'top secret');
    writeFileSync(join(f.tools, 'other.py'), '"""\nTool: other\nDescription: Another tool, top secret.\n"""\n');
    writeFileSync(
      join(f.tools, 'peek.py'),
      [
        '"""',
        'Tool: peek',
        'Description: Tries to read a file.',
        'Input:',
        '  path (string): The file',
        '"""',
        'import json, sys',
        'args = json.load(sys.stdin)',
        'try:',
        '    print(json.dumps({"read": open(args["path"]).read()}))',
        'except OSError as err:',
        '    print(json.dumps({"refused": err.strerror}))',
        '',
      ].join('\n'),
    );
    writeFileSync(join(f.work, 'inside.txt'), 'inside');
    const peek = byName(await load(f), 'custom_tool_peek');
    expect(peek.description).toBe('Tries to read a file.');
    expect(approvalOf(peek)?.decision).toBe('ask');
    expect(await execute(peek, { path: 'inside.txt' })).toMatchObject({ result: { read: 'inside' } });
    expect(await execute(peek, { path: join(f.tools, 'peek.py') })).toMatchObject({ result: { read: expect.stringContaining('Tool: peek') } });
    for (const path of [secret, join(f.tools, 'other.py'), '../secret.txt', `${f.work}/../tools/other.py`, `/proc/self/root${secret}`]) {
      const output = (await execute(peek, { path })) as { result: Record<string, string> };
      expect(output.result.read, path).toBeUndefined();
      expect(JSON.stringify(output), path).not.toContain('top secret');
    }
    expect((await rejection(execute(peek, { path: 1 }))).code).toBe('INVALID_INPUT');
  });

  it('runs tools in workDir', async () => {
    const f = fixture();
    protocolTool(f.tools, 'where', 'pwd');
    const output = await execute(byName(await load(f), 'custom_tool_where'), {});
    expect(output).toMatchObject({ result: f.work });
  });

  it('kills the whole process group when the AbortSignal fires', async () => {
    const f = fixture();
    const marker = sleepMarker();
    protocolTool(f.tools, 'forever', `sleep ${marker} &\nwait`);
    const forever = byName(await load(f), 'custom_tool_forever');
    const controller = new AbortController();
    const running = execute(forever, {}, controller.signal);
    const [pid] = await waitForMarker(marker);
    const started = Date.now();
    const reason = new Error('user pressed stop');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await waitUntilGone(pid!)).toBe(true);
  });

  it('times out, killing a grandchild that holds the pipes', async () => {
    const f = fixture();
    const marker = sleepMarker();
    protocolTool(f.tools, 'slow', `sleep ${marker} &\nwait`);
    const slow = byName(await load(f, { timeoutMs: 30_000, toolTimeoutsMs: { slow: 600 } }), 'custom_tool_slow');
    const started = Date.now();
    const failing = rejection(execute(slow, {}));
    const [pid] = await waitForMarker(marker);
    const error = await failing;
    expect(error.code).toBe('TIMEOUT');
    expect(Date.now() - started).toBeLessThan(1600 + 1000);
    expect(await waitUntilGone(pid!)).toBe(true);
  });

  it('reports failures: exit 1 with stderr, {"error": ...}, and caps a flood with a marker', async () => {
    const f = fixture();
    protocolTool(f.tools, 'exits', "echo 'quota exceeded' >&2; exit 1");
    protocolTool(f.tools, 'refuses', 'echo \'{"error": "no such city"}\'');
    protocolTool(f.tools, 'floods', "yes 'flood' | head -c 20000000");
    const tools = await load(f, { maxOutputBytes: 10_000 });
    const exits = await rejection(execute(byName(tools, 'custom_tool_exits'), {}));
    expect(exits.code).toBe('TOOL_FAILED');
    expect(exits.message).toContain('exit code 1');
    expect(exits.message).toContain('quota exceeded');
    const refuses = await rejection(execute(byName(tools, 'custom_tool_refuses'), {}));
    expect(refuses.code).toBe('TOOL_FAILED');
    expect(refuses.message).toContain('no such city');
    const flood = (await execute(byName(tools, 'custom_tool_floods'), {})) as { result: string; truncated: boolean };
    expect(flood.truncated).toBe(true);
    expect(flood.result.length).toBeLessThan(10_400);
    expect(flood.result).toMatch(/\[output truncated: tool 'floods' wrote more than 10000 bytes/);
  });

  it('hands every problem to onDiagnostics, and warns by default', async () => {
    const f = fixture();
    protocolTool(f.tools, 'good', 'cat');
    writeFileSync(join(f.tools, 'notes.txt'), 'not a tool');
    writeFileSync(join(f.tools, 'bad'), '#!/bin/sh\necho nope\n');
    chmodSync(join(f.tools, 'bad'), 0o755);
    symlinkSync(f.work, join(f.tools, 'dir_link'));
    let seen: readonly ExecutableToolDiagnostic[] = [];
    const tools = await load(f, { onDiagnostics: (diagnostics) => (seen = diagnostics) });
    expect(tools.map((t) => t.name)).toEqual(['custom_tool_good']);
    const reasons = Object.fromEntries(seen.map((d) => [d.path, d.reason]));
    expect(reasons[join(f.tools, 'notes.txt')]).toContain('not executable');
    expect(reasons[join(f.tools, 'bad')]).toContain('did not print valid JSON');
    expect(reasons[join(f.tools, 'dir_link')]).toContain('symlink to a directory');
    expect(seen.every((d) => d.kind === 'invalid')).toBe(true);

    const warnings: string[] = [];
    const original = console.warn;
    console.warn = (message: string) => warnings.push(message);
    try {
      await executableTools({ dirs: [f.tools], workDir: f.work, cacheDir: f.cacheDir });
    } finally {
      console.warn = original;
    }
    expect(warnings.some((w) => w.includes('notes.txt') && w.includes('not executable'))).toBe(true);
  });

  it('never spawns an unchanged tool again for discovery (cache keyed by path, size, mtime, inode)', async () => {
    const f = fixture();
    const counter = join(f.root, 'counter');
    for (const name of ['a', 'b']) protocolTool(f.tools, name, 'cat', ANY, counter);
    const spawns = () => readFileSync(counter, 'utf8').split('\n').filter(Boolean).length;
    // The counter lives outside the work directory, where a sandboxed description cannot write.
    const unsandboxed = { sandbox: false } as const;
    await load(f, unsandboxed);
    expect(spawns()).toBe(2);
    await load(f, unsandboxed);
    await load(f, unsandboxed);
    expect(spawns()).toBe(2);
    protocolTool(f.tools, 'b', 'echo changed', ANY, counter);
    await load(f, unsandboxed);
    expect(spawns()).toBe(3);
    // The default location is $XDG_CACHE_HOME/toolgate.
    const defaults = fixture();
    protocolTool(defaults.tools, 'c', 'cat');
    await executableTools({ dirs: [defaults.tools], workDir: defaults.work });
    expect(existsSync(join(process.env.XDG_CACHE_HOME as string, 'toolgate', 'executable-tools.json'))).toBe(true);
  });

  it('relative dirs start at workDir; a missing configured directory is reported', async () => {
    const f = fixture();
    mkdirSync(join(f.work, 'my-tools'));
    protocolTool(join(f.work, 'my-tools'), 'local', 'cat');
    let seen: readonly ExecutableToolDiagnostic[] = [];
    const tools = await executableTools({
      dirs: ['my-tools', 'missing'],
      workDir: f.work,
      cacheDir: f.cacheDir,
      onDiagnostics: (d) => (seen = d),
    });
    expect(tools.map((t) => t.name)).toEqual(['custom_tool_local']);
    expect(seen).toEqual([expect.objectContaining({ kind: 'missing_directory', path: join(f.work, 'missing') })]);
  });

  it('runs inside an AI SDK agent loop', async () => {
    const f = fixture();
    protocolTool(f.tools, 'double', 'printf \'{"input": \'; cat; printf \'}\'', '{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}');
    const tools = await load(f, { approval: { tools: { double: 'preApproved' } } });
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'custom_tool_double', input: '{"n": 21}' }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
          warnings: [],
        },
        {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
          warnings: [],
        },
      ],
    });
    const result = await generateText({ model, tools: toToolSet(tools), prompt: 'double 21', stopWhen: stepCountIs(3) });
    expect(result.text).toBe('done');
    const toolResult = result.steps[0]?.toolResults[0];
    expect(toolResult?.output).toMatchObject({ result: { input: { n: 21 } } });
    expect(JSON.stringify(model.doGenerateCalls[0]?.tools)).toContain('custom_tool_double');
  });
});

describe('ExecutableToolRegistry', () => {
  it('refreshes with stat calls only when nothing changed', async () => {
    const f = fixture();
    const counter = join(f.root, 'counter');
    protocolTool(f.tools, 'one', 'cat', ANY, counter);
    const registry = new ExecutableToolRegistry({ dirs: [f.tools], workDir: f.work, cacheDir: f.cacheDir });
    const first = await registry.refresh();
    expect(first.stats.spawned).toBe(1);
    const second = await registry.refresh();
    expect(second.stats).toMatchObject({ spawned: 0, fromMemory: 1 });
    expect(registry.tools().map((t) => t.name)).toEqual(['one']);
    expect((await registry.run('one', { x: 1 })).result).toEqual({ x: 1 });
    await expect(registry.run('nope', {})).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND' });
    expect((await registry.refresh({ force: true })).stats.spawned).toBe(1);
  });
});

describe('createCustomTool', () => {
  const pythonAdd = {
    name: 'add',
    description: 'Adds two numbers',
    language: 'python' as const,
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    code: 'def run(args):\n    return {"sum": args["a"] + args["b"]}\n',
  };

  it('is a NamedTool gated with ask whose tool the next discovery finds', async () => {
    const f = fixture();
    const create = createCustomTool({ workDir: f.work });
    expect(create.name).toBe('create_custom_tool');
    expect(approvalOf(create)?.decision).toBe('ask');
    const created = await execute(create, pythonAdd);
    expect(created).toMatchObject({ created: join('toolgate-tools', 'add.py'), toolName: 'custom_tool_add', replaced: false });

    const tools = await executableTools({ workDir: f.work, cacheDir: f.cacheDir, onDiagnostics: () => {} });
    const add = byName(tools, 'custom_tool_add');
    expect(await execute(add, { a: 2, b: 40 })).toMatchObject({ result: { sum: 42 } });
  });

  it('keeps nothing when the new tool does not work, and tells the model why', async () => {
    const f = fixture();
    const create = createCustomTool({ workDir: f.work, approval: { default: 'preApproved' } });
    expect(approvalOf(create)?.decision).toBe('preApproved');
    const error = await rejection(execute(create, { ...pythonAdd, code: 'def run(args)\n    return 1\n' }));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('SyntaxError');
    expect(readdirSync(join(f.work, 'toolgate-tools'))).toEqual([]);
  });

  it('refuses to overwrite unless asked, and restores the old version when a replacement is broken', async () => {
    const f = fixture();
    const create = createCustomTool({ workDir: f.work });
    await execute(create, pythonAdd);
    const path = join(f.work, 'toolgate-tools', 'add.py');
    const before = readFileSync(path, 'utf8');
    expect((await rejection(execute(create, pythonAdd))).message).toContain('already exists');
    await rejection(execute(create, { ...pythonAdd, code: 'x = (', replace: true }));
    expect(readFileSync(path, 'utf8')).toBe(before);
    expect(await execute(create, { ...pythonAdd, code: 'def run(args):\n    return 0\n', replace: true })).toMatchObject({ replaced: true });
  });

  it('refuses a project tool directory that is a symlink out of the work directory', async () => {
    const f = fixture();
    const outside = join(f.root, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, join(f.work, 'toolgate-tools'));
    const error = await rejection(execute(createCustomTool({ workDir: f.work }), pythonAdd));
    expect(error.code).toBe('PATH_OUTSIDE_ROOT');
    expect(readdirSync(outside)).toEqual([]);
  });

  it('refuses names that are not tool names', async () => {
    const f = fixture();
    const error = await rejection(execute(createCustomTool({ workDir: f.work }), { ...pythonAdd, name: '../../evil' }));
    expect(error.code).toBe('INVALID_INPUT');
    expect(existsSync(join(f.root, 'evil.py'))).toBe(false);
  });
});
