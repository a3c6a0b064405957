/**
 * The kernel sandbox's cost, in the same run: a sandboxed `/bin/true` through `exec` (the view,
 * Landlock, seccomp, PID/IPC/network namespaces, limits) against an unsandboxed `exec`, against
 * a bare Rust `std::process::Command` spawn (the floor, crates/toolgate-core/examples/
 * spawn_baseline.rs), against a sandboxed call with `network: true` (no network namespace),
 * against `bwrap` with the equivalent policy (`--ro-bind / / --bind WORK
 * WORK --unshare-net --unshare-pid --die-with-parent`) and against Anthropic's sandbox-runtime
 * `srt` where it runs here (all started through `exec`, so that only the sandbox differs). Then
 * the policy's share of a sandboxed `cli_execute` call. Sequential calls, interleaved call by
 * call so that drift on a shared machine hits every contender alike; each figure is the median
 * of its calls (a busy machine's spikes move a median less than a total).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cliExecuteTool, exec, type ExecOptions } from '../../ts/src/index.js';
import { native } from '../../ts/src/native/binding.js';
import { packageDir, REPO_ROOT } from '../helpers/checkout.js';
import { buildRustBaseline, rustBaselineMs } from './exec.bench.js';
import { printComparison, printLine, timeMs } from './lib/report.js';

const CALLS = Number(process.env.TOOLGATE_BENCH_CALLS ?? 1000);
const ROUNDS = 5;
const POLICY_CALLS = 20_000;
const FLOOR_BATCH = 50;
const HYPERFINE_RUNS = Number(process.env.TOOLGATE_BENCH_CALLS ?? 1000);
const LAYER_ROUNDS = Number(process.env.TOOLGATE_BENCH_CALLS ?? 1000);
const PROGRAM = '/bin/true';
const CALL = { toolCallId: 'bench', messages: [] };

/** A program on PATH, or `null`. */
function which(program: string): string | null {
  try {
    return execFileSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/**
 * Where `srt` is: the `srt` program of @anthropic-ai/sandbox-runtime as Node resolves it from this
 * checkout (`npm install --no-save @anthropic-ai/sandbox-runtime`), else `srt` on PATH.
 */
function findSrt(): string | null {
  try {
    const dir = packageDir('@anthropic-ai/sandbox-runtime');
    const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
    const program = typeof bin === 'string' ? bin : bin?.srt;
    if (program && existsSync(join(dir, program))) return join(dir, program);
  } catch {
    // Not installed below the checkout: look on PATH.
  }
  return which('srt');
}

/** Why a contender cannot run here, or `null` when one call of it succeeds. */
async function unusable(options: ExecOptions): Promise<string | null> {
  try {
    const result = await exec({ ...options, timeoutMs: 30_000 });
    return result.exitCode === 0 ? null : `exit ${result.exitCode}: ${(result.stderr || result.stdout).trim().split('\n')[0]}`;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A word for hyperfine's command line (it splits commands like a shell). */
const quote = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`);

/**
 * bwrap arguments that build a view like toolgate's: the runtime read-only (the top-level
 * symlinks of a merged /usr recreated), the work directory read-write, its own /proc, /dev and
 * /tmp, every namespace, a new session, no capabilities.
 */
function bwrapViewArgs(work: string): string[] {
  const args = ['--unshare-all', '--new-session', '--die-with-parent', '--cap-drop', 'ALL', '--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib64']) {
    if (!existsSync(top)) continue;
    if (lstatSync(top).isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else args.push('--ro-bind', top, top);
  }
  return [...args, '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--bind', work, work, '--chdir', work, PROGRAM];
}

/** The launcher's words without `--parent PID` (it watches its parent: here that is hyperfine). */
function withoutParent(args: readonly string[]): string[] {
  const at = args.indexOf('--parent');
  return at < 0 ? [...args] : [...args.slice(0, at), ...args.slice(at + 2)];
}

/**
 * The cost of building a view per call, without toolgate's server or Node in the way: the
 * one-shot launcher (`toolgate sandbox`'s, which builds the call's view, namespaces, limits,
 * Landlock and seccomp in its own process) against bwrap building a comparable one, and the
 * bare program, timed by hyperfine (Debian packages hyperfine, bubblewrap).
 */
async function oneShotViewAgainstBwrap(work: string, bwrap: string | null): Promise<void> {
  const hyperfine = which('hyperfine');
  if (!hyperfine || !bwrap) {
    printLine('  hyperfine or bwrap is not installed (Debian packages hyperfine, bubblewrap): the one-shot view comparison is skipped');
    return;
  }
  const launch = new native.SandboxLaunch({ workDir: work }, PROGRAM, []);
  const out = join(mkdtempSync(join(tmpdir(), 'toolgate-bench-hf-')), 'hyperfine.json');
  try {
    const contenders: [string, string[]][] = [
      ['bare /bin/true (hyperfine -N)', [PROGRAM]],
      ['toolgate-sandbox one-shot (a view per call)', [launch.file, ...withoutParent(launch.args)]],
      ['bwrap, a comparable view', [bwrap, ...bwrapViewArgs(work)]],
      ['bwrap --ro-bind / / (the exec contender)', [bwrap, '--ro-bind', '/', '/', '--bind', work, work, '--unshare-net', '--unshare-pid', '--die-with-parent', PROGRAM]],
    ];
    const args = ['-N', '--style', 'none', '--warmup', '30', '--runs', String(HYPERFINE_RUNS), '--export-json', out];
    for (const [name, command] of contenders) args.push('-n', name, command.map(quote).join(' '));
    execFileSync(hyperfine, args, { cwd: launch.cwd, env: { ...launch.env }, stdio: ['ignore', 'ignore', 'inherit'] });
    const { results } = JSON.parse(readFileSync(out, 'utf8')) as { results: { command: string; median: number }[] };
    const ms = (name: string) => 1000 * results.find((result) => result.command === name)!.median;
    printComparison(
      `one process per call, no Node in the way (hyperfine, ${HYPERFINE_RUNS} runs each, medians)`,
      contenders.map(([name]) => ({ name, value: ms(name), unit: 'ms/call' })),
      'toolgate-sandbox one-shot (a view per call)',
    );
    const ours = ms(contenders[1]![0]);
    printLine(`  bwrap (comparable view) / toolgate one-shot: ${(ms(contenders[2]![0]) / ours).toFixed(2)}x`);
    printLine(`  toolgate one-shot - bare program:            ${(ours - ms(contenders[0]![0])).toFixed(3)} ms/call (building the view, namespaces, limits, Landlock, seccomp)`);
  } finally {
    launch.finish();
    rmSync(join(out, '..'), { recursive: true, force: true });
  }
}

/**
 * What each layer of a sandboxed call costs (the mount view, the IPC namespace, the network
 * namespace, the limits): the Rust example crates/toolgate-core/examples/sandbox_bench.rs in its
 * `layers` mode, through the launcher server as every call goes, with the launcher this
 * checkout's addon uses. It leaves layers out with `Sandbox::without_layers`, which exists for
 * measuring only (no option of toolgate's reaches it).
 */
function perLayerCost(): void {
  const launcher = join(REPO_ROOT, 'native', 'toolgate-sandbox');
  if (!existsSync(launcher)) {
    printLine('  native/toolgate-sandbox is missing (npm run build:native): the per-layer figures are skipped');
    return;
  }
  execFileSync('cargo', ['build', '--quiet', '--release', '-p', 'toolgate-core', '--example', 'sandbox_bench'], { stdio: 'inherit', cwd: REPO_ROOT });
  const target = resolve(REPO_ROOT, process.env.CARGO_TARGET_DIR ?? 'target');
  const out = execFileSync(join(target, 'release/examples/sandbox_bench'), [String(LAYER_ROUNDS), 'layers'], {
    encoding: 'utf8',
    env: { ...process.env, TOOLGATE_SANDBOX_LAUNCHER: launcher },
  });
  printLine('');
  for (const line of out.trimEnd().split('\n')) printLine(line);
}

export async function benchSandbox(): Promise<void> {
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-bench-')));
  // The private HOME/TMPDIR of every sandboxed call is made there too; on a disk mounted with
  // `discard` its mkdir/rmdir dominate a call (docs/sandbox.md): compare with TMPDIR on a tmpfs.
  printLine(`  work directory under ${tmpdir()}; private call directories in $TMPDIR, else /tmp, or /dev/shm when only that is a tmpfs`);
  try {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const contenders: { name: string; options: ExecOptions }[] = [
      { name: 'exec, unsandboxed (baseline)', options: { command: PROGRAM, cwd: work, env } },
      { name: 'exec, sandboxed', options: { command: PROGRAM, cwd: work, env, sandbox: 'enforce' } },
      { name: 'exec, sandboxed, network: true (no netns)', options: { command: PROGRAM, cwd: work, env, sandbox: { network: true } } },
    ];
    const FIRST_OTHER = contenders.length;
    const bwrap = which('bwrap');
    const bwrapArgs = ['--ro-bind', '/', '/', '--bind', work, work, '--unshare-net', '--unshare-pid', '--die-with-parent', PROGRAM];
    if (bwrap) contenders.push({ name: 'exec of bwrap', options: { command: bwrap, args: bwrapArgs, cwd: work, env } });
    else printLine('  bwrap is not installed (Debian package bubblewrap): its comparison is skipped');
    const srt = findSrt();
    if (srt) {
      const srtOptions = { command: process.execPath, args: [srt, PROGRAM], cwd: work, env: { ...env, HOME: work } };
      const why = await unusable(srtOptions);
      if (why === null) contenders.push({ name: 'exec of srt (sandbox-runtime)', options: srtOptions });
      else printLine(`  srt (@anthropic-ai/sandbox-runtime) does not run here (${why}): its comparison is skipped`);
    } else {
      printLine('  srt is not installed (npm install --no-save @anthropic-ai/sandbox-runtime): its comparison is skipped');
    }
    for (const contender of contenders) {
      const why = await unusable(contender.options);
      if (why !== null) throw new Error(`${contender.name} fails: ${why}`);
      for (let i = 0; i < 30; i++) await exec(contender.options);
    }

    // The floor: a bare Rust spawn loop, run in batches between the interleaved calls (its
    // figure is the median of the batches' mean per call).
    const rust = buildRustBaseline();
    const samples: number[][] = contenders.map(() => []);
    const floor: number[] = [];
    for (let call = 0; call < CALLS; call++) {
      for (const [index, contender] of contenders.entries()) samples[index]!.push(await timeMs(() => exec(contender.options)));
      if (call % FLOOR_BATCH === FLOOR_BATCH - 1) floor.push(rustBaselineMs(rust, FLOOR_BATCH, 1, PROGRAM) / FLOOR_BATCH);
    }
    const perCall = samples.map(median);
    const floorMs = median(floor);
    printComparison(
      `${PROGRAM}, ${CALLS} sequential calls each (interleaved call by call, medians)`,
      [
        ...contenders.map((contender, index) => ({ name: contender.name, value: perCall[index]!, unit: 'ms/call' })),
        { name: 'bare Rust Command spawn (the floor)', value: floorMs, unit: 'ms/call' },
      ],
      'exec, sandboxed',
    );
    const [open, sandboxed, noNetns, ...others] = perCall;
    printLine(`  sandboxed / unsandboxed exec:      ${(sandboxed! / open!).toFixed(2)}x (target ≤ 1.5x)`);
    printLine(`  sandboxed / bare Rust spawn:       ${(sandboxed! / floorMs).toFixed(2)}x (target ≤ 1.6x)`);
    // Calls without network share their view's network namespace (made once with the view), so
    // this is the per-call difference between the two policies, not the cost of making one.
    printLine(`  network off - network: true:       ${(sandboxed! - noNetns!).toFixed(3)} ms/call`);
    for (const [index, value] of others.entries()) {
      printLine(`  ${contenders[index + FIRST_OTHER]!.name} / sandboxed exec: ${(value / sandboxed!).toFixed(2)}x${index === 0 && bwrap ? ' (target ≥ 4x)' : ''}`);
    }

    await oneShotViewAgainstBwrap(work, bwrap);
    perLayerCost();

    // The policy's share of a sandboxed cli_execute call: every check and the request with its
    // sandbox (the native prepare, no process), against the whole call.
    const cli = cliExecuteTool({ workDir: work, allowedBinaries: ['true'], approval: { default: 'preApproved' } });
    const viaCli = () => cli.execute!({ binary: 'true', args: ['--flag', 'a/b.txt'] }, CALL);
    for (let i = 0; i < 30; i++) await viaCli();
    const cliSamples: number[] = [];
    for (let call = 0; call < CALLS; call++) cliSamples.push(await timeMs(viaCli));
    const cliMs = median(cliSamples);
    const policy = new native.CliExecutePolicy({ workDir: work, allowedBinaries: ['true'] });
    let policyMs = Number.POSITIVE_INFINITY;
    for (let round = 0; round < ROUNDS; round++) {
      policyMs = Math.min(policyMs, await timeMs(() => {
        for (let call = 0; call < POLICY_CALLS; call++) policy.prepare('true', ['--flag', 'a/b.txt']);
      }) / POLICY_CALLS);
    }
    printComparison(
      `a sandboxed cli_execute call (median of ${CALLS}) and its policy alone (best of ${ROUNDS} rounds of ${POLICY_CALLS})`,
      [
        { name: 'cli_execute call, sandboxed', value: cliMs * 1000, unit: 'µs/call' },
        { name: 'policy alone (checks + request)', value: policyMs * 1000, unit: 'µs/call' },
      ],
      'cli_execute call, sandboxed',
    );
    printLine(`  policy share of a sandboxed cli_execute call: ${((100 * policyMs) / cliMs).toFixed(2)}% (target < 5%)`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export const benchmarks = { sandbox: benchSandbox };
