/**
 * Imports a tools module at run time: TypeScript without a build step, and plain JavaScript
 * (ESM or CommonJS), through jiti. Every failure becomes a `ToolgateError` that names the file.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { initSync, parse } from 'es-module-lexer';
import type { Jiti } from 'jiti';
import { LIMITS } from '../native/constants.js';
import { ToolgateError } from '../native/errors.js';
import { moduleReferences, SOURCE_EXTENSIONS } from './module-references.js';

const MODULE_EXTENSIONS = ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];

/** The absolute path of `modulePath`: relative paths are taken against `baseDir`, else the cwd. */
export function resolveModulePath(modulePath: string, baseDir?: string): string {
  return resolve(baseDir ?? process.cwd(), modulePath);
}

/**
 * Checks that `path` is a module file toolgate can load. A path that does not exist is
 * `FILE_NOT_FOUND` (the fix is the path, not the module); anything else wrong is `MODULE_INVALID`.
 */
export function checkModuleFile(path: string, modulePath: string): void {
  let stats;
  try {
    stats = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      const alternatives = MODULE_EXTENSIONS.map((extension) => path + extension).filter((candidate) => existsSync(candidate));
      const hint = alternatives.length > 0 ? `; did you mean ${alternatives.join(' or ')}?` : '; check the path';
      const from = modulePath === path ? '' : ` (from '${modulePath}')`;
      throw new ToolgateError('FILE_NOT_FOUND', `tools module not found: ${path}${from}${hint}`, { cause: error });
    }
    throw new ToolgateError('IO_ERROR', `cannot read tools module ${path}: ${(error as Error).message}`, { cause: error });
  }
  if (!stats.isFile()) {
    throw new ToolgateError('MODULE_INVALID', `tools module ${path} is not a file; give the path of a .ts or .js module`);
  }
  if (!MODULE_EXTENSIONS.includes(extname(path))) {
    throw new ToolgateError(
      'MODULE_INVALID',
      `tools module ${path} has an unsupported extension; use one of ${MODULE_EXTENSIONS.join(' ')}`,
    );
  }
}

let jiti: Promise<Jiti> | undefined;
/** The instance once created (its module cache is what `loadedFiles` reads). */
let loaded: Jiti | undefined;
/** The files each module's first import added to the module cache. */
const addedBy = new Map<string, readonly string[]>();

/**
 * jiti's own folder: jiti loads parts of itself (its transpiler) the first time it has to
 * transpile, which would otherwise count as imports of whichever module came first, and only
 * when its disk cache was cold.
 */
let loaderFolder: string | undefined;
function isLoaderFile(file: string): boolean {
  loaderFolder ??= dirname(createRequire(import.meta.url).resolve('jiti/package.json')) + sep;
  return file.startsWith(loaderFolder);
}

/**
 * One jiti instance per process, created on first use so that importing toolgate does not pay
 * for it. Modules are cached like ES modules (evaluated once per process); the transpiled code is
 * cached on disk in a directory only this user can write (see `privateCacheDir`).
 */
function loader(): Promise<Jiti> {
  jiti ??= import('jiti').then(({ createJiti }) => {
    loaded = createJiti(import.meta.url, {
      fsCache: privateCacheDir(),
      moduleCache: true,
      // Keep the module's real namespace: interop would merge a default export's properties into it.
      interopDefault: false,
    });
    return loaded;
  });
  return jiti;
}

/**
 * `$XDG_CACHE_HOME/toolgate/jiti` (default `~/.cache/toolgate/jiti`), created with mode 0700.
 * jiti's own default is a shared `/tmp/jiti`, where another local user could plant a transpiled
 * file that this process would then run. The disk cache is turned off when the directory cannot
 * be created or is not a private directory owned by this user.
 */
export function privateCacheDir(): string | false {
  try {
    const root = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
    const dir = join(root, 'toolgate', 'jiti');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stats = lstatSync(dir);
    const ownedByMe = typeof process.getuid !== 'function' || stats.uid === process.getuid();
    if (!stats.isDirectory() || !ownedByMe || (stats.mode & 0o022) !== 0) return false;
    return dir;
  } catch {
    return false;
  }
}

