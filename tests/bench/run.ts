/**
 * `npm run bench [name...]`: runs the benchmarks (all, or the named ones) and prints each
 * figure next to its baseline from the same run. Not a test: nothing here passes or fails.
 *
 * Every `tests/bench/*.bench.ts` exports `benchmarks: Record<string, () => Promise<void>>`.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type Benchmarks = Record<string, () => Promise<void>>;

const all: Benchmarks = {};
for (const file of readdirSync(import.meta.dirname).filter((name) => name.endsWith('.bench.ts')).sort()) {
  const module = (await import(pathToFileURL(join(import.meta.dirname, file)).href)) as { benchmarks: Benchmarks };
  Object.assign(all, module.benchmarks);
}

const selected = process.argv.slice(2);
for (const name of selected) {
  if (!(name in all)) {
    console.error(`unknown benchmark '${name}'; available: ${Object.keys(all).join(', ')}`);
    process.exit(2);
  }
}
console.log(`toolgate benchmarks — node ${process.version}, ${process.platform}-${process.arch}`);
for (const [name, run] of Object.entries(all)) {
  if (selected.length === 0 || selected.includes(name)) await run();
}
