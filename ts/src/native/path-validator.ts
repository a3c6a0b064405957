import { callNative } from './errors.js';
import { native } from './binding.js';

/**
 * Confines paths to a root directory. Symlinks are followed (also for paths that do not exist
 * yet: the nearest existing ancestor decides), `..` cannot climb out, `~` is an ordinary name.
 */
export class PathValidator {
  readonly #inner: InstanceType<typeof native.PathValidator>;

  /** `root` must be an existing directory; it is canonicalised once. Throws `CONFIG_INVALID`. */
  constructor(root: string) {
    this.#inner = callNative(() => new native.PathValidator(root));
  }

  /** The canonical root. */
  get root(): string {
    return this.#inner.root;
  }

  /**
   * Returns the absolute, symlink-free path for `path` (relative paths start at the root).
   * Throws `PATH_OUTSIDE_ROOT` when it lands outside the root, `INVALID_INPUT` for an empty
   * path, a NUL byte or a path longer than PATH_MAX.
   */
  resolve(path: string): string {
    return callNative(() => this.#inner.resolve(path));
  }
}
