import { dirname } from 'node:path';
import type { ToolSet } from 'ai';
import { type ApprovalInfo, approvalOf, isBlocked, ownApproval, type ResolvedApproval } from '../approval/approval.js';
import { attachDecided } from '../approval/gate-toolset.js';
import { type NamedTool, toToolSet } from '../approval/named-tool.js';
import { bindTools } from '../approval/tool-binding.js';
import { SavedRules, withSavedRules } from '../approval/saved-rules.js';
import { native } from '../native/binding.js';
import { awaitNative, callNative } from '../native/errors.js';
import { type CallerPathRules, FileTools } from '../native/file-tools.js';
import { PACKAGE_ROOT } from '../native/package-root.js';
import { warnSandbox } from '../native/sandbox.js';
import { connectServers, type McpConnection, reportOf } from '../mcp/connect.js';
import { gatedMcpTools } from '../mcp/toolset.js';
import { type ModuleTools, readToolsModule } from '../tools-module/load-custom-tools.js';
import { buildBuiltinTools } from '../toolsets/builtins.js';
import { cliExecuteToolOf } from '../toolsets/cli-execute.js';
import { buildCodeAgentTools } from '../toolsets/code-agent.js';
import { buildExecutableTools, ExecutableToolRegistry, reportDiagnostics } from '../toolsets/executables.js';
import { buildFilesystemTools } from '../toolsets/filesystem.js';
import { shellTool } from '../toolsets/shell.js';
import { delegateTool } from './delegate-tool.js';
import { anchorModelSpec } from './models.js';
import { rememberPlan } from './plans.js';
import type { RunnableWorker } from './types.js';

/** A worker file as the core read and resolved it (absolute paths, instructions in place). */
export type WorkerSpec = native.PlannedWorkerInfo;

export interface LoadWorkerOptions {
  /** Replaces the sandbox root as the work directory (the CLI's `--work-dir`). */
  workDir?: string;
  /** Forces a read-only sandbox (a worker called by a read-only worker inherits it). */
  readonly?: boolean;
}

/** A worker ready to run: its AI SDK tools are built and gated. */
export interface LoadedWorker extends RunnableWorker {
  name: string;
  description?: string;
  instructions: string;
  model?: string;
  maxSteps?: number;
  compatibleModels: string[];
  toolCallFormat: 'native' | 'xml';
  allowEmptyInput: boolean;
  /** The JSON Schema (JSON text) of the final result, from `output_schema_ref`. */
  outputSchema?: string;
  /** The worker file (canonical path). */
  path: string;
  workDir: string;
  readonly: boolean;
  /** The tools the model is offered: every toolset's tools minus the blocked ones. */
  tools: ToolSet;
  /** How each tool is gated, blocked ones included (for ai 7's call-level `toolApproval`, and for display). */
  toolApproval: Record<string, ApprovalInfo>;
  /** Keys accepted but not acted on, and similar notes. */
  warnings: string[];
  /** The worker-level kernel sandbox, as the core decided it. */
  sandbox: native.SandboxSummary;
  /**
   * Ends what the worker started when it was loaded: the MCP servers of its `mcp` toolset (and
   * of the workers it may call). Call it when the run is over, also after an abort.
   */
  close(): Promise<void>;
  /** The audit log its runs append to (the worker file's `audit.file`), absolute. */
  auditFile?: string;
}

/** Plans a worker file and everything it may call (off the JavaScript thread). */
async function plan(path: string, options: LoadWorkerOptions): Promise<native.WorkerPlan> {
  const checked = callNative(() => native.checkLoadWorkerOptions(options));
  return awaitNative(native.planWorker(path, checked.workDir, checked.readonly));
}

/** Reads and checks a worker file (and the workers it may call) without building its tools. */
export async function loadWorkerSpec(path: string, options: LoadWorkerOptions = {}): Promise<WorkerSpec> {
  const [top] = (await plan(path, options)).workers();
  if (!top) throw new Error(`the plan of '${path}' has no worker`);
  return top;
}

