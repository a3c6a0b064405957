/**
 * What a tool's calls depend on besides its name, description and approval: the work directory,
 * rules, sandbox and settings it was built with, or the worker plan it was built from. A run
 * state is bound to the bindings of the tools of the worker that issued it, so a deferred run is
 * never resumed on a worker whose tools would decide calls differently (the core digests them:
 * `crates/toolgate-core/src/run/fingerprint.rs`).
 */
export interface ToolBinding {
  /** The work directory the tool is confined to (absolute). */
  workDir?: string;
  readOnly?: boolean;
  /** What decides its calls: shell rules, allowlists, guardrails, path rules. */
  rules?: unknown;
  /** Its kernel sandbox setting. */
  sandbox?: unknown;
  /** Any other setting that changes what a call does. */
  settings?: unknown;
  /** The binding of the worker plan it was built from (`loadWorker`). */
  plan?: string;
  /** Its worker's position in that plan. */
  worker?: number;
}

const BINDINGS = new WeakMap<object, ToolBinding>();

/**
 * Declares what `tool`'s calls depend on (JSON-serialisable values). Every toolset toolgate
 * builds binds its tools; bind a tool you build yourself when its behaviour depends on
 * something its description does not say (a directory, a URL, a credential's scope), so that a
 * deferred run's state issued with one value is refused on a worker built with another.
 */
export function bindTool<T extends object>(tool: T, binding: ToolBinding): T {
  BINDINGS.set(tool, binding);
  return tool;
}

/** `bindTool` for each tool of a toolset. */
export function bindTools<T extends object>(tools: readonly T[], binding: ToolBinding): T[] {
  for (const tool of tools) bindTool(tool, binding);
  return [...tools];
}

/** What `tool` was bound to, if anything. */
export function bindingOf(tool: object | undefined): ToolBinding | undefined {
  return tool ? BINDINGS.get(tool) : undefined;
}

/**
 * The settings of a toolset's options that are not bound elsewhere (work directory, rules,
 * sandbox, approval): what else changes what its calls do.
 */
export function settingsOf(options: object, bound: readonly string[]): Record<string, unknown> {
  const skipped = new Set(['workDir', 'cwd', 'sandbox', 'readOnly', 'approval', ...bound]);
  return Object.fromEntries(Object.entries(options).filter(([key, value]) => !skipped.has(key) && typeof value !== 'function'));
}
