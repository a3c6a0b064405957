import type { ToolSet } from 'ai';
import type { RunnableWorker } from './types.js';
import { RESERVED_TOOL_NAMES } from './loop-tools.js';
import { type ApprovalConfig, type ApprovalDecision, type ApprovalInfo, approvalOf, isBlocked, wrapWithDefaultApproval } from '../approval/approval.js';
import { loadCustomTools } from '../tools-module/load-custom-tools.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { type NamedTool, toToolSet } from '../approval/named-tool.js';
import { native } from '../native/binding.js';
import { cliExecuteTool } from '../toolsets/cli-execute.js';
import { codeAgentTools, type CodeAgentGroup } from '../toolsets/code-agent.js';
import { executableTools } from '../toolsets/executables.js';
import { filesystemToolset } from '../toolsets/filesystem.js';
import { shellToolset } from '../toolsets/shell.js';
import { workerTools } from '../toolsets/workers.js';

/** A worker file as the Rust loader resolved it (snake_case, absolute paths). */
export interface WorkerSpec {
  name: string;
  description?: string;
  model?: string;
  instructions: string;
  compatible_models: string[];
  max_steps?: number;
  approval?: ApprovalConfig;
  path: string;
  work_dir: string;
  readonly: boolean;
  toolsets: {
    filesystem?: { read_only?: boolean; approval?: ApprovalConfig };
    code_agent?: { group?: CodeAgentGroup; approval?: ApprovalConfig };
    shell?: {
      rules?: { pattern: string; approval: ApprovalDecision }[];
      default?: ApprovalDecision;
      timeout?: number;
      max_output_bytes?: number;
      env_passthrough?: string[];
      approval?: ApprovalConfig;
    };
    cli_execute?: {
      allowed_binaries: string[];
      env_passthrough?: string[];
      read_roots?: string[];
      timeout?: number;
      max_output_bytes?: number;
      guardrails?: {
        deny_commands?: { pattern: string; message?: string }[];
        deny_output?: { pattern: string; action?: 'block' | 'redact' }[];
      };
      approval?: ApprovalConfig;
    };
    custom?: { module: string; tools?: string[]; approval?: ApprovalConfig };
    executables?: {
      dirs?: string[];
      timeout?: number;
      tool_timeouts?: Record<string, number>;
      max_output_bytes?: number;
      env_passthrough?: string[];
      approval?: ApprovalConfig;
    };
    workers?: { allowed_workers: string[]; approval?: ApprovalConfig };
  };
  allowed_worker_paths: string[];
  warnings: string[];
}

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
}

const seconds = (value: number | undefined) => (value === undefined ? undefined : value * 1000);

/** Rust serialises absent options as `null`; the toolset options take absent keys. */
function withoutNulls<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutNulls) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).filter(([, entry]) => entry !== null).map(([key, entry]) => [key, withoutNulls(entry)]),
    ) as T;
  }
  return value;
}

/** Reads and checks a worker file without building its tools. */
export function loadWorkerSpec(path: string, options: LoadWorkerOptions = {}): WorkerSpec {
  return withoutNulls(callNative(() => native.loadWorkerSpec(path, options.workDir, options.readonly)) as WorkerSpec);
}

