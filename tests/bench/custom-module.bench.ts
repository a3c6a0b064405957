/**
 * Start-up cost of `loadCustomTools` on examples/quickstart/tools.ts, each figure measured inside a
 * fresh Node process (a module is evaluated once per process, so only the first load matters):
 *
 * - baseline: importing the module's own dependencies (zod + ai) natively, the floor any loader pays;
 * - toolgate with a warm and with a cold transpile cache;
 * - tsx's `tsImport`, the other run-time TypeScript loader we could have used;
 * - toolgate plus the TypeScript compiler API for JSDoc, the other JSDoc extractor we could have used.
 *
 * Then, in-process: the JSDoc scanner against `ts.createSourceFile` + `getJSDocCommentsAndTags`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { jsDocOfExport, renderJsDoc, scanModuleDocs } from '../../ts/src/tools-module/jsdoc.js';
import { bestOf, printComparison } from './lib/report.js';

const ROOT = resolve(import.meta.dirname, '../..');
const MODULE = join(ROOT, 'examples/quickstart/tools.ts');
const ROUNDS = 7;

const LOADER = JSON.stringify(join(ROOT, 'dist/tools-module/load-custom-tools.js'));
const TARGET = JSON.stringify(MODULE);
const timed = (body: string) =>
  `const started = performance.now();\n${body}\nprocess.stdout.write(String(performance.now() - started));`;

const VARIANTS: Record<string, string> = {
  'zod + ai, native import': timed(`await import('zod'); await import('ai');`),
  'toolgate, warm cache': timed(`const { loadCustomTools } = await import(${LOADER}); await loadCustomTools(${TARGET});`),
  'toolgate, cold cache': timed(`const { loadCustomTools } = await import(${LOADER}); await loadCustomTools(${TARGET});`),
  'tsx tsImport (no JSDoc)': timed(`const { tsImport } = await import('tsx/esm/api'); await tsImport(${TARGET}, import.meta.url);`),
  'toolgate + TypeScript API JSDoc': timed(
    `const { loadCustomTools } = await import(${LOADER}); await loadCustomTools(${TARGET});
     const ts = (await import('typescript')).default;
     const { readFileSync } = await import('node:fs');
     const file = ts.createSourceFile('tools.ts', readFileSync(${TARGET}, 'utf8'), ts.ScriptTarget.Latest, true);
     for (const statement of file.statements) ts.getJSDocCommentsAndTags(statement);`,
  ),
};

function runOnce(script: string, cacheRoot: string): number {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, XDG_CACHE_HOME: cacheRoot },
    encoding: 'utf8',
  });
  return Number(out);
}

export async function benchCustomModuleStartup(): Promise<void> {
  execFileSync('npm', ['run', '--silent', 'build:ts'], { cwd: ROOT, stdio: 'inherit' });
  const warmCache = mkdtempSync(join(tmpdir(), 'toolgate-bench-cache-'));
  try {
    runOnce(VARIANTS['toolgate, warm cache'] as string, warmCache); // fill the cache
    const best: Record<string, number> = {};
    // Rounds interleave the variants so that drift on a shared machine hits all alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, script] of Object.entries(VARIANTS)) {
        const cold = name.includes('cold');
        const cacheRoot = cold ? mkdtempSync(join(tmpdir(), 'toolgate-bench-cold-')) : warmCache;
        try {
          best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, runOnce(script, cacheRoot));
        } finally {
          if (cold) rmSync(cacheRoot, { recursive: true, force: true });
        }
      }
    }
    printComparison(
      `first load of examples/quickstart/tools.ts in a fresh process (best of ${ROUNDS} interleaved rounds)`,
      Object.entries(best).map(([name, value]) => ({ name, value, unit: 'ms' })),
      'zod + ai, native import',
    );
  } finally {
    rmSync(warmCache, { recursive: true, force: true });
  }
}

export async function benchJsDocExtraction(): Promise<void> {
  const source = readFileSync(MODULE, 'utf8');
  const iterations = 2000;
  const scanner = await bestOf(ROUNDS, () => {
    for (let i = 0; i < iterations; i++) renderJsDoc(jsDocOfExport(scanModuleDocs(source), 'calculateFibonacci') ?? '');
  });
  const typescript = await bestOf(ROUNDS, () => {
    for (let i = 0; i < iterations; i++) {
      const file = ts.createSourceFile('tools.ts', source, ts.ScriptTarget.Latest, true);
      for (const statement of file.statements) ts.getJSDocCommentsAndTags(statement);
    }
  });
  printComparison(
    `JSDoc of examples/quickstart/tools.ts, in-process and warm (${iterations} extractions)`,
    [
      { name: 'TypeScript createSourceFile', value: (typescript * 1000) / iterations, unit: 'µs/file' },
      { name: 'toolgate JSDoc scanner', value: (scanner * 1000) / iterations, unit: 'µs/file' },
    ],
    'TypeScript createSourceFile',
  );
}

export const benchmarks = { 'custom-module': benchCustomModuleStartup, jsdoc: benchJsDocExtraction };
