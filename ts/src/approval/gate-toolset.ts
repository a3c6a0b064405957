import { attachApproval, ownApproval, type ResolvedApproval } from './approval.js';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import type { NamedTool } from './named-tool.js';

/**
 * Gates the tools of a toolset with the decisions the core makes from the toolset's `approval`
 * option and its documented defaults. Names in the block must be tools of the toolset (`known`,
 * default: the tools given), so a typo cannot silently leave a tool ungated; `place` names the
 * block in that error.
 */
export function gateToolset<T extends NamedTool>(
  toolset: native.ToolsetKind,
  tools: readonly T[],
  approval: unknown,
  known?: readonly string[],
  place?: string,
): T[] {
  const resolved = callNative(() =>
    native.decideToolsetApproval(
      toolset,
      tools.map((tool) => ({ name: tool.name, own: ownApproval(tool) })),
      approval,
      known ? [...known] : undefined,
      place,
    ),
  );
  return attachDecided(tools, resolved);
}

/** Attaches decisions made by the core to the tools of the same names. */
export function attachDecided<T extends NamedTool>(tools: readonly T[], decided: readonly ResolvedApproval[]): T[] {
  const byName = new Map(decided.map((resolved) => [resolved.name, resolved]));
  return tools.map((tool) => {
    const resolved = byName.get(tool.name);
    if (!resolved) throw new ToolgateError('INTERNAL_ERROR', `no approval was decided for tool '${tool.name}'`);
    return attachApproval(tool, resolved);
  });
}
