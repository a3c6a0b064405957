import { fromNativeError } from './errors.js';
import { native } from './binding.js';

type Native = native.FileTools;

export type ReadResult = native.ReadResult;
export type WriteResult = native.WriteResult;
export type EditResult = native.EditResult;
export type PatchResult = native.PatchResult;
export type GlobResult = native.GlobResult;
export type GrepResult = native.GrepResult;
export type TreeResult = native.TreeResult;
export type ExistsResult = native.ExistsResult;
export type FileInfoResult = native.FileInfoResult;
export type DeleteResult = native.DeleteResult;
/** One path rule of `approval.paths`: a gitignore-style pattern and its decision. */
export type PathRule = native.PathRule;
/** The path rules of a file toolset and where they were written (named in messages). */
export type PathRules = native.PathRules;
/** The path rules of a calling worker, with the work directory they are relative to. */
export type CallerPathRules = native.CallerPathRules;
/** A path the file tools never change (the core's protected configuration), and why. */
export type ProtectedPath = native.ProtectedPath;
/** The tool making a call: its own decision, its floor, and the decision it was approved at. */
export type FileCall = native.FileCall;
/** What a file-tool call needs under the path rules, and which rule decided. */
export type PathDecision = native.PathDecision;

/** Lets `forCall` build a second `FileTools` over the same native object. */
const SHARED = Symbol('shared FileTools');

/** Which part of a file `read` returns. */
export interface ReadOptions {
  path: string;
  /** First line (or directory entry) to return, from 1 (default 1). */
  offset?: number;
  /** Lines to return at most (default 2000); the output is also capped at 50 KiB. */
  limit?: number;
  /** Prefix each line with its number (default true). */
  lineNumbers?: boolean;
}

export interface EditOptions {
  path: string;
  oldText: string;
  newText: string;
  replaceAll?: boolean;
}

export interface PatchOperation {
  action: native.PatchAction;
  path: string;
  /** Whole new content (`add`, `update`, optional for `move`). */
  content?: string;
  /** Destination of a `move`. */
  newPath?: string;
}

export interface GlobOptions {
  pattern: string;
  path?: string;
  /** Default 100. */
  maxResults?: number;
}

export interface GrepOptions {
  pattern: string;
  path?: string;
  include?: readonly string[];
  exclude?: readonly string[];
  /** Context lines on each side (default 0, at most 20). */
  context?: number;
  /** Default 50. */
  maxResults?: number;
  ignoreCase?: boolean;
}

export interface TreeOptions {
  path?: string;
  /** Default 3. */
  maxDepth?: number;
}

/**
 * The file tools confined to one root directory, as plain async functions (the toolsets in
 * `code-agent.ts` and `filesystem.ts` are built on this). Every path goes through toolgate's
 * PathValidator in Rust; the work runs off the JavaScript thread. Errors are `ToolgateError`s;
 * aborting `signal` stops a running search or walk and rejects with the signal's reason.
 * Arguments are checked by the core: an unknown key or a number out of range is `INVALID_INPUT`.
 */
export class FileTools {
  readonly #inner: Native;
  readonly #call: FileCall | undefined;

