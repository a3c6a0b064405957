#!/usr/bin/env node
// Keeps the platform packages in npm/ in step with the main package: each npm/<platform>/
// package.json has the main package's version. The main package's package.json does not list
// them: scripts/pack-main.mjs adds them as optional dependencies of exactly that version to the
// packed manifest, so that `npm ci` accepts this checkout's lock while they are not published
// (npm cannot lock a package it cannot fetch). `--write` makes it so (run by `npm version`);
// without it the script only checks and exits 1 naming every difference.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const write = process.argv.includes('--write');
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const writeJson = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

const mainFile = join(root, 'package.json');
const main = readJson(mainFile);
const platforms = readdirSync(join(root, 'npm')).sort();
const problems = [];
const optional = {};

for (const platform of platforms) {
  const file = join(root, 'npm', platform, 'package.json');
  const pkg = readJson(file);
  const name = `${main.name}-${platform}`;
  if (pkg.name !== name) problems.push(`npm/${platform}/package.json: name is ${pkg.name}, expected ${name}`);
  const node = `${main.napi.binaryName}.${platform}.node`;
  for (const wanted of [node, 'toolgate-sandbox']) {
    if (!pkg.files?.includes(wanted)) problems.push(`npm/${platform}/package.json: files lacks ${wanted}`);
  }
  if (pkg.main !== node) problems.push(`npm/${platform}/package.json: main is ${pkg.main}, expected ${node}`);
  if (pkg.version !== main.version) {
    if (write) {
      pkg.version = main.version;
      writeJson(file, pkg);
    } else {
      problems.push(`npm/${platform}/package.json: version ${pkg.version}, main package ${main.version}`);
    }
  }
  optional[name] = main.version;
}

const listed = Object.keys(main.optionalDependencies ?? {}).filter((name) => name in optional);
if (listed.length > 0) {
  if (write) {
    for (const name of listed) delete main.optionalDependencies[name];
    if (Object.keys(main.optionalDependencies).length === 0) delete main.optionalDependencies;
    writeJson(mainFile, main);
  } else {
    problems.push(`package.json: optionalDependencies lists ${listed.join(', ')}; scripts/pack-main.mjs adds them to the packed manifest only`);
  }
}

if (problems.length > 0) {
  console.error(`release-versions: the platform packages are out of step (fix with \`node scripts/release-versions.mjs --write\`):\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`release-versions: ${platforms.length} platform packages at ${main.version}${write ? ' (written)' : ''}`);
