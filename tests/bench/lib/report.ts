/** Small helpers shared by the benchmarks: timing, tables and ratios. Not a test framework. */

export async function timeMs(run: () => Promise<unknown> | unknown): Promise<number> {
  const started = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** The best (lowest) of `rounds` timings; the minimum is the least noisy figure on a busy box. */
export async function bestOf(rounds: number, run: () => Promise<unknown> | unknown): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < rounds; round++) best = Math.min(best, await timeMs(run));
  return best;
}

export interface Row {
  name: string;
  value: number;
  unit: string;
}

/**
 * Prints rows and, for each, its ratio to the baseline row: `x faster` when the row is the
 * faster one. Lower values are better.
 */
export function printComparison(title: string, rows: readonly Row[], baseline: string): void {
  const base = rows.find((row) => row.name === baseline);
  console.log(`\n## ${title}`);
  for (const row of rows) {
    let ratio = '';
    if (base && row !== base) {
      const factor = base.value / row.value;
      ratio = factor >= 1 ? `${factor.toFixed(2)}x faster than ${base.name}` : `${(1 / factor).toFixed(2)}x slower than ${base.name}`;
    }
    console.log(`  ${row.name.padEnd(34)} ${row.value.toFixed(3).padStart(10)} ${row.unit.padEnd(10)} ${ratio}`);
  }
}

export function printLine(text: string): void {
  console.log(text);
}
