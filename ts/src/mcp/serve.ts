import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
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
import { terminalText } from '../native/terminal-text.js';
import { ApprovalGate } from '../run/approval-gate.js';
import { AuditTrail, newRunId } from '../run/audit.js';
import { gatedCall, gatedTools, rejectedDecision } from '../run/gated-call.js';
import { NetworkApprovals } from '../run/network.js';
import { Recorder } from '../run/records.js';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequest, RunEvent, ToolCallRecord } from '../run/types.js';
import { auditTarget } from '../worker/run-loop.js';
import type { RunnableWorker } from '../worker/types.js';

type ServedTool = ToolSet[string];

/**
 * Streamable HTTP. Every request needs `Authorization: Bearer <token>`, on loopback too: without
 * `token` one is generated (`McpServing.token`). Sessions idle for `idleTimeoutMs` (default 10
 * minutes) are closed.
 */
export interface ServeMcpHttp {
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The bearer token clients send (at least 16 characters); generated when absent. */
  token?: string;
  /** How long a session may stay without a request before it is closed (default 600000). */
  idleTimeoutMs?: number;
}

/** Where the served tools are reached. */
export type ServeMcpTransport =
  | 'stdio'
  | { http: ServeMcpHttp }
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
  /** Called with the approval events of every session (`rule-saved` when a rule was saved). */
  onEvent?: (event: RunEvent) => void;
}

/** A running server. */
export interface McpServing {
  /** The calls served so far. */
  records: ToolCallRecord[];
  /** The endpoint, for HTTP. */
  url?: string;
  /** The bearer token every HTTP request must send (the one given, or the one generated). */
  token?: string;
  /** Stops serving (closes every session and the HTTP listener). */
  close(): Promise<void>;
}

const DEFAULT_NO_APPROVAL_REASON =
  'denied: this tool needs approval, and there is no way to ask: the MCP client does not support elicitation and toolgate has no terminal. Approve it in the worker file (approval: preApproved), or start `toolgate mcp serve` with --yes';

/** Most HTTP sessions open at once (each holds an SDK server and its "always" answers). */
const MAX_SESSIONS = 64;

/** How long an HTTP session may stay without a request before it is closed. */
export const DEFAULT_MCP_IDLE_TIMEOUT_MS = 10 * 60 * 1000;

/** The shortest bearer token accepted. */
export const MIN_MCP_TOKEN_CHARS = 16;

/** Most bytes of one HTTP request body. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The choices of an elicitation: "always" only for an input shown whole, "save" when offered. */
function elicitSchema(request: ApprovalRequest) {
  const choices: [string, string][] = [['approve', 'Approve this call']];
  if (request.reviewable) {
    choices.push(['always', 'Always approve exactly this call (this session)'], ['always-tool', 'Always approve every call of this tool (this session)']);
    if (request.save) choices.push(['save', 'Approve and save as a rule (later runs do not ask)']);
  }
  choices.push(['deny', 'Deny']);
  return {
    type: 'object' as const,
    properties: {
      decision: { type: 'string' as const, title: 'Decision', enum: choices.map(([value]) => value), enumNames: choices.map(([, name]) => name) },
      reason: { type: 'string' as const, title: 'Reason for the model (when denying)' },
    },
    required: ['decision'],
  };
}

/**
 * The message of an elicitation: the whole input as the core renders it for review (never cut
 * without saying so: an input too long to show whole says so with its size and SHA-256), and
 * what "always" and "save" cover.
 */
