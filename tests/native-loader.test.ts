/**
 * native/load.js picks the addon by platform, arch and libc (issue 14). Each case runs the real
 * loader in a child Node whose process.platform, process.arch and diagnostic report (which
 * names the libc) are replaced before it loads, against a stub install layout: a toolgate
 * package holding the loader, and platform packages holding this checkout's built addon.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/fs.js';

const ROOT = join(import.meta.dirname, '..');
const VERSION = '0.1.0';
const SUPPORTED = 'linux-x64-gnu, linux-x64-musl, linux-arm64-gnu, linux-arm64-musl';

/** The addon `npm run build:native` left in native/ (the test suite runs after a build). */
function builtAddon(): string {
  const file = readdirSync(join(ROOT, 'native')).find((name) => /^toolgate\..+\.node$/.test(name));
  if (!file) throw new Error('no native/toolgate.*.node: run `npm run build:native` (or build:debug) first');
  return join(ROOT, 'native', file);
}

type Libc = 'gnu' | 'musl' | 'neither';

/** A `--import` module that makes the child look like `platform`/`arch` with `libc`. */
function pretend(platform: string, arch: string, libc: Libc): string {
  const report =
    libc === 'gnu'
      ? { header: { glibcVersionRuntime: '2.17' }, sharedObjects: [] }
      : { header: {}, sharedObjects: libc === 'musl' ? ['/lib/ld-musl-aarch64.so.1'] : ['/lib/libc.so.6'] };
  const code = `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} });
process.report.getReport = () => (${JSON.stringify(report)});`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

/** Stands for a file that is not an addon: a platform package holding it fails to load. */
const NOT_AN_ADDON = 'not an addon';

/**
 * node_modules/toolgate with the loader, and the named platform packages with `addon` (by
 * default a link to the built one: a debug addon is too big to copy per test).
 */
function layout(platforms: Record<string, { version?: string; addon?: string }> = {}): string {
  const app = tempDir();
  const main = join(app, 'node_modules', 'toolgate');
  mkdirSync(join(main, 'native'), { recursive: true });
  writeFileSync(join(main, 'package.json'), JSON.stringify({ name: 'toolgate', version: VERSION, type: 'module' }));
  copyFileSync(join(ROOT, 'native', 'load.js'), join(main, 'native', 'load.js'));
  for (const [platform, { version = VERSION, addon = builtAddon() }] of Object.entries(platforms)) {
    const dir = join(app, 'node_modules', `toolgate-${platform}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `toolgate-${platform}`, version, main: `toolgate.${platform}.node` }));
    const file = join(dir, `toolgate.${platform}.node`);
    if (addon === NOT_AN_ADDON) writeFileSync(file, 'this is not a shared object\n');
    else symlinkSync(addon, file);
  }
  return app;
}

/** Runs the loader in `app` as `platform`/`arch`/`libc`: the export count, or the error. */
function load(app: string, platform: string, arch: string, libc: Libc): { status: number | null; stdout: string; stderr: string; error?: string } {
  const loader = join(app, 'node_modules', 'toolgate', 'native', 'load.js');
  const script = `import { loadNativeBinding } from ${JSON.stringify(loader)};
console.log(Object.keys(loadNativeBinding()).length);`;
  const child = spawnSync(process.execPath, ['--import', pretend(platform, arch, libc), '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  const error = child.stderr.split('\n').find((line) => line.startsWith('Error: toolgate: '));
  return { status: child.status, stdout: child.stdout, stderr: child.stderr, ...(error ? { error } : {}) };
}

describe('the native loader', () => {
  it.each([
    ['darwin', 'arm64', 'neither', 'darwin-arm64'],
    ['darwin', 'x64', 'neither', 'darwin-x64'],
    ['win32', 'x64', 'neither', 'win32-x64'],
    ['freebsd', 'x64', 'neither', 'freebsd-x64'],
    ['linux', 'riscv64', 'gnu', 'linux-riscv64-gnu'],
    ['linux', 'ia32', 'musl', 'linux-ia32-musl'],
    ['linux', 'x64', 'neither', 'linux-x64-unknown-libc'],
  ] as const)('refuses %s %s (%s libc) in one line naming the supported platforms', (platform, arch, libc, shown) => {
    // every platform package is installed (none loadable): an unsupported platform tries none
    const fake = { addon: NOT_AN_ADDON };
    const app = layout({ 'linux-x64-gnu': fake, 'linux-x64-musl': fake, 'linux-arm64-gnu': fake, 'linux-arm64-musl': fake });
    const result = load(app, platform, arch, libc);
    expect(result.status).not.toBe(0);
    expect(result.error).toBe(
      `Error: toolgate: this platform (${shown}) is not supported; toolgate runs on Linux x64 and arm64 with glibc >= 2.17 or musl (${SUPPORTED}).`,
    );
    expect(result.stderr).not.toMatch(/optional dependencies|npm has a bug|package-lock/i);
  });

  it('loads the package matching the libc the running Node reports', () => {
    // both x64 packages hold a loadable addon; only the musl one must be chosen for musl
    const app = layout({ 'linux-x64-musl': {}, 'linux-x64-gnu': { addon: NOT_AN_ADDON } });
    const musl = load(app, 'linux', 'x64', 'musl');
    expect(musl.stderr).toBe('');
    expect(Number(musl.stdout)).toBeGreaterThan(10);
    // and the gnu one, which is not an addon, for glibc: proof the choice follows the libc
    const gnu = load(app, 'linux', 'x64', 'gnu');
    expect(gnu.error).toMatch(/^Error: toolgate: the native addon .*toolgate-linux-x64-gnu\/toolgate\.linux-x64-gnu\.node could not be loaded: /);
  });

  it('says which package is missing on a supported platform, the two reasons npm skips it, and how to get it', () => {
    const app = layout({ 'linux-x64-gnu': {} });
    const result = load(app, 'linux', 'arm64', 'musl');
    // npm leaves an optional dependency out silently when told to omit optional dependencies,
    // and also when it cannot fetch it: the message must not blame a flag the user never gave.
    expect(result.error).toBe(
      `Error: toolgate: the package toolgate-linux-arm64-musl@${VERSION}, which holds the native addon for this platform, is not installed. ` +
        'npm installs it as an optional dependency of toolgate and skips it without an error when optional dependencies are omitted ' +
        '(--omit=optional, --no-optional, or omit=optional in an .npmrc or NPM_CONFIG_OMIT) or when it cannot fetch it ' +
        `(no network, or a registry or mirror without it). Fix the cause and reinstall, or install it directly: npm install toolgate-linux-arm64-musl@${VERSION}`,
    );
    expect(result.stderr).not.toMatch(/reinstall without --omit/);
  });

  it('refuses a platform package of another version', () => {
    const app = layout({ 'linux-x64-musl': { version: '0.0.9' } });
    expect(load(app, 'linux', 'x64', 'musl').error).toBe(
      `Error: toolgate: toolgate-linux-x64-musl is version 0.0.9 but toolgate is ${VERSION}; install the same version of both (npm install toolgate@${VERSION}).`,
    );
  });

  it('prefers an addon built into native/ (a checkout) over the platform package', () => {
    const app = layout({ 'linux-arm64-gnu': { addon: NOT_AN_ADDON } });
    symlinkSync(builtAddon(), join(app, 'node_modules', 'toolgate', 'native', 'toolgate.linux-arm64-gnu.node'));
    const result = load(app, 'linux', 'arm64', 'gnu');
    expect(result.stderr).toBe('');
    expect(Number(result.stdout)).toBeGreaterThan(10);
  });
});
