/**
 * Issue 12's attack classes, run through both `cli_execute` and `shell` with the default
 * sandbox. The allowlist and the rules permit every program here, and the argument checks let
 * every call through: only the kernel stops them. Each attack is first run with
 * `sandbox: false` and must succeed there, so that every test can fail.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { processesWith, sleepMarker, zombieChildren } from './helpers/processes.js';
import {
  type AttackCall,
  attackFixture,
  type AttackFixture,
  attackTools,
  describeCall,
  git,
  holdSecretInEnvironment,
  runAttack,
} from './helpers/sandbox.js';

let fx: AttackFixture;
beforeEach(() => {
  fx = attackFixture();
});

/** Runs `call` unsandboxed (where it must leak) and sandboxed (where it must not). */
async function expectKernelStops(call: AttackCall, leaked: (output: string) => boolean, reset: () => void = () => {}) {
  reset();
  const open = await runAttack(attackTools(fx.work, false), call);
  expect(leaked(open.stdout + open.stderr), `${describeCall(call)} must work without the sandbox: ${JSON.stringify(open)}`).toBe(true);
  reset();
  const confined = await runAttack(attackTools(fx.work), call);
  expect(leaked(confined.stdout + confined.stderr), `${describeCall(call)} got through the sandbox: ${JSON.stringify(confined)}`).toBe(false);
  reset();
}

describe('the sandbox keeps outside files unread', () => {
  const leaks = (output: string) => output.includes(fx.secret);
  const attacks: [string, () => AttackCall[]][] = [
    ['find -L … -exec cat', () => [
      { binary: 'find', args: ['-L', '.', '-name', 'secret.txt', '-exec', 'cat', '{}', ';'] },
      { command: 'find -L . -name secret.txt -exec cat {} +' },
    ]],
    ['awk getline < "/outside"', () => [
      { binary: 'awk', args: [`BEGIN{while((getline l < "${fx.secretFile}")>0) print l}`] },
      { command: `awk 'BEGIN{while((getline l < "${fx.secretFile}")>0) print l}'` },
    ]],
    ['awk system()', () => [
      { binary: 'awk', args: [`BEGIN{system("cat ${fx.secretFile}")}`] },
      { command: `awk 'BEGIN{system("cat ${fx.secretFile}")}'` },
    ]],
    ['sed r', () => [
      { binary: 'sed', args: ['-n', `1r ${fx.secretFile}`, 'x.txt'] },
      { command: `sed -n '1r ${fx.secretFile}' x.txt` },
    ]],
    ['sed e', () => [
      { binary: 'sed', args: ['-n', `1e cat ${fx.secretFile}`, 'x.txt'] },
      { command: `sed -n '1e cat ${fx.secretFile}' x.txt` },
    ]],
    ['sort --files0-from reading its list from stdin or a file', () => {
      writeFileSync(join(fx.work, 'list0'), `${fx.secretFile}\0`);
      return [
        { binary: 'sort', args: ['--files0-from=-'], stdin: `${fx.secretFile}\0` },
        { command: 'sort --files0-from=list0' },
      ];
    }],
    ['tar -T reading its member list from stdin or a file', () => {
      writeFileSync(join(fx.work, 'list'), `${fx.secretFile}\n`);
      return [
        { binary: 'tar', args: ['-cf', '-', '-T', '-'], stdin: `${fx.secretFile}\n` },
        { command: 'tar -cf - -T list' },
      ];
    }],
    ['grep -R following a symlink out', () => [
      { binary: 'grep', args: ['-R', 'SECRET', '.'] },
      { command: 'grep -R SECRET .' },
    ]],
    ['perl -e', () => [
      { binary: 'perl', args: ['-e', `open F, "<", "${fx.secretFile}"; print <F>`] },
      { command: `perl -e 'open F, "<", "${fx.secretFile}"; print <F>'` },
    ]],
    ['a .git file pointing git at an outside repository', () => {
      const repo = join(fx.outside, 'repo');
      mkdirSync(repo);
      git(repo, 'init', '-q');
      git(repo, 'commit', '-q', '--allow-empty', '-m', fx.secret);
      writeFileSync(join(fx.work, '.git'), `gitdir: ${repo}/.git\n`);
      return [{ binary: 'git', args: ['log', '--format=%s'] }, { command: 'git log --format=%s' }];
    }],
  ];
  it.each(attacks)('%s', async (_title, calls) => {
    for (const call of calls()) await expectKernelStops(call, leaks);
  });

  it("core.fsmonitor in a repository's config", async () => {
    const repo = join(fx.work, 'repo');
    mkdirSync(repo);
    git(repo, 'init', '-q');
    writeFileSync(join(repo, 'a'), 'a\n');
    git(repo, 'add', 'a');
    git(repo, 'commit', '-q', '-m', 'init');
    git(repo, 'config', 'core.fsmonitor', `cat ${fx.secretFile} > ../stolen.txt; false`);
    const stolen = join(fx.work, 'stolen.txt');
    const leaked = () => existsSync(stolen) && readFileSync(stolen, 'utf8').includes(fx.secret);
    const reset = () => rmSync(stolen, { force: true });
    for (const call of [{ binary: 'git', args: ['-C', 'repo', 'status', '--short'] }, { command: 'git -C repo status --short' }]) {
      await expectKernelStops(call, leaked, reset);
    }
  });
});