export function elicitationMessage(request: ApprovalRequest): string {
  const lines = [`toolgate: approve the call of tool '${terminalText(request.toolName)}' with this input?`, request.review];
  if (request.reviewable) {
    lines.push(`"Always" covers: ${request.scope.description}`);
    if (request.save) lines.push(`"Save" writes to ${request.save.file}: ${request.save.rule}`);
  } else {
    lines.push(`This input is too long to show whole (${request.inputBytes} bytes, sha256 ${request.inputSha256}): approve it once, or deny.`);
  }
  return terminalText(lines.join('\n'), { layout: true });
}

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
 * The client's user sees the whole input as the core renders it for review (nothing hidden, an
 * input too long to show whole said so with its size and SHA-256, and then no "always" and no
 * "save" offered), on the stream of the call being answered: one session's client never answers
 * another session's calls.
 *
 * HTTP (`{ http: { port } }`) uses the Streamable HTTP transport on 127.0.0.1 unless `host`
 * says otherwise. Every request must send `Authorization: Bearer <token>`, loopback included
 * (any local user can reach 127.0.0.1): `token`, or one generated and returned as
 * `McpServing.token`. Requests without it are refused before a session exists; sessions idle
 * for `idleTimeoutMs` (default 10 minutes) are closed.
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
    // The request of each call of this session being answered: its elicitation travels on that
    // request's own stream, to this session's client only.
    const pendingCalls = new Map<string, ElicitVia>();
    // One gate per session: an "always" answer covers the rest of the session that gave it.
    const gate = new ApprovalGate(
      async (request, context) => {
        if (server.getClientCapabilities()?.elicitation) return elicit(server, request, pendingCalls.get(request.toolCallId));
        if (options.onApproval) return options.onApproval(request, context);
        return { decision: 'deny', reason: options.noApprovalReason ?? DEFAULT_NO_APPROVAL_REASON };
      },
      (event) => options.onEvent?.(event),
      undefined,
      [],
      worker.name,
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
      pendingCalls.set(toolCallId, { requestId: extra.requestId, signal: extra.signal });
      let outcome;
      try {
        outcome = await gatedCall(
          { toolName: name, tool: found, input: checked.value, options: { toolCallId, messages: [], abortSignal: extra.signal } },
          { gate, recorder, network },
          'inline',
        );
      } finally {
        pendingCalls.delete(toolCallId);
      }
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

/** The call an elicitation is for: its request (whose stream carries the question) and signal. */
interface ElicitVia {
  requestId: string | number;
  signal: AbortSignal;
}

/**
 * Asks the client's user through MCP elicitation, on the stream of the call being answered.
 * Declining or cancelling denies; a choice that was not offered denies too.
 */
async function elicit(server: Server, request: ApprovalRequest, via: ElicitVia | undefined): Promise<ApprovalAnswer> {
  const schema = elicitSchema(request);
  let result;
  try {
    result = await server.elicitInput(
      { mode: 'form', message: elicitationMessage(request), requestedSchema: schema },
      via ? { relatedRequestId: via.requestId, signal: via.signal } : undefined,
    );
  } catch (error) {
    // An answer outside the choices offered (the SDK checks it against the schema), a client
    // that went away: nothing was approved.
    return { decision: 'deny', reason: `the approval request got no valid answer: ${error instanceof Error ? error.message : String(error)}` };
  }
  const content = (result.content ?? {}) as { decision?: unknown; reason?: unknown };
  if (result.action !== 'accept') return { decision: 'deny', reason: `the user ${result.action === 'decline' ? 'declined' : 'cancelled'} the approval request` };
  const offered = schema.properties.decision.enum;
  if (typeof content.decision !== 'string' || !offered.includes(content.decision)) {
    return { decision: 'deny', reason: `the answer ${JSON.stringify(content.decision) ?? 'none'} was not one of the choices offered` };
  }
  if (content.decision === 'approve' || content.decision === 'always') return content.decision;
  // The wider "always" is chosen explicitly, as in the terminal's [w]ider.
  if (content.decision === 'always-tool') return { decision: 'always', scope: 'tool' };
  if (content.decision === 'save') return { decision: 'save', by: 'mcp-elicitation' };
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

/** Whether the Authorization header carries the token, compared in constant time (digests of equal length). */
function tokenMatches(header: string | undefined, token: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(header ?? ''), digest(`Bearer ${token}`));
}

/** The token of an HTTP serving: the one given (checked), else a new random one. */
function servingToken(given: string | undefined): string {
  if (given === undefined) return randomBytes(32).toString('base64url');
  if (given.length < MIN_MCP_TOKEN_CHARS || /[\s\p{Cc}]/u.test(given)) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `the MCP bearer token must be at least ${MIN_MCP_TOKEN_CHARS} characters without spaces or control characters; leave it out to have one generated`,
    );
  }
  return given;
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

