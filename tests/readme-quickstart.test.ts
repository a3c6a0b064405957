/**
 * The README's quickstart (issue 25): install, `check`, a run with the scripted model, a run with
 * a real model, in that order, with the CLI of the checkout (`node dist/cli/main.js`, not
 * `npx toolgate`, which inside this repository installs the checkout into npx's cache and
 * rebuilds it first). The scripted run is run as written, in a copy of the examples.
 */
import { cpSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/checkout.js';
import { runToolgate } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

const CHECKOUT_CLI = 'node dist/cli/main.js';

/** The shell commands of the README's Quickstart section, continuation lines joined, comments dropped. */
function quickstartCommands(): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = /^## Quickstart\n([\s\S]*?)^## /m.exec(readme)?.[1];
  if (section === undefined) throw new Error('README.md has no Quickstart section');
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

/** Splits a command line the way the shell would for these simple lines (double and single quotes). */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}

describe("the README's quickstart", () => {
  it('is install, check, a scripted run, then runs with a real model, all with the checkout CLI', () => {
    const commands = quickstartCommands();
    expect(commands.some((command) => /^npm install\b/.test(command))).toBe(true);
    expect(commands.filter((command) => command.includes('npx toolgate'))).toEqual([]);
    const cli = commands.filter((command) => command.startsWith(`${CHECKOUT_CLI} `)).map((command) => words(command).slice(2));
    const shape = cli.map((args) => (args.some((arg) => arg.startsWith('scripted:')) ? `${args[0]} scripted` : args[0]));
    expect(shape).toEqual(['check', 'run scripted', 'run', 'run']);
    expect(commands.findIndex((command) => command.startsWith('npm install'))).toBeLessThan(commands.findIndex((command) => command.startsWith(CHECKOUT_CLI)));
    // every file the commands name exists in the checkout
    const files = cli.flat().flatMap((arg) => arg.replace(/^scripted:/, '').match(/^examples\/\S+\.(?:yaml|json)$/) ?? []);
    expect(files.length).toBeGreaterThanOrEqual(4);
    for (const file of files) expect(() => readFileSync(join(REPO_ROOT, file)), file).not.toThrow();
  });

  it('the scripted run works as written, without a key and without a network', () => {
    const scripted = quickstartCommands().find((command) => command.startsWith(CHECKOUT_CLI) && command.includes('scripted:'))!;
    const dir = tempDir();
    for (const folder of ['quickstart', 'executable-tools']) {
      cpSync(join(REPO_ROOT, 'examples', folder), join(dir, 'examples', folder), { recursive: true, filter: (source) => !/\/notes(?:\/|$)/.test(source) });
    }
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: join(dir, '.cache') };
    for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'TOOLGATE_API_KEY', 'TOOLGATE_BASE_URL', 'TOOLGATE_MODEL']) delete env[key];
    // The README asks the reader to press `a` at write_file's prompt; without a terminal, --yes does.
    const run = runToolgate([...words(scripted).slice(2), '--yes'], { cwd: dir, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('The 30th Fibonacci number is 832040');
    expect(readFileSync(join(dir, 'examples', 'quickstart', 'workspace', 'notes', 'fib.txt'), 'utf8')).toBe('F(30) = 832040\n');
  });
});
