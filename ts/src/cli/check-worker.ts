import { parseArgs } from 'node:util';
import type { ApprovalConfig, ApprovalDecision } from '../approval/approval.js';
import type { SavedRule } from '../approval/saved-rules.js';
import { native } from '../native/binding.js';
import { awaitNative, callNative, ToolgateError } from '../native/errors.js';
import { listPlannedWorkers } from '../worker/load-worker.js';

export const WORKER_HELP = `Usage: toolgate check [--work-dir <dir>] [--json] <worker-file>

Loads the worker file and every worker it may call, without running the agent, and prints for
each: the tools offered with their decision (preApproved or ask) and what decided it, the tools
left out and why, the sandbox of the worker and of each process toolset (roots, network,
protected paths), path rules, command rules and allowlists, what the workers above it impose,
MCP servers (connected to list their tools), the workers it may call, and warnings; then the
saved rules of the project permissions file, each with its line, date and who saved it.

  --work-dir <dir>   Replaces the worker's work directory (as for toolgate run)
  --json             Print the report as JSON (layout: docs/check.md)
  -h, --help         Show this help

Exit status: 0 when the worker file (and every file it names) is valid, 2 otherwise, with the
error (file:line:column for a worker file).
`;

/** The report of `toolgate check worker.yaml --json` (documented in docs/check.md). */
export interface PlanReport {
  version: number;
  file: string;
  workers: WorkerReport[];
  /** The permissions file saved rules are read from (it may not exist yet). */
  permissionsFile: string | null;
  /** Every saved rule, with the file and line it is written on, when and by whom. */
  savedRules: SavedRule[];
}

export interface WorkerReport {
  index: number;
  name: string;
  path: string;
  parent: number | null;
  chain: string[];
  workDir: string;
  readonly: boolean;
  model: string | null;
  tools: { name: string; toolset: string; decision: ApprovalDecision; decidedBy: string; reason: string; perCall: string | null }[];
  leftOut: { name: string; toolset: string; reason: string }[];
  sandbox: SandboxReport;
  toolsetSandboxes: { toolset: string; sandbox: SandboxReport }[];
  pathRules: { toolset: string; worker: string; inherited: boolean; workDir: string; rules: { pattern: string; approval: ApprovalDecision }[] }[];
  commands: CommandsReport;
  callers: (CommandsReport & { worker: string; path: string; approval: ApprovalConfig | null })[];
  mcpServers: {
    name: string;
    transport: 'stdio' | 'http';
    command: string | null;
    args: string[];
    url: string | null;
    given: string[];
    listed: string[] | null;
  }[];
  delegates: { name: string; worker: number; path: string }[];
  warnings: string[];
}

export interface SandboxReport {
  mode: string;
  network: { access: 'off' | 'open' | 'hosts'; description: string };
  workDir: string;
  readonly: boolean;
  read: string[];
  write: string[];
  protectedPaths: string[] | null;
}

export interface CommandsReport {
  shell: { rules: { pattern: string; approval: ApprovalDecision }[]; default: ApprovalDecision | null } | null;
  cliExecute: {
    allowedBinaries: { name: string; path: string | null }[];
    denyCommands: string[];
    denyOutput: { pattern: string; action: 'block' | 'redact' }[];
  } | null;
}

