import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { generateText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  approvalOf,
  type CommandResult,
  explainCommand,
  shellToolset,
  type ShellToolsetOptions,
  splitCommand,
  toToolSet,
} from '../ts/src/index.js';
import { CALL, commandFixture, refusalOf } from './helpers/commands.js';
import { waitUntilGone } from './helpers/processes.js';

let fx: ReturnType<typeof commandFixture>;
beforeEach(() => {
  fx = commandFixture();
});

const RULES: ShellToolsetOptions['rules'] = [
  { pattern: 'ls', approval: 'preApproved' },
  { pattern: 'cat', approval: 'preApproved' },
  { pattern: 'printf', approval: 'preApproved' },
  { pattern: 'touch', approval: 'preApproved' },
  { pattern: 'git status', approval: 'preApproved' },
  { pattern: 'git push', approval: 'blocked' },
  { pattern: 'rm', approval: 'blocked' },
  { pattern: 'git push --dry-run', approval: 'ask' },
];

function shell(options: Partial<ShellToolsetOptions> = {}) {
  return shellToolset({ workDir: fx.work, rules: RULES, default: 'ask', ...options });
}

async function run(command: string, tool = shell()): Promise<CommandResult> {
  return (await tool.execute!({ command }, CALL)) as CommandResult;
}

async function asks(command: string, tool = shell()): Promise<boolean> {
  const gate = tool.needsApproval;
  return typeof gate === 'function' ? await gate({ command }, CALL) : gate === true;
}

/**
 * The shell tool's attack corpus: each command is refused with exactly `code`, asks for no
 * approval (a refusal never reaches a human), and leaves no `pwned` file anywhere.
 * `$O` is the outside directory.
 */
