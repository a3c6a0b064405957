/**
 * Class: an approval answers for exactly what was approved.
 *
 * - A saved rule `path: notes/todo.md` approves writing that file. Once a process made
 *   `notes/todo.md` a symlink to `.github/workflows/ci.yml` (whose path rule asks), the write
 *   would land there: the saved rule no longer answers, the call asks.
 * - Two calls of one step can share a tool call id (a model's stream may pass a repeated id
 *   through). The AI SDK matches an approval to a call by id, so approving one call and denying
 *   the other could run the denied input: only the input that was approved runs.
 */
import { existsSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { type ApprovalAnswer, type ApprovalRequest, loadWorker, runWorker, streamResumedWorker, streamWorker } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { scriptedModel } from '../helpers/mock-model.js';

function project(withRule: boolean) {
  const dir = tempDir('toolgate-saved-');
  const work = join(dir, 'workspace');
  mkdirSync(join(work, 'notes'), { recursive: true });
  mkdirSync(join(work, '.github', 'workflows'), { recursive: true });
  writeFileSync(join(work, 'notes', 'todo.md'), 'todo\n');
  writeFileSync(join(work, '.github', 'workflows', 'ci.yml'), 'original ci\n');
  writeFileSync(
    join(dir, 'worker.yaml'),
    'name: editor\ninstructions: edit\nsandbox: { root: ./workspace }\ntoolsets:\n  code_agent:\n    approval:\n      default: ask\n      paths:\n        - { pattern: ".github/**", approval: ask }\n  shell:\n    default: ask\n    rules:\n      - { pattern: ln, approval: preApproved }\n',
  );
  if (withRule) {
    writeFileSync(
      join(dir, 'toolgate.permissions.yaml'),
      'version: 1\nrules:\n  - worker: editor\n    tool: file_write\n    path: notes/todo.md\n    saved: 2026-03-01T09:41:12Z\n    by: terminal\n',
    );
  }
  return { work, file: join(dir, 'worker.yaml') };
}

/** Runs the worker's `turns`, denying every question; the inputs it was asked about. */
async function runDenying(file: string, turns: Parameters<typeof scriptedModel>[0]): Promise<unknown[]> {
  const worker = await loadWorker(file);
  const asked: unknown[] = [];
  await runWorker(worker, 'go', {
    model: scriptedModel(turns),
    onApproval: (request: ApprovalRequest) => {
      asked.push(request.input);
      return { decision: 'deny', reason: 'no' };
    },
  });
  await worker.close();
  return asked;
}

const WRITE_TODO = { toolCalls: [{ toolName: 'file_write', input: { path: 'notes/todo.md', content: 'on: push\n' } }] };

async function writeThroughLink(link: string[], withRule: boolean) {
  const { work, file } = project(withRule);
  const target = join(work, '.github', 'workflows', 'ci.yml');
  const asked = await runDenying(file, [
    { toolCalls: [{ toolName: 'shell', input: { command: `ln -sfn ${link.map((part) => part.replace('TARGET', target)).join(' ')}` } }] },
    WRITE_TODO,
    { text: 'done' },
  ]);
  return { asked, ci: readFileSync(target, 'utf8'), work };
}

describe('a saved path rule covers the file it names, not what a symlink there leads to', () => {
  it('control: a plain write to the saved path runs without a question', async () => {
    const { work, file } = project(true);
    const worker = await loadWorker(file);
    const asked: unknown[] = [];
    await runWorker(worker, 'go', {
      model: scriptedModel([{ toolCalls: [{ toolName: 'file_write', input: { path: 'notes/todo.md', content: 'fine\n' } }] }, { text: 'done' }]),
      onApproval: (request: ApprovalRequest) => {
        asked.push(request.input);
        return 'approve';
      },
    });
    await worker.close();
    expect(asked).toEqual([]);
    expect(readFileSync(join(work, 'notes', 'todo.md'), 'utf8')).toBe('fine\n');
  });

  it('the saved file made a symlink to a workflow by a process: the write asks (and, denied, changes nothing)', async () => {
    const { asked, ci, work } = await writeThroughLink(['TARGET', 'notes/todo.md'], true);
    expect(readlinkSync(join(work, 'notes', 'todo.md'))).toContain('ci.yml');
    expect(asked).toEqual([{ path: 'notes/todo.md', content: 'on: push\n' }]);
    expect(ci).toBe('original ci\n');
  });

  it('a symlinked folder on the way (in the repository already): the write asks', async () => {
    const { work, file } = project(true);
    rmSync(join(work, 'notes'), { recursive: true });
    symlinkSync('.github/workflows', join(work, 'notes'));
    renameSync(join(work, '.github', 'workflows', 'ci.yml'), join(work, '.github', 'workflows', 'todo.md'));
    const asked = await runDenying(file, [WRITE_TODO, { text: 'done' }]);
    expect(asked).toEqual([{ path: 'notes/todo.md', content: 'on: push\n' }]);
    expect(readFileSync(join(work, '.github', 'workflows', 'todo.md'), 'utf8')).toBe('original ci\n');
  });
});

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model that streams two shell calls sharing the id `X`, then text. */
function sharedIdModel(): MockLanguageModelV3 {
  const calls = [
    { toolCallId: 'X', toolName: 'shell', input: JSON.stringify({ command: 'touch approved.txt' }) },
    { toolCallId: 'X', toolName: 'shell', input: JSON.stringify({ command: 'touch denied.txt' }) },
  ];
  const turn = (prompt: { role: string }[]) => prompt.filter((message) => message.role === 'assistant').length;
  return new MockLanguageModelV3({
    doStream: async (options: { prompt: { role: string }[] }) => {
      const parts: unknown[] = [{ type: 'stream-start', warnings: [] }];
      if (turn(options.prompt) === 0) {
        parts.push(...calls.map((call) => ({ type: 'tool-call', ...call })));
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: USAGE });
      } else {
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'done' }, { type: 'text-end', id: 't' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE });
      }
      return { stream: simulateReadableStream({ chunks: parts as never[] }) } as never;
    },
  } as never);
}