/** One HTTP session: its SDK server and transport, and when it last saw a request. */
interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastSeen: number;
  /** Requests of the session being handled now (a session with one is not idle). */
  busy: number;
}

/**
 * Streamable HTTP with one SDK server per session. Every request must carry the bearer token
 * (loopback included: any local user can connect to 127.0.0.1), checked before anything else,
 * so a request without it never creates a session. Sessions idle for `idleTimeoutMs` are closed.
 */
async function serveHttp(
  newServer: () => Server,
  options: ServeMcpHttp,
  records: ToolCallRecord[],
): Promise<McpServing> {
  const host = options.host ?? '127.0.0.1';
  const token = servingToken(options.token);
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_MCP_IDLE_TIMEOUT_MS;
  if (!Number.isInteger(idleTimeoutMs) || idleTimeoutMs < 1000 || idleTimeoutMs > 24 * 60 * 60 * 1000) {
    throw new ToolgateError('CONFIG_INVALID', `idleTimeoutMs is a whole number of milliseconds from 1000 to 86400000, got ${String(idleTimeoutMs)}`);
  }
  const sessions = new Map<string, Session>();
  const close = async (id: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    await session.server.close().catch(() => undefined);
  };
  // Idle sessions are closed: an abandoned client does not hold one of the MAX_SESSIONS.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (session.busy === 0 && now - session.lastSeen > idleTimeoutMs) void close(id);
      }
    },
    Math.min(Math.max(Math.floor(idleTimeoutMs / 4), 250), 30_000),
  );
  sweep.unref();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // A web page can make a browser send requests to 127.0.0.1 under its own host name (DNS
    // rebinding): on loopback, only loopback host names are served.
    if (isLoopback(host) && !isLoopback(hostnameOf(req.headers.host))) {
      reply(res, 403, `the Host header '${req.headers.host ?? ''}' is not a loopback name; connect to 127.0.0.1 or localhost`);
      return;
    }
    // Only the Authorization header counts (a token in the URL would end up in logs).
    if (!tokenMatches(req.headers.authorization, token)) {
      res.setHeader('www-authenticate', 'Bearer');
      reply(res, 401, 'missing or wrong bearer token: send Authorization: Bearer <token> (the token toolgate mcp serve was given, or the file it printed)');
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? sessions.get(id) : undefined;
    if (existing) {
      existing.lastSeen = Date.now();
      // A GET holds the session's event stream open: it does not keep the session busy.
      const counts = req.method === 'POST';
      if (counts) existing.busy++;
      try {
        await existing.transport.handleRequest(req, res, body);
      } finally {
        if (counts) existing.busy--;
        existing.lastSeen = Date.now();
      }
      return;
    }
    if (typeof id === 'string') {
      reply(res, 404, 'this MCP session does not exist (it was closed, or it expired after being idle); start a new one with an initialize request');
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      reply(res, 400, 'no valid session: start with an initialize request (without mcp-session-id)');
      return;
    }
    if (sessions.size >= MAX_SESSIONS) {
      reply(res, 503, `${MAX_SESSIONS} MCP sessions are open, the most toolgate serves at once; close one (HTTP DELETE with its mcp-session-id) or wait for an idle one to expire, and retry`);
      return;
    }
    const server = newServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { transport, server, lastSeen: Date.now(), busy: 0 });
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
  }).catch((error: unknown) => {
    clearInterval(sweep);
    throw error;
  });
  const address = http.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    records,
    url: `http://${shown}:${address.port}/mcp`,
    token,
    close: async () => {
      clearInterval(sweep);
      await Promise.all([...sessions.keys()].map((id) => close(id)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
