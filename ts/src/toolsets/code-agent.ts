import { type Tool, tool } from 'ai';
import { z } from 'zod';
import type { ApprovalDecision, FileApprovalConfig, ResolvedApproval } from '../approval/approval.js';
import { attachDecided } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTools, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { callNative } from '../native/errors.js';
import { FileTools } from '../native/file-tools.js';
import { type FilesFor, pathGatedTool } from './path-rules.js';

/** Which code-agent tools to offer. */
export type CodeAgentGroup = native.CodeAgentGroup;

export interface CodeAgentOptions {
  /** The directory every path is confined to (symlinks included); default: the current directory. */
  workDir?: string;
  /** `search`: grep_search, glob_search, directory_tree; `read`: search + file_read;
   * `write`: file_write, file_edit, file_patch; `all` (default). */
  group?: CodeAgentGroup;
  /** Applied on top of the defaults: search and read tools `preApproved`, write tools `ask`;
   * `paths` adds path rules (see docs/file-tools.md). */
  approval?: FileApprovalConfig;
}

/** The tool names of each group, in the order they are offered (the core's lists). */
export const CODE_AGENT_GROUPS: Readonly<Record<CodeAgentGroup, readonly string[]>> = {
  search: native.codeAgentGroupTools('search'),
  read: native.codeAgentGroupTools('read'),
  write: native.codeAgentGroupTools('write'),
  all: native.codeAgentGroupTools('all'),
};

/** Default approval of each code-agent tool (the core's documented defaults). */
export const CODE_AGENT_DEFAULT_APPROVAL: Readonly<Record<string, ApprovalDecision>> = Object.fromEntries(
  native.documentedApprovals('code_agent', native.codeAgentGroupTools('all')).map((tool) => [tool.name, tool.decision]),
);

const SKIPPED = LIMITS.skippedDirectories.join(' ');
const LINES = LIMITS.defaultReadLines;
const READ_CAP = `${LIMITS.defaultReadBytes / 1024} KiB`;
const path = (what: string) => z.string().describe(`${what}, relative to the work directory`);
const count = (min: number) => z.number().int().min(min);

function fileRead(files: FilesFor) {
  return tool({
    description:
      'Read a text file in the work directory. Returns its lines as `<line number>\\t<text>` (numbered from 1): ' +
      `at most \`limit\` lines (default ${LINES}) and ${READ_CAP}; lines longer than ${LIMITS.maxLineBytes} bytes ` +
      'end with `… [line cut: N more bytes]`. Line breaks are kept as in the file (CRLF stays CRLF); when the last ' +
      'line has no line break, the output ends with `[no newline at end of file]`. ' +
      "When the output is cut, its last line is `[truncated: showed lines A-B of 'path'; ... Call again with offset=N to continue]`. " +
      'Large files are streamed, so reading a window of a huge log with offset/limit is cheap. ' +
      'A directory gives a listing (`dir|file|link  size  name`); a binary file gives a one-line description instead of its bytes.',
    inputSchema: z.object({
      path: path('File or directory to read'),
      offset: count(1).optional().describe('First line to return, from 1 (default 1)'),
      limit: count(1).optional().describe(`Maximum number of lines to return (default ${LINES})`),
    }),
    execute: async ({ path, offset, limit }, { abortSignal, toolCallId }) =>
      (await files(toolCallId).read({ path, offset, limit, lineNumbers: true }, abortSignal)).text,
  });
}

function fileWrite(files: FilesFor) {
  return tool({
    description:
      'Create a file or replace its whole content. Missing parent directories are created. The write is atomic ' +
      '(a temporary file renamed over the target), so the file is never left half-written. ' +
      "Returns { path, action: 'created' | 'updated', bytes }. To change part of an existing file, use file_edit.",
    inputSchema: z.object({
      path: path('File to write'),
      content: z.string().describe('The complete new content of the file'),
    }),
    execute: async ({ path, content }, { abortSignal, toolCallId }) => files(toolCallId).write(path, content, abortSignal),
  });
}