export interface ImportModuleOptions {
  /**
   * Milliseconds the import (the module's top-level code, its imports included) may take
   * before it fails with `MODULE_INVALID`; default `LIMITS.defaultImportTimeoutMs` (the core's). Callers
   * pass a value the core has checked (`loadCustomTools`' `importTimeoutMs`).
   */
  timeoutMs?: number;
}

/**
 * Imports the module at the absolute `path` and returns its namespace. An import that has not
 * finished after `timeoutMs` (a top-level `await` that never settles, say) fails with
 * `MODULE_INVALID` instead of leaving the caller waiting forever. The module's code cannot be
 * stopped: whatever it is waiting for stays pending, and importing it again waits again.
 */
export async function importModule(path: string, options: ImportModuleOptions = {}): Promise<Record<string, unknown>> {
  const timeoutMs = options.timeoutMs ?? LIMITS.defaultImportTimeoutMs;
  const instance = await loader();
  const before = new Set(Object.keys(instance.cache));
  const imported = instance.import(path).then(
    (namespace) => {
      if (!addedBy.has(path)) {
        addedBy.set(path, Object.keys(instance.cache).filter((file) => !before.has(file) && !isLoaderFile(file)));
      }
      return namespace as Record<string, unknown>;
    },
    (error: unknown) => {
      throw loadError(path, error);
    },
  );
  let timer: NodeJS.Timeout | undefined;
  // The timer keeps the process alive on purpose: a program whose only pending work is a
  // module that never settles should end with this error, not exit silently.
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError(path, timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([imported, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Every file importing the module at `path` loaded: the module, the files it imports and theirs
 * (packages included), as far as the module cache tells: what its first import in this process
 * added to the cache, and what the cache links to the module (children, and files whose parent
 * it is), transitively. The core protects them from the agent's processes
 * (`WorkerPlan.protectModuleImports`). A file a tool imports later, when it runs, is not known here.
 */
export function loadedFiles(path: string): string[] {
  const cache = (loaded?.cache ?? {}) as Record<string, CachedModule | undefined>;
  const children = new Map<string, Set<string>>();
  const link = (from: string, to: string) => {
    if (!children.has(from)) children.set(from, new Set());
    children.get(from)!.add(to);
  };
  for (const [file, module] of Object.entries(cache)) {
    for (const child of module?.children ?? []) if (child?.filename) link(file, child.filename);
    if (module?.parent?.filename) link(module.parent.filename, file);
  }
  const files = new Set<string>([path, ...(addedBy.get(path) ?? [])]);
  const pending = [...files];
  while (pending.length > 0 && files.size < LIMITS.maxModuleImports) {
    const file = pending.pop()!;
    // A package is protected as a whole folder (see WorkerPlan.protectModuleImports): what its
    // own files import is its business, not read here.
    const own = file.split(sep).includes('node_modules') ? [] : sourceImports(file);
    for (const child of [...(children.get(file) ?? []), ...own]) {
      if (!files.has(child)) {
        files.add(child);
        pending.push(child);
      }
    }
  }
  // At most what the core takes (the loop may add a few past it while it finishes a file).
  return [...files].filter((file) => isAbsolute(file)).slice(0, LIMITS.maxModuleImports);
}

/**
 * What `file`'s source names of other files (see `moduleReferences`: every import form and
 * `require` with a static string, whatever comments or line breaks sit between, and paths built
 * from the module's own location), resolved, and the files that decide what a specifier means.
 * Node's own loader runs a native ES module (`.mjs`, or `.js` in a `"type": "module"` package:
 * jiti hands it over), whose cache is not readable, and a module jiti transpiles may import one,
 * load a worker thread or read code it runs; so every module's source is read, not only the
 * cache. With each specifier: the `package.json` files from its folder up to the first there is
 * (its `type`, its `imports` map: one planted nearer would change them), for a package each
 * `node_modules/<name>` Node looks in up to the one it found (a symlink there, or one planted
 * nearer, would load something else), and for a relative one every file its resolution tries
 * (`./x.js` planted beside the `./x.ts` an import found). Nothing for a specifier that names no
 * file (`node:fs`, a package that is not installed). A source that cannot be read or parsed
 * fails the load (`MODULE_INVALID`): what it imports would not be protected.
 */
function sourceImports(file: string): string[] {
  if (!isAbsolute(file) || !loaded || !SOURCE_EXTENSIONS.includes(extname(file))) return [];
  const source = readSource(file);
  if (source === undefined) return [];
  const manifests = packageManifests(file);
  const found = [...manifests, ...manifests.flatMap(manifestTargets)];
  const specifiers = new Set<string>(nativeEsmSpecifiers(source, file));
  for (const reference of moduleReferences(source, file)) {
    if (reference.kind === 'specifier') specifiers.add(reference.specifier);
    else if (isProtectable(reference.path)) found.push(reference.path);
  }
  for (const specifier of specifiers) found.push(...specifierFiles(file, specifier));
  return found;
}

/** The text of `file`, or nothing when there is no file there (a path an import would try). */
function readSource(file: string): string | undefined {
  try {
    const stats = statSync(file);
    if (!stats.isFile()) return undefined;
    if (stats.size > LIMITS.maxModuleSourceBytes) {
      throw new ToolgateError(
        'MODULE_INVALID',
        `cannot read what ${file} imports: it has ${stats.size} bytes, more than the ${LIMITS.maxModuleSourceBytes} toolgate reads ` +
          'to find the files a tools module imports (and protects); move it into a package or make it smaller',
      );
    }
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof ToolgateError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new ToolgateError('MODULE_INVALID', `cannot read what ${file} imports: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Whether a path the module builds from its own location is protected: an existing file (data
 * the module reads may be code it runs, with `new Function` or `vm`), or a missing one that
 * would be code (a process could create it before the next load). Not a folder (`new URL('.',
 * import.meta.url)` is the module's own), nor missing data (an output file).
 */
function isProtectable(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return [...SOURCE_EXTENSIONS, '.json', '.node'].includes(extname(path));
  }
}

/** The files `specifier` imported from `file` loads, or would load if they appeared. */
function specifierFiles(file: string, specifier: string): string[] {
  if (specifier.startsWith('node:') || isBuiltin(specifier)) return [];
  const found: string[] = [];
  if (!/^[./]|^file:/.test(specifier)) found.push(...packageLookups(file, specifier));
  if (/^\.\.?(?:\/|$)/.test(specifier)) {
    found.push(...relativeCandidates(file, specifier));
    // A folder: its package.json's `main`, also while what it names is missing.
    found.push(...manifestTargets(join(resolve(dirname(file), specifier), 'package.json')));
  }
  const parent = pathToFileURL(file).href;
  // As an ES module import resolves it (jiti's resolver), and as `require` does.
  const resolvers = [() => loaded!.esmResolve(specifier, parent), () => createRequire(file).resolve(specifier)];
  for (const resolveWith of resolvers) {
    try {
      const resolved = resolveWith();
      const target = resolved.startsWith('file:') ? fileURLToPath(resolved) : resolved;
      if (isAbsolute(target) && statSync(target).isFile()) found.push(target);
    } catch {
      // a builtin, a package that is not installed, a URL: nothing on disk to protect
    }
  }
  return found;
}

/**
 * Every path a relative specifier may load, existing or not: the name itself, with each
 * extension Node, jiti and TypeScript add, and a folder's `index` files and `package.json`.
 */
function relativeCandidates(file: string, specifier: string): string[] {
  return candidatesOf(resolve(dirname(file), specifier));
}

/** Every path loading `base` may try (see `relativeCandidates`). */
function candidatesOf(base: string): string[] {
  const extensions = [...SOURCE_EXTENSIONS, '.json', '.node'];
  // `./x.js` in TypeScript may load `./x.ts`: the name as written is tried first.
  const candidates = [base, ...extensions.map((extension) => base + extension)];
  const written = extname(base);
  if (['.js', '.mjs', '.cjs', '.jsx'].includes(written)) {
    const stem = base.slice(0, -written.length);
    candidates.push(...['.ts', '.mts', '.cts', '.tsx'].map((extension) => stem + extension));
  }
  candidates.push(...extensions.map((extension) => join(base, `index${extension}`)), join(base, 'package.json'));
  return candidates.filter((candidate) => {
    try {
      return !statSync(candidate).isDirectory();
    } catch {
      return true;
    }
  });
}

/** A native ES module's specifiers as Node's own lexer reads them (a second reading of the same source). */
function nativeEsmSpecifiers(source: string, file: string): string[] {
  if (!isNativeEsm(file)) return [];
  try {
    initSync();
    return parse(source, file)[0].flatMap(({ n }) => (n ? [n] : []));
  } catch {
    return []; // the syntax tree is the reading that counts; it fails on a syntax error
  }
}

/**
 * The local files a `package.json` names as code that are missing: `main` and `module` (with
 * what loading them tries), and every target of `imports` (`#alias`) and `exports` (a package's
 * own name, self-referenced) — a wildcard target (`./lib/*.js`) by its folder. A module that
 * imports through them gets what is there at the next load: a file made where a target is
 * missing today would run. (Targets that exist are followed where a module imports them.)
 */
function manifestTargets(manifest: string): string[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(manifest, 'utf8'));
  } catch {
    return []; // none there, or not JSON: it names nothing Node would load
  }
  if (!json || typeof json !== 'object') return [];
  const dir = dirname(manifest);
  const { main, module, imports, exports } = json as Record<string, unknown>;
  const targets: string[] = [];
  for (const entry of [main, module]) {
    if (typeof entry === 'string' && entry !== '' && !existsSync(resolve(dir, entry))) targets.push(...candidatesOf(resolve(dir, entry)));
  }
  const visit = (value: unknown): void => {
    if (typeof value === 'string') {
      if (!value.startsWith('./')) return;
      const wildcard = value.indexOf('*');
      const target = wildcard < 0 ? resolve(dir, value) : resolve(dir, dirname(value.slice(0, wildcard + 1)));
      // `./*` names the package's whole folder: not a folder to protect whole (the work
      // directory); what the module imports through it is followed as any import.
      if (target !== dir) targets.push(target);
    } else if (Array.isArray(value)) {
      value.forEach(visit);
    } else if (value && typeof value === 'object') {
      Object.values(value).forEach(visit);
    }
  };
  visit(imports);
  visit(exports);
  return targets.filter((target) => !existsSync(target));
}

/** The `package.json` files from `file`'s folder up to the first that exists, that one included. */
function packageManifests(file: string): string[] {
  const manifests: string[] = [];
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    manifests.push(manifest);
    if (existsSync(manifest) || dirname(dir) === dir) return manifests;
  }
}

/** The `node_modules/<name>` folders (and the files `<name>.js`, …) Node looks in for `specifier` from `file`, up to the first that exists. */
function packageLookups(file: string, specifier: string): string[] {
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  // `#internal` goes through package.json (above); a builtin (`fs`) is no package on disk.
  if (!name || name.startsWith('#') || isBuiltin(name)) return [];
  const lookups: string[] = [];
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (basename(dir) !== 'node_modules') {
      // `require('pkg')` tries the files `node_modules/pkg.js`, `.json`, … before the folder,
      // so a file planted there takes a package's place too.
      const folder = join(dir, 'node_modules', name);
      const candidates = [...PACKAGE_FILE_EXTENSIONS.map((extension) => `${folder}${extension}`), folder];
      lookups.push(...candidates);
      if (candidates.some((candidate) => existsSync(candidate))) return lookups;
    }
    if (dirname(dir) === dir) return lookups;
  }
}

/** What `require` (and jiti) add to a package's name in a `node_modules` folder before its folder. */
const PACKAGE_FILE_EXTENSIONS = ['.js', '.json', '.node', '.cjs', '.mjs', '.ts', '.cts', '.mts'];

/** Whether Node runs `file` as an ES module of its own (not transpiled by jiti). */
function isNativeEsm(file: string): boolean {
  const extension = extname(file);
  if (extension === '.mjs') return true;
  if (extension !== '.js') return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type === 'module';
      } catch {
        return false;
      }
    }
    if (dirname(dir) === dir) return false;
  }
}

