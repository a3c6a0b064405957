import { parseArgs } from 'node:util';
import { ToolgateError } from '../native/errors.js';
import { streamResumedWorker } from '../worker/index.js';
import { loadWorker } from '../worker/load-worker.js';
import { anchorModelSpec, resolveModel } from '../worker/models.js';
import { sessionApproval } from './run.js';
import { EXIT, runSession } from './run-session.js';
import { parseAnswers, readStateFile, stateSecret } from './state-file.js';
import { terminalText } from '../native/terminal-text.js';

export const HELP = `Usage: toolgate resume <state-file> --answers <id>=<answer>[,...] [options]

Continues a run that 'toolgate run --defer-approvals --state-file <file>' saved while it waited
for approvals. Each pending request (listed by 'toolgate run' and in the file) gets an answer:

  <id>=approve        run it
  <id>=always         run it, and exactly this call again for the rest of the run
  <id>=save           run it, and save its scope as a rule in toolgate.permissions.yaml
                      beside the worker file: later runs do not ask for it
  <id>=deny[:reason]  refuse it; the model reads the reason

A request whose input is too long to show whole takes approve or deny only.

--answers may be repeated, or given as JSON: '{"<id>": "approve", "<id2>": {"decision": "deny",
"reason": "..."}}'. The state is checked before anything runs: it must be signed with the same
TOOLGATE_STATE_SECRET, the worker's files must be unchanged, and it can be resumed only once.

Options:
  --answers <answers>        The answers (required)
  --model <provider:model>   Default: the model the run started with
  --base-url <url>           Default: the run's
  --yes | --deny             Answer later requests of the run without asking
  --defer-approvals          Stop again at the next requests and save the run to the same file
  --state-ledger <dir>       Where resumed states are recorded (default: a private directory in
                             the system's temporary directory)
  --audit <file>             Append the run's events to this audit log
  --json                     Print the whole result as JSON on stdout
  -h, --help                 Show this help

Exit status: as 'toolgate run' (4: waiting for approvals again).
`;

/** `toolgate resume`: answers a saved run's pending approvals and continues it. */
export async function run(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      answers: { type: 'string', multiple: true },
      model: { type: 'string' },
      'base-url': { type: 'string' },
      yes: { type: 'boolean', default: false },
      deny: { type: 'boolean', default: false },
      'defer-approvals': { type: 'boolean', default: false },
      'state-ledger': { type: 'string' },
      audit: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return EXIT.done;
  }
  const [path, ...extra] = positionals;
  if (!path || extra.length > 0 || !values.answers?.length) {
    process.stderr.write(
      `toolgate resume: ${!path ? 'give the state file' : extra.length > 0 ? `unexpected '${terminalText(extra.join(' '))}'` : 'give --answers for the pending requests'}\n\n${HELP}`,
    );
    return EXIT.usage;
  }
  const secret = stateSecret();
  const file = readStateFile(path);
  const answers = parseAnswers(values.answers);
  const defer = values['defer-approvals'];
  const approval = sessionApproval({ yes: values.yes, deny: values.deny, defer }, Boolean(process.stdin.isTTY && process.stderr.isTTY));
  const worker = await loadWorker(file.worker, file.workDir ? { workDir: file.workDir } : {});
  try {
    const baseUrl = values['base-url'] ?? file.baseUrl;
    const modelSpec = values.model === undefined ? file.model : anchorModelSpec(values.model, process.cwd());
    if (!modelSpec) throw new ToolgateError('CONFIG_INVALID', `the state file names no model; pass --model provider:model`);
    const model = await resolveModel(modelSpec, baseUrl ? { baseUrl } : {});

    return await runSession({
      command: 'resume',
      approval,
      json: values.json,
      ...(defer ? { stateFile: { path, base: { format: file.format, worker: file.worker, ...(file.workDir ? { workDir: file.workDir } : {}), model: modelSpec, ...(baseUrl ? { baseUrl } : {}) } } } : {}),
      start: (handlers) =>
        streamResumedWorker(worker, file.state, answers, {
          model,
          stateSecret: secret,
          ...handlers,
          ...(values['state-ledger'] ? { stateLedger: values['state-ledger'] } : {}),
          ...(values.audit ? { audit: { file: values.audit } } : {}),
        }),
    });
  } finally {
    // Ends the worker's MCP servers, also after Ctrl-C and errors.
    await worker.close();
  }
}
