/**
 * Exec overhead of a trivial program (/bin/true), sequential and 32 concurrent:
 * toolgate `exec` vs Node's `child_process.execFile` vs Rust's own `std::process::Command` loop
 * (crates/toolgate-core/examples/spawn_baseline.rs), all in the same run.
 * Also: PathValidator resolutions per second vs `fs.realpathSync` + a prefix check.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { exec, PathValidator } from '../../ts/src/index.js';
import { REPO_ROOT } from '../helpers/checkout.js';
import { bestOf, printComparison, timeMs } from './lib/report.js';

const execFileAsync = promisify(execFile);
const PROGRAM = '/bin/true';
const SEQUENTIAL_CALLS = 1000;
const CONCURRENT_CALLS = 2000;
const CONCURRENCY = 32;
const ROUNDS = 5;

async function inBatches(calls: number, concurrency: number, one: () => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < calls) await one();
    }),
  );
}

/** Builds the bare Rust spawn loop (release); its path. */
export function buildRustBaseline(): string {
  execFileSync('cargo', ['build', '--quiet', '--release', '-p', 'toolgate-core', '--example', 'spawn_baseline'], {
    stdio: 'inherit',
    cwd: REPO_ROOT,
  });
  return join(process.env.CARGO_TARGET_DIR ? resolve(REPO_ROOT, process.env.CARGO_TARGET_DIR) : join(REPO_ROOT, 'target'), 'release/examples/spawn_baseline');
}

/** Wall milliseconds of `calls` spawns of `program` by the bare Rust loop. */
export function rustBaselineMs(binary: string, calls: number, concurrency: number, program = PROGRAM): number {
  const out = execFileSync(binary, [program, String(calls), String(concurrency)], { encoding: 'utf8' });
  return Number(out.trim());
}

export async function benchExec(): Promise<void> {
  const rust = buildRustBaseline();
  const toolgate = () => exec({ command: PROGRAM });
  const node = () => execFileAsync(PROGRAM);
  await inBatches(200, 8, toolgate); // warm up the runtime and the page cache
  await inBatches(200, 8, node);

  for (const [title, calls, concurrency] of [
    ['exec /bin/true, sequential', SEQUENTIAL_CALLS, 1],
    [`exec /bin/true, ${CONCURRENCY} concurrent`, CONCURRENT_CALLS, CONCURRENCY],
  ] as const) {
    // Rounds interleave the three contenders so that drift on a shared machine hits all alike;
    // each keeps its best round.
    let toolgateMs = Number.POSITIVE_INFINITY;
    let nodeMs = Number.POSITIVE_INFINITY;
    let rustMs = Number.POSITIVE_INFINITY;
    for (let round = 0; round < ROUNDS; round++) {
      toolgateMs = Math.min(toolgateMs, await timeMs(() => inBatches(calls, concurrency, toolgate)));
      nodeMs = Math.min(nodeMs, await timeMs(() => inBatches(calls, concurrency, node)));
      rustMs = Math.min(rustMs, rustBaselineMs(rust, calls, concurrency));
    }
    printComparison(
      `${title} (${calls} calls, best of ${ROUNDS} interleaved rounds)`,
      [
        { name: 'toolgate exec', value: toolgateMs / calls, unit: 'ms/call' },
        { name: 'node child_process.execFile', value: nodeMs / calls, unit: 'ms/call' },
        { name: 'rust std::process::Command', value: rustMs / calls, unit: 'ms/call' },
      ],
      'toolgate exec',
    );
  }
}

export async function benchPathValidator(): Promise<void> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-bench-')));
  try {
    mkdirSync(join(root, 'src/a/b'), { recursive: true });
    writeFileSync(join(root, 'src/a/b/file.ts'), '');
    const validator = new PathValidator(root);
    const resolutions = 100_000;
    const toolgateMs = await bestOf(ROUNDS, () => {
      for (let i = 0; i < resolutions; i++) validator.resolve('src/a/b/file.ts');
    });
    const naiveMs = await bestOf(ROUNDS, () => {
      for (let i = 0; i < resolutions; i++) {
        const real = realpathSync(resolve(root, 'src/a/b/file.ts'));
        if (!real.startsWith(root + sep)) throw new Error('outside');
      }
    });
    printComparison(
      `PathValidator.resolve('src/a/b/file.ts'), ${resolutions} resolutions`,
      [
        { name: 'toolgate PathValidator', value: (toolgateMs * 1000) / resolutions, unit: 'µs/op' },
        { name: 'node realpathSync + prefix check', value: (naiveMs * 1000) / resolutions, unit: 'µs/op' },
      ],
      'toolgate PathValidator',
    );
    console.log(`  toolgate PathValidator: ${Math.round(resolutions / (toolgateMs / 1000))} resolutions/s`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

export const benchmarks = { exec: benchExec, path: benchPathValidator };
