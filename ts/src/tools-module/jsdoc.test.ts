import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { extname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { jsDocOfExport, renderJsDoc, scanModuleDocs } from './jsdoc.js';

const ROOT = resolve(import.meta.dirname, '../../..');

/** The description the scanner finds for `exportName`, rendered. */
function describe_(source: string, exportName: string): string | undefined {
  const comment = jsDocOfExport(scanModuleDocs(source), exportName);
  return comment === undefined ? undefined : renderJsDoc(comment);
}

describe('finding the JSDoc of an export', () => {
  it.each([
    ['export function', '/** Does it. */\nexport function run() {}', 'run', 'Does it.'],
    ['export async function', '/** Async. */\nexport async function run() {}', 'run', 'Async.'],
    ['export function*', '/** Gen. */\nexport function* run() {}', 'run', 'Gen.'],
    ['export const arrow', '/** Arrow. */\nexport const run = (x: number) => x;', 'run', 'Arrow.'],
    ['export const async arrow', '/** Async arrow. */\nexport const run = async ({ a }: { a: string }) => a;', 'run', 'Async arrow.'],
    ['export let function expression', '/** Expr. */\nexport let run = function named() {};', 'run', 'Expr.'],
    ['generic function', '/** Generic. */\nexport function run<T extends { a: 1 }>(x: T): T { return x; }', 'run', 'Generic.'],
    ['declared, then exported by name', '/** Local. */\nfunction run() {}\nexport { run };', 'run', 'Local.'],
    ['declared, then exported renamed', '/** Local. */\nconst impl = () => 1;\nexport { impl as run, other };', 'run', 'Local.'],
    ['CommonJS exports.name', '/** CJS. */\nexports.run = function () {};', 'run', 'CJS.'],
    ['CommonJS module.exports.name', '/** CJS. */\nmodule.exports.run = () => {};', 'run', 'CJS.'],
    ['CommonJS shorthand object', '/** CJS. */\nfunction run() {}\nmodule.exports = { run };', 'run', 'CJS.'],
    ['line comment between', '/** Doc. */\n// a note\nexport function run() {}', 'run', 'Doc.'],
    ['block comment between', '/** Doc. */\n/* a note */\nexport function run() {}', 'run', 'Doc.'],
    ['blank lines between', '/** Doc. */\n\n\nexport function run() {}', 'run', 'Doc.'],
    ['decorators between', '/** Doc. */\n@sealed\n@ns.dec({ a: "}" })\n@(factory())\nexport class Run {}', 'Run', 'Doc.'],
    ['the closer of two comments', '/** File header. */\n/** Doc. */\nexport function run() {}', 'run', 'Doc.'],
    ['a TypeScript overload', '/** Overload. */\nexport function run(a: string): string;\nexport function run(a: any) { return a; }', 'run', 'Overload.'],
    ['no semicolons (ASI)', 'const a = 1\n/** Doc. */\nfunction run() {}\nexport { run }', 'run', 'Doc.'],
    ['a shebang line', '#!/usr/bin/env node\n/** Doc. */\nexport function run() {}', 'run', 'Doc.'],
    ['CRLF line endings', '/**\r\n * Doc\r\n * more.\r\n */\r\nexport function run() {}', 'run', 'Doc\nmore.'],
  ])('%s', (_, source, name, expected) => {
    expect(describe_(source, name)).toBe(expected);
  });

  it.each([
    ['no comment', 'export function run() {}'],
    ['a line comment only', '// Not JSDoc.\nexport function run() {}'],
    ['a plain block comment only', '/* Not JSDoc. */\nexport function run() {}'],
    ['an empty /**/ comment', '/**/\nexport function run() {}'],
    ['a comment separated by a statement', '/** Of a. */\nconst a = 1;\nexport function run() {}'],
    ['a comment on the import above', '/** Header. */\nimport x from "y";\nexport function run() {}'],
  ])('finds nothing with %s', (_, source) => {
    expect(describe_(source, 'run')).toBeUndefined();
  });

  it.each([
    ['a double-quoted string', 'const s = "/** Fake. */ export function run() {}";'],
    ['a single-quoted string with an escaped quote', "const s = '\\' /** Fake. */ export function run() {}';"],
    ['a template literal', 'const s = `/** Fake. */ export function run() {}`;'],
    ['a template substitution', 'const s = `${"}" + `/** Fake. */`} export function run() {}`;'],
    ['a regular expression', 'const r = /\\/\\*\\*[/*]/; const q = /"/; const w = /`/;'],
    ['a regular expression after a keyword', 'function f(s) { return /\\/*"/.test(s); }'],
    ['a nested function', 'export function outer() {\n  /** Inner. */\n  function run() {}\n}'],
    ['an object literal', 'export const config = {\n  /** Inner. */\n  run: () => 1,\n};'],
  ])('is not fooled by %s', (_, source) => {
    // What follows the trap must still be read correctly.
    const full = `${source}\n/** Real. */\nexport function other() {}`;
    expect(describe_(full, 'run')).toBeUndefined();
    expect(describe_(full, 'other')).toBe('Real.');
  });

  it('keeps scanning correctly after regexes, divisions and templates', () => {
    const source = [
      'const half = total / 2 / count;',
      'const re = /[/]\\/"\'`/g;',
      "const t = `a ${`b ${'c'}`} /* d */`;",
      'const d = (a) / b; const e = x[0] / y;',
      '/** After all that. */',
      'export function run() {}',
    ].join('\n');
    expect(describe_(source, 'run')).toBe('After all that.');
  });
});

describe('rendering a JSDoc comment', () => {
  it('strips the stars, keeps paragraphs and leaves out block tags', () => {
    const comment = [
      '/**',
      ' * Adds two numbers.',
      ' *',
      ' * Second paragraph,',
      ' *   indented continuation.',
      ' * @param input - the operands',
      ' *   (continued on a second line)',
      ' * @param input.a - the first operand',
      ' * @returns the sum',
      ' * @example',
      ' *   add({ a: 1, b: 2 })',
      ' */',
    ].join('\n');
    expect(renderJsDoc(comment)).toBe('Adds two numbers.\n\nSecond paragraph,\n  indented continuation.');
  });

  it('renders a one-line comment and a comment without stars', () => {
    expect(renderJsDoc('/** One line. */')).toBe('One line.');
    expect(renderJsDoc('/**\n   No stars\n   here.\n*/')).toBe('No stars\nhere.');
  });

  it('uses @description when the summary is empty', () => {
    expect(renderJsDoc('/**\n * @description From the tag,\n *   over two lines.\n * @param x - no\n */')).toBe(
      'From the tag,\n  over two lines.',
    );
    expect(renderJsDoc('/** @param x - only tags */')).toBe('');
  });

  it('turns inline links into their text', () => {
    expect(renderJsDoc('/** See {@link Math.max} and {@link Math.min | the minimum} or {@linkcode run the runner}. */')).toBe(
      'See Math.max and the minimum or the runner.',
    );
  });

  it('collapses runs of blank lines', () => {
    expect(renderJsDoc('/**\n * A.\n *\n *\n *\n * B.\n */')).toBe('A.\n\nB.');
  });
});

/** What the TypeScript compiler API says the JSDoc text of each exported name is. */
function referenceDocs(source: string, fileName: string): Map<string, string | undefined> {
  const kind = /\.[cm]?js$/.test(fileName) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, kind);
  const declarations = new Map<string, ts.Node>();
  const exportedAs = new Map<string, string>();
  const hasModifier = (node: ts.Node, modifier: ts.SyntaxKind) =>
    ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === modifier);
  for (const statement of file.statements) {
    const exported = hasModifier(statement, ts.SyntaxKind.ExportKeyword) && !hasModifier(statement, ts.SyntaxKind.DefaultKeyword);
    let named: { name: string; node: ts.Node } | undefined;
    if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name) {
      named = { name: statement.name.text, node: statement };
    } else if (ts.isVariableStatement(statement)) {
      const first = statement.declarationList.declarations[0];
      if (first && ts.isIdentifier(first.name)) named = { name: first.name.text, node: first };
    } else if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      if (statement.moduleSpecifier || statement.isTypeOnly) continue;
      for (const element of statement.exportClause.elements) {
        exportedAs.set(element.name.text, (element.propertyName ?? element.name).getText());
      }
    }
    if (!named) continue;
    if (!declarations.has(named.name)) declarations.set(named.name, named.node);
    if (exported) exportedAs.set(named.name, named.name);
  }
  const docs = new Map<string, string | undefined>();
  for (const [exported, local] of exportedAs) {
    const node = declarations.get(local);
    const jsDoc = node ? ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc).at(-1) : undefined;
    docs.set(exported, jsDoc ? ts.getTextOfJSDocComment(jsDoc.comment) : undefined);
  }
  return docs;
}

