import { type ApprovalConfig, type ApprovalDecision, checkApprovalConfig, wrapWithDefaultApproval } from './approval.js';
import { ToolgateError } from '../native/errors.js';
import type { NamedTool } from './named-tool.js';

/**
 * Gates the tools of a built-in toolset. Each tool's decision is the caller's entry for it in
 * `config.tools`, else the caller's `config.default`, else the toolset's documented default
 * for that tool; `wrapWithDefaultApproval` then applies it. Names in `config.tools` must be
 * tools of the toolset (`known`), so a typo cannot silently leave a tool ungated.
 */
export function gateToolset<T extends NamedTool>(
  toolset: string,
  tools: readonly T[],
  defaults: Readonly<Record<string, ApprovalDecision>>,
  config: ApprovalConfig = {},
  known: readonly string[] = Object.keys(defaults),
): T[] {
  checkApprovalConfig(config, `${toolset} approval`);
  for (const name of Object.keys(config.tools ?? {})) {
    if (!known.includes(name)) {
      throw new ToolgateError(
        'CONFIG_INVALID',
        `${toolset} approval names the tool '${name}', which the toolset does not have; its tools are: ${known.join(', ')}`,
      );
    }
  }
  return tools.map((tool) => {
    const decision = config.tools?.[tool.name] ?? config.default ?? defaults[tool.name] ?? 'ask';
    return wrapWithDefaultApproval(tool, { tools: { [tool.name]: decision } });
  });
}
