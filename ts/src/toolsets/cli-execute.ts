import { tool } from 'ai';
import { z } from 'zod';
import { type ApprovalConfig, setApprovalScope, wrapWithDefaultApproval } from '../approval/approval.js';
import { callNative } from '../native/errors.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { native } from '../native/binding.js';
import { type CommandResult, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, describeBytes, runCommand } from '../native/run-command.js';

/** Regex guardrails (Rust `regex` syntax). */
export interface CliExecuteGuardrails {
  /** Matched against `binary + " " + args.join(" ")`; a match fails the call with `GUARDRAIL_BLOCKED` and `message`. */
  denyCommands?: readonly { pattern: string; message?: string }[];
  /**
   * Matched against stdout and stderr after the run. `block` (default) fails the call with
   * `OUTPUT_BLOCKED` (checked first, on the raw output); `redact` replaces matches with `[REDACTED]`.
   */
  denyOutput?: readonly { pattern: string; action?: 'block' | 'redact' }[];
}

export interface CliExecuteOptions {
  /** cwd and HOME of every command; path arguments are confined to it (default: `process.cwd()`). */
  workDir?: string;
  /** Bare program names, looked up on PATH once, when the tool is built. Shells and trampolines are refused. */
  allowedBinaries: readonly string[];
  /** Variables passed to the child when set, besides PATH, LANG, HOME (= workDir) and the proxy variables. */
  envPassthrough?: readonly string[];
  /** Extra directories that path arguments may name: absolute, or relative to `workDir`. */
  readRoots?: readonly string[];
  /** Kill the whole process group after this long (default 120 000 ms). */
  timeoutMs?: number;
  /** Cap for each of stdout and stderr (default 1 MiB). */
  maxOutputBytes?: number;
  guardrails?: CliExecuteGuardrails;
  /** Approval of the `cli_execute` tool (default `ask`). */
  approval?: ApprovalConfig;
}

export interface CliExecuteInput {
  binary: string;
  args: string[];
  stdin?: string;
}

/** Whether an allowlisted binary was found when the tool was built. */
export interface BinaryAvailability {
  name: string;
  found: boolean;
  /** Where it was found on PATH, or `null`. */
  path: string | null;
  /** The file that path really is (symlinks resolved), or `null`. */
  realPath: string | null;
}

export type CliExecuteTool = NamedTool<CliExecuteInput, CommandResult> & {
  /** Every allowlisted binary, found or not; the ones not found are not offered to the model. */
  availability(): BinaryAvailability[];
};

/**
 * The `cli_execute` tool: runs one of the allowlisted binaries with an argv array, never through
 * a shell. The policy (allowlist, shell and trampoline refusal, argument and path checks,
 * environment, guardrails) is built once, here, in the native core; `CONFIG_INVALID` when it is
 * invalid or none of the binaries is found.
 *
 * A call returns `{ stdout, stderr, exitCode, truncated, timedOut }`, or throws a `ToolgateError`
 * naming what was refused: `BINARY_NOT_ALLOWED`, `BINARY_NOT_FOUND`, `SHELL_NOT_ALLOWED`,
 * `ARGUMENT_REJECTED`, `PATH_OUTSIDE_ROOT`, `GUARDRAIL_BLOCKED`, `OUTPUT_BLOCKED`. Aborting the
 * call's `abortSignal` kills the process group. Gated by `approval` (default `ask`).
 */
export function cliExecuteTool(options: CliExecuteOptions): CliExecuteTool {
  const policy = callNative(
    () =>
      new native.CliExecutePolicy({
        workDir: options.workDir ?? process.cwd(),
        allowedBinaries: [...options.allowedBinaries],
        envPassthrough: options.envPassthrough ? [...options.envPassthrough] : undefined,
        readRoots: options.readRoots ? [...options.readRoots] : undefined,
        timeoutMs: options.timeoutMs,
        maxOutputBytes: options.maxOutputBytes,
        guardrails: options.guardrails
          ? {
              denyCommands: options.guardrails.denyCommands?.map((entry) => ({ ...entry })),
              denyOutput: options.guardrails.denyOutput?.map((entry) => ({ ...entry })),
            }
          : undefined,
      }),
  );
  const availability = (): BinaryAvailability[] =>
    policy.availability().map((binary) => ({
      name: binary.name,
      found: binary.found,
      path: binary.path ?? null,
      realPath: binary.realPath ?? null,
    }));
  const names = availability()
    .filter((binary) => binary.found)
    .map((binary) => binary.name) as [string, ...string[]];

  const base = tool({
    description: describe(names, policy.workDir, options),
    inputSchema: z.object({
      binary: z.enum(names).describe('The program to run'),
      args: z.array(z.string()).describe('Arguments, one per element, passed verbatim (no quoting, no expansion)'),
      stdin: z.string().optional().describe('Text written to the program’s standard input'),
    }),
    execute: async ({ binary, args, stdin }, { abortSignal }): Promise<CommandResult> => {
      abortSignal?.throwIfAborted();
      const handle = callNative(() => policy.prepare(binary, [...args], stdin));
      return runCommand(handle, abortSignal);
    },
  });
  const cliExecute = { ...named('cli_execute', base), availability };
  // "always" for cli_execute covers the same binary and first argument (`git status …`).
  const gated = wrapWithDefaultApproval(cliExecute as CliExecuteTool, options.approval ?? {});
  return setApprovalScope(gated, (input) => {
    const { binary, args } = input as CliExecuteInput;
    return [binary, ...(args ?? []).slice(0, 1)].join(' ');
  });
}

function describe(names: readonly string[], workDir: string, options: CliExecuteOptions): string {
  const timeoutSeconds = (options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000;
  const cap = describeBytes(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const roots = options.readRoots?.length ? ` or in ${options.readRoots.join(', ')}` : '';
  return [
    `Run one of these programs directly, without a shell: ${names.join(', ')}.`,
    'Give the arguments as an array, one element per argument; they are passed verbatim, so there are no pipes, redirections, globs, variables or command substitution.',
    `The program runs in ${workDir}; arguments that are paths must stay inside it${roots}.`,
    `Each of stdout and stderr is cut at ${cap}; the program is killed after ${timeoutSeconds} s.`,
    'The result is { stdout, stderr, exitCode, truncated, timedOut }; a non-zero exitCode is a normal result.',
  ].join(' ');
}
