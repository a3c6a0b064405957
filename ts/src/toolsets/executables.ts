import { isAbsolute, resolve } from 'node:path';
import { jsonSchema, tool, type JSONSchema7 } from 'ai';
import { checkApprovalConfig, strictest, wrapWithDefaultApproval, type ApprovalConfig, type ApprovalDecision } from '../approval/approval.js';
import { awaitNative, callNative } from '../native/errors.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { native } from '../native/binding.js';

/** The prefix of every executable tool's name as the model sees it. */
export const EXECUTABLE_TOOL_PREFIX = 'custom_tool_';

/** Where to find executable tools and how to run them. */
export interface ExecutableToolsOptions {
  /**
   * Tool directories, highest precedence first (an earlier directory wins a name clash; the
   * clash is reported). Relative paths start at `workDir`. Default: `<workDir>/toolgate-tools`,
   * then `~/.toolgate/tools` (both may be missing).
   */
  dirs?: readonly string[];
  /** Where tools run, and where relative `dirs` start (default: `process.cwd()`). */
  workDir?: string;
  /** Kill a tool's whole process group after this many milliseconds (default 30000). */
  timeoutMs?: number;
  /** Per-tool timeouts in milliseconds, by tool name; they override `timeoutMs`. */
  toolTimeoutsMs?: Readonly<Record<string, number>>;
  /** Cap for each of stdout and stderr in bytes (default 1 MiB); a marker names the cut. */
  maxOutputBytes?: number;
  /** Environment variables passed to tools besides PATH, HOME, USER and LANG. */
  envPassthrough?: readonly string[];
  /**
   * Approval: `default` (else `ask`) and per-tool decisions keyed by tool name, with or without
   * the `custom_tool_` prefix.
   */
  approval?: ApprovalConfig;
  /**
   * `use` (default): unchanged tools are answered from the cache and never spawned for
   * discovery; `refresh`: ask every tool again, then store; `off`: neither read nor write.
   */
  cache?: 'use' | 'refresh' | 'off';
  /** Cache directory (default `$XDG_CACHE_HOME/toolgate`, else `~/.cache/toolgate`). */
  cacheDir?: string;
  /**
   * Receives what discovery found wrong (invalid tools, shadowed names, missing directories).
   * Default: one `console.warn` line each, so that nothing is dropped silently.
   */
  onDiagnostics?: (diagnostics: readonly ExecutableToolDiagnostic[]) => void;
}

/** A discovered tool. */
export interface ExecutableToolSpec {
  name: string;
  description: string;
  inputSchema: JSONSchema7;
  format: 'protocol' | 'manifest';
  /** The executable (protocol) or `tool.yaml` (manifest) as found in its directory. */
  source: string;
  /** The program that runs, symlinks resolved. */
  program: string;
  /** The tool directory it came from. */
  directory: string;
  version?: string;
  usage?: string;
  parameters?: { name: string; type: string; required: boolean; description?: string }[];
}

/** Why something in a tool directory is not (or not the) tool. */
export interface ExecutableToolDiagnostic {
  path: string;
  kind: 'invalid' | 'shadowed' | 'missing_directory';
  reason: string;
}

export interface ExecutableToolDiscovery {
  tools: ExecutableToolSpec[];
  diagnostics: ExecutableToolDiagnostic[];
  /** What the discovery had to do: `spawned` description processes, cache hits, listings. */
  stats: { spawned: number; fromCache: number; fromMemory: number; listedDirectories: number };
}

/** What a tool returned. */
export interface ExecutableToolResult {
  /** stdout parsed as JSON when it is JSON, else the text. */
  result: unknown;
  durationMs: number;
  /** Whether the output was cut at `maxOutputBytes` (the result then ends with a marker). */
  truncated: boolean;
  /** What the tool wrote to stderr. */
  stderr: string;
}

type NativeRegistry = InstanceType<typeof native.ExecutableToolRegistry>;

/**
 * The executable tools of a set of directories. Discovery, caching, input validation and
 * running all happen in the Rust core; this class only forwards.
 */
export class ExecutableToolRegistry {
  readonly #native: NativeRegistry;
  /** Where tools run. */
  readonly workDir: string;

