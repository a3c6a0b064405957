import { chmodSync, existsSync, mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { approvalOf, cliExecuteTool, type CliExecuteOptions, type CommandResult } from '../ts/src/index.js';
import { CALL, commandFixture, refusalOf } from './helpers/commands.js';
import { tempDir } from './helpers/fs.js';
import { sleepMarker, waitForMarker, waitUntilGone } from './helpers/processes.js';

const ALLOWED = ['cat', 'ls', 'touch', 'printf', 'git', 'head', 'sleep', 'pwd', 'printenv', 'no-such-tool-xyz'];

let fx: ReturnType<typeof commandFixture>;
beforeEach(() => {
  fx = commandFixture();
});

function cli(options: Partial<CliExecuteOptions> = {}) {
  return cliExecuteTool({
    workDir: fx.work,
    allowedBinaries: ALLOWED,
    guardrails: {
      denyCommands: [{ pattern: '^git push\\b.*--force', message: 'force pushes are not allowed here' }],
      denyOutput: [
        { pattern: 'BEGIN [A-Z ]*PRIVATE KEY', action: 'block' },
        { pattern: 'sk-[A-Za-z0-9]{16,}', action: 'redact' },
      ],
    },
    ...options,
  });
}

async function call(input: { binary: string; args: string[]; stdin?: string }, tool = cli()): Promise<CommandResult> {
  return (await tool.execute!(input, CALL)) as CommandResult;
}

/**
 * Every way past a layer that we could think of. Each row is refused with exactly `code`, and
 * no attempt leaves a `pwned` file anywhere. `$W` is the work directory, `$O` the outside one,
 * `$S` the sibling sharing the work directory's prefix.
 */
const ATTACKS: [string, string, string[], string][] = [
  // 2. allowlist: exact names only
  ['a shell by name', 'bash', ['-c', 'touch pwned'], 'BINARY_NOT_ALLOWED'],
  ['sh by name', 'sh', ['-c', 'touch pwned'], 'BINARY_NOT_ALLOWED'],
  ['a trampoline by name', 'env', ['touch', 'pwned'], 'BINARY_NOT_ALLOWED'],
  ['xargs', 'xargs', ['touch'], 'BINARY_NOT_ALLOWED'],
  ['an absolute path to an allowed program', '/usr/bin/touch', ['pwned'], 'BINARY_NOT_ALLOWED'],
  ['a relative path to an allowed program', './touch', ['pwned'], 'BINARY_NOT_ALLOWED'],
  ['a different case', 'TOUCH', ['pwned'], 'BINARY_NOT_ALLOWED'],
  ['trailing whitespace', 'touch ', ['pwned'], 'BINARY_NOT_ALLOWED'],
  ['a command line in the binary field', 'touch pwned', [], 'BINARY_NOT_ALLOWED'],
  ['an empty name', '', [], 'BINARY_NOT_ALLOWED'],
  ['a symlink to bash in the work directory', 'innocent', ['-c', 'touch pwned'], 'BINARY_NOT_ALLOWED'],
  // 3. resolved once: an allowlisted binary that is not installed
  ['an allowlisted binary that was not found', 'no-such-tool-xyz', [], 'BINARY_NOT_FOUND'],
  // 4. argument text
  ['command substitution', 'touch', ['$(touch pwned)'], 'ARGUMENT_REJECTED'],
  ['backticks', 'touch', ['`touch pwned`'], 'ARGUMENT_REJECTED'],
  ['substitution inside a flag', 'git', ['log', '--format=$(touch pwned)'], 'ARGUMENT_REJECTED'],
  ['a newline', 'printf', ['x\ntouch pwned'], 'ARGUMENT_REJECTED'],
  ['a carriage return', 'printf', ['x\rtouch pwned'], 'ARGUMENT_REJECTED'],
  ['a NUL byte', 'cat', ['src/main.rs\u0000/../../outside/secret.txt'], 'ARGUMENT_REJECTED'],
  ['a file: URL', 'git', ['clone', 'file:///etc', 'pwned'], 'ARGUMENT_REJECTED'],
  ['a FILE: URL in capitals', 'git', ['clone', 'FILE:/etc', 'pwned'], 'ARGUMENT_REJECTED'],
  ['a file URL with four slashes', 'git', ['clone', 'file:////etc', 'pwned'], 'ARGUMENT_REJECTED'],
  ['a file URL in a flag value', 'git', ['fetch', '--upload-pack=x', '--repo=File://$O'], 'ARGUMENT_REJECTED'],
  ['a git+file URL', 'git', ['clone', 'git+file:///etc', 'pwned'], 'ARGUMENT_REJECTED'],
  // 5. path confinement
  ['dot-dot out of the work directory', 'cat', ['../outside/secret.txt'], 'PATH_OUTSIDE_ROOT'],
  ['dot-dot through a missing directory', 'cat', ['foo/../../outside/secret.txt'], 'PATH_OUTSIDE_ROOT'],
  ['a sibling directory', 'ls', ['../sibling'], 'PATH_OUTSIDE_ROOT'],
  ['the parent itself', 'ls', ['..'], 'PATH_OUTSIDE_ROOT'],
  ['an absolute system file', 'cat', ['/etc/passwd'], 'PATH_OUTSIDE_ROOT'],
  ['the file system root', 'ls', ['/'], 'PATH_OUTSIDE_ROOT'],
  ['another user’s key', 'cat', ['/home/other/.ssh/id_rsa'], 'PATH_OUTSIDE_ROOT'],
  ['an absolute path outside', 'cat', ['$O/secret.txt'], 'PATH_OUTSIDE_ROOT'],
  ['a sibling sharing the prefix', 'touch', ['$S/pwned'], 'PATH_OUTSIDE_ROOT'],
  ['the home directory', 'cat', ['~/.ssh/id_rsa'], 'PATH_OUTSIDE_ROOT'],
  ['root’s home by name', 'ls', ['~root'], 'PATH_OUTSIDE_ROOT'],
  ['a --flag=value path', 'git', ['diff', '--output=/etc/shadow'], 'PATH_OUTSIDE_ROOT'],
  ['a --file=/etc/shadow path', 'head', ['--file=/etc/shadow'], 'PATH_OUTSIDE_ROOT'],
  ['an attached short flag', 'head', ['-n1', '-f/etc/passwd'], 'PATH_OUTSIDE_ROOT'],
  ['clustered short flags with a path', 'ls', ['-la/etc'], 'PATH_OUTSIDE_ROOT'],
  ['a key=value path', 'touch', ['of=$O/pwned'], 'PATH_OUTSIDE_ROOT'],
  ['a nested key=value path', 'git', ['-c', 'blame.ignoreRevsFile=/tmp/revs'], 'PATH_OUTSIDE_ROOT'],
  ['a response file', 'printf', ['@/etc/passwd'], 'PATH_OUTSIDE_ROOT'],
  ['a colon-separated list', 'git', ['log', '--path=src:/etc'], 'PATH_OUTSIDE_ROOT'],
  ['a comma-separated list', 'printf', ['src,/etc/passwd'], 'PATH_OUTSIDE_ROOT'],
  ['a home path in a flag value', 'git', ['log', '--key=~/.aws/credentials'], 'PATH_OUTSIDE_ROOT'],
  ['a symlink pointing out', 'cat', ['escape/secret.txt'], 'PATH_OUTSIDE_ROOT'],
  ['a symlink pointing out, in a flag value', 'touch', ['--reference=escape/secret.txt', 'x'], 'PATH_OUTSIDE_ROOT'],
  ['a dangling symlink pointing out', 'touch', ['dangling'], 'PATH_OUTSIDE_ROOT'],
  ['a bare word naming a symlink out', 'ls', ['escape'], 'PATH_OUTSIDE_ROOT'],
  ['a bare word in a flag value naming a symlink out', 'touch', ['--reference=dangling', 'x'], 'PATH_OUTSIDE_ROOT'],
  ['a new file through a symlinked directory', 'touch', ['escape/pwned'], 'PATH_OUTSIDE_ROOT'],
  ['a path through the symlink and back up', 'cat', ['escape/../outside/secret.txt'], 'PATH_OUTSIDE_ROOT'],
  // 11. guardrails
  ['a denied command line', 'git', ['push', 'origin', 'main', '--force'], 'GUARDRAIL_BLOCKED'],
];

describe('cli_execute attack corpus', () => {
  it.each(ATTACKS)('refuses %s', async (_name, binary, rawArgs, code) => {
    const args = rawArgs.map((arg) => arg.replaceAll('$O', fx.outside).replaceAll('$S', fx.sibling).replaceAll('$W', fx.work));
    const error = await refusalOf(() => call({ binary, args }));
    expect(error.code, error.message).toBe(code);
    for (const dir of [fx.work, fx.outside, fx.sibling, join(fx.outside, '..')]) {
      expect(existsSync(join(dir, 'pwned')), `pwned in ${dir}`).toBe(false);
    }
    expect(existsSync(join(fx.outside, 'created-through-dangling-link'))).toBe(false);
  });

  it('names the argument index in argument refusals', async () => {
    const error = await refusalOf(() => call({ binary: 'printf', args: ['ok', 'fine', '$(id)'] }));
    expect(error.message).toContain('args[2]');
    const path = await refusalOf(() => call({ binary: 'cat', args: ['src/main.rs', '--x=/etc/shadow'] }));
    expect(path.message).toContain('args[1]');
    expect(path.message).toContain("'/etc/shadow'");
  });

  it('says which argument of a guardrail matched and gives its message', async () => {
    const error = await refusalOf(() => call({ binary: 'git', args: ['push', '--force'] }));
    expect(error.message).toBe('force pushes are not allowed here');
  });

  it('blocks output on the raw bytes before redacting, and returns nothing of it', async () => {
    const error = await refusalOf(() => call({ binary: 'printf', args: ['%s\\n%s', 'sk-aaaaaaaaaaaaaaaaaaaa', '-----BEGIN RSA PRIVATE KEY-----'] }));
    expect(error.code).toBe('OUTPUT_BLOCKED');
    expect(error.message).not.toContain('-----BEGIN');
  });

  it('refuses a binary that was swapped for a shell after the tool was built', async () => {
    const bin = tempDir('toolgate-bin-');
    symlinkSync('/bin/true', join(bin, 'mytool'));
    const tool = withPath(bin, () => cliExecuteTool({ workDir: fx.work, allowedBinaries: ['mytool'] }));
    expect((await call({ binary: 'mytool', args: [] }, tool)).exitCode).toBe(0);
    unlinkSync(join(bin, 'mytool'));
    symlinkSync('/bin/bash', join(bin, 'mytool'));
    const error = await refusalOf(() => call({ binary: 'mytool', args: ['-c', 'touch pwned'] }, tool));
    expect(error.code).toBe('SHELL_NOT_ALLOWED');
    expect(existsSync(join(fx.work, 'pwned'))).toBe(false);
  });
});

/** Runs `build` with `dir` first on PATH (the native side reads PATH when a tool is built). */
function withPath<T>(dir: string, build: () => T): T {
  const saved = process.env.PATH;
  process.env.PATH = `${dir}:${saved}`;
  try {
    return build();
  } finally {
    process.env.PATH = saved;
  }
}

describe('cli_execute configuration', () => {
  const SHELLS_AND_TRAMPOLINES = [
    'sh', 'bash', 'zsh', 'dash', 'ksh', 'csh', 'tcsh', 'fish', 'busybox', 'env', 'xargs', 'sudo', 'doas', 'su',
    'nohup', 'setsid', 'timeout', 'nice', 'chroot', 'strace', 'script', 'bash5', 'bash-5.2',
  ];

  it.each(SHELLS_AND_TRAMPOLINES)('refuses %s in the allowlist with CONFIG_INVALID that says why', (name) => {
    const error = (() => {
      try {
        cliExecuteTool({ workDir: fx.work, allowedBinaries: ['ls', name] });
      } catch (e) {
        return e as { code: string; message: string };
      }
      throw new Error(`${name} was accepted`);
    })();
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(`'${name}'`);
    expect(error.message).toMatch(/shell|another program|privileges|multi-call/);
  });

  it.each([
    ['a symlink to bash under an innocent name', 'innocent-shell', '/bin/bash'],
    ['a symlink chain to dash', 'chain', '/bin/sh'],
    ['a symlink to env', 'runner', '/usr/bin/env'],
  ])('refuses %s on PATH by its real basename', (_name, link, target) => {
    const bin = tempDir('toolgate-bin-');
    symlinkSync(target, join(bin, link));
    expect(() => withPath(bin, () => cliExecuteTool({ workDir: fx.work, allowedBinaries: ['ls', link] }))).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('resolves to') }),
    );
  });

  it.each([
    ['an invalid deny_commands regex', { guardrails: { denyCommands: [{ pattern: '(' }] } }, 'deny_commands[0]'],
    ['an invalid deny_output regex', { guardrails: { denyOutput: [{ pattern: '[a-', action: 'redact' as const }] } }, 'deny_output[0]'],
    ['a regex that matches everything', { guardrails: { denyOutput: [{ pattern: '.*' }] } }, 'empty string'],
    ['a path in the allowlist', { allowedBinaries: ['/usr/bin/git'] }, 'bare names'],
    ['an empty allowlist', { allowedBinaries: [] }, 'empty'],
    ['nothing found', { allowedBinaries: ['no-such-tool-xyz'] }, 'none of allowed_binaries'],
    ['a zero timeout', { timeoutMs: 0 }, 'timeout'],
    ['a missing read root', { readRoots: ['does-not-exist'] }, 'read_roots'],
    ['HOME in the passthrough list', { envPassthrough: ['HOME'] }, 'HOME'],
    ['a missing work directory', { workDir: '/definitely/not/here' }, 'work directory'],
  ])('refuses %s at construction', (_name, options, needle) => {
    expect(() => cli(options as Partial<CliExecuteOptions>)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining(needle) }),
    );
  });
});