function sharedIdProject() {
  const dir = tempDir('toolgate-ids-');
  writeFileSync(join(dir, 'worker.yaml'), 'name: dup\ninstructions: test\ntoolsets:\n  shell:\n    default: ask\n');
  return { dir, file: join(dir, 'worker.yaml') };
}

const answerFor = (command: string): ApprovalAnswer => (command === 'touch approved.txt' ? 'approve' : { decision: 'deny', reason: 'no' });

describe('two calls of one step sharing a tool call id (streamed)', () => {
  it('asked by a handler: the denied input never runs', async () => {
    const { dir, file } = sharedIdProject();
    const worker = await loadWorker(file);
    const run = streamWorker(worker, 'go', { model: sharedIdModel(), onApproval: (request) => answerFor((request.input as { command: string }).command) });
    for await (const _ of run) {
      // drained
    }
    await run.result;
    await worker.close();
    expect(existsSync(join(dir, 'denied.txt'))).toBe(false);
  });

  it('deferred and resumed: the denied input never runs', async () => {
    const { dir, file } = sharedIdProject();
    const worker = await loadWorker(file);
    const secret = 'a-secret-of-at-least-32-bytes-0123456789';
    const model = sharedIdModel();
    const first = streamWorker(worker, 'go', { model, onApproval: 'defer', stateSecret: secret });
    for await (const _ of first) {
      // drained
    }
    const stopped = await first.result;
    expect(stopped.status).toBe('approval-required');
    const answers = Object.fromEntries(stopped.pending!.map((pending) => [pending.id, answerFor((pending.input as { command: string }).command)]));
    const again = streamResumedWorker(worker, stopped.state!, answers, { model, stateSecret: secret, stateLedger: tempDir('toolgate-ledger-') });
    for await (const _ of again) {
      // drained
    }
    await again.result;
    await worker.close();
    expect(existsSync(join(dir, 'denied.txt'))).toBe(false);
  });
});
