#!/usr/bin/env node
// Packs the main package the way it is published, from a staging copy of this checkout:
//
//   - the files are those git tracks under package.json's `files` (plus package.json, README
//     and LICENSE), and the build outputs of tracked sources (dist/ from ts/src, the generated
//     native/binding.js and binding.d.ts). Whatever else lies in the checkout (a quickstart's
//     notes/, an audit log, a stale dist/ file) is not shipped;
//   - the manifest has no `scripts`: none of them can run from an installed package (they build
//     from crates/ and ts/src, which are not shipped), and `prepare` made npm warn about install
//     scripts on every install;
//   - the manifest lists every platform package in npm/ as an optional dependency of this exact
//     version. The checkout's package.json does not, so that `npm ci` accepts its lock before
//     those packages are published (as napi-rs's `napi pre-publish` does).
//
// The checkout itself is never modified. Usage: node scripts/pack-main.mjs DESTINATION_DIR
// (prints the tarball's path); `--list` prints the files it would pack, `--manifest` the
// manifest; `--root DIR` packs another checkout. `shippedFiles()` and `packedManifest()` are
// what scripts/release-smoke/check-tarball.mjs checks a tarball against.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Files npm packs whatever `files` says. */
const ALWAYS = ['package.json', 'README.md', 'LICENSE'];
/** Files git ignores that the native build generates (scripts/write-native-binding.mjs, from the built addon). */
const GENERATED = ['native/binding.js', 'native/binding.d.ts'];
/** dist/<name>.js, .d.ts and their maps are compiled from ts/src/<name>.ts. */
const DIST_OUTPUT = /^dist\/(.+?)\.(?:js|d\.ts)(?:\.map)?$/;

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** The files git tracks in `root` that exist in its working tree. */
function trackedFiles(root) {
  const listed = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  return new Set(listed.split('\0').filter((file) => file && existsSync(join(root, file))));
}

function walk(root, dir) {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    return entry.isDirectory() ? walk(root, path) : [path];
  });
}

/** Whether `file` lies in the `files` entry `pattern` (a file or a directory; no globs here). */
function covers(pattern, file) {
  const entry = pattern.replace(/\/+$/, '');
  if (/[*?[]/.test(entry)) throw new Error(`pack-main: package.json files entry '${pattern}' is a glob; list files or directories`);
  return file === entry || file.startsWith(`${entry}/`);
}

/**
 * The main package's files, relative to `root`: tracked files under package.json's `files`, the
 * generated native binding, and dist/ (each file of which must be the output of a tracked
 * ts/src source). Throws listing every missing or stale build output.
 */
export function shippedFiles(root = ROOT) {
  const manifest = readJson(join(root, 'package.json'));
  const tracked = trackedFiles(root);
  const problems = [];
  const files = new Set(ALWAYS.filter((file) => tracked.has(file)));
  for (const pattern of manifest.files) {
    // npm never packs a `.gitignore` (an example's `workspace/.gitignore` keeps run outputs out
    // of git only), so the tarball is compared without them.
    for (const file of tracked) if (covers(pattern, file) && !file.endsWith('/.gitignore') && file !== '.gitignore') files.add(file);
    for (const file of GENERATED) {
      if (!covers(pattern, file)) continue;
      if (existsSync(join(root, file))) files.add(file);
      else problems.push(`${file} is missing (the native build generates it: run npm run build)`);
    }
    if (covers(pattern, 'dist/index.js')) {
      const built = walk(root, 'dist');
      if (!built.includes('dist/index.js')) problems.push('dist/ is not built (run npm run build:ts)');
      for (const file of built) {
        const source = DIST_OUTPUT.exec(file)?.[1];
        if (source !== undefined && tracked.has(`ts/src/${source}.ts`)) files.add(file);
        else problems.push(`${file} is not the output of a tracked ts/src file (a stale build output? rm -rf dist && npm run build:ts)`);
      }
    }
  }
  if (problems.length > 0) throw new Error(`pack-main: cannot pack ${root}:\n  ${problems.join('\n  ')}`);
  return [...files].sort();
}

/** The platform packages in npm/, as `{ name: version }`, at the main package's version. */
export function platformDependencies(root = ROOT) {
  const { name, version } = readJson(join(root, 'package.json'));
  const platforms = readdirSync(join(root, 'npm')).filter((dir) => existsSync(join(root, 'npm', dir, 'package.json')));
  return Object.fromEntries(platforms.sort().map((platform) => [`${name}-${platform}`, version]));
}

/** The manifest as published: the checkout's, without `scripts`, with the platform packages as optional dependencies. */
export function packedManifest(root = ROOT) {
  const manifest = readJson(join(root, 'package.json'));
  delete manifest.scripts;
  manifest.optionalDependencies = { ...manifest.optionalDependencies, ...platformDependencies(root) };
  return manifest;
}

/** Copies the shipped files into a staging directory and packs it into `destination`; returns the tarball's path. */
export function packMain(destination, root = ROOT) {
  const files = shippedFiles(root);
  const stage = mkdtempSync(join(tmpdir(), 'toolgate-pack-'));
  try {
    for (const file of files) {
      mkdirSync(dirname(join(stage, file)), { recursive: true });
      copyFileSync(join(root, file), join(stage, file));
      chmodSync(join(stage, file), statSync(join(root, file)).mode & 0o777);
    }
    writeFileSync(join(stage, 'package.json'), `${JSON.stringify(packedManifest(root), null, 2)}\n`);
    mkdirSync(destination, { recursive: true });
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', resolve(destination), stage], {
      cwd: root,
      encoding: 'utf8',
    });
    const [{ filename }] = JSON.parse(out);
    return join(resolve(destination), filename);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  const root = rootAt >= 0 ? resolve(args.splice(rootAt, 2)[1] ?? '') : ROOT;
  const [what] = args;
  try {
    if (what === '--list') console.log(shippedFiles(root).join('\n'));
    else if (what === '--manifest') console.log(JSON.stringify(packedManifest(root), null, 2));
    else if (what && !what.startsWith('-') && args.length === 1) console.log(packMain(what, root));
    else {
      console.error('usage: node scripts/pack-main.mjs [--root DIR] DESTINATION_DIR | --list | --manifest');
      process.exit(2);
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
