import { resolve } from 'node:path';
import { jsonSchema, tool } from 'ai';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ApprovalConfig, ResolvedApproval } from '../approval/approval.js';
import { attachDecided } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTools, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import type { RefusedConnection } from '../native/network-call.js';
import { type SandboxOption, warnSandbox } from '../native/sandbox.js';
import { connectServers, MCP_LIMITS, type McpConnection, reportOf, serverFailure } from './connect.js';

/** One MCP server: a stdio `command` toolgate starts in the sandbox, or a Streamable HTTP `url`. */
export interface McpServerOptions {
  /** stdio: a program on PATH, or a path relative to `workDir`. */
  command?: string;
  args?: readonly string[];
  /** stdio: variables on top of the reduced environment; `${VAR}` reads toolgate's own VAR. */
  env?: Readonly<Record<string, string>>;
  /** HTTP: the server's Streamable HTTP endpoint. */
  url?: string;
  /** HTTP: request headers; `${VAR}` reads toolgate's own VAR. */
  headers?: Readonly<Record<string, string>>;
}

export interface McpToolsetOptions {
  /** The servers by name (letters, digits, `-`); tool `t` of server `s` is offered as `s_t`. */
  servers: Readonly<Record<string, McpServerOptions>>;
  /** Only these tools, named `server.tool` (default: every tool of every server). */
  tools?: readonly string[];
  /** Approval of the tools, named `server.tool` or by their offered name (default `ask`). */
  approval?: ApprovalConfig;
  /** The stdio servers' kernel sandbox (default `{ mode: 'enforce', network: false }`). */
  sandbox?: SandboxOption;
  /** The stdio servers' cwd and only writable place (default: `process.cwd()`). */
  workDir?: string;
  /** How long one tool call may take (default 60 000 ms). */
  timeoutMs?: number;
  /** How long a server may take to start and list its tools (default 30 000 ms). */
  startupTimeoutMs?: number;
}

/** The gated tools of MCP servers, and the way to end the servers. */
export interface McpToolset {
  /** Every selected tool, gated; blocked ones throw `TOOL_BLOCKED` (leave them out with `offeredTools`). */
  tools: NamedTool[];
  /** Closes every connection and ends every stdio server's process tree. */
  close(): Promise<void>;
}

/** What the model gets back from an MCP tool: the server's content (and structured content). */
export interface McpToolOutput {
  content: CallToolResult['content'];
  structuredContent?: Record<string, unknown>;
  /** The destinations the egress proxy refused the server during this call (network by host). */
  refusedConnections?: RefusedConnection[];
}

/** `; the egress proxy refused …` for an error message, when it refused something. */
function refusalNote(refused: readonly RefusedConnection[]): string {
  return refused.length > 0 ? `; the egress proxy refused: ${refused.map((entry) => entry.reason).join('; ')}` : '';
}

/** The error text a server put in a result it marked `isError`. */
function errorText(result: CallToolResult): string {
  const text = result.content
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n')
    .trim();
  return text.slice(0, 2000) || '(no message)';
}

