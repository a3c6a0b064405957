import { parseArgs } from 'node:util';
import { ToolgateError } from '../native/errors.js';
import { type CommandExplanation, explainCommand } from '../native/explain-command.js';
import { readShellConfig } from '../toolsets/shell.js';
import { runPathCheck } from './check-path.js';
import { runSandboxCheck } from './check-sandbox.js';
import { runWorkerCheck } from './check-worker.js';
import { terminalJson, terminalText } from '../native/terminal-text.js';

const HELP = `Usage: toolgate check [--work-dir <dir>] [--json] <worker-file>   (see toolgate check --help worker)
       toolgate check --rules <file> [--cwd <dir>] [--json] <command>
       toolgate check --sandbox [options] [worker-file]   (see toolgate check --sandbox --help)
       toolgate check --path <file> <worker-file>        (see toolgate check --path x --help)

Given a worker file alone, shows what the worker and every worker it may call may do: tools and
their decisions, tools left out, sandboxes, rules, callers' restrictions, MCP servers, warnings.

With --rules, explains how shell rules decide a command, without running it: the decision, the
rule that matched and, for refusals, the layer that refused.

  --rules <file>   A YAML shell block (rules, default, ...) or a worker file with toolsets.shell
  --cwd <dir>      The work directory the command would run in (default: the current directory)
  --json           Print the explanation as JSON
  -h, --help       Show this help

Quote the command as one argument: toolgate check --rules rules.yaml "git push origin main".
Several arguments are taken as the words of one command.

Exit status: 0 when the command would run (preApproved or ask), 1 when it is blocked or refused,
2 for a usage or configuration error.
`;

/** `toolgate check`: explains a shell rules decision, or (`--sandbox`) the kernel sandbox. */
export async function run(argv: readonly string[]): Promise<number> {
  // `--sandbox` among the options (not a word of the command being explained).
  if (argv.slice(0, commandStart(argv).options).includes('--sandbox')) return runSandboxCheck(argv);
  if (argv.slice(0, commandStart(argv).options).includes('--path')) return runPathCheck(argv);
  // Without --rules the words are a worker file: what may that worker do?
  if (!argv.includes('--rules') && !argv.some((arg) => arg.startsWith('--rules='))) {
    if (argv[0] === '--help' && argv[1] === 'worker') return runWorkerCheck(['--help']);
    if (!(argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h'))) return runWorkerCheck(argv);
  }
  // Options come first; from the first other word on, everything is the command (so that
  // `toolgate check --rules r.yaml git commit -m x` works without quoting).
  const split = commandStart(argv);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv.slice(0, split.options),
      allowPositionals: false,
      options: {
        rules: { type: 'string' },
        cwd: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`toolgate check: ${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values } = parsed;
  const positionals = argv.slice(split.command);
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.rules === undefined || positionals.length === 0) {
    process.stderr.write(`toolgate check: ${values.rules === undefined ? '--rules <file> is required' : 'give the command to check'}\n\n${HELP}`);
    return 2;
  }
  const command = positionals.length === 1 ? (positionals[0] ?? '') : positionals.map(quoteWord).join(' ');

  let explanation: CommandExplanation;
  try {
    const options = readShellConfig(values.rules);
    explanation = explainCommand({ ...options, workDir: values.cwd ?? process.cwd() }, command);
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    process.stderr.write(`toolgate check: ${error.code}: ${terminalText(error.message, { layout: true })}\n`);
    return 2;
  }
  process.stdout.write(values.json ? `${terminalJson(explanation)}\n` : terminalText(formatExplanation(explanation), { layout: true }));
  return explanation.decision === 'preApproved' || explanation.decision === 'ask' ? 0 : 1;
}

/** Where the options end and the command's words begin (after a `--`, if there is one). */
function commandStart(argv: readonly string[]): { options: number; command: number } {
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (arg === '--') return { options: index, command: index + 1 };
    if (arg === '--rules' || arg === '--cwd' || arg === '--path' || arg === '--work-dir') {
      index++;
      continue;
    }
    if (!arg.startsWith('-')) return { options: index, command: index };
  }
  return { options: argv.length, command: argv.length };
}

/** The explanation as aligned lines for a terminal. */
export function formatExplanation(explanation: CommandExplanation): string {
  const lines: [string, string][] = [['command', explanation.command]];
  if (explanation.argv.length > 0) lines.push(['argv', JSON.stringify(explanation.argv)]);
  if (explanation.program) lines.push(['program', explanation.program]);
  lines.push(['decision', explanation.decision]);
  lines.push(['rule', describeRule(explanation)]);
  if (explanation.refusal) {
    const { layer, code, message } = explanation.refusal;
    lines.push(['refused by', `${layer} (${code})`], ['message', message]);
  }
  return lines.map(([label, value]) => `${label.padEnd(11)} ${value}\n`).join('');
}

function describeRule(explanation: CommandExplanation): string {
  switch (explanation.source) {
    case 'rule': {
      const rule = explanation.rule;
      return rule ? `rules[${rule.index}] ${JSON.stringify(rule.pattern)} -> ${rule.approval}` : 'a rule';
    }
    case 'default':
      return 'no rule matched; the default applies';
    case 'no-default':
      return 'no rule matched and there is no default, so it is blocked';
    default:
      return explanation.argv.length === 0
        ? 'not reached (the command could not be split)'
        : 'not reached (refused before the rules were consulted)';
  }
}

/** Quotes a word for a POSIX command line when it needs it. */
function quoteWord(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./~-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
