/**
 * Finds the JSDoc comment above each top-level declaration of a JavaScript or TypeScript module
 * and renders it as a tool description.
 *
 * This is a small scanner, not a parser: it knows enough of the lexical grammar (comments,
 * strings, template literals with nested `${}`, regular expression literals, bracket depth) to
 * never mistake text inside a string, template or regex for a comment or a declaration, and
 * then looks only at statements at the top level of the module. Loading the TypeScript
 * compiler for this would cost about 350 ms per process; this costs well under a millisecond.
 * Its results are checked against the TypeScript compiler API in the tests.
 */

/** A significant token; comments are not tokens but are attached to the token that follows. */
interface Token {
  kind: 'word' | 'punct' | 'string' | 'template' | 'regex' | 'number';
  text: string;
  /** Brackets (and template substitutions) open around the token; 0 is the module's top level. */
  depth: number;
  /** The last JSDoc comment between the previous token and this one, if any. */
  doc?: string;
}

/** Where the JSDoc of each name is found in a module. */
export interface ModuleDocs {
  /** Top-level declarations (function, class, const/let/var, `exports.x =`) → their JSDoc. */
  declarations: Map<string, string | undefined>;
  /** Exported name → the local name it exports (`export { local as exported }`). */
  exportedAs: Map<string, string>;
}

// After these tokens a `/` starts a regular expression rather than a division.
const KEYWORDS_BEFORE_EXPRESSION = new Set([
  'return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else',
  'yield', 'await', 'extends',
]);

// Character classes by code, not by regex: the scanner looks at every character of the file.
function isIdentifierPart(code: number): boolean {
  return (
    (code >= 97 && code <= 122) || // a-z
    (code >= 65 && code <= 90) || // A-Z
    (code >= 48 && code <= 57) || // 0-9
    code === 95 || // _
    code === 36 || // $
    code >= 128
  );
}

function isIdentifierStart(code: number): boolean {
  return isIdentifierPart(code) && !(code >= 48 && code <= 57);
}

/** Splits `source` into significant tokens, attaching each JSDoc comment to the token after it. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  // One entry per open bracket; 'template' marks a `${` whose `}` resumes a template literal.
  const open: string[] = [];
  let pendingDoc: string | undefined;
  let i = source.startsWith('#!') ? source.indexOf('\n') + 1 || source.length : 0;

  const push = (kind: Token['kind'], text: string) => {
    tokens.push({ kind, text, depth: open.length, ...(pendingDoc === undefined ? {} : { doc: pendingDoc }) });
    pendingDoc = undefined;
  };
  const regexAllowed = () => {
    const last = tokens.at(-1);
    if (!last) return true;
    if (last.kind === 'word') return KEYWORDS_BEFORE_EXPRESSION.has(last.text);
    if (last.kind === 'punct') return !(last.text === ')' || last.text === ']' || last.text === '}');
    return false;
  };
  // Scans template text from just after a backtick or a substitution's `}` to its end or next `${`.
  const scanTemplateText = () => {
    while (i < source.length) {
      const c = source[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        i += 1;
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        i += 2;
        open.push('template');
        return;
      } else i += 1;
    }
  };

  while (i < source.length) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v' || c === '\ufeff') {
      i += 1;
    } else if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      i = end === -1 ? source.length : end;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      const comment = source.slice(i, stop);
      // `/**/` is an empty block comment, not JSDoc.
      if (comment.startsWith('/**') && comment !== '/**/') pendingDoc = comment;
      i = stop;
    } else if (c === '"' || c === "'") {
      const start = i;
      i += 1;
      while (i < source.length && source[i] !== c && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      i += 1;
      push('string', source.slice(start, i));
    } else if (c === '`') {
      const start = i;
      i += 1;
      scanTemplateText();
      push('template', source.slice(start, i));
    } else if (c === '}' && open.at(-1) === 'template') {
      open.pop();
      i += 1;
      scanTemplateText();
    } else if (c === '/' && regexAllowed()) {
      const start = i;
      let inClass = false;
      i += 1;
      while (i < source.length && source[i] !== '\n') {
        const r = source[i];
        if (r === '\\') i += 1;
        else if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        i += 1;
      }
      i += 1;
      while (i < source.length && isIdentifierPart(source.charCodeAt(i))) i += 1;
      push('regex', source.slice(start, i));
    } else if (isIdentifierStart(source.charCodeAt(i)) || c === '#') {
      const start = i;
      i += 1;
      while (i < source.length && isIdentifierPart(source.charCodeAt(i))) i += 1;
      push('word', source.slice(start, i));
    } else if (c >= '0' && c <= '9') {
      const start = i;
      while (i < source.length && (isIdentifierPart(source.charCodeAt(i)) || source[i] === '.')) i += 1;
      push('number', source.slice(start, i));
    } else if (c === '(' || c === '[' || c === '{') {
      push('punct', c);
      open.push(c);
      i += 1;
    } else if (c === ')' || c === ']' || c === '}') {
      open.pop();
      push('punct', c);
      i += 1;
    } else if (c === '=' && next === '>') {
      push('punct', '=>');
      i += 2;
    } else {
      push('punct', c);
      i += 1;
    }
  }
  return tokens;
}

