// Checks the packed tarballs before anything installs them: the main package ships its docs,
// LICENSE, schemas and loader but no binary, its metadata is complete, and every relative link
// in its README points at a file inside the tarball (so the links work from the npm page and
// from node_modules); each platform package ships its addon and an executable launcher with
// os/cpu/libc set. Usage: node check-tarball.mjs MAIN.tgz [PLATFORM...] (platform tarballs
// beside it; the PLATFORMs listed must carry their binaries, default all: CI's local pack has
// only this machine's, the others are packed for their metadata)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join, posix } from 'node:path';

const [mainTarball, ...withBinaries] = process.argv.slice(2);
const list = (tarball) =>
  execFileSync('tar', ['-tvzf', tarball], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => ({ mode: line.split(/\s+/)[0], path: line.split(/\s+/).at(-1).replace(/^package\//, '') }));
const read = (tarball, path) => execFileSync('tar', ['-xzOf', tarball, `package/${path}`], { encoding: 'utf8' });

const files = list(mainTarball);
const paths = new Set(files.map((file) => file.path));
for (const wanted of ['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'native/binding.js', 'native/binding.d.ts', 'native/load.js', 'schemas/worker.schema.json', 'docs/sandbox.md', 'docs/releasing.md']) {
  assert.ok(paths.has(wanted), `the main tarball lacks ${wanted}`);
}
const binaries = [...paths].filter((path) => path.endsWith('.node') || path.endsWith('toolgate-sandbox'));
assert.deepEqual(binaries, [], 'the main tarball carries no binary');

const manifest = JSON.parse(read(mainTarball, 'package.json'));
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
console.log(`  ok  main tarball: ${files.length} files, no binary, ${links.length} README links resolve inside it`);

for (const platform of platforms) {
  const tarball = join(dirname(mainTarball), `toolgate-${platform}-${manifest.version}.tgz`);
  const entries = list(tarball);
  const byPath = new Map(entries.map((entry) => [entry.path, entry]));
  const binaries = withBinaries.length === 0 || withBinaries.includes(platform);
  for (const wanted of ['LICENSE', 'README.md', 'package.json', ...(binaries ? [`toolgate.${platform}.node`, 'toolgate-sandbox'] : [])]) {
    assert.ok(byPath.has(wanted), `${tarball} lacks ${wanted}`);
  }
  if (binaries) assert.match(byPath.get('toolgate-sandbox').mode, /^-rwx/, `the launcher in ${tarball} is not executable`);
  const pkg = JSON.parse(read(tarball, 'package.json'));
  const [, cpu, libc] = platform.split('-');
  assert.deepEqual([pkg.os, pkg.cpu, pkg.libc], [['linux'], [cpu], [libc === 'gnu' ? 'glibc' : 'musl']], `${tarball}: os/cpu/libc`);
  assert.equal(pkg.version, manifest.version);
  console.log(`  ok  ${pkg.name}: ${entries.map((entry) => entry.path).join(', ')}`);
}
