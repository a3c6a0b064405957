import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NamedTool } from '../../ts/src/index.js';
import { tempDir } from './fs.js';

/** Calls a tool's `execute` the way the AI SDK does, and returns what it resolves to. */
export async function call<T = unknown>(tool: NamedTool, input: unknown, abortSignal?: AbortSignal): Promise<T> {
  const execute = tool.execute as (input: unknown, options: object) => Promise<T>;
  return execute(input, { toolCallId: 'call-1', messages: [], abortSignal });
}

/** The error a tool call rejects with (fails the test when it resolves). */
export async function failure(tool: NamedTool, input: unknown): Promise<Error & { code?: string }> {
  try {
    const result = await call(tool, input);
    throw new Error(`expected ${tool.name}(${JSON.stringify(input)}) to fail, got ${JSON.stringify(result)}`);
  } catch (error) {
    return error as Error & { code?: string };
  }
}

export function byName(tools: readonly NamedTool[], name: string): NamedTool {
  const found = tools.find((tool) => tool.name === name);
  if (!found) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(', ')}`);
  return found;
}

/** Writes files (creating parents) below `root`. */
export function writeFiles(root: string, files: Readonly<Record<string, string>>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), content);
  }
}

/** Every entry below `dir` with its content (directories and symlinks marked), for before/after checks. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (current: string, prefix: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const rel = prefix + entry.name;
      const full = join(current, entry.name);
      if (entry.isSymbolicLink()) out[rel] = '<symlink>';
      else if (entry.isDirectory()) {
        out[`${rel}/`] = '';
        walk(full, `${rel}/`);
      } else out[rel] = `${readFileSync(full, 'utf8')} (${statSync(full).mode & 0o777})`;
    }
  };
  walk(dir, '');
  return out;
}

/**
 * A work directory next to an `outside` directory holding a secret, with the escape hatches an
 * attacker would plant inside: a symlink to the secret file, one to the outside directory, and
 * a dangling one that points at a file not yet created outside.
 */
export function attackFixture() {
  const base = tempDir();
  const root = join(base, 'work');
  const outside = join(base, 'outside');
  writeFiles(root, { 'src/app.ts': 'export const secret = "inside";\n', 'notes.md': 'inside\n' });
  writeFiles(outside, { 'secret.txt': 'secret = outside\n' });
  symlinkSync(join(outside, 'secret.txt'), join(root, 'leak.txt'));
  symlinkSync(outside, join(root, 'outdir'));
  symlinkSync(join(outside, 'created-by-attack.txt'), join(root, 'dangling.txt'));
  return { root, outside, secret: join(outside, 'secret.txt'), base };
}

/** Paths that must all be refused with PATH_OUTSIDE_ROOT, each with a label. */
export function escapingPaths(fixture: ReturnType<typeof attackFixture>): [string, string][] {
  return [
    ['.. traversal', '../outside/secret.txt'],
    ['.. after a real directory', 'src/../../outside/secret.txt'],
    ['absolute path outside', fixture.secret],
    ['absolute /etc/passwd', '/etc/passwd'],
    ['symlinked file pointing outside', 'leak.txt'],
    ['symlinked directory pointing outside', 'outdir/secret.txt'],
    ['dangling symlink pointing outside', 'dangling.txt'],
  ];
}
