import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the toolgate package itself (where its package.json is), found by walking
 * up from this module; works from `ts/src` (tests) and from `dist` (installed).
 */
export const PACKAGE_ROOT: string = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const { name } = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string };
      if (name === 'toolgate') return dir;
    }
    if (dirname(dir) === dir) throw new Error(`toolgate's package.json was not found above ${start}`);
  }
}

/** The version of the installed toolgate package. */
export const VERSION: string = (
  JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
