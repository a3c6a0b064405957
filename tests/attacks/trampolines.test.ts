/**
 * Class 5: trampolines, programs whose purpose is to run another program named in their
 * arguments. Allowlisted or reached through `shell` with a preApproved default, each would run a
 * shell or any program past the allowlist and the rules. Each is first run without toolgate
 * where that is cheap (it creates a file through `touch`), then must be refused by `shell`
 * (`SHELL_NOT_ALLOWED`) and by `cli_execute` at construction (`CONFIG_INVALID`). The dynamic
 * loader is recognised by its file, under every path and name. (The Rust suite checks every
 * entry of the list in the core against the binaries installed here.)
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { cliExecuteTool, explainCommand } from '../../ts/src/index.js';
import { attackFixture, type AttackFixture, plain, refusedWith, shell, skip, which } from './fixture.js';

let fx: AttackFixture;
beforeEach(() => {
  fx = attackFixture();
});

const touch = realpathSync(which('touch') ?? '/usr/bin/touch');
const machine = plain('uname', ['-m'], '/').trim();

/** [name, arguments that make it run `touch pwned`, or null when no cheap proof exists]. */
const TRAMPOLINES: [string, string[] | null][] = [
  ['setarch', [machine, touch, 'pwned']],
  ['linux32', null],
  ['linux64', [touch, 'pwned']],
  ['i386', null],
  ['x86_64', null],
  ['uname26', null],
  ['choom', ['-n', '0', '--', touch, 'pwned']],
  ['ssh-agent', [touch, 'pwned']],
  ['dbus-run-session', ['--', touch, 'pwned']],
  ['run-parts', ['--arg=pwned', 'parts']],
  ['fakeroot', [touch, 'pwned']],
  ['gdb', ['-batch', '-ex', 'shell touch pwned']],
  ['valgrind', ['-q', touch, 'pwned']],
  ['hyperfine', ['--runs', '1', '--warmup', '0', 'touch pwned']],
  ['flock', ['lockfile', touch, 'pwned']],
  ['taskset', ['-c', '0', touch, 'pwned']],
  ['chrt', ['-o', '0', touch, 'pwned']],
  ['prlimit', [touch, 'pwned']],
  ['setpriv', [touch, 'pwned']],
  ['unshare', [touch, 'pwned']],
  ['systemd-cat', [touch, 'pwned']],
  ['ldd', null],
  ['strace', null],
  ['ltrace', null],
  ['perf', null],
  ['tmux', null],
  ['screen', null],
  ['chronic', [touch, 'pwned']],
  ['faketime', ['now', touch, 'pwned']],
  ['eatmydata', [touch, 'pwned']],
  ['catchsegv', [touch, 'pwned']],
  ['torsocks', null],
  ['proxychains4', null],
  ['sshpass', ['-p', 'x', touch, 'pwned']],
  ['rlwrap', null],
  ['cgexec', null],
  ['systemd-run', null],
  ['systemd-inhibit', null],
  ['systemd-socket-activate', null],
  ['gpg-agent', null],
  ['dbus-launch', null],
  ['xvfb-run', null],
  ['entr', null],
  ['memusage', null],
  ['sotruss', null],
  ['ld.so', [touch, 'pwned']],
  ['qemu-x86_64-static', null],
  ['busybox', null],
  ['coreutils', null],
  ['at', null],
  ['crontab', null],
];

describe('trampolines', () => {
  it.each(TRAMPOLINES)('refuses %s', async (name, proof) => {
    const path = which(name);
    if (!path) return skip(`${name} is not installed`);
    mkdirSync(join(fx.work, 'parts'));
    symlinkSync(touch, join(fx.work, 'parts', 'touch'));
    if (proof) {
      plain(path, proof, fx.work);
      if (existsSync(join(fx.work, 'pwned'))) {
        rmSync(join(fx.work, 'pwned'));
      } else {
        console.warn(`${name} did not run touch here without toolgate (no session bus, no permission, …); checking the refusal only`);
      }
    }
    const args = (proof ?? ['--version']).map((arg) => `'${arg}'`).join(' ');
    for (const command of [`${name} ${args}`, `${path} ${args}`]) {
      expect(await refusedWith(() => shell(fx)(command)), command).toBe('SHELL_NOT_ALLOWED');
    }
    expect(() => cliExecuteTool({ workDir: fx.work, allowedBinaries: ['ls', name] })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(existsSync(join(fx.work, 'pwned'))).toBe(false);
  });

  it('refuses a hard link to a shell or trampoline under an innocent name', async () => {
    let linked = 0;
    for (const name of ['bash', 'dash', 'env', 'setarch', 'xargs']) {
      const path = which(name);
      if (!path) continue;
      const link = join(fx.work, `innocent-${name}`);
      try {
        linkSync(realpathSync(path), link);
      } catch {
        skip(`a hard link to ${name} (another file system)`);
        continue;
      }
      expect(await refusedWith(() => shell(fx)(`./innocent-${name} --version`)), name).toBe('SHELL_NOT_ALLOWED');
      linked += 1;
    }
    if (linked === 0) skip('no hard link could be made');
  });
});

describe('the dynamic loader', () => {
  const named = ['/lib64/ld-linux-x86-64.so.2', '/lib/ld-linux-aarch64.so.1', '/lib/ld-musl-x86_64.so.1'].find((path) => existsSync(path));

  it('runs any program without toolgate', () => {
    if (!named) return skip('no dynamic loader at a known path');
    plain(named, [touch, 'pwned'], fx.work);
    expect(existsSync(join(fx.work, 'pwned'))).toBe(true);
  });

  it('is refused under every path and name', async () => {
    if (!named) return skip('no dynamic loader at a known path');
    const real = realpathSync(named);
    symlinkSync(real, join(fx.work, 'loader-link'));
    symlinkSync(named, join(fx.work, 'innocent'));
    copyFileSync(real, join(fx.work, 'loader-copy'));
    const paths = [named, real, './loader-link', './innocent', './loader-copy'];
    if (existsSync('/usr/bin/ld.so')) paths.push('/usr/bin/ld.so');
    try {
      linkSync(real, join(fx.work, 'loader-hard'));
      paths.push('./loader-hard');
    } catch {
      skip('a hard link to the loader (the work directory is on another file system)');
    }
    for (const path of paths) {
      expect(await refusedWith(() => shell(fx)(`${path} ${touch} pwned`)), path).toBe('SHELL_NOT_ALLOWED');
      const explained = explainCommand({ cwd: fx.work, default: 'preApproved' }, `${path} ${touch} pwned`);
      expect(explained.refusal?.message, path).toContain('loader');
    }
    expect(existsSync(join(fx.work, 'pwned'))).toBe(false);
  });
});

describe('ordinary development tools', () => {
  it.each(['git', 'make', 'node', 'python3', 'npm', 'ls', 'cat', 'curl', 'ld'])('are not trampolines: %s', (name) => {
    if (!which(name)) return skip(`${name} is not installed`);
    const explained = explainCommand({ cwd: fx.work, default: 'preApproved' }, `${name} --version`);
    expect(explained.refusal?.layer ?? null, explained.refusal?.message).not.toBe('shell-or-trampoline');
  });
});
