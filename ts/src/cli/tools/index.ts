/**
 * `toolgate tools list | describe <name> | call <name> [json] | validate [dir] | new <name>`:
 * the executable tools of the project (`./toolgate-tools`) and of the user (`~/.toolgate/tools`).
 */
import { ToolgateError } from '../../native/errors.js';
import { call } from './call.js';
import { describe } from './describe.js';
import { UsageError } from './errors.js';
import { writeJson } from './format.js';
import { list } from './list.js';
import { scaffold } from './new.js';
import { type Flags, optionsHelp, parseFlags } from './options.js';
import { validate } from './validate.js';
import { terminalText } from '../../native/terminal-text.js';

const USAGE = `Usage: toolgate tools <command> [options]

Commands:
  list                     List the tools and every problem found
  describe <name>          Show a tool: description, input schema, source
  call <name> [json]       Run a tool with a JSON input (default {}); asks for approval
  validate [dir]           Check every tool (of dir, or of the default directories); exit 1 on a problem
  new <name>               Write a working example tool

Options:
${optionsHelp()}
`;

/** Runs `toolgate tools ...` and returns the exit code. */
export async function run(argv: readonly string[]): Promise<number> {
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseFlags(argv);
  } catch (error) {
    return usageError((error as Error).message);
  }
  const { values: flags, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (flags.help || command === undefined || command === 'help') {
    process.stdout.write(USAGE);
    return command === undefined && !flags.help ? 2 : 0;
  }
  try {
    switch (command) {
      case 'list':
        expectArgs(rest, 0, 'list');
        return await list(flags);
      case 'describe':
        return await describe(flags, expectArgs(rest, 1, 'describe <name>'));
      case 'call':
        return await call(flags, expectArgs(rest, [1, 2], 'call <name> [json]'));
      case 'validate':
        return await validate(flags, expectArgs(rest, [0, 1], 'validate [dir]'));
      case 'new':
        return scaffold(flags, expectArgs(rest, 1, 'new <name>'));
      default:
        return usageError(`unknown tools command '${command}'`);
    }
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message);
    if (error instanceof ToolgateError && flags.json) {
      writeJson({ error: { code: error.code, message: error.message } });
      return 1;
    }
    throw error;
  }
}

function usageError(message: string): number {
  process.stderr.write(`toolgate tools: ${terminalText(message)}\n\n${USAGE}`);
  return 2;
}

function expectArgs(args: string[], count: number | [number, number], form: string): string[] {
  const [min, max] = typeof count === 'number' ? [count, count] : count;
  if (args.length < min || args.length > max) throw new UsageError(`usage: toolgate tools ${form}`);
  return args;
}
