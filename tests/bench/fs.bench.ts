/**
 * File tools on one generated corpus (>= 20,000 files, >= 200 MB, deterministic, generated once
 * into a cache directory outside the repository and reused; see `corpusDir`), each against a
 * named baseline in the same run:
 * - grep_search (addon, in-process ripgrep crates) vs Debian's `rg` on the same pattern and tree;
 * - glob_search vs fast-glob (plain, and with stats + newest-first sort, which is what glob_search returns);
 * - directory_tree over the whole tree vs GNU `find -printf` and a Node recursive readdir + lstat.
 */
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fastGlob from 'fast-glob';
import { FileTools } from '../../ts/src/index.js';
import { printComparison, timeMs } from './lib/report.js';

const execFileAsync = promisify(execFile);
/**
 * `$TOOLGATE_BENCH_CORPUS`, else `$XDG_CACHE_HOME/toolgate/bench-corpus` (default
 * `~/.cache/toolgate/bench-corpus`). Never inside the repository: tests that walk the repository
 * must not find 21,000 generated files there.
 */
function corpusDir(): string {
  if (process.env.TOOLGATE_BENCH_CORPUS) return process.env.TOOLGATE_BENCH_CORPUS;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'toolgate', 'bench-corpus');
}

const CORPUS = corpusDir();
/** Where earlier versions generated the corpus (inside the test tree); removed when found. */
const OLD_CORPUS = join(import.meta.dirname, '.corpus');
const CORPUS_VERSION = '1';
const TOP_DIRS = 20;
const SUB_DIRS = 25;
const FILES_PER_DIR = 42; // 21,000 files
const ROUNDS = 7;
const RG = '/usr/bin/rg';
const EXTENSIONS = ['ts', 'rs', 'md', 'json', 'txt'];
const WORDS = (
  'const let fn return async await import export from struct impl match error result value config ' +
  'handler request response buffer stream parse render cache index token session retry timeout'
).split(' ');

/** mulberry32: a small seeded PRNG, so every run builds the same corpus. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function ensureCorpus(): { files: number; bytes: number } {
  if (existsSync(join(OLD_CORPUS, '.corpus-version'))) {
    console.log(`removing the corpus an earlier version generated inside the repository (${OLD_CORPUS})`);
    rmSync(OLD_CORPUS, { recursive: true, force: true });
  }
  const stamp = join(CORPUS, '.corpus-version');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').startsWith(`${CORPUS_VERSION} `)) {
    const [, files, bytes] = readFileSync(stamp, 'utf8').trim().split(' ');
    return { files: Number(files), bytes: Number(bytes) };
  }
  console.log(`generating the corpus in ${CORPUS} (once)...`);
  rmSync(CORPUS, { recursive: true, force: true });
  const next = random(42);
  let files = 0;
  let bytes = 0;
  for (let top = 0; top < TOP_DIRS; top++) {
    for (let sub = 0; sub < SUB_DIRS; sub++) {
      const dir = join(CORPUS, `pkg${top}`, `mod${sub}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < FILES_PER_DIR; f++) {
        const lines: string[] = [];
        const target = 2_000 + Math.floor(next() * 16_000); // ~10 KB on average
        let size = 0;
        while (size < target) {
          const count = 3 + Math.floor(next() * 12);
          let line = '    '.repeat(Math.floor(next() * 3));
          for (let w = 0; w < count; w++) line += `${WORDS[Math.floor(next() * WORDS.length)]}${w % 4 === 3 ? '(' : ' '}`;
          if (next() < 0.0004) line += ' toolgate_needle_marker';
          lines.push(line);
          size += line.length + 1;
        }
        const body = `${lines.join('\n')}\n`;
        writeFileSync(join(dir, `file${f}.${EXTENSIONS[f % EXTENSIONS.length]}`), body);
        files += 1;
        bytes += body.length;
      }
    }
  }
  writeFileSync(stamp, `${CORPUS_VERSION} ${files} ${bytes}\n`);
  return { files, bytes };
}

/** Interleaved rounds, best of each: drift on a shared machine hits every contender alike. */
async function race(contenders: Record<string, () => Promise<unknown>>): Promise<Record<string, number>> {
  const best: Record<string, number> = {};
  for (const run of Object.values(contenders)) await run(); // warm the page cache and the code
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(contenders)) {
      best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, await timeMs(run));
    }
  }
  return best;
}

function rows(best: Record<string, number>) {
  return Object.entries(best).map(([name, value]) => ({ name, value, unit: 'ms' }));
}

