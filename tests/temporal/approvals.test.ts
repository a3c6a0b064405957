/**
 * toolgate on a real Temporal server (`temporal server start-dev`), with real worker processes
 * (`tests/fixtures/temporal/worker.mjs`), the official `@temporalio/client` and a scripted model:
 * approvals as the `toolgate.pending` query and the `toolgate.answer` update, a worker killed
 * while its run waits, deny, always, an unknown id, the approval timeout, the audit log.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PendingToolCall, ToolgateAnswerResult, ToolgateAnswers, ToolgateRunResult } from '../../ts/src/temporal/contract.js';
import {
  bundleToolgateWorkflows,
  type DevServer,
  eventually,
  startDevServer,
  startWorkerProcess,
  temporalUnavailable,
  type WorkerProcess,
} from '../helpers/temporal.js';
import { bump, done, workerDir } from './fixture.js';

const unavailable = temporalUnavailable();
if (unavailable) console.warn(unavailable);

let server: DevServer;
let bundle: string;
let bundleDir: string | undefined;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  if (unavailable) return;
  server = await startDevServer();
  bundleDir = mkdtempSync(join(tmpdir(), 'toolgate-bundle-'));
  bundle = await bundleToolgateWorkflows(join(bundleDir, 'workflows.js'));
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  await server?.stop();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

async function worker(taskQueue: string, identity: string, options: { heartbeatTimeout?: string; ownBundle?: boolean } = {}) {
  const started = await startWorkerProcess({
    address: server.address,
    taskQueue,
    identity,
    ...(options.ownBundle ? {} : { bundle }),
    ...(options.heartbeatTimeout ? { heartbeatTimeout: options.heartbeatTimeout } : {}),
  });
  workers.push(started);
  return started;
}

function start(taskQueue: string, args: { worker: string; input: string; approvalTimeout?: string; maxSteps?: number }) {
  return server.client.workflow.start('toolgateRun', { taskQueue, workflowId: `run-${randomUUID()}`, args: [args] });
}

const pending = (handle: WorkflowHandle) => handle.query<PendingToolCall[]>('toolgate.pending');
const answer = (handle: WorkflowHandle, answers: ToolgateAnswers) =>
  handle.executeUpdate<ToolgateAnswerResult, [ToolgateAnswers]>('toolgate.answer', { args: [answers] });

/** Waits until `count` calls wait for an answer. */
async function waitingCalls(handle: WorkflowHandle, count = 1): Promise<PendingToolCall[]> {
  return eventually(async () => {
    const calls = await pending(handle);
    return calls.length === count ? calls : undefined;
  }, `${count} pending call(s)`);
}

