/**
 * What the main package ships (issue 25, items 10, 12 and 13): scripts/pack-main.mjs packs the
 * files git tracks and the build outputs of tracked sources, nothing a run left in the checkout,
 * with a manifest that has no scripts and lists the platform packages; the checkout's own
 * package.json lists no platform package, so `npm ci` accepts its lock. Each case runs the real
 * script (and the real `npm pack`) on a git checkout made for it, or reads this repository's.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/checkout.js';
import { tempDir } from './helpers/fs.js';

const PACK = join(REPO_ROOT, 'scripts', 'pack-main.mjs');

function write(root: string, file: string, text = `${file}\n`): void {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}

function pack(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const child = spawnSync(process.execPath, [PACK, ...args], { encoding: 'utf8' });
  return { status: child.status, stdout: child.stdout, stderr: child.stderr };
}

/**
 * A checkout laid out like this repository: tracked sources, docs and examples; built outputs
 * (dist/, the generated binding) that git ignores; and what a quickstart run leaves behind.
 */
function checkout(): string {
  const root = tempDir();
  const manifest = {
    name: 'fixture',
    version: '1.2.3',
    type: 'module',
    files: ['dist', 'native/binding.js', 'native/binding.d.ts', 'native/load.js', 'schemas', 'docs', 'examples'],
    // An installed package must run none of these; packing must not run them either.
    scripts: { prepare: 'exit 17', prepack: 'exit 17', build: 'tsc' },
    dependencies: { jiti: '^2.7.0' },
  };
  write(root, 'package.json', `${JSON.stringify(manifest, null, 2)}\n`);
  write(root, 'npm/linux-x64-gnu/package.json', JSON.stringify({ name: 'fixture-linux-x64-gnu', version: '1.2.3' }));
  write(root, 'npm/linux-arm64-musl/package.json', JSON.stringify({ name: 'fixture-linux-arm64-musl', version: '1.2.3' }));
  for (const file of ['README.md', 'LICENSE', 'docs/guide.md', 'schemas/worker.schema.json', 'examples/quickstart/worker.yaml', 'native/load.js', 'ts/src/index.ts', 'ts/src/cli/main.ts']) {
    write(root, file);
  }
  write(root, 'examples/tools/run.sh', '#!/bin/sh\necho run\n');
  chmodSync(join(root, 'examples/tools/run.sh'), 0o755);
  write(root, '.gitignore', '/dist\n/native/binding.*\n/examples/**/notes/\n');
  execFileSync('git', ['init', '-q'], { cwd: root });
  execFileSync('git', ['add', '.'], { cwd: root });
  // Built from tracked sources, ignored by git.
  for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/index.js.map', 'dist/cli/main.js', 'native/binding.js', 'native/binding.d.ts']) write(root, file);
  // Left by runs and drafts: an ignored run output, and a new file nobody added.
  write(root, 'examples/quickstart/notes/fib.txt', 'F(30) = 832040\n');
  write(root, 'docs/draft.md');
  return root;
}

const SHIPPED = [
  'LICENSE',
  'README.md',
  'dist/cli/main.js',
  'dist/index.d.ts',
  'dist/index.js',
  'dist/index.js.map',
  'docs/guide.md',
  'examples/quickstart/worker.yaml',
  'examples/tools/run.sh',
  'native/binding.d.ts',
  'native/binding.js',
  'native/load.js',
  'package.json',
  'schemas/worker.schema.json',
];

describe('scripts/pack-main.mjs', () => {
  it('lists the tracked files under `files` and the outputs of tracked sources, not run outputs or untracked files', () => {
    const root = checkout();
    const listed = pack(['--root', root, '--list']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split('\n')).toEqual(SHIPPED);
  });

  it('refuses a build output without a tracked source, and a missing build, naming each file', () => {
    const root = checkout();
    write(root, 'dist/removed-module.js');
    const stale = pack(['--root', root, '--list']);
    expect(stale.status).toBe(1);
    expect(stale.stderr).toContain('dist/removed-module.js is not the output of a tracked ts/src file');
    const unbuilt = checkout();
    execFileSync('rm', ['-r', join(unbuilt, 'dist'), join(unbuilt, 'native', 'binding.js')]);
    const missing = pack(['--root', unbuilt, '--list']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('native/binding.js is missing');
    expect(missing.stderr).toContain('dist/ is not built');
  });

  it('packs exactly those files with a manifest without scripts that lists the platform packages, and leaves the checkout as it was', () => {
    const root = checkout();
    const before = readFileSync(join(root, 'package.json'), 'utf8');
    const destination = tempDir();
    const packed = pack(['--root', root, destination]);
    expect(packed.status, packed.stderr).toBe(0);
    const tarball = packed.stdout.trim();
    expect(tarball).toBe(join(destination, 'fixture-1.2.3.tgz'));
    const entries = execFileSync('tar', ['-tvzf', tarball], { encoding: 'utf8' }).trim().split('\n');
    const paths = entries.map((line) => line.split(/\s+/).at(-1)!.replace(/^package\//, ''));
    expect(paths.sort()).toEqual(SHIPPED);
    // modes survive the staging copy
    expect(entries.find((line) => line.endsWith('examples/tools/run.sh'))).toMatch(/^-rwx/);
    const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })) as Record<string, unknown>;
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.optionalDependencies).toEqual({ 'fixture-linux-arm64-musl': '1.2.3', 'fixture-linux-x64-gnu': '1.2.3' });
    expect(manifest.dependencies).toEqual({ jiti: '^2.7.0' });
    expect(readFileSync(join(root, 'package.json'), 'utf8')).toBe(before);
    expect(statSync(join(root, 'examples/quickstart/notes/fib.txt')).isFile()).toBe(true);
  });
});

describe("this repository's manifest", () => {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;

  it('lists no platform package, so that npm ci accepts the lock before they are published', () => {
    expect(Object.keys(manifest.optionalDependencies ?? {}).filter((name) => name.startsWith('toolgate-linux-'))).toEqual([]);
  });

  it('agrees with the root entry of package-lock.json (what npm ci compares)', () => {
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
    const root = lock.packages['']!;
    for (const field of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
      expect(root[field], `package-lock.json's ${field}: run npm install --ignore-scripts and commit the lock`).toEqual(manifest[field]);
    }
  });

  it('is published without scripts and with every platform package at its own version', () => {
    const packed = pack(['--manifest']);
    expect(packed.status, packed.stderr).toBe(0);
    const published = JSON.parse(packed.stdout) as Record<string, unknown>;
    expect(published.scripts).toBeUndefined();
    const version = manifest.version as unknown as string;
    expect(published.optionalDependencies).toEqual(
      Object.fromEntries(['linux-arm64-gnu', 'linux-arm64-musl', 'linux-x64-gnu', 'linux-x64-musl'].map((platform) => [`toolgate-${platform}`, version])),
    );
    const { scripts: _scripts, ...rest } = manifest;
    expect({ ...published, optionalDependencies: undefined }).toEqual({ ...rest, optionalDependencies: undefined });
  });
});