/** `toolgate check <worker-file>`: what the worker and every worker it may call may do. */
export async function runWorkerCheck(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        'work-dir': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`toolgate check: ${(error as Error).message}\n\n${WORKER_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(WORKER_HELP);
    return 0;
  }
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0) {
    process.stderr.write(`toolgate check: give one worker file\n\n${WORKER_HELP}`);
    return 2;
  }
  let report: PlanReport;
  try {
    report = await workerReport(file, values['work-dir']);
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    process.stderr.write(`toolgate check: ${error.code}: ${error.message}\n`);
    return 2;
  }
  process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatWorkerReport(report));
  return 0;
}

/**
 * The report of a worker file: the core plans it and decides every tool with what the tools
 * modules and the MCP servers hold (a server that cannot be listed is a warning, not an error).
 */
export async function workerReport(file: string, workDir: string | undefined): Promise<PlanReport> {
  const options = callNative(() => native.checkLoadWorkerOptions(workDir === undefined ? {} : { workDir }));
  const plan = await awaitNative(native.planWorker(file, options.workDir, options.readonly));
  const listed = await listPlannedWorkers(plan, { tolerateMcpFailures: true });
  try {
    const report = JSON.parse(callNative(() => plan.report(listed.reports.modules, listed.reports.mcp))) as PlanReport;
    for (const [index, why] of listed.mcpFailures) report.workers[index]?.warnings.push(`an MCP server could not be listed: ${why}`);
    return report;
  } finally {
    await listed.close();
  }
}

/** The report as aligned lines for a terminal. */
export function formatWorkerReport(report: PlanReport): string {
  const lines: string[] = [];
  for (const worker of report.workers) {
    if (lines.length > 0) lines.push('');
    const by = worker.parent === null ? '' : ` (called by ${report.workers[worker.parent]?.name ?? worker.parent})`;
    lines.push(`worker ${worker.name}${by}: ${worker.path}`);
    const row = (label: string, value: string) => lines.push(`  ${label.padEnd(14)} ${value}`);
    const list = (label: string, items: readonly string[], none = 'none') => {
      if (items.length === 0) return row(label, none);
      items.forEach((item, index) => row(index === 0 ? label : '', item));
    };
    row('work dir', `${worker.workDir} (${worker.readonly ? 'read-only' : 'read-write'})`);
    if (worker.model) row('model', worker.model);
    const width = Math.max(0, ...worker.tools.map((tool) => tool.name.length));
    list(
      'tools',
      worker.tools.map(
        (tool) =>
          `${tool.name.padEnd(width)}  ${tool.decision.padEnd(11)}  ${tool.toolset}: ${tool.reason}${tool.perCall ? `; ${tool.perCall}` : ''}`,
      ),
    );
    list(
      'left out',
      worker.leftOut.map((tool) => `${tool.name} (${tool.toolset}): ${tool.reason}`),
    );
    row('sandbox', describeSandbox(worker.sandbox));
    for (const { toolset, sandbox } of worker.toolsetSandboxes) {
      const same = JSON.stringify(sandbox) === JSON.stringify(worker.sandbox);
      row(`  ${toolset}`, same ? 'the worker sandbox' : describeSandbox(sandbox));
    }
    list(
      'path rules',
      worker.pathRules.map(
        (list) =>
          `${list.toolset}${list.inherited ? ` of '${list.worker}' (a calling worker, relative to ${list.workDir})` : ''}: ${list.rules
            .map((rule) => `${JSON.stringify(rule.pattern)} ${rule.approval}`)
            .join(', ')}`,
      ),
    );
    describeCommands(worker.commands).forEach((line, index) => row(index === 0 ? 'commands' : '', line));
    if (worker.callers.length === 0) row('callers', 'none (the top worker)');
    worker.callers.forEach((caller, position) => {
      const said = describeCommands(caller).filter((line) => line !== 'none');
      const floor = caller.approval?.default ? `approval floor: default ${caller.approval.default}` : null;
      const entries = [...said, ...(floor ? [floor] : [])];
      if (entries.length === 0) entries.push('no command rules, allowlist or approval floor');
      entries.forEach((line, index) => row(position === 0 && index === 0 ? 'callers' : '', `${index === 0 ? `${caller.worker}: ` : '  '}${line}`));
    });
    list(
      'mcp servers',
      worker.mcpServers.map((server) => {
        const what = server.transport === 'stdio' ? [server.command, ...server.args].join(' ') : (server.url ?? '');
        const listed = server.listed === null ? 'not listed' : `lists ${server.listed.join(', ') || 'no tools'}`;
        return `${server.name}: ${server.transport} ${what} (${listed})`;
      }),
    );
    list(
      'calls',
      worker.delegates.map((delegate) => `${delegate.name} (${delegate.path})`),
    );
    list('warnings', worker.warnings);
  }
  if (report.permissionsFile !== null) {
    lines.push('', `saved rules: ${report.permissionsFile}${report.savedRules.length === 0 ? ' (none)' : ''}`);
    for (const rule of report.savedRules) {
      lines.push(`  line ${String(rule.line).padEnd(4)} ${rule.rule} (saved ${rule.saved} by ${rule.by})`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function describeSandbox(sandbox: SandboxReport): string {
  if (sandbox.mode === 'off') return 'off: programs run unconfined (a private HOME/TMPDIR only)';
  const parts = [
    sandbox.mode,
    `network ${sandbox.network.description}`,
    `work dir ${sandbox.readonly ? 'read-only' : 'read-write'}`,
    `read: ${['the system runtime', ...sandbox.read].join(', ')}`,
    `write: ${[...(sandbox.readonly ? [] : ['the work dir']), 'a private HOME/TMPDIR', ...sandbox.write].join(', ')}`,
    `protected paths: ${sandbox.protectedPaths === null ? 'none computed' : sandbox.protectedPaths.join(', ') || 'none'}`,
  ];
  return parts.join('; ');
}

function describeCommands(commands: CommandsReport): string[] {
  const lines: string[] = [];
  if (commands.shell) {
    const rules = commands.shell.rules.map((rule) => `${JSON.stringify(rule.pattern)} ${rule.approval}`);
    lines.push(`shell: default ${commands.shell.default ?? 'none (blocked)'}${rules.length > 0 ? `; rules ${rules.join(', ')}` : ''}`);
  }
  if (commands.cliExecute) {
    const binaries = commands.cliExecute.allowedBinaries.map((binary) => (binary.path ? binary.name : `${binary.name} (not found)`));
    lines.push(`cli_execute: ${binaries.join(', ')}`);
    if (commands.cliExecute.denyCommands.length > 0) lines.push(`  deny_commands ${commands.cliExecute.denyCommands.map((p) => JSON.stringify(p)).join(', ')}`);
    if (commands.cliExecute.denyOutput.length > 0) {
      lines.push(`  deny_output ${commands.cliExecute.denyOutput.map((entry) => `${JSON.stringify(entry.pattern)} ${entry.action}`).join(', ')}`);
    }
  }
  if (lines.length === 0) lines.push('none');
  return lines;
}
