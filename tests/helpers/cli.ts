import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
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

/**
 * Runs `toolgate <args>` as a real subprocess without blocking this process, so that servers
 * this process runs (a fake model, a local HTTP server) answer the child meanwhile. Its stdin
 * is closed at once.
 */
export async function runToolgateAsync(args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end();
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { status, stdout, stderr };
}
