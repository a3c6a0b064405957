/**
 * `toolgate tools list | describe <name> | call <name> [json] | validate [dir] | new <name>`:
 * the executable tools of the project (`./toolgate-tools`) and of the user (`~/.toolgate/tools`).
 */
import { createInterface } from 'node:readline';
import { isAbsolute, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { callNative, ToolgateError } from '../native/errors.js';
import { native } from '../native/binding.js';
import {
  defaultToolDirectories,
  EXECUTABLE_TOOL_PREFIX,
  ExecutableToolRegistry,
  type ExecutableToolDiagnostic,
  type ExecutableToolDiscovery,
  type ExecutableToolSpec,
} from '../toolsets/executables.js';

const USAGE = `Usage: toolgate tools <command> [options]

Commands:
  list                     List the tools and every problem found
  describe <name>          Show a tool: description, input schema, source
  call <name> [json]       Run a tool with a JSON input (default {}); asks for approval
  validate [dir]           Check every tool (of dir, or of the default directories); exit 1 on a problem
  new <name>               Write a working example tool

Options:
  --dir <path>             Tool directory, repeatable, highest precedence first
                           (default: ./toolgate-tools, then ~/.toolgate/tools)
  --work-dir <path>        Where tools run (default: the current directory)
  --json                   Machine-readable output
  --no-cache               Ask every tool for its description again
  --timeout <seconds>      call: kill the tool after this long (default 30)
  --yes                    call: run without asking for approval
  --lang <language>        new: python (default), node or bash
  --manifest               new: write a tool.yaml tool instead of a protocol tool
  -h, --help               Show this help
`;

const OPTIONS = {
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

interface Flags {
  dir?: string[];
  'work-dir'?: string;
  json?: boolean;
  'no-cache'?: boolean;
  timeout?: string;
  yes?: boolean;
  lang?: string;
  manifest?: boolean;
  help?: boolean;
}

class UsageError extends Error {}

/** Runs `toolgate tools ...` and returns the exit code. */
export async function run(argv: readonly string[]): Promise<number> {
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true }) as typeof parsed;
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
        return await list(flags, expectArgs(rest, 0, 'list'));
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
  process.stderr.write(`toolgate tools: ${message}\n\n${USAGE}`);
  return 2;
}

function expectArgs(args: string[], count: number | [number, number], form: string): string[] {
  const [min, max] = typeof count === 'number' ? [count, count] : count;
  if (args.length < min || args.length > max) throw new UsageError(`usage: toolgate tools ${form}`);
  return args;
}

function workDirOf(flags: Flags): string {
  return resolve(flags['work-dir'] ?? process.cwd());
}

function registryFor(flags: Flags, dirs?: string[], cache?: 'use' | 'refresh' | 'off', timeoutMs?: number): ExecutableToolRegistry {
  const chosen = dirs ?? flags.dir;
  return new ExecutableToolRegistry({
    workDir: workDirOf(flags),
    ...(chosen ? { dirs: chosen.map((dir) => resolve(dir)) } : {}),
    cache: cache ?? (flags['no-cache'] ? 'refresh' : 'use'),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
}

function searched(flags: Flags, dirs?: string[]): string[] {
  return (dirs ?? flags.dir)?.map((dir) => resolve(dir)) ?? defaultToolDirectories(workDirOf(flags));
}

/** A path as the user would type it: relative to the current directory when inside it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function firstLine(text: string, width: number): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function problems(diagnostics: readonly ExecutableToolDiagnostic[]): string {
  if (diagnostics.length === 0) return '';
  const lines = diagnostics.map((d) => `  ${d.kind.replace('_', ' ')}: ${shown(d.path)}\n    ${d.reason.replace(/\n/g, '\n    ')}`);
  return `\nProblems (${diagnostics.length}):\n${lines.join('\n')}\n`;
}

function specJson(spec: ExecutableToolSpec) {
  return { ...spec, modelName: `${EXECUTABLE_TOOL_PREFIX}${spec.name}` };
}

async function list(flags: Flags, _args: string[]): Promise<number> {
  const discovery = await registryFor(flags).refresh();
  if (flags.json) {
    writeJson({ directories: searched(flags), tools: discovery.tools.map(specJson), diagnostics: discovery.diagnostics, stats: discovery.stats });
    return 0;
  }
  if (discovery.tools.length === 0) {
    process.stdout.write(`No executable tools found in: ${searched(flags).map(shown).join(', ')}\nCreate one with: toolgate tools new <name>\n`);
  } else {
    const rows = [['NAME', 'FORMAT', 'DESCRIPTION', 'SOURCE']];
    for (const spec of discovery.tools) rows.push([spec.name, spec.format, firstLine(spec.description, 60), shown(spec.source)]);
    process.stdout.write(`${table(rows)}\n`);
  }
  process.stdout.write(problems(discovery.diagnostics));
  return 0;
}

async function describe(flags: Flags, [name]: string[]): Promise<number> {
  const registry = registryFor(flags);
  await registry.refresh();
  const spec = registry.tools().find((candidate) => candidate.name === name);
  if (!spec) {
    const known = registry.tools().map((t) => t.name);
    throw new ToolgateError(
      'TOOL_NOT_FOUND',
      `no executable tool is named '${name}' (${known.length ? `known tools: ${known.join(', ')}` : 'no tools were discovered'}); run 'toolgate tools list'`,
    );
  }
  if (flags.json) {
    writeJson(specJson(spec));
    return 0;
  }
  const lines = [
    `${spec.name} (${spec.format} tool)`,
    '',
    spec.description,
    '',
    `model name:  ${EXECUTABLE_TOOL_PREFIX}${spec.name}`,
    `source:      ${shown(spec.source)}`,
    `runs:        ${shown(spec.program)}`,
  ];
  if (spec.version) lines.push(`version:     ${spec.version}`);
  if (spec.usage) lines.push(`usage:       ${spec.usage}`);
  if (spec.parameters) {
    lines.push('', 'parameters (passed as --name=value, in this order):');
    const rows = [['  NAME', 'TYPE', 'REQUIRED', 'DESCRIPTION']];
    for (const p of spec.parameters) rows.push([`  ${p.name}`, p.type, p.required ? 'yes' : 'no', p.description ?? '']);
    lines.push(table(rows));
  }
  lines.push('', 'input schema:', JSON.stringify(spec.inputSchema, null, 2).replace(/^/gm, '  '));
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

function parseInput(text: string | undefined): unknown {
  if (text === undefined) return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ToolgateError('INVALID_INPUT', `the input is not valid JSON (${(error as Error).message}); pass one JSON object, e.g. '{"city": "Oslo"}'`);
  }
}

function parseTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got '${text}'`);
  return seconds * 1000;
}

/** Asks on the terminal; resolves true only for an explicit yes. */
async function askApproval(name: string, input: unknown): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolveAnswer) => {
      rl.question(`Run tool '${name}' with input ${JSON.stringify(input)}? [y/N] `, resolveAnswer);
      rl.once('close', () => resolveAnswer(''));
    });
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

