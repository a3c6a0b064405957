import { tool } from 'ai';
import { z } from 'zod';
import { setApprovalScope, type ApprovalConfig, type ApprovalDecision, wrapWithDefaultApproval } from '../approval/approval.js';
import { callNative } from '../native/errors.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { native } from '../native/binding.js';
import { splitCommand } from '../native/split-command.js';
import { type CommandResult, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, describeBytes, runCommand } from '../native/run-command.js';

/** A shell rule: `pattern` matches a command whose words start with the pattern's words. */
export interface ShellRule {
  pattern: string;
  approval: ApprovalDecision;
}

export interface ShellToolsetOptions {
  /** cwd and HOME of every command; path arguments are confined to it (default: `process.cwd()`). */
  cwd?: string;
  /** The longest matching pattern wins; equal lengths resolve to the strictest approval. */
  rules?: readonly ShellRule[];
  /** The approval of a command no rule matches; without it such commands are blocked. */
  default?: ApprovalDecision;
  /** Kill the whole process group after this long (default 120 000 ms). */
  timeoutMs?: number;
  /** Cap for each of stdout and stderr (default 1 MiB). */
  maxOutputBytes?: number;
  /** Variables passed to the child when set, besides PATH, LANG, HOME (= cwd) and the proxy variables. */
  envPassthrough?: readonly string[];
  /** Approval of the `shell` tool on top of the rules: `ask` or `blocked` here overrides them. */
  approval?: ApprovalConfig;
}

export interface ShellInput {
  command: string;
}

type ShellPolicy = InstanceType<typeof native.ShellPolicy>;

/** Builds the native policy; shared by the toolset and `explainCommand`. */
export function shellPolicy(options: ShellToolsetOptions): ShellPolicy {
  return callNative(
    () =>
      new native.ShellPolicy({
        cwd: options.cwd ?? process.cwd(),
        rules: options.rules?.map((rule) => ({ pattern: rule.pattern, approval: rule.approval })),
        default: options.default,
        timeoutMs: options.timeoutMs,
        maxOutputBytes: options.maxOutputBytes,
        envPassthrough: options.envPassthrough ? [...options.envPassthrough] : undefined,
      }),
  );
}

/**
 * The `shell` tool: runs one command line, split into words with POSIX quoting and no shell.
 * The rules decide each command: `preApproved` runs directly, `ask` reaches the AI SDK as
 * `needsApproval`, `blocked` (or no rule and no default) fails with `COMMAND_BLOCKED` and the
 * rule, without a prompt. Pipes, redirections, lists and substitutions are `ARGUMENT_REJECTED`;
 * path confinement, environment, caps and timeout are the same engine as `cli_execute`.
 */
export function shellToolset(options: ShellToolsetOptions = {}): NamedTool<ShellInput, CommandResult> {
  const policy = shellPolicy(options);
  const base = tool({
    description: describe(policy.workDir, options),
    inputSchema: z.object({
      command: z.string().describe('One program and its arguments, e.g. `git log --oneline -5`'),
    }),
    needsApproval: ({ command }: ShellInput) => policy.needsApproval(command),
    execute: async ({ command }, { abortSignal }): Promise<CommandResult> => {
      abortSignal?.throwIfAborted();
      const handle = callNative(() => policy.prepare(command));
      return runCommand(handle, abortSignal);
    },
  });
  // "always" for a shell command covers the same program and first argument (`git status …`).
  const gated = wrapWithDefaultApproval(named('shell', base), options.approval ?? {});
  return setApprovalScope(gated, (input) => commandScope((input as ShellInput).command));
}

/** The program and first argument of a command, or the raw text when it does not split. */
function commandScope(command: string): string {
  try {
    return splitCommand(command).slice(0, 2).join(' ');
  } catch {
    return command;
  }
}

/** Reads a YAML shell block, or a worker file's `toolsets.shell`, into toolset options. */
export function readShellConfig(path: string): Omit<ShellToolsetOptions, 'cwd' | 'approval'> {
  const config = callNative(() => native.readShellConfig(path));
  return {
    rules: config.rules.map((rule) => ({ pattern: rule.pattern, approval: rule.approval as ApprovalDecision })),
    ...(config.default === undefined || config.default === null ? {} : { default: config.default as ApprovalDecision }),
    ...(config.timeoutMs == null ? {} : { timeoutMs: config.timeoutMs }),
    ...(config.maxOutputBytes == null ? {} : { maxOutputBytes: config.maxOutputBytes }),
    envPassthrough: config.envPassthrough,
  };
}

function describe(cwd: string, options: ShellToolsetOptions): string {
  const timeoutSeconds = (options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000;
  const cap = describeBytes(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const blocked = (options.rules ?? []).filter((rule) => rule.approval === 'blocked').map((rule) => rule.pattern);
  const lines = [
    `Run one command (a program and its arguments) in ${cwd}. No shell is used: words are split with POSIX quotes, and there are no pipes, redirections, ';' or '&&' lists, $(...), \${...}, backticks, globs or variable expansion. Run one command per call.`,
    `Arguments that are paths must stay inside ${cwd}.`,
    `Each of stdout and stderr is cut at ${cap}; the command is killed after ${timeoutSeconds} s.`,
    'The result is { stdout, stderr, exitCode, truncated, timedOut }; a non-zero exitCode is a normal result.',
  ];
  if (blocked.length > 0) lines.push(`Commands starting with these words are blocked: ${blocked.join('; ')}.`);
  if (options.default === undefined || options.default === 'blocked') {
    lines.push('Commands that no rule allows are blocked.');
  }
  return lines.join(' ');
}
