import { type Tool, tool } from 'ai';
import { z } from 'zod';
import type { ApprovalDecision, FileApprovalConfig, ResolvedApproval } from '../approval/approval.js';
import { attachDecided } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTools, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { warnDeprecated } from '../native/deprecation.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { FileTools } from '../native/file-tools.js';
import { type FilesFor, pathGatedTool } from './path-rules.js';

export interface FilesystemOptions {
  /** The directory every path is confined to (symlinks included); default: the current directory. */
  workDir?: string;
  /** @deprecated The old name of `workDir`; it still works for one release, with a warning. */
  root?: string;
  /** Leave out write_file and delete_file (default false). */
  readOnly?: boolean;
  /** Applied on top of the defaults: reads `preApproved`, write_file and delete_file `ask`. */
  approval?: FileApprovalConfig;
}

const path = (what: string) => z.string().describe(`${what}, relative to the root`);

function readFile(files: FilesFor) {
  return tool({
    description:
      'Read a text file. Returns { path, kind, content, truncated, nextOffset?, noFinalNewline? }: content is the ' +
      'exact text (no line numbers, line breaks as in the file; noFinalNewline is true when the file does not end ' +
      'with a line break, so writing content back keeps the file as it was), ' +
      `at most \`limit\` lines (default ${LIMITS.defaultReadLines}) and ${LIMITS.defaultReadBytes / 1024} KiB. When cut,` +
      ' truncated is true and content ends with a ' +
      '`[truncated: ...]` line that says how much is left; call again with offset=nextOffset to continue. A directory ' +
      "gives a listing (kind 'directory'); a binary file gives a short description (kind 'binary').",
    inputSchema: z.object({
      path: path('File to read'),
      offset: z.number().int().min(1).optional().describe('First line to return, from 1 (default 1)'),
      limit: z.number().int().min(1).optional().describe(`Maximum number of lines (default ${LIMITS.defaultReadLines})`),
    }),
    execute: async ({ path, offset, limit }, { abortSignal, toolCallId }) => {
      const result = await files(toolCallId).read({ path, offset, limit, lineNumbers: false }, abortSignal);
      return {
        path: result.path,
        kind: result.kind,
        content: result.text,
        truncated: result.truncated,
        nextOffset: result.nextOffset,
        ...(result.noFinalNewline ? { noFinalNewline: true } : {}),
      };
    },
  });
}

function writeFile(files: FilesFor) {
  return tool({
    description:
      'Create a file or replace its whole content (UTF-8 text). Missing parent directories are created; the write is ' +
      "atomic (temporary file + rename). Returns { path, action: 'created' | 'updated', bytes }.",
    inputSchema: z.object({ path: path('File to write'), content: z.string().describe('The complete new content') }),
    execute: async ({ path, content }, { abortSignal, toolCallId }) => files(toolCallId).write(path, content, abortSignal),
  });
}

function listFiles(files: FilesFor) {
  return tool({
    description:
      'List a directory: one entry per line as `dir|file|link  size  name` (directories first, hidden entries included). ' +
      'With `pattern`, list the files below the directory whose path matches the glob instead (`**/*.md`; `*` stays ' +
      `within one directory, \`**\` spans directories; .gitignore and ${LIMITS.skippedDirectories.join(', ')} are skipped), ` +
      `newest first. Output is capped at ${LIMITS.defaultReadLines} lines / ${LIMITS.defaultReadBytes / 1024} KiB (or max_results paths) with a final \`[truncated: ...]\` line.`,
    inputSchema: z.object({
      path: path('Directory to list (default: the root)').optional(),
      pattern: z.string().optional().describe('Glob to match file paths below the directory'),
      max_results: z.number().int().min(1).optional().describe(`Maximum paths when pattern is given (default ${LIMITS.defaultGlobResults})`),
    }),
    execute: async ({ path, pattern, max_results }, { abortSignal, toolCallId }) => {
      if (pattern !== undefined) return (await files(toolCallId).glob({ pattern, path, maxResults: max_results }, abortSignal)).text;
      const listing = await files(toolCallId).read({ path: path ?? '.', lineNumbers: false }, abortSignal);
      if (listing.kind !== 'directory') {
        throw new ToolgateError('INVALID_INPUT', `'${listing.path}' is a file, not a directory; use read_file to read it`);
      }
      return listing.text;
    },
  });
}

