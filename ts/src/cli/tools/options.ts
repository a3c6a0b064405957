import { parseArgs } from 'node:util';

/** Every option of `toolgate tools`, declared once: the parser and the flag types come from here. */
export const OPTIONS = {
  dir: { type: 'string', multiple: true },
  'work-dir': { type: 'string' },
  json: { type: 'boolean' },
  'no-cache': { type: 'boolean' },
  timeout: { type: 'string' },
  yes: { type: 'boolean', short: 'y' },
  lang: { type: 'string' },
  manifest: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The help line of each option, keyed like `OPTIONS` (the compiler checks that none is missing). */
const HELP: Record<keyof typeof OPTIONS, [string, string]> = {
  dir: ['--dir <path>', 'Tool directory, repeatable, highest precedence first\n(default: ./toolgate-tools, then ~/.toolgate/tools)'],
  'work-dir': ['--work-dir <path>', 'Where tools run (default: the current directory)'],
  json: ['--json', 'Machine-readable output'],
  'no-cache': ['--no-cache', 'Ask every tool for its description again'],
  timeout: ['--timeout <seconds>', 'call: kill the tool after this long (default 30)'],
  yes: ['--yes', 'call: run without asking for approval'],
  lang: ['--lang <language>', 'new: python (default), node or bash'],
  manifest: ['--manifest', 'new: write a tool.yaml tool instead of a protocol tool'],
  help: ['-h, --help', 'Show this help'],
};

/** Parses the command line of `toolgate tools`; throws on an unknown option. */
export function parseFlags(argv: readonly string[]) {
  return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
}

export type Flags = ReturnType<typeof parseFlags>['values'];

/** The options section of the usage text, generated from the table above. */
export function optionsHelp(): string {
  const width = 25;
  return Object.values(HELP)
    .map(([flags, text]) => {
      const [first = '', ...rest] = text.split('\n');
      return [`  ${flags.padEnd(width)}${first}`, ...rest.map((line) => `  ${' '.repeat(width)}${line}`)].join('\n');
    })
    .join('\n');
}