describe.skipIf(unavailable)('approvals on Temporal', () => {
  it('asks, waits, survives SIGKILL of its worker, and finishes on a second worker with the tool run exactly once', async () => {
    const queue = `q-${randomUUID()}`;
    const files = workerDir([{ toolCalls: [bump(7)] }, { expect: { toolResult: 'bumped 7' }, ...done('counter bumped') }]);
    // The first worker bundles workflowsPath itself, as a user's worker does.
    const first = await worker(queue, 'host-a', { ownBundle: true });
    const handle = await start(queue, { worker: files.file, input: 'bump the counter by 7' });

    const [call] = await waitingCalls(handle);
    expect(call).toMatchObject({ id: '1.1', toolName: 'bump', input: { n: 7 }, scope: { kind: 'call', tool: 'bump' } });
    expect(call!.inputBytes).toBe(Buffer.byteLength(JSON.stringify({ n: 7 })));
    expect(call!.inputSha256).toMatch(/^[0-9a-f]{64}$/);
    // The input as every approval surface shows it (the core's review).
    expect(call).toMatchObject({ review: 'n: 7', reviewable: true });
    expect(files.runs()).toBe(0);

    await first.kill();
    await worker(queue, 'host-b');
    const answered = await answer(handle, { [call!.id]: 'approve' });
    expect(answered).toEqual({ answered: ['1.1'], pending: [] });

    const result = (await handle.result()) as ToolgateRunResult;
    expect(result.status).toBe('task-completed');
    expect(result.text).toBe('counter bumped');
    expect(result.runId).toBe(handle.workflowId);
    expect(result.toolCalls).toMatchObject([{ toolName: 'bump', decision: 'approved', decidedBy: 'user', output: 'bumped 7' }]);
    expect(result.steps.map((step) => step.step)).toEqual([1, 2]);
    expect(files.runs()).toBe(1);

    // The audit log, written by the activities on both hosts, under the workflow id.
    const audit = files.audit();
    expect(audit.map((line) => line.event)).toEqual(['run-start', 'tool-call', 'run-end']);
    expect(new Set(audit.map((line) => line.runId))).toEqual(new Set([handle.workflowId]));
    expect(audit[1]).toMatchObject({ toolName: 'bump', decision: 'approved', decidedBy: 'user' });
    expect(audit[2]).toMatchObject({ status: 'task-completed', calls: 1 });

    // Waiting ran nothing: no activity was scheduled between the model step and the answer.
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).flatMap((event) => {
      const type = event.activityTaskScheduledEventAttributes?.activityType?.name;
      return type ? [type] : [];
    });
    expect(scheduled).toEqual(['toolgatePlan', 'toolgateModelStep', 'toolgateToolCall', 'toolgateModelStep', 'toolgateRunEnd']);
  });

  describe('with one worker shared by the runs below', () => {
    const queue = `shared-${randomUUID()}`;
    beforeAll(async () => {
      await worker(queue, 'shared');
    }, 120_000);

    it('deny: the tool does not run and the model reads the reason', async () => {
      const files = workerDir([{ toolCalls: [bump(1)] }, { expect: { toolResult: 'denied: not today' }, ...done('left it') }]);
      const handle = await start(queue, { worker: files.file, input: 'bump' });
      const [call] = await waitingCalls(handle);
      await answer(handle, { [call!.id]: { decision: 'deny', reason: 'not today' } });
      const result = (await handle.result()) as ToolgateRunResult;
      expect(result).toMatchObject({ status: 'task-completed', text: 'left it' });
      expect(result.toolCalls).toMatchObject([{ toolName: 'bump', decision: 'denied', decidedBy: 'user', reason: 'not today' }]);
      expect(files.runs()).toBe(0);
      expect(files.audit()[1]).toMatchObject({ event: 'tool-call', decision: 'denied', reason: 'not today' });
    });

    it('always: covers the same call later in the run and in the same step, decided by the core', async () => {
      const files = workerDir([
        { toolCalls: [bump(1)] },
        // Covered by the "always" of step 1: nobody is asked.
        { toolCalls: [bump(1), bump(1)] },
        // Another input asks again; an "always" for the first covers the second, still waiting.
        { toolCalls: [bump(2), bump(2)] },
        done('bumped five times'),
      ]);
      // With a timeout, a call that asked by mistake would be denied (and fail the test) instead of hanging.
      const handle = await start(queue, { worker: files.file, input: 'bump', approvalTimeout: '60s' });
      const [first] = await waitingCalls(handle);
      await answer(handle, { [first!.id]: 'always' });
      const both = await waitingCalls(handle, 2);
      expect(both.map((call) => call.id)).toEqual(['3.1', '3.2']);
      const reply = await answer(handle, { '3.1': 'always' });
      expect(reply.answered).toEqual(['3.1']);
      const result = (await handle.result()) as ToolgateRunResult;
      expect(result.status).toBe('task-completed');
      expect(result.toolCalls.map((record) => [record.input, record.decision, record.decidedBy])).toEqual([
        [{ n: 1 }, 'always', 'user'],
        [{ n: 1 }, 'always', 'always'],
        [{ n: 1 }, 'always', 'always'],
        [{ n: 2 }, 'always', 'user'],
        [{ n: 2 }, 'always', 'always'],
      ]);
      expect(result.toolCalls[0]!.scope).toMatchObject({ kind: 'call', tool: 'bump', input: { n: 1 } });
      expect(files.runs()).toBe(5);
    });

    it('an answer for an id that is not pending is rejected and changes nothing', async () => {
      const files = workerDir([{ toolCalls: [bump(3)] }, done('ok')]);
      const handle = await start(queue, { worker: files.file, input: 'bump' });
      const [call] = await waitingCalls(handle);
      const rejected = async (answers: unknown) => {
        const error = await answer(handle, answers as ToolgateAnswers).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
        return String((error as Error & { cause?: Error }).cause?.message);
      };
      expect(await rejected({ '9.9': 'approve' })).toContain("no pending call has the id '9.9' (pending: 1.1); nothing was answered");
      expect(await rejected({ [call!.id]: 'approve', '1.2': 'approve' })).toContain("'1.2'");
      expect(await rejected({ [call!.id]: 'maybe' })).toContain("answer 'approve', 'deny', 'always' or { decision, reason }");
      expect(await rejected({ [call!.id]: { decision: 'deny', why: 'x' } })).toContain("unknown key 'why'");
      expect(await rejected({})).toContain('names no call');
      expect(await rejected(['approve'])).toContain('takes an object');
      expect(await pending(handle)).toEqual([call]);
      expect(files.runs()).toBe(0);
      await answer(handle, { [call!.id]: 'approve' });
      expect(((await handle.result()) as ToolgateRunResult).status).toBe('task-completed');
      expect(files.runs()).toBe(1);
      // A rejected update leaves nothing in history; the accepted one does.
      const history = await handle.fetchHistory();
      expect((history.events ?? []).filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes).length).toBe(1);
    });

    it('an approval timeout denies the call with a reason the model sees', async () => {
      const files = workerDir([{ toolCalls: [bump(4)] }, { expect: { toolResult: 'nobody answered within the approval timeout (1s)' }, ...done('timed out') }]);
      const handle = await start(queue, { worker: files.file, input: 'bump', approvalTimeout: '1s' });
      const result = (await handle.result()) as ToolgateRunResult;
      expect(result).toMatchObject({ status: 'task-completed', text: 'timed out' });
      expect(result.toolCalls).toMatchObject([{ toolName: 'bump', decision: 'denied', decidedBy: 'no-handler' }]);
      expect(files.runs()).toBe(0);
      expect(await pending(handle)).toEqual([]);
    });

    it('an input too long to review may be approved once, never for always', async () => {
      const note = 'x'.repeat(70_000);
      const files = workerDir([{ toolCalls: [bump(5, 'bump', note)] }, done('ok')]);
      const handle = await start(queue, { worker: files.file, input: 'bump' });
      const [call] = await waitingCalls(handle);
      // Listed whole, with its size and digest, and no "always" scope.
      expect((call!.input as { note: string }).note).toBe(note);
      expect(call!.scope).toBeNull();
      expect(call!.inputBytes).toBe(Buffer.byteLength(JSON.stringify({ n: 5, note })));
      expect(call!.reviewable).toBe(false);
      expect(call!.review).toContain(`the input is ${call!.inputBytes} bytes (sha256 ${call!.inputSha256})`);
      const error = await answer(handle, { [call!.id]: 'always' }).catch((thrown: unknown) => thrown as Error & { cause?: Error });
      expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String(error && 'cause' in error ? error.cause?.message : '')).toContain('too long to review');
      await answer(handle, { [call!.id]: 'approve' });
      expect(((await handle.result()) as ToolgateRunResult).toolCalls).toMatchObject([{ decision: 'approved' }]);
    });

    it('a bad argument fails the run at once with the problem named', async () => {
      const handle = await start(queue, { worker: 'relative/worker.yaml', input: 'x' });
      const error = await handle.result().catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(WorkflowFailedError);
      expect(String((error as WorkflowFailedError).cause?.message)).toContain("'worker' must be the absolute path of the worker file");
      const files = workerDir([done('never')]);
      const bad = await start(queue, { worker: files.file, input: 'x', approvalTimeout: 'soon' });
      const failure = await bad.result().catch((thrown: unknown) => thrown as WorkflowFailedError);
      expect(String(failure.cause?.message)).toContain('approvalTimeout');
    });
  });
});
