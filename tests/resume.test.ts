/**
 * Resumable approvals (issue 17): `runWorker(…, { onApproval: 'defer', stateSecret })` stops with
 * the pending requests and a signed state; `resumeWorker` continues it — in this process or in
 * another — and every tool executes exactly once. Tampered, replayed or foreign states and
 * answers are `STATE_INVALID`, and nothing runs. Real worker files, real shell tools and files.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tool } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { named } from '../ts/src/approval/named-tool.js';
import { wrapWithDefaultApproval } from '../ts/src/approval/approval.js';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { resumeWorker, runWorker, type WorkerRunResult } from '../ts/src/worker/index.js';
import { startFakeOpenAiServer, toolResultsIn, type FakeOpenAiServer } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel, toolResultsSeen } from './helpers/mock-model.js';

const SECRET = 'a-secret-of-at-least-32-bytes-0123456789';
const ROOT = join(import.meta.dirname, '..');

function workerFile(dir: string, extra = ''): string {
  const file = join(dir, 'worker.yaml');
  writeFileSync(file, `name: resumable\ninstructions: test${extra}\ntoolsets:\n  shell:\n    default: ask\n    rules:\n      - { pattern: ls, approval: preApproved }\n`);
  return file;
}

const touch = (...names: string[]) => ({ toolCalls: names.map((name) => ({ toolName: 'shell', input: { command: `touch ${name}` } })) });
const made = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.txt')).sort();

/** A deferred run of the worker in `dir` that stops at `touch …` requests. */
async function deferred(dir: string, turns: Parameters<typeof scriptedModel>[0], ledger: string) {
  const model = scriptedModel(turns);
  const file = join(dir, 'worker.yaml');
  const worker = await loadWorker(existsSync(file) ? file : workerFile(dir));
  const first = await runWorker(worker, 'make files', { model, onApproval: 'defer', stateSecret: SECRET });
  const resume = (state: string, answers: Record<string, unknown>, extra: object = {}) =>
    resumeWorker(worker, state, answers as never, { model, stateSecret: SECRET, stateLedger: ledger, ...extra });
  return { model, worker, first, resume };
}

function changeBody(state: string, change: (body: Record<string, any>) => void): string {
  const envelope = JSON.parse(state) as { body: string };
  const body = JSON.parse(envelope.body) as Record<string, any>;
  change(body);
  return JSON.stringify({ ...envelope, body: JSON.stringify(body) });
}