/** Reads the top-level declarations and export lists of a module, with their JSDoc. */
export function scanModuleDocs(source: string): ModuleDocs {
  const tokens = tokenize(source);
  const declarations = new Map<string, string | undefined>();
  const exportedAs = new Map<string, string>();
  const declare = (name: string | undefined, doc: string | undefined) => {
    // The first declaration wins, so a TypeScript overload signature keeps its documentation.
    if (name !== undefined && (!declarations.has(name) || declarations.get(name) === undefined)) {
      declarations.set(name, doc);
    }
  };
  const word = (index: number) => {
    const token = tokens[index];
    return token?.kind === 'word' ? token.text : undefined;
  };
  const punct = (index: number, text: string) => tokens[index]?.kind === 'punct' && tokens[index]?.text === text;

  for (let index = 0; index < tokens.length; index++) {
    const first = tokens[index] as Token;
    if (first.depth !== 0) continue;
    let doc = first.doc;
    let at = index;
    // Decorators may sit between a JSDoc comment and the declaration it documents.
    while (punct(at, '@')) {
      at += 1;
      if (punct(at, '(')) at = closing(tokens, at) + 1;
      else {
        at += 1;
        while (punct(at, '.') && word(at + 1) !== undefined) at += 2;
        if (punct(at, '(')) at = closing(tokens, at) + 1;
      }
      // The comment closest to the declaration is its documentation.
      doc = tokens[at]?.doc ?? doc;
    }

    // CommonJS: `exports.name = ...` and `module.exports.name = ...`.
    if (word(at) === 'module' && punct(at + 1, '.') && word(at + 2) === 'exports') at += 2;
    if (word(at) === 'exports' && punct(at + 1, '.') && word(at + 2) !== undefined && punct(at + 3, '=')) {
      declare(word(at + 2), doc);
      continue;
    }

    let exported = false;
    if (word(at) === 'export') {
      exported = true;
      at += 1;
      if (punct(at, '{')) {
        at = readExportList(tokens, at, exportedAs);
        continue;
      }
      if (word(at) === 'default') continue;
    }
    doc = tokens[at]?.doc ?? doc;
    while (word(at) === 'declare' || word(at) === 'abstract' || word(at) === 'async') at += 1;
    const keyword = word(at);
    let name: string | undefined;
    if (keyword === 'function') name = punct(at + 1, '*') ? word(at + 2) : word(at + 1);
    else if (keyword === 'class') name = word(at + 1);
    else if (keyword === 'const' || keyword === 'let' || keyword === 'var') name = word(at + 1);
    // `const enum E` is a type, not a value.
    if (name === undefined || (keyword === 'const' && name === 'enum')) continue;
    // A function or class expression (`const f = function g() {}`) may be recorded here too; that
    // is harmless, because its name is not in scope for an `export { g }` to refer to.
    declare(name, doc);
    if (exported) exportedAs.set(name, name);
  }
  return { declarations, exportedAs };
}

