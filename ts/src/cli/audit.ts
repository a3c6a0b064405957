import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ToolgateError } from '../native/errors.js';
import { terminalJson, terminalText } from '../native/terminal-text.js';

export const HELP = `Usage: toolgate audit <file> [--top <n>] [--json]

Summarises an audit log that runs appended to (a worker file's audit.file, or --audit): runs,
calls per tool with their decisions, denials, refusals (blocked, refused, unknown tools,
invalid input), the slowest calls, and the connections through the egress proxy (network by
host) per host, with the refused ones.

Options:
  --top <n>    How many denials, refusals and slow calls to list (default 10)
  --json       Print the summary as JSON
  -h, --help   Show this help
`;

/** One `tool-call` line of the log (the fields the summary reads). */
interface CallLine {
  time: string;
  runId: string;
  worker: string;
  toolName: string;
  input: unknown;
  decision: string;
  decidedBy: string;
  flag?: string;
  durationMs: number;
  errorCode?: string;
  error?: string;
  reason?: string;
}

const REFUSALS = new Set(['blocked', 'refused', 'unknown-tool', 'invalid-input']);

/** One `network` line of the log: a connection through the egress proxy. */
interface NetworkLine {
  time: string;
  tool: string;
  host: string;
  port: number;
  decision: string;
  decidedBy: string;
  flag?: string;
  rule?: string;
  message?: string;
  bytesUp: number;
  bytesDown: number;
}

/** The connections to one host and port. */
interface HostSummary {
  host: string;
  port: number;
  connections: number;
  decisions: Record<string, number>;
  bytesUp: number;
  bytesDown: number;
}

export interface AuditSummary {
  file: string;
  runs: number;
  calls: number;
  unreadableLines: number;
  first?: string;
  last?: string;
  /** Calls per tool, and per decision. */
  tools: { toolName: string; calls: number; decisions: Record<string, number> }[];
  denials: CallLine[];
  refusals: CallLine[];
  slowest: CallLine[];
  /** Connections through the egress proxy: per host and port, and the refused ones (last `top`). */
  network: { connections: number; hosts: HostSummary[]; refused: NetworkLine[] };
}

/** Reads a log and summarises it. */
export function summarize(file: string, text: string, top: number): AuditSummary {
  const runs = new Set<string>();
  const calls: CallLine[] = [];
  const connections: NetworkLine[] = [];
  let unreadable = 0;
  let first: string | undefined;
  let last: string | undefined;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      unreadable++;
      continue;
    }
    if (typeof event.runId === 'string') runs.add(event.runId);
    if (typeof event.time === 'string') {
      first ??= event.time;
      last = event.time;
    }
    if (event.event === 'tool-call' && typeof event.toolName === 'string' && typeof event.decision === 'string') {
      calls.push(event as unknown as CallLine);
    }
    if (event.event === 'network' && typeof event.host === 'string' && typeof event.port === 'number' && typeof event.decision === 'string') {
      connections.push(event as unknown as NetworkLine);
    }
  }
  const byHost = new Map<string, HostSummary>();
  for (const connection of connections) {
    const key = `${connection.host}:${connection.port}`;
    const entry = byHost.get(key) ?? { host: connection.host, port: connection.port, connections: 0, decisions: {}, bytesUp: 0, bytesDown: 0 };
    entry.connections++;
    entry.decisions[connection.decision] = (entry.decisions[connection.decision] ?? 0) + 1;
    entry.bytesUp += Number(connection.bytesUp) || 0;
    entry.bytesDown += Number(connection.bytesDown) || 0;
    byHost.set(key, entry);
  }
  const byTool = new Map<string, { toolName: string; calls: number; decisions: Record<string, number> }>();
  for (const call of calls) {
    const entry = byTool.get(call.toolName) ?? { toolName: call.toolName, calls: 0, decisions: {} };
    entry.calls++;
    entry.decisions[call.decision] = (entry.decisions[call.decision] ?? 0) + 1;
    byTool.set(call.toolName, entry);
  }
  return {
    file,
    runs: runs.size,
    calls: calls.length,
    unreadableLines: unreadable,
    ...(first ? { first } : {}),
    ...(last ? { last } : {}),
    tools: [...byTool.values()].sort((a, b) => b.calls - a.calls || a.toolName.localeCompare(b.toolName)),
    denials: calls.filter((call) => call.decision === 'denied').slice(-top),
    refusals: calls.filter((call) => REFUSALS.has(call.decision)).slice(-top),
    slowest: [...calls].sort((a, b) => (b.durationMs ?? 0) - (a.durationMs ?? 0)).filter((call) => (call.durationMs ?? 0) > 0).slice(0, top),
    network: {
      connections: connections.length,
      hosts: [...byHost.values()].sort((a, b) => b.connections - a.connections || a.host.localeCompare(b.host) || a.port - b.port),
      refused: connections.filter((connection) => connection.decision === 'denied').slice(-top),
    },
  };
}

