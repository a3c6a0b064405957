/**
 * `loadCustomTools`: turns the exports of a `tools.ts` module into gated AI SDK tools.
 *
 * Two formats are accepted side by side:
 * 1. a function `foo` plus a zod schema export `fooSchema`; the description is the JSDoc comment
 *    above `foo` in the source (else `Custom tool: foo`);
 * 2. a tool object with `name`, `description`, `inputSchema`, `execute` and optionally its own
 *    `needsApproval` (made with the AI SDK's `tool()` or written out).
 */
import { readFileSync } from 'node:fs';
import type { ApprovalConfig } from '../approval/approval.js';
import { gateToolset } from '../approval/gate-toolset.js';
import type { NamedTool } from '../approval/named-tool.js';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { type Candidate, classifyExports } from './classify.js';
import { checkModuleFile, importModule, loadedFiles, resolveModulePath } from './import-module.js';
import { jsDocOfExport, type ModuleDocs, renderJsDoc, scanModuleDocs } from './jsdoc.js';

export interface LoadCustomToolsOptions {
  /**
   * Whitelist of tool names to expose, in this order. Omitted: every valid tool of the module,
   * sorted by name, and exports that are not tools are ignored. Given: each name must be a valid
   * tool of the module, and only those are loaded (other exports are not checked).
   */
  tools?: readonly string[];
  /** Approval for the loaded tools: a default and per-tool decisions (see `wrapWithDefaultApproval`). */
  approval?: ApprovalConfig;
  /** Directory a relative `modulePath` is resolved against; default `process.cwd()`. */
  baseDir?: string;
  /**
   * Milliseconds importing the module (its top-level code and imports) may take before it fails
   * with `MODULE_INVALID`; default `LIMITS.defaultImportTimeoutMs` (30 s).
   */
  importTimeoutMs?: number;
}

/** The loaded tools, each already gated by `wrapWithDefaultApproval`. */
export type LoadCustomToolsResult = NamedTool[];

/** The tools a module offers, not gated yet, and every valid tool name it has. */
export interface ModuleTools {
  tools: NamedTool[];
  /** Every valid tool name of the module, whitelisted or not (approval entries may name them). */
  available: string[];
  /** Every file importing the module loaded (see `loadedFiles`): the core protects them. */
  files: string[];
}

/**
 * Imports the tools module at `path` (absolute) and picks its tools: every valid tool sorted by
 * name, or the `whitelist` in its order. `modulePath` is the path as the caller gave it, for
 * messages. Errors: `FILE_NOT_FOUND`, `MODULE_INVALID`.
 */
export async function readToolsModule(
  path: string,
  whitelist: readonly string[] | undefined,
  modulePath: string,
  importTimeoutMs?: number,
): Promise<ModuleTools> {
  checkModuleFile(path, modulePath);
  const imported = await importModule(path, importTimeoutMs === undefined ? {} : { timeoutMs: importTimeoutMs });
  const { candidates, others, exportNames } = classifyExports(imported);
  const { selected, problems, missing } = select(candidates, others, whitelist);
  if (problems.length > 0) {
    const available = missing ? `\navailable tools: ${list(toolNames(candidates))}; exports: ${list(exportNames)}` : '';
    const body = problems.length === 1 ? ` ${problems[0]}` : `\n${problems.map((problem) => `  - ${problem}`).join('\n')}`;
    throw new ToolgateError('MODULE_INVALID', `tools module ${path}:${body}${available}`);
  }
  let docs: ModuleDocs | undefined;
  const descriptionOf = (exportName: string) => {
    docs ??= scanModuleDocs(readFileSync(path, 'utf8'));
    const comment = jsDocOfExport(docs, exportName);
    return (comment && renderJsDoc(comment)) || `Custom tool: ${exportName}`;
  };
  const ordered = whitelist ? selected : [...selected].sort((a, b) => compare(a.toolName ?? '', b.toolName ?? ''));
  return {
    tools: ordered.map((candidate) => build(candidate, descriptionOf)),
    available: toolNames(candidates),
    files: loadedFiles(path),
  };
}

/**
 * Loads a tools module (TypeScript or JavaScript, no build step) and returns its tools, gated with
 * `options.approval` (decided by the core). Errors: `FILE_NOT_FOUND` for a path that does not
 * exist; `MODULE_INVALID` for a syntax error (with file, line and column), a module that throws
 * while loading, a whitelisted name that is not a tool, a missing or non-zod `fooSchema`, or a
 * malformed tool object; `CONFIG_INVALID` for an unknown option, a bad whitelist or approval
 * configuration, or an approval entry that names no tool of the module.
 */
export async function loadCustomTools(
  modulePath: string,
  options: LoadCustomToolsOptions = {},
): Promise<LoadCustomToolsResult> {
  const checked = callNative(() => native.checkLoadCustomToolsOptions(options));
  const path = resolveModulePath(modulePath, checked.baseDir);
  const module = await readToolsModule(path, checked.tools, modulePath, checked.importTimeoutMs);
  return gateToolset('custom', module.tools, options.approval, module.available, `tools module ${path}`);
}

function build(candidate: Candidate, descriptionOf: (exportName: string) => string): NamedTool {
  if (candidate.format === 'object') return { ...candidate.tool, name: candidate.toolName } as NamedTool;
  const { run, toolName, schema, exportName } = candidate;
  return {
    name: toolName,
    description: descriptionOf(exportName),
    inputSchema: schema,
    // The AI SDK has already validated the input against the schema; errors thrown by the
    // function are tool errors, which the SDK reports to the model.
    execute: async (input: unknown) => run(input),
  } as NamedTool;
}

function select(candidates: readonly Candidate[], others: ReadonlyMap<string, string>, whitelist: readonly string[] | undefined) {
  const problems: string[] = [];
  let missing = false;
  let selected: Candidate[];
  if (whitelist === undefined) {
    selected = [...candidates];
  } else {
    selected = [];
    for (const requested of whitelist) {
      const byName = candidates.filter((candidate) => candidate.toolName === requested);
      const byExport = candidates.find((candidate) => candidate.exportName === requested);
      if (byName.length > 0) selected.push(...byName);
      else if (byExport?.toolName !== undefined) {
        problems.push(`'${requested}' is the export of the tool named '${byExport.toolName}'; whitelist '${byExport.toolName}'`);
      } else if (byExport) {
        selected.push(byExport); // its problems say what is wrong with its name
      } else {
        missing = true;
        problems.push(others.get(requested) ?? `has no export and no tool named '${requested}'`);
      }
    }
  }
  for (const candidate of selected) problems.push(...candidate.problems);
  const exportsByName = new Map<string, string[]>();
  for (const { toolName, exportName } of selected) {
    if (toolName !== undefined) exportsByName.set(toolName, [...(exportsByName.get(toolName) ?? []), exportName]);
  }
  for (const [toolName, exportNames] of exportsByName) {
    if (exportNames.length > 1) {
      const quoted = exportNames.map((name) => `'${name}'`);
      const which = quoted.length === 2 ? `${quoted.join(' and ')} are both` : `${quoted.join(', ')} are all`;
      problems.push(`exports ${which} tools named '${toolName}'; give each tool its own name`);
    }
  }
  return { selected, problems, missing };
}

function toolNames(candidates: readonly Candidate[]): string[] {
  return [...new Set(candidates.flatMap((candidate) => (candidate.toolName === undefined ? [] : [candidate.toolName])))].sort(compare);
}

function list(names: readonly string[]): string {
  return names.length > 0 ? names.join(', ') : '(none)';
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
