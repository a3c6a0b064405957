import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { join } from 'node:path';

/** The built CLI entry point (npm install builds it). */
export const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `toolgate <args>` as a real subprocess. */
export function runToolgate(args: readonly string[], options: SpawnSyncOptions = {}): CliRun {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, ...options });
  return { status: result.status, stdout: String(result.stdout), stderr: String(result.stderr) };
}
