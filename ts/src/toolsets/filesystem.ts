import { type Tool, tool } from 'ai';
import { z } from 'zod';
import type { ApprovalConfig, ApprovalDecision } from '../approval/approval.js';
import { ToolgateError } from '../native/errors.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { FileTools } from '../native/file-tools.js';
import { gateToolset } from '../approval/gate-toolset.js';

export interface FilesystemOptions {
  /** The directory every path is confined to (symlinks included). */
  root: string;
  /** Leave out write_file and delete_file (default false). */
  readOnly?: boolean;
  /** Applied on top of the defaults: reads `preApproved`, write_file and delete_file `ask`. */
  approval?: ApprovalConfig;
}

/** Default approval of each filesystem tool. */
export const FILESYSTEM_DEFAULT_APPROVAL: Readonly<Record<string, ApprovalDecision>> = {
  read_file: 'preApproved',
  list_files: 'preApproved',
  file_exists: 'preApproved',
  file_info: 'preApproved',
  write_file: 'ask',
  delete_file: 'ask',
};

const READ_ONLY_TOOLS = ['read_file', 'list_files', 'file_exists', 'file_info'];
const path = (what: string) => z.string().describe(`${what}, relative to the root`);

function readFile(files: FileTools) {
  return tool({
    description:
      'Read a text file. Returns { path, kind, content, truncated, nextOffset? }: content is the text itself (no line ' +
      'numbers), at most `limit` lines (default 2000) and 50 KiB. When cut, truncated is true and content ends with a ' +
      '`[truncated: ...]` line that says how much is left; call again with offset=nextOffset to continue. A directory ' +
      "gives a listing (kind 'directory'); a binary file gives a short description (kind 'binary').",
    inputSchema: z.object({
      path: path('File to read'),
      offset: z.number().int().min(1).optional().describe('First line to return, from 1 (default 1)'),
      limit: z.number().int().min(1).optional().describe('Maximum number of lines (default 2000)'),
    }),
    execute: async ({ path, offset, limit }, { abortSignal }) => {
      const result = await files.read({ path, offset, limit, lineNumbers: false }, abortSignal);
      return { path: result.path, kind: result.kind, content: result.text, truncated: result.truncated, nextOffset: result.nextOffset };
    },
  });
}

function writeFile(files: FileTools) {
  return tool({
    description:
      'Create a file or replace its whole content (UTF-8 text). Missing parent directories are created; the write is ' +
      "atomic (temporary file + rename). Returns { path, action: 'created' | 'updated', bytes }.",
    inputSchema: z.object({ path: path('File to write'), content: z.string().describe('The complete new content') }),
    execute: async ({ path, content }, { abortSignal }) => files.write(path, content, abortSignal),
  });
}

function listFiles(files: FileTools) {
  return tool({
    description:
      'List a directory: one entry per line as `dir|file|link  size  name` (directories first, hidden entries included). ' +
      'With `pattern`, list the files below the directory whose path matches the glob instead (`**/*.md`; `*` stays ' +
      'within one directory, `**` spans directories; .gitignore and node_modules, .git, dist, build... are skipped), ' +
      'newest first. Output is capped at 2000 lines / 50 KiB (or max_results paths) with a final `[truncated: ...]` line.',
    inputSchema: z.object({
      path: path('Directory to list (default: the root)').optional(),
      pattern: z.string().optional().describe('Glob to match file paths below the directory'),
      max_results: z.number().int().min(1).optional().describe('Maximum paths when pattern is given (default 100)'),
    }),
    execute: async ({ path, pattern, max_results }, { abortSignal }) => {
      if (pattern !== undefined) return (await files.glob({ pattern, path, maxResults: max_results }, abortSignal)).text;
      const listing = await files.read({ path: path ?? '.', lineNumbers: false }, abortSignal);
      if (listing.kind !== 'directory') {
        throw new ToolgateError('INVALID_INPUT', `'${listing.path}' is a file, not a directory; use read_file to read it`);
      }
      return listing.text;
    },
  });
}

function deleteFile(files: FileTools) {
  return tool({
    description:
      'Delete a file (a symlink is removed itself, not its target). Directories are refused. Returns { path, bytes }.',
    inputSchema: z.object({ path: path('File to delete') }),
    execute: async ({ path }, { abortSignal }) => files.delete(path, abortSignal),
  });
}

function fileExists(files: FileTools) {
  return tool({
    description:
      "Check whether a path exists. Returns { exists, type? } with type 'file', 'directory', 'symlink' or 'other'. " +
      'A path outside the root is an error, not false.',
    inputSchema: z.object({ path: path('Path to check') }),
    execute: async ({ path }, { abortSignal }) => files.exists(path, abortSignal),
  });
}

function fileInfo(files: FileTools) {
  return tool({
    description:
      "Metadata of a file or directory: { path, type, size (bytes), modified, created?, accessed? (ISO 8601), mode ('0644'), readonly }.",
    inputSchema: z.object({ path: path('File or directory') }),
    execute: async ({ path }, { abortSignal }) => {
      const info = await files.info(path, abortSignal);
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

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const FACTORIES: Record<string, (files: FileTools) => Tool<any, any>> = {
  read_file: readFile,
  list_files: listFiles,
  file_exists: fileExists,
  file_info: fileInfo,
  write_file: writeFile,
  delete_file: deleteFile,
};

/**
 * The filesystem toolset: read_file, list_files, file_exists, file_info, and (unless
 * `readOnly`) write_file and delete_file, confined to `root`. The same Rust functions as the
 * code-agent tools run underneath. Reads default to `preApproved`, write/delete to `ask`;
 * `approval` is applied on top. Throws `CONFIG_INVALID` for a missing root or an approval
 * entry for an unknown tool.
 */
export function filesystemToolset(options: FilesystemOptions): NamedTool[] {
  const files = new FileTools(options.root);
  const names = options.readOnly ? READ_ONLY_TOOLS : Object.keys(FACTORIES);
  const tools = names.map((name) => named(name, FACTORIES[name]!(files)));
  return gateToolset('filesystem', tools, FILESYSTEM_DEFAULT_APPROVAL, options.approval, Object.keys(FACTORIES));
}