  constructor(options: Omit<ExecutableToolsOptions, 'approval' | 'onDiagnostics'> & { parallelism?: number } = {}) {
    this.workDir = resolve(options.workDir ?? process.cwd());
    this.#native = callNative(
      () =>
        new native.ExecutableToolRegistry({
          workDir: this.workDir,
          dirs: options.dirs?.map((dir) => ({ path: isAbsolute(dir) ? dir : resolve(this.workDir, dir), optional: false })),
          timeoutMs: options.timeoutMs,
          toolTimeoutsMs: options.toolTimeoutsMs ? { ...options.toolTimeoutsMs } : undefined,
          maxOutputBytes: options.maxOutputBytes,
          envPassthrough: options.envPassthrough ? [...options.envPassthrough] : undefined,
          cache: options.cache,
          cacheDir: options.cacheDir,
          parallelism: options.parallelism,
        }),
    );
  }

  /**
   * Discovers the tools. When nothing changed since the last refresh this costs only `stat`
   * calls; `force` asks every tool for its description again.
   */
  async refresh(options: { force?: boolean } = {}): Promise<ExecutableToolDiscovery> {
    return JSON.parse(await awaitNative(this.#native.refresh(options.force ?? false))) as ExecutableToolDiscovery;
  }

  /** The tools of the last refresh, highest precedence first. */
  tools(): ExecutableToolSpec[] {
    return JSON.parse(this.#native.toolsJson()) as ExecutableToolSpec[];
  }

  /** The problems found by the last refresh. */
  diagnostics(): ExecutableToolDiagnostic[] {
    return JSON.parse(this.#native.diagnosticsJson()) as ExecutableToolDiagnostic[];
  }

  /**
   * Checks `input` against the tool's schema (throws `INVALID_INPUT` with JSON pointers before
   * anything runs) and runs the tool. Aborting `signal` kills its whole process group and
   * rejects with the signal's reason. Other errors: `TOOL_NOT_FOUND`, `TIMEOUT`, `TOOL_FAILED`.
   */
  async run(name: string, input: unknown, options: { signal?: AbortSignal } = {}): Promise<ExecutableToolResult> {
    return this.prepare(name, input).start(options.signal);
  }

  /**
   * Checks `input` and returns the run without starting it: `start()` runs it, `kill()` stops
   * it. Used where a question (approval) comes between the check and the run.
   */
  prepare(name: string, input: unknown): PreparedToolRun {
    const handle = callNative(() => this.#native.prepareRun(name, input ?? {}));
    return { start: (signal?: AbortSignal) => runHandle(handle, signal), kill: () => handle.kill() };
  }
}

/** A checked tool run that has not started. */
export interface PreparedToolRun {
  start: (signal?: AbortSignal) => Promise<ExecutableToolResult>;
  kill: () => void;
}

type NativeRunHandle = ReturnType<NativeRegistry['prepareRun']>;

async function runHandle(handle: NativeRunHandle, signal?: AbortSignal): Promise<ExecutableToolResult> {
  signal?.throwIfAborted();
  const onAbort = () => handle.kill();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const output = await awaitNative(handle.wait());
    return { result: output.result, durationMs: output.durationMs, truncated: output.truncated, stderr: output.stderr };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The default directories for `workDir`: `<workDir>/toolgate-tools`, then `~/.toolgate/tools`. */
export function defaultToolDirectories(workDir: string = process.cwd()): string[] {
  return native.defaultToolDirectories(resolve(workDir)).map((dir) => dir.path);
}

function reportDiagnostics(diagnostics: readonly ExecutableToolDiagnostic[]): void {
  for (const diagnostic of diagnostics) {
    console.warn(`toolgate: executable tool ${diagnostic.kind.replace('_', ' ')}: ${diagnostic.path}: ${diagnostic.reason}`);
  }
}

/** The explicit decision for tool `name` from `approval.tools` (bare or prefixed key). */
function explicitDecision(approval: ApprovalConfig | undefined, name: string): ApprovalDecision | undefined {
  const entries = [approval?.tools?.[name], approval?.tools?.[`${EXECUTABLE_TOOL_PREFIX}${name}`]].filter(
    (decision): decision is ApprovalDecision => decision !== undefined,
  );
  return entries.length > 0 ? strictest(...entries) : undefined;
}

/** The AI SDK tool for one discovered executable tool. */
export function executableTool(registry: ExecutableToolRegistry, spec: ExecutableToolSpec, approval?: ApprovalConfig): NamedTool {
  const modelName = `${EXECUTABLE_TOOL_PREFIX}${spec.name}`;
  const base = tool({
    description: spec.description,
    inputSchema: jsonSchema<Record<string, unknown>>(spec.inputSchema),
    execute: async (input: Record<string, unknown>, { abortSignal }) => {
      const output = await registry.run(spec.name, input, abortSignal ? { signal: abortSignal } : {});
      return { result: output.result, durationMs: output.durationMs, truncated: output.truncated };
    },
  });
  const explicit = explicitDecision(approval, spec.name);
  return wrapWithDefaultApproval(named(modelName, base), {
    default: approval?.default ?? 'ask',
    tools: explicit ? { [modelName]: explicit } : {},
  });
}

/**
 * Discovers the executable tools of `dirs` (protocol executables and `<name>/tool.yaml`
 * manifests) and returns them as AI SDK tools named `custom_tool_<name>`, gated with approval
 * `ask` unless configured otherwise. Inputs are checked against each tool's JSON Schema before
 * it runs; runs get a reduced environment, `workDir` as cwd, a timeout that kills the process
 * group and an output cap; `options.abortSignal` of `execute` kills the tool.
 */
export async function executableTools(options: ExecutableToolsOptions = {}): Promise<NamedTool[]> {
  checkApprovalConfig(options.approval, 'executables');
  const registry = new ExecutableToolRegistry(options);
  const discovery = await registry.refresh();
  if (discovery.diagnostics.length > 0) (options.onDiagnostics ?? reportDiagnostics)(discovery.diagnostics);
  return discovery.tools.map((spec) => executableTool(registry, spec, options.approval));
}
