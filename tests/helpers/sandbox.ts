import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliExecuteTool, type CommandResult, type SandboxOption, shellToolset } from '../../ts/src/index.js';
import { CALL } from './commands.js';
import { tempDir } from './fs.js';

/** Programs the attack tests allow, so that the kernel, not the allowlist, is what stops them. */
export const ATTACK_BINARIES = ['find', 'awk', 'sed', 'tar', 'sort', 'grep', 'git', 'perl', 'ps', 'cat', 'touch', 'curl'];

/**
 * A work directory beside an `outside` directory holding a secret (in a file, in the commit
 * message of an outside git repository, and in the environment of an outside process started
 * with `holdSecretInEnvironment`), with a symlink out (`escape`) and a file to run programs on.
 */
export function attackFixture() {
  const base = tempDir('toolgate-sandbox-');
  const work = join(base, 'work');
  const outside = join(base, 'outside');
  mkdirSync(work);
  mkdirSync(outside);
  const secret = `TOP-SECRET-${Math.random().toString(36).slice(2)}`;
  writeFileSync(join(outside, 'secret.txt'), `${secret}\n`);
  writeFileSync(join(work, 'x.txt'), 'hello\n');
  symlinkSync(outside, join(work, 'escape'));
  return { base, work, outside, secretFile: join(outside, 'secret.txt'), secret };
}

export type AttackFixture = ReturnType<typeof attackFixture>;

/** The `cli_execute` and `shell` tools of a fixture, everything pre-approved. */
export function attackTools(work: string, sandbox?: SandboxOption, limits: { timeoutMs?: number } = {}) {
  const extra = { ...limits, ...(sandbox === undefined ? {} : { sandbox }) };
  return {
    cli: cliExecuteTool({ workDir: work, allowedBinaries: ATTACK_BINARIES, approval: { default: 'preApproved' }, ...extra }),
    shell: shellToolset({ workDir: work, default: 'preApproved', ...extra }),
  };
}

export type AttackTools = ReturnType<typeof attackTools>;

/** One command of an attack, for `cli_execute` (argv, stdin) or `shell` (a command line). */
export type AttackCall = { binary: string; args: string[]; stdin?: string } | { command: string };

/** Runs an attack call through the matching tool. */
export async function runAttack(tools: AttackTools, call: AttackCall, options: { abortSignal?: AbortSignal } = {}): Promise<CommandResult> {
  const context = { ...CALL, ...options };
  if ('command' in call) return (await tools.shell.execute!({ command: call.command }, context)) as CommandResult;
  return (await tools.cli.execute!({ binary: call.binary, args: call.args, ...(call.stdin === undefined ? {} : { stdin: call.stdin }) }, context)) as CommandResult;
}

/** A short name of a call for test titles. */
export function describeCall(call: AttackCall): string {
  return 'command' in call ? `shell: ${call.command}` : `cli_execute: ${call.binary} ${JSON.stringify(call.args)}`;
}

/** Runs `git` outside any sandbox (test set-up). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, encoding: 'utf8' });
}

/**
 * Starts `sleep 60` outside the sandbox with `name=value` in its environment (the agent's own
 * process would hold its API keys the same way); returns its pid and a function that stops it.
 */
export function holdSecretInEnvironment(name: string, value: string): { pid: number; stop: () => void } {
  const child = spawn('sleep', ['60'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [name]: value }, stdio: 'ignore' });
  return { pid: child.pid!, stop: () => child.kill('SIGKILL') };
}
