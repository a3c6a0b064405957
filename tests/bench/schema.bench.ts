/**
 * Input-schema checks of executable tools on a 60 kB input, all in the same run: patterns a
 * backtracking engine needs quadratic or exponential time for (`(a+)+$`, `^(\w+\s?)*$`) against
 * the baseline `^a*$`. Patterns run on the linear-time engine, and the check runs off the
 * JavaScript thread: the figures are per check, and the event loop's longest stall during the
 * checks (perf_hooks' event-loop delay monitor) is printed beside them.
 */
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ExecutableToolRegistry } from '../../ts/src/index.js';
import { bestOf, printComparison, printLine } from './lib/report.js';

const INPUT_BYTES = 60_000;
const ROUNDS = 20;
const PATTERNS: Record<string, string> = {
  baseline: '^a*$',
  nested: '(a+)+$',
  words: '^(\\w+\\s?)*$',
};

function tool(dir: string, name: string, pattern: string): void {
  const path = join(dir, name);
  const schema = { type: 'object', properties: { q: { type: 'string', pattern } } };
  writeFileSync(path, `#!/bin/sh\n[ "$1" = description ] && cat <<'EOF'\n${JSON.stringify({ name, description: name, input_schema: schema })}\nEOF\n`);
  chmodSync(path, 0o755);
}

async function benchSchema(): Promise<void> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-bench-schema-')));
  try {
    const dir = join(root, 'tools');
    mkdirSync(dir);
    for (const [name, pattern] of Object.entries(PATTERNS)) tool(dir, name, pattern);
    const registry = new ExecutableToolRegistry({ dirs: [dir], workDir: root, cacheDir: join(root, 'cache') });
    await registry.refresh();
    const input = { q: `${'a'.repeat(INPUT_BYTES)}!` };
    const rows = [];
    for (const name of Object.keys(PATTERNS)) {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const value = await bestOf(ROUNDS, async () => {
        const refused = await registry.prepare(name, input).then(
          () => false,
          () => true,
        );
        if (!refused) throw new Error(`${name}: the input should not match`);
      });
      delay.disable();
      rows.push({ name: `${name} (${PATTERNS[name]})`, value, unit: 'ms/check' });
      printLine(`  ${name}: longest event-loop stall during the checks ${(delay.max / 1e6).toFixed(1)} ms`);
    }
    printComparison(`schema check of a ${INPUT_BYTES / 1000} kB input (best of ${ROUNDS})`, rows, `baseline (${PATTERNS.baseline})`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export const benchmarks = { schema: benchSchema };
