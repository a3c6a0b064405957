// Writes the package.json of a fresh smoke-test app (scripts/test-release.sh). The platform
// packages are not on a registry yet, so `overrides` tells npm where their tarballs are; which
// of them gets installed is still npm's choice, from toolgate's optionalDependencies and each
// package's os/cpu/libc. Usage: node app-package.mjs APP_DIR PACKAGES_DIR VERSION
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [app, packages, version] = process.argv.slice(2);
const overrides = {};
for (const file of readdirSync(packages)) {
  const match = /^(toolgate-linux-[a-z0-9]+-[a-z]+)-(.+)\.tgz$/.exec(file);
  if (match && match[2] === version) overrides[match[1]] = `file:${join(packages, file)}`;
}
const manifest = { name: 'toolgate-smoke-app', version: '1.0.0', private: true, overrides };
writeFileSync(join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(JSON.stringify(manifest, null, 2));
