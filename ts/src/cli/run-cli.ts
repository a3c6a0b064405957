import { ToolgateError } from '../native/errors.js';
import { VERSION } from '../native/package-root.js';
import { COMMANDS } from './commands.js';
import { terminalText } from '../native/terminal-text.js';

const USAGE = `toolgate ${VERSION} — load, gate and run tools safely for AI SDK agents

Usage: toolgate <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.usage.padEnd(40)} ${command.summary}`).join('\n')}

Options:
  -h, --help       Show this help (or a command's help: toolgate <command> --help)
  -v, --version    Print the version
`;

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    process.stdout.write(USAGE);
    return first === undefined ? 1 : 0;
  }
  if (first === '-v' || first === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === first);
  if (!command) {
    process.stderr.write(`toolgate: unknown command '${terminalText(first)}'. Run 'toolgate --help' for the list.\n`);
    return 2;
  }
  try {
    const module = await command.load();
    return await module.run(rest);
  } catch (error) {
    if (error instanceof ToolgateError) {
      // Error messages quote tool output, file names and server replies: printed safely.
      process.stderr.write(`toolgate ${command.name}: ${error.code}: ${terminalText(error.message, { layout: true })}\n`);
      return 1;
    }
    // Anything else (a provider's HTTP error, a bug) is still reported as one readable line;
    // TOOLGATE_DEBUG=1 shows the stack.
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    process.stderr.write(`toolgate ${command.name}: ${terminalText(message, { layout: true })}\n`);
    if (process.env.TOOLGATE_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${terminalText(error.stack, { layout: true })}\n`);
    return 1;
  }
}
