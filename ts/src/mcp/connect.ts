import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { native } from '../native/binding.js';
import { callNative, ToolgateError } from '../native/errors.js';
import type { RefusedConnection } from '../native/network-call.js';
import { VERSION } from '../native/package-root.js';
import { SandboxedStdioTransport } from './sandboxed-stdio.js';

/** The core's limits of every `mcp` toolset. */
export const MCP_LIMITS: native.McpLimits = native.mcpLimits();

/** Most pages of a tool listing read from one server (a server that pages forever is refused). */
const MAX_LIST_PAGES = 100;

/** A connected server and the tools it listed. */
export interface McpConnection {
  server: string;
  /** Where the toolset was configured (`/w/worker.yaml: toolsets.mcp`, `mcpToolset`). */
  place: string;
  client: Client;
  tools: McpTool[];
  /** The server's failure in words (it exited, sent garbage, timed out), given the error seen. */
  describe(error: unknown): string;
  /** After a tool call of a stdio server: the protected paths it created, removed (messages). */
  checkGuarded(): string[];
  /**
   * A tool call of the server begins: a stdio server's connections through the egress proxy
   * belong to it until `end()`, which resolves with the destinations refused to it.
   */
  beginCall(toolCallId: string, tool: string): { end(): Promise<RefusedConnection[]> };
  /**
   * Stops a stdio server that did not answer a call in time (hung, or running away: a fork
   * bomb, a busy loop), with its whole process tree, so that it stops using the machine; the
   * next calls fail naming why. Nothing for an HTTP server.
   */
  stopAfterTimeout(why: string): Promise<void>;
  close(): Promise<void>;
}

/** The message of an error the SDK or a transport raised, one line. */
function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]!.slice(0, 300);
}

/** `TOOL_FAILED` naming the server. */
export function serverFailure(connection: Pick<McpConnection, 'server' | 'place' | 'describe'>, doing: string, error: unknown): ToolgateError {
  if (error instanceof ToolgateError) return error;
  return new ToolgateError('TOOL_FAILED', `MCP server '${connection.server}' (${connection.place}) failed ${doing}: ${connection.describe(error)}`, {
    cause: error,
  });
}

function transportOf(plan: native.McpToolsetPlan, info: native.McpServerInfo): { transport: Transport; stdio?: SandboxedStdioTransport } {
  if (info.transport === 'http') {
    const transport = new StreamableHTTPClientTransport(new URL(info.url!), { requestInit: { headers: info.headers } });
    return { transport };
  }
  const launch = callNative(() => plan.launch(info.name));
  const stdio = new SandboxedStdioTransport(launch, MCP_LIMITS.maxMessageBytes);
  return { transport: stdio, stdio };
}

/** Rejects after `ms` with `why`, unless `work` settles first. */
async function within<T>(work: Promise<T>, ms: number, why: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(why)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Connects to one server with the official SDK client (a stdio server is started first, in the
 * sandbox) and lists its tools, all within the start-up timeout. `TOOL_FAILED` naming the server
 * when it cannot be started, does not answer, or answers with something that is not MCP.
 */
async function connectOne(plan: native.McpToolsetPlan, info: native.McpServerInfo): Promise<McpConnection> {
  const { transport, stdio } = transportOf(plan, info);
  const client = new Client({ name: 'toolgate', version: VERSION });
  const connection: McpConnection = {
    server: info.name,
    place: plan.place,
    client,
    tools: [],
    checkGuarded: () => stdio?.checkGuarded() ?? [],
    beginCall: (toolCallId, tool) => stdio?.beginCall(toolCallId, tool) ?? { end: () => Promise.resolve([]) },
    stopAfterTimeout: async (why) => {
      await stdio?.stop(why);
    },
    describe: (error) => {
      const why = stdio?.failure ?? messageOf(error);
      const stderr = stdio?.stderr;
      const refused = stdio?.refused ?? [];
      const proxy = refused.length > 0 ? `; the egress proxy refused it: ${refused.join('; ')}` : '';
      return stderr ? `${why}${proxy}; its stderr ends with: ${stderr.slice(-500)}` : `${why}${proxy}`;
    },
    close: async () => {
      await client.close().catch(() => undefined);
      await transport.close().catch(() => undefined);
    },
  };
  const seconds = Math.round(plan.startupTimeoutMs / 1000);
  try {
    await within(
      (async () => {
        await client.connect(transport, { timeout: plan.startupTimeoutMs });
        let cursor: string | undefined;
        for (let page = 0; page < MAX_LIST_PAGES; page++) {
          const listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: plan.startupTimeoutMs });
          connection.tools.push(...listed.tools);
          if (connection.tools.length > MCP_LIMITS.maxToolsPerServer) break;
          cursor = listed.nextCursor;
          if (!cursor) return;
        }
        if (cursor) throw new Error(`its tool listing went on for more than ${MAX_LIST_PAGES} pages`);
      })(),
      plan.startupTimeoutMs,
      `it did not start and list its tools within ${seconds} s (startup_timeout)`,
    );
  } catch (error) {
    const failure = serverFailure(connection, 'to start', error);
    await connection.close();
    throw failure;
  }
  return connection;
}

/**
 * Connects to every server of a toolset, in parallel. If one fails, the others are closed and
 * its error is thrown.
 */
export async function connectServers(plan: native.McpToolsetPlan): Promise<McpConnection[]> {
  const settled = await Promise.allSettled(callNative(() => plan.servers()).map((info) => connectOne(plan, info)));
  const connections = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await Promise.all(connections.map((connection) => connection.close()));
    throw failed.reason;
  }
  return connections;
}

/** What the servers listed, as the core takes it. */
export function reportOf(connections: readonly McpConnection[]): native.McpServerReport[] {
  return connections.map((connection) => ({ server: connection.server, tools: connection.tools.map((tool) => tool.name) }));
}
