/**
 * What a tools module's source names of other files, read from its syntax tree (the TypeScript
 * parser, which reads every module kind Node and jiti load: TS, TSX, JS, JSX, ESM and CommonJS).
 * A parser, not patterns: comments, line breaks and template literals between an import form
 * and its string change nothing, and a string inside a comment or another string is no import.
 *
 * Two kinds of reference come out:
 * - a *specifier*, resolved as an import is: `import … from S`, `import S`, `export … from S`,
 *   `import x = require(S)`, `import(S)`, `require(S)`, `require.resolve(S)`,
 *   `import.meta.resolve(S)`, and the same through `createRequire(…)` (or a name bound to it);
 * - a *file*, an absolute path the module computes from its own location with static strings:
 *   `new URL(S, import.meta.url)` (whatever it is passed to: `import()`, `new Worker`,
 *   `readFileSync` then `new Function`/`vm`), `fileURLToPath(…)` of one, `path.join`/`resolve`
 *   of `__dirname`, `import.meta.dirname`, `dirname(fileURLToPath(import.meta.url))` (or a
 *   name bound to one) and strings, `__dirname + S`, `` `${__dirname}/S` ``; and a
 *   `new Worker(S)`/`fork(S)` path (against the module's folder and the current directory).
 *
 * S is any static string: a literal, a template literal without `${}`, or `+`/templates of
 * those. A name computed at run time (`import(name)`) is not known here.
 */
import { createRequire } from 'node:module';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as TS from 'typescript';
import { ToolgateError } from '../native/errors.js';

/** Every extension whose files are code Node or jiti runs, and so are read for references. */
export const SOURCE_EXTENSIONS = ['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.jsx'];

export type Reference = { kind: 'specifier'; specifier: string } | { kind: 'file'; path: string };

let typescript: typeof TS | undefined;

/**
 * The TypeScript compiler, loaded on first use (importing toolgate does not pay for it). Without
 * it nothing could be followed, so loading fails instead of protecting less.
 */
function compiler(file: string): typeof TS {
  if (typescript) return typescript;
  try {
    typescript = createRequire(import.meta.url)('typescript') as typeof TS;
    return typescript;
  } catch (error) {
    throw new ToolgateError(
      'MODULE_INVALID',
      `cannot read what ${file} imports: the TypeScript parser (package 'typescript', a dependency of toolgate) ` +
        `cannot be loaded: ${(error as Error).message}. Reinstall toolgate's dependencies`,
      { cause: error },
    );
  }
}

function scriptKind(ts: typeof TS, file: string): TS.ScriptKind {
  switch (extname(file)) {
    case '.tsx':
      return ts.ScriptKind.TSX;
    case '.jsx':
      return ts.ScriptKind.JSX;
    case '.js':
    case '.mjs':
    case '.cjs':
      return ts.ScriptKind.JS; // allows JSX, as Node's loaders for .js do not, harmlessly
    default:
      return ts.ScriptKind.TS;
  }
}

/**
 * What the parser complains about in sloppy-mode JavaScript Node runs (`0755`, `'\08'`, `08`):
 * it reads the token all the same, so the tree is right.
 */
const TOLERATED = new Set([1121, 1487, 1488, 1489]);

/**
 * Every reference in `source`, the text of the module at the absolute `file`. A source the
 * parser cannot read fails with `MODULE_INVALID` naming the place: the files it names would not
 * be known, and so not protected.
 */
export function moduleReferences(source: string, file: string): Reference[] {
  const ts = compiler(file);
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, scriptKind(ts, file));
  // Not in the public typings, but what `tsc` reports as syntax errors.
  const errors = (tree as unknown as { parseDiagnostics?: readonly TS.Diagnostic[] }).parseDiagnostics ?? [];
  const error = errors.find((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error && !TOLERATED.has(diagnostic.code));
  if (error) {
    const { line, character } = tree.getLineAndCharacterOfPosition(error.start ?? 0);
    throw new ToolgateError(
      'MODULE_INVALID',
      `cannot read what ${file}:${line + 1}:${character + 1} imports: ${ts.flattenDiagnosticMessageText(error.messageText, ' ').replace(/\.$/, '')}. ` +
        'toolgate protects every file a tools module imports, so it has to read each; fix the syntax error',
    );
  }
  return new Evaluator(ts, file).references(tree);
}

/** Reads a syntax tree with the values it can know statically: strings, and paths and URLs of the module's own location. */
class Evaluator {
  private readonly found: Reference[] = [];
  /** Names bound (`const x = …`) to a path, a `file:` URL, or a `require` function. */
  private readonly paths = new Map<string, string>();
  private readonly urls = new Map<string, string>();
  private readonly requires = new Set<string>(['require']);