/** The tools of every configured toolset, each gated by its own toolset's approval. */
async function buildToolsets(spec: WorkerSpec): Promise<NamedTool[]> {
  const { toolsets } = spec;
  const workDir = spec.work_dir;
  const tools: NamedTool[] = [];
  if (toolsets.filesystem) {
    tools.push(
      ...filesystemToolset({
        root: workDir,
        readOnly: spec.readonly || (toolsets.filesystem.read_only ?? false),
        ...(toolsets.filesystem.approval ? { approval: toolsets.filesystem.approval } : {}),
      }),
    );
  }
  if (toolsets.code_agent) {
    const group = toolsets.code_agent.group ?? 'all';
    tools.push(
      ...codeAgentTools({
        workDir,
        group: spec.readonly && (group === 'all' || group === 'write') ? 'read' : group,
        ...(toolsets.code_agent.approval ? { approval: toolsets.code_agent.approval } : {}),
      }),
    );
  }
  if (toolsets.shell) {
    const shell = toolsets.shell;
    tools.push(
      shellToolset({
        cwd: workDir,
        ...(shell.rules ? { rules: shell.rules } : {}),
        ...(shell.default ? { default: shell.default } : {}),
        ...(shell.timeout === undefined ? {} : { timeoutMs: seconds(shell.timeout) }),
        ...(shell.max_output_bytes === undefined ? {} : { maxOutputBytes: shell.max_output_bytes }),
        ...(shell.env_passthrough ? { envPassthrough: shell.env_passthrough } : {}),
        ...(shell.approval ? { approval: shell.approval } : {}),
      }),
    );
  }
  if (toolsets.cli_execute) {
    const cli = toolsets.cli_execute;
    tools.push(
      cliExecuteTool({
        workDir,
        allowedBinaries: cli.allowed_binaries,
        ...(cli.env_passthrough ? { envPassthrough: cli.env_passthrough } : {}),
        ...(cli.read_roots ? { readRoots: cli.read_roots } : {}),
        ...(cli.timeout === undefined ? {} : { timeoutMs: seconds(cli.timeout) }),
        ...(cli.max_output_bytes === undefined ? {} : { maxOutputBytes: cli.max_output_bytes }),
        guardrails: {
          denyCommands: cli.guardrails?.deny_commands ?? [],
          denyOutput: cli.guardrails?.deny_output ?? [],
        },
        ...(cli.approval ? { approval: cli.approval } : {}),
      }),
    );
  }
  if (toolsets.custom) {
    const custom = toolsets.custom;
    tools.push(
      ...(await loadCustomTools(custom.module, {
        ...(custom.tools ? { tools: custom.tools } : {}),
        ...(custom.approval ? { approval: custom.approval } : {}),
      })),
    );
  }
  if (toolsets.executables) {
    const executables = toolsets.executables;
    tools.push(
      ...(await executableTools({
        ...(executables.dirs ? { dirs: executables.dirs } : {}),
        workDir,
        ...(executables.timeout === undefined ? {} : { timeoutMs: seconds(executables.timeout) }),
        ...(executables.tool_timeouts ? { toolTimeoutsMs: Object.fromEntries(Object.entries(executables.tool_timeouts).map(([k, v]) => [k, v * 1000])) } : {}),
        ...(executables.max_output_bytes === undefined ? {} : { maxOutputBytes: executables.max_output_bytes }),
        ...(executables.env_passthrough ? { envPassthrough: executables.env_passthrough } : {}),
        ...(executables.approval ? { approval: executables.approval } : {}),
      })),
    );
  }
  if (toolsets.workers) {
    const sandbox = { workDir, readonly: spec.readonly };
    tools.push(...workerTools(spec.allowed_worker_paths, sandbox, toolsets.workers.approval));
  }
  return tools;
}

/**
 * The worker-level `approval` is a floor over every toolset: its per-tool entries and its
 * default join each tool's own decision, and the strictest wins.
 */
function applyWorkerApproval(tools: NamedTool[], approval: ApprovalConfig | undefined): NamedTool[] {
  if (!approval || (approval.default === undefined && !approval.tools)) return tools;
  const known = new Set(tools.map((tool) => tool.name));
  for (const name of Object.keys(approval.tools ?? {})) {
    if (!known.has(name)) {
      throw new ToolgateError(
        'CONFIG_INVALID',
        `approval.tools names '${name}', which no toolset of this worker provides; tools: ${[...known].sort().join(', ')}`,
      );
    }
  }
  return tools.map((tool) => {
    const floor = approval.tools?.[tool.name] ?? approval.default;
    return floor === undefined ? tool : wrapWithDefaultApproval(tool, { tools: { [tool.name]: floor } });
  });
}

/**
 * Loads a worker file (`*.yaml`, `*.yml`, or `*.worker` with YAML front matter and a Markdown
 * body) and builds its tools. Parsing and checks happen in Rust: unknown keys, wrong types and
 * bad values are `CONFIG_INVALID` with file, line and column; relative paths resolve against the
 * worker file's directory.
 */
export async function loadWorker(path: string, options: LoadWorkerOptions = {}): Promise<LoadedWorker> {
  const spec = loadWorkerSpec(path, options);
  const gated = applyWorkerApproval(await buildToolsets(spec), spec.approval);
  for (const tool of gated) {
    if (RESERVED_TOOL_NAMES.includes(tool.name)) {
      throw new ToolgateError('CONFIG_INVALID', `${spec.path}: '${tool.name}' is a reserved tool name (it ends the run); rename that tool`);
    }
  }
  const toolApproval: Record<string, ApprovalInfo> = {};
  for (const tool of gated) {
    const info = approvalOf(tool);
    if (info) toolApproval[tool.name] = info;
  }
  const tools = toToolSet(gated.filter((tool) => !isBlocked(tool)));
  toToolSet(gated); // name clashes among blocked tools are configuration errors too
  return {
    name: spec.name,
    ...(spec.description ? { description: spec.description } : {}),
    instructions: spec.instructions,
    ...(spec.model ? { model: spec.model } : {}),
    ...(spec.max_steps ? { maxSteps: spec.max_steps } : {}),
    compatibleModels: spec.compatible_models,
    path: spec.path,
    workDir: spec.work_dir,
    readonly: spec.readonly,
    tools,
    toolApproval,
    warnings: spec.warnings,
  };
}

/** The JSON Schema of worker files (also shipped as `schemas/worker.schema.json`). */
export function workerJsonSchema(): unknown {
  return JSON.parse(native.workerJsonSchema()) as unknown;
}

