import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ToolgateError } from '../native/errors.js';
import { streamWorker } from '../worker/index.js';
import { loadWorker } from '../worker/load-worker.js';
import { anchorModelSpec, resolveModel } from '../worker/models.js';
import { EXIT, runSession, type SessionApproval } from './run-session.js';
import { stateSecret } from './state-file.js';
import { terminalText } from '../native/terminal-text.js';

export const HELP = `Usage: toolgate run <worker-file> [input] [options]

Runs a worker (worker.yaml, or a .worker file with YAML front matter) as an agent. The input
is the task; without it, it is read from stdin when stdin is not a terminal.

Options:
  --model <provider:model>   openai:<id> (OPENAI_API_KEY), anthropic:<id> (ANTHROPIC_API_KEY),
                             openai-compatible:<id> with --base-url (Ollama, llama.cpp, LM Studio),
                             scripted:<file> (replays a JSON script offline; toolgate/docs/scripted-model.md).
                             Default: the worker's model, else TOOLGATE_MODEL.
  --base-url <url>           Server for openai-compatible models (or TOOLGATE_BASE_URL)
  --yes                      Approve every tool call that asks (blocked tools stay blocked)
  --deny                     Deny every tool call that asks
  --defer-approvals          Stop at the first calls that need approval and save the run to
                             --state-file; answer later with 'toolgate resume' (signed with
                             TOOLGATE_STATE_SECRET)
  --state-file <file>        Where --defer-approvals saves the run
  --max-steps <n>            Model steps for the run (default: the worker's max_steps, else 20)
  --work-dir <dir>           Work directory (default: the worker's sandbox root, else its directory)
  --audit <file>             Append the run's events to this JSON Lines audit log
                             (default: the worker file's audit.file)
  --json                     Print the whole result as JSON on stdout
  -h, --help                 Show this help

In a terminal every approval request shows the tool, its whole input (nothing hidden: long
whitespace runs counted, control characters named) and what "always" would cover, and reads
one key: [a]pprove, [d]eny (then a reason), a[l]ways (exactly this call), [w]ider (a command
prefix or the whole tool, confirmed), [s]ave (keep the answer as a rule in
toolgate.permissions.yaml beside the worker file: later runs do not ask for it). An input too
long to show whole is approved once or denied, never for always. Ctrl-C denies, stops the run
and its tool processes (exit 130). Without a terminal and without --yes, --deny or
--defer-approvals, every request is denied (fail closed). --yes and --deny are recorded as
decided by the flag.

Text from the model and its tools is printed with control characters escaped; --json gives the
exact result (JSON escapes).

Exit status: 0 done, 1 error, 2 usage, 3 stopped at --max-steps, 4 waiting for approvals
(--defer-approvals), 130 interrupted.
`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

/** How requests are answered, from the flags and whether a person is there. */
export function sessionApproval(flags: { yes: boolean; deny: boolean; defer: boolean }, interactive: boolean): SessionApproval {
  const chosen = [flags.yes && '--yes', flags.deny && '--deny', flags.defer && '--defer-approvals'].filter(Boolean);
  if (chosen.length > 1) throw new ToolgateError('INVALID_INPUT', `${chosen.join(' and ')} contradict each other; pass one`);
  if (flags.yes) return 'yes';
  if (flags.deny) return 'deny';
  if (flags.defer) return 'defer';
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
      'defer-approvals': { type: 'boolean', default: false },
      'state-file': { type: 'string' },
      'max-steps': { type: 'string' },
      'work-dir': { type: 'string' },
      audit: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return EXIT.done;
  }
  const [workerPath, ...rest] = positionals;
  if (!workerPath) {
    process.stderr.write(HELP);
    return EXIT.usage;
  }
  const defer = values['defer-approvals'];
  if (defer !== (values['state-file'] !== undefined)) {
    throw new ToolgateError('INVALID_INPUT', '--defer-approvals and --state-file <file> go together: the state file is where the waiting run is saved');
  }
  const approval = sessionApproval({ yes: values.yes, deny: values.deny, defer }, Boolean(process.stdin.isTTY && process.stderr.isTTY));
  const secret = defer ? stateSecret() : undefined;
  let input = rest.join(' ').trim();
  if (!input && !process.stdin.isTTY) input = await readStdin();
  if (!input) throw new ToolgateError('INVALID_INPUT', 'no task given: pass it after the worker file or on stdin');
  const maxSteps = values['max-steps'] === undefined ? undefined : Number(values['max-steps']);
  if (maxSteps !== undefined && (!Number.isInteger(maxSteps) || maxSteps < 1)) {
    throw new ToolgateError('INVALID_INPUT', `--max-steps must be a whole number >= 1, got '${values['max-steps']}'`);
  }

  const worker = await loadWorker(workerPath, values['work-dir'] ? { workDir: values['work-dir'] } : {});
  try {
    for (const warning of worker.warnings) process.stderr.write(`toolgate run: warning: ${terminalText(warning)}\n`);
    // A scripted model's file is found from here (the worker's own model is anchored to its file).
    const given = values.model ?? (worker.model ? undefined : process.env.TOOLGATE_MODEL);
    const modelSpec = given === undefined ? worker.model : anchorModelSpec(given, process.cwd());
    if (!modelSpec) {
      throw new ToolgateError(
        'CONFIG_INVALID',
        `no model: set 'model' in ${workerPath}, pass --model provider:model, or set TOOLGATE_MODEL (e.g. openai:gpt-4o-mini)`,
      );
    }
    const baseUrl = values['base-url'];
    const model = await resolveModel(modelSpec, baseUrl ? { baseUrl } : {});
    const statePath = values['state-file'];

    return await runSession({
      command: 'run',
      approval,
      json: values.json,
      ...(statePath
        ? {
            stateFile: {
              path: statePath,
              base: {
                format: 'toolgate-cli-state',
                worker: worker.path,
                ...(values['work-dir'] ? { workDir: resolve(values['work-dir']) } : {}),
                model: modelSpec,
                ...(baseUrl ? { baseUrl } : {}),
              },
            },
          }
        : {}),
      start: (handlers) =>
        streamWorker(worker, input, {
          model,
          ...handlers,
          ...(maxSteps === undefined ? {} : { maxSteps }),
          ...(secret ? { stateSecret: secret } : {}),
          ...(values.audit ? { audit: { file: values.audit } } : {}),
        }),
    });
  } finally {
    // Ends the worker's MCP servers, also after Ctrl-C and errors.
    await worker.close();
  }
}
