import type { Tool, ToolSet } from 'ai';
import { ToolgateError } from '../native/errors.js';

/** An AI SDK tool plus the name the model calls it by. */
export type NamedTool<INPUT = any, OUTPUT = any> = Tool<INPUT, OUTPUT> & { name: string };

/** Attaches a name to an AI SDK tool. */
export function named<INPUT, OUTPUT>(name: string, tool: Tool<INPUT, OUTPUT>): NamedTool<INPUT, OUTPUT> {
  return { ...tool, name } as NamedTool<INPUT, OUTPUT>;
}

/**
 * Turns named tools into the record `generateText` takes. Two tools with the same name are a
 * `CONFIG_INVALID` error rather than one silently replacing the other.
 */
export function toToolSet(tools: readonly NamedTool[]): ToolSet {
  const set: ToolSet = {};
  for (const tool of tools) {
    if (Object.hasOwn(set, tool.name)) {
      throw new ToolgateError('CONFIG_INVALID', `two tools are named '${tool.name}'; rename one or leave one toolset out`);
    }
    set[tool.name] = tool;
  }
  return set;
}
