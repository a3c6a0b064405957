import type { Tool } from 'ai';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { callNative, ToolgateError } from '../native/errors.js';
import type { NamedTool } from './named-tool.js';
import { bindingOf, bindTool } from './tool-binding.js';

/** What happens when a tool is called: run it, ask a human first, or refuse. */
export type ApprovalDecision = native.Decision;

/** The decisions, least strict first (the core's order). */
export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = LIMITS.decisions;

/** Approval configuration of a toolset or worker: a default and per-tool decisions. */
export interface ApprovalConfig {
  default?: ApprovalDecision;
  tools?: Readonly<Record<string, ApprovalDecision>>;
}

/**
 * Approval of a file toolset (`codeAgentTools`, `filesystemToolset`, and `toolsets.code_agent` /
 * `toolsets.filesystem` in a worker file): the usual block plus path rules, gitignore-style
 * patterns relative to the work directory, decided in Rust (the most specific match wins, the
 * strictest on ties).
 */
export interface FileApprovalConfig extends ApprovalConfig {
  paths?: ReadonlyArray<{ pattern: string; approval: ApprovalDecision }>;
}

/** The effective approval of a tool, as the core decided it. */
export type ResolvedApproval = native.ResolvedApproval;

/** The strictest of the given decisions (blocked > ask > preApproved). */
export function strictest(...decisions: readonly ApprovalDecision[]): ApprovalDecision {
  const rank = (decision: ApprovalDecision) => APPROVAL_DECISIONS.indexOf(decision);
  return decisions.reduce((result, decision) => (rank(decision) > rank(result) ? decision : result), 'preApproved');
}

export function isApprovalDecision(value: unknown): value is ApprovalDecision {
  return APPROVAL_DECISIONS.some((decision) => decision === value);
}

/** Throws `CONFIG_INVALID` unless `config` is a valid approval block (checked by the core). */
export function checkApprovalConfig(config: ApprovalConfig | undefined, where: string): void {
  callNative(() => native.checkApprovalConfig(config, where));
}

/** How a wrapped tool is gated. `dynamic` means its own `needsApproval` function decides per call. */
export interface ApprovalInfo {
  decision: ApprovalDecision;
  dynamic: boolean;
}

const APPROVAL = new WeakMap<object, ApprovalInfo>();
const COMMAND_WORDS = new WeakMap<object, CommandWords>();

/**
 * The command a call of a command tool runs, as words (`['git', 'status', '-s']`), or
 * `undefined` when the input holds no command that splits. "Always" answers of command tools can
 * then be widened, explicitly, to commands that start with some words (see `alwaysScope`).
 */
export type CommandWords = (input: unknown) => string[] | undefined;

/** Declares `tool` a command tool whose calls run `words(input)`. Returns the tool. */
export function setCommandWords<T extends object>(tool: T, words: CommandWords): T {
  COMMAND_WORDS.set(tool, words);
  return tool;
}

/** The command words of a call of `tool`, for command tools; `undefined` for others. */
export function commandWordsOf(tool: object | undefined, input: unknown): string[] | undefined {
  const words = tool ? COMMAND_WORDS.get(tool) : undefined;
  return words?.(input);
}

/**
 * A copy of `tool` with `changes`, that keeps what toolgate attached to it (its approval, its
 * command words), as `attachApproval` does for the tools it wraps.
 */
export function withChanges<T extends object>(tool: T, changes: Partial<T>): T {
  const changed = { ...tool, ...changes };
  const info = APPROVAL.get(tool);
  if (info) APPROVAL.set(changed, info);
  const words = COMMAND_WORDS.get(tool);
  if (words) COMMAND_WORDS.set(changed, words);
  return changed;
}

/** The gate attached to `tool`, or undefined for an ungated tool. */
export function approvalOf(tool: object): ApprovalInfo | undefined {
  return APPROVAL.get(tool);
}

export function isBlocked(tool: object): boolean {
  return APPROVAL.get(tool)?.decision === 'blocked';
}

/** What the core needs to know of a tool's own `needsApproval`. */
export function ownApproval(tool: Pick<Tool, 'needsApproval'>): native.OwnApproval {
  const own = tool.needsApproval;
  if (own === undefined) return 'none';
  if (typeof own === 'function') return 'function';
  return own ? 'always' : 'never';
}

/**
 * Attaches a decision the core made to a tool — the only thing the SDK does with approvals.
 *
 * - `blocked`: the returned tool's `execute` throws `TOOL_BLOCKED`; toolsets leave it out of what
 *   the model sees.
 * - `ask`: `needsApproval: true`, so the AI SDK's own approval flow runs before `execute`.
 * - `preApproved`: `needsApproval: false`, unless the tool's own function still decides per call.
 */
export function attachApproval<T extends NamedTool>(tool: T, resolved: ResolvedApproval): T {
  const info: ApprovalInfo = { decision: resolved.decision, dynamic: resolved.dynamic };
  const wrapped: T = { ...tool, needsApproval: resolved.dynamic ? tool.needsApproval : resolved.decision === 'ask' };
  if (resolved.decision === 'blocked') {
    wrapped.needsApproval = false;
    const message = resolved.blockedMessage ?? `tool '${tool.name}' is blocked`;
    wrapped.execute = () => {
      throw new ToolgateError('TOOL_BLOCKED', message);
    };
  }
  APPROVAL.set(wrapped, info);
  const words = COMMAND_WORDS.get(tool);
  if (words) COMMAND_WORDS.set(wrapped, words);
  const binding = bindingOf(tool);
  if (binding) bindTool(wrapped, binding);
  return wrapped;
}

/**
 * Gates a tool. The core decides: the candidates are the explicit per-tool entry in
 * `config.tools`, the tool's own `needsApproval` (true → ask, false → preApproved, a function →
 * decided per call), and — only when neither exists — `config.default`, else `ask`. The
 * strictest candidate wins. `config` may name other tools (a block shared by several tools).
 */
export function wrapWithDefaultApproval<T extends NamedTool>(tool: T, config: ApprovalConfig = {}): T {
  const [resolved] = callNative(() =>
    native.decideToolsetApproval('tool', [{ name: tool.name, own: ownApproval(tool) }], config, undefined, `approval for tool '${tool.name}'`),
  );
  if (!resolved) throw new ToolgateError('INTERNAL_ERROR', `no approval was decided for tool '${tool.name}'`);
  return attachApproval(tool, resolved);
}

/** The tools a model may see: wrapped tools minus the blocked ones. */
export function offeredTools<T extends NamedTool>(tools: readonly T[]): T[] {
  return tools.filter((tool) => !isBlocked(tool));
}