/**
 * Every .ts/.mts/.mjs file of the SDK, the tests, the fixtures and the examples that git tracks:
 * never whatever else is on disk there (a generated benchmark corpus, say, would make this test
 * parse thousands of files).
 */
function corpus(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z', '--', 'ts/src', 'tests', 'examples'], { cwd: ROOT, encoding: 'utf8' });
  return listed
    .split('\0')
    .filter((path) => ['.ts', '.mts', '.mjs'].includes(extname(path)) && !path.includes('/broken/'))
    .map((path) => join(ROOT, path));
}

const normalise = (text: string | undefined) => (text ?? '').replace(/\s+/g, ' ').trim();

describe('agreement with the TypeScript compiler API', () => {
  const files = corpus();

  it('covers a real corpus', () => {
    expect(files.length).toBeGreaterThan(20);
  });

  it.each(files.map((file) => [relative(ROOT, file), file]))('%s', (_, file) => {
    const source = readFileSync(file, 'utf8');
    const reference = referenceDocs(source, file);
    const scanned = scanModuleDocs(source);
    for (const [name, expected] of reference) {
      const comment = jsDocOfExport(scanned, name);
      // TypeScript keeps `{@link …}` and drops `@description` into a tag: compare what both render.
      const actual = comment === undefined ? undefined : renderJsDoc(comment);
      const wanted = (expected ?? '').replace(/\{@link\w*\s+([^\s|}]+)\s*\|?\s*([^}]*)\}/g, (_m, target: string, label: string) => label.trim() || target);
      expect(normalise(actual), `${name} in ${relative(ROOT, file)}`).toBe(normalise(wanted));
    }
  });
});
