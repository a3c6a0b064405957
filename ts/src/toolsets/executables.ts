import { resolve } from 'node:path';
import { jsonSchema, tool, type JSONSchema7 } from 'ai';
import type { ApprovalConfig, ResolvedApproval } from '../approval/approval.js';
import { attachDecided, gateToolset } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTools, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { awaitNative, callNative } from '../native/errors.js';
import { withRefusals, type RefusedConnection } from '../native/network-call.js';
import { runProcess } from '../native/process-handle.js';
import { type SandboxOption, warnSandbox } from '../native/sandbox.js';
import { terminalText } from '../native/terminal-text.js';

/** The prefix of every executable tool's name as the model sees it (the core's). */
export const EXECUTABLE_TOOL_PREFIX: string = LIMITS.executableToolPrefix;

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
  /** Environment variables passed to tools besides PATH, LANG, LC_*, TZ and USER (HOME and TMPDIR are private per run). */
  envPassthrough?: readonly string[];
  /**
   * The kernel sandbox of every run (default `{ mode: 'enforce', network: false }`). A tool's
   * `description`, run at discovery before anyone was asked, gets no network and a read-only
   * work directory whatever this says: a checkout's `toolgate-tools/` is untrusted code.
   * See {@link SandboxOption}.
   */
  sandbox?: SandboxOption;
  /**
   * Approval: `default` (else `ask`) and per-tool decisions keyed by tool name, with or without
   * the `custom_tool_` prefix.
   */
  approval?: ApprovalConfig;
  /**
   * `use` (default): unchanged tools are answered from the cache and never spawned for
   * discovery; `refresh`: ask every tool again, then store; `off`: neither read nor write.
   */
  cache?: native.CacheMode;
  /** Cache directory (default `$XDG_CACHE_HOME/toolgate`, else `~/.cache/toolgate`). */
  cacheDir?: string;
  /**
   * Receives what discovery found wrong (invalid tools, shadowed names, missing directories).
   * Default: one `console.warn` line each, so that nothing is dropped silently.
   */
  onDiagnostics?: (diagnostics: readonly ExecutableToolDiagnostic[]) => void;
}

/** A discovered tool. */
export type ExecutableToolSpec = Omit<native.ExecutableToolSpec, 'inputSchema'> & { inputSchema: JSONSchema7 };

/** Why something in a tool directory is not (or not the) tool. */
export type ExecutableToolDiagnostic = native.ExecutableToolDiagnostic;

export interface ExecutableToolDiscovery {
  tools: ExecutableToolSpec[];
  diagnostics: ExecutableToolDiagnostic[];
  /** What the discovery had to do: `spawned` description processes, cache hits, listings. */
  stats: native.DiscoveryStats;
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
  /** The destinations the egress proxy refused (network by host); absent when none. */
  refusedConnections?: RefusedConnection[];
  /**
   * The `sandbox.limits` the run ran into although the tool succeeded (`processes`, `memoryMb`,
   * `tmpMb`, `cpuSeconds`, `fileSizeMb`, comma-separated): its result may be incomplete. Absent
   * when none. (A tool that failed says it in its `TOOL_FAILED` message.)
   */
  limit?: string;
}

function parseSpec(spec: native.ExecutableToolSpec): ExecutableToolSpec {
  const inputSchema: JSONSchema7 = JSON.parse(spec.inputSchema);
  return { ...spec, inputSchema };
}

/**
 * The executable tools of a set of directories. Discovery, caching, input validation and
 * running all happen in the Rust core; this class only forwards.
 */
export class ExecutableToolRegistry {
  readonly #native: native.ExecutableToolRegistry;

