import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asSchema, type ToolSet } from 'ai';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  isInitializeRequest,
  ListToolsRequestSchema,
  type Tool as McpTool,
} from '@modelcontextprotocol/sdk/types.js';
import { ToolgateError } from '../native/errors.js';
import { VERSION } from '../native/package-root.js';
import { ApprovalGate } from '../run/approval-gate.js';
import { AuditTrail, newRunId } from '../run/audit.js';
import { gatedCall, gatedTools, rejectedDecision } from '../run/gated-call.js';
import { NetworkApprovals } from '../run/network.js';
import { Recorder } from '../run/records.js';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequest, ToolCallRecord } from '../run/types.js';
import { auditTarget } from '../worker/run-loop.js';
import type { RunnableWorker } from '../worker/types.js';

type ServedTool = ToolSet[string];

/** Where the served tools are reached. */
export type ServeMcpTransport =
  | 'stdio'
  | { http: { port: number; host?: string; token?: string } }
  /** Any transport of the official SDK (one client). */
  | Transport;

export interface ServeMcpOptions {
  /** Default `stdio` (this process's stdin and stdout). */
  transport?: ServeMcpTransport;
  /**
   * Answers `ask` calls when the MCP client does not support elicitation. Without it such calls
   * are denied, with a message saying how to change that.
   */
  onApproval?: ApprovalHandler;
  /** Why calls are denied when there is neither elicitation nor `onApproval` (shown to the client). */
  noApprovalReason?: string;
  /**
   * The audit log (docs/agent.md, "The audit log") every call is appended to as a `tool-call`
   * line, as it ends, between `mcp-serve-start` and `mcp-serve-end`. Default: the worker file's
   * `audit.file`, if it has one.
   */
  log?: string;
  /** Called with every call record. */
  onRecord?: (record: ToolCallRecord) => void;
}

/** A running server. */
export interface McpServing {
  /** The calls served so far. */
  records: ToolCallRecord[];
  /** The endpoint, for HTTP. */
  url?: string;
  /** Stops serving (closes every session and the HTTP listener). */
  close(): Promise<void>;
}

const DEFAULT_NO_APPROVAL_REASON =
  'denied: this tool needs approval, and there is no way to ask: the MCP client does not support elicitation and toolgate has no terminal. Approve it in the worker file (approval: preApproved), or start `toolgate mcp serve` with --yes';

/** Most HTTP sessions open at once (each holds an SDK server and its "always" answers). */
const MAX_SESSIONS = 64;

/** Most bytes of one HTTP request body. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** What the client shows its user for an `ask` call. */
const ELICIT_SCHEMA = {
  type: 'object' as const,
  properties: {
    decision: {
      type: 'string' as const,
      title: 'Decision',
      enum: ['approve', 'always', 'always-tool', 'deny'],
      enumNames: ['Approve this call', 'Always approve exactly this call (this session)', 'Always approve every call of this tool (this session)', 'Deny'],
    },
    reason: { type: 'string' as const, title: 'Reason for the model (when denying)' },
  },
  required: ['decision'],
};

/**
 * The tools to serve by name: the gated tool objects themselves (their approval and "always"
 * scope live on them), and the names of the blocked ones (never served, recorded when called).
 */
function serviceTools(worker: RunnableWorker): { served: Map<string, ServedTool>; blocked: Set<string> } {
  const { tools, blocked } = gatedTools(worker.tools, (worker as { toolApproval?: Record<string, { decision: string }> }).toolApproval);
  return { served: new Map([...tools].filter(([name, tool]) => !blocked.has(name) && tool.execute)), blocked };
}

async function listing(tools: Map<string, ServedTool>): Promise<McpTool[]> {
  const listed: McpTool[] = [];
  for (const [name, tool] of tools) {
    const schema = (await asSchema(tool.inputSchema).jsonSchema) as McpTool['inputSchema'];
    listed.push({ name, ...(tool.description ? { description: tool.description } : {}), inputSchema: { ...schema, type: 'object' } });
  }
  return listed;
}

function textResult(text: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text }], ...(isError ? { isError: true } : {}) };
}