/**
 * Loads a worker file (`*.yaml`, `*.yml`, or `*.worker` with YAML front matter and a Markdown
 * body) and builds its tools, and those of every worker it may call. Everything is read now and
 * frozen: a worker file, tools module or executable tool of the graph that changes later is
 * refused when its worker is called. Parsing, policies and approvals are the core's: unknown keys,
 * wrong types and bad values are `CONFIG_INVALID` with file, line and column; relative paths
 * resolve against the worker file's directory.
 */
export async function loadWorker(path: string, options: LoadWorkerOptions = {}): Promise<LoadedWorker> {
  const [top] = await buildPlannedWorkers(await plan(path, options));
  if (!top) throw new Error(`the plan of '${path}' has no worker`);
  return top;
}

/** A plan's workers with their tools modules read and MCP servers connected. */
export interface ListedPlan {
  infos: native.PlannedWorkerInfo[];
  modules: Map<number, ModuleTools>;
  /** The connected MCP servers of each worker with an `mcp` toolset. */
  mcp: Map<number, McpConnection[]>;
  /** What they hold, as the core reads it (for `decide`, `report`, `checkPath`). */
  reports: { modules: native.ModuleReport[]; mcp: native.McpWorkerReport[] };
  /** Workers whose MCP servers could not be listed (only with `tolerateMcpFailures`), and why. */
  mcpFailures: Map<number, string>;
  /** Ends every MCP server the plan connected. */
  close: () => Promise<void>;
}

/** A plan's workers with their tools modules read, MCP servers connected and tools decided. */
export interface DecidedPlan extends ListedPlan {
  decided: native.PlannedTool[][];
}

/**
 * Reads the tools modules of a plan and connects its MCP servers (only JavaScript can), then
 * lets the core decide every tool's approval with what they hold. The caller owns the servers:
 * call `close()` when done.
 */
export async function decidePlannedWorkers(workerPlan: native.WorkerPlan): Promise<DecidedPlan> {
  const listed = await listPlannedWorkers(workerPlan);
  try {
    const decided = callNative(() => workerPlan.decide(listed.reports.modules, listed.reports.mcp));
    return { ...listed, decided };
  } catch (error) {
    await listed.close();
    throw error;
  }
}

/**
 * Reads the tools modules of a plan and connects its MCP servers. With `tolerateMcpFailures`
 * (for `toolgate check`), a worker whose servers cannot be listed is left without a report and
 * the failure is kept in `mcpFailures`. The caller owns the servers: call `close()` when done.
 */
