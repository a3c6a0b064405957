import { parseArgs } from 'node:util';
import type { ApprovalDecision } from '../approval/approval.js';
import { native } from '../native/binding.js';
import { awaitNative, callNative, ToolgateError } from '../native/errors.js';
import { listPlannedWorkers } from '../worker/load-worker.js';
import { terminalJson, terminalText } from '../native/terminal-text.js';

const HELP = `Usage: toolgate check --path <file> [--work-dir <dir>] [--json] <worker-file>

Explains how each file tool of the worker's file toolsets (filesystem, code_agent) would decide
one path, without touching the file, in the order the tools check it: the work-directory
confinement first (PATH_OUTSIDE_ROOT), then the protected paths (PATH_BLOCKED), then the path
rules (approval.paths, the worker's and its callers'). The path is judged as the tools judge
it, relative to the work directory, through symlinks and '..'.

  --path <file>   The path to explain, relative to the work directory (or absolute inside it)
  --work-dir <dir> Replaces the worker's work directory (as for toolgate run)
  --json          Print the decisions as JSON
  -h, --help      Show this help

Exit status: 0 when at least one file tool may touch the path (preApproved or ask), 1 when
every file tool is blocked from it (or the worker has no file tools), 2 for a usage or
configuration error.
`;

/** One file tool's decision for the path (the core's, see `WorkerPlan.checkPath`). */
export interface PathCheck {
  toolset: string;
  tool: string;
  decision: ApprovalDecision;
  /** `outside-root`, `protected`, `rule`, `floor`, `caller-rule` or `tool`. */
  by: string;
  rule: string | null;
  pattern: string | null;
  /** The path as judged, relative to the work directory (`null` when it is outside). */
  path: string | null;
  /** The refusal a call gets before any rule is consulted. */
  refusal: { code: string; message: string } | null;
}

/** `toolgate check --path`: how the path rules decide one path for each file tool. */
export async function runPathCheck(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        path: { type: 'string' },
        'work-dir': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`toolgate check: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [workerFile, ...extra] = positionals;
  if (values.path === undefined || workerFile === undefined || extra.length > 0) {
    process.stderr.write(`toolgate check: give --path <file> and one worker file\n\n${HELP}`);
    return 2;
  }
  let checks: PathCheck[];
  try {
    checks = await pathChecks(workerFile, values.path, values['work-dir']);
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    process.stderr.write(`toolgate check: ${error.code}: ${terminalText(error.message, { layout: true })}\n`);
    return 2;
  }
  process.stdout.write(values.json ? `${terminalJson(checks)}\n` : terminalText(formatChecks(values.path, checks), { layout: true }));
  return checks.some((check) => check.decision !== 'blocked') ? 0 : 1;
}

/** The decision of every file tool of the top worker of `workerFile` for `path`. */
export async function pathChecks(workerFile: string, path: string, workDir: string | undefined): Promise<PathCheck[]> {
  const options = callNative(() => native.checkLoadWorkerOptions(workDir === undefined ? {} : { workDir }));
  const plan = await awaitNative(native.planWorker(workerFile, options.workDir, options.readonly));
  const listed = await listPlannedWorkers(plan);
  // MCP servers were connected to decide their tools' approvals; none is a file tool.
  await listed.close();
  return JSON.parse(callNative(() => plan.checkPath(0, path, listed.reports.modules, listed.reports.mcp))) as PathCheck[];
}

/** The decisions as aligned lines for a terminal. */
export function formatChecks(path: string, checks: readonly PathCheck[]): string {
  if (checks.length === 0) return `path        ${path}\nno file tools: the worker has no filesystem or code_agent toolset\n`;
  const width = Math.max(...checks.map((check) => `${check.toolset}.${check.tool}`.length));
  const lines = checks.map((check) => {
    const why =
      check.refusal !== null
        ? `${check.refusal.code}${check.by === 'protected' ? ' (protected)' : ''}: ${check.refusal.message}`
        : check.by === 'tool'
          ? "no rule matched; the tool's own approval"
          : check.by === 'floor'
            ? `${check.rule ?? 'a rule'}, raised by the tool's own approval`
            : check.by === 'caller-rule'
              ? `${check.rule ?? 'a rule'} of a calling worker`
              : (check.rule ?? 'a rule');
    return `${`${check.toolset}.${check.tool}`.padEnd(width)}  ${check.decision.padEnd(11)}  ${why}\n`;
  });
  const resolved = checks.find((check) => check.path)?.path;
  return `path        ${path}${resolved && resolved !== path ? ` (judged as '${resolved}')` : ''}\n${lines.join('')}`;
}
