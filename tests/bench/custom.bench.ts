/**
 * Discovery of 200 generated protocol tools (`#!/bin/sh` scripts), all in the same run:
 * - naive (the baseline): spawn every `<tool> description` one after the other and parse its
 *   JSON, written here with toolgate's own `exec()` so that the spawner is the same and only the
 *   algorithm differs;
 * - cold: a new registry with an empty cache (descriptions run concurrently, bounded);
 * - warm: a new registry over the filled cache (what a new process pays: read the cache file,
 *   `stat` every tool, nothing spawned);
 * - refresh: the same registry refreshed when nothing changed (only `stat` calls).
 * Targets from the issue: warm at least 100x faster than naive, cold at least 1.7x on 2 cores.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec, ExecutableToolRegistry } from '../../ts/src/index.js';
import { bestOf, printComparison, printLine } from './lib/report.js';

const TOOLS = 200;
const SLOW_ROUNDS = 3;
const FAST_ROUNDS = 20;

function generateTools(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (let index = 0; index < TOOLS; index++) {
    const name = `tool_${String(index).padStart(3, '0')}`;
    const path = join(dir, name);
    writeFileSync(
      path,
      `#!/bin/sh
case "$1" in
  description)
    cat <<'EOF'
{"name": "${name}", "description": "Generated tool number ${index}", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}, "count": {"type": "integer", "minimum": 0}}, "required": ["text"]}}
EOF
    ;;
  run) cat ;;
esac
`,
    );
    chmodSync(path, 0o755);
  }
}

/** The baseline: one `description` after the other, as a simple implementation would. */
async function naiveDiscovery(dir: string): Promise<number> {
  let found = 0;
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' };
  for (const name of readdirSync(dir).sort()) {
    const result = await exec({ command: join(dir, name), args: ['description'], cwd: dir, env, timeoutMs: 5000 });
    const description = JSON.parse(result.stdout) as { name?: string };
    if (description.name) found++;
  }
  return found;
}

function expectAll(found: number, what: string): void {
  if (found !== TOOLS) throw new Error(`${what} found ${found} tools, expected ${TOOLS}`);
}

export async function benchDiscovery(): Promise<void> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-bench-discovery-')));
  try {
    const dir = join(root, 'tools');
    generateTools(dir);
    const workDir = root;
    let coldRound = 0;
    const cold = async () => {
      const registry = new ExecutableToolRegistry({ dirs: [dir], workDir, cacheDir: join(root, `cold-cache-${coldRound++}`) });
      const discovery = await registry.refresh();
      expectAll(discovery.tools.length, 'cold');
      if (discovery.stats.spawned !== TOOLS) throw new Error(`cold spawned ${discovery.stats.spawned}`);
    };
    const warmCache = join(root, 'warm-cache');
    await new ExecutableToolRegistry({ dirs: [dir], workDir, cacheDir: warmCache }).refresh();
    const warm = async () => {
      const discovery = await new ExecutableToolRegistry({ dirs: [dir], workDir, cacheDir: warmCache }).refresh();
      expectAll(discovery.tools.length, 'warm');
      if (discovery.stats.spawned !== 0) throw new Error(`warm spawned ${discovery.stats.spawned}`);
    };
    const live = new ExecutableToolRegistry({ dirs: [dir], workDir, cacheDir: warmCache });
    await live.refresh();
    const refresh = async () => {
      const discovery = await live.refresh();
      expectAll(discovery.tools.length, 'refresh');
      if (discovery.stats.spawned !== 0) throw new Error(`refresh spawned ${discovery.stats.spawned}`);
    };
    const naive = async () => expectAll(await naiveDiscovery(dir), 'naive');

    // Warm-up of the page cache and the runtime, then interleaved rounds; each keeps its best.
    await naive();
    await cold();
    let naiveMs = Number.POSITIVE_INFINITY;
    let coldMs = Number.POSITIVE_INFINITY;
    for (let round = 0; round < SLOW_ROUNDS; round++) {
      naiveMs = Math.min(naiveMs, await bestOf(1, naive));
      coldMs = Math.min(coldMs, await bestOf(1, cold));
    }
    const warmMs = await bestOf(FAST_ROUNDS, warm);
    const refreshMs = await bestOf(FAST_ROUNDS, refresh);

    printComparison(
      `discovery of ${TOOLS} protocol tools (/bin/sh), ${availableParallelism()} cores; naive = sequential toolgate exec() of every description`,
      [
        { name: 'naive (sequential spawns)', value: naiveMs, unit: 'ms' },
        { name: 'cold (concurrent, empty cache)', value: coldMs, unit: 'ms' },
        { name: 'warm (new registry, disk cache)', value: warmMs, unit: 'ms' },
        { name: 'refresh (same registry, stat only)', value: refreshMs, unit: 'ms' },
      ],
      'naive (sequential spawns)',
    );
    printLine(
      `  targets: warm >= 100x naive: ${(naiveMs / warmMs).toFixed(1)}x ${naiveMs / warmMs >= 100 ? 'met' : 'NOT met'}; ` +
        `cold >= 1.7x naive: ${(naiveMs / coldMs).toFixed(2)}x ${naiveMs / coldMs >= 1.7 ? 'met' : 'NOT met'}`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export const benchmarks = { discovery: benchDiscovery };
