import { tool } from 'ai';
import { z } from 'zod';
import { type ApprovalConfig, type ResolvedApproval, setCommandWords } from '../approval/approval.js';
import { attachDecided } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTool, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { type CommandResult, runCommand } from '../native/process-handle.js';
import { type SandboxOption, warnSandbox } from '../native/sandbox.js';

/** Regex guardrails (Rust `regex` syntax). */
export interface CliExecuteGuardrails {
  /** Matched against `binary + " " + args.join(" ")`; a match fails the call with `GUARDRAIL_BLOCKED` and `message`. */
  denyCommands?: readonly { pattern: string; message?: string }[];
  /**
   * Matched against stdout and stderr after the run. `block` (default) fails the call with
   * `OUTPUT_BLOCKED` (checked first, on the raw output); `redact` replaces matches with `[REDACTED]`.
   */
  denyOutput?: readonly { pattern: string; action?: native.OutputAction }[];
}

export interface CliExecuteOptions {
  /** cwd of every command; path arguments are confined to it (default: `process.cwd()`). */
  workDir?: string;
  /**
   * The kernel sandbox of every command (default `{ mode: 'enforce', network: false }`: the
   * work directory, the system runtime read-only, no network; `readRoots` are readable too).
   * See {@link SandboxOption}.
   */
  sandbox?: SandboxOption;
  /** Programs may not write in the work directory either (enforced by the kernel sandbox). */
  readOnly?: boolean;
  /** Bare program names, looked up on PATH once, when the tool is built. Shells and trampolines are refused. */
  allowedBinaries: readonly string[];
  /** Variables passed to the child when set, besides PATH, LANG, LC_*, TZ, USER and the proxy variables. */
  envPassthrough?: readonly string[];
  /** Extra directories that path arguments may name (and the sandbox lets programs read): absolute, or relative to `workDir`. */
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

/** The `cli_execute` tool over a built policy, with the approval the core decided. */
export function cliExecuteToolOf(policy: native.CliExecutePolicy, decided: ResolvedApproval): CliExecuteTool {
  const availability = (): BinaryAvailability[] =>
    policy.availability().map((binary) => ({
      name: binary.name,
      found: binary.found,
      path: binary.path ?? null,
      realPath: binary.realPath ?? null,
    }));
  const names = availability()
    .filter((binary) => binary.found)
    .map((binary) => binary.name);
  const [first = '', ...rest] = names;
  const base = tool({
    description: policy.description,
    inputSchema: z.object({
      binary: z.enum([first, ...rest]).describe('The program to run'),
      args: z.array(z.string()).describe('Arguments, one per element, passed verbatim (no quoting, no expansion)'),
      stdin: z.string().optional().describe('Text written to the program’s standard input'),
    }),
    // Consulted only when the core marks the decision dynamic: a calling worker's shell rules
    // may ask about a call this toolset would run without asking.
    needsApproval: ({ binary, args }) => callNative(() => policy.needsApproval(binary, [...args])),
    execute: async ({ binary, args, stdin }, { abortSignal }): Promise<CommandResult> => {
      abortSignal?.throwIfAborted();
      const handle = callNative(() => policy.prepare(binary, [...args], stdin));
      return runCommand(handle, abortSignal);
    },
  });
  const [gated] = attachDecided([{ ...named('cli_execute', base), availability }], [decided]);
  // "Always" covers exactly the approved call unless the person widens it to a prefix of these
  // words.
  return setCommandWords(gated!, (input) => {
    const { binary, args } = input as CliExecuteInput;
    return typeof binary === 'string' && Array.isArray(args) ? [binary, ...args.map(String)] : undefined;
  });
}

/**
 * The `cli_execute` tool: runs one of the allowlisted binaries with an argv array, never through
 * a shell. The core reads the options strictly and builds the policy once (allowlist, shell and
 * trampoline refusal, argument and path checks, environment, guardrails); `CONFIG_INVALID` for
 * an unknown option, an invalid policy, or when none of the binaries is found.
 *
 * A call returns `{ stdout, stderr, exitCode, truncated, timedOut }`, or throws a `ToolgateError`
 * naming what was refused: `BINARY_NOT_ALLOWED`, `BINARY_NOT_FOUND`, `SHELL_NOT_ALLOWED`,
 * `ARGUMENT_REJECTED`, `PATH_OUTSIDE_ROOT`, `GUARDRAIL_BLOCKED`, `OUTPUT_BLOCKED`. Aborting the
 * call's `abortSignal` kills the process group. Gated by `approval` (default `ask`).
 */
export function cliExecuteTool(options: CliExecuteOptions): CliExecuteTool {
  const policy = callNative(() => new native.CliExecutePolicy(options));
  warnSandbox(policy.sandboxWarning);
  const [decided] = callNative(() =>
    native.decideToolsetApproval('cli_execute', [{ name: 'cli_execute', own: 'none' }], options.approval),
  );
  const built = cliExecuteToolOf(policy, decided!);
  return bindTool(built, {
    workDir: policy.workDir,
    readOnly: options.readOnly ?? false,
    rules: {
      // The programs as resolved: another file under the same name is another tool.
      allowedBinaries: built.availability().map((binary) => [binary.name, binary.realPath]),
      guardrails: options.guardrails ?? null,
      readRoots: options.readRoots ?? [],
    },
    sandbox: options.sandbox ?? null,
    settings: settingsOf(options, ['allowedBinaries', 'guardrails', 'readRoots']),
  });
}