/** A tool's output as an MCP result: an MCP tool's own content passes through, the rest as text. */
function resultOf(output: unknown): CallToolResult {
  const content = (output as { content?: unknown } | null)?.content;
  if (Array.isArray(content) && content.every((part) => typeof (part as { type?: unknown })?.type === 'string')) {
    return { content: content as CallToolResult['content'] };
  }
  return textResult(typeof output === 'string' ? output : JSON.stringify(output, null, 2));
}

/**
 * Serves a worker's tools to MCP clients with the official SDK server: blocked tools are never
 * listed; `preApproved` tools run; an `ask` tool is approved through MCP elicitation when the
 * client supports it (its user sees the tool, the input and approve / always / deny), else by
 * `onApproval`, else denied with a message saying why. "always" covers the same scope as in
 * `runWorker` for the rest of the serving. Every call is recorded.
 *
 * HTTP (`{ http: { port } }`) uses the Streamable HTTP transport on 127.0.0.1 unless `host`
 * says otherwise; a `token` is required for any other host, and then checked as a bearer token.
 */
export async function serveMcp(worker: RunnableWorker, options: ServeMcpOptions = {}): Promise<McpServing> {
  const { served: tools, blocked } = serviceTools(worker);
  const listed = await listing(tools);
  const target = auditTarget(worker, options.log ? { file: options.log, redact: [] } : undefined);
  const trail = target ? new AuditTrail(target, newRunId(), worker.name) : undefined;
  // The log is written as each call ends (a serving has no end to wait for), one append at a time.
  let written: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (!trail) return written;
    written = written.then(() => trail.flush());
    return written;
  };
  const recorder = new Recorder((event) => {
    if (event.type === 'network-connection') return trail?.collect(event);
    if (event.type !== 'call-recorded') return;
    trail?.collect(event);
    options.onRecord?.(event.record);
  });
  const transportName = options.transport === undefined || options.transport === 'stdio' ? 'stdio' : 'http' in options.transport ? 'http' : 'custom';
  trail?.serving('mcp-serve-start', { transport: transportName, tools: [...tools.keys()], ...((worker as { path?: string }).path ? { workerFile: (worker as { path?: string }).path } : {}) });
  await flush();
  const ended = async () => {
    trail?.serving('mcp-serve-end', { calls: recorder.records.length });
    await flush();
  };
  let calls = 0;

  const newServer = (): Server => {
    const server = new Server({ name: `toolgate-${worker.name}`, version: VERSION }, { capabilities: { tools: {} } });
    // One gate per session: an "always" answer covers the rest of the session that gave it.
    const gate = new ApprovalGate(
      async (request, context) => {
        if (server.getClientCapabilities()?.elicitation) return elicit(server, request);
        if (options.onApproval) return options.onApproval(request, context);
        return { decision: 'deny', reason: options.noApprovalReason ?? DEFAULT_NO_APPROVAL_REASON };
      },
      () => undefined,
      undefined,
    );
    // A host a network-by-host sandbox asks about goes to the same gate (elicitation, onApproval).
    const network = new NetworkApprovals(gate, (record) => recorder.connection(record));
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
      const name = request.params.name;
      const found = tools.get(name);
      const toolCallId = `mcp-${++calls}`;
      if (!found) {
        // A blocked tool is answered like an unknown one (the client does not learn it exists), and logged as blocked.
        const message = `there is no tool '${name}'; list the tools to see the ones served`;
        recorder.rejected(toolCallId, name, request.params.arguments ?? {}, rejectedDecision(name, tools, blocked), message);
        await flush();
        return textResult(message, true);
      }
      // The AI SDK checks a model's input against the schema before `execute`; an MCP client's
      // input gets the same check here.
      const schema = asSchema(found.inputSchema);
      const checked = schema.validate ? await schema.validate(request.params.arguments ?? {}) : { success: true as const, value: request.params.arguments ?? {} };
      if (!checked.success) {
        const message = `the input of '${name}' does not match its schema: ${checked.error.message.slice(0, 1000)}`;
        recorder.rejected(toolCallId, name, request.params.arguments ?? {}, rejectedDecision(name, tools, blocked), message);
        await flush();
        return textResult(`INVALID_INPUT: ${message}`, true);
      }
      const outcome = await gatedCall(
        { toolName: name, tool: found, input: checked.value, options: { toolCallId, messages: [], abortSignal: extra.signal } },
        { gate, recorder, network },
        'inline',
      );
      // A serving has no end to wait for: each call's audit line is appended as the call ends.
      await flush();
      if (outcome.status === 'denied') return textResult(outcome.answer.reason ?? 'denied', true);
      if (outcome.status === 'succeeded') return resultOf(outcome.output);
      const { record, error } = outcome;
      const message = record.error ?? String(error);
      return textResult(record.errorCode ? `${record.errorCode}: ${message}` : message, true);
    });
    return server;
  };

  const transport = options.transport ?? 'stdio';
  if (transport === 'stdio' || !('http' in transport)) {
    const server = newServer();
    await server.connect(transport === 'stdio' ? new StdioServerTransport() : transport);
    return {
      records: recorder.records,
      close: async () => {
        await server.close();
        await ended();
      },
    };
  }
  const serving = await serveHttp(newServer, transport.http, recorder.records);
  return {
    ...serving,
    close: async () => {
      await serving.close();
      await ended();
    },
  };
}