describe('the sandbox keeps everything outside unwritten', () => {
  const target = () => join(fx.outside, 'pwned');
  const written = () => existsSync(target());
  const reset = () => rmSync(target(), { force: true });
  const attacks: [string, () => AttackCall[]][] = [
    ['sed w', () => [
      { binary: 'sed', args: ['-n', `1w ${target()}`, 'x.txt'] },
      { command: `sed -n '1w ${target()}' x.txt` },
    ]],
    ['perl open >', () => [
      { binary: 'perl', args: ['-e', `open F, ">", "${target()}"; print F 1`] },
      { command: `perl -e 'open F, ">", "${target()}"; print F 1'` },
    ]],
    ['awk print >', () => [
      { binary: 'awk', args: [`BEGIN{print 1 > "${target()}"}`] },
      { command: `awk 'BEGIN{print 1 > "${target()}"}'` },
    ]],
    ['awk system("touch")', () => [
      { binary: 'awk', args: [`BEGIN{system("touch ${target()}")}`] },
      { command: `awk 'BEGIN{system("touch ${target()}")}'` },
    ]],
    ['tar -xP with an absolute member', () => {
      writeFileSync(target(), 'from the archive\n');
      execFileSync('tar', ['-cPf', join(fx.work, 'evil.tar'), target()]);
      return [{ binary: 'tar', args: ['-xPf', 'evil.tar'] }, { command: 'tar -xPf evil.tar' }];
    }],
    ['sed e running a command', () => [
      { binary: 'sed', args: ['-n', `1e touch ${target()}`, 'x.txt'] },
      { command: `sed -n '1e touch ${target()}' x.txt` },
    ]],
    ["git core.fsmonitor", () => {
      const repo = join(fx.work, 'repo');
      mkdirSync(repo);
      git(repo, 'init', '-q');
      git(repo, 'commit', '-q', '--allow-empty', '-m', 'init');
      git(repo, 'config', 'core.fsmonitor', `touch ${target()}; false`);
      return [{ binary: 'git', args: ['-C', 'repo', 'status'] }, { command: 'git -C repo status' }];
    }],
  ];
  it.each(attacks)('%s', async (_title, calls) => {
    for (const call of calls()) await expectKernelStops(call, written, reset);
  });
});

describe("the sandbox keeps the parent's environment unreadable", () => {
  it('of another process holding a secret variable: ps eww, /proc/<pid>/environ through awk and perl', async () => {
    const key = `sk-agent-${Math.random().toString(36).slice(2)}`;
    const holder = holdSecretInEnvironment('TOOLGATE_AGENT_KEY', key);
    try {
      const environ = `/proc/${holder.pid}/environ`;
      const calls: AttackCall[] = [
        { binary: 'ps', args: ['eww', '-p', String(holder.pid)] },
        { command: `ps eww -p ${holder.pid}` },
        { binary: 'awk', args: [`BEGIN{RS="\\0"; while((getline l < "${environ}")>0) print l}`] },
        { command: `awk 'BEGIN{RS="\\0"; while((getline l < "${environ}")>0) print l}'` },
        { binary: 'perl', args: ['-e', `open F, "<", "${environ}"; print <F>`] },
        { command: `perl -e 'open F, "<", "${environ}"; print <F>'` },
      ];
      for (const call of calls) await expectKernelStops(call, (output) => output.includes(key));
    } finally {
      holder.stop();
    }
  });

  it('of this test process', async () => {
    // A variable this process was started with (what /proc/<pid>/environ shows).
    const marker = readFileSync(`/proc/${process.pid}/environ`, 'utf8').split('\0').find((entry) => entry.startsWith('PATH='));
    expect(marker).toBeDefined();
    const environ = `/proc/${process.pid}/environ`;
    const calls: AttackCall[] = [
      { binary: 'ps', args: ['eww', '-p', String(process.pid)] },
      { command: `ps eww -p ${process.pid}` },
      { binary: 'perl', args: ['-e', `open F, "<", "${environ}"; print <F>`] },
      { command: `awk 'BEGIN{RS="\\0"; while((getline l < "${environ}")>0) print l}'` },
    ];
    for (const call of calls) await expectKernelStops(call, (output) => output.includes(marker!));
  });
});

