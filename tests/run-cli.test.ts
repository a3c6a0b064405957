import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAiServer, toolResultsIn, type ChatRequest, type FakeOpenAiServer, type FakeTurn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';

const ROOT = join(import.meta.dirname, '..');
const QUICKSTART = 'examples/quickstart/worker.yaml';

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The file `npx toolgate` runs: package.json's `bin`. The tests start it with node directly,
 * because npx, run inside the package itself, first installs the package into its own cache
 * (running `prepare`, i.e. a rebuild) — slow, and racy while other tests use `dist`.
 */
const BIN = join(ROOT, (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: { toolgate: string } }).bin.toolgate);

/** `toolgate run …` as a real subprocess from the repository root, against the fake model. */
async function toolgateRun(args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, 'run', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.input ?? '');
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { status, stdout, stderr };
}

function fakeModelArgs(base: FakeOpenAiServer, workDir: string): string[] {
  return ['--model', 'openai-compatible:fake-model', '--base-url', base.baseUrl, '--work-dir', workDir];
}

const call = (name: string, args: unknown): FakeTurn => ({ toolCalls: [{ name, arguments: args }] });
const lastToolResult = (request: ChatRequest) => Object.values(toolResultsIn(request)).at(-1) ?? '';

describe('toolgate run (end to end, fake OpenAI-compatible model)', () => {
  it('runs the quickstart worker: custom, executable, file and shell tools, then task_completion', async () => {
    const work = tempDir();
    server = await startFakeOpenAiServer([
      call('calculateFibonacci', { n: 30 }),
      call('custom_tool_word_stats', { text: 'the cat saw the other cat', top: 2 }),
      call('write_file', { path: 'notes/fib.txt', content: 'F(30) = 832040\n' }),
      call('shell', { command: 'ls notes' }),
      (request) => call('task_completion', { result: `saved; ls says: ${lastToolResult(request).trim()}` }),
    ]);
    const run = await toolgateRun([QUICKSTART, 'Compute F(30) and save it', ...fakeModelArgs(server, work), '--yes'], {
      env: { XDG_CACHE_HOME: join(work, '.cache') },
    });
    expect(run.stderr).not.toContain('Error');
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(join(work, 'notes/fib.txt'), 'utf8')).toBe('F(30) = 832040\n');
    expect(run.stdout).toContain('saved; ls says:');
    expect(run.stdout).toContain('fib.txt');

    const [, second, third] = server.requests;
    expect(lastToolResult(second!)).toContain('832040');
    expect(JSON.parse(lastToolResult(third!))).toMatchObject({ result: { words: 6, top_words: [{ word: 'the', count: 2 }, { word: 'cat', count: 2 }] } });
    // the model was offered the worker's tools and the loop-breaking ones, nothing blocked
    const offered = (server.requests[0]!.tools ?? []).map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['calculateFibonacci', 'custom_tool_word_stats', 'write_file', 'shell', 'task_completion']));
    // progress went to stderr
    expect(run.stderr).toContain('→ calculateFibonacci');
    expect(run.stderr).toMatch(/✓ write_file \d+ ms \[approved, flag --yes\]/);
    expect(run.stderr).toMatch(/✓ calculateFibonacci \d+ ms \[preApproved\]/);
  });

  it('denies asks without a terminal and without --yes, and says how to change that', async () => {
    const work = tempDir();
    server = await startFakeOpenAiServer([
      call('write_file', { path: 'notes/x.txt', content: 'x' }),
      (request) => ({ text: `the tool said: ${lastToolResult(request)}` }),
    ]);
    const run = await toolgateRun([QUICKSTART, 'Write x', ...fakeModelArgs(server, work)], {
      env: { XDG_CACHE_HOME: join(work, '.cache') },
    });
    expect(run.status, run.stderr).toBe(0);
    expect(existsSync(join(work, 'notes/x.txt'))).toBe(false);
    expect(run.stderr).toContain('--yes');
    expect(run.stdout).toMatch(/denied/i);
  });

  it('refuses a blocked shell command without asking, and --deny denies every ask', async () => {
    const work = tempDir();
    server = await startFakeOpenAiServer([
      call('shell', { command: 'rm -rf notes' }),
      call('write_file', { path: 'y.txt', content: 'y' }),
      (request) => ({ text: `last: ${lastToolResult(request)}` }),
    ]);
    const run = await toolgateRun([QUICKSTART, 'Clean up', ...fakeModelArgs(server, work), '--deny', '--json'], {
      env: { XDG_CACHE_HOME: join(work, '.cache') },
    });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; toolCalls: { toolName: string; decision: string; errorCode?: string }[] };
    expect(result.status).toBe('completed');
    expect(result.toolCalls).toEqual([
      expect.objectContaining({ toolName: 'shell', decision: 'blocked', decidedBy: 'rule', errorCode: 'COMMAND_BLOCKED' }),
      // A flag is not a person: the denial is recorded as decided by --deny.
      expect.objectContaining({ toolName: 'write_file', decision: 'denied', decidedBy: 'flag', flag: '--deny' }),
    ]);
    expect(existsSync(join(work, 'y.txt'))).toBe(false);
  });

  it('asks in a real terminal: the prompt shows the tool and its input', async () => {
    const work = tempDir();
    server = await startFakeOpenAiServer([
      call('write_file', { path: 'approved.txt', content: 'yes' }),
      { text: 'written' },
    ]);
    const command = [
      process.execPath,
      BIN,
      'run',
      QUICKSTART,
      'write it',
      ...fakeModelArgs(server, work),
    ]
      .map((word) => `'${word.replace(/'/g, "'\\''")}'`)
      .join(' ');
    // `script` gives the CLI a pseudo-terminal; the approval answer arrives on it.
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, XDG_CACHE_HOME: join(work, '.cache') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let answered = false;
    // The terminal may close before a late write lands; that is not the test's subject.
    child.stdin.on('error', () => {});
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (!answered && output.includes('[w]ider always  [s]ave >')) {
        answered = true;
        child.stdin.write('a');
      }
    });
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(output).toContain('? approve write_file');
    expect(output).toContain('    path: approved.txt');
    expect(output).toContain('[s]ave writes to');
    expect(status).toBe(0);
    expect(readFileSync(join(work, 'approved.txt'), 'utf8')).toBe('yes');
    expect(output).toContain('written');
  });

  it('Ctrl-C stops the run and kills the running tool process', async () => {
    const work = tempDir();
    const marker = `sleep 37.${process.pid}`;
    server = await startFakeOpenAiServer([call('shell', { command: marker }), { text: 'never' }]);
    const child = spawn(process.execPath, [BIN, 'run', QUICKSTART, 'wait', ...fakeModelArgs(server, work), '--yes'], {
      cwd: ROOT,
      env: { ...process.env, XDG_CACHE_HOME: join(work, '.cache') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const running = () => spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' }).stdout.trim();
    for (let i = 0; i < 100 && !running(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running()).not.toBe('');
    const started = Date.now();
    child.kill('SIGINT');
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status, stderr).toBe(130);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(stderr).toContain('interrupted');
    expect(running()).toBe('');
  });

  it('says which variable to set when the API key is missing', () => {
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    const run = spawnSync(process.execPath, [BIN, 'run', QUICKSTART, 'hi', '--model', 'openai:gpt-4o-mini'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('OPENAI_API_KEY');
  });

  it('says how to choose a model when there is none', () => {
    const work = tempDir();
    const env = { ...process.env };
    delete env.TOOLGATE_MODEL;
    const worker = join(work, 'w.yaml');
    spawnSync('sh', ['-c', `printf 'name: w\\n' > '${worker}'`]);
    const run = spawnSync(process.execPath, [BIN, 'run', worker, 'hi'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('--model');
    expect(run.stderr).toContain('TOOLGATE_MODEL');
  });
});
