/**
 * Worker files for the Temporal tests: a worker directory with a tools module whose tools leave
 * a side effect that can be counted (a line per run in `counter.txt`), a scripted model, and an
 * audit log.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptedTurn } from '../../ts/src/model/script.js';
import { tempDir } from '../helpers/fs.js';

/** The AI SDK, imported by absolute URL: the tools module lives in a temporary directory. */
const AI = import.meta.resolve('ai');

const TOOLS = `import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { jsonSchema } from ${JSON.stringify(AI)};

const counter = new URL('./counter.txt', import.meta.url);
const schema = jsonSchema({ type: 'object', properties: { n: { type: 'number' }, note: { type: 'string' } }, required: ['n'], additionalProperties: false });

/** Adds a line to counter.txt: one line per time the tool ran. */
export const bump = {
  name: 'bump',
  description: 'Adds n to the counter',
  inputSchema: schema,
  execute: async ({ n }) => {
    appendFileSync(counter, \`\${n}\\n\`);
    return \`bumped \${n}\`;
  },
};

/** Adds a line, then takes a minute (long enough to kill its worker in the middle). */
export const slowBump = {
  name: 'slowBump',
  description: 'Adds n to the counter, slowly',
  inputSchema: schema,
  execute: async ({ n }, { abortSignal }) => {
    appendFileSync(counter, \`\${n}\\n\`);
    await sleep(60_000, undefined, { signal: abortSignal });
    return \`slowly bumped \${n}\`;
  },
};
`;

export interface WorkerDir {
  dir: string;
  /** The worker file (absolute). */
  file: string;
  /** How many times `bump` / `slowBump` ran. */
  runs(): number;
  audit(): Record<string, unknown>[];
}

/**
 * A worker directory: `worker.yaml` (model `scripted:./script.json`, audit log `audit.jsonl`,
 * the custom tools of `tools.mjs` with `approval` as given, plus `extra` YAML), the script.
 */
export function workerDir(turns: ScriptedTurn[], options: { approval?: string; extra?: string } = {}): WorkerDir {
  const dir = tempDir('toolgate-temporal-');
  writeFileSync(join(dir, 'tools.mjs'), TOOLS);
  writeFileSync(join(dir, 'script.json'), JSON.stringify({ turns }, null, 2));
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    [
      'name: durable',
      'model: scripted:./script.json',
      'instructions: Bump the counter when asked.',
      'audit: { file: ./audit.jsonl }',
      'toolsets:',
      '  custom:',
      '    module: ./tools.mjs',
      `    approval: { default: ${options.approval ?? 'ask'} }`,
      options.extra ?? '',
    ].join('\n'),
  );
  const read = (name: string) => {
    try {
      return readFileSync(join(dir, name), 'utf8');
    } catch {
      return '';
    }
  };
  return {
    dir,
    file,
    runs: () => read('counter.txt').split('\n').filter(Boolean).length,
    audit: () =>
      read('audit.jsonl')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

export const bump = (n: number, toolName = 'bump', note?: string) => ({ toolName, input: note === undefined ? { n } : { n, note } });
export const done = (result: string): ScriptedTurn => ({ toolCalls: [{ toolName: 'task_completion', input: { result } }] });
