/**
 * What the attack suites share: a work directory beside an `outside` directory with a secret,
 * a way to run a program *without* toolgate (to prove an attack works before showing that
 * toolgate refuses it), and the tools under test built with everything preApproved, so only
 * the policy stands between the model and the attack.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { cliExecuteTool, shellToolset, type CommandResult, type ShellRule, ToolgateError } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';

export const SECRET = 'TOP-SECRET-4711';
const CALL = { toolCallId: 'attack', messages: [] };

export interface AttackFixture {
  base: string;
  work: string;
  outside: string;
  /** `outside/secret`, holding {@link SECRET}. */
  secret: string;
}

export function attackFixture(): AttackFixture {
  const base = tempDir('toolgate-attack-');
  const work = join(base, 'work');
  const outside = join(base, 'outside');
  mkdirSync(join(work, 'src'), { recursive: true });
  mkdirSync(outside);
  const secret = join(outside, 'secret');
  writeFileSync(secret, SECRET);
  writeFileSync(join(work, 'payload'), 'payload');
  return { base, work, outside, secret };
}

/** The absolute path of `name` on PATH, or `null`. */
export function which(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** Runs `program` directly, without toolgate, and returns its stdout (also when it fails). */
export function plain(program: string, args: string[], cwd: string): string {
  try {
    return execFileSync(program, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: process.env.PATH, HOME: cwd } });
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? '');
  }
}

/** A preApproved `cli_execute` tool for `binaries` in the fixture's work directory. */
// These suites test the argument layer, which refuses before anything starts; the positive controls
// talk to a local server, so the kernel sandbox (tested on its own in tests/sandbox*.test.ts) lets
// them reach the network.
export function cli(fx: AttackFixture, binaries: string[]) {
  const tool = cliExecuteTool({
    workDir: fx.work,
    allowedBinaries: binaries,
    approval: { default: 'preApproved' },
    sandbox: { network: true },
  });
  return (binary: string, args: string[]) => tool.execute!({ binary, args }, CALL) as Promise<CommandResult>;
}

/** A `shell` tool whose default is preApproved, with `rules` on top. */
export function shell(fx: AttackFixture, rules: ShellRule[] = []) {
  const tool = shellToolset({
    workDir: fx.work,
    rules,
    default: 'preApproved',
    approval: { default: 'preApproved' },
    sandbox: { network: true },
  });
  return (command: string) => tool.execute!({ command }, CALL) as Promise<CommandResult>;
}

/** The `ToolgateError` code a call failed with; a failure when it ran. */
export async function refusedWith(call: () => Promise<unknown>): Promise<string> {
  try {
    const result = await call();
    throw new Error(`expected a refusal, but it ran: ${JSON.stringify(result).slice(0, 300)}`);
  } catch (error) {
    if (error instanceof ToolgateError) return error.code;
    throw error;
  }
}

/** Says why a test does nothing here. */
export function skip(what: string): void {
  console.warn(`skipped: ${what}`);
}
