/**
 * Class: read grants are exactly what a program needs, and `toolgate check --sandbox` lists
 * every one with its reason.
 *
 * - A `shims` directory on `PATH` is a version manager's (pyenv, rbenv, asdf, mise, proto) only
 *   when a folder above it holds installed versions (`versions`, `installs`, `tools`); of that
 *   root only the parts its shims use are readable — never the root with its other files, and
 *   nothing for a `shims` folder that is no version manager's (`/srv/data/shims` made all of
 *   `/srv/data` readable).
 * - An executable tool or an MCP server in a `bin` directory gets that directory and its
 *   prefix's runtime parts for its calls; `check --sandbox worker.yaml` lists them under its
 *   toolset.
 */
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runToolgate } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { MOUNT_VIEW } from './protected-fixture.js';

function withPath(entry: string): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${entry}:${process.env.PATH}` };
}

describe.runIf(MOUNT_VIEW)('a shims directory on PATH (needs the kernel view)', () => {
  for (const layout of ['data/shims', 'data/sub/shims', 'data/plugins/x/shims']) {
    it(`'${layout}' with no installed versions above it grants nothing`, () => {
      const base = tempDir('toolgate-shims-');
      mkdirSync(join(base, layout), { recursive: true });
      mkdirSync(join(base, 'work'));
      writeFileSync(join(base, 'data', 'secret.txt'), 'DATA-SECRET\n');
      const run = runToolgate(['sandbox', '--work-dir', join(base, 'work'), '--', 'cat', join(base, 'data', 'secret.txt')], { env: withPath(join(base, layout)) });
      expect(run.stdout).not.toContain('DATA-SECRET');
      expect(run.status).not.toBe(0);
      const check = runToolgate(['check', '--sandbox', '--work-dir', join(base, 'work')], { env: withPath(join(base, layout)) });
      expect(check.stdout).not.toContain(join(base, 'data'));
    });
  }

  it("a version manager's root: its versions are readable, its other files are not", () => {
    const base = tempDir('toolgate-shims-');
    const root = join(base, 'mgr');
    for (const dir of ['shims', 'versions/1.0/bin', 'libexec', 'plugins/p/shims', 'mgr.d', 'cache', 'credentials.d', 'pyenv.d']) mkdirSync(join(root, dir), { recursive: true });
    mkdirSync(join(base, 'work'));
    writeFileSync(join(root, 'versions/1.0/bin/VERSION'), 'VERSION-ONE\n');
    writeFileSync(join(root, 'version'), '1.0\n');
    writeFileSync(join(root, 'secret.txt'), 'ROOT-SECRET\n');
    writeFileSync(join(root, 'cache', 'token'), 'CACHE-SECRET\n');
    // Only the manager's hook folders (named after the root, or a known manager's): another
    // `*.d` folder of the root may hold anything.
    writeFileSync(join(root, 'credentials.d', 'token'), 'D-SECRET\n');
    writeFileSync(join(root, 'pyenv.d', 'hook'), 'HOOK\n');
    for (const shims of ['shims', 'plugins/p/shims']) {
      const env = withPath(join(root, shims));
      const read = (file: string) => runToolgate(['sandbox', '--work-dir', join(base, 'work'), '--', 'cat', file], { env }).stdout;
      expect(read(join(root, 'versions/1.0/bin/VERSION'))).toContain('VERSION-ONE');
      expect(read(join(root, 'version'))).toContain('1.0');
      expect(read(join(root, 'secret.txt'))).not.toContain('ROOT-SECRET');
      expect(read(join(root, 'cache', 'token'))).not.toContain('CACHE-SECRET');
      expect(read(join(root, 'credentials.d', 'token'))).not.toContain('D-SECRET');
      expect(read(join(root, 'pyenv.d', 'hook'))).toContain('HOOK');
      const check = runToolgate(['check', '--sandbox', '--work-dir', join(base, 'work')], { env }).stdout;
      expect(check).toContain(`${join(root, 'versions')}: a part of the version manager '${root}'`);
      expect(check).toContain(`${join(root, 'mgr.d')}: a part of the version manager`);
      expect(check).not.toMatch(new RegExp(`read +${root}:`));
      expect(check).not.toContain(join(root, 'credentials.d'));
    }
  });
});

describe('check --sandbox lists what executable tools, MCP servers, cli_execute and shell programs add', () => {
  it("a tool and a server in bin directories: their directory and prefix parts, under the toolset", () => {
    const base = tempDir('toolgate-grants-');
    for (const dir of ['tools/bin', 'tools/lib', 'tools/share', 'pfx/bin', 'pfx/lib', 'loose', 'ws']) mkdirSync(join(base, dir), { recursive: true });
    const tool = join(base, 'tools', 'bin', 'leak');
    writeFileSync(tool, '#!/bin/sh\necho \'{"name": "leak", "description": "x", "input_schema": {"type": "object"}}\'\n');
    chmodSync(tool, 0o755);
    const server = join(base, 'pfx', 'bin', 'srv');
    writeFileSync(server, '#!/bin/sh\nexit 3\n');
    chmodSync(server, 0o755);
    const alone = join(base, 'loose', 'srv2');
    writeFileSync(alone, '#!/bin/sh\nexit 3\n');
    chmodSync(alone, 0o755);
    writeFileSync(
      join(base, 'w.yaml'),
      `name: w\nsandbox: { root: ./ws }\ntoolsets:\n  executables: { dirs: [./tools/bin] }\n  mcp:\n    servers:\n      s: { command: ${server} }\n      t: { command: ${alone} }\n`,
    );
    const check = runToolgate(['check', '--sandbox', join(base, 'w.yaml')], { cwd: base });
    expect(check.status, check.stderr).toBe(0);
    for (const [path, why] of [
      [join(base, 'tools', 'bin'), `for '${tool}': the directory of programs`],
      [join(base, 'tools', 'lib'), `for '${tool}': a part of its install prefix`],
      [join(base, 'tools', 'share'), `for '${tool}': a part of its install prefix`],
      [join(base, 'pfx', 'bin'), `for '${server}': the directory of programs`],
      [join(base, 'pfx', 'lib'), `for '${server}': a part of its install prefix`],
      [alone, `for '${alone}': the program itself`],
    ]) {
      expect(check.stdout, check.stdout).toContain(`${path}: ${why}`);
    }
    // Never the prefix itself, nor the folder of a program outside a bin directory.
    expect(check.stdout).not.toMatch(new RegExp(`read +${join(base, 'tools')}:`));
    expect(check.stdout).not.toMatch(new RegExp(`read +${join(base, 'loose')}:`));
    const json = JSON.parse(runToolgate(['check', '--sandbox', '--json', join(base, 'w.yaml')], { cwd: base }).stdout);
    const toolsets = json.workers[0].toolsets as { toolset: string; sandbox: { grants: { path: string }[] } }[];
    const grantsOf = (name: string) => toolsets.find((entry) => entry.toolset === name)!.sandbox.grants.map((grant) => grant.path);
    expect(grantsOf('executables')).toContain(join(base, 'tools', 'lib'));
    expect(grantsOf('mcp')).toContain(join(base, 'pfx', 'lib'));
    expect(grantsOf('mcp')).not.toContain(join(base, 'tools', 'lib'));
  });

  it('a program cli_execute allows or a shell rule names, found through a symlink on PATH: its prefix parts, listed', async () => {
    const base = tempDir('toolgate-grants-');
    for (const dir of ['opt/foo/bin', 'opt/foo/share', 'opt/bar/bin', 'opt/bar/lib', 'links', 'ws']) mkdirSync(join(base, dir), { recursive: true });
    for (const name of ['foo', 'bar']) {
      const program = join(base, 'opt', name, 'bin', name);
      writeFileSync(program, '#!/bin/sh\ncat "$@"\n');
      chmodSync(program, 0o755);
      symlinkSync(program, join(base, 'links', name));
    }
    writeFileSync(join(base, 'opt/foo/share/secret'), 'SHARE-SECRET\n');
    writeFileSync(
      join(base, 'w.yaml'),
      'name: w\nsandbox: { root: ./ws }\ntoolsets:\n  cli_execute: { allowed_binaries: [foo] }\n  shell:\n    rules:\n      - { pattern: bar, approval: ask }\n      - { pattern: rm, approval: blocked }\n',
    );
    const env = withPath(join(base, 'links'));
    // In force: a call of foo, as cli_execute runs it, reads its prefix's share/.
    const read = runToolgate(['sandbox', '--work-dir', join(base, 'ws'), '--', 'foo', join(base, 'opt/foo/share/secret')], { env });
    expect(read.stdout).toContain('SHARE-SECRET');
    const json = JSON.parse(runToolgate(['check', '--sandbox', '--json', join(base, 'w.yaml')], { cwd: base, env }).stdout);
    const toolsets = json.workers[0].toolsets as { toolset: string; sandbox: { grants: { path: string; why: string }[] } }[];
    const grantsOf = (name: string) => toolsets.find((entry) => entry.toolset === name)!.sandbox.grants.map((grant) => grant.path);
    expect(grantsOf('cli_execute')).toContain(join(base, 'opt/foo/share'));
    expect(grantsOf('cli_execute')).toContain(join(base, 'opt/foo/bin'));
    expect(grantsOf('shell')).toContain(join(base, 'opt/bar/lib'));
    expect(grantsOf('shell')).not.toContain(join(base, 'opt/foo/share'));
    const text = runToolgate(['check', '--sandbox', join(base, 'w.yaml')], { cwd: base, env }).stdout;
    expect(text).toContain(`${join(base, 'opt/foo/share')}: for '${join(base, 'opt/foo/bin/foo')}': a part of its install prefix`);
  });
});