function describeCorpus(): void {
  const { files, bytes } = ensureCorpus();
  console.log(`\ncorpus: ${CORPUS}: ${files} files, ${(bytes / 1024 / 1024).toFixed(0)} MiB`);
}

export async function benchGrep(): Promise<void> {
  describeCorpus();
  const files = new FileTools(CORPUS);
  for (const [label, pattern] of [
    ['rare literal', 'toolgate_needle_marker'],
    ['regex, many matches', 'retry\\(\\w+ timeout'],
  ] as const) {
    const ours = await files.grep({ pattern, maxResults: 50 });
    const theirs = await execFileAsync(RG, ['-n', '--no-require-git', '--no-ignore-parent', '--', pattern, '.'], {
      cwd: CORPUS,
      maxBuffer: 1024 ** 3,
    });
    const rgLines = theirs.stdout.split('\n').filter(Boolean).length;
    if (rgLines !== ours.totalMatches) throw new Error(`rg found ${rgLines} lines, grep_search ${ours.totalMatches}`);
    const best = await race({
      'toolgate grep_search': () => files.grep({ pattern, maxResults: 50 }),
      'rg (Debian ripgrep)': () =>
        execFileAsync(RG, ['-n', '--no-require-git', '--no-ignore-parent', '--', pattern, '.'], { cwd: CORPUS, maxBuffer: 1024 ** 3 }),
    });
    printComparison(
      `grep /${pattern}/ (${label}): ${ours.totalMatches} matching lines in ${ours.filesWithMatches} files, best of ${ROUNDS}`,
      rows(best),
      'rg (Debian ripgrep)',
    );
    console.log(`  ratio grep_search / rg wall time: ${(best['toolgate grep_search']! / best['rg (Debian ripgrep)']!).toFixed(2)}x (target <= 1.3x)`);
  }
}

export async function benchGlob(): Promise<void> {
  describeCorpus();
  const files = new FileTools(CORPUS);
  const ignore = ['**/.git/**', '**/node_modules/**', '**/vendor/**', '**/__pycache__/**', '**/.venv/**', '**/dist/**', '**/build/**'];
  for (const pattern of ['**/*.ts', 'pkg1*/**/file1*.{rs,md}']) {
    const ours = await files.glob({ pattern, maxResults: 100 });
    const theirs = await fastGlob(pattern, { cwd: CORPUS, ignore });
    if (theirs.length !== ours.total) throw new Error(`fast-glob found ${theirs.length}, glob_search ${ours.total}`);
    const best = await race({
      'toolgate glob_search': () => files.glob({ pattern, maxResults: 100 }),
      'fast-glob + stats + sort': async () => {
        const entries = await fastGlob(pattern, { cwd: CORPUS, ignore, stats: true });
        entries.sort((a, b) => (b.stats?.mtimeMs ?? 0) - (a.stats?.mtimeMs ?? 0) || a.path.localeCompare(b.path));
      },
      'fast-glob (names only)': () => fastGlob(pattern, { cwd: CORPUS, ignore }),
    });
    printComparison(`glob '${pattern}': ${ours.total} files, best of ${ROUNDS}`, rows(best), 'toolgate glob_search');
    const equal = best['fast-glob + stats + sort']! / best['toolgate glob_search']!;
    const plain = best['fast-glob (names only)']! / best['toolgate glob_search']!;
    console.log(`  glob_search speed-up: ${equal.toFixed(2)}x vs fast-glob with the same output, ${plain.toFixed(2)}x vs names only (target >= 2x)`);
  }
}

export async function benchTree(): Promise<void> {
  describeCorpus();
  const files = new FileTools(CORPUS);
  const ours = await files.tree({ maxDepth: 10 });
  const best = await race({
    'toolgate directory_tree': () => files.tree({ maxDepth: 10 }),
    'find -printf (GNU findutils)': () => execFileAsync('find', ['.', '-printf', '%y %s %p\n'], { cwd: CORPUS, maxBuffer: 1024 ** 3 }),
    'node readdir(recursive) + lstat': async () => {
      for (const entry of readdirSync(CORPUS, { recursive: true, withFileTypes: true })) {
        if (entry.isFile()) lstatSync(join(entry.parentPath, entry.name));
      }
    },
  });
  printComparison(
    `directory_tree of the whole corpus (every directory walked; the drawing is capped at 2000 lines: ${ours.directories} directories, ${ours.files} files drawn), best of ${ROUNDS}`,
    rows(best),
    'toolgate directory_tree',
  );
}

export const benchmarks = { grep: benchGrep, glob: benchGlob, tree: benchTree };