/** Asks the client's user through MCP elicitation. Declining or cancelling denies. */
async function elicit(server: Server, request: ApprovalRequest): Promise<ApprovalAnswer> {
  const input = JSON.stringify(request.input, null, 2) ?? String(request.input);
  const result = await server.elicitInput({
    mode: 'form',
    message: `toolgate: approve the call of tool '${request.toolName}' with this input?\n${input.slice(0, 4000)}\n"Always" covers: ${request.scope.description}`,
    requestedSchema: ELICIT_SCHEMA,
  });
  const content = (result.content ?? {}) as { decision?: unknown; reason?: unknown };
  if (result.action !== 'accept') return { decision: 'deny', reason: `the user ${result.action === 'decline' ? 'declined' : 'cancelled'} the approval request` };
  if (content.decision === 'approve' || content.decision === 'always') return content.decision;
  // The wider "always" is chosen explicitly, as in the terminal's [w]ider.
  if (content.decision === 'always-tool') return { decision: 'always', scope: 'tool' };
  const reason = typeof content.reason === 'string' && content.reason.trim() ? content.reason.trim() : 'the user denied this tool call';
  return { decision: 'deny', reason };
}

function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost';
}

/** The host name of a Host header (`127.0.0.1:8931` → `127.0.0.1`, `[::1]:80` → `::1`). */
function hostnameOf(header: string | undefined): string {
  if (!header) return '';
  if (header.startsWith('[')) return header.slice(1, header.indexOf(']'));
  return header.split(':')[0] ?? '';
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header ?? '');
  const wanted = Buffer.from(`Bearer ${token}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ToolgateError('INVALID_INPUT', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return size === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function reply(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/** Streamable HTTP with one SDK server per session. */
async function serveHttp(
  newServer: () => Server,
  options: { port: number; host?: string; token?: string },
  records: ToolCallRecord[],
): Promise<McpServing> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host) && !options.token) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `serving MCP on ${host}, which is not loopback, needs a bearer token: pass --token (or TOOLGATE_MCP_TOKEN), or serve on 127.0.0.1`,
    );
  }
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // A web page can make a browser send requests to 127.0.0.1 under its own host name (DNS
    // rebinding): on loopback, only loopback host names are served.
    if (isLoopback(host) && !isLoopback(hostnameOf(req.headers.host))) {
      reply(res, 403, `the Host header '${req.headers.host ?? ''}' is not a loopback name; connect to 127.0.0.1 or localhost`);
      return;
    }
    if (options.token && !tokenMatches(req.headers.authorization, options.token)) {
      reply(res, 401, 'missing or wrong bearer token: send Authorization: Bearer <the token toolgate mcp serve was given>');
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? sessions.get(id) : undefined;
    if (existing) {
      await existing.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      reply(res, 400, 'no valid session: start with an initialize request (without mcp-session-id)');
      return;
    }
    if (sessions.size >= MAX_SESSIONS) {
      reply(res, 503, `${MAX_SESSIONS} MCP sessions are open, the most toolgate serves at once; close one (HTTP DELETE with its mcp-session-id) and retry`);
      return;
    }
    const server = newServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, server });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) reply(res, 400, error instanceof Error ? error.message : String(error));
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, host, () => resolve());
  });
  const address = http.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    records,
    url: `http://${shown}:${address.port}/mcp`,
    close: async () => {
      await Promise.all([...sessions.values()].map(({ server }) => server.close()));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