function fileEdit(files: FilesFor) {
  return tool({
    description:
      'Replace an exact piece of text in a file. `old_text` must match the file exactly (whitespace, indentation and ' +
      'line breaks included) and occur exactly once; otherwise nothing is changed and the error says how many matches ' +
      'there were and on which lines: add surrounding lines to old_text to make it unique, or set replace_all to true ' +
      'to replace every occurrence. Read the file first and copy the text from it. ' +
      'Returns { path, replacements, diff } where diff is a unified diff (`@@ -a,b +c,d @@` hunks with 3 context lines).',
    inputSchema: z.object({
      path: path('File to edit'),
      old_text: z.string().describe('The exact text to replace'),
      new_text: z.string().describe('The text to put in its place'),
      replace_all: z.boolean().optional().describe('Replace every occurrence instead of requiring exactly one (default false)'),
    }),
    execute: async ({ path, old_text, new_text, replace_all }, { abortSignal, toolCallId }) =>
      files(toolCallId).edit({ path, oldText: old_text, newText: new_text, replaceAll: replace_all }, abortSignal),
  });
}

function filePatch(files: FilesFor) {
  return tool({
    description:
      'Apply several file changes as one unit. Actions: `add` (create a file with content; the path must not exist), ' +
      '`update` (replace the whole content of an existing file), `delete` (remove an existing file), `move` (rename an ' +
      'existing file to new_path, which must not exist; content optional). Operations run in order and may build on each ' +
      'other. Every operation is checked before anything is written, and if a step fails every file is restored: all ' +
      'changes happen or none. The error names the failing operation. Returns { summary, changed } with one summary line per operation.',
    inputSchema: z.object({
      operations: z
        .array(
          z.object({
            action: z.enum(['add', 'update', 'delete', 'move']),
            path: path('The file the operation acts on'),
            content: z.string().optional().describe('Whole new file content (add, update; optional for move)'),
            new_path: z.string().optional().describe('Destination path (move only)'),
          }),
        )
        .min(1),
    }),
    execute: async ({ operations }, { abortSignal, toolCallId }) =>
      files(toolCallId).patch(
        operations.map(({ action, path, content, new_path }) => ({ action, path, content, newPath: new_path })),
        abortSignal,
      ),
  });
}

function globSearch(files: FilesFor) {
  return tool({
    description:
      'Find files by path pattern. `*` and `?` match within one path component and `**` spans directories: ' +
      '`src/**/*.ts` finds every .ts file below src/, `*.ts` only those directly in the search directory, `**/*.{ts,tsx}` everywhere. ' +
      `Honours .gitignore, skips hidden files unless the pattern names them (\`.github/**\`) and skips ${SKIPPED}. ` +
      'Output: a header line, then one path per line (relative to the work directory), newest first; at most max_results ' +
      `(default ${LIMITS.defaultGlobResults}), and a final \`[truncated: ... N more not shown ...]\` line when more files matched.`,
    inputSchema: z.object({
      pattern: z.string().describe('Glob pattern, relative to path'),
      path: path('Directory to search in (default: the work directory)').optional(),
      max_results: count(1).max(LIMITS.maxSearchResults).optional().describe(`Maximum number of paths to return (default ${LIMITS.defaultGlobResults})`),
    }),
    execute: async ({ pattern, path, max_results }, { abortSignal, toolCallId }) =>
      (await files(toolCallId).glob({ pattern, path, maxResults: max_results }, abortSignal)).text,
  });
}

const globs = z.union([z.string(), z.array(z.string())]);
const asList = (value: string | string[] | undefined) => (value === undefined ? undefined : typeof value === 'string' ? [value] : value);