describe('no descendant survives the call', () => {
  const pidFile = () => join(fx.work, 'daemon.pid');
  /**
   * Perl that leaves a daemon (new session, or new process group) behind, then holds on or not.
   * The daemon says it runs by making daemon.pid; the host finds it by the marker every process
   * of the attack has as an argument (a sandboxed call has its own PID namespace and /proc).
   */
  const perlDaemon = (detach: 'setsid' | 'setpgrp', hold: boolean) =>
    `use POSIX; unless (fork) { ${detach === 'setsid' ? 'POSIX::setsid();' : 'setpgrp(0, 0);'} exit if fork; ` +
    `open F, ">", "daemon.tmp"; print F $$; close F; ` +
    `rename "daemon.tmp", "daemon.pid"; sleep 60; exit } select(undef, undef, undef, 0.05) until -e "daemon.pid"; ${hold ? 'sleep 60;' : ''}`;

  function writeDaemonScript() {
    const script = join(fx.work, 'daemon.sh');
    writeFileSync(
      script,
      `#!/bin/sh
setsid -f sh -c 'echo $$ > daemon.tmp; mv daemon.tmp daemon.pid; exec sleep 60 "$0"' "$1"
while [ ! -e daemon.pid ]; do sleep 0.05; done
[ "$2" = hold ] && sleep 60
exit 0
`,
    );
    chmodSync(script, 0o755);
  }

  const variants = (hold: boolean, marker: string): [string, AttackCall][] => [
    ['perl fork + setsid (double fork)', { binary: 'perl', args: ['-e', perlDaemon('setsid', hold), marker] }],
    ['perl fork + setpgrp', { command: `perl -e '${perlDaemon('setpgrp', hold)}' ${marker}` }],
    ['a script calling setsid -f', { command: `./daemon.sh ${marker}${hold ? ' hold' : ''}` }],
    ['awk system() running that script', { binary: 'awk', args: [`BEGIN{system("./daemon.sh ${marker}${hold ? ' hold' : ''}")}`] }],
  ];

  /** Runs `call` and says whether the daemon it started is still alive afterwards (and kills it). */
  async function daemonSurvives(sandbox: false | undefined, call: AttackCall, ending: 'exit' | 'timeout' | 'abort', marker: string): Promise<boolean> {
    rmSync(pidFile(), { force: true });
    const tools = attackTools(fx.work, sandbox, ending === 'timeout' ? { timeoutMs: 1000 } : {});
    const controller = new AbortController();
    const running = runAttack(tools, call, { abortSignal: controller.signal });
    if (ending === 'abort') {
      const deadline = Date.now() + 10_000;
      while (!existsSync(pidFile()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      controller.abort(new Error('stopped'));
      await expect(running).rejects.toThrow('stopped');
    } else {
      const result = await running;
      expect(result.timedOut, JSON.stringify(result)).toBe(ending === 'timeout');
    }
    expect(existsSync(pidFile()), 'the daemon started').toBe(true);
    const until = Date.now() + (sandbox === false ? 300 : 2000);
    while (processesWith(marker).length > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    const left = processesWith(marker);
    for (const pid of left) process.kill(pid, 'SIGKILL');
    return left.length > 0;
  }

  for (const ending of ['exit', 'timeout', 'abort'] as const) {
    it.each(variants(ending !== 'exit', 'MARKER').map(([title]) => title))(`after the call's ${ending === 'exit' ? 'normal end' : ending}: %s`, async (title) => {
      writeDaemonScript();
      const call = (marker: string) => variants(ending !== 'exit', marker).find(([name]) => name === title)![1];
      const open = sleepMarker();
      expect(await daemonSurvives(false, call(open), ending, open), 'without the sandbox the daemon must outlive the call').toBe(true);
      const confined = sleepMarker();
      expect(await daemonSurvives(undefined, call(confined), ending, confined), 'the daemon outlived the sandboxed call').toBe(false);
    });
  }

  it('leaves no unreaped launcher behind after many sandboxed calls', async () => {
    const tools = attackTools(fx.work);
    for (let index = 0; index < 5; index++) {
      const result = await runAttack(tools, index % 2 ? { command: 'cat x.txt' } : { binary: 'cat', args: ['x.txt'] });
      expect(result.stdout).toBe('hello\n');
    }
    expect(zombieChildren()).toEqual([]);
  });
});