describe('deferred approvals', () => {
  it('stops at the first requests, then runs each approved call exactly once on resume', async () => {
    const dir = tempDir();
    const ledger = tempDir();
    const { first, resume, model } = await deferred(dir, [touch('a.txt', 'b.txt'), { text: 'done' }], ledger);
    expect(first.status).toBe('approval-required');
    expect(typeof first.state).toBe('string');
    expect(first.pending).toHaveLength(2);
    expect(first.pending?.[0]).toMatchObject({ toolName: 'shell', input: { command: 'touch a.txt' } });
    expect(first.pending?.[0]?.scope.description).toContain('exactly this command: touch a.txt');
    expect(first.pending?.[0]?.id).toMatch(/^[0-9a-f]{12}$/);
    expect(made(dir)).toEqual([]);
    const [a, b] = first.pending!;
    const second = await resume(first.state!, { [a!.id]: 'approve', [b!.id]: { decision: 'deny', reason: 'not b' } });
    expect(second.status).toBe('completed');
    expect(second.text).toBe('done');
    expect(second.runId).toBe(first.runId);
    expect(made(dir)).toEqual(['a.txt']);
    expect(second.toolCalls.map((call) => [call.decision, call.decidedBy])).toEqual(
      expect.arrayContaining([
        ['approved', 'user'],
        ['denied', 'user'],
      ]),
    );
    // the model saw the result of a and the denial of b, each once
    const seen = Object.values(toolResultsSeen(model, 1));
    expect(seen).toHaveLength(2);
    expect(JSON.stringify(seen)).toContain('not b');
    expect(second.steps[0]?.step).toBe(2);
  });

  it('carries "always" answers across resumes and can stop again', async () => {
    const dir = tempDir();
    const ledger = tempDir();
    const { first, resume } = await deferred(dir, [touch('a.txt'), touch('a.txt'), touch('c.txt'), { text: 'done' }], ledger);
    const second = await resume(first.state!, { [first.pending![0]!.id]: 'always' }, { onApproval: 'defer' });
    // the second `touch a.txt` ran under the always; `touch c.txt` waits
    expect(second.status).toBe('approval-required');
    expect(second.pending?.map((request) => request.input)).toEqual([{ command: 'touch c.txt' }]);
    expect(second.toolCalls.map((call) => [call.decision, call.decidedBy])).toEqual([
      ['always', 'user'],
      ['always', 'always'],
    ]);
    const third = await resume(second.state!, { [second.pending![0]!.id]: 'approve' });
    expect(third.status).toBe('completed');
    expect(made(dir)).toEqual(['a.txt', 'c.txt']);
  });

  it('a step with a request an "always" covers and one it does not: both run once, after the answer', async () => {
    const dir = tempDir();
    const ledger = tempDir();
    const { first, resume } = await deferred(dir, [touch('a.txt'), touch('a.txt', 'c.txt'), { text: 'done' }], ledger);
    const second = await resume(first.state!, { [first.pending![0]!.id]: 'always' }, { onApproval: 'defer' });
    expect(second.pending?.map((request) => request.input)).toEqual([{ command: 'touch c.txt' }]);
    expect(made(dir)).toEqual(['a.txt']);
    const third = await resume(second.state!, { [second.pending![0]!.id]: 'approve' });
    expect(third.status).toBe('completed');
    // ai 6 runs the covered call with the answered one; ai 7 runs it at once, before stopping
    const calls = [...second.toolCalls, ...third.toolCalls].map((call) => [(call.input as { command: string }).command, call.decision, call.decidedBy]);
    expect(calls.sort()).toEqual([
      ['touch a.txt', 'always', 'always'],
      ['touch a.txt', 'always', 'user'],
      ['touch c.txt', 'approved', 'user'],
    ]);
    expect(made(dir)).toEqual(['a.txt', 'c.txt']);
  });

  describe('refuses tampered, replayed and foreign states before anything runs', () => {
    const attempts: [string, (first: WorkerRunResult, dir: string) => { state: string; answers: Record<string, unknown> }][] = [
      ['changed input', (first) => ({ state: changeBody(first.state!, (b) => (b.pending[0].input.command = 'touch evil.txt')), answers: { [first.pending![0]!.id]: 'approve' } })],
      ['changed input in the conversation', (first) => ({
        state: changeBody(first.state!, (b) => {
          const text = JSON.stringify(b.messages).replaceAll('touch a.txt', 'touch evil.txt');
          b.messages = JSON.parse(text);
        }),
        answers: { [first.pending![0]!.id]: 'approve' },
      })],
      ['changed tool', (first) => ({ state: changeBody(first.state!, (b) => (b.pending[0].toolName = 'cli_execute')), answers: { [first.pending![0]!.id]: 'approve' } })],
      ['an always slipped in', (first) => ({
        state: changeBody(first.state!, (b) => (b.always = [{ kind: 'tool', tool: 'shell', description: 'all' }])),
        answers: { [first.pending![0]!.id]: 'approve' },
      })],
      ['a new signature made up', (first) => ({ state: JSON.stringify({ ...JSON.parse(first.state!), mac: '0'.repeat(64) }), answers: { [first.pending![0]!.id]: 'approve' } })],
      ['an answer for something never asked', (first) => ({ state: first.state!, answers: { [first.pending![0]!.id]: 'approve', '0123456789ab': 'approve' } })],
      ['not a state', () => ({ state: '{"hello": 1}', answers: {} })],
    ];
    for (const [what, attempt] of attempts) {
      it(`${what}`, async () => {
        const dir = tempDir();
        const ledger = tempDir();
        const { first, resume } = await deferred(dir, [touch('a.txt'), { text: 'done' }], ledger);
        const { state, answers } = attempt(first, dir);
        await expect(resume(state, answers)).rejects.toMatchObject({ code: 'STATE_INVALID' });
        expect(made(dir)).toEqual([]);
        // the genuine state is still usable: a refusal does not use it up
        await resume(first.state!, { [first.pending![0]!.id]: 'approve' });
        expect(made(dir)).toEqual(['a.txt']);
      });
    }

    it('a replay of a resumed state, and of an older state after a newer one', async () => {
      const dir = tempDir();
      const ledger = tempDir();
      const { first, resume } = await deferred(dir, [touch('a.txt'), touch('b.txt'), { text: 'done' }], ledger);
      const answers = { [first.pending![0]!.id]: 'approve' };
      const second = await resume(first.state!, answers, { onApproval: 'defer' });
      expect(second.status).toBe('approval-required');
      await expect(resume(first.state!, answers)).rejects.toMatchObject({ code: 'STATE_INVALID', message: expect.stringContaining('already resumed') });
      await resume(second.state!, { [second.pending![0]!.id]: 'approve' });
      await expect(resume(second.state!, { [second.pending![0]!.id]: 'approve' })).rejects.toMatchObject({ code: 'STATE_INVALID' });
      expect(made(dir)).toEqual(['a.txt', 'b.txt']);
    });

    it('answers from another state of the same worker', async () => {
      const dir = tempDir();
      const ledger = tempDir();
      const one = await deferred(dir, [touch('a.txt'), { text: 'done' }], ledger);
      const two = await deferred(dir, [touch('a.txt'), { text: 'done' }], ledger);
      await expect(one.resume(one.first.state!, { [two.first.pending![0]!.id]: 'approve' })).rejects.toMatchObject({ code: 'STATE_INVALID' });
      expect(made(dir)).toEqual([]);
    });

    it('a changed worker file, another work directory, another secret', async () => {
      const dir = tempDir();
      const ledger = tempDir();
      const { first, model } = await deferred(dir, [touch('a.txt'), { text: 'done' }], ledger);
      const answers = { [first.pending![0]!.id]: 'approve' as const };
      // another work directory
      const elsewhere = await loadWorker(join(dir, 'worker.yaml'), { workDir: tempDir() });
      await expect(resumeWorker(elsewhere, first.state!, answers, { model, stateSecret: SECRET, stateLedger: ledger })).rejects.toMatchObject({ code: 'STATE_INVALID' });
      // another secret
      const worker = await loadWorker(join(dir, 'worker.yaml'));
      await expect(
        resumeWorker(worker, first.state!, answers, { model, stateSecret: 'another-secret-of-at-least-32-bytes!!', stateLedger: ledger }),
      ).rejects.toMatchObject({ code: 'STATE_INVALID', message: expect.stringContaining('signature') });
      // the worker file rewritten (a process that loads it again)
      workerFile(dir, '\n  # changed');
      const changed = await loadWorker(join(dir, 'worker.yaml'));
      await expect(resumeWorker(changed, first.state!, answers, { model, stateSecret: SECRET, stateLedger: ledger })).rejects.toMatchObject({
        code: 'STATE_INVALID',
        message: expect.stringMatching(/issued for another worker than this 'resumable': it differs in its files/),
      });
      expect(made(dir)).toEqual([]);
    });
  });

  it('checks its options: defer needs a secret of at least 32 bytes, onApproval is a function or defer', async () => {
    const worker = { name: 'w', tools: [] };
    const model = scriptedModel([]);
    await expect(runWorker(worker, 'x', { model, onApproval: 'defer' })).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('stateSecret') });
    await expect(runWorker(worker, 'x', { model, onApproval: 'defer', stateSecret: 'short' })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(runWorker(worker, 'x', { model, onApproval: 'later' as never })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(resumeWorker(worker, 'x', {}, { model } as never)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(resumeWorker(worker, 42 as never, {}, { model, stateSecret: SECRET })).rejects.toMatchObject({ code: 'STATE_INVALID' });
  });

  it('workers built in code are fingerprinted by their tools and approvals', async () => {
    const ledger = tempDir();
    let runs = 0;
    const build = (description: string) =>
      wrapWithDefaultApproval(
        named('bump', tool({ description, inputSchema: z.object({}), execute: async () => ++runs })),
        { default: 'ask' },
      );
    const model = scriptedModel([{ toolCalls: [{ toolName: 'bump', input: {} }] }, { text: 'ok' }]);
    const first = await runWorker({ name: 'w', tools: [build('bumps')] }, 'go', { model, onApproval: 'defer', stateSecret: SECRET });
    const answers = { [first.pending![0]!.id]: 'approve' as const };
    await expect(resumeWorker({ name: 'w', tools: [build('bumps twice')] }, first.state!, answers, { model, stateSecret: SECRET, stateLedger: ledger })).rejects.toMatchObject({
      code: 'STATE_INVALID',
    });
    const done = await resumeWorker({ name: 'w', tools: [build('bumps')] }, first.state!, answers, { model, stateSecret: SECRET, stateLedger: ledger });
    expect(done.status).toBe('completed');
    expect(runs).toBe(1);
  });
});

describe('a web app: request 1 starts the run, request 2 (another process) resumes it', () => {
  let server: FakeOpenAiServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** One "request handler" of the app, as its own Node process using the built package. */
  async function request(dir: string, script: string, args: string[]) {
    const child = spawn(process.execPath, [join(dir, `${script}.mjs`), ...args], { cwd: dir, env: { ...process.env, APP_SECRET: SECRET } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (status !== 0) throw new Error(`${script} failed: ${stderr}`);
    return JSON.parse(stdout) as Record<string, any>;
  }

  it('persists the state between the processes; tampering between them is refused', async () => {
    const dir = tempDir();
    const ledger = tempDir();
    workerFile(dir);
    server = await startFakeOpenAiServer([
      { toolCalls: [{ name: 'shell', arguments: { command: 'touch approved.txt' } }, { name: 'shell', arguments: { command: 'touch denied.txt' } }] },
      { text: 'finished' },
    ]);
    const index = join(ROOT, 'dist', 'index.js');
    const common = `import { loadWorker, resolveModel, runWorker, resumeWorker } from ${JSON.stringify(index)};
import { readFileSync, writeFileSync } from 'node:fs';
const worker = await loadWorker('worker.yaml');
const model = await resolveModel('openai-compatible:fake', { baseUrl: ${JSON.stringify(server.baseUrl)} });
const secret = process.env.APP_SECRET;`;
    writeFileSync(
      join(dir, 'start.mjs'),
      `${common}
const result = await runWorker(worker, 'make the files', { model, onApproval: 'defer', stateSecret: secret });
writeFileSync('db.json', JSON.stringify({ state: result.state }));
console.log(JSON.stringify({ status: result.status, pending: result.pending }));`,
    );
    writeFileSync(
      join(dir, 'answer.mjs'),
      `${common}
const { state } = JSON.parse(readFileSync(process.argv[2] ?? 'db.json', 'utf8'));
const answers = JSON.parse(process.argv[3]);
try {
  const result = await resumeWorker(worker, state, answers, { model, stateSecret: secret, stateLedger: ${JSON.stringify(ledger)} });
  console.log(JSON.stringify({ status: result.status, text: result.text, calls: result.toolCalls.map((c) => c.decision) }));
} catch (error) {
  console.log(JSON.stringify({ error: error.code, message: error.message }));
}`,
    );
    const started = await request(dir, 'start', []);
    expect(started.status).toBe('approval-required');
    const [approve, deny] = started.pending as { id: string; input: { command: string } }[];
    expect(approve?.input.command).toBe('touch approved.txt');
    const answers = JSON.stringify({ [approve!.id]: 'approve', [deny!.id]: { decision: 'deny', reason: 'no' } });

    // a client that edits the stored state between the requests
    const stored = JSON.parse(readFileSync(join(dir, 'db.json'), 'utf8')) as { state: string };
    writeFileSync(join(dir, 'forged.json'), JSON.stringify({ state: changeBody(stored.state, (b) => (b.pending[1].input.command = 'touch approved-too.txt')) }));
    expect(await request(dir, 'answer', ['forged.json', answers])).toMatchObject({ error: 'STATE_INVALID' });

    const resumed = await request(dir, 'answer', ['db.json', answers]);
    expect(resumed).toMatchObject({ status: 'completed', text: 'finished' });
    expect(existsSync(join(dir, 'approved.txt'))).toBe(true);
    expect(existsSync(join(dir, 'denied.txt'))).toBe(false);
    // the model saw one result and one denial
    expect(Object.values(toolResultsIn(server.requests[1]!))).toHaveLength(2);
    // a second submission of the same answers (a double click, a replay) runs nothing again
    expect(await request(dir, 'answer', ['db.json', answers])).toMatchObject({ error: 'STATE_INVALID' });
    expect(server.requests).toHaveLength(2);
  });
});
