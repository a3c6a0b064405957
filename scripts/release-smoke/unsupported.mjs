// Importing toolgate where no platform package exists fails with one line naming the supported
// platforms, never napi's advice about npm bugs and optional dependencies. Each case runs in a
// child Node whose process.platform, process.arch and diagnostic report (the libc) are
// replaced before toolgate loads. Run by scripts/test-release.sh in an app with toolgate
// installed: `node unsupported.mjs` (every case) or `node unsupported.mjs OS ARCH` (that one).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const cases = process.argv[2]
  ? [[process.argv[2], process.argv[3], null]]
  : [
      ['darwin', 'arm64', null],
      ['darwin', 'x64', null],
      ['win32', 'x64', null],
      ['freebsd', 'x64', null],
      ['linux', 'riscv64', 'gnu'],
      ['linux', 'ia32', 'gnu'],
      ['linux', 'arm', 'musl'],
      ['linux', 'x64', 'neither'],
    ];

/** A module that makes this process look like another platform, for --import. */
function pretend(platform, arch, libc) {
  const report =
    libc === 'gnu'
      ? { header: { glibcVersionRuntime: '2.36' }, sharedObjects: [] }
      : libc === 'musl'
        ? { header: {}, sharedObjects: ['/lib/ld-musl-x86_64.so.1'] }
        : { header: {}, sharedObjects: [] };
  const code = `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} });
process.report.getReport = () => (${JSON.stringify(report)});`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

/** The one error line of importing toolgate; never napi's advice about an npm bug and package-lock.json. */
function importError(args) {
  const child = spawnSync(process.execPath, [...args, '--input-type=module', '-e', "await import('toolgate')"], { encoding: 'utf8' });
  assert.notEqual(child.status, 0, 'importing toolgate should fail');
  const line = child.stderr.split('\n').find((text) => text.startsWith('Error: toolgate: '));
  assert.ok(line, `no toolgate error line in:\n${child.stderr}`);
  assert.doesNotMatch(child.stderr, /npm has a bug|package-lock/i);
  return line;
}

for (const [platform, arch, libc] of cases) {
  const line = importError(['--import', pretend(platform, arch, libc)]);
  // No package exists for these: nothing about optional dependencies could help.
  assert.doesNotMatch(line, /optional dependenc/i, line);
  const shown = platform === 'linux' ? `${platform}-${arch}-${libc === 'neither' ? 'unknown-libc' : libc}` : `${platform}-${arch}`;
  assert.match(line, /linux-x64-gnu, linux-x64-musl, linux-arm64-gnu, linux-arm64-musl/);
  assert.ok(line.includes(`this platform (${shown}) is not supported`), line);
  console.log(`  ok  ${shown}: ${line}`);
}

// On this (supported) platform without its package, the error names the package to install.
const loader = join(dirname(createRequire(import.meta.url).resolve('toolgate/package.json')), 'native', 'load.js');
const { currentPlatform } = await import(pathToFileURL(loader).href);
const here = currentPlatform();
let installed = true;
try {
  createRequire(import.meta.url).resolve(`toolgate-${here}/package.json`);
} catch {
  installed = false;
}
if (!installed) {
  const line = importError([]);
  const version = createRequire(import.meta.url)('toolgate/package.json').version;
  for (const part of [`the package toolgate-${here}@${version}`, '--omit=optional', 'cannot fetch it', `npm install toolgate-${here}@${version}`]) {
    assert.ok(line.includes(part), `the error lacks '${part}': ${line}`);
  }
  console.log(`  ok  ${here} without its package: ${line}`);
}