async function call(flags: Flags, [name, json]: string[]): Promise<number> {
  const input = parseInput(json);
  const timeoutMs = parseTimeout(flags.timeout);
  const registry = registryFor(flags, undefined, undefined, timeoutMs);
  const discovery = await registry.refresh();
  const relevant = discovery.diagnostics.filter((d) => d.kind !== 'shadowed');
  const prepared = registry.prepare(name as string, input); // TOOL_NOT_FOUND / INVALID_INPUT before any question
  if (!flags.yes) {
    if (!process.stdin.isTTY) {
      prepared.kill();
      throw new ToolgateError(
        'APPROVAL_DENIED',
        `tool '${name}' needs approval and there is no terminal to ask; pass --yes to run it without asking`,
      );
    }
    if (!(await askApproval(name as string, input))) {
      prepared.kill();
      throw new ToolgateError('APPROVAL_DENIED', `tool '${name}' was not approved; nothing ran`);
    }
  }
  // Ctrl-C reaches only our process group; the tool runs in its own, so kill it explicitly.
  const controller = new AbortController();
  const onInterrupt = () => controller.abort(new ToolgateError('TOOL_FAILED', `tool '${name}' was interrupted`));
  process.once('SIGINT', onInterrupt);
  try {
    const output = await prepared.start(controller.signal);
    if (flags.json) {
      writeJson({ result: output.result, durationMs: output.durationMs, truncated: output.truncated });
    } else {
      const text = typeof output.result === 'string' ? output.result : JSON.stringify(output.result, null, 2);
      process.stdout.write(`${text}\n`);
      if (relevant.length > 0 && process.stderr.isTTY) {
        process.stderr.write(`(${relevant.length} other tool problem(s); see 'toolgate tools list')\n`);
      }
    }
    return 0;
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}

async function validate(flags: Flags, [dir]: string[]): Promise<number> {
  const dirs = dir !== undefined ? [dir] : undefined;
  const discovery: ExecutableToolDiscovery = await registryFor(flags, dirs, 'refresh').refresh();
  const failures = discovery.diagnostics.filter((d) => d.kind !== 'shadowed');
  const ok = failures.length === 0;
  if (flags.json) {
    writeJson({ valid: ok, directories: searched(flags, dirs), tools: discovery.tools.map(specJson), diagnostics: discovery.diagnostics });
    return ok ? 0 : 1;
  }
  const rows = discovery.tools.map((spec) => ['ok', spec.name, spec.format, shown(spec.source)]);
  if (rows.length > 0) process.stdout.write(`${table(rows)}\n`);
  process.stdout.write(problems(discovery.diagnostics));
  const where = searched(flags, dirs).map(shown).join(', ');
  process.stdout.write(
    `\n${discovery.tools.length} valid tool(s), ${failures.length} problem(s) in ${where}${ok ? '' : ' — fix the problems above'}\n`,
  );
  return ok ? 0 : 1;
}

function scaffold(flags: Flags, [name]: string[]): number {
  const language = flags.lang ?? 'python';
  const dir = resolve(flags.dir?.[0] ?? resolve(workDirOf(flags), 'toolgate-tools'));
  const path = callNative(() => native.scaffoldTool(dir, name as string, language, flags.manifest ?? false));
  const format = flags.manifest ? 'manifest' : 'protocol';
  if (flags.json) {
    writeJson({ name, path, format, language });
    return 0;
  }
  const example = language === 'bash' && !flags.manifest ? '{"text": "hello"}' : '{"name": "Ada"}';
  process.stdout.write(
    `Created ${shown(path)} (${language} ${format} tool '${name}').\n` +
      `Edit it, then check and try it:\n` +
      `  toolgate tools validate ${shown(dir)}\n` +
      `  toolgate tools call ${name} '${example}'${flags.dir?.[0] ? ` --dir ${shown(dir)}` : ''}\n`,
  );
  return 0;
}
