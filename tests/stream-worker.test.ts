/**
 * `streamWorker` (issue 17): the same run as `runWorker` on `streamText` — the same events plus
 * text deltas, the same approvals (handler, "always", defer), records and abort — and the CLI
 * showing the model's text as it streams.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { shellToolset } from '../ts/src/toolsets/shell.js';
import { resumeWorker, runWorker, streamResumedWorker, streamWorker, type RunEvent } from '../ts/src/worker/index.js';
import { CLI } from './helpers/cli.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { HAS_SCRIPT, inPty } from './helpers/pty.js';
import { scriptedModel } from './helpers/mock-model.js';

const SECRET = 'a-secret-of-at-least-32-bytes-0123456789';
const touch = (name: string) => ({ toolCalls: [{ toolName: 'shell', input: { command: `touch ${name}` } }] });

function worker(work: string) {
  return { name: 'streamer', tools: [shellToolset({ workDir: work, default: 'ask', rules: [{ pattern: 'ls', approval: 'preApproved' }] })] };
}

const script = () => [
  { toolCalls: [{ toolName: 'shell', input: { command: 'ls' } }] },
  touch('a.txt'),
  touch('b.txt'),
  { text: 'all files are made now' },
];
const answer = ({ input }: { input: unknown }) => ((input as { command: string }).command === 'touch a.txt' ? 'approve' : { decision: 'deny' as const, reason: 'no b' });

describe('streamWorker', () => {
  it('yields the events of runWorker plus text deltas, and the same result', async () => {
    const streamedDir = tempDir();
    const plainDir = tempDir();
    const streamed: RunEvent[] = [];
    const run = streamWorker(worker(streamedDir), 'make files', { model: scriptedModel(script()), onApproval: answer });
    for await (const event of run) streamed.push(event);
    const result = await run.result;
    const plainEvents: RunEvent[] = [];
    const plain = await runWorker(worker(plainDir), 'make files', { model: scriptedModel(script()), onApproval: answer, onEvent: (e) => plainEvents.push(e) });

    const deltas = streamed.filter((event) => event.type === 'text-delta');
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((event) => (event.type === 'text-delta' ? event.text : '')).join('')).toBe('all files are made now');
    expect(deltas.every((event) => event.type === 'text-delta' && event.step === 4)).toBe(true);
    const types = (events: RunEvent[]) => events.filter((event) => event.type !== 'text-delta').map((event) => event.type);
    expect(types(streamed)).toEqual(types(plainEvents));
    expect(result.status).toBe(plain.status);
    expect(result.text).toBe('all files are made now');
    expect(result.toolCalls.map((call) => [call.decision, call.decidedBy])).toEqual(plain.toolCalls.map((call) => [call.decision, call.decidedBy]));
    expect(existsSync(join(streamedDir, 'a.txt'))).toBe(true);
    expect(existsSync(join(streamedDir, 'b.txt'))).toBe(false);
    expect(result.messages.length).toBe(plain.messages.length);
  });

  it('runs each approved call once; onEvent sees what the iterator sees', async () => {
    const dir = tempDir();
    const seen: RunEvent[] = [];
    const model = scriptedModel([touch('once.txt'), { text: 'ok' }]);
    const run = streamWorker(worker(dir), 'go', { model, onApproval: () => 'approve', onEvent: (event) => seen.push(event) });
    const iterated: RunEvent[] = [];
    for await (const event of run) iterated.push(event);
    expect(iterated).toEqual(seen);
    const result = await run.result;
    expect(result.toolCalls).toHaveLength(1);
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it('defers like runWorker, and a streamed resume continues it', async () => {
    const dir = tempDir();
    const ledger = tempDir();
    const model = scriptedModel([touch('deferred.txt'), { text: 'resumed fine' }]);
    const first = streamWorker(worker(dir), 'go', { model, onApproval: 'defer', stateSecret: SECRET });
    const stopped = await first.result;
    expect(stopped.status).toBe('approval-required');
    expect(existsSync(join(dir, 'deferred.txt'))).toBe(false);
    const resumed = streamResumedWorker(worker(dir), stopped.state!, { [stopped.pending![0]!.id]: 'approve' }, { model, stateSecret: SECRET, stateLedger: ledger });
    const texts: string[] = [];
    for await (const event of resumed) if (event.type === 'text-delta') texts.push(event.text);
    expect(texts.join('')).toBe('resumed fine');
    expect((await resumed.result).status).toBe('completed');
    expect(existsSync(join(dir, 'deferred.txt'))).toBe(true);
    // the same state resumed with the non-streamed API is a replay
    await expect(resumeWorker(worker(dir), stopped.state!, { [stopped.pending![0]!.id]: 'approve' }, { model, stateSecret: SECRET, stateLedger: ledger })).rejects.toMatchObject({
      code: 'STATE_INVALID',
    });
  });

  it('converse ends a streamed run, and a resumed run, as conversed', async () => {
    const dir = tempDir();
    const reply = { toolCalls: [{ toolName: 'converse', input: { message: 'hello there' } }] };
    const streamed = await streamWorker(worker(dir), 'hi', { model: scriptedModel([reply]) }).result;
    expect(streamed).toMatchObject({ status: 'conversed', text: 'hello there' });

    const model = scriptedModel([touch('then-talk.txt'), reply]);
    const stopped = await runWorker(worker(dir), 'go', { model, onApproval: 'defer', stateSecret: SECRET });
    expect(stopped.status).toBe('approval-required');
    const resumed = await resumeWorker(worker(dir), stopped.state!, { [stopped.pending![0]!.id]: 'approve' }, { model, stateSecret: SECRET, stateLedger: tempDir() });
    expect(resumed).toMatchObject({ status: 'conversed', text: 'hello there' });
    expect(existsSync(join(dir, 'then-talk.txt'))).toBe(true);
  });

  it('refuses an empty task of a worker with allowEmptyInput false, streamed or not, before the model runs', async () => {
    const model = scriptedModel([{ text: 'never' }]);
    const picky = { name: 'picky', tools: [], allowEmptyInput: false };
    await expect(streamWorker(picky, '  ', { model }).result).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('allow_empty_input') });
    await expect(runWorker(picky, '', { model })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(model.doStreamCalls).toHaveLength(0);
    expect(model.doGenerateCalls).toHaveLength(0);
  });

  it('sends a task_completion result that breaks outputSchema back to the model when streamed', async () => {
    const complete = (result: string) => ({ toolCalls: [{ toolName: 'task_completion', input: { result } }] });
    const model = scriptedModel([complete('not json'), complete('{"title": "ok"}')]);
    const schema = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] };
    const result = await streamWorker({ name: 'typed', tools: [], outputSchema: schema }, 'go', { model }).result;
    expect(result).toMatchObject({ status: 'task-completed', text: '{"title": "ok"}' });
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it('aborting stops the stream and kills the running tool process; iteration and result reject', async () => {
    const dir = tempDir();
    const marker = `sleep 43.${process.pid}`;
    const shell = shellToolset({ workDir: dir, default: 'ask', rules: [{ pattern: 'sleep', approval: 'preApproved' }] });
    const controller = new AbortController();
    const run = streamWorker({ name: 'w', tools: [shell] }, 'wait', {
      model: scriptedModel([{ toolCalls: [{ toolName: 'shell', input: { command: marker } }] }, { text: 'never' }]),
      signal: controller.signal,
    });
    const running = () => spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' }).stdout.trim();
    const iterate = (async () => {
      for await (const event of run) if (event.type === 'tool-call') setTimeout(() => controller.abort(new Error('stop now')), 300);
    })();
    await expect(iterate).rejects.toThrow('stop now');
    await expect(run.result).rejects.toThrow('stop now');
    for (let i = 0; i < 40 && running(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running()).toBe('');
  });

  it('an error (a model that fails) reaches the iterator and the result', async () => {
    const run = streamWorker({ name: 'w', tools: [] }, 'go', { model: scriptedModel([]) });
    await expect(run.result).rejects.toThrow(/ran out of turns/);
    await expect((async () => {
      for await (const _ of run) void _;
    })()).rejects.toThrow(/ran out of turns/);
  });
});

describe('toolgate run streams the model text', () => {
  let server: FakeOpenAiServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  function workerFile(dir: string): string {
    const file = join(dir, 'w.yaml');
    writeFileSync(file, 'name: w\ninstructions: talk\n');
    return file;
  }

  it.skipIf(!HAS_SCRIPT)('shows the text as it arrives in a terminal, once', async () => {
    const work = tempDir();
    server = await startFakeOpenAiServer([{ text: 'streamed words arrive one by one' }]);
    const session = inPty([process.execPath, CLI, 'run', workerFile(work), 'talk', '--model', 'openai-compatible:fake', '--base-url', server.baseUrl], {
      cwd: work,
      env: { ...process.env, XDG_CACHE_HOME: join(work, '.cache') },
    });
    expect(await session.exit, session.output()).toBe(0);
    expect(session.output().split('streamed words arrive one by one').length - 1).toBe(1);
    expect(server.requests[0]?.stream).toBe(true);
  });

  it('without a terminal the answer is on stdout once and the streamed text on stderr', async () => {
    const work = tempDir();
    server = await startFakeOpenAiServer([{ text: 'piped answer here' }]);
    const child = spawn(process.execPath, [CLI, 'run', workerFile(work), 'talk', '--model', 'openai-compatible:fake', '--base-url', server.baseUrl], {
      cwd: work,
      env: { ...process.env, XDG_CACHE_HOME: join(work, '.cache') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end();
    expect(await new Promise((resolve) => child.on('close', resolve))).toBe(0);
    expect(stdout).toBe('piped answer here\n');
    expect(stderr).toContain('piped answer here');
  });
});
