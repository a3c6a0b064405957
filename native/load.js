/**
 * Finds and loads toolgate's native addon for this platform.
 *
 * Published packages carry no binary: each supported platform has its own package
 * (`toolgate-linux-x64-gnu`, …) holding the `.node` addon and the `toolgate-sandbox` launcher,
 * listed as optional dependencies so that npm installs only the one whose `os`, `cpu` and
 * `libc` match. A checkout built with `npm run build:native` has the addon here in `native/`
 * instead, which wins. Every failure is one line saying what is wrong and what to do; napi's
 * generated loader is not used because its advice ("npm has a bug related to optional
 * dependencies") is wrong on platforms no package exists for.
 *
 * Plain JavaScript without top-level await, so that `require('toolgate')` works on Node
 * versions that support `require(esm)`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

/** The platforms with a prebuilt package, as `<os>-<arch>-<libc>`. */
export const SUPPORTED_PLATFORMS = Object.freeze([
  'linux-x64-gnu',
  'linux-x64-musl',
  'linux-arm64-gnu',
  'linux-arm64-musl',
]);

const SUPPORTED_TEXT =
  'toolgate runs on Linux x64 and arm64 with glibc >= 2.17 or musl (linux-x64-gnu, linux-x64-musl, linux-arm64-gnu, linux-arm64-musl)';

/**
 * The C library this Node runs on: `gnu`, `musl`, or null when neither can be told. Asks the
 * running process (its diagnostic report names the glibc it uses, or lists musl's loader among
 * its shared objects), not the files of the system, which may hold another libc than Node's.
 */
function runtimeLibc() {
  if (!process.report || typeof process.report.getReport !== 'function') return null;
  const excludeNetwork = process.report.excludeNetwork;
  let report;
  try {
    // No network section: it would resolve host names, which is slow and not needed here.
    process.report.excludeNetwork = true;
    report = process.report.getReport();
  } finally {
    process.report.excludeNetwork = excludeNetwork;
  }
  const header = report?.header ?? {};
  if (header.glibcVersionRuntime) return 'gnu';
  const objects = Array.isArray(report?.sharedObjects) ? report.sharedObjects : [];
  if (objects.some((file) => /(?:ld-musl-|libc\.musl-)/.test(String(file)))) return 'musl';
  return null;
}

/** This process's platform as `<os>-<arch>[-<libc>]`, the libc only on Linux. */
export function currentPlatform() {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return base;
  return `${base}-${runtimeLibc() ?? 'unknown-libc'}`;
}

/** An error whose message is a single line; `cause` keeps the underlying error. */
function failure(message, cause) {
  const error = new Error(`toolgate: ${message}`, cause === undefined ? undefined : { cause });
  error.code = 'TOOLGATE_NATIVE_UNAVAILABLE';
  return error;
}

function firstLine(error) {
  return String(error?.message ?? error).split('\n')[0];
}

function ownVersion() {
  return JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')).version;
}

/**
 * Loads the addon for this platform: a local build in `native/` when there is one, otherwise
 * the installed platform package (whose version must equal this package's). Throws a
 * one-line error when the platform is unsupported, its package is missing or mismatched, or
 * the addon cannot be loaded.
 */
export function loadNativeBinding() {
  const platform = currentPlatform();
  if (!SUPPORTED_PLATFORMS.includes(platform)) {
    throw failure(`this platform (${platform}) is not supported; ${SUPPORTED_TEXT}.`);
  }
  const file = `toolgate.${platform}.node`;
  const local = join(here, file);
  if (existsSync(local)) {
    try {
      return require(local);
    } catch (error) {
      throw failure(`the native addon ${local} could not be loaded: ${firstLine(error)}; rebuild it with \`npm run build:native\`.`, error);
    }
  }
  const name = `toolgate-${platform}`;
  const expected = ownVersion();
  let manifest;
  try {
    manifest = require.resolve(`${name}/package.json`);
  } catch (error) {
    // npm skips an optional dependency without an error in exactly these two cases; which one
    // happened cannot be told from here, so both are named.
    throw failure(
      `the package ${name}@${expected}, which holds the native addon for this platform, is not installed. ` +
        'npm installs it as an optional dependency of toolgate and skips it without an error when optional dependencies are omitted ' +
        '(--omit=optional, --no-optional, or omit=optional in an .npmrc or NPM_CONFIG_OMIT) or when it cannot fetch it ' +
        `(no network, or a registry or mirror without it). Fix the cause and reinstall, or install it directly: npm install ${name}@${expected}`,
      error,
    );
  }
  const version = JSON.parse(readFileSync(manifest, 'utf8')).version;
  if (version !== expected) {
    throw failure(`${name} is version ${version} but toolgate is ${expected}; install the same version of both (npm install toolgate@${expected}).`);
  }
  const addon = join(dirname(manifest), file);
  try {
    return require(addon);
  } catch (error) {
    throw failure(`the native addon ${addon} could not be loaded: ${firstLine(error)}`, error);
  }
}
