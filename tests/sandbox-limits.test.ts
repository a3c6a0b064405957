/**
 * `sandbox.limits` from TypeScript and worker files: a call over a limit ends with a result
 * that names the limit (exec's `limit`, the stderr line the model reads through `shell` and
 * `cli_execute`), the option is read strictly, and `toolgate check --sandbox` shows the values.
 * The kernel side (cgroups, rlimits, the tmpfs, each variant) is tested in the core's
 * tests/sandbox_limits.rs.
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ToolExecutionOptions } from 'ai';
import { cliExecuteTool, type CommandResult, exec, executableTools, sandboxPolicy, shellToolset, ToolgateError } from '../ts/src/index.js';
import { runToolgate } from './helpers/cli.js';
import { CALL, refusalOf } from './helpers/commands.js';
import { type AttackFixture, attackFixture } from './helpers/sandbox.js';

let fx: AttackFixture;
beforeEach(() => {
  fx = attackFixture();
});

const env = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin' });

describe('a call over a limit says which', () => {
  it('processes: a fork loop cannot go past it (sh, perl)', async () => {
    const sandbox = { limits: { processes: 12 } };
    for (const args of [
      ['sh', '-c', 'for i in $(seq 60); do sleep 5 & done; wait'],
      ['perl', '-e', 'for (1..60) { my $p = fork(); die "fork: $!\\n" unless defined $p; if (!$p) { sleep 5; exit } } 1 while wait != -1'],
    ]) {
      const result = await exec({ command: args[0]!, args: args.slice(1), cwd: fx.work, env: env(), sandbox, timeoutMs: 30_000 });
      expect(result.limit, result.stderr).toBe('processes');
      expect(result.timedOut).toBe(false);
      expect(result.stderr).toContain('sandbox limit: processes (12)');
    }
  });

  it('tmpMb: the private TMPDIR and HOME fill up', async () => {
    for (const target of ['$TMPDIR/big', '$HOME/big']) {
      const result = await exec({ command: 'sh', args: ['-c', `head -c 8000000 /dev/zero > ${target}`], cwd: fx.work, env: env(), sandbox: { limits: { tmpMb: 2 } } });
      expect(result.exitCode, target).not.toBe(0);
      expect(result.limit).toBe('tmpMb');
      expect(result.stderr).toContain('raise sandbox.limits.tmpMb');
    }
  });

  it('fileSizeMb: a larger file in the work directory is cut at the limit (also from Node, which ignores SIGXFSZ)', async () => {
    for (const args of [
      ['dd', 'if=/dev/zero', 'of=big', 'bs=1M', 'count=3'],
      ['perl', '-e', 'open(my $f, ">", "big3") or die; print $f "0" x 3000000; close($f) or die "close: $!\\n"'],
    ]) {
      const result = await exec({ command: args[0]!, args: args.slice(1), cwd: fx.work, env: env(), sandbox: { limits: { fileSizeMb: 1 } } });
      expect(result.signal, result.stderr).toBe('SIGXFSZ');
      expect(result.limit).toBe('fileSizeMb');
    }
    // A program that ignores SIGXFSZ itself (Python does) gets its own error instead, and the
    // file stays within the limit.
    const python = await exec({ command: 'python3', args: ['-c', "open('big2', 'wb').write(b'0' * 3000000)"], cwd: fx.work, env: env(), sandbox: { limits: { fileSizeMb: 1 } } });
    expect(python.exitCode).toBe(1);
    expect(python.stderr).toContain('File too large');
    expect(statSync(join(fx.work, 'big2')).size).toBeLessThanOrEqual(1024 * 1024);
  });

  it('fileSizeMb: named when an orphan of the call writes past it (the init reaps it), not when a parent reaps its child', async () => {
    const sandbox = { limits: { fileSizeMb: 1 } };
    // The writer's parent (a subshell) exits at once, and the writer starts only once it is an
    // orphan (its parent changed), so the call's init reaps it; the script waits until it is
    // gone (`kill -0` fails once it is reaped) and exits 0 itself.
    // (`$1`: the subshell's pid, from a child's `$PPID`; `$2`: the writer.)
    writeFileSync(join(fx.work, 'orphan.sh'), 'while [ "$(cut -d" " -f4 /proc/$$/stat)" = "$1" ]; do sleep 0.01; done\neval "exec $2"\n');
    for (const writer of ['head -c 3000000 /dev/zero > big1', 'dd if=/dev/zero of=big2 bs=1M count=3 2>/dev/null', 'perl -e "print 0 x 3000000" > big3']) {
      const script = `(sh orphan.sh $(sh -c 'echo $PPID') '${writer}' & echo $! > pid); while kill -0 $(cat pid) 2>/dev/null; do sleep 0.01; done; echo done`;
      const result = await exec({ command: 'sh', args: ['-c', script], cwd: fx.work, env: env(), sandbox });
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toBe('done\n');
      expect(result.limit, writer).toBe('fileSizeMb');
      expect(result.stderr).toContain('sandbox limit: fileSizeMb (1)');
    }
    // A child its own shell waits for: the kernel tells only that shell (which says so on
    // stderr); the call's result cannot name the limit (docs/sandbox.md, Limits).
    const waited = await exec({ command: 'sh', args: ['-c', 'head -c 3000000 /dev/zero > big4; echo after'], cwd: fx.work, env: env(), sandbox });
    expect(waited.stdout).toBe('after\n');
    expect(statSync(join(fx.work, 'big4')).size).toBe(1024 * 1024);
    expect(waited.limit).toBeNull();
  });

  it('cpuSeconds: a busy loop ends', async () => {
    const result = await exec({ command: 'sh', args: ['-c', 'while :; do :; done'], cwd: fx.work, env: env(), sandbox: { limits: { cpuSeconds: 1 } }, timeoutMs: 30_000 });
    expect(result.timedOut).toBe(false);
    expect(result.limit).toBe('cpuSeconds');
  });

  it('through shell and cli_execute, the model reads which limit', async () => {
    const shell = shellToolset({ workDir: fx.work, default: 'preApproved', sandbox: { limits: { fileSizeMb: 1 } } });
    const viaShell = (await shell.execute!({ command: `perl -e 'open(F, ">big"); print F "0" x 3000000; close(F)'` }, CALL)) as CommandResult;
    expect(viaShell.stderr).toContain('sandbox limit: fileSizeMb (1)');
    const sandbox = { limits: { processes: 8 } };
    const cli = cliExecuteTool({ workDir: fx.work, allowedBinaries: ['perl'], approval: { default: 'preApproved' }, sandbox });
    const viaCli = (await cli.execute!({ binary: 'perl', args: ['-e', 'for (1..40) { fork() or do { sleep 1; exit } } 1 while wait != -1'] }, CALL)) as CommandResult;
    expect(viaCli.stderr).toContain('sandbox limit: processes (8)');
  });

  it('through an executable tool: a run that succeeds says which limit, one that fails names it in TOOL_FAILED', async () => {
    const tools = join(fx.base, 'tools');
    mkdirSync(tools);
    // Forks until it cannot (perl's fork returns undef at the limit), then ends as `$1` says.
    const forker = (name: string, ending: string) => {
      const path = join(tools, name);
      writeFileSync(
        path,
        [
          '#!/bin/sh',
          `if [ "$1" = description ]; then echo '{"name": "${name}", "description": "Forks", "input_schema": {"type": "object"}}'; exit 0; fi`,
          `perl -e 'for (1..40) { my $p = fork(); last unless defined $p; if (!$p) { sleep 2; exit } } 1 while wait != -1'`,
          ending,
          '',
        ].join('\n'),
      );
      chmodSync(path, 0o755);
    };
    forker('forks_ok', `echo '{"done": true}'`);
    forker('forks_fail', 'echo gave up >&2; exit 3');
    const loaded = await executableTools({ dirs: [tools], workDir: fx.work, cacheDir: join(fx.base, 'cache'), approval: { default: 'preApproved' }, sandbox: { limits: { processes: 8 } } });
    const call = (name: string) => {
      const found = loaded.find((t) => t.name === `custom_tool_${name}`)!;
      return (found.execute as (input: unknown, options: ToolExecutionOptions) => Promise<unknown>)({}, { toolCallId: 'c', messages: [] });
    };
    expect(await call('forks_ok')).toMatchObject({ result: { done: true }, limit: 'processes' });
    const failed = await call('forks_fail').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(ToolgateError);
    expect((failed as ToolgateError).code).toBe('TOOL_FAILED');
    expect((failed as ToolgateError).message).toContain('gave up');
    expect((failed as ToolgateError).message).toContain('sandbox limit: processes (8)');
    // Within the limits the result has no `limit`.
    const calm = await executableTools({ dirs: [tools], workDir: fx.work, cacheDir: join(fx.base, 'cache2'), approval: { default: 'preApproved' }, sandbox: { limits: { processes: 100 } } });
    const quiet = await (calm.find((t) => t.name === 'custom_tool_forks_ok')!.execute as (input: unknown, options: ToolExecutionOptions) => Promise<unknown>)({}, { toolCallId: 'c', messages: [] });
    expect(quiet).toMatchObject({ result: { done: true } });
    expect(quiet).not.toHaveProperty('limit');
  });

  it('within the limits a call says nothing about them', async () => {
    const result = await exec({ command: 'sh', args: ['-c', 'echo ok > f && sleep 0 & wait'], cwd: fx.work, env: env(), sandbox: { limits: { processes: 12, tmpMb: 4, fileSizeMb: 1 } } });
    expect(result).toMatchObject({ exitCode: 0, limit: null, sandboxed: true });
    expect(result.stderr).not.toContain('sandbox limit');
  });
});

describe('the limits option', () => {
  it('is read strictly: whole numbers from 1, the JavaScript spelling', async () => {
    for (const limits of [{ processes: 0 }, { memoryMb: -1 }, { tmpMb: 1.5 }, { procs: 1 }, { memory_mb: 64 }, { cpuSeconds: '5' }]) {
      const error = await refusalOf(() => exec({ command: 'true', cwd: fx.work, sandbox: { limits: limits as never } }));
      expect(['INVALID_INPUT', 'CONFIG_INVALID'], JSON.stringify(limits)).toContain(error.code);
      expect(error.message).toContain('sandbox.limits');
    }
    expect(() => shellToolset({ workDir: fx.work, sandbox: { limits: { processes: 0 } } })).toThrow(/sandbox\.limits\.processes/);
  });

  it('shows the effective values, defaults for the rest', () => {
    const policy = sandboxPolicy({ workDir: fx.work, sandbox: { limits: { processes: 64, tmpMb: 32 } } });
    const byName = Object.fromEntries(policy.limits.map(({ name, value }) => [name, value ?? null]));
    expect(byName).toEqual({ processes: 64, memoryMb: 4096, tmpMb: 32, cpuSeconds: null, fileSizeMb: 1024 });
  });

  it('is a worker file key (snake_case in YAML) shown by toolgate check --sandbox', () => {
    const worker = join(fx.base, 'w.yaml');
    writeFileSync(worker, 'name: w\nsandbox: { root: ./work, limits: { processes: 40, memory_mb: 256, cpu_seconds: 9 } }\n');
    const run = runToolgate(['check', '--sandbox', worker]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/limits +processes 40, memoryMb 256, tmpMb 512, cpuSeconds 9, fileSizeMb 1024/);
    writeFileSync(worker, 'name: w\nsandbox: { root: ./work, limits: { memoryMb: 256 } }\n');
    const bad = runToolgate(['check', '--sandbox', worker]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('memoryMb');
  });
});
