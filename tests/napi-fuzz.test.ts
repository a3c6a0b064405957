/**
 * No input crashes the host (issue 13 items 1 and 2): every entry point of the native addon is
 * fed hostile values in a child Node process, so that a panic crossing napi (which aborts the
 * process) or a fatal conversion is seen as the child dying.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { exec } from '../ts/src/native/exec.js';
import { FileTools } from '../ts/src/native/file-tools.js';
import { cliExecuteTool } from '../ts/src/toolsets/cli-execute.js';
import { executableTools } from '../ts/src/toolsets/executables.js';
import { shellToolset } from '../ts/src/toolsets/shell.js';
import { tempDir } from './helpers/fs.js';

const ROOT = join(import.meta.dirname, '..');

describe('the native boundary', () => {
  it('survives hostile values at every entry point (child process)', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'toolgate-fuzz-'));
    const child = spawnSync(
      process.execPath,
      [join(ROOT, 'tests/helpers/napi-fuzz-child.mjs'), pathToFileURL(join(ROOT, 'native/binding.js')).href],
      { cwd: scratch, encoding: 'utf8', timeout: 240_000, env: { PATH: process.env.PATH ?? '', HOME: scratch, XDG_CACHE_HOME: scratch } },
    );
    expect(child.signal, child.stderr.slice(-2000)).toBeNull();
    expect(child.status, child.stderr.slice(-2000)).toBe(0);
    const summary = JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '{}') as { calls: number; threw: number };
    expect(summary.calls).toBeGreaterThan(5000);
    expect(summary.threw).toBeGreaterThan(0);
  }, 300_000);

  it('refuses timeouts out of range with one rule for every API, 0 included', async () => {
    const dir = tempDir();
    for (const timeoutMs of [0, -1, 0.5, 2e22, 1e300, Number.MAX_VALUE, Number.NaN, Number.POSITIVE_INFINITY]) {
      const message = `option 'timeoutMs' is`;
      await expect(exec({ command: 'true', cwd: dir, timeoutMs })).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining(message) });
      expect(() => cliExecuteTool({ workDir: dir, allowedBinaries: ['ls'], timeoutMs })).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining(message) }),
      );
      expect(() => shellToolset({ workDir: dir, timeoutMs })).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining(message) }),
      );
      await expect(executableTools({ workDir: dir, dirs: [], timeoutMs })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining(message),
      });
    }
    const result = await exec({ command: 'true', cwd: dir, timeoutMs: 86_400_000 });
    expect(result.exitCode).toBe(0);
  });

  it('turns a panic in a file tool into INTERNAL_ERROR or a clear refusal, and keeps working', async () => {
    const dir = tempDir();
    const files = new FileTools(dir);
    const outcome = await files.glob({ pattern: 'a'.repeat(400_000) }).then(
      () => 'ok',
      (error: unknown) => (error as { code?: string }).code,
    );
    expect(['ok', 'INVALID_INPUT', 'INTERNAL_ERROR']).toContain(outcome);
    expect((await files.glob({ pattern: '*' })).total).toBe(0);
  });
});
