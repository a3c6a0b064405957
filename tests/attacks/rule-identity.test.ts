/**
 * Class 6: a blocked (or ask) rule names a program; it must hold whatever path, link or
 * dispatch form runs that program, and options placed before the sub-command must not step
 * around it. The proof: git's dashed form `git-push` pushes to a bare remote without toolgate;
 * then, with `git push` blocked and everything else preApproved, every spelling is refused with
 * `COMMAND_BLOCKED`, asks nobody, and the guarded remote stays empty.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { explainCommand, type ShellRule, shellToolset } from '../../ts/src/index.js';
import { attackFixture, type AttackFixture, refusedWith, shell, skip, which } from './fixture.js';

const git = which('git');
const RULES: ShellRule[] = [
  { pattern: 'git push', approval: 'blocked' },
  { pattern: 'git reset --hard', approval: 'ask' },
  { pattern: 'git status', approval: 'preApproved' },
];

let fx: AttackFixture;
let remote: string;
let execPath: string;

function gitIn(cwd: string, args: string[]): string {
  return execFileSync(git!, args, { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: fx.base, GIT_CONFIG_NOSYSTEM: '1' } });
}

function pushedTo(bare: string): boolean {
  return existsSync(join(bare, 'refs/heads/main')) || (existsSync(join(bare, 'packed-refs')) && readFileSync(join(bare, 'packed-refs'), 'utf8').includes('refs/heads/main'));
}

beforeEach(() => {
  fx = attackFixture();
  if (!git) return;
  remote = join(fx.base, 'remote.git');
  gitIn(fx.base, ['init', '-q', '--bare', remote]);
  gitIn(fx.work, ['init', '-q', '-b', 'main', '.']);
  gitIn(fx.work, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'x']);
  gitIn(fx.work, ['remote', 'add', 'origin', remote]);
  execPath = gitIn(fx.work, ['--exec-path']).trim();
});

describe('a blocked git push', () => {
  it("is what git's dashed form does without toolgate", () => {
    if (!git) return skip('git is not installed');
    const dashed = join(execPath, 'git-push');
    if (!existsSync(dashed)) return skip(`no ${dashed}`);
    const proof = join(fx.base, 'proof.git');
    gitIn(fx.base, ['init', '-q', '--bare', proof]);
    execFileSync(dashed, ['-q', proof, 'main'], { cwd: fx.work, env: { PATH: process.env.PATH, HOME: fx.base } });
    expect(pushedTo(proof)).toBe(true);
  });

  it('is blocked under every path, link, dashed form and global option', async () => {
    if (!git) return skip('git is not installed');
    const real = realpathSync(git);
    const links = join(fx.base, 'links');
    mkdirSync(links);
    symlinkSync(real, join(links, 'g'));
    const commands = [
      'git push origin main',
      `${git} push origin main`,
      `${real} push origin main`,
      `${join(execPath, 'git')} push origin main`,
      `${join(links, 'g')} push origin main`,
      'git -C . push origin main',
      'git -c user.name=x push origin main',
      'git --no-pager push origin main',
      'git --git-dir=.git --work-tree=. push origin main',
      'git -C . -c a.b=c --no-pager -p push origin main',
    ];
    if (existsSync(join(execPath, 'git-push'))) commands.push(`${join(execPath, 'git-push')} origin main`);
    for (const other of ['/usr/lib/git-core/git', '/usr/libexec/git-core/git', '/usr/bin/git', '/usr/local/bin/git']) {
      if (existsSync(other)) commands.push(`${other} push origin main`);
    }
    for (const dashed of ['/usr/lib/git-core/git-push', '/usr/libexec/git-core/git-push']) {
      if (existsSync(dashed)) commands.push(`${dashed} origin main`);
    }
    try {
      linkSync(real, join(links, 'hard'));
      linkSync(real, join(links, 'git-push'));
      commands.push(`${join(links, 'hard')} push origin main`, `${join(links, 'git-push')} origin main`);
    } catch {
      skip('hard links to git (another file system)');
    }
    const tool = shellToolset({ workDir: fx.work, rules: RULES, default: 'preApproved' });
    const gate = tool.needsApproval as (input: { command: string }, options: unknown) => Promise<boolean>;
    for (const command of commands) {
      expect(explainCommand({ cwd: fx.work, rules: RULES, default: 'preApproved' }, command).decision, command).toBe('blocked');
      expect(await gate({ command }, { toolCallId: 'x', messages: [] }), command).toBe(false);
      expect(await refusedWith(() => shell(fx, RULES)(command)), command).toBe('COMMAND_BLOCKED');
    }
    expect(pushedTo(remote)).toBe(false);
  });

  it('asks for an ask rule with options in front, and runs what the rules allow', async () => {
    if (!git) return skip('git is not installed');
    for (const command of ['git -C . reset --hard', 'git -c a=b reset -q --hard', 'GIT reset --hard']) {
      const decision = explainCommand({ cwd: fx.work, rules: RULES, default: 'preApproved' }, command).decision;
      expect(['ask', 'refused'], command).toContain(decision);
    }
    expect(explainCommand({ cwd: fx.work, rules: RULES, default: 'preApproved' }, 'git -C . reset --hard').decision).toBe('ask');
    const status = await shell(fx, RULES)('git status --short');
    expect(status.exitCode).toBe(0);
    const viaLink = join(fx.base, 'g2');
    symlinkSync(realpathSync(git), viaLink);
    expect((await shell(fx, RULES)(`${viaLink} status --short`)).exitCode).toBe(0);
  });

  it('is not loosened for preApproved rules: options in front fall to the default', () => {
    if (!git) return skip('git is not installed');
    const rules: ShellRule[] = [{ pattern: 'git status', approval: 'preApproved' }];
    expect(explainCommand({ cwd: fx.work, rules, default: 'ask' }, 'git status').decision).toBe('preApproved');
    expect(explainCommand({ cwd: fx.work, rules, default: 'ask' }, 'git -c color.ui=never status').decision).toBe('ask');
    expect(explainCommand({ cwd: fx.work, rules, default: 'ask' }, `${join(execPath, 'git-status')}`).decision).toBe('ask');
  });
});