/** What `loadedFiles` reads of a module cache entry. */
interface CachedModule {
  filename?: string;
  children?: readonly (CachedModule | undefined)[];
  parent?: CachedModule | null;
}

function timeoutError(path: string, timeoutMs: number): ToolgateError {
  const seconds = timeoutMs >= 1000 ? `${(timeoutMs / 1000).toFixed(timeoutMs % 1000 === 0 ? 0 : 1)} s` : `${timeoutMs} ms`;
  return new ToolgateError(
    'MODULE_INVALID',
    `tools module ${path} did not finish loading within ${seconds}. Look for a top-level await that never settles ` +
      '(an await on a promise nothing resolves, a server or prompt started at import time) or slow work at import ' +
      "time in the module or what it imports, and move it into a tool's function. If the module is only slow, " +
      'raise the import timeout',
  );
}

// jiti reports a parse error as `ParseError: <reason> \n <file>:<line>:<column>` (column from 0).
const PARSE_ERROR = /^(?:\w*Error): ([\s\S]*?)\s*\n\s*(\S[^\n]*?):(\d+):(\d+)\s*$/;

function loadError(path: string, error: unknown): ToolgateError {
  const message = error instanceof Error ? error.message : String(error);
  const parse = PARSE_ERROR.exec(message);
  if (parse) {
    const [, reason, file, line, column] = parse as unknown as [string, string, string, string, string];
    const place = `${file}:${line}:${Number(column) + 1}`;
    const imported = sameFile(file, path) ? '' : ` (imported by tools module ${path})`;
    return new ToolgateError(
      'MODULE_INVALID',
      `syntax error in ${place}${imported}: ${reason.trim()}\n${codeFrame(file, Number(line), Number(column))}` +
        'fix the syntax error and load the module again',
      { cause: error },
    );
  }
  const firstLine = message.split('\n')[0] ?? message;
  const at = error instanceof Error ? placeInStack(error.stack, path) : undefined;
  return new ToolgateError(
    'MODULE_INVALID',
    `tools module ${path} threw while loading: ${firstLine}${at ? ` (at ${at})` : ''}`,
    { cause: error },
  );
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return resolve(a) === resolve(b);
  }
}

