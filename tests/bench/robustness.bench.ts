/**
 * `npm run bench robustness`: the inputs of issue 13 that used to abort, hang or lose data, each
 * run in its own process (`lib/robustness-probe.ts`) so an abort or a hang is reported instead of
 * ending the run. Prints how long each took and what happened; the baseline is the same probe on
 * another build (run this on main and on a branch to compare). Not a test: nothing fails here.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const PROBES = [
  'glob-400k',
  'glob-nested-braces',
  'grep-a{1000}{1000}',
  'yaml-flow-16k',
  'yaml-flow-50k',
  'yaml-flow-map-16k',
  'yaml-flow-map-50k',
  'yaml-block-1m',
  'edits-200-parallel',
  'kill-9-temp-files',
  'read-round-trip',
  'import-never-settles',
];
const PROBE_TIMEOUT_MS = 90_000;

function runProbe(name: string): string {
  const started = process.hrtime.bigint();
  const child = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'lib', 'robustness-probe.ts'), name], {
    encoding: 'utf8',
    timeout: PROBE_TIMEOUT_MS,
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (child.error && (child.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') return `killed after ${ms.toFixed(0)} ms (hung)`;
  if (child.signal) return `process died from ${child.signal} after ${ms.toFixed(0)} ms: ${child.stderr.trim().split('\n').at(-1) ?? ''}`;
  const line = child.stdout.trim().split('\n').at(-1) ?? '';
  try {
    const { ms: probeMs, outcome } = JSON.parse(line) as { ms: number; outcome: string };
    return `${probeMs.toFixed(0).padStart(7)} ms  ${outcome}`;
  } catch {
    return `exit ${child.status}: ${child.stderr.trim().split('\n').slice(-3).join(' | ')}`;
  }
}

export const benchmarks = {
  robustness: async () => {
    console.log('\n## robustness probes (each in its own process)');
    for (const name of PROBES) console.log(`  ${name.padEnd(20)} ${runProbe(name)}`);
  },
};
