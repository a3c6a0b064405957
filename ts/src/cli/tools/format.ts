import { isAbsolute, relative } from 'node:path';
import { LIMITS } from '../../native/constants.js';
import type { ExecutableToolDiagnostic, ExecutableToolSpec } from '../../toolsets/executables.js';
import { terminalJson, terminalText } from '../../native/terminal-text.js';

/**
 * A path as the user would type it: relative to the current directory when inside it. File
 * names come from a repository: printed safely (`terminalText`).
 */
export function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return terminalText(rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path);
}

/** JSON output: exact, with characters that could drive a terminal written as JSON escapes. */
export function writeJson(value: unknown): void {
  process.stdout.write(`${terminalJson(value)}\n`);
}

/** Human output: what tools wrote (names, descriptions, results) printed safely. */
export function writeText(text: string): void {
  process.stdout.write(terminalText(text, { layout: true }));
}

export function firstLine(text: string, width: number): string {
  const line = terminalText(text.split('\n')[0] ?? '');
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

export function table(rows: string[][]): string {
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

export function problems(diagnostics: readonly ExecutableToolDiagnostic[]): string {
  if (diagnostics.length === 0) return '';
  const lines = diagnostics.map(
    (d) => `  ${terminalText(d.kind.replace('_', ' '))}: ${shown(d.path)}\n    ${terminalText(d.reason, { layout: true }).replace(/\n/g, '\n    ')}`,
  );
  return `\nProblems (${diagnostics.length}):\n${lines.join('\n')}\n`;
}

export function specJson(spec: ExecutableToolSpec) {
  return { ...spec, modelName: `${LIMITS.executableToolPrefix}${spec.name}` };
}
