import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runToolgate } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

let dir: string;
let rules: string;
beforeEach(() => {
  dir = tempDir('toolgate-check-');
  rules = join(dir, 'rules.yaml');
  writeFileSync(
    rules,
    [
      'default: ask',
      'rules:',
      '  - { pattern: "git status", approval: preApproved }',
      '  - { pattern: "git push", approval: blocked }',
      '  - { pattern: "git push --dry-run", approval: preApproved }',
      '',
    ].join('\n'),
  );
});

const check = (...args: string[]) => runToolgate(['check', '--rules', rules, '--cwd', dir, ...args]);

describe('toolgate check', () => {
  it('prints a blocked decision with the rule and the refusing layer, exit 1', () => {
    const run = check('git push origin main');
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/^decision +blocked$/m);
    expect(run.stdout).toMatch(/^rule +rules\[1\] "git push" -> blocked$/m);
    expect(run.stdout).toMatch(/^refused by +rules \(COMMAND_BLOCKED\)$/m);
  });

  it('prints a preApproved decision from the longest rule, exit 0', () => {
    const run = check('git push --dry-run origin');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^decision +preApproved$/m);
    expect(run.stdout).toContain('rules[2] "git push --dry-run"');
    expect(run.stdout).not.toContain('refused by');
  });

  it('says when the default decides', () => {
    const run = check('git log');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^decision +ask$/m);
    expect(run.stdout).toContain('no rule matched; the default applies');
  });

  it.each([
    ['git status | cat', 'syntax (ARGUMENT_REJECTED)'],
    ['bash -c id', 'shell-or-trampoline (SHELL_NOT_ALLOWED)'],
    ['git status /etc/passwd', 'paths (PATH_OUTSIDE_ROOT)'],
    ['git clone file:///etc x', 'arguments (ARGUMENT_REJECTED)'],
    ['no-such-program-xyz', 'program (BINARY_NOT_FOUND)'],
  ])('names the layer that refuses %j, exit 1', (command, layer) => {
    const run = check(command);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/^decision +refused$/m);
    expect(run.stdout).toContain(`refused by  ${layer}`);
  });

  it('takes several words as one command and prints JSON', () => {
    const run = check('--json', 'git', 'commit', '-m', 'a b');
    expect(run.status).toBe(0);
    const explanation = JSON.parse(run.stdout) as { argv: string[]; decision: string; source: string };
    expect(explanation).toMatchObject({ argv: ['git', 'commit', '-m', 'a b'], decision: 'ask', source: 'default' });
  });

  it('reads the shell block of a worker file', () => {
    const worker = join(dir, 'worker.yaml');
    writeFileSync(worker, 'name: w\ntoolsets:\n  shell:\n    rules: [{ pattern: ls, approval: preApproved }]\n');
    const run = runToolgate(['check', '--rules', worker, '--cwd', dir, 'printf', 'x']);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('no rule matched and there is no default');
  });

  it('reports configuration errors with the file and the line, exit 2', () => {
    writeFileSync(rules, 'default: ask\nrules:\n  - pattern: ls\n    aproval: ask\n');
    const run = check('ls');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('CONFIG_INVALID');
    expect(run.stderr).toContain(rules);
    expect(run.stderr).toContain('aproval');
    expect(run.stderr).toContain('line 4');
  });

  it('reports usage errors, exit 2', () => {
    expect(runToolgate(['check', 'ls']).status).toBe(2);
    expect(runToolgate(['check', '--rules', rules]).status).toBe(2);
    expect(runToolgate(['check', '--rules', join(dir, 'missing.yaml'), 'ls']).stderr).toContain('FILE_NOT_FOUND');
    const help = runToolgate(['check', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: toolgate check');
  });

  it('is listed in the CLI help', () => {
    expect(runToolgate(['--help']).stdout).toContain('check --rules <file> <command>');
  });
});
