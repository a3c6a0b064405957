import { fromNativeError } from './errors.js';
import { native } from './binding.js';

type Native = InstanceType<typeof native.FileTools>;

export type ReadResult = Awaited<ReturnType<Native['read']>>;
export type WriteResult = Awaited<ReturnType<Native['write']>>;
export type EditResult = Awaited<ReturnType<Native['edit']>>;
export type PatchResult = Awaited<ReturnType<Native['patch']>>;
export type GlobResult = Awaited<ReturnType<Native['glob']>>;
export type GrepResult = Awaited<ReturnType<Native['grep']>>;
export type TreeResult = Awaited<ReturnType<Native['tree']>>;
export type ExistsResult = Awaited<ReturnType<Native['exists']>>;
export type FileInfoResult = Awaited<ReturnType<Native['info']>>;
export type DeleteResult = Awaited<ReturnType<Native['delete']>>;
export type ReadOptions = Parameters<Native['read']>[0];
export type EditOptions = Parameters<Native['edit']>[0];
export type PatchOperation = Parameters<Native['patch']>[0][number];
export type GlobOptions = Parameters<Native['glob']>[0];
export type GrepOptions = Parameters<Native['grep']>[0];
export type TreeOptions = Parameters<Native['tree']>[0];

/**
 * The file tools confined to one root directory, as plain async functions (the toolsets in
 * `code-agent.ts` and `filesystem.ts` are built on this). Every path goes through toolgate's
 * PathValidator in Rust; the work runs off the JavaScript thread. Errors are `ToolgateError`s;
 * aborting `signal` stops a running search or walk and rejects with the signal's reason.
 */
export class FileTools {
  readonly #inner: Native;

  /** `root` must be an existing directory. Throws `CONFIG_INVALID`. */
  constructor(root: string) {
    try {
      this.#inner = new native.FileTools(root);
    } catch (error) {
      throw fromNativeError(error);
    }
  }

  /** The canonical root. */
  get root(): string {
    return this.#inner.root;
  }

  read(options: ReadOptions, signal?: AbortSignal): Promise<ReadResult> {
    return run(signal, (inner) => this.#inner.read(options, inner));
  }

  write(path: string, content: string, signal?: AbortSignal): Promise<WriteResult> {
    return run(signal, (inner) => this.#inner.write(path, content, inner));
  }

  edit(options: EditOptions, signal?: AbortSignal): Promise<EditResult> {
    return run(signal, (inner) => this.#inner.edit(options, inner));
  }

  patch(operations: readonly PatchOperation[], signal?: AbortSignal): Promise<PatchResult> {
    return run(signal, (inner) => this.#inner.patch([...operations], inner));
  }

  glob(options: GlobOptions, signal?: AbortSignal): Promise<GlobResult> {
    return run(signal, (inner) => this.#inner.glob(options, inner));
  }

  grep(options: GrepOptions, signal?: AbortSignal): Promise<GrepResult> {
    return run(signal, (inner) => this.#inner.grep(options, inner));
  }

  tree(options: TreeOptions, signal?: AbortSignal): Promise<TreeResult> {
    return run(signal, (inner) => this.#inner.tree(options, inner));
  }

  exists(path: string, signal?: AbortSignal): Promise<ExistsResult> {
    return run(signal, (inner) => this.#inner.exists(path, inner));
  }

  info(path: string, signal?: AbortSignal): Promise<FileInfoResult> {
    return run(signal, (inner) => this.#inner.info(path, inner));
  }

  delete(path: string, signal?: AbortSignal): Promise<DeleteResult> {
    return run(signal, (inner) => this.#inner.delete(path, inner));
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