  /**
   * `root` must be an existing directory. With `pathRules`, a blocked path is refused with
   * `PATH_BLOCKED` and never listed or searched, under any name (a hard link to it is refused
   * too; decided in Rust); `callerRules` (the rules of calling workers) only ever make a call
   * stricter. `protectedPaths` (what the core protects: a worker plan's `fileProtection`, a
   * toolset plan's `protectedPaths`) are never changed (`PATH_BLOCKED`, rule `protected`) unless a
   * path rule names them, and then a change asks. Throws `CONFIG_INVALID`.
   */
  constructor(root: string, pathRules?: PathRules, callerRules?: readonly CallerPathRules[], protectedPaths?: readonly ProtectedPath[]);
  constructor(
    root: string | typeof SHARED,
    pathRules?: PathRules,
    callerRules?: readonly CallerPathRules[],
    protectedPaths?: readonly ProtectedPath[] | Native,
    call?: FileCall,
  ) {
    if (root === SHARED) {
      this.#inner = protectedPaths as Native;
      this.#call = call;
      return;
    }
    try {
      this.#inner = new native.FileTools(
        String(root),
        pathRules,
        callerRules ? [...callerRules] : undefined,
        protectedPaths ? [...(protectedPaths as readonly ProtectedPath[])] : undefined,
      );
    } catch (error) {
      throw fromNativeError(error);
    }
  }

  /**
   * The same file tools for one call of a tool: the path rules judge its paths with the tool's
   * approval, and refuse (`APPROVAL_DENIED`) a path whose decision is stricter than `call.approved`.
   */
  forCall(call: FileCall): FileTools {
    return new (FileTools as unknown as new (
      root: typeof SHARED,
      pathRules: undefined,
      callerRules: undefined,
      inner: Native,
      call: FileCall,
    ) => FileTools)(SHARED, undefined, undefined, this.#inner, call);
  }

  /**
   * What a call of file tool `tool` with the model's `input` needs under the path rules: the
   * strictest decision over the paths it names, starting from the tool's own approval.
   */
  decideCall(tool: string, input: unknown, approval: FileCall): PathDecision {
    try {
      return this.#inner.decideCall(tool, input, approval);
    } catch (error) {
      throw fromNativeError(error);
    }
  }

  /** The canonical root. */
  get root(): string {
    return this.#inner.root;
  }

  read(options: ReadOptions, signal?: AbortSignal): Promise<ReadResult> {
    return run(signal, (inner) => this.#inner.read(options, inner, this.#call));
  }

  write(path: string, content: string, signal?: AbortSignal): Promise<WriteResult> {
    return run(signal, (inner) => this.#inner.write(path, content, inner, this.#call));
  }

  edit(options: EditOptions, signal?: AbortSignal): Promise<EditResult> {
    return run(signal, (inner) => this.#inner.edit(options, inner, this.#call));
  }

  patch(operations: readonly PatchOperation[], signal?: AbortSignal): Promise<PatchResult> {
    return run(signal, (inner) => this.#inner.patch(operations, inner, this.#call));
  }

  glob(options: GlobOptions, signal?: AbortSignal): Promise<GlobResult> {
    return run(signal, (inner) => this.#inner.glob(options, inner, this.#call));
  }

  grep(options: GrepOptions, signal?: AbortSignal): Promise<GrepResult> {
    return run(signal, (inner) => this.#inner.grep(options, inner, this.#call));
  }

  tree(options: TreeOptions, signal?: AbortSignal): Promise<TreeResult> {
    return run(signal, (inner) => this.#inner.tree(options, inner, this.#call));
  }

  exists(path: string, signal?: AbortSignal): Promise<ExistsResult> {
    return run(signal, (inner) => this.#inner.exists(path, inner, this.#call));
  }

  info(path: string, signal?: AbortSignal): Promise<FileInfoResult> {
    return run(signal, (inner) => this.#inner.info(path, inner, this.#call));
  }

  delete(path: string, signal?: AbortSignal): Promise<DeleteResult> {
    return run(signal, (inner) => this.#inner.delete(path, inner, this.#call));
  }
}

/**
 * Runs a native call with a private AbortSignal linked to the caller's: the addon installs its
 * own `onabort` on the signal it is given, which must not clobber a handler on the caller's.
 */
async function run<T>(signal: AbortSignal | undefined, call: (inner: AbortSignal | undefined) => Promise<T>): Promise<T> {
  signal?.throwIfAborted();
  const controller = signal ? new AbortController() : undefined;
  const forward = () => controller?.abort(signal?.reason);
  signal?.addEventListener('abort', forward, { once: true });
  try {
    return await call(controller?.signal);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw fromNativeError(error);
  } finally {
    signal?.removeEventListener('abort', forward);
  }
}
