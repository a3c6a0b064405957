/**
 * Every TypeScript block of the README and docs/*.md compiles under `tsc --strict` against the
 * built package, as a user's project would import it (issue 25, item 5): a snippet that does not
 * compile is a bug a newcomer meets first.
 *
 * Each ```ts block becomes a module of a scratch project whose node_modules links this
 * checkout's (and `toolgate` to the checkout itself, so `import … from 'toolgate'` gets dist/ and
 * its types). The rules for what a block may leave out:
 * - A block with an `import` is a program: it must import what it uses.
 * - A block without one is an excerpt: every export of `toolgate` and of `ai` it names is in scope.
 * - Either may use the values the surrounding text has in hand, declared once in CONTEXT below
 *   (`model`, `worker`, `workDir`, …), never anything else.
 * - ```ts fragment marks a block that is not code but a shape or a list of forms (a result's
 *   fields, alternatives side by side); FRAGMENTS_ALLOWED keeps those few.
 * Errors are reported as `file:line:column` of the Markdown.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/checkout.js';
import { tempDir } from './helpers/fs.js';

/** A fenced TypeScript block of a Markdown file. */
interface Block {
  /** The Markdown file, relative to the repository. */
  file: string;
  /** The 1-based line of the block's first code line in the Markdown file. */
  line: number;
  /** The column the fence is indented by (a block inside a list item). */
  indent: number;
  flags: string[];
  code: string;
}

const TYPESCRIPT = new Set(['ts', 'typescript', 'tsx', 'mts']);

/** The ```ts blocks of `markdown` (fences of backticks or tildes, also indented inside lists). */
function typescriptBlocks(file: string, markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^( *)(`{3,}|~{3,})\s*([\w+-]*)(.*)$/.exec(lines[index]!);
    if (!open) continue;
    const [, indent = '', fence = '', language = '', rest = ''] = open;
    const close = new RegExp(`^ *${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    const start = index + 1;
    let end = start;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    if (TYPESCRIPT.has(language.toLowerCase())) {
      const code = lines
        .slice(start, end)
        .map((text) => (text.startsWith(indent) ? text.slice(indent.length) : text.trimStart()))
        .join('\n');
      blocks.push({ file, line: start + 1, indent: indent.length, flags: rest.trim().split(/\s+/).filter(Boolean), code });
    }
    index = end;
  }
  return blocks;
}

/** The README and every docs/*.md. */
function documentation(): string[] {
  return ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
}

/**
 * What the surrounding text of a block has in hand. Keep it short: a block that needs more
 * should say where it comes from.
 */
const CONTEXT = `import type { LanguageModel } from 'ai';
import type { ApprovalHandler, LoadedWorker, RunEvent } from 'toolgate';
declare global {
  /** An AI SDK language model. */
  const model: LanguageModel;
  /** The user's request. */
  const prompt: string;
  const task: string;
  /** A worker from loadWorker(). */
  const worker: LoadedWorker;
  /** The directory the tools work in. */
  const workDir: string;
  const onApproval: ApprovalHandler;
  const onEvent: (event: RunEvent) => void;
  /** The secret deferred runs are signed with (at least 32 bytes). */
  const stateSecret: string;
}
export {};
`;

/** Blocks marked ```ts fragment: shapes and side-by-side forms, not programs. */
const FRAGMENTS_ALLOWED = 5;

/** The modules whose exports an excerpt (a block without imports) may name without importing them. */
const EXCERPT_MODULES = ['toolgate', 'ai'] as const;

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  esModuleInterop: true,
  isolatedModules: true,
};

/** Top-level names a block declares itself (an auto-import of the same name would clash). */
function declaredNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const bind = (name: ts.BindingName): void => {
    if (ts.isIdentifier(name)) names.add(name.text);
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name);
  };
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) for (const declaration of statement.declarationList.declarations) bind(declaration.name);
    else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && statement.name) {
      names.add(statement.name.text);
    }
  }
  return names;
}

function identifiers(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) names.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/** The names `module` exports (values and types), as a file in `dir` sees them. */
function exportsOf(dir: string, modules: readonly string[]): Map<string, Set<string>> {
  const probe = join(dir, 'probe.ts');
  writeFileSync(probe, modules.map((module, index) => `import * as m${index} from '${module}';\nexport { m${index} };\n`).join(''));
  const program = ts.createProgram([probe], COMPILER_OPTIONS);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(probe)!;
  const result = new Map<string, Set<string>>();
  source.statements.filter(ts.isImportDeclaration).forEach((declaration, index) => {
    const symbol = checker.getSymbolAtLocation(declaration.moduleSpecifier);
    if (!symbol) throw new Error(`cannot resolve '${modules[index]}' from ${dir}: is the package built (npm run build:ts)?`);
    result.set(modules[index]!, new Set(checker.getExportsOfModule(symbol).map((exported) => exported.name)));
  });
  return result;
}

