// Checks the packed tarballs before anything installs them: the main package ships exactly the
// files scripts/pack-main.mjs derives from what git tracks (its docs, LICENSE, schemas, loader and
// the build outputs of tracked sources; no binary, nothing a run left in the checkout), its
// manifest is the packed one (complete metadata, no `scripts`, so no install script; every
// platform package as an optional dependency), and every relative link in its README points at
// a file inside the tarball (so the links work from the npm page and from node_modules); each
// platform package ships its addon and an executable launcher within their size budgets, with
// os/cpu/libc set. Usage: node check-tarball.mjs MAIN.tgz [PLATFORM...] (platform tarballs
// beside it; the PLATFORMs listed must carry their binaries, default all: CI's local pack has
// only this machine's, the others are packed for their metadata). The budgets come from the
// environment (ADDON_BUDGET, LAUNCHER_BUDGET: scripts/release-toolchain.sh, which
// scripts/test-release.sh sources and passes); an empty LAUNCHER_BUDGET leaves the launcher's
// size unchecked (the local check's launcher is a glibc build, not the musl one releases ship).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join, posix } from 'node:path';
import { packedManifest, shippedFiles } from '../pack-main.mjs';

const [mainTarball, ...withBinaries] = process.argv.slice(2);
const list = (tarball) =>
  execFileSync('tar', ['-tvzf', tarball], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => {
      const fields = line.split(/\s+/);
      return { mode: fields[0], size: Number(fields[2]), path: fields.at(-1).replace(/^package\//, '') };
    });
const read = (tarball, path) => execFileSync('tar', ['-xzOf', tarball, `package/${path}`], { encoding: 'utf8' });

const files = list(mainTarball);
const paths = new Set(files.map((file) => file.path));
for (const wanted of ['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'native/binding.js', 'native/binding.d.ts', 'native/load.js', 'schemas/worker.schema.json', 'docs/sandbox.md', 'docs/releasing.md']) {
  assert.ok(paths.has(wanted), `the main tarball lacks ${wanted}`);
}
const binaries = [...paths].filter((path) => path.endsWith('.node') || path.endsWith('toolgate-sandbox'));
assert.deepEqual(binaries, [], 'the main tarball carries no binary');
// Exactly what git tracks (and the outputs of tracked sources): nothing untracked ships.
const shipped = shippedFiles();
const extra = [...paths].filter((path) => !shipped.includes(path));
const lacking = shipped.filter((path) => !paths.has(path));
assert.deepEqual({ extra, lacking }, { extra: [], lacking: [] }, 'the main tarball holds exactly the tracked files (scripts/pack-main.mjs)');

const manifest = JSON.parse(read(mainTarball, 'package.json'));
assert.equal(manifest.scripts, undefined, `the packed manifest has no scripts (an installed package runs none; prepare made npm warn): ${JSON.stringify(manifest.scripts)}`);
assert.deepEqual(manifest, packedManifest(), 'the packed manifest is package.json as scripts/pack-main.mjs rewrites it');
for (const field of ['repository', 'homepage', 'bugs', 'keywords', 'license']) assert.ok(manifest[field], `package.json lacks ${field}`);
assert.equal(manifest.exports['.'].default, './dist/index.js', 'exports["."] needs a default condition for require(esm)');
const platforms = ['linux-arm64-gnu', 'linux-arm64-musl', 'linux-x64-gnu', 'linux-x64-musl'];
assert.deepEqual(
  manifest.optionalDependencies,
  Object.fromEntries(platforms.map((platform) => [`toolgate-${platform}`, manifest.version])),
  'optionalDependencies lists every platform package at this version',
);

// README links: relative targets must be in the tarball (anchors and external links aside).
const readme = read(mainTarball, 'README.md');
const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]).filter((target) => !/^[a-z]+:|^#/.test(target));
for (const target of links) {
  const path = posix.normalize(target.split('#')[0]);
  assert.ok(paths.has(path) || [...paths].some((file) => file.startsWith(`${path}/`)), `README links to ${target}, which is not in the tarball`);
}
console.log(`  ok  main tarball: ${files.length} files, all tracked by git or built from tracked sources, no binary, no scripts, ${links.length} README links resolve inside it`);

const budgets = { addon: Number(process.env.ADDON_BUDGET), launcher: process.env.LAUNCHER_BUDGET ? Number(process.env.LAUNCHER_BUDGET) : null };
assert.ok(budgets.addon > 0 && budgets.launcher !== 0 && !Number.isNaN(budgets.launcher), 'ADDON_BUDGET (and LAUNCHER_BUDGET, unless empty) are byte counts (scripts/release-toolchain.sh)');
if (budgets.launcher === null) console.log('  note: launcher size not checked (a local glibc build; releases ship the musl launcher, checked by the full check)');
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

for (const platform of platforms) {
  const tarball = join(dirname(mainTarball), `toolgate-${platform}-${manifest.version}.tgz`);
  const entries = list(tarball);
  const byPath = new Map(entries.map((entry) => [entry.path, entry]));
  const binaries = withBinaries.length === 0 || withBinaries.includes(platform);
  for (const wanted of ['LICENSE', 'README.md', 'package.json', ...(binaries ? [`toolgate.${platform}.node`, 'toolgate-sandbox'] : [])]) {
    assert.ok(byPath.has(wanted), `${tarball} lacks ${wanted}`);
  }
  if (binaries) {
    assert.match(byPath.get('toolgate-sandbox').mode, /^-rwx/, `the launcher in ${tarball} is not executable`);
    for (const [file, budget] of [[`toolgate.${platform}.node`, budgets.addon], ['toolgate-sandbox', budgets.launcher ?? Infinity]]) {
      const { size } = byPath.get(file);
      assert.ok(size <= budget, `${file} in ${tarball} is ${size} bytes (${mib(size)}), over its budget of ${budget} (${mib(budget)}); is it stripped?`);
    }
  }
  const pkg = JSON.parse(read(tarball, 'package.json'));
  const [, cpu, libc] = platform.split('-');
  assert.deepEqual([pkg.os, pkg.cpu, pkg.libc], [['linux'], [cpu], [libc === 'gnu' ? 'glibc' : 'musl']], `${tarball}: os/cpu/libc`);
  assert.equal(pkg.version, manifest.version);
  console.log(`  ok  ${pkg.name}: ${entries.map((entry) => (entry.path.endsWith('.node') || entry.path === 'toolgate-sandbox' ? `${entry.path} (${mib(entry.size)})` : entry.path)).join(', ')}`);
}
