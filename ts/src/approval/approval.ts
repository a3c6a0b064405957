import type { Tool } from 'ai';
import { ToolgateError } from '../native/errors.js';
import type { NamedTool } from './named-tool.js';

/** What happens when a tool is called: run it, ask a human first, or refuse. */
export type ApprovalDecision = 'preApproved' | 'ask' | 'blocked';

export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = ['preApproved', 'ask', 'blocked'];

/** Approval configuration of a toolset or worker: a default and per-tool decisions. */
export interface ApprovalConfig {
  default?: ApprovalDecision;
  tools?: Readonly<Record<string, ApprovalDecision>>;
}

const RANK: Record<ApprovalDecision, number> = { preApproved: 0, ask: 1, blocked: 2 };

/** The strictest of the given decisions (blocked > ask > preApproved). */
export function strictest(...decisions: readonly ApprovalDecision[]): ApprovalDecision {
  let result: ApprovalDecision = 'preApproved';
  for (const decision of decisions) if (RANK[decision] > RANK[result]) result = decision;
  return result;
}

export function isApprovalDecision(value: unknown): value is ApprovalDecision {
  return typeof value === 'string' && (APPROVAL_DECISIONS as readonly string[]).includes(value);
}

/** Throws `CONFIG_INVALID` unless every decision in `config` is a known one. */
export function checkApprovalConfig(config: ApprovalConfig | undefined, where: string): void {
  if (!config) return;
  const check = (value: unknown, key: string) => {
    if (!isApprovalDecision(value)) {
      throw new ToolgateError(
        'CONFIG_INVALID',
        `${where}: ${key} is ${JSON.stringify(value)}; use one of ${APPROVAL_DECISIONS.join(', ')}`,
      );
    }
  };
  if (config.default !== undefined) check(config.default, 'approval.default');
  for (const [name, value] of Object.entries(config.tools ?? {})) check(value, `approval.tools.${name}`);
}

/** How a wrapped tool is gated. `dynamic` means its own `needsApproval` function decides per call. */
export interface ApprovalInfo {
  decision: ApprovalDecision;
  dynamic: boolean;
}

type NeedsApproval = NonNullable<Tool['needsApproval']>;

const APPROVAL = new WeakMap<object, ApprovalInfo>();
const SCOPE = new WeakMap<object, ApprovalScope>();

/**
 * What "always approve" covers for a tool: calls whose scope key is equal. By default the tool
 * name (every call); command tools narrow it to the program and its first argument.
 */
export type ApprovalScope = (input: unknown) => string;

/** Declares what an "always" answer for `tool` covers. Returns the tool. */
export function setApprovalScope<T extends object>(tool: T, scope: ApprovalScope): T {
  SCOPE.set(tool, scope);
  return tool;
}

/** The "always" key of a call: `toolName` or `toolName:<scope>` for tools that narrow it. */
export function approvalScopeKey(tool: object | undefined, toolName: string, input: unknown): string {
  const scope = tool ? SCOPE.get(tool) : undefined;
  return scope ? `${toolName}:${scope(input)}` : toolName;
}

/** The gate `wrapWithDefaultApproval` put on `tool`, or undefined for an unwrapped tool. */
export function approvalOf(tool: object): ApprovalInfo | undefined {
  return APPROVAL.get(tool);
}

export function isBlocked(tool: object): boolean {
  return APPROVAL.get(tool)?.decision === 'blocked';
}

/**
 * Gates a tool. The candidates are the explicit per-tool entry in `config.tools`, the tool's own
 * `needsApproval` (true → ask, false → preApproved, a function → decided per call), and — only
 * when neither exists — `config.default`, else `ask`. The strictest candidate wins.
 *
 * - `blocked`: the returned tool's `execute` throws `TOOL_BLOCKED`; toolsets leave it out of what
 *   the model sees.
 * - `ask`: `needsApproval: true`, so the AI SDK's own approval flow runs before `execute`.
 * - `preApproved`: `needsApproval: false`, unless the tool's own function still has a say.
 */
export function wrapWithDefaultApproval<T extends NamedTool>(tool: T, config: ApprovalConfig = {}): T {
  checkApprovalConfig(config, `approval for tool '${tool.name}'`);
  const explicit = config.tools?.[tool.name];
  const own = tool.needsApproval;
  const candidates: ApprovalDecision[] = [];
  if (explicit !== undefined) candidates.push(explicit);
  if (typeof own === 'boolean') candidates.push(own ? 'ask' : 'preApproved');
  if (explicit === undefined && own === undefined) candidates.push(config.default ?? 'ask');
  const decision = strictest(...candidates);
  const dynamic = typeof own === 'function' && decision === 'preApproved';

  const needsApproval: NeedsApproval = dynamic ? (own as NeedsApproval) : decision === 'ask';

  const wrapped = { ...tool, needsApproval } as T;
  if (decision === 'blocked') {
    wrapped.needsApproval = false;
    wrapped.execute = () => {
      throw new ToolgateError(
        'TOOL_BLOCKED',
        `tool '${tool.name}' is blocked by its approval configuration; change its approval to 'ask' or 'preApproved' to allow it`,
      );
    };
  }
  APPROVAL.set(wrapped, { decision, dynamic });
  const scope = SCOPE.get(tool);
  if (scope) SCOPE.set(wrapped, scope);
  return wrapped;
}

/** The tools a model may see: wrapped tools minus the blocked ones. */
export function offeredTools<T extends NamedTool>(tools: readonly T[]): T[] {
  return tools.filter((tool) => !isBlocked(tool));
}