  /**
   * The core reads `options` strictly: `CONFIG_INVALID` for an unknown option or a bad value.
   * `built` is a registry the core already built (a worker plan's); `options` are then unused.
   */
  constructor(
    options: ExecutableToolsOptions & { parallelism?: number; descriptionTimeoutMs?: number } = {},
    built?: native.ExecutableToolRegistry,
  ) {
    this.#native = built ?? callNative(() => new native.ExecutableToolRegistry(options));
    warnSandbox(this.#native.sandboxWarning);
  }

  /**
   * Discovers the tools. When nothing changed since the last refresh this costs only `stat`
   * calls; `force` asks every tool for its description again.
   */
  async refresh(options: { force?: boolean } = {}): Promise<ExecutableToolDiscovery> {
    const force = callNative(() => native.checkRefreshOptions(options));
    const discovery = await awaitNative(this.#native.refresh(force));
    return { ...discovery, tools: discovery.tools.map(parseSpec) };
  }

  /** The tools of the last refresh, highest precedence first. */
  tools(): ExecutableToolSpec[] {
    return this.#native.tools().map(parseSpec);
  }

  /** The problems found by the last refresh. */
  diagnostics(): ExecutableToolDiagnostic[] {
    return this.#native.diagnostics();
  }

  /**
   * Checks `input` against the tool's schema (throws `INVALID_INPUT` with JSON pointers before
   * anything runs) and runs the tool. Aborting `signal` kills its whole process group and
   * rejects with the signal's reason. Other errors: `TOOL_NOT_FOUND`, `TIMEOUT`, `TOOL_FAILED`.
   */
  async run(name: string, input: unknown, options: { signal?: AbortSignal } = {}): Promise<ExecutableToolResult> {
    callNative(() => native.checkRunToolOptions(options));
    return (await this.prepare(name, input)).start(options.signal);
  }

  /**
   * Checks `input` and resolves with the run without starting it: `start()` runs it, `kill()`
   * stops it. Used where a question (approval) comes between the check and the run. The check
   * runs off the JavaScript thread (the schema is the tool's, the input the model's).
   */
  async prepare(name: string, input: unknown): Promise<PreparedToolRun> {
    const handle = await awaitNative(this.#native.prepareRun(name, input ?? {}));
    return {
      start: async (signal?: AbortSignal) => {
        const output = await runProcess(handle, signal);
        return {
          result: output.value,
          durationMs: output.durationMs,
          truncated: output.truncated,
          stderr: output.stderr,
          ...withRefusals(output),
          ...(output.limit ? { limit: output.limit } : {}),
        };
      },
      kill: () => handle.kill(),
    };
  }
}

/** A checked tool run that has not started. */
export interface PreparedToolRun {
  start: (signal?: AbortSignal) => Promise<ExecutableToolResult>;
  kill: () => void;
}

/** The default directories for `workDir`: `<workDir>/toolgate-tools`, then `~/.toolgate/tools`. */
export function defaultToolDirectories(workDir: string = process.cwd()): string[] {
  return native.defaultToolDirectories(resolve(workDir));
}

/** Prints what discovery found wrong, one `console.warn` line each, so that nothing is dropped silently. */
export function reportDiagnostics(diagnostics: readonly ExecutableToolDiagnostic[]): void {
  for (const diagnostic of diagnostics) {
    // The reason quotes what the tool printed, and the path is a repository's: printed safely.
    console.warn(
      `toolgate: executable tool ${terminalText(diagnostic.kind.replace('_', ' '))}: ${terminalText(diagnostic.path)}: ${terminalText(diagnostic.reason)}`,
    );
  }
}

function unapprovedTool(registry: ExecutableToolRegistry, spec: ExecutableToolSpec): NamedTool {
  const base = tool({
    description: spec.description,
    inputSchema: jsonSchema<Record<string, unknown>>(spec.inputSchema),
    execute: async (input: Record<string, unknown>, { abortSignal }) => {
      const output = await registry.run(spec.name, input, abortSignal ? { signal: abortSignal } : {});
      return {
        result: output.result,
        durationMs: output.durationMs,
        truncated: output.truncated,
        ...(output.refusedConnections ? { refusedConnections: output.refusedConnections } : {}),
        ...(output.limit ? { limit: output.limit } : {}),
      };
    },
  });
  return named(`${EXECUTABLE_TOOL_PREFIX}${spec.name}`, base);
}

/** The AI SDK tools of a registry's discovered tools, with the approvals the core decided. */
export function buildExecutableTools(registry: ExecutableToolRegistry, decided: readonly ResolvedApproval[]): NamedTool[] {
  return attachDecided(
    registry.tools().map((spec) => unapprovedTool(registry, spec)),
    decided,
  );
}

/**
 * The AI SDK tool for one discovered executable tool. `approval` entries may name the tool with
 * or without the `custom_tool_` prefix (the strictest wins); the default is `ask`.
 */
export function executableTool(registry: ExecutableToolRegistry, spec: ExecutableToolSpec, approval?: ApprovalConfig): NamedTool {
  const [gated] = gateToolset('executables', [unapprovedTool(registry, spec)], approval, Object.keys(approval?.tools ?? {}));
  return gated!;
}

/**
 * Discovers the executable tools of `dirs` (protocol executables and `<name>/tool.yaml`
 * manifests) and returns them as AI SDK tools named `custom_tool_<name>`, gated with approval
 * `ask` unless configured otherwise; an `approval.tools` entry that names no discovered tool is
 * `CONFIG_INVALID`. Inputs are checked against each tool's JSON Schema before it runs; runs get
 * the kernel sandbox, a reduced environment with a private HOME/TMPDIR, `workDir` as cwd, a
 * timeout that kills the process group and an output cap; `options.abortSignal` of `execute`
 * kills the tool.
 */
export async function executableTools(options: ExecutableToolsOptions = {}): Promise<NamedTool[]> {
  const registry = new ExecutableToolRegistry(options);
  const discovery = await registry.refresh();
  if (discovery.diagnostics.length > 0) (options.onDiagnostics ?? reportDiagnostics)(discovery.diagnostics);
  const tools = gateToolset(
    'executables',
    discovery.tools.map((spec) => unapprovedTool(registry, spec)),
    options.approval,
  );
  return bindTools(tools, {
    workDir: resolve(options.workDir ?? process.cwd()),
    sandbox: (options as { sandbox?: unknown }).sandbox ?? null,
    settings: { ...settingsOf(options, []), tools: discovery.tools.map((spec) => [spec.name, spec.program, spec.inputSchema]) },
  });
}
