import { tool } from 'ai';
import { z } from 'zod';
import { setCommandWords, type ApprovalConfig, type ApprovalDecision, type ResolvedApproval } from '../approval/approval.js';
import { attachDecided } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTool, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { warnDeprecated } from '../native/deprecation.js';
import { callNative } from '../native/errors.js';
import { type CommandResult, runCommand } from '../native/process-handle.js';
import { type SandboxOption, warnSandbox } from '../native/sandbox.js';
import { splitCommand } from '../native/split-command.js';

/** A shell rule: `pattern` matches a command whose words start with the pattern's words. */
export interface ShellRule {
  pattern: string;
  approval: ApprovalDecision;
}

export interface ShellToolsetOptions {
  /** cwd of every command; path arguments are confined to it (default: `process.cwd()`). */
  workDir?: string;
  /**
   * The kernel sandbox of every command (default `{ mode: 'enforce', network: false }`: the
   * work directory, the system runtime read-only, no network). See {@link SandboxOption}.
   */
  sandbox?: SandboxOption;
  /** Programs may not write in the work directory either (enforced by the kernel sandbox). */
  readOnly?: boolean;
  /** @deprecated The old name of `workDir`; it still works for one release, with a warning. */
  cwd?: string;
  /** The longest matching pattern wins; equal lengths resolve to the strictest approval. */
  rules?: readonly ShellRule[];
  /** The approval of a command no rule matches; without it such commands are blocked. */
  default?: ApprovalDecision;
  /** Kill the whole process group after this long (default 120 000 ms). */
  timeoutMs?: number;
  /** Cap for each of stdout and stderr (default 1 MiB). */
  maxOutputBytes?: number;
  /** Variables passed to the child when set, besides PATH, LANG, LC_*, TZ, USER and the proxy variables. */
  envPassthrough?: readonly string[];
  /** Approval of the `shell` tool on top of the rules: `ask` or `blocked` here overrides them. */
  approval?: ApprovalConfig;
}

export interface ShellInput {
  command: string;
}

type ShellPolicy = native.ShellPolicy;

/** Builds the native policy from options the core reads strictly; shared by the toolset and `explainCommand`. */
export function shellPolicy(options: ShellToolsetOptions): ShellPolicy {
  const policy = callNative(() => new native.ShellPolicy(options));
  warnDeprecated(policy.deprecations);
  warnSandbox(policy.sandboxWarning);
  return policy;
}

/** The `shell` tool over a built policy, with the approval the core decided. */
export function shellTool(policy: ShellPolicy, decided: ResolvedApproval): NamedTool<ShellInput, CommandResult> {
  const base = tool({
    description: policy.description,
    inputSchema: z.object({
      command: z.string().describe('One program and its arguments, e.g. `git log --oneline -5`'),
    }),
    needsApproval: ({ command }: ShellInput) => callNative(() => policy.needsApproval(command)),
    execute: async ({ command }, { abortSignal }): Promise<CommandResult> => {
      abortSignal?.throwIfAborted();
      const handle = callNative(() => policy.prepare(command));
      return runCommand(handle, abortSignal);
    },
  });
  const [gated] = attachDecided([named('shell', base)], [decided]);
  // "Always" covers exactly the approved command unless the person widens it to a prefix of
  // these words.
  return setCommandWords(gated!, (input) => commandWords((input as ShellInput).command));
}

/**
 * The `shell` tool: runs one command line, split into words with POSIX quoting and no shell.
 * The rules decide each command: `preApproved` runs directly, `ask` reaches the AI SDK as
 * `needsApproval`, `blocked` (or no rule and no default) fails with `COMMAND_BLOCKED` and the
 * rule, without a prompt. Pipes, redirections, lists and substitutions are `ARGUMENT_REJECTED`;
 * path confinement, environment, caps, timeout and the kernel sandbox are the same engine as
 * `cli_execute`. The core reads the options strictly (`CONFIG_INVALID` for an unknown option;
 * `SANDBOX_UNAVAILABLE` where the default sandbox cannot be enforced).
 */
export function shellToolset(options: ShellToolsetOptions = {}): NamedTool<ShellInput, CommandResult> {
  const policy = shellPolicy(options);
  const [decided] = callNative(() =>
    native.decideToolsetApproval('shell', [{ name: 'shell', own: 'function' }], options.approval),
  );
  return bindTool(shellTool(policy, decided!), {
    workDir: policy.workDir,
    readOnly: options.readOnly ?? false,
    rules: { rules: options.rules ?? [], default: options.default ?? null },
    sandbox: options.sandbox ?? null,
    settings: settingsOf(options, ['rules', 'default']),
  });
}

/** The words of a command, or `undefined` when it does not split (it will be refused anyway). */
function commandWords(command: string): string[] | undefined {
  try {
    return splitCommand(command);
  } catch {
    return undefined;
  }
}

/** Reads a YAML shell block, or a worker file's `toolsets.shell`, into toolset options. */
export function readShellConfig(path: string): Omit<ShellToolsetOptions, 'workDir' | 'cwd' | 'approval'> {
  const config = callNative(() => native.readShellConfig(path));
  return {
    rules: config.rules,
    ...(config.default === undefined ? {} : { default: config.default }),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    ...(config.maxOutputBytes === undefined ? {} : { maxOutputBytes: config.maxOutputBytes }),
    envPassthrough: config.envPassthrough,
  };
}