function deleteFile(files: FilesFor) {
  return tool({
    description:
      'Delete a file (a symlink is removed itself, not its target). Directories are refused. Returns { path, bytes }.',
    inputSchema: z.object({ path: path('File to delete') }),
    execute: async ({ path }, { abortSignal, toolCallId }) => files(toolCallId).delete(path, abortSignal),
  });
}

function fileExists(files: FilesFor) {
  return tool({
    description:
      "Check whether a path exists. Returns { exists, type? } with type 'file', 'directory', 'symlink' or 'other'. " +
      'A path outside the root is an error, not false.',
    inputSchema: z.object({ path: path('Path to check') }),
    execute: async ({ path }, { abortSignal, toolCallId }) => files(toolCallId).exists(path, abortSignal),
  });
}

function fileInfo(files: FilesFor) {
  return tool({
    description:
      "Metadata of a file or directory: { path, type, size (bytes), modified, created?, accessed? (ISO 8601), mode ('0644'), readonly }.",
    inputSchema: z.object({ path: path('File or directory') }),
    execute: async ({ path }, { abortSignal, toolCallId }) => {
      const info = await files(toolCallId).info(path, abortSignal);
      const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
      return {
        path: info.path,
        type: info.type,
        size: info.size,
        modified: iso(info.modifiedMs),
        created: iso(info.createdMs),
        accessed: iso(info.accessedMs),
        mode: `0${info.mode.toString(8)}`,
        readonly: info.readonly,
      };
    },
  });
}

const FACTORIES: Readonly<Record<string, (files: FilesFor) => Tool>> = {
  read_file: readFile,
  list_files: listFiles,
  file_exists: fileExists,
  file_info: fileInfo,
  write_file: writeFile,
  delete_file: deleteFile,
};

/** Default approval of each filesystem tool (the core's documented defaults). */
export const FILESYSTEM_DEFAULT_APPROVAL: Readonly<Record<string, ApprovalDecision>> = Object.fromEntries(
  native.documentedApprovals('filesystem', Object.keys(FACTORIES)).map((tool) => [tool.name, tool.decision]),
);

/** The filesystem tools of `files` with the approvals the core decided, in the order decided. */
export function buildFilesystemTools(files: FileTools, decided: readonly ResolvedApproval[]): NamedTool[] {
  const tools = decided.flatMap((resolved) => {
    const factory = FACTORIES[resolved.name];
    return factory ? [named(resolved.name, pathGatedTool(resolved.name, files, resolved, factory))] : [];
  });
  return attachDecided(tools, decided);
}

/**
 * The filesystem toolset: read_file, list_files, file_exists, file_info, and (unless
 * `readOnly`) write_file and delete_file, confined to `workDir`. The same Rust functions as the
 * code-agent tools run underneath. Reads default to `preApproved`, write/delete to `ask`;
 * `approval` is applied on top. The core reads the options strictly and decides; throws
 * `CONFIG_INVALID` for an unknown option, a missing directory or an approval entry for an
 * unknown tool.
 */
export function filesystemToolset(options: FilesystemOptions = {}): NamedTool[] {
  const plan = callNative(() => native.planFilesystemToolset(options));
  warnDeprecated(plan.deprecations);
  return bindTools(buildFilesystemTools(new FileTools(plan.workDir, plan.pathRules ?? undefined, [], plan.protectedPaths), plan.tools), {
    workDir: plan.workDir,
    readOnly: (options as { readOnly?: boolean }).readOnly ?? false,
    rules: { paths: plan.pathRules ?? null },
    settings: settingsOf(options, []),
  });
}
