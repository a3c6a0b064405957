import { parseArgs } from 'node:util';
import { native } from '../native/binding.js';
import { awaitNative, callNative, ToolgateError } from '../native/errors.js';
import { FileTools, type PathDecision } from '../native/file-tools.js';
import { decidePlannedWorkers } from '../worker/load-worker.js';
import { terminalJson, terminalText } from '../native/terminal-text.js';

const HELP = `Usage: toolgate check --path <file> [--work-dir <dir>] [--json] <worker-file>

Explains how the path rules (approval.paths) of the worker's file toolsets (filesystem,
code_agent) decide one path, for each of their tools, without touching the file: the decision
and the rule that made it. The path is judged as the tools judge it, relative to the work directory,
through symlinks and '..'.

  --path <file>   The path to explain, relative to the work directory (or absolute inside it)
  --work-dir <dir> Replaces the worker's work directory (as for toolgate run)
  --json          Print the decisions as JSON
  -h, --help      Show this help

Exit status: 0 when at least one file tool may touch the path (preApproved or ask), 1 when
every file tool is blocked from it (or the worker has no file tools), 2 for a usage or
configuration error.
`;

/** One file tool's decision for the path. */
export interface PathCheck extends PathDecision {
  toolset: string;
  tool: string;
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
  const { infos, decided, close } = await decidePlannedWorkers(plan);
  // MCP servers were connected to decide their tools' approvals; none is a file tool.
  await close();
  const [info] = infos;
  if (!info) return [];
  const rules = { filesystem: info.filesystemPathRules, code_agent: info.codeAgentPathRules };
  const checks: PathCheck[] = [];
  for (const toolset of ['filesystem', 'code_agent'] as const) {
    const tools = (decided[0] ?? []).filter((tool) => tool.toolset === toolset);
    if (tools.length === 0) continue;
    const files = new FileTools(info.workDir, rules[toolset] ?? undefined);
    for (const { approval } of tools) {
      const decision = files.decideCall(approval.name, inputNaming(approval.name, path), {
        decision: approval.decision,
        pathFloor: approval.pathFloor,
      });
      checks.push({ toolset, tool: approval.name, ...decision });
    }
  }
  return checks;
}

/** The model input of a call of `tool` on `path`. */
function inputNaming(tool: string, path: string): unknown {
  if (tool === 'file_patch') return { operations: [{ action: 'update', path, content: '' }] };
  if (tool === 'glob_search' || tool === 'list_files') return { pattern: '*', path };
  return { path };
}

/** The decisions as aligned lines for a terminal. */
export function formatChecks(path: string, checks: readonly PathCheck[]): string {
  if (checks.length === 0) return `path        ${path}\nno file tools: the worker has no filesystem or code_agent toolset\n`;
  const width = Math.max(...checks.map((check) => `${check.toolset}.${check.tool}`.length));
  const lines = checks.map((check) => {
    const why =
      check.by === 'tool'
        ? "no rule matched; the tool's own approval"
        : check.by === 'floor'
          ? `${check.rule ?? 'a rule'}, raised by the tool's own approval`
          : (check.rule ?? 'a rule');
    return `${`${check.toolset}.${check.tool}`.padEnd(width)}  ${check.decision.padEnd(11)}  ${why}\n`;
  });
  const resolved = checks.find((check) => check.path)?.path;
  return `path        ${path}${resolved && resolved !== path ? ` (judged as '${resolved}')` : ''}\n${lines.join('')}`;
}
