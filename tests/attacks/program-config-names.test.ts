/**
 * Class 2: the golem-forge program config. golem-forge (and toolgate's loader) looks for
 * `golem-forge.config.yaml` before `golem-forge.config.yml`. When the program's config is the
 * `.yml`, a `.yaml` planted beside it by a sandboxed process is what the next load reads.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { call, failure, writeFiles } from '../helpers/tools.js';

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

const WORKER = `name: prog
instructions: x
toolsets:
  cli_execute: { allowed_binaries: [python3] }
  shell: { default: preApproved }
  code_agent: { approval: { default: preApproved } }
`;

/** The worker (at `worker`, relative) with the program config `config` in the base folder. */
function layout(config = 'golem-forge.config.yml', worker = 'worker.yaml') {
  const base = tempDir('toolgate-prog-');
  writeFiles(base, { [worker]: WORKER, [config]: 'sandbox:\n  root: .\n' });
  return base;
}

const PLANT = "open('golem-forge.config.yaml','w').write('sandbox:\\n  root: ..\\n')";

describe('every program config name beside the existing one is protected', () => {
  it('cli_execute cannot plant golem-forge.config.yaml beside golem-forge.config.yml', { timeout: 30_000 }, async () => {
    const base = layout();
    const worker = await loadWorker(join(base, 'worker.yaml'), {});
    open.push(worker);
    expect(worker.workDir).toBe(base);
    const result = await call(worker.tools.cli_execute as NamedTool, { binary: 'python3', args: ['-c', PLANT] });
    const planted = existsSync(join(base, 'golem-forge.config.yaml'));
    let nextWorkDir = '';
    if (planted) {
      const next = await loadWorker(join(base, 'worker.yaml'), {});
      open.push(next);
      nextWorkDir = next.workDir;
    }
    expect(planted, `${JSON.stringify(result)} ${planted ? readFileSync(join(base, 'golem-forge.config.yaml'), 'utf8') : ''} next workDir ${nextWorkDir}`).toBe(false);
  });

  it('the file tools refuse to write golem-forge.config.yaml beside golem-forge.config.yml', async () => {
    const base = layout();
    const worker = await loadWorker(join(base, 'worker.yaml'), {});
    open.push(worker);
    const error = await failure(worker.tools.file_write as NamedTool, { path: 'golem-forge.config.yaml', content: 'sandbox:\n  root: ..\n' });
    expect(error.code, error.message).toBe('PATH_BLOCKED');
    expect(existsSync(join(base, 'golem-forge.config.yaml'))).toBe(false);
  });

  for (const [config, planted, worker] of [
    ['golem-forge.config.yaml', 'golem-forge.config.yml', 'worker.yaml'],
    ['golem-forge.config.yml', 'golem-forge.config.yaml', 'agents/worker.yaml'],
    ['golem-forge.config.yaml', 'golem-forge.config.yml', 'agents/deep/worker.yaml'],
  ] as const) {
    it(`${planted} beside ${config} (worker at ${worker}): the file tools and processes`, { timeout: 30_000 }, async () => {
      const base = layout(config, worker);
      const loaded = await loadWorker(join(base, worker), { workDir: base });
      open.push(loaded);
      const error = await failure(loaded.tools.file_write as NamedTool, { path: planted, content: 'sandbox:\n  root: ..\n' });
      expect(error.code, error.message).toBe('PATH_BLOCKED');
      await call(loaded.tools.cli_execute as NamedTool, { binary: 'python3', args: ['-c', `open('${planted}','w').write('x: 1')`] });
      expect(existsSync(join(base, planted))).toBe(false);
    });
  }
});
