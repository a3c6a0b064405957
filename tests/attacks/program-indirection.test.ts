/**
 * Class: programs that run other programs by their own means. With `git` preApproved and
 * `git push` blocked, git's aliases, autocorrect and pushing sub-commands, and the runners of
 * version and package managers (`pyenv exec`, `npx`, `npm exec`, …), ran `git push` unasked.
 * Each attack is first run without toolgate and seen to push to a bare remote; through the shell
 * and cli_execute tools every variant is refused — by the rule of the command it runs, or because
 * it hands a command line to a shell, or because what it runs cannot be seen — and the remote
 * stays as it was. The decision holds for runners that are not installed here (`explainCommand`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { cliExecuteTool, type CommandResult, explainCommand, type ShellRule, shellToolset } from '../../ts/src/index.js';
import { attackFixture, type AttackFixture, refusedWith, skip, which } from './fixture.js';

const git = which('git');
const RULES: ShellRule[] = [
  { pattern: 'git', approval: 'preApproved' },
  { pattern: 'git push', approval: 'blocked' },
];
const CALL = { toolCallId: 'attack', messages: [] };

let fx: AttackFixture;
let remote: string;

function gitIn(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(git!, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: fx.base, GIT_CONFIG_NOSYSTEM: '1', ...env } });
}

/** Runs `program` without toolgate in the work directory; whether it exited 0. */
function directly(program: string, args: string[], env: NodeJS.ProcessEnv = {}): boolean {
  try {
    execFileSync(program, args, { cwd: fx.work, stdio: 'ignore', timeout: 60_000, env: { PATH: process.env.PATH, HOME: fx.base, GIT_CONFIG_NOSYSTEM: '1', ...env } });
    return true;
  } catch {
    return false;
  }
}

/** The branches of the bare remote. */
function heads(): string[] {
  const loose = existsSync(join(remote, 'refs/heads')) ? readdirSync(join(remote, 'refs/heads')) : [];
  const packedFile = join(remote, 'packed-refs');
  const packed = existsSync(packedFile)
    ? readFileSync(packedFile, 'utf8')
        .split('\n')
        .flatMap((line) => (line.includes(' refs/heads/') ? [line.split(' refs/heads/')[1]!] : []))
    : [];
  return [...loose, ...packed].sort();
}

function shell(rules: ShellRule[] = RULES, defaultApproval: 'preApproved' | 'ask' | 'blocked' | undefined = 'preApproved') {
  const tool = shellToolset({ workDir: fx.work, rules, ...(defaultApproval ? { default: defaultApproval } : {}), approval: { default: 'preApproved' } });
  return (command: string) => tool.execute!({ command }, CALL) as Promise<CommandResult>;
}

function decision(command: string, rules: ShellRule[] = RULES): string {
  return explainCommand({ cwd: fx.work, rules, default: 'preApproved' }, command).decision;
}

beforeEach(() => {
  fx = attackFixture();
  if (!git) return;
  remote = join(fx.base, 'remote.git');
  gitIn(fx.base, ['init', '-q', '--bare', remote]);
  gitIn(fx.work, ['init', '-q', '-b', 'main', '.']);
  gitIn(fx.work, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'x']);
  gitIn(fx.work, ['remote', 'add', 'origin', remote]);
});

