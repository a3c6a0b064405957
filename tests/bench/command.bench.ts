/**
 * cli_execute and shell call overhead vs a bare `exec` of the same program with the same
 * arguments, in the same run, sequential. Also the cost of the policy alone (every check, no
 * process: the native `prepare`), printed as its share of a cli_execute call.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliExecuteTool, exec, shellToolset } from '../../ts/src/index.js';
import { native } from '../../ts/src/native/binding.js';
import { printComparison, printLine, timeMs } from './lib/report.js';

const CALLS = 1000;
const POLICY_CALLS = 20_000;
const ROUNDS = 5;
const CALL = { toolCallId: 'bench', messages: [] };
/** Arguments that exercise every check: flags with values, paths, a symlink lookup, a git ref. */
const ARGS = ['log', '--format=%h %s', 'src/a/b/file.ts', '--output=build/out.txt', './README.md', 'origin/main', 'HEAD~1', 'main'];

export async function benchCommand(): Promise<void> {
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-bench-')));
  try {
    mkdirSync(join(work, 'src/a/b'), { recursive: true });
    mkdirSync(join(work, 'build'));
    writeFileSync(join(work, 'src/a/b/file.ts'), '');
    writeFileSync(join(work, 'README.md'), '');

    const guardrails = {
      denyCommands: [{ pattern: '^git push.*--force' }],
      denyOutput: [{ pattern: 'sk-[A-Za-z0-9]{20,}', action: 'redact' as const }],
    };
    const cli = cliExecuteTool({ workDir: work, allowedBinaries: ['true', 'git'], guardrails, approval: { default: 'preApproved' } });
    const shell = shellToolset({ workDir: work, default: 'preApproved' });
    const program = cli.availability().find((binary) => binary.name === 'true')?.path;
    if (!program) throw new Error('true is not on PATH');
    const shellCommand = ['true', ...ARGS.map((arg) => `'${arg}'`)].join(' ');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work };

    const viaCli = async () => cli.execute!({ binary: 'true', args: ARGS }, CALL);
    const viaShell = async () => shell.execute!({ command: shellCommand }, CALL);
    const bare = () => exec({ command: program, args: ARGS, cwd: work, env });
    for (const warm of [viaCli, viaShell, bare]) for (let i = 0; i < 100; i++) await warm();

    // The three contenders take turns call by call, so drift on a shared machine hits all alike;
    // each keeps its best round.
    let cliMs = Number.POSITIVE_INFINITY;
    let shellMs = Number.POSITIVE_INFINITY;
    let bareMs = Number.POSITIVE_INFINITY;
    for (let round = 0; round < ROUNDS; round++) {
      let cliTotal = 0;
      let shellTotal = 0;
      let bareTotal = 0;
      for (let i = 0; i < CALLS; i++) {
        cliTotal += await timeMs(viaCli);
        shellTotal += await timeMs(viaShell);
        bareTotal += await timeMs(bare);
      }
      cliMs = Math.min(cliMs, cliTotal);
      shellMs = Math.min(shellMs, shellTotal);
      bareMs = Math.min(bareMs, bareTotal);
    }
    printComparison(
      `true with ${ARGS.length} arguments, ${CALLS} sequential calls (interleaved call by call, best of ${ROUNDS} rounds)`,
      [
        { name: 'exec (baseline)', value: bareMs / CALLS, unit: 'ms/call' },
        { name: 'cli_execute', value: cliMs / CALLS, unit: 'ms/call' },
        { name: 'shell', value: shellMs / CALLS, unit: 'ms/call' },
      ],
      'exec (baseline)',
    );

    // The policy alone: the native checks that run before the process starts.
    const cliPolicy = new native.CliExecutePolicy({ workDir: work, allowedBinaries: ['true', 'git'], guardrails });
    const shellPolicy = new native.ShellPolicy({ cwd: work, default: 'preApproved' });
    const measure = async (one: () => unknown) => {
      let best = Number.POSITIVE_INFINITY;
      for (let round = 0; round < ROUNDS; round++) {
        best = Math.min(best, await timeMs(() => {
          for (let i = 0; i < POLICY_CALLS; i++) one();
        }));
      }
      return (best * 1000) / POLICY_CALLS;
    };
    const cliPolicyUs = await measure(() => cliPolicy.prepare('true', ARGS));
    const shellPolicyUs = await measure(() => shellPolicy.prepare(shellCommand));
    const approvalUs = await measure(() => shellPolicy.needsApproval(shellCommand));
    printComparison(
      `policy alone (every check, no process), ${POLICY_CALLS} calls`,
      [
        { name: 'cli_execute policy', value: cliPolicyUs, unit: 'µs/call' },
        { name: 'shell policy', value: shellPolicyUs, unit: 'µs/call' },
        { name: 'shell needsApproval', value: approvalUs, unit: 'µs/call' },
      ],
      'cli_execute policy',
    );
    const cliCallUs = (cliMs * 1000) / CALLS;
    const shellCallUs = (shellMs * 1000) / CALLS;
    printLine(`  policy share of a cli_execute call: ${((100 * cliPolicyUs) / cliCallUs).toFixed(2)}% (${cliPolicyUs.toFixed(1)} µs of ${cliCallUs.toFixed(0)} µs)`);
    printLine(`  policy share of a shell call:       ${((100 * shellPolicyUs) / shellCallUs).toFixed(2)}% (${shellPolicyUs.toFixed(1)} µs of ${shellCallUs.toFixed(0)} µs)`);
    printLine(`  cli_execute overhead over exec:     ${(((cliMs - bareMs) / bareMs) * 100).toFixed(2)}% (${(((cliMs - bareMs) * 1000) / CALLS).toFixed(1)} µs/call)`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export const benchmarks = { command: benchCommand };