  constructor(
    private readonly ts: typeof TS,
    private readonly file: string,
  ) {
    // CommonJS's own names (jiti gives a transpiled ES module them too).
    this.paths.set('__dirname', dirname(file));
    this.paths.set('__filename', file);
  }

  references(tree: TS.SourceFile): Reference[] {
    const visit = (node: TS.Node): void => {
      this.bind(node);
      this.specifierOf(node);
      this.fileOf(node);
      this.ts.forEachChild(node, visit);
    };
    visit(tree);
    return this.found;
  }

  /** `const here = dirname(fileURLToPath(import.meta.url))`, `const require = createRequire(…)`: remembered by name (scopes are not told apart: generous). */
  private bind(node: TS.Node): void {
    const ts = this.ts;
    if (!ts.isVariableDeclaration(node) || !ts.isIdentifier(node.name) || !node.initializer) return;
    const name = node.name.text;
    const path = this.path(node.initializer);
    if (path !== undefined) this.paths.set(name, path);
    const url = this.url(node.initializer);
    if (url !== undefined) this.urls.set(name, url);
    if (this.isRequire(node.initializer)) this.requires.add(name);
  }

  /** The import forms and require calls with a static string. */
  private specifierOf(node: TS.Node): void {
    const ts = this.ts;
    let specifier: TS.Expression | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      specifier = node.moduleSpecifier;
    } else if (ts.isExternalModuleReference(node)) {
      specifier = node.expression; // import x = require('…')
    } else if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const callee = this.unwrap(node.expression);
      const resolver =
        ts.isPropertyAccessExpression(callee) &&
        callee.name.text === 'resolve' &&
        (this.isRequire(callee.expression) || this.isImportMeta(callee.expression));
      if (callee.kind === ts.SyntaxKind.ImportKeyword || this.isRequire(callee) || resolver) specifier = node.arguments[0];
    }
    const text = specifier && this.string(specifier);
    if (text !== undefined) this.found.push({ kind: 'specifier', specifier: text });
  }

  /** A path or `file:` URL of the module's own location built with static strings, and worker scripts named by a string. */
  private fileOf(node: TS.Node): void {
    const ts = this.ts;
    if (ts.isNewExpression(node) || ts.isCallExpression(node) || ts.isBinaryExpression(node) || ts.isTemplateExpression(node)) {
      const url = ts.isNewExpression(node) || ts.isCallExpression(node) ? this.url(node) : undefined;
      const path = url?.startsWith('file:') ? fileURLToPath(url) : this.path(node);
      if (path !== undefined) this.found.push({ kind: 'file', path });
    }
    // `new Worker('./w.js')`, `fork('./child.js')`: Node takes a relative path against the
    // current directory; the module's folder is where its author likely meant.
    const callee = ts.isNewExpression(node) || ts.isCallExpression(node) ? this.unwrap(node.expression) : undefined;
    if (callee && ['Worker', 'fork'].includes(this.nameOf(callee) ?? '')) {
      const first = (node as TS.NewExpression | TS.CallExpression).arguments?.[0];
      const text = first && this.string(first);
      if (text !== undefined && !/^[a-z][a-z0-9+.-]*:/i.test(text)) {
        this.found.push({ kind: 'file', path: resolve(dirname(this.file), text) }, { kind: 'file', path: resolve(process.cwd(), text) });
      }
    }
  }

  /** A static string: a literal, a template without `${}`, or `+` and templates of static strings. */
  private string(node: TS.Expression): string | undefined {
    const ts = this.ts;
    node = this.unwrap(node);
    if (ts.isStringLiteralLike(node)) return node.text;
    if (ts.isTemplateExpression(node)) {
      let text = node.head.text;
      for (const span of node.templateSpans) {
        const value = this.string(span.expression);
        if (value === undefined) return undefined;
        text += value + span.literal.text;
      }
      return text;
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      const left = this.string(node.left);
      const right = left === undefined ? undefined : this.string(node.right);
      return right === undefined ? undefined : left! + right;
    }
    return undefined;
  }

  /** An absolute path known statically: the module's file or folder, and joins of them with static strings. */
  private path(node: TS.Expression): string | undefined {
    const ts = this.ts;
    node = this.unwrap(node);
    if (ts.isIdentifier(node)) return this.paths.get(node.text);
    if (this.isImportMeta(node, 'dirname')) return dirname(this.file);
    if (this.isImportMeta(node, 'filename')) return this.file;
    if (ts.isCallExpression(node)) {
      const name = this.nameOf(this.unwrap(node.expression));
      const [first, ...rest] = node.arguments;
      if (!first) return undefined;
      if (name === 'fileURLToPath') {
        const url = this.url(first);
        return url?.startsWith('file:') ? fileURLToPath(url) : undefined;
      }
      if (name === 'dirname') {
        const path = this.path(first);
        return path === undefined ? undefined : dirname(path);
      }
      if (name === 'join' || name === 'resolve') {
        const base = this.path(first);
        const parts = rest.map((part) => this.string(part));
        if (base === undefined || parts.some((part) => part === undefined)) return undefined;
        return name === 'join' ? join(base, ...(parts as string[])) : resolve(base, ...(parts as string[]));
      }
      return undefined;
    }
    // `__dirname + '/lib/x.js'`, `${import.meta.dirname}/lib/x.js`
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      const base = this.path(node.left);
      const tail = base === undefined ? undefined : this.string(node.right);
      return tail === undefined ? undefined : absolute(base! + tail);
    }
    if (ts.isTemplateExpression(node) && node.head.text === '' && node.templateSpans.length > 0) {
      const [first, ...rest] = node.templateSpans;
      const base = this.path(first!.expression);
      if (base === undefined) return undefined;
      let text = base + first!.literal.text;
      for (const span of rest) {
        const value = this.string(span.expression);
        if (value === undefined) return undefined;
        text += value + span.literal.text;
      }
      return absolute(text);
    }
    return undefined;
  }

  /** A URL known statically: `import.meta.url`, `new URL(S, <known URL>)`, `pathToFileURL(<known path>)`, `.href` of one. */
  private url(node: TS.Expression): string | undefined {
    const ts = this.ts;
    node = this.unwrap(node);
    if (ts.isIdentifier(node)) return this.urls.get(node.text);
    if (this.isImportMeta(node, 'url')) return pathToFileURL(this.file).href;
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'href') return this.url(node.expression);
    if (ts.isNewExpression(node) && this.nameOf(this.unwrap(node.expression)) === 'URL' && node.arguments?.length) {
      const [input, base] = node.arguments;
      const text = this.string(input!);
      const baseUrl = base === undefined ? undefined : (this.url(base) ?? this.string(base));
      if (text === undefined || (base !== undefined && baseUrl === undefined)) return undefined;
      try {
        return new URL(text, baseUrl).href;
      } catch {
        return undefined;
      }
    }
    if (ts.isCallExpression(node) && this.nameOf(this.unwrap(node.expression)) === 'pathToFileURL' && node.arguments[0]) {
      const path = this.path(node.arguments[0]);
      return path === undefined ? undefined : pathToFileURL(path).href;
    }
    return undefined;
  }

  /** `require`, a name bound to `createRequire(…)`, `createRequire(…)` itself, `module.require`. */
  private isRequire(node: TS.Expression): boolean {
    const ts = this.ts;
    node = this.unwrap(node);
    if (ts.isIdentifier(node)) return this.requires.has(node.text);
    if (ts.isPropertyAccessExpression(node)) return node.name.text === 'require' && ts.isIdentifier(node.expression) && node.expression.text === 'module';
    return ts.isCallExpression(node) && this.nameOf(this.unwrap(node.expression)) === 'createRequire';
  }

  /** `import.meta`, or `import.meta.<property>` when `property` is given. */
  private isImportMeta(node: TS.Expression, property?: string): boolean {
    const ts = this.ts;
    node = this.unwrap(node);
    if (property !== undefined) {
      return ts.isPropertyAccessExpression(node) && node.name.text === property && this.isImportMeta(node.expression);
    }
    return ts.isMetaProperty(node) && node.keywordToken === ts.SyntaxKind.ImportKeyword && node.name.text === 'meta';
  }

  /** The name a callee is called by: `join` for `join`, `path.join`, `path.posix.join`, `node_path.join`. */
  private nameOf(node: TS.Expression): string | undefined {
    const ts = this.ts;
    if (ts.isIdentifier(node)) return node.text;
    if (ts.isPropertyAccessExpression(node)) return node.name.text;
    return undefined;
  }

  /** The expression without what changes nothing at run time: parentheses, `as`, `satisfies`, `!`, `<T>`. */
  private unwrap(node: TS.Expression): TS.Expression {
    const ts = this.ts;
    while (
      ts.isParenthesizedExpression(node) ||
      ts.isAsExpression(node) ||
      ts.isSatisfiesExpression(node) ||
      ts.isNonNullExpression(node) ||
      ts.isTypeAssertionExpression(node)
    ) {
      node = node.expression;
    }
    return node;
  }
}

/** `text` as a normalized absolute path, or nothing when it is not absolute. */
function absolute(text: string): string | undefined {
  return isAbsolute(text) ? resolve(text) : undefined;
}
