import { resolve } from 'node:path';
import { defaultToolDirectories, ExecutableToolRegistry } from '../../toolsets/executables.js';
import type { native } from '../../native/binding.js';
import type { Flags } from './options.js';

export function workDirOf(flags: Flags): string {
  return resolve(flags['work-dir'] ?? process.cwd());
}

/** The registry the flags describe: `--dir`s (or `dirs`), `--work-dir`, `--no-cache`. */
export function registryFor(flags: Flags, dirs?: string[], cache?: native.CacheMode, timeoutMs?: number): ExecutableToolRegistry {
  const chosen = dirs ?? flags.dir;
  return new ExecutableToolRegistry({
    workDir: workDirOf(flags),
    ...(chosen ? { dirs: chosen.map((dir) => resolve(dir)) } : {}),
    cache: cache ?? (flags['no-cache'] ? 'refresh' : 'use'),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
}

/** The directories searched, as absolute paths. */
export function searched(flags: Flags, dirs?: string[]): string[] {
  return (dirs ?? flags.dir)?.map((dir) => resolve(dir)) ?? defaultToolDirectories(workDirOf(flags));
}
