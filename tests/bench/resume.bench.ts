/**
 * Resume overhead: a 20-step run where every step calls a tool that needs approval, run
 *
 *  - as the baseline, with `runWorker` and an `onApproval` handler in the same process;
 *  - deferred: `runWorker(…, { onApproval: 'defer' })`, then 20 `resumeWorker` calls, each
 *    from the state the previous one returned (sign, check, record in the ledger, rebuild).
 *
 * Both use the same scripted model and tool (each result ~1 KB, so the conversation and the
 * state grow as a real run's would). Prints total time, time per step, and the state's size
 * after 1, 10 and 20 steps.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { named } from '../../ts/src/approval/named-tool.js';
import { wrapWithDefaultApproval } from '../../ts/src/approval/approval.js';
import { resumeWorker, runWorker, type RunnableWorker, type WorkerRunResult } from '../../ts/src/index.js';
import { printComparison, printLine, timeMs } from './lib/report.js';

const STEPS = 20;
const ROUNDS = 5;
const SECRET = 'benchmark-secret-of-at-least-32-bytes!!';
const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model that calls `lookup` STEPS times, then answers. */
function model(): MockLanguageModelV3 {
  let call = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      call++;
      if (call > STEPS) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE, warnings: [] };
      return {
        content: [{ type: 'tool-call', toolCallId: `call-${call}`, toolName: 'lookup', input: JSON.stringify({ key: `item-${call}` }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: USAGE,
        warnings: [],
      };
    },
  });
}

function worker(): RunnableWorker {
  const lookup = named(
    'lookup',
    tool({
      description: 'looks a key up',
      inputSchema: z.object({ key: z.string() }),
      execute: async ({ key }) => ({ key, value: `${key}:`.padEnd(1000, 'x') }),
    }),
  );
  return { name: 'bench', instructions: 'look things up', tools: [wrapWithDefaultApproval(lookup, { default: 'ask' })], maxSteps: STEPS + 1 };
}

async function baseline(): Promise<WorkerRunResult> {
  return runWorker(worker(), 'look up 20 items', { model: model(), onApproval: () => 'approve' });
}

async function deferred(ledger: string, sizes: number[]): Promise<WorkerRunResult> {
  const runnable = worker();
  const scripted = model();
  let result = await runWorker(runnable, 'look up 20 items', { model: scripted, onApproval: 'defer', stateSecret: SECRET });
  while (result.status === 'approval-required') {
    sizes.push(Buffer.byteLength(result.state ?? ''));
    const answers = Object.fromEntries((result.pending ?? []).map((request) => [request.id, 'approve' as const]));
    result = await resumeWorker(runnable, result.state!, answers, { model: scripted, stateSecret: SECRET, onApproval: 'defer', stateLedger: ledger });
  }
  return result;
}

export const benchmarks = {
  resume: async (): Promise<void> => {
    const ledger = mkdtempSync(join(tmpdir(), 'toolgate-bench-ledger-'));
    try {
      await baseline();
      await deferred(ledger, []);
      let plainMs = Number.POSITIVE_INFINITY;
      let deferredMs = Number.POSITIVE_INFINITY;
      let sizes: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        plainMs = Math.min(plainMs, await timeMs(baseline));
        const roundSizes: number[] = [];
        deferredMs = Math.min(deferredMs, await timeMs(() => deferred(ledger, roundSizes)));
        sizes = roundSizes;
      }
      printComparison(
        `a ${STEPS}-step run, every step approved (best of ${ROUNDS})`,
        [
          { name: 'runWorker + onApproval (baseline)', value: plainMs, unit: 'ms' },
          { name: `defer + ${STEPS} x resumeWorker`, value: deferredMs, unit: 'ms' },
        ],
        'runWorker + onApproval (baseline)',
      );
      printLine(`  resume overhead per step: ${((deferredMs - plainMs) / STEPS).toFixed(2)} ms`);
      const kib = (bytes: number | undefined) => `${((bytes ?? 0) / 1024).toFixed(1)} KiB`;
      printLine(`  state size after step 1: ${kib(sizes[0])}, step 10: ${kib(sizes[9])}, step ${STEPS}: ${kib(sizes[STEPS - 1])}`);
    } finally {
      rmSync(ledger, { recursive: true, force: true });
    }
  },
};