function grepSearch(files: FilesFor) {
  return tool({
    description:
      'Search file contents with a regular expression (ripgrep syntax, e.g. `fn \\w+\\(`; escape ( [ { . * + ? | \\ to match ' +
      'them literally; the pattern is never read as an option). Output lines: `path:line:text` for matches, ' +
      '`path-line-text` for context lines (see context), `--` between separate groups. Paths are relative to the work ' +
      `directory, in path order. At most max_results matching lines (default ${LIMITS.defaultGrepResults}); when more matched, the last line is ` +
      '`[truncated: showed N of M matching lines in K files; ...]`: narrow the pattern, path or include. ' +
      `Honours .gitignore; skips hidden and binary files and ${SKIPPED} (name such a directory in path to search it).`,
    inputSchema: z.object({
      pattern: z.string().describe('Regular expression to search for'),
      path: path('File or directory to search (default: the work directory)').optional(),
      include: globs.optional().describe("Only search files matching these globs, e.g. '*.ts' or ['src/**', '*.md']"),
      exclude: globs.optional().describe("Skip files and directories matching these globs, e.g. '*.test.ts'"),
      context: z.number().int().min(0).max(LIMITS.maxGrepContext).optional().describe('Lines of context before and after each match (default 0)'),
      max_results: count(1).max(LIMITS.maxSearchResults).optional().describe(`Maximum number of matching lines to show (default ${LIMITS.defaultGrepResults})`),
      ignore_case: z.boolean().optional().describe('Match regardless of case (default false)'),
    }),
    execute: async ({ pattern, path, include, exclude, context, max_results, ignore_case }, { abortSignal, toolCallId }) =>
      (
        await files(toolCallId).grep(
          {
            pattern,
            path,
            include: asList(include),
            exclude: asList(exclude),
            context,
            maxResults: max_results,
            ignoreCase: ignore_case,
          },
          abortSignal,
        )
      ).text,
  });
}

function directoryTree(files: FilesFor) {
  return tool({
    description:
      'Show the directory structure as a tree drawing: directories first (names end in `/`), file sizes from 1 KiB up, ' +
      '`name -> target` for symlinks; a directory at the depth limit says how many entries it holds. ' +
      `Skips dotfiles, .gitignored files and ${SKIPPED}. Ends with an 'N directories, M files' line; output is cut at ` +
      '2000 lines with a `[truncated: ...]` line, then call it on a subdirectory or with a lower max_depth.',
    inputSchema: z.object({
      path: path('Directory to draw (default: the work directory)').optional(),
      max_depth: count(1).max(LIMITS.maxTreeDepth).optional().describe(`Levels to show (default ${LIMITS.defaultTreeDepth})`),
    }),
    execute: async ({ path, max_depth }, { abortSignal, toolCallId }) =>
      (await files(toolCallId).tree({ path, maxDepth: max_depth }, abortSignal)).text,
  });
}

const FACTORIES: Readonly<Record<string, (files: FilesFor) => Tool>> = {
  grep_search: grepSearch,
  glob_search: globSearch,
  directory_tree: directoryTree,
  file_read: fileRead,
  file_write: fileWrite,
  file_edit: fileEdit,
  file_patch: filePatch,
};

/** The code-agent tools of `files` with the approvals the core decided, in the order decided. */
export function buildCodeAgentTools(files: FileTools, decided: readonly ResolvedApproval[]): NamedTool[] {
  const tools = decided.flatMap((resolved) => {
    const factory = FACTORIES[resolved.name];
    return factory ? [named(resolved.name, pathGatedTool(resolved.name, files, resolved, factory))] : [];
  });
  return attachDecided(tools, decided);
}

/**
 * The code-agent toolset: read, write, edit, patch, glob, grep and tree, confined to `workDir`.
 * Search and read tools default to `preApproved`, write tools to `ask`; `approval` is applied
 * on top (per-tool entry, else its default, else the toolset default). The core reads the
 * options strictly and decides; throws `CONFIG_INVALID` for an unknown option, a missing work
 * directory, an unknown group or an approval entry for a tool the toolset does not have.
 */
export function codeAgentTools(options: CodeAgentOptions = {}): NamedTool[] {
  const plan = callNative(() => native.planCodeAgentTools(options));
  return bindTools(buildCodeAgentTools(new FileTools(plan.workDir, plan.pathRules ?? undefined, [], plan.protectedPaths), plan.tools), {
    workDir: plan.workDir,
    readOnly: (options as { readOnly?: boolean }).readOnly ?? false,
    rules: { paths: plan.pathRules ?? null },
    settings: settingsOf(options, []),
  });
}
