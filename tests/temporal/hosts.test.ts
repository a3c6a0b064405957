/**
 * toolgate on a real Temporal server across worker hosts: a call whose worker dies mid-call is
 * not run again (the model is told its outcome is unknown), a host whose worker files differ
 * refuses to continue a run, tools run by activities stay in their sandbox, two worker
 * processes share 20 runs, and only calls of tools that only read may be retried.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PendingToolCall, ToolgateRunResult } from '../../ts/src/temporal/contract.js';
import { tempDir } from '../helpers/fs.js';
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

async function worker(taskQueue: string, identity: string, options: { heartbeatTimeout?: string; maxActivities?: number; env?: Record<string, string> } = {}) {
  const started = await startWorkerProcess({ address: server.address, taskQueue, identity, bundle, ...options });
  workers.push(started);
  return started;
}

function start(taskQueue: string, args: { worker: string; input: string }) {
  return server.client.workflow.start('toolgateRun', { taskQueue, workflowId: `run-${randomUUID()}`, args: [args] });
}

async function waitingCall(handle: WorkflowHandle): Promise<PendingToolCall> {
  return eventually(async () => (await handle.query<PendingToolCall[]>('toolgate.pending'))[0], 'a pending call');
}

/** The run's failure message (the workflow failed with toolgate's refusal). */
async function failureOf(handle: WorkflowHandle): Promise<{ message: string; type?: string }> {
  const error = await handle.result().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = (error as WorkflowFailedError).cause as (Error & { type?: string }) | undefined;
  return { message: String(cause?.message), ...(cause?.type ? { type: cause.type } : {}) };
}

/** The activity types scheduled in a run, with the retry attempts each was allowed. */
async function scheduledActivities(handle: WorkflowHandle): Promise<[string, number][]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    return scheduled ? [[scheduled.activityType?.name ?? '', scheduled.retryPolicy?.maximumAttempts ?? 0] as [string, number]] : [];
  });
}

