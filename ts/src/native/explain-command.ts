import type { ApprovalDecision } from '../approval/approval.js';
import type { native } from './binding.js';
import { callNative, type ToolgateErrorCode } from './errors.js';
import { shellPolicy, type ShellToolsetOptions } from '../toolsets/shell.js';

/** The check that refused a command, in the order the checks run. */
export type CommandLayer = native.CommandLayer;

/** Everything the shell policy decided about one command. */
export interface CommandExplanation {
  command: string;
  /** The words the command was split into (empty when it could not be split). */
  argv: string[];
  /** The program as found on PATH (absolute), or `null`. */
  program: string | null;
  /** `blocked`: a rule, or no rule and no default; `refused`: another layer refused it. */
  decision: native.Verdict;
  /** Where the approval came from; `null` when the command could not be split. */
  source: native.DecisionSource | null;
  /** The rule that matched (0-based `index` into `rules`), or `null`. */
  rule: { index: number; pattern: string; approval: ApprovalDecision } | null;
  /** The layer that refused the command, with the error it raises when run; `null` when it would run. */
  refusal: { layer: CommandLayer; code: ToolgateErrorCode; message: string } | null;
}

/**
 * Explains how the shell toolset configured by `options` decides `command`, without running
 * it: the decision, the matched rule and, for refusals, the layer that refused. Throws
 * `CONFIG_INVALID` when the options are invalid.
 */
export function explainCommand(options: ShellToolsetOptions, command: string): CommandExplanation {
  // Explaining runs nothing, so no kernel sandbox is set up: `toolgate check` works on kernels
  // without Landlock too, and the decision does not depend on the sandbox.
  const policy = shellPolicy({ ...options, sandbox: false });
  const explanation = callNative(() => policy.explain(command));
  return {
    command: explanation.command,
    argv: explanation.argv,
    program: explanation.program ?? null,
    decision: explanation.decision,
    source: explanation.source ?? null,
    rule: explanation.rule ?? null,
    refusal: explanation.refusal ?? null,
  };
}