describe("git's own indirections", () => {
  it("each of the issue's spellings pushes without toolgate", () => {
    if (!git) return skip('git is not installed');
    expect(directly(git, ['-c', 'alias.p=!git "push" -q origin main:a', 'p'])).toBe(true);
    expect(directly(git, ['-c', 'alias.p=!exec git push -q origin main:b', 'p'])).toBe(true);
    expect(directly(git, ['-c', 'help.autocorrect=immediate', 'psuh', '-q', 'origin', 'main:c'])).toBe(true);
    expect(directly(git, ['-c', 'alias.p=send-pack', 'p', remote, 'main:d'])).toBe(true);
    expect(heads()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('shell aliases are refused whatever their spelling', async () => {
    if (!git) return skip('git is not installed');
    const run = shell();
    for (const command of [
      `git -c 'alias.p=!git "push"' p origin main`,
      `git -c 'alias.p=!exec git push' p origin main`,
      `git -c 'alias.p=!git-push' p origin main`,
      `git -c "alias.p=!git push" p origin main`,
      `git -c alias.p='!git push' p`,
      `git -c 'alias.p=!sh -c "git push"' p`,
      `git -c 'alias.p=!f(){ git push; }; f' p`,
      `git -c 'alias.p= !git push' p`,
      `git -c 'ALIAS.P=!git push' P`,
      `git -calias.p='!git push' p`,
      `git -C . -c 'alias.p=!git push' p`,
      `git --no-pager -c 'alias.p=!git push' p`,
      `git -c 'alias.p.command=!git push' p`,
      `git clone -c 'alias.p=!git push' . copy`,
      `git -c 'credential.helper=!git push' fetch`,
    ]) {
      expect(await refusedWith(() => run(command)), command).toBe('SHELL_NOT_ALLOWED');
      expect(decision(command), command).toBe('refused');
    }
    expect(heads()).toEqual([]);
  });

  it('aliases, autocorrect and pushing sub-commands are judged as the push they are', async () => {
    if (!git) return skip('git is not installed');
    const run = shell();
    for (const command of [
      'git -c help.autocorrect=immediate psuh origin main',
      'git -c help.autocorrect=1 psuh origin main',
      'git -c help.autocorrect=prompt psuh origin main',
      'git psuh origin main',
      'git -c alias.p=send-pack p origin main',
      `git send-pack ${remote} main`,
      'git -c alias.p=push p origin main',
      `git -c alias.p='push' p origin main`,
      `git -c 'alias.p=push -q' p origin main`,
      'git -c alias.p=push -c alias.q=p q origin main',
      'git -C . -c alias.p=push p origin main',
      'git -c alias.p=push --no-pager p origin main',
      'git http-push origin',
      'git remote-https origin',
      'git bisect run git push origin main',
    ]) {
      expect(await refusedWith(() => run(command)), command).toBe('COMMAND_BLOCKED');
      expect(decision(command), command).toBe('blocked');
    }
    // An alias of another sub-command is that sub-command.
    expect((await run('git -c alias.st=status st')).exitCode).toBe(0);
    expect(heads()).toEqual([]);
  });

  it('configuration that names a program, --config-env and --exec-path are refused', async () => {
    if (!git) return skip('git is not installed');
    const run = shell();
    for (const command of [
      `git -c core.pager='git push' log`,
      'git -c core.sshCommand=./x fetch origin',
      'git -c core.fsmonitor=./x status',
      'git -c core.hooksPath=hooks commit -m x',
      'git -c core.editor=./x commit',
      'git -c diff.external=./x diff',
      'git -c credential.helper=./x fetch',
      'git -c uploadpack.packObjectsHook=./x fetch',
      'git -c protocol.ext.allow=always fetch',
      'git -c sequence.editor=./x rebase -i',
      'git -c gpg.program=./x commit -S -m x',
      'git -c include.path=./evil status',
      'git --config-env=alias.p=PATH p',
      'git --config-env alias.p=PATH p',
      'git --config-env=core.pager=PATH log',
      'git --exec-path=. status',
      `git rebase -x 'git push' HEAD`,
      'git fetch --upload-pack=./x origin',
      'git push --receive-pack=./x origin',
      'git config core.fsmonitor ./x',
    ]) {
      const code = await refusedWith(() => run(command));
      expect(['ARGUMENT_REJECTED', 'COMMAND_BLOCKED'], command).toContain(code);
    }
  });

  it("GIT_CONFIG_* in toolgate's own environment never reaches git", async () => {
    if (!git) return skip('git is not installed');
    // Without toolgate, the environment defines the alias and it runs.
    const marker = join(fx.work, 'pwned');
    const parameters = `'alias.tgzz'='!touch ${marker}'`;
    expect(directly(git, ['tgzz'], { GIT_CONFIG_PARAMETERS: parameters })).toBe(true);
    expect(existsSync(marker)).toBe(true);
    execFileSync('rm', [marker]);
    const planted = { GIT_CONFIG_PARAMETERS: parameters, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'alias.tgzy', GIT_CONFIG_VALUE_0: `!touch ${marker}` };
    Object.assign(process.env, planted);
    try {
      // Everything preApproved: nothing stands between the model and git but the environment.
      const run = shell([], 'preApproved');
      for (const command of ['git tgzz', 'git tgzy']) {
        const result = await run(command);
        expect(result.exitCode, command).not.toBe(0);
      }
    } finally {
      for (const name of Object.keys(planted)) delete process.env[name];
    }
    expect(existsSync(marker)).toBe(false);
  });
});

describe('runners', () => {
  const installed = (name: string) => which(name);

  it('run git push without toolgate, where they are installed', () => {
    if (!git) return skip('git is not installed');
    const proven: string[] = [];
    for (const [runner, args] of [
      ['npx', ['--no-install', 'git', 'push', '-q', 'origin', 'main:npx']],
      ['npm', ['exec', '--', 'git', 'push', '-q', 'origin', 'main:npm']],
      ['pyenv', ['exec', 'git', 'push', '-q', 'origin', 'main:pyenv']],
    ] as const) {
      const program = installed(runner);
      if (program && directly(program, [...args])) proven.push(runner);
    }
    if (proven.length === 0) return skip('none of npx, npm, pyenv is installed');
    expect(heads()).toEqual(proven.sort());
  });

  it('are judged as the command they run, installed or not', async () => {
    if (!git) return skip('git is not installed');
    const run = shell();
    const commands = [
      'pyenv exec git push origin main',
      'rbenv exec git push',
      'asdf exec git push',
      'mise exec -- git push',
      'mise x node@20 -- git push',
      'npx --no-install git push origin main',
      'npx git push origin main',
      'npx -y git push',
      'npx --yes -- git push',
      'npx -p some-package git push',
      'npx --package=some-package git push',
      'npx git@2.0.0 push',
      'npx --made-up-flag git push',
      'npm exec -- git push origin main',
      'npm exec git push',
      'npm x -- git push',
      'npm --prefix . exec -- git push',
      'pnpm exec git push',
      'pnpm dlx git push',
      'pnpx git push',
      'yarn dlx git push',
      'bunx git push',
      'bun x git push',
      'uvx git push',
      'uvx --from pkg git push',
      'uv run git push',
      'uv run -- git push',
      'uv tool run git push',
      'pipx run git push',
      'poetry run git push',
      'bundle exec git push',
      'conda run -n base git push',
      'rustup run stable git push',
      'corepack npx git push',
      // A runner calling a runner, and a runner calling git's alias.
      'npx npx git push',
      'pyenv exec npx --no-install git push',
      'npx pyenv exec git -c alias.p=push p',
      'pyenv-exec git push',
    ];
    for (const command of commands) {
      expect(decision(command), command).toBe('blocked');
      expect(await refusedWith(() => run(command)), command).toBe('COMMAND_BLOCKED');
    }
    // Absolute paths to installed runners, and symlinks to them under another name.
    for (const runner of ['npx', 'npm', 'pyenv']) {
      const program = installed(runner);
      if (!program) continue;
      const link = join(fx.base, `innocent-${runner}`);
      symlinkSync(realpathSync(program), link);
      for (const path of [program, realpathSync(program), link]) {
        const command = runner === 'npx' ? `${path} git push origin main` : `${path} exec -- git push origin main`;
        expect(await refusedWith(() => run(command)), command).toBe('COMMAND_BLOCKED');
      }
    }
    // Shells behind a runner are shells.
    for (const command of [`npx -c 'git push'`, `npx --call 'git push'`, `npm exec -c 'git push'`, 'npx bash -c x', 'pyenv exec sh', `mise exec -c 'git push'`, `bun exec 'git push'`]) {
      expect(await refusedWith(() => run(command)), command).toBe('SHELL_NOT_ALLOWED');
    }
    expect(heads()).toEqual([]);
    // Other commands through a runner go by their own rules.
    expect(decision('npx git status')).toBe('preApproved');
    expect(explainCommand({ cwd: fx.work, rules: [{ pattern: 'git push', approval: 'ask' }], default: 'preApproved' }, 'npx git push').decision).toBe('ask');
  });

  it("find's -exec runs a command that is judged; options that take a command line are refused", async () => {
    if (!git) return skip('git is not installed');
    const find = installed('find');
    if (find) expect(directly(find, ['.', '-maxdepth', '0', '-exec', git, 'push', '-q', 'origin', 'main:find', ';'])).toBe(true);
    const before = heads();
    const run = shell();
    for (const command of ["find . -maxdepth 0 -exec git push origin main ';'", "find . -execdir git push origin main '{}' +", 'find . -name x -ok git push \\;']) {
      expect(await refusedWith(() => run(command)), command).toBe('COMMAND_BLOCKED');
    }
    for (const command of [`rsync -e 'sh -c x' a b`, 'rsync -avze x a b', `tar --to-command='git push' -xf a.tar`, 'tar xIf ./x a.tar', 'sort --compress-program=./x f']) {
      expect(await refusedWith(() => run(command)), command).toBe('SHELL_NOT_ALLOWED');
    }
    for (const command of [`ssh -o 'ProxyCommand=git push' host`, 'ssh -F ./config host', 'scp -S ./x a host:b']) {
      expect(await refusedWith(() => run(command)), command).toBe('ARGUMENT_REJECTED');
    }
    expect(heads()).toEqual(before);
    if (find) expect((await run('find . -maxdepth 0 -exec git status \\;')).exitCode).toBe(0);
  });

  it('that run what toolgate cannot see get the strictest rule', async () => {
    if (!git) return skip('git is not installed');
    writeFileSync(join(fx.work, 'Makefile'), 'deploy:\n\tgit push -q origin main:make\nhello:\n\ttouch made\n');
    writeFileSync(join(fx.work, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', scripts: { deploy: 'git push -q origin main:npm' } }));
    const make = installed('make');
    if (make) expect(directly(make, ['deploy'])).toBe(true);
    const npm = installed('npm');
    if (npm) expect(directly(npm, ['run', '--silent', 'deploy'])).toBe(true);
    const before = heads();
    const run = shell();
    for (const command of ['make deploy', 'make', 'gmake -C . deploy', 'just deploy', 'npm run deploy', 'npm test', 'npm install', 'yarn deploy', 'pnpm run deploy', 'cargo run', 'go run .', 'go generate', 'npx make deploy']) {
      expect(decision(command), command).toBe('blocked');
      const refused = await run(command).then(
        () => null,
        (error: Error & { code?: string }) => error,
      );
      expect(refused?.code, command).toBe('COMMAND_BLOCKED');
      expect(refused?.message, command).toMatch(/may run anything.*rules\[1\] \(pattern 'git push'\)/s);
    }
    expect(heads()).toEqual(before);
    // With only ask rules it is asked about; with everything allowed it runs.
    expect(explainCommand({ cwd: fx.work, rules: [{ pattern: 'git push', approval: 'ask' }], default: 'preApproved' }, 'make deploy').decision).toBe('ask');
    if (make) {
      const result = await shell([{ pattern: 'make', approval: 'preApproved' }])('make hello');
      expect(result.exitCode, result.stderr).toBe(0);
      expect(existsSync(join(fx.work, 'made'))).toBe(true);
    }
  });

  it('under cli_execute may only run allowlisted programs', async () => {
    if (!git) return skip('git is not installed');
    const npx = installed('npx');
    if (!npx) return skip('npx is not installed');
    const cli = (allowedBinaries: string[], denyCommands: { pattern: string }[] = []) => {
      const tool = cliExecuteTool({ workDir: fx.work, allowedBinaries, approval: { default: 'preApproved' }, guardrails: { denyCommands } });
      return (binary: string, args: string[]) => tool.execute!({ binary, args }, CALL) as Promise<unknown>;
    };
    for (const args of [['--no-install', 'git', 'push', 'origin', 'main'], ['git', 'push'], ['-y', '--', 'git', 'push'], ['npx', 'git', 'push']]) {
      expect(await refusedWith(() => cli(['npx'])('npx', args)), args.join(' ')).toBe('BINARY_NOT_ALLOWED');
    }
    expect(await refusedWith(() => cli(['npx', 'git'], [{ pattern: '^git push' }])('npx', ['--no-install', 'git', 'push', 'origin', 'main']))).toBe('GUARDRAIL_BLOCKED');
    expect(await refusedWith(() => cli(['git'])('git', ['-c', 'alias.p=!git push', 'p']))).toBe('SHELL_NOT_ALLOWED');
    expect(await refusedWith(() => cli(['git'])('git', ['-c', 'core.pager=./x', 'log']))).toBe('ARGUMENT_REJECTED');
    expect(await refusedWith(() => cli(['git'], [{ pattern: 'push --force' }])('git', ['-c', 'alias.p=push', 'p', '--force']))).toBe('GUARDRAIL_BLOCKED');
    if (installed('make')) {
      writeFileSync(join(fx.work, 'Makefile'), 'deploy:\n\tgit push -q origin main:make\n');
      expect(await refusedWith(() => cli(['make'])('make', ['deploy']))).toBe('COMMAND_BLOCKED');
    }
    if (installed('npm')) {
      expect(await refusedWith(() => cli(['npm'])('npm', ['exec', '--', 'git', 'push']))).toBe('BINARY_NOT_ALLOWED');
      expect(await refusedWith(() => cli(['npm'])('npm', ['run', 'deploy']))).toBe('COMMAND_BLOCKED');
    }
    expect(heads()).toEqual([]);
  });
});