describe('cli_execute', () => {
  it('runs an allowlisted program without a shell, in the work directory', async () => {
    const result = await call({ binary: 'printf', args: ['%s|', 'a;b', '*', '$HOME', 'x > y', '|'] });
    expect(result).toEqual({ stdout: 'a;b|*|$HOME|x > y|||', stderr: '', exitCode: 0, truncated: false, timedOut: false });
    expect((await call({ binary: 'pwd', args: [] })).stdout).toBe(`${fx.work}\n`);
    expect((await call({ binary: 'ls', args: [] })).stdout.split('\n')).toContain('src');
  });

  it('lets paths inside the work directory and the read roots through, and says what is not a path', async () => {
    expect((await call({ binary: 'cat', args: ['./src/../src/main.rs'] })).stdout).toBe('fn main() {}\n');
    const tool = cli({ readRoots: [fx.outside] });
    expect((await call({ binary: 'cat', args: [join(fx.outside, 'secret.txt')] }, tool)).stdout).toBe('TOP SECRET\n');
    expect((await call({ binary: 'cat', args: ['escape/secret.txt'] }, tool)).stdout).toBe('TOP SECRET\n');
    const relative = cli({ readRoots: ['../outside'] });
    expect((await call({ binary: 'cat', args: ['../outside/secret.txt'] }, relative)).stdout).toBe('TOP SECRET\n');
    for (const arg of ['origin/main', 'HEAD~1', '--namespace=default', 'https://example.com/a/b']) {
      expect((await call({ binary: 'printf', args: ['%s', arg] })).stdout).toBe(arg);
    }
  });

  it('reports a non-zero exit as data', async () => {
    const result = await call({ binary: 'cat', args: ['missing-file'] });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('missing-file');
  });

  it('writes stdin', async () => {
    expect((await call({ binary: 'cat', args: [], stdin: 'from stdin' })).stdout).toBe('from stdin');
  });

  it('passes only PATH, LANG, a private HOME/TMPDIR, proxies and the passthrough list', async () => {
    process.env.TOOLGATE_TEST_SECRET = 'hunter2';
    process.env.TOOLGATE_TEST_TOKEN = 'passed-through';
    process.env.https_proxy = 'http://proxy.invalid:3128';
    try {
      const tool = cli({ envPassthrough: ['TOOLGATE_TEST_TOKEN', 'TOOLGATE_TEST_UNSET'] });
      const { stdout } = await call({ binary: 'printenv', args: [] }, tool);
      const names = stdout.trim().split('\n').map((line) => line.split('=')[0]).sort();
      expect(stdout).not.toContain('hunter2');
      // HOME is a private, empty directory of the call, never the work directory (issue 10 item 4).
      const home = /^HOME=(.*)$/m.exec(stdout)?.[1] ?? '';
      expect(home).toMatch(/\/toolgate-call-[0-9a-f]+\/home$/);
      expect(home.startsWith(fx.work)).toBe(false);
      expect(stdout).toMatch(/^TMPDIR=.*\/toolgate-call-[0-9a-f]+\/tmp$/m);
      expect(stdout).toContain('TOOLGATE_TEST_TOKEN=passed-through\n');
      expect(stdout).toContain('https_proxy=http://proxy.invalid:3128\n');
      // The one child-environment policy (Rust exec::env): also TZ, USER, LOGNAME and LC_* when set.
      const allowed = new Set(['PATH', 'HOME', 'TMPDIR', 'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME', 'LANG', 'TZ', 'USER', 'LOGNAME', 'TOOLGATE_TEST_TOKEN', 'https_proxy', 'http_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'all_proxy', 'ALL_PROXY', 'ftp_proxy', 'FTP_PROXY']);
      for (const name of names) expect(allowed.has(name ?? '') || (name ?? '').startsWith('LC_'), `unexpected ${name}`).toBe(true);
    } finally {
      delete process.env.TOOLGATE_TEST_SECRET;
      delete process.env.TOOLGATE_TEST_TOKEN;
      delete process.env.https_proxy;
    }
  });

  it('caps each stream and reports truncated', async () => {
    writeFileSync(join(fx.work, 'big.txt'), 'x'.repeat(5000));
    const result = await call({ binary: 'cat', args: ['big.txt'] }, cli({ maxOutputBytes: 1000 }));
    expect(result.stdout.length).toBe(1000);
    expect(result.truncated).toBe(true);
  });

  it('redacts output matches', async () => {
    const result = await call({ binary: 'printf', args: ['token=sk-abcdefghijklmnopqrst end'] });
    expect(result.stdout).toBe('token=[REDACTED] end');
  });

  it('kills the process group on timeout and reports timedOut', async () => {
    const started = Date.now();
    const result = await call({ binary: 'sleep', args: ['30'] }, cli({ timeoutMs: 300 }));
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('kills the whole process group when the abortSignal fires, and rejects with its reason', async () => {
    const bin = tempDir('toolgate-bin-');
    // A program that starts a grandchild, then waits: the abort must reach both. The host finds
    // them by the marker both have as an argument (the call has its own PID namespace).
    const script = join(bin, 'spawner');
    writeFileSync(script, '#!/bin/sh\nsleep "$1" &\nwait\n');
    chmodSync(script, 0o755);
    const tool = withPath(bin, () => cliExecuteTool({ workDir: fx.work, allowedBinaries: ['spawner'] }));
    const controller = new AbortController();
    const marker = sleepMarker();
    const running = tool.execute!({ binary: 'spawner', args: [marker] }, { ...CALL, abortSignal: controller.signal });
    const pids = await waitForMarker(marker, 2);
    const started = Date.now();
    controller.abort(new Error('stopped by the user'));
    await expect(running).rejects.toThrow('stopped by the user');
    expect(Date.now() - started).toBeLessThan(1500);
    for (const pid of pids) {
      expect(await waitUntilGone(pid), `pid ${pid}`).toBe(true);
    }
  });

  it('does not start when the abortSignal has already fired', async () => {
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    await expect(tool().execute!({ binary: 'touch', args: ['pwned'] }, { ...CALL, abortSignal: controller.signal })).rejects.toThrow('too late');
    expect(existsSync(join(fx.work, 'pwned'))).toBe(false);
  });

  it('reports availability and offers only the binaries that were found', () => {
    const tool = cli();
    const missing = tool.availability().find((binary) => binary.name === 'no-such-tool-xyz');
    expect(missing).toEqual({ name: 'no-such-tool-xyz', found: false, path: null, realPath: null });
    const git = tool.availability().find((binary) => binary.name === 'git');
    expect(git?.found).toBe(true);
    expect(git?.path).toMatch(/^\//);
    const schema = tool.inputSchema as { '~standard'?: unknown; shape?: { binary: { options: string[] } } };
    expect(schema.shape?.binary.options).toEqual(ALLOWED.filter((name) => name !== 'no-such-tool-xyz'));
  });

  it('asks for approval by default and follows the approval config', async () => {
    expect(approvalOf(cli())).toEqual({ decision: 'ask', dynamic: false });
    expect(cli().needsApproval).toBe(true);
    expect(cli({ approval: { default: 'preApproved' } }).needsApproval).toBe(false);
    const blocked = cli({ approval: { tools: { cli_execute: 'blocked' } } });
    expect((await refusalOf(() => call({ binary: 'ls', args: [] }, blocked))).code).toBe('TOOL_BLOCKED');
    expect(typeof blocked.availability).toBe('function');
  });
});

function tool() {
  return cli();
}

// Keep the home directory check honest: it only means something when home is outside the work dir.
it('runs with a home directory outside the temporary work directories', () => {
  expect(homedir().startsWith(tempDir())).toBe(false);
  mkdirSync(join(tempDir(), 'x'));
});
