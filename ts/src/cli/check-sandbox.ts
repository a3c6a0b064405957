import { parseArgs } from 'node:util';
import { native } from '../native/binding.js';
import { awaitNative, ToolgateError } from '../native/errors.js';
import { sandboxPolicy, sandboxSupport, type SandboxSummary, type SandboxSupport } from '../native/sandbox.js';
import { terminalJson, terminalText } from '../native/terminal-text.js';

export const SANDBOX_HELP = `Usage: toolgate check --sandbox [options] [worker-file]

Shows what this kernel offers toolgate's sandbox (Landlock ABI, seccomp, user and PID
namespaces, the view of the file system, network namespaces, how limits are enforced, the
launcher) and the effective policy: for the work directory with the options below, and,
given a worker file, for each worker of its graph and each of their process toolsets (shell,
cli_execute, executables), with every path granted and why, and each call's limits.

Options:
  --work-dir <dir>   Work directory (default: the current directory; for a worker file it
                     replaces the worker's sandbox root)
  --network          Show the policy with network allowed
  --allow-host <H[:P]>
                     ... with the network limited to these hosts (repeatable)
  --deny-host <H[:P]>
                     ... and these hosts refused (repeatable)
  --read <path>      ... with <path> readable too (repeatable)
  --write <path>     ... with <path> writable too (repeatable)
  --json             Print everything as JSON
  -h, --help         Show this help

Exit status: 0 when the default sandbox (enforce) works here, 1 when this kernel or install
cannot enforce it, 2 for a usage or configuration error.
`;

interface WorkerReport {
  name: string;
  path: string;
  sandbox: SandboxSummary;
  toolsets: { toolset: string; sandbox: SandboxSummary }[];
}

/** `toolgate check --sandbox`: kernel support and effective policies. */
export async function runSandboxCheck(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv.filter((arg) => arg !== '--sandbox'),
      allowPositionals: true,
      options: {
        'work-dir': { type: 'string' },
        network: { type: 'boolean', default: false },
        'allow-host': { type: 'string', multiple: true, default: [] },
        'deny-host': { type: 'string', multiple: true, default: [] },
        read: { type: 'string', multiple: true, default: [] },
        write: { type: 'string', multiple: true, default: [] },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`toolgate check: ${(error as Error).message}\n\n${SANDBOX_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(SANDBOX_HELP);
    return 0;
  }
  if (positionals.length > 1) {
    process.stderr.write(`toolgate check: give at most one worker file\n\n${SANDBOX_HELP}`);
    return 2;
  }
  let support: SandboxSupport;
  let policy: SandboxSummary;
  let workers: WorkerReport[] = [];
  try {
    support = sandboxSupport();
    policy = sandboxPolicy({
      ...(values['work-dir'] === undefined ? {} : { workDir: values['work-dir'] }),
      sandbox: {
        network:
          values['allow-host'].length > 0 || values['deny-host'].length > 0 ? { allow: values['allow-host'], deny: values['deny-host'] } : values.network,
        read: values.read,
        write: values.write,
      },
    });
    const [workerFile] = positionals;
    if (workerFile !== undefined) workers = await workerReports(workerFile, values['work-dir']);
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    process.stderr.write(`toolgate check: ${error.code}: ${terminalText(error.message, { layout: true })}\n`);
    return 2;
  }
  if (values.json) {
    process.stdout.write(`${terminalJson({ support, policy, workers })}\n`);
  } else {
    process.stdout.write(terminalText(formatReport(support, policy, workers), { layout: true }));
  }
  return support.missingForEnforce.length === 0 ? 0 : 1;
}

/** Every worker of the file's graph with its sandbox and its toolsets' sandboxes. */
async function workerReports(path: string, workDir: string | undefined): Promise<WorkerReport[]> {
  const options = native.checkLoadWorkerOptions(workDir === undefined ? {} : { workDir });
  const plan = await awaitNative(native.planWorker(path, options.workDir, options.readonly));
  return plan.workers().map((info) => ({
    name: info.name,
    path: info.path,
    sandbox: info.sandbox,
    toolsets: info.toolsetSandboxes,
  }));
}

function yesNo(value: boolean | null | undefined): string {
  if (value === null || value === undefined) return 'unknown (the launcher could not be asked)';
  return value ? 'yes' : 'no';
}

/** The report as aligned lines for a terminal. */
export function formatReport(support: SandboxSupport, policy: SandboxSummary, workers: readonly WorkerReport[]): string {
  const lines: string[] = ['kernel'];
  const row = (label: string, value: string, indent = '  ') => lines.push(`${indent}${label.padEnd(17)} ${value}`);
  row('landlock', support.landlockAbi > 0 ? `ABI ${support.landlockAbi}` : 'no');
  row('seccomp', yesNo(support.seccomp));
  row('user namespaces', yesNo(support.userNamespaces));
  row('pid namespace', yesNo(support.pidNamespace));
  row(
    'view',
    support.view === false
      ? `no: ${support.viewError ?? 'the launcher cannot build one here'}`
      : support.view
        ? `yes (a mount namespace per call; /proc ${support.freshProc ? 'its own' : "the host's"})`
        : yesNo(support.view),
  );
  row('net namespace', yesNo(support.networkNamespace));
  row('limits by', support.limits ?? 'unknown (the launcher could not be asked)');
  for (const line of support.withoutView) row('without a view', line);
  row('launcher', support.launcher ?? 'not found');
  row(
    'enforce',
    support.missingForEnforce.length === 0 ? 'available' : `unavailable: missing ${support.missingForEnforce.join('; ')}`,
  );
  for (const degraded of support.degraded) row('degraded', degraded);
  if (support.versionManagers.length > 0) row('version managers', `${support.versionManagers.join(', ')} (readable: their shims are on PATH)`);
  lines.push('', 'policy');
  describePolicy(policy, row);
  for (const worker of workers) {
    lines.push('', `worker ${worker.name} (${worker.path})`);
    describePolicy(worker.sandbox, row);
    for (const { toolset, sandbox } of worker.toolsets) {
      // A toolset's programs add grants of their own (executable tools, MCP servers): shown
      // after "the worker sandbox" when nothing else differs.
      const extra = sandbox.grants.filter((grant) => !worker.sandbox.grants.some((known) => known.path === grant.path && known.access === grant.access));
      if (JSON.stringify({ ...sandbox, grants: worker.sandbox.grants }) === JSON.stringify(worker.sandbox)) {
        row(toolset, 'the worker sandbox');
        for (const grant of extra) row(`    ${grant.access}`, `${grant.path}: ${grant.why}`);
      } else {
        lines.push(`  ${toolset}`);
        describePolicy(sandbox, (label, value) => row(label, value, '    '));
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

function describePolicy(policy: SandboxSummary, row: (label: string, value: string) => void): void {
  row('mode', policy.mode);
  row('network', policy.mode === 'off' ? 'unconfined' : policy.networkPolicy);
  row('work dir', `${policy.workDir} (${policy.readonly ? 'read-only' : 'read-write'})`);
  row('read', ['the system runtime (see docs/sandbox.md)', ...policy.read].join(', '));
  row('write', ['a private HOME/TMPDIR per call', ...policy.write].join(', '));
  if (policy.mode === 'off') return;
  row('limits', policy.limits.map(({ name, value }) => `${name} ${value ?? 'unlimited'}`).join(', '));
  for (const grant of policy.grants) row(`  ${grant.access}`, `${grant.path}: ${grant.why}`);
}