export async function listPlannedWorkers(
  workerPlan: native.WorkerPlan,
  options: { tolerateMcpFailures?: boolean } = {},
): Promise<ListedPlan> {
  const infos = workerPlan.workers();
  const modules = new Map<number, ModuleTools>();
  for (const [index, info] of infos.entries()) {
    if (info.custom) modules.set(index, await readToolsModule(info.custom.module, info.custom.tools, info.custom.module));
  }
  // The modules were read after the plan froze them: make sure they are the versions it froze.
  for (const index of modules.keys()) callNative(() => workerPlan.verify(index));
  // What they imported is configuration too, and so is toolgate's own installation: every
  // sandbox of the graph protects them, before any process that could write them starts (the
  // MCP servers below are the first).
  callNative(() =>
    workerPlan.protectModuleImports(
      [...modules].map(([worker, module]) => ({ worker, files: module.files })),
      PACKAGE_ROOT,
    ),
  );
  const mcp = new Map<number, McpConnection[]>();
  const close = async () => {
    const all = [...mcp.values()].flat();
    mcp.clear();
    await Promise.all(all.map((connection) => connection.close()));
  };
  const mcpFailures = new Map<number, string>();
  try {
    for (const [index, info] of infos.entries()) {
      const toolset = info.mcp ? callNative(() => workerPlan.mcpToolset(index)) : null;
      if (!toolset) continue;
      try {
        mcp.set(index, await connectServers(toolset));
      } catch (error) {
        if (!options.tolerateMcpFailures) throw error;
        mcpFailures.set(index, error instanceof Error ? error.message : String(error));
      }
    }
    const reports = {
      modules: [...modules].map(([worker, module]) => ({
        worker,
        available: module.available,
        selected: module.tools.map((tool) => ({ name: tool.name, own: ownApproval(tool) })),
      })),
      mcp: [...mcp].map(([worker, connections]) => ({ worker, servers: reportOf(connections) })),
    };
    return { infos, modules, mcp, reports, mcpFailures, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Builds every worker of a plan: imports each tools module once (only JavaScript can), connects
 * the MCP servers, lets the core decide every tool's approval with what they hold, and attaches
 * the decisions. The top worker comes first.
 */
export async function buildPlannedWorkers(workerPlan: native.WorkerPlan): Promise<LoadedWorker[]> {
  const { infos, modules, mcp, decided, close } = await decidePlannedWorkers(workerPlan);
  for (const info of infos) warnSandbox(info.sandboxWarning);
  try {
    // Every tool is bound to the plan it was built from: a run state it issues is never
    // resumed on tools built from another plan (another work directory, rules, sandbox …).
    const binding = callNative(() => native.workerPlanFingerprint(workerPlan));
    const workers: LoadedWorker[] = [];
    for (const [index, info] of infos.entries()) {
      const context: BuildContext = { plan: workerPlan, binding, index, info, infos, modules, mcp, decided: decided[index] ?? [], workers };
      workers.push(buildWorker(context, close));
    }
    return workers;
  } catch (error) {
    await close();
    throw error;
  }
}

interface BuildContext {
  plan: native.WorkerPlan;
  /** The plan's binding (see `tool-binding.ts`). */
  binding: string;
  index: number;
  info: native.PlannedWorkerInfo;
  /** Every worker of the plan, by index (to find the callers' path rules). */
  infos: readonly native.PlannedWorkerInfo[];
  modules: ReadonlyMap<number, ModuleTools>;
  /** The connected MCP servers of each worker with an `mcp` toolset. */
  mcp: ReadonlyMap<number, McpConnection[]>;
  decided: readonly native.PlannedTool[];
  /** Every worker of the plan, filled in order; delegate tools look their worker up when called. */
  workers: readonly LoadedWorker[];
}

function approvals(context: BuildContext, toolset: native.ToolsetKind): ResolvedApproval[] {
  return context.decided.filter((tool) => tool.toolset === toolset).map((tool) => tool.approval);
}

/**
 * The path rules of every worker above this one (both of their file toolsets): a caller that
 * blocks `.env` must not be able to reach it by delegating to a worker without rules.
 */
function callerPathRules(context: BuildContext): CallerPathRules[] {
  const rules: CallerPathRules[] = [];
  let parent = context.info.parent;
  while (parent !== null && parent !== undefined) {
    const caller = context.infos[parent];
    if (!caller) break;
    for (const list of [caller.filesystemPathRules, caller.codeAgentPathRules]) {
      if (list) rules.push({ root: caller.workDir, rules: list });
    }
    parent = caller.parent;
  }
  return rules;
}

/** The tools of one planned worker, each gated by the decision the core made. */
function buildTools(context: BuildContext): NamedTool[] {
  const { plan: workerPlan, index, info } = context;
  const tools: NamedTool[] = [];
  // Each file toolset has its own path rules, so each gets its own FileTools; the rules of
  // every calling worker apply below it too (they only make calls stricter). Neither may
  // change the graph's configuration (the plan's protected paths).
  const callerRules = callerPathRules(context);
  const protectedPaths = info.filesystemTools || info.codeAgentGroup ? callNative(() => workerPlan.fileProtection(index)) : [];
  if (info.filesystemTools) {
    const files = new FileTools(info.workDir, info.filesystemPathRules ?? undefined, callerRules, protectedPaths);
    tools.push(...buildFilesystemTools(files, approvals(context, 'filesystem')));
  }
  if (info.codeAgentGroup) {
    const files = new FileTools(info.workDir, info.codeAgentPathRules ?? undefined, callerRules, protectedPaths);
    tools.push(...buildCodeAgentTools(files, approvals(context, 'code_agent')));
  }
  const shell = callNative(() => workerPlan.shellPolicy(index));
  const [shellApproval] = approvals(context, 'shell');
  if (shell && shellApproval) tools.push(shellTool(shell, shellApproval));
  const cli = callNative(() => workerPlan.cliExecutePolicy(index));
  const [cliApproval] = approvals(context, 'cli_execute');
  if (cli && cliApproval) tools.push(cliExecuteToolOf(cli, cliApproval));
  const module = context.modules.get(index);
  if (module) tools.push(...attachDecided(module.tools, approvals(context, 'custom')));
  const registry = callNative(() => workerPlan.executableRegistry(index));
  if (registry) {
    const executables = new ExecutableToolRegistry({}, registry);
    const diagnostics = executables.diagnostics();
    if (diagnostics.length > 0) reportDiagnostics(diagnostics);
    tools.push(...buildExecutableTools(executables, approvals(context, 'executables')));
  }
  const builtins = callNative(() => workerPlan.builtinTools(index));
  if (builtins) tools.push(...buildBuiltinTools(builtins, approvals(context, 'builtins')));
  const delegates = info.delegates.map((delegate) =>
    delegateTool(delegate, workerPlan, () => {
      const called = context.workers[delegate.worker];
      if (!called) throw new Error(`worker ${delegate.worker} of the plan was not built`);
      return called;
    }),
  );
  tools.push(...attachDecided(delegates, approvals(context, 'workers')));
  const mcpToolset = context.mcp.has(index) ? callNative(() => workerPlan.mcpToolset(index)) : null;
  if (mcpToolset) tools.push(...gatedMcpTools(mcpToolset, context.mcp.get(index)!, approvals(context, 'mcp')));
  return bindTools(tools, { plan: context.binding, worker: index });
}

function buildWorker(context: BuildContext, close: () => Promise<void>): LoadedWorker {
  const { info } = context;
  // Rules saved in the project permissions file answer the questions of this worker's tools.
  const saved = new SavedRules(context.plan, context.index);
  const gated = buildTools(context).map((tool) => (isBlocked(tool) ? tool : withSavedRules(tool, saved)));
  const toolApproval: Record<string, ApprovalInfo> = {};
  for (const tool of gated) {
    const approval = approvalOf(tool);
    if (approval) toolApproval[tool.name] = approval;
  }
  const worker: LoadedWorker = {
    name: info.name,
    ...(info.description ? { description: info.description } : {}),
    instructions: info.instructions,
    // A `scripted:` path in the worker file is relative to the worker file's folder.
    ...(info.model ? { model: anchorModelSpec(info.model, dirname(info.path)) } : {}),
    ...(info.maxSteps ? { maxSteps: info.maxSteps } : {}),
    compatibleModels: info.compatibleModels,
    toolCallFormat: info.toolCallFormat,
    allowEmptyInput: info.allowEmptyInput,
    ...(info.outputSchema ? { outputSchema: info.outputSchema } : {}),
    path: info.path,
    workDir: info.workDir,
    readonly: info.readonly,
    tools: toToolSet(gated.filter((tool) => !isBlocked(tool))),
    toolApproval,
    warnings: info.warnings,
    sandbox: info.sandbox,
    close,
    ...(info.auditFile ? { auditFile: info.auditFile } : {}),
  };
  // Only the top worker's plan describes the whole graph a run state covers.
  if (context.index === 0) rememberPlan(worker, context.plan);
  return worker;
}

/** The JSON Schema of worker files (also shipped as `schemas/worker.schema.json`). */
export function workerJsonSchema(): unknown {
  return JSON.parse(native.workerJsonSchema());
}
