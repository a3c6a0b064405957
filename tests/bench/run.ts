/**
 * `npm run bench [name...]`: runs the benchmarks (all, or the named ones) and prints each
 * figure next to its baseline from the same run. Not a test: nothing here passes or fails.
 */
import { benchExec, benchPathValidator } from './exec.js';

const BENCHMARKS: Record<string, () => Promise<void>> = {
  exec: benchExec,
  path: benchPathValidator,
};

const selected = process.argv.slice(2);
for (const name of selected) {
  if (!(name in BENCHMARKS)) {
    console.error(`unknown benchmark '${name}'; available: ${Object.keys(BENCHMARKS).join(', ')}`);
    process.exit(2);
  }
}
console.log(`toolgate benchmarks — node ${process.version}, ${process.platform}-${process.arch}`);
for (const [name, run] of Object.entries(BENCHMARKS)) {
  if (selected.length === 0 || selected.includes(name)) await run();
}