/** Index of the bracket that closes the one at `index`. */
function closing(tokens: readonly Token[], index: number): number {
  const depth = (tokens[index] as Token).depth;
  for (let at = index + 1; at < tokens.length; at++) {
    const token = tokens[at] as Token;
    if (token.depth === depth && token.kind === 'punct' && (token.text === ')' || token.text === ']' || token.text === '}')) {
      return at;
    }
  }
  return tokens.length;
}

/** Reads `{ a, b as c, type d }` starting at `{`; records exported → local names; returns the `}` index. */
function readExportList(tokens: readonly Token[], start: number, exportedAs: Map<string, string>): number {
  const end = closing(tokens, start);
  const isFrom = tokens[end + 1]?.kind === 'word' && tokens[end + 1]?.text === 'from';
  let specifier: string[] = [];
  const flush = () => {
    const parts = specifier.filter((part) => part !== 'type');
    const local = parts[0];
    const exported = parts[1] === 'as' ? parts[2] : local;
    // A re-export (`export { x } from '../custom-module/y'`) has no local declaration to read a comment from.
    if (local !== undefined && exported !== undefined) exportedAs.set(exported, isFrom ? '' : local);
    specifier = [];
  };
  for (let at = start + 1; at < end; at++) {
    const token = tokens[at] as Token;
    if (token.kind === 'punct' && token.text === ',') flush();
    else specifier.push(token.kind === 'string' ? token.text.slice(1, -1) : token.text);
  }
  flush();
  return end;
}

/** The JSDoc above the declaration that `exportName` exports, or undefined. */
export function jsDocOfExport(docs: ModuleDocs, exportName: string): string | undefined {
  const local = docs.exportedAs.get(exportName) ?? exportName;
  return docs.declarations.get(local);
}

/**
 * Renders a JSDoc comment as plain text for a model: the comment's leading `*`s are removed, the
 * summary is everything before the first block tag, and block tags (`@param`, `@returns`, …) are
 * left out because the input schema already describes the parameters. A comment whose summary
 * is empty uses its `@description` tag. `{@link Target text}` becomes `text` (or `Target`).
 */
export function renderJsDoc(comment: string): string {
  const body = comment.replace(/^\/\*\*/, '').replace(/\*\/$/, '');
  const lines = body.split(/\r?\n/).map((line) => line.replace(/^\s*\* ?/, '').trimEnd());
  const summary: string[] = [];
  const tags: { name: string; lines: string[] }[] = [];
  for (const line of lines) {
    const tag = /^\s*@(\w+)\s?(.*)$/.exec(line);
    if (tag) tags.push({ name: tag[1] as string, lines: [tag[2] ?? ''] });
    else if (tags.length > 0) tags.at(-1)?.lines.push(line);
    else summary.push(line);
  }
  const text = tidy(summary) || tidy(tags.find((tag) => tag.name === 'description')?.lines ?? []);
  return text.replace(
    /\{@(?:link|linkcode|linkplain)\s+([^\s|}]+)\s*\|?\s*([^}]*)\}/g,
    (_, target: string, label: string) => label.trim() || target,
  );
}

/** Removes common indentation, leading and trailing blank lines, and runs of blank lines. */
function tidy(lines: readonly string[]): string {
  const indents = lines.filter((line) => line.trim()).map((line) => line.length - line.trimStart().length);
  const common = indents.length > 0 ? Math.min(...indents) : 0;
  return lines
    .map((line) => line.slice(common))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