const ATTACKS: [string, string][] = [
  // splitting: no shell syntax
  ['touch a | touch pwned', 'ARGUMENT_REJECTED'],
  ['ls > pwned', 'ARGUMENT_REJECTED'],
  ['ls >> pwned', 'ARGUMENT_REJECTED'],
  ['cat < $O/secret.txt', 'ARGUMENT_REJECTED'],
  ['ls; touch pwned', 'ARGUMENT_REJECTED'],
  ['ls && touch pwned', 'ARGUMENT_REJECTED'],
  ['ls || touch pwned', 'ARGUMENT_REJECTED'],
  ['touch pwned &', 'ARGUMENT_REJECTED'],
  ['ls 2>&1', 'ARGUMENT_REJECTED'],
  ['(touch pwned)', 'ARGUMENT_REJECTED'],
  ['touch $(echo pwned)', 'ARGUMENT_REJECTED'],
  ['touch "$(echo pwned)"', 'ARGUMENT_REJECTED'],
  ['touch `echo pwned`', 'ARGUMENT_REJECTED'],
  ['touch ${X:-pwned}', 'ARGUMENT_REJECTED'],
  ['ls\ntouch pwned', 'ARGUMENT_REJECTED'],
  ['ls\rtouch pwned', 'ARGUMENT_REJECTED'],
  ["touch 'pwned", 'ARGUMENT_REJECTED'],
  // shells and trampolines, by name, path, symlink and version
  ['bash -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['sh -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['/bin/sh -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['dash -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['./innocent -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['bash5 -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['env touch pwned', 'SHELL_NOT_ALLOWED'],
  ['/usr/bin/env touch pwned', 'SHELL_NOT_ALLOWED'],
  ['xargs touch', 'SHELL_NOT_ALLOWED'],
  ['nohup touch pwned', 'SHELL_NOT_ALLOWED'],
  ['timeout 5 touch pwned', 'SHELL_NOT_ALLOWED'],
  ['nice touch pwned', 'SHELL_NOT_ALLOWED'],
  ['setsid touch pwned', 'SHELL_NOT_ALLOWED'],
  ['script -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['sudo touch pwned', 'SHELL_NOT_ALLOWED'],
  ['su -c "touch pwned"', 'SHELL_NOT_ALLOWED'],
  ['busybox sh', 'SHELL_NOT_ALLOWED'],
  // rules: blocked fails fast, by any spelling of the program
  ['git push origin main', 'COMMAND_BLOCKED'],
  ['git push', 'COMMAND_BLOCKED'],
  ['$GIT push origin main', 'COMMAND_BLOCKED'],
  ['rm -rf src', 'COMMAND_BLOCKED'],
  ["'rm' -rf src", 'COMMAND_BLOCKED'],
  // program
  ['no-such-program-xyz pwned', 'BINARY_NOT_FOUND'],
  // argument text
  ['git clone file:///etc pwned', 'ARGUMENT_REJECTED'],
  ['git clone FILE:////etc pwned', 'ARGUMENT_REJECTED'],
  // paths
  ['cat ../outside/secret.txt', 'PATH_OUTSIDE_ROOT'],
  ['cat foo/../../outside/secret.txt', 'PATH_OUTSIDE_ROOT'],
  ['cat /etc/passwd', 'PATH_OUTSIDE_ROOT'],
  ['cat /home/other/.ssh/id_rsa', 'PATH_OUTSIDE_ROOT'],
  ['cat ~/.ssh/id_rsa', 'PATH_OUTSIDE_ROOT'],
  ['cat "~/.ssh/id_rsa"', 'PATH_OUTSIDE_ROOT'],
  ['cat escape/secret.txt', 'PATH_OUTSIDE_ROOT'],
  ['ls escape', 'PATH_OUTSIDE_ROOT'],
  ['touch dangling', 'PATH_OUTSIDE_ROOT'],
  ['touch $O/pwned', 'PATH_OUTSIDE_ROOT'],
  ['cat --file=/etc/shadow', 'PATH_OUTSIDE_ROOT'],
  ['cat -f/etc/passwd', 'PATH_OUTSIDE_ROOT'],
  ['printf %s @/etc/passwd', 'PATH_OUTSIDE_ROOT'],
  ['ls ../work2', 'PATH_OUTSIDE_ROOT'],
];

describe('shell attack corpus', () => {
  it.each(ATTACKS)('refuses %j with %s and no prompt', async (template, code) => {
    const git = explainCommand({ cwd: fx.work, default: 'ask' }, 'git status').program ?? 'git';
    const command = template.replaceAll('$O', fx.outside).replaceAll('$GIT', git);
    const tool = shell();
    expect(await asks(command, tool), 'a refused command must not ask').toBe(false);
    const error = await refusalOf(() => run(command, tool));
    expect(error.code, error.message).toBe(code);
    expect(explainCommand({ cwd: fx.work, rules: RULES, default: 'ask' }, command).refusal?.code).toBe(code);
    for (const dir of [fx.work, fx.outside, fx.sibling]) expect(existsSync(join(dir, 'pwned')), dir).toBe(false);
    expect(existsSync(join(fx.outside, 'created-through-dangling-link'))).toBe(false);
  });

  it('refuses a program on PATH that was swapped for a shell after it was first used', async () => {
    const bin = join(fx.base, 'bin');
    mkdirSync(bin);
    symlinkSync('/bin/true', join(bin, 'mytool'));
    const saved = process.env.PATH;
    process.env.PATH = `${bin}:${saved}`;
    let tool;
    try {
      tool = shell({ default: 'preApproved' });
    } finally {
      process.env.PATH = saved;
    }
    expect((await run('mytool', tool)).exitCode).toBe(0);
    unlinkSync(join(bin, 'mytool'));
    symlinkSync('/bin/bash', join(bin, 'mytool'));
    const error = await refusalOf(() => run('mytool -c "touch pwned"', tool));
    expect(error.code).toBe('SHELL_NOT_ALLOWED');
    expect(existsSync(join(fx.work, 'pwned'))).toBe(false);
  });

  it('says that no shell is used and to run one command', async () => {
    const error = await refusalOf(() => run('ls | wc -l'));
    expect(error.message).toContain('no shell is used');
    expect(error.message).toContain('run one program');
  });

  it('names the blocking rule, or says that there is no default', async () => {
    const blocked = await refusalOf(() => run('git push origin main'));
    expect(blocked.message).toContain("rules[5] (pattern 'git push')");
    const tool = shellToolset({ workDir: fx.work, rules: [{ pattern: 'ls', approval: 'preApproved' }] });
    const unmatched = await refusalOf(() => run('printf x', tool));
    expect(unmatched.code).toBe('COMMAND_BLOCKED');
    expect(unmatched.message).toContain('no default');
  });
});

describe('shell rules', () => {
  it.each([
    ['git status', false],
    ['git status --short', false],
    ['git log', true], // default
    ['git push --dry-run origin', true], // the longest pattern wins over `git push`
    ['ls -la', false],
    ['lsblk', true], // `ls` does not match `lsblk`
    ['gitx status', false], // not found: refused, no prompt
  ] as const)('%s needs approval: %s', async (command, expected) => {
    expect(await asks(command)).toBe(expected);
  });

  it('resolves equal lengths to the strictest and gives unmatched commands the default', () => {
    const options = {
      cwd: fx.work,
      rules: [
        { pattern: 'printf a', approval: 'preApproved' },
        { pattern: 'printf a', approval: 'blocked' },
        { pattern: 'printf a', approval: 'ask' },
      ],
      default: 'preApproved',
    } as const;
    expect(explainCommand(options, 'printf a b')).toMatchObject({ decision: 'blocked', rule: { index: 1 } });
    expect(explainCommand(options, 'printf b')).toMatchObject({ decision: 'preApproved', source: 'default', rule: null });
  });

  it('runs preApproved commands directly, without a shell', async () => {
    const result = await run(`printf '%s|' "a b" 'c|d' '$HOME' \\*`);
    expect(result).toEqual({ stdout: 'a b|c|d|$HOME|*|', stderr: '', exitCode: 0, truncated: false, timedOut: false });
    expect((await run('cat src/main.rs')).stdout).toBe('fn main() {}\n');
  });

  it('lets the approval config force ask or blocked over the rules', async () => {
    expect(approvalOf(shell())).toEqual({ decision: 'preApproved', dynamic: true });
    const forced = shell({ approval: { tools: { shell: 'ask' } } });
    expect(await asks('git status', forced)).toBe(true);
    const blocked = shell({ approval: { tools: { shell: 'blocked' } } });
    expect((await refusalOf(() => run('ls', blocked))).code).toBe('TOOL_BLOCKED');
  });

  it('refuses rules that cannot be split or that would allow a shell', () => {
    for (const [rules, needle] of [
      [[{ pattern: 'git | x', approval: 'ask' }], 'rules[0]'],
      [[{ pattern: '', approval: 'ask' }], 'empty'],
      [[{ pattern: 'bash', approval: 'preApproved' }], 'never run'],
      [[{ pattern: 'ls', approval: 'allow' }], 'preApproved, ask, blocked'],
    ] as const) {
      expect(() => shellToolset({ workDir: fx.work, rules: rules as never })).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining(needle) }),
      );
    }
    expect(() => shellToolset({ workDir: fx.work, rules: [{ pattern: 'sudo', approval: 'blocked' }] })).not.toThrow();
  });

  it('uses the cli_execute engine: cwd, a private HOME, environment, caps and timeout', async () => {
    process.env.TOOLGATE_TEST_SECRET = 'hunter2';
    try {
      const tool = shell({ default: 'preApproved', maxOutputBytes: 10, timeoutMs: 300 });
      const env = await run('printenv HOME TOOLGATE_TEST_SECRET', shell({ default: 'preApproved' }));
      expect(env.stdout).toMatch(/^\/.*\/toolgate-call-[0-9a-f]+\/home\n$/);
      expect(env.exitCode).toBe(1);
      const capped = await run('printf 0123456789abcdef', tool);
      expect(capped).toMatchObject({ stdout: '0123456789', truncated: true });
      const slow = await run('sleep 30', tool);
      expect(slow).toMatchObject({ timedOut: true, exitCode: null });
    } finally {
      delete process.env.TOOLGATE_TEST_SECRET;
    }
  });

  it('kills the process group when the abortSignal fires', async () => {
    const tool = shell({ default: 'preApproved' });
    const controller = new AbortController();
    const running = tool.execute!({ command: 'sleep 30' }, { ...CALL, abortSignal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const pid = sleepPid(fx.work);
    expect(pid).toBeGreaterThan(0);
    controller.abort(new Error('stop'));
    await expect(running).rejects.toThrow('stop');
    expect(await waitUntilGone(pid)).toBe(true);
  });
});

/** The pid of the `sleep 30` whose cwd is `dir`. */
function sleepPid(dir: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline === 'sleep\u000030\u0000' || cmdline.endsWith('/sleep\u000030\u0000')) {
        if (readlinkSync(`/proc/${entry}/cwd`) === dir) return Number(entry);
      }
    } catch {
      // gone meanwhile
    }
  }
  return -1;
}

