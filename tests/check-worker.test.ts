/**
 * `toolgate check worker.yaml` (issue 25 items 1 and 2): golden output for every example
 * worker, text and --json, with the checkout's path replaced by `<repo>` so that it passes in
 * any clone. `UPDATE_GOLDEN=1 npx vitest run tests/check-worker.test.ts` rewrites the golden
 * files after a deliberate change (review the diff).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/checkout.js';
import { runToolgate } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

const GOLDEN = join(REPO_ROOT, 'tests', 'golden', 'check');
const EXAMPLES = [
  ['quickstart', 'examples/quickstart/worker.yaml'],
  ['mcp', 'examples/mcp/worker.yaml'],
  ['golem-forge-compat', 'examples/golem-forge-compat/index.worker'],
] as const;

/**
 * The git configuration of this checkout, which every sandbox of an example protects (its work
 * directory is inside the checkout): `.git` and what it names differ between a clone and a git
 * worktree, so the golden files leave these entries out (the Rust tests of
 * `sandbox_config::protect` cover them).
 */
const GIT_PATHS = (() => {
  const paths = [join(REPO_ROOT, '.git'), join(REPO_ROOT, '.gitmodules')];
  const git = spawnSync('git', ['rev-parse', '--absolute-git-dir', '--git-common-dir'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (git.status === 0) paths.push(...git.stdout.trim().split('\n').map((dir) => resolve(REPO_ROOT, dir)));
  return paths;
})();
const isGitPath = (path: string) => GIT_PATHS.some((git) => path === git || path.startsWith(`${git}/`));

/** The output with this checkout's git configuration left out of the protected paths. */
function withoutGitPaths(text: string, json: boolean): string {
  if (json) {
    const strip = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(strip);
      if (value === null || typeof value !== 'object') return value;
      return Object.fromEntries(
        Object.entries(value).map(([key, inner]) => [
          key,
          key === 'protectedPaths' && Array.isArray(inner) ? inner.filter((path) => !isGitPath(String(path))) : strip(inner),
        ]),
      );
    };
    return `${JSON.stringify(strip(JSON.parse(text)), null, 2)}\n`;
  }
  return text.replace(/protected paths: ([^\n]*)/g, (_, list: string) =>
    `protected paths: ${list
      .split(', ')
      .filter((path) => !isGitPath(path))
      .join(', ')}`,
  );
}

/** The output with this checkout's path written as `<repo>` (and without its git configuration). */
function normalised(text: string, json = false): string {
  return withoutGitPaths(text, json).split(REPO_ROOT).join('<repo>');
}

function golden(name: string, actual: string): void {
  const file = join(GOLDEN, name);
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(file, actual);
  }
  expect(existsSync(file), `${file} is missing: run with UPDATE_GOLDEN=1 and review it`).toBe(true);
  expect(actual).toBe(readFileSync(file, 'utf8'));
}

describe('toolgate check <worker>: golden output of the examples', () => {
  for (const [name, file] of EXAMPLES) {
    it(`${name}: text and --json`, () => {
      const text = runToolgate(['check', file], { cwd: REPO_ROOT });
      expect(text.stderr).toBe('');
      expect(text.status).toBe(0);
      golden(`${name}.txt`, normalised(text.stdout));
      const json = runToolgate(['check', '--json', file], { cwd: REPO_ROOT });
      expect(json.status).toBe(0);
      const report = JSON.parse(json.stdout) as { version: number; workers: { tools: unknown[] }[] };
      expect(report.version).toBe(1);
      expect(report.workers.length).toBeGreaterThan(0);
      golden(`${name}.json`, normalised(json.stdout, true));
    });
  }
});

