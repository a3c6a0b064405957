import type { ApprovalDecision } from '../approval/approval.js';
import type { ToolgateErrorCode } from './errors.js';
import { shellPolicy, type ShellToolsetOptions } from '../toolsets/shell.js';

/** The check that refused a command, in the order the checks run. */
export type CommandLayer = 'syntax' | 'shell-or-trampoline' | 'rules' | 'program' | 'arguments' | 'paths';

/** Everything the shell policy decided about one command. */
export interface CommandExplanation {
  command: string;
  /** The words the command was split into (empty when it could not be split). */
  argv: string[];
  /** The program as found on PATH (absolute), or `null`. */
  program: string | null;
  /** `blocked`: a rule, or no rule and no default; `refused`: another layer refused it. */
  decision: ApprovalDecision | 'refused';
  /** Where the approval came from; `null` when the command could not be split. */
  source: 'rule' | 'default' | 'no-default' | null;
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
  const native = shellPolicy(options).explain(command);
  return {
    command: native.command,
    argv: native.argv,
    program: native.program ?? null,
    decision: native.decision as CommandExplanation['decision'],
    source: (native.source ?? null) as CommandExplanation['source'],
    rule: native.rule
      ? { index: native.rule.index, pattern: native.rule.pattern, approval: native.rule.approval as ApprovalDecision }
      : null,
    refusal: native.refusal
      ? {
          layer: native.refusal.layer as CommandLayer,
          code: native.refusal.code as ToolgateErrorCode,
          message: native.refusal.message,
        }
      : null,
  };
}