/**
 * `file:line:column` of the first stack frame inside the module's directory, if any. Frames are
 * found by the directory itself, not by what a path may contain: a module's path may hold spaces
 * and parentheses (`/home/me/my tools (v2)/tools.ts`), and ESM frames name it as a file URL.
 */
function placeInStack(stack: string | undefined, path: string): string | undefined {
  if (!stack) return undefined;
  const directory = dirname(path);
  const prefixes: [string, (location: string) => string][] = [
    [`${directory}/`, (location) => location],
    [`${pathToFileURL(directory).href}/`, (location) => fileURLToPath(location)],
  ];
  for (const frame of stack.split('\n')) {
    for (const [prefix, toPath] of prefixes) {
      const start = frame.indexOf(prefix);
      if (start < 0) continue;
      // `at name (LOCATION)` or `at LOCATION`: the location runs to the end of the frame.
      const place = /^(.+):(\d+):(\d+)\)?$/.exec(frame.slice(start).trimEnd());
      if (!place || place[1]!.slice(prefix.length).split('/').includes('node_modules')) continue;
      try {
        return `${toPath(place[1]!)}:${place[2]}:${place[3]}`;
      } catch {
        continue; // not a well-formed file URL
      }
    }
  }
  return undefined;
}

/** The offending source line with a caret under the column, or nothing when it cannot be read. */
function codeFrame(file: string, line: number, column: number): string {
  try {
    const text = readFileSync(file, 'utf8').split(/\r?\n/)[line - 1];
    if (text === undefined) return '';
    const gutter = `  ${line} | `;
    const indent = text.slice(0, column).replace(/[^\t]/g, ' ');
    return `${gutter}${text}\n${' '.repeat(gutter.length - 2)}| ${indent}^\n`;
  } catch {
    return '';
  }
}
