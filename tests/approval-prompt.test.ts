/**
 * The approval prompt of `toolgate run` as a person meets it (issue 13, items 9–12): the real CLI
 * on a real pseudo-terminal (`script`), a fake OpenAI-compatible model on 127.0.0.1. Single
 * keys; the reason on its own line; what "always" covers shown before it is picked; Ctrl-C at
 * the prompt denies, stops the run and exits 130 with a message on the first press; end of
 * input denies; the "no terminal" note only when an approval is actually asked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI } from './helpers/cli.js';
import { startFakeOpenAiServer, toolResultsIn, type FakeOpenAiServer, type FakeTurn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { HAS_SCRIPT, inPty } from './helpers/pty.js';

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PROMPT = '[a]pprove  [d]eny  a[l]ways  [w]ider always  [s]ave >';
const shell = (command: string): FakeTurn => ({ toolCalls: [{ name: 'shell', arguments: { command } }] });

/** A worker whose shell asks for everything but `sleep`, working in a fresh directory. */
function workerIn(work: string): string {
  const file = join(work, 'worker.yaml');
  writeFileSync(
    file,
    'name: prompt-test\ninstructions: test\ntoolsets:\n  shell:\n    default: ask\n    rules:\n      - { pattern: sleep, approval: preApproved }\n',
  );
  return file;
}

async function startRun(turns: FakeTurn[], extra: string[] = []) {
  const work = tempDir();
  server = await startFakeOpenAiServer([...turns, { text: 'the end' }]);
  const argv = [process.execPath, CLI, 'run', workerIn(work), 'do it', '--model', 'openai-compatible:fake', '--base-url', server.baseUrl, ...extra];
  return { work, session: inPty(argv, { cwd: work, env: { ...process.env, XDG_CACHE_HOME: join(work, '.cache') } }) };
}