/** A scratch project: node_modules links this checkout's packages, and `toolgate` to the checkout. */
function scratchProject(): string {
  const dir = tempDir('toolgate-docs-');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'docs-blocks', private: true, type: 'module' }));
  mkdirSync(join(dir, 'node_modules'));
  for (const entry of readdirSync(join(REPO_ROOT, 'node_modules'))) {
    if (entry !== '.bin' && entry !== 'toolgate') symlinkSync(join(REPO_ROOT, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  symlinkSync(REPO_ROOT, join(dir, 'node_modules', 'toolgate'));
  writeFileSync(join(dir, 'context.d.ts'), CONTEXT);
  return dir;
}

interface Finding {
  /** `file:line:column`, in the Markdown. */
  place: string;
  message: string;
}

/** Compiles `blocks` (skipping fragments); returns every error at its place in the Markdown. */
function typecheckBlocks(blocks: readonly Block[]): Finding[] {
  const dir = scratchProject();
  const exported = exportsOf(dir, EXCERPT_MODULES);
  const files = new Map<string, { block: Block; preludeLines: number }>();
  for (const [index, block] of blocks.entries()) {
    if (block.flags.includes('fragment')) continue;
    const source = ts.createSourceFile('block.ts', block.code, ts.ScriptTarget.ES2022, true);
    const isProgram = source.statements.some(ts.isImportDeclaration);
    let prelude = '';
    if (!isProgram) {
      const used = identifiers(source);
      const declared = declaredNames(source);
      const taken = new Set<string>();
      for (const module of EXCERPT_MODULES) {
        const names = [...exported.get(module)!].filter((name) => used.has(name) && !declared.has(name) && !taken.has(name)).sort();
        names.forEach((name) => taken.add(name));
        if (names.length > 0) prelude += `import { ${names.join(', ')} } from '${module}';`;
      }
    }
    // One line of prelude (or none), and `export {}` so that every block is a module.
    const name = join(dir, `block-${String(index).padStart(3, '0')}.ts`);
    writeFileSync(name, `${prelude}\n${block.code}\nexport {};\n`);
    files.set(name, { block, preludeLines: 1 });
  }
  const program = ts.createProgram([join(dir, 'context.d.ts'), ...files.keys()], COMPILER_OPTIONS);
  const findings: Finding[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const origin = diagnostic.file && files.get(diagnostic.file.fileName);
    if (!diagnostic.file || !origin || diagnostic.start === undefined) {
      findings.push({ place: diagnostic.file ? relative(dir, diagnostic.file.fileName) : '(project)', message: `TS${diagnostic.code}: ${message}` });
      continue;
    }
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    const codeLine = line - origin.preludeLines;
    const place = codeLine < 0 ? `${origin.block.file}:${origin.block.line} (the imports added to this excerpt)` : `${origin.block.file}:${origin.block.line + codeLine}:${origin.block.indent + character + 1}`;
    findings.push({ place, message: `TS${diagnostic.code}: ${message}` });
  }
  return findings;
}

function allBlocks(): Block[] {
  return documentation().flatMap((file) => typescriptBlocks(file, readFileSync(join(REPO_ROOT, file), 'utf8')));
}

describe('TypeScript in the README and docs/', () => {
  it('every block compiles under --strict against the built package', () => {
    const blocks = allBlocks();
    expect(blocks.length).toBeGreaterThan(30);
    const findings = typecheckBlocks(blocks);
    expect(findings.map((finding) => `${finding.place}: ${finding.message}`)).toEqual([]);
  }, 120_000);

  it(`marks at most ${FRAGMENTS_ALLOWED} blocks as fragments, each a shape or list of forms`, () => {
    const fragments = allBlocks().filter((block) => block.flags.includes('fragment'));
    expect(fragments.length, fragments.map((block) => `${block.file}:${block.line}`).join(', ')).toBeLessThanOrEqual(FRAGMENTS_ALLOWED);
    const unknown = allBlocks().flatMap((block) => block.flags.filter((flag) => flag !== 'fragment').map((flag) => `${block.file}:${block.line} ${flag}`));
    expect(unknown).toEqual([]);
  });

  it('finds the error of a block at its line and column in the Markdown, the README mistake of issue 25 among them', () => {
    const markdown = [
      '# Title',
      '',
      '- In a list:',
      '',
      '  ```ts',
      "  import { runWorker, loadWorker } from 'toolgate';",
      "  const loaded = await loadWorker('worker.yaml');",
      "  await runWorker(loaded, 'task', { onApproval: async () => 'approve', maxStepz: 3 });",
      '  ```',
      '',
      '```ts',
      "const handler: (request: unknown) => Promise<'approve'> = async () => 'approve' as string;",
      '```',
      '',
      '```ts fragment',
      '{ this is: not code }',
      '```',
      '',
      '```typescript',
      "const tools = codeAgentTools({ workDir, group: 'everything' });",
      '```',
    ].join('\n');
    const blocks = typescriptBlocks('planted.md', markdown);
    expect(blocks.map((block) => [block.line, block.indent, block.flags])).toEqual([
      [6, 2, []],
      [12, 0, []],
      [16, 0, ['fragment']],
      [20, 0, []],
    ]);
    const findings = typecheckBlocks(blocks);
    const places = findings.map((finding) => finding.place);
    // the misspelt option, in the indented block; the string that is not 'approve'; the bad group
    // issue 25's README mistake (an async handler's bare string), in the indented block; the
    // assertion to a wider type; the group that does not exist, in an excerpt without imports
    expect(places).toEqual(['planted.md:8:37', 'planted.md:12:71', 'planted.md:20:41']);
    expect(findings[0]!.message).toContain("Type 'string' is not assignable to type 'ApprovalAnswer'");
    expect(findings[2]!.message).toContain('"everything"');
  }, 120_000);
});
