/**
 * Where things are, found from this checkout: tests, benchmarks and scripts name no path of the
 * machine they were written on, so a clone in any folder runs them (issue 21).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the directory of package.json, two levels above this file. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

const require = createRequire(import.meta.url);

/**
 * The installed directory of an npm package, as Node resolves it from this checkout (the real
 * path: a symlinked node_modules resolves to where the files are, which a sandbox must be able
 * to read). Throws naming the package and `npm install` when it is not installed.
 */
export function packageDir(name: string): string {
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    // A package whose `exports` hide package.json: walk up from its entry point.
  }
  let dir: string;
  try {
    dir = dirname(require.resolve(name));
  } catch {
    throw new Error(`the npm package ${name} is not installed below ${REPO_ROOT}: run npm install there`);
  }
  for (; dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === name) return dir;
  }
  throw new Error(`the npm package ${name} resolves to ${require.resolve(name)}, which has no package.json named ${name} above it`);
}

/** A file inside an installed package (`packageFile('ai', 'dist/index.js')`). */
export function packageFile(name: string, relative: string): string {
  const file = join(packageDir(name), relative);
  if (!existsSync(file)) throw new Error(`${file} does not exist: is the installed ${name} the version package.json asks for?`);
  return file;
}

/**
 * The node_modules directory that holds `name` (default: the MCP filesystem server the tests
 * run): what a sandboxed Node program from npm must be allowed to read.
 */
export function nodeModulesDir(name = '@modelcontextprotocol/server-filesystem'): string {
  for (let dir = packageDir(name); dir !== dirname(dir); dir = dirname(dir)) {
    if (basename(dir) === 'node_modules') return dir;
  }
  throw new Error(`the npm package ${name} is not inside a node_modules directory`);
}