describe.skipIf(!HAS_SCRIPT)('the approval prompt on a terminal', () => {
  it('approves with one key, no Enter, and shows what always would cover', async () => {
    const { work, session } = await startRun([shell('touch a.txt')]);
    await session.waitFor(PROMPT);
    expect(session.output()).toContain('a[l]ways covers exactly this command: touch a.txt');
    session.type('a');
    expect(await session.exit, session.output()).toBe(0);
    expect(existsSync(join(work, 'a.txt'))).toBe(true);
    expect(session.output()).toMatch(/✓ shell \d+ ms \[approved\]/);
  });

  it('d then the reason on its own line: the model reads the reason (the README example)', async () => {
    const { work, session } = await startRun([shell('touch notes.txt')]);
    await session.waitFor(PROMPT);
    session.type('d');
    await session.waitFor('reason for the model');
    session.type('use notes/fibonacci.txt instead\r');
    expect(await session.exit, session.output()).toBe(0);
    expect(session.output()).not.toContain('is not an answer');
    expect(existsSync(join(work, 'notes.txt'))).toBe(false);
    const seen = Object.values(toolResultsIn(server!.requests[1]!)).join('\n');
    expect(seen).toContain('use notes/fibonacci.txt instead');
    expect(session.output()).toMatch(/✗ shell \[denied, user\]: use notes\/fibonacci.txt instead/);
  });

  it('always covers the same command only: a different one is asked again', async () => {
    const { work, session } = await startRun([shell('touch same.txt'), shell('touch same.txt'), shell('touch other.txt')]);
    let at = await session.waitFor(PROMPT);
    session.type('l');
    at = await session.waitFor('a[l]ways covers exactly this command: touch other.txt', at);
    await session.waitFor(PROMPT, at);
    session.type('d');
    await session.waitFor('reason for the model', at);
    session.type('\r');
    expect(await session.exit, session.output()).toBe(0);
    expect(session.output().split('? approve shell').length - 1).toBe(2);
    expect(existsSync(join(work, 'same.txt'))).toBe(true);
    expect(existsSync(join(work, 'other.txt'))).toBe(false);
    expect(session.output()).toMatch(/✓ shell \d+ ms \[always\]/);
  });

  it('[w]ider: a prefix typed, shown in full and confirmed, covers later commands starting with it', async () => {
    const { work, session } = await startRun([shell('mkdir -p d1/a'), shell('mkdir -p d2'), shell('mkdir d3')]);
    let at = await session.waitFor(PROMPT);
    session.type('w');
    at = await session.waitFor('starting with these words', at);
    session.type('mkdir -p\r');
    at = await session.waitFor('confirm [y/N] >', at);
    expect(session.output()).toContain('every shell command starting with mkdir -p (word by word)');
    session.type('y');
    // mkdir -p d2 runs without a question; mkdir d3 does not start with `mkdir -p` and is asked
    at = await session.waitFor('? approve shell', at);
    await session.waitFor(PROMPT, at);
    expect(session.output().slice(at)).toContain('command: mkdir d3');
    session.type('d');
    await session.waitFor('reason for the model', at);
    session.type('\r');
    expect(await session.exit, session.output()).toBe(0);
    expect(existsSync(join(work, 'd1/a'))).toBe(true);
    expect(existsSync(join(work, 'd2'))).toBe(true);
    expect(existsSync(join(work, 'd3'))).toBe(false);
  });

  for (const [where, keys] of [
    ['at the key', ['\u0003']],
    ['at the reason', ['d', '\u0003']],
    ['while typing a wider prefix', ['w', 'tou\u0003']],
  ] as const) {
    it(`Ctrl-C ${where} denies, stops the run and exits 130 with a message on the first press`, async () => {
      const { work, session } = await startRun([shell('touch never.txt')]);
      await session.waitFor(PROMPT);
      for (const key of keys) {
        session.type(key);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const started = Date.now();
      expect(await session.exit, session.output()).toBe(130);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(session.output()).toContain('interrupted (Ctrl-C) at the approval prompt');
      expect(existsSync(join(work, 'never.txt'))).toBe(false);
      // the model was not asked again: the run stopped
      expect(server!.requests).toHaveLength(1);
    });
  }

  it('Ctrl-C while a tool runs stops the run and kills the tool process (exit 130)', async () => {
    const marker = `sleep 41.${process.pid}`;
    const { session } = await startRun([shell(marker)]);
    const running = () => spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' }).stdout.trim();
    for (let i = 0; i < 200 && !running(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running()).not.toBe('');
    session.type('\u0003');
    expect(await session.exit, session.output()).toBe(130);
    expect(session.output()).toContain('interrupted (Ctrl-C)');
    for (let i = 0; i < 40 && running(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running()).toBe('');
  });

  it('Ctrl-D (end of input) at the prompt denies and the run goes on', async () => {
    const { work, session } = await startRun([shell('touch eof.txt')]);
    await session.waitFor(PROMPT);
    session.type('\u0004');
    expect(await session.exit, session.output()).toBe(0);
    expect(session.output()).toContain('no answer (end of input): denied');
    expect(existsSync(join(work, 'eof.txt'))).toBe(false);
    expect(session.output()).toContain('the end');
  });
});

describe('the "no terminal" note', () => {
  async function runPiped(turns: FakeTurn[], env: NodeJS.ProcessEnv = {}) {
    const work = tempDir();
    server = await startFakeOpenAiServer([...turns, { text: 'the end' }]);
    const child = spawn(process.execPath, [CLI, 'run', workerIn(work), 'do it', '--model', 'openai-compatible:fake', '--base-url', server.baseUrl], {
      cwd: work,
      env: { ...process.env, XDG_CACHE_HOME: join(work, '.cache'), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end();
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { status, stderr, work };
  }

  it('is not printed when nothing asks', async () => {
    const run = await runPiped([shell('sleep 0')]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).not.toContain('no terminal');
  });

  it('does not precede unrelated errors such as a missing API key', () => {
    const work = tempDir();
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    const run = spawnSync(process.execPath, [CLI, 'run', workerIn(work), 'hi', '--model', 'openai:gpt-4o-mini'], { cwd: work, env, encoding: 'utf8', input: '' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('OPENAI_API_KEY');
    expect(run.stderr).not.toContain('no terminal');
  });

  it('is printed once, when the first approval is asked and denied', async () => {
    const run = await runPiped([shell('touch a.txt'), shell('touch b.txt')]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr.split('no terminal to ask for approvals').length - 1).toBe(1);
    expect(run.stderr).toContain('--defer-approvals');
    expect(existsSync(join(run.work, 'a.txt'))).toBe(false);
    expect(readFileSync(join(run.work, 'worker.yaml'), 'utf8')).toContain('prompt-test');
  });
});