describe.skipIf(unavailable)('worker hosts on Temporal', () => {
  // The runs that kill no worker share one.
  const sharedQueue = `shared-${randomUUID()}`;
  beforeAll(async () => {
    await worker(sharedQueue, 'shared');
  }, 120_000);

  it('a call whose worker dies mid-call is not run again: the model is told its outcome is unknown', async () => {
    const queue = `lost-${randomUUID()}`;
    const files = workerDir(
      [{ toolCalls: [bump(1, 'slowBump')] }, { expect: { toolResult: 'the outcome of this call is unknown' }, ...done('checked') }],
      { approval: 'preApproved' },
    );
    const first = await worker(queue, 'dies-mid-call', { heartbeatTimeout: '2s' });
    const handle = await start(queue, { worker: files.file, input: 'bump slowly' });
    await eventually(async () => (files.runs() === 1 ? true : undefined), 'the slow call to start');
    await first.kill();
    await worker(queue, 'takes-over', { heartbeatTimeout: '2s' });
    const result = (await handle.result()) as ToolgateRunResult;
    expect(result).toMatchObject({ status: 'task-completed', text: 'checked' });
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ toolName: 'slowBump', decision: 'preApproved', errorCode: 'TOOL_FAILED' });
    expect(result.toolCalls[0]!.error).toContain('no heartbeat for 2 s');
    expect(files.runs()).toBe(1);
    // The lost call is in the audit log too, and its activity had exactly one attempt.
    expect(files.audit().find((line) => line.event === 'tool-call')).toMatchObject({ toolName: 'slowBump', errorCode: 'TOOL_FAILED' });
    expect((await scheduledActivities(handle)).filter(([type]) => type === 'toolgateToolCall')).toEqual([['toolgateToolCall', 1]]);
  });

  it('a host whose worker file changed refuses to continue the run, naming the file', async () => {
    const queue = `changed-${randomUUID()}`;
    const files = workerDir([{ toolCalls: [bump(1)] }, done('never')]);
    const first = await worker(queue, 'old-files');
    const handle = await start(queue, { worker: files.file, input: 'bump' });
    const call = await waitingCall(handle);
    // The host dies; a host with other files takes over.
    await first.kill();
    appendFileSync(files.file, '# edited after the run started\n');
    await worker(queue, 'new-files');
    await handle.executeUpdate('toolgate.answer', { args: [{ [call.id]: 'approve' }] });
    const failure = await failureOf(handle);
    expect(failure.type).toBe('CONFIG_INVALID');
    expect(failure.message).toContain(`worker file '${files.file}' differs from the version the run started with`);
    expect(failure.message).toContain(`refuses to continue run '${handle.workflowId}'`);
    expect(files.runs()).toBe(0);
    expect(files.audit().at(-1)).toMatchObject({ event: 'run-end', status: 'error', errorCode: 'CONFIG_INVALID' });
  });

  it('a host whose tools module changed under it refuses too (the same process)', async () => {
    const files = workerDir([{ toolCalls: [bump(1)] }, done('never')]);
    const handle = await start(sharedQueue, { worker: files.file, input: 'bump' });
    const call = await waitingCall(handle);
    appendFileSync(join(files.dir, 'tools.mjs'), '// edited after the run started\n');
    await handle.executeUpdate('toolgate.answer', { args: [{ [call.id]: 'approve' }] });
    const failure = await failureOf(handle);
    expect(failure.message).toContain(`'${join(files.dir, 'tools.mjs')}' differs from the version the run started with`);
    expect(files.runs()).toBe(0);
  });

  it('tools run by activities stay in their sandbox: path rules and the kernel', async () => {
    const base = tempDir('toolgate-temporal-sandbox-');
    const work = join(base, 'work');
    const outside = join(base, 'outside');
    mkdirSync(work);
    mkdirSync(outside);
    writeFileSync(join(work, 'x.txt'), 'hello\n');
    symlinkSync(outside, join(work, 'escape'));
    const target = (name: string) => join(outside, name);
    const shell = (command: string) => ({ toolName: 'shell', input: { command } });
    writeFileSync(
      join(base, 'script.json'),
      JSON.stringify([
        {
          toolCalls: [
            shell(`touch ${target('by-touch')}`),
            shell('touch escape/by-symlink'),
            shell(`perl -e 'open(F, ">", "${target('by-perl')}") or die "$!"; print F 1'`),
            shell(`awk 'BEGIN{print 1 > "${target('by-awk')}"}'`),
            shell(`sed -n '1w ${target('by-sed')}' x.txt`),
            shell('touch made-inside'),
          ],
        },
        done('tried'),
      ]),
    );
    const file = join(base, 'worker.yaml');
    writeFileSync(
      file,
      'name: boxed\nmodel: scripted:./script.json\nsandbox: { root: ./work }\ntoolsets:\n  shell: { default: preApproved }\n',
    );
    const result = (await (await start(sharedQueue, { worker: file, input: 'try to write outside' })).result()) as ToolgateRunResult;
    expect(result.status).toBe('task-completed');
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(join(work, 'made-inside'))).toBe(true);
    const [byTouch, bySymlink, byPerl, byAwk, bySed, inside] = result.toolCalls;
    // The command policy refuses paths outside the work directory, symlinks followed.
    for (const refused of [byTouch, bySymlink]) expect(refused).toMatchObject({ decision: 'refused', errorCode: 'PATH_OUTSIDE_ROOT' });
    // A path the policy cannot see (inside a program's own code) meets the kernel sandbox.
    for (const denied of [byPerl, byAwk, bySed]) {
      const output = denied!.output as { exitCode: number; stderr: string };
      expect(output.exitCode).not.toBe(0);
      expect(output.stderr).toMatch(/Permission denied|Read-only file system|No such file or directory/);
    }
    expect((inside!.output as { exitCode: number }).exitCode).toBe(0);
  });

  it('two worker processes share 20 runs; every tool runs once', async () => {
    const queue = `twenty-${randomUUID()}`;
    await Promise.all([worker(queue, 'host-1', { maxActivities: 2 }), worker(queue, 'host-2', { maxActivities: 2 })]);
    const runs = Array.from({ length: 20 }, (_, index) => workerDir([{ toolCalls: [bump(index)] }, done(`bumped ${index}`)], { approval: 'preApproved' }));
    const handles = await Promise.all(runs.map((files, index) => start(queue, { worker: files.file, input: `bump ${index}` })));
    const results = (await Promise.all(handles.map((handle) => handle.result()))) as ToolgateRunResult[];
    expect(results.map((result) => result.text)).toEqual(runs.map((_, index) => `bumped ${index}`));
    expect(runs.map((files) => files.runs())).toEqual(runs.map(() => 1));
    // Both hosts ran activities.
    const identities = new Set<string>();
    for (const handle of handles) {
      for (const event of (await handle.fetchHistory()).events ?? []) {
        const identity = event.activityTaskStartedEventAttributes?.identity;
        if (identity) identities.add(identity);
      }
    }
    expect([...identities].sort()).toEqual(['host-1', 'host-2']);
  });

  it('calls of tools that only read may be retried; every other call gets exactly one attempt', async () => {
    const files = workerDir([{ toolCalls: [{ toolName: 'read_file', input: { path: 'worker.yaml' } }, bump(1)] }, done('read and bumped')], {
      approval: 'preApproved',
      extra: '  filesystem:\n    approval: { default: preApproved }\n',
    });
    const handle = await start(sharedQueue, { worker: files.file, input: 'read, then bump' });
    const result = (await handle.result()) as ToolgateRunResult;
    expect(result.toolCalls.map((record) => [record.toolName, record.decision])).toEqual([
      ['read_file', 'preApproved'],
      ['bump', 'preApproved'],
    ]);
    const calls = (await scheduledActivities(handle)).filter(([type]) => type === 'toolgateToolCall').map(([, attempts]) => attempts);
    expect(calls.sort()).toEqual([1, 3]);
  });

  it('a host given workerFiles refuses a run naming another worker file, before reading it', async () => {
    const queue = `allowed-${randomUUID()}`;
    const allowed = workerDir([{ toolCalls: [bump(1)] }, done('ran')], { approval: 'preApproved' });
    const other = workerDir([{ toolCalls: [bump(1)] }, done('ran')], { approval: 'preApproved' });
    await worker(queue, 'picky', { env: { WORKER_FILES: allowed.dir } });
    const refused = await start(queue, { worker: other.file, input: 'bump' });
    const failure = await failureOf(refused);
    expect(failure.type).toBe('CONFIG_INVALID');
    expect(failure.message).toContain(`worker file '${other.file}' is not one this worker host runs`);
    // A symlink in the allowed directory to a file outside it, or a path that climbs out, is refused too.
    symlinkSync(other.file, join(allowed.dir, 'elsewhere.yaml'));
    for (const path of [join(allowed.dir, 'elsewhere.yaml'), `${allowed.dir}/../${other.dir.split('/').at(-1)}/worker.yaml`]) {
      expect((await failureOf(await start(queue, { worker: path, input: 'bump' }))).message).toContain('is not one this worker host runs');
    }
    expect(other.runs()).toBe(0);
    expect(other.audit()).toEqual([]);
    const result = (await (await start(queue, { worker: allowed.file, input: 'bump' })).result()) as ToolgateRunResult;
    expect(result.text).toBe('ran');
    expect(allowed.runs()).toBe(1);
  });

  it('a worker called through the workers toolset runs inside the tool call, with its own model', async () => {
    const files = workerDir(
      [{ toolCalls: [{ toolName: 'helper', input: { input: 'say hi' } }] }, { expect: { toolResult: 'hi from the helper' }, ...done('the helper said hi') }],
      { approval: 'preApproved', extra: '  workers:\n    allowed_workers: [./helper.yaml]\n    approval: { default: preApproved }\n' },
    );
    writeFileSync(join(files.dir, 'helper-script.json'), JSON.stringify([{ expect: { userMessage: 'say hi' }, ...done('hi from the helper') }]));
    writeFileSync(join(files.dir, 'helper.yaml'), 'name: helper\ndescription: Says hi\nmodel: scripted:./helper-script.json\n');
    const result = (await (await start(sharedQueue, { worker: files.file, input: 'ask the helper' })).result()) as ToolgateRunResult;
    expect(result).toMatchObject({ status: 'task-completed', text: 'the helper said hi' });
    expect(result.toolCalls).toMatchObject([{ toolName: 'helper', decision: 'preApproved', output: { status: 'task-completed', result: 'hi from the helper' } }]);
  });
});