/** A value on one line: the log holds what models and tools wrote, so it is printed safely. */
function short(value: unknown, max = 100): string {
  const text = terminalText((typeof value === 'string' ? value : (JSON.stringify(value) ?? '')).replace(/[ \t\n]+/g, ' '));
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function formatCall(call: CallLine): string {
  const why = call.reason ?? (call.errorCode ? `${call.errorCode}: ${call.error ?? ''}` : (call.error ?? ''));
  const by = call.flag ? `${call.decidedBy} ${call.flag}` : call.decidedBy;
  return `  ${short(call.time, 40)}  ${short(call.toolName, 80)} ${short(call.input, 60)}  ${short(call.decision, 40)} by ${short(by, 40)}${why ? ` — ${short(why)}` : ''}`;
}

/** The summary for a terminal. */
export function formatSummary(summary: AuditSummary): string {
  const lines = [
    `${terminalText(summary.file)}: ${summary.runs} run(s), ${summary.calls} tool call(s)${summary.first ? `, ${short(summary.first, 40)} to ${short(summary.last, 40)}` : ''}`,
  ];
  if (summary.unreadableLines > 0) lines.push(`  (${summary.unreadableLines} line(s) are not JSON and were skipped)`);
  lines.push('', 'calls per tool');
  for (const tool of summary.tools) {
    const decisions = Object.entries(tool.decisions)
      .map(([decision, count]) => `${short(decision, 40)} ${count}`)
      .join(', ');
    lines.push(`  ${short(tool.toolName, 80).padEnd(28)} ${String(tool.calls).padStart(5)}   ${decisions}`);
  }
  lines.push('', `denials (${summary.denials.length} shown)`, ...summary.denials.map(formatCall));
  lines.push('', `refusals (${summary.refusals.length} shown)`, ...summary.refusals.map(formatCall));
  lines.push(
    '',
    'slowest calls',
    ...summary.slowest.map((call) => `  ${String(Math.round(Number(call.durationMs) || 0)).padStart(8)} ms  ${short(call.toolName, 80)} ${short(call.input, 80)}`),
  );
  if (summary.network.connections > 0) {
    lines.push('', `network: ${summary.network.connections} connection(s) through the egress proxy`);
    for (const host of summary.network.hosts) {
      const decisions = Object.entries(host.decisions)
        .map(([decision, count]) => `${short(decision, 40)} ${count}`)
        .join(', ');
      lines.push(`  ${short(`${host.host}:${host.port}`, 80).padEnd(28)} ${String(host.connections).padStart(5)}   ${decisions}; ${host.bytesUp} B up, ${host.bytesDown} B down`);
    }
    lines.push('', `refused connections (${summary.network.refused.length} shown)`);
    for (const refused of summary.network.refused) {
      const by = refused.flag ? `${refused.decidedBy} ${refused.flag}` : refused.decidedBy;
      lines.push(`  ${short(refused.time, 40)}  ${short(`${refused.host}:${refused.port}`, 80)} from ${short(refused.tool, 40)} by ${short(by, 40)}${refused.message ? ` — ${short(refused.message)}` : ''}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** `toolgate audit FILE`: a readable summary of an audit log. */
export async function run(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      top: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [file, ...extra] = positionals;
  if (!file || extra.length > 0) {
    process.stderr.write(`toolgate audit: give one audit log file\n\n${HELP}`);
    return 2;
  }
  const top = values.top === undefined ? 10 : Number(values.top);
  if (!Number.isInteger(top) || top < 1 || top > 10_000) {
    throw new ToolgateError('INVALID_INPUT', `--top must be a whole number from 1 to 10000, got '${values.top}'`);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ToolgateError('FILE_NOT_FOUND', `audit log '${file}' cannot be read: ${(error as Error).message}`);
  }
  const summary = summarize(file, text, top);
  process.stdout.write(values.json ? `${terminalJson(summary)}\n` : formatSummary(summary));
  return 0;
}