/** The AI SDK tools of connected servers, named as the core selected them (ungated). */
export function mcpTools(
  plan: native.McpToolsetPlan,
  connections: readonly McpConnection[],
  selected: readonly native.McpSelectedTool[],
): NamedTool<unknown, McpToolOutput>[] {
  return selected.map((chosen) => {
    const connection = connections.find((candidate) => candidate.server === chosen.server)!;
    const listed = connection.tools.find((candidate) => candidate.name === chosen.tool)!;
    const qualified = `${chosen.server}.${chosen.tool}`;
    const base = tool<unknown, McpToolOutput>({
      description: listed.description ?? listed.title ?? `Tool '${chosen.tool}' of MCP server '${chosen.server}'`,
      inputSchema: jsonSchema(listed.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (input, { abortSignal, toolCallId }) => {
        abortSignal?.throwIfAborted();
        const serialized = JSON.stringify(input ?? {});
        if (serialized.length > MCP_LIMITS.maxInputBytes) {
          throw new ToolgateError(
            'INVALID_INPUT',
            `the input of ${qualified} is ${serialized.length} bytes of JSON; at most ${MCP_LIMITS.maxInputBytes} are sent to an MCP server`,
          );
        }
        // From here to the result, the server's connections belong to this call (asked about,
        // recorded and reported for it).
        const call = connection.beginCall(toolCallId, chosen.name);
        let result: CallToolResult;
        try {
          result = (await connection.client.callTool(
            { name: chosen.tool, arguments: (input ?? {}) as Record<string, unknown> },
            undefined,
            { timeout: plan.timeoutMs, ...(abortSignal ? { signal: abortSignal } : {}) },
          )) as CallToolResult;
        } catch (error) {
          if (isTimeout(error) && !abortSignal?.aborted) {
            await connection.stopAfterTimeout(
              `timed out: no answer to a call of '${chosen.tool}' within ${plan.timeoutMs / 1000} s (timeout); the server was stopped with its processes`,
            );
          }
          const refused = await call.end();
          // What was repaired says why a server that kept making configuration was stopped.
          const repaired = connection.checkGuarded();
          if (abortSignal?.aborted) throw abortSignal.reason;
          const failure = serverFailure(connection, `in a call of '${chosen.tool}'`, error);
          if (refused.length === 0 && repaired.length === 0) throw failure;
          const notes = repaired.length > 0 ? `; ${repaired.join('; ')}` : '';
          throw new ToolgateError(failure.code, `${failure.message}${notes}${refusalNote(refused)}`, { cause: failure.cause });
        }
        const refused = await call.end();
        // A server runs across calls: what it made at a missing protected path is removed after
        // each call, and the result says so.
        const repaired = connection.checkGuarded();
        if (result.isError) {
          const notes = repaired.length > 0 ? `; ${repaired.join('; ')}` : '';
          throw new ToolgateError('TOOL_FAILED', `MCP tool ${qualified} reported an error: ${errorText(result)}${notes}${refusalNote(refused)}`);
        }
        return {
          content: [...result.content, ...repaired.map((text) => ({ type: 'text' as const, text }))],
          ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
          ...(refused.length > 0 ? { refusedConnections: refused } : {}),
        };
      },
    });
    return named(chosen.name, base);
  });
}

/**
 * Connects to MCP servers with the official SDK client and returns their tools, gated:
 * `<server>_<tool>` names (within 64 characters, collisions refused), the servers' own
 * descriptions and input schemas, `ask` unless `approval` says otherwise. stdio servers run
 * inside the kernel sandbox (the work directory their only writable place, no network by
 * default, the reduced environment plus their explicit `env`). A server that cannot start, dies,
 * hangs past the timeout or sends malformed messages gives `TOOL_FAILED` naming it. Call
 * `close()` when done: it ends every server.
 */
export async function mcpToolset(options: McpToolsetOptions): Promise<McpToolset> {
  const plan = callNative(() => new native.McpToolsetPlan(options));
  warnSandbox(plan.sandboxWarning);
  const connections = await connectServers(plan);
  const close = async () => {
    await Promise.all(connections.map((connection) => connection.close()));
  };
  try {
    const decided = callNative(() => plan.decide(reportOf(connections)));
    const tools = mcpTools(
      plan,
      connections,
      decided.map((entry) => ({ server: entry.server, tool: entry.tool, name: entry.approval.name })),
    );
    const gated = attachDecided(tools, decided.map((entry) => entry.approval));
    const binding = {
      workDir: resolve(options.workDir ?? process.cwd()),
      sandbox: options.sandbox ?? null,
      settings: settingsOf(options, []),
    };
    return { tools: bindTools(gated, binding), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The selected tools of a worker's `mcp` toolset, gated with the decisions of its plan. */
export function gatedMcpTools(
  plan: native.McpToolsetPlan,
  connections: readonly McpConnection[],
  decided: readonly ResolvedApproval[],
): NamedTool[] {
  const selected = callNative(() => plan.select(reportOf(connections)));
  return attachDecided(mcpTools(plan, connections, selected), decided);
}

/** Whether the SDK gave up waiting for a server's answer (the call's `timeout`). */
function isTimeout(error: unknown): boolean {
  return error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number);
}
