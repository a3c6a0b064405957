import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runToolgate } from './helpers/cli.js';

const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string };

describe('toolgate CLI', () => {
  it('prints its version', () => {
    const run = runToolgate(['--version']);
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(version);
  });

  it('prints help with the command list', () => {
    const run = runToolgate(['--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: toolgate <command>');
  });

  it('rejects an unknown command with exit code 2', () => {
    const run = runToolgate(['frobnicate']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("unknown command 'frobnicate'");
  });
});
