/**
 * One robustness probe per process (`node --import tsx robustness-probe.ts <name>`), so that a
 * probe which aborts or hangs the process is reported by the parent instead of taking it down.
 * Prints one JSON line: `{ "ms": <duration>, "outcome": <what happened> }`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTools, loadCustomTools } from '../../../ts/src/index.js';
import { loadWorkerSpec } from '../../../ts/src/worker/load-worker.js';

type Probe = (work: string) => Promise<string>;

const errorCode = (error: unknown) => `${(error as { code?: string }).code ?? 'error'}: ${String((error as Error).message).slice(0, 120)}`;

async function outcome(run: () => Promise<unknown> | unknown): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    return errorCode(error);
  }
}

function nestedWorker(work: string, depth: number, form: 'flow' | 'flow-map' | 'block'): string {
  const nested = {
    flow: `${'['.repeat(depth)}${']'.repeat(depth)}`,
    'flow-map': `${'{a: '.repeat(depth)}x${'}'.repeat(depth)}`,
    block: `\n  ${'- '.repeat(depth)}x`,
  }[form];
  const file = join(work, 'deep.yaml');
  writeFileSync(file, `name: deep\nmodel: openai:gpt-4o\ninstructions: hi\nnested: ${nested}\n`);
  return file;
}

const TEMP_FILE = /\.toolgate-.*\.tmp$/;

function tempFilesIn(dir: string): number {
  return readdirSync(dir).filter((name) => TEMP_FILE.test(name)).length;
}

const probes: Record<string, Probe> = {
  'glob-400k': (work) => outcome(() => new FileTools(work).glob({ pattern: 'a'.repeat(400_000) })),
  'glob-nested-braces': (work) => outcome(() => new FileTools(work).glob({ pattern: `${'{a,'.repeat(5000)}b${'}'.repeat(5000)}` })),
  'grep-a{1000}{1000}': (work) => {
    writeFileSync(join(work, 'x.txt'), 'aaaa\n');
    return outcome(() => new FileTools(work).grep({ pattern: 'a{1000}{1000}' }));
  },
  'yaml-flow-16k': (work) => outcome(() => loadWorkerSpec(nestedWorker(work, 16_000, 'flow'))),
  'yaml-flow-50k': (work) => outcome(() => loadWorkerSpec(nestedWorker(work, 50_000, 'flow'))),
  'yaml-flow-map-16k': (work) => outcome(() => loadWorkerSpec(nestedWorker(work, 16_000, 'flow-map'))),
  'yaml-flow-map-50k': (work) => outcome(() => loadWorkerSpec(nestedWorker(work, 50_000, 'flow-map'))),
  'yaml-block-1m': (work) => outcome(() => loadWorkerSpec(nestedWorker(work, 1_000_000, 'block'))),
  'edits-200-parallel': async (work) => {
    const lines = Array.from({ length: 200 }, (_, i) => `line ${i}`);
    writeFileSync(join(work, 'f.txt'), `${lines.join('\n')}\n`);
    const files = new FileTools(work);
    const results = await Promise.allSettled(
      lines.map((line) => files.edit({ path: 'f.txt', oldText: `${line}\n`, newText: `${line} edited\n` })),
    );
    const reported = results.filter((result) => result.status === 'fulfilled').length;
    const present = readFileSync(join(work, 'f.txt'), 'utf8').split('\n').filter((line) => line.endsWith(' edited')).length;
    return `${reported} reported success, ${present} present in the file`;
  },
  'kill-9-temp-files': async (work) => {
    const writer = `
      import { FileTools } from ${JSON.stringify(new URL('../../../ts/src/index.js', import.meta.url).href)};
      const files = new FileTools(${JSON.stringify(work)});
      const big = 'x'.repeat(8 * 1024 * 1024);
      let n = 0;
      const loop = async (id) => { for (;;) await files.write('out' + id + '-' + (n++ % 3) + '.txt', big); };
      for (let id = 0; id < 4; id++) loop(id);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writer], { stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 4000));
    let left = 0;
    for (let attempt = 0; attempt < 20 && left === 0; attempt++) {
      left = tempFilesIn(work);
      if (left === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const afterKill = tempFilesIn(work);
    await new FileTools(work).write('next.txt', 'x');
    return `${afterKill} temp files after SIGKILL, ${tempFilesIn(work)} after the next write in that directory`;
  },
  'read-round-trip': async (work) => {
    const files = new FileTools(work);
    const cases: Record<string, string> = { 'no-final-newline': 'a\nb', crlf: 'a\r\nb\r\n', empty: '', 'only-newline': '\n' };
    const changed: string[] = [];
    for (const [name, text] of Object.entries(cases)) {
      writeFileSync(join(work, name), text);
      const read = await files.read({ path: name, lineNumbers: false });
      await files.write(name, read.text);
      if (readFileSync(join(work, name), 'utf8') !== text) changed.push(name);
    }
    return changed.length === 0 ? 'every file unchanged by read -> write' : `changed by read -> write: ${changed.join(', ')}`;
  },
  'import-never-settles': async (work) => {
    const module = join(work, 'tools.ts');
    writeFileSync(module, 'await new Promise(() => {});\nexport const x = 1;\n');
    const limit = 40_000;
    const hung = new Promise<string>((resolve) => setTimeout(() => resolve(`still pending after ${limit} ms`), limit));
    return Promise.race([outcome(() => loadCustomTools(module)), hung]);
  },
};

const name = process.argv[2] ?? '';
const probe = probes[name];
if (!probe) {
  console.error(`unknown probe '${name}'; available: ${Object.keys(probes).join(', ')}`);
  process.exit(2);
}
const work = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-probe-')));
mkdirSync(work, { recursive: true });
const started = process.hrtime.bigint();
const result = await probe(work);
const ms = Number(process.hrtime.bigint() - started) / 1e6;
rmSync(work, { recursive: true, force: true });
console.log(JSON.stringify({ ms, outcome: result }));
process.exit(0);