describe('splitCommand', () => {
  it('splits with POSIX quoting and no expansion', () => {
    expect(splitCommand(`git commit -m "fix: a > b" 'it''s' \\$HOME ~`)).toEqual(['git', 'commit', '-m', 'fix: a > b', 'its', '$HOME', '~']);
  });

  it('refuses shell syntax with ARGUMENT_REJECTED', () => {
    expect(() => splitCommand('ls | wc')).toThrow(expect.objectContaining({ code: 'ARGUMENT_REJECTED' }));
  });
});

describe('shell in the AI SDK loop', () => {
  it('runs preApproved calls, turns ask into an approval request and fails blocked calls without one', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => ({
        content: [
          { type: 'tool-call', toolCallId: 'ok', toolName: 'shell', input: JSON.stringify({ command: 'printf hello' }) },
          { type: 'tool-call', toolCallId: 'asks', toolName: 'shell', input: JSON.stringify({ command: 'git log -1' }) },
          { type: 'tool-call', toolCallId: 'blocked', toolName: 'shell', input: JSON.stringify({ command: 'git push origin main' }) },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 1, text: 1, reasoning: 0 },
        },
        warnings: [],
      }),
    });
    const result = await generateText({ model, prompt: 'go', tools: toToolSet([shell()]) });
    const byId = (id: string) => result.content.filter((part) => 'toolCallId' in part && part.toolCallId === id).map((part) => part.type);
    expect(result.content.find((part) => part.type === 'tool-result' && part.toolCallId === 'ok')).toMatchObject({
      output: { stdout: 'hello', exitCode: 0 },
    });
    expect(byId('asks')).toContain('tool-call');
    expect(result.content.some((part) => part.type === 'tool-approval-request' && part.toolCall.toolCallId === 'asks')).toBe(true);
    expect(result.content.some((part) => part.type === 'tool-approval-request' && part.toolCall.toolCallId === 'blocked')).toBe(false);
    const error = result.content.find((part) => part.type === 'tool-error' && part.toolCallId === 'blocked');
    expect(error).toMatchObject({ error: expect.objectContaining({ code: 'COMMAND_BLOCKED' }) });
  });
});
