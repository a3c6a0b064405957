import { parseArgs } from 'node:util';
import { runWorker, type WorkerRunResult } from '../worker/index.js';
import { ToolgateError } from '../native/errors.js';
import { resolveModel } from '../worker/models.js';
import { type LoadedWorker, loadWorker } from '../worker/load-worker.js';
import { progressPrinter } from './progress.js';
import { terminalApproval, type ApprovalMode } from './terminal-approval.js';

export const HELP = `Usage: toolgate run <worker-file> [input] [options]

Runs a worker (worker.yaml, or a .worker file with YAML front matter) as an agent. The input
is the task; without it, it is read from stdin when stdin is not a terminal.

Options:
  --model <provider:model>   openai:<id> (OPENAI_API_KEY), anthropic:<id> (ANTHROPIC_API_KEY),
                             openai-compatible:<id> with --base-url (Ollama, llama.cpp, LM Studio).
                             Default: the worker's model, else TOOLGATE_MODEL.
  --base-url <url>           Server for openai-compatible models (or TOOLGATE_BASE_URL)
  --yes                      Approve every tool call that asks (blocked tools stay blocked)
  --deny                     Deny every tool call that asks
  --max-steps <n>            Model steps for the run (default: the worker's max_steps, else 20)
  --work-dir <dir>           Work directory (default: the worker's sandbox root, else its directory)
  --json                     Print the whole result as JSON on stdout
  -h, --help                 Show this help

In a terminal every approval request shows the tool and its input and asks
approve / deny / always. Without a terminal and without --yes or --deny, every request is
denied (fail closed).
`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

function approvalMode(yes: boolean, deny: boolean, interactive: boolean): ApprovalMode | 'fail-closed' {
  if (yes && deny) throw new ToolgateError('INVALID_INPUT', '--yes and --deny contradict each other; pass one');
  if (yes) return 'yes';
  if (deny) return 'deny';
  return interactive ? 'ask' : 'fail-closed';
}

/** `toolgate run`: runs a worker with approvals asked in the terminal. */
export async function run(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      model: { type: 'string' },
      'base-url': { type: 'string' },
      yes: { type: 'boolean', default: false },
      deny: { type: 'boolean', default: false },
      'max-steps': { type: 'string' },
      'work-dir': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [workerPath, ...rest] = positionals;
  if (!workerPath) {
    process.stderr.write(HELP);
    return 2;
  }
  let input = rest.join(' ').trim();
  if (!input && !process.stdin.isTTY) input = await readStdin();
  if (!input) throw new ToolgateError('INVALID_INPUT', 'no task given: pass it after the worker file or on stdin');

  const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  const mode = approvalMode(values.yes, values.deny, interactive);
  if (mode === 'fail-closed') {
    process.stderr.write(
      'toolgate run: no terminal to ask for approvals: tool calls that need approval will be denied. Pass --yes to approve them or --deny to silence this note.\n',
    );
  }
  const maxSteps = values['max-steps'] === undefined ? undefined : Number(values['max-steps']);
  if (maxSteps !== undefined && (!Number.isInteger(maxSteps) || maxSteps < 1)) {
    throw new ToolgateError('INVALID_INPUT', `--max-steps must be a whole number >= 1, got '${values['max-steps']}'`);
  }

  const worker = await loadWorker(workerPath, values['work-dir'] ? { workDir: values['work-dir'] } : {});
  try {
    return await runLoaded(worker, workerPath, input, mode, maxSteps, values);
  } finally {
    // Ends the worker's MCP servers, also after Ctrl-C and errors.
    await worker.close();
  }
}

async function runLoaded(
  worker: LoadedWorker,
  workerPath: string,
  input: string,
  mode: ApprovalMode | 'fail-closed',
  maxSteps: number | undefined,
  values: { model?: string; 'base-url'?: string; json: boolean },
): Promise<number> {
  for (const warning of worker.warnings) process.stderr.write(`toolgate run: warning: ${warning}\n`);
  const modelSpec = values.model ?? worker.model ?? process.env.TOOLGATE_MODEL;
  if (!modelSpec) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `no model: set 'model' in ${workerPath}, pass --model provider:model, or set TOOLGATE_MODEL (e.g. openai:gpt-4o-mini)`,
    );
  }
  const model = await resolveModel(modelSpec, values['base-url'] ? { baseUrl: values['base-url'] } : {});

  const approval = mode === 'fail-closed' ? undefined : terminalApproval({ mode });
  const controller = new AbortController();
  const onSigint = () => controller.abort(new Error('interrupted (Ctrl-C); running tool processes were stopped'));
  process.once('SIGINT', onSigint);
  let result: WorkerRunResult;
  try {
    result = await runWorker(worker, input, {
      model,
      ...(approval ? { onApproval: approval } : {}),
      ...(maxSteps === undefined ? {} : { maxSteps }),
      signal: controller.signal,
      onEvent: values.json ? undefined : progressPrinter(process.stderr),
    });
  } catch (error) {
    if (controller.signal.aborted) {
      process.stderr.write(`toolgate run: ${(controller.signal.reason as Error).message}\n`);
      return 130;
    }
    throw error;
  } finally {
    process.off('SIGINT', onSigint);
    approval?.close();
  }

  if (values.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    if (result.status === 'max-steps') process.stderr.write(`toolgate run: stopped after ${result.steps.length} steps (--max-steps)\n`);
    if (result.status === 'question') process.stderr.write('toolgate run: the worker has a question:\n');
    process.stdout.write(`${result.text}\n`);
  }
  return result.status === 'max-steps' ? 3 : 0;
}