describe('toolgate check <worker>', () => {
  it('exits 2 with file:line:column for an invalid worker file, 0 for a valid one', () => {
    const dir = tempDir('toolgate-check-worker-');
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'name: bad\ntoolsets:\n  shel: { default: ask }\n');
    const run = runToolgate(['check', bad]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('CONFIG_INVALID');
    expect(run.stderr).toContain(`${bad}:3:3`);
    expect(run.stdout).toBe('');
    const missing = runToolgate(['check', join(dir, 'nowhere.yaml')]);
    expect(missing.status).toBe(2);
    const good = join(dir, 'good.yaml');
    writeFileSync(good, 'name: good\n');
    expect(runToolgate(['check', good]).status).toBe(0);
    expect(runToolgate(['check', good, 'extra']).status).toBe(2);
  });

  it("shows each called worker's effective rules: the caller's shell rules, allowlist and floors", () => {
    const dir = tempDir('toolgate-check-worker-');
    const top = join(dir, 'top.yaml');
    writeFileSync(
      top,
      [
        'name: top',
        'approval: { default: ask }',
        'toolsets:',
        '  shell: { default: ask, rules: [{ pattern: rm, approval: blocked }] }',
        '  cli_execute: { allowed_binaries: [ls, cat], guardrails: { deny_commands: [{ pattern: "secret" }] } }',
        '  workers: { allowed_workers: [helper] }',
        '',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'helper.yaml'), 'name: helper\ntoolsets:\n  shell: { default: preApproved }\n');
    const run = runToolgate(['check', top]);
    expect(run.status).toBe(0);
    const helper = run.stdout.slice(run.stdout.indexOf('worker helper'));
    expect(helper).toMatch(/callers +top: shell: default ask; rules "rm" blocked/);
    expect(helper).toContain('cli_execute: ls, cat');
    expect(helper).toContain('deny_commands "secret"');
    expect(helper).toContain('approval floor: default ask');
    expect(helper).toMatch(/shell +ask +shell: a calling worker's decision/);
    const report = JSON.parse(runToolgate(['check', '--json', top]).stdout) as {
      workers: { name: string; callers: { worker: string; shell: { rules: { pattern: string }[] } }[] }[];
    };
    const called = report.workers.find((worker) => worker.name === 'helper')!;
    expect(called.callers.map((caller) => caller.worker)).toEqual(['top']);
    expect(called.callers[0]!.shell.rules[0]!.pattern).toBe('rm');
  });

  it('lists every saved rule with the file and line it is written on, when and by whom', () => {
    const dir = tempDir('toolgate-check-worker-');
    const top = join(dir, 'top.yaml');
    writeFileSync(top, 'name: top\ntoolsets:\n  shell: { default: ask }\n');
    const file = join(dir, 'toolgate.permissions.yaml');
    const none = runToolgate(['check', top]);
    expect(none.stdout).toContain(`saved rules: ${file} (none)`);
    writeFileSync(
      file,
      [
        'version: 1',
        'rules:',
        '  - worker: top',
        '    tool: shell',
        '    command: npm test',
        '    saved: 2026-03-01T09:30:00Z',
        '    by: terminal',
        '  - worker: top',
        '    tool: shell',
        '    prefix: git log',
        '    saved: 2026-03-02T08:00:00Z',
        '    by: mcp-elicitation',
        '',
      ].join('\n'),
    );
    const run = runToolgate(['check', top]);
    expect(run.status).toBe(0);
    const section = run.stdout.slice(run.stdout.indexOf('saved rules:'));
    expect(section).toMatch(/line 3 +worker top: shell .*npm test.* \(saved 2026-03-01T09:30:00Z by terminal\)/);
    expect(section).toMatch(/line 8 +worker top: shell .*git log.* \(saved 2026-03-02T08:00:00Z by mcp-elicitation\)/);
    const report = JSON.parse(runToolgate(['check', '--json', top]).stdout) as {
      permissionsFile: string;
      savedRules: { kind: string; line: number; file: string }[];
    };
    expect(report.permissionsFile).toBe(file);
    expect(report.savedRules.map((rule) => [rule.kind, rule.line, rule.file])).toEqual([
      ['command', 3, file],
      ['prefix', 8, file],
    ]);
    writeFileSync(file, 'version: 1\nrules:\n  - worker: top\n    tool: shell\n    comand: npm test\n');
    const broken = runToolgate(['check', top]);
    expect(broken.status).toBe(2);
    expect(broken.stderr).toContain(`${file}:`);
  });

  it('--path applies the work-directory confinement before the rules and says which refused', () => {
    const outside = runToolgate(['check', '--path', '../../README.md', 'examples/quickstart/worker.yaml'], { cwd: REPO_ROOT });
    expect(outside.status).toBe(1);
    expect(outside.stdout).toMatch(/filesystem\.read_file +blocked +PATH_OUTSIDE_ROOT/);
    expect(outside.stdout).not.toContain('no rule matched');
    const json = JSON.parse(
      runToolgate(['check', '--path', '/etc/passwd', '--json', 'examples/quickstart/worker.yaml'], { cwd: REPO_ROOT }).stdout,
    ) as { decision: string; by: string; refusal: { code: string } }[];
    expect(json.length).toBeGreaterThan(0);
    for (const check of json) expect(check).toMatchObject({ decision: 'blocked', by: 'outside-root', refusal: { code: 'PATH_OUTSIDE_ROOT' } });
    const inside = runToolgate(['check', '--path', 'tools.ts', 'examples/quickstart/worker.yaml'], { cwd: REPO_ROOT });
    expect(inside.status).toBe(0);
    expect(inside.stdout).toMatch(/filesystem\.read_file +preApproved +no rule matched/);
  });
});
