/**
 * `toolgate/temporal` as a package entry: importing `toolgate` never loads Temporal; without the
 * Temporal SDK `toolgate/temporal` fails with one clear line; and the workflow module (what
 * `workflowsPath` names, bundled into Temporal's workflow sandbox) imports nothing but
 * `@temporalio/workflow` and toolgate's pure modules. Runs against the built package (dist/).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const WITHOUT_TEMPORAL = join(ROOT, 'tests', 'fixtures', 'temporal', 'without-temporal.mjs');

/** Runs an ES module snippet with node from the package root, where `toolgate` names this package. */
function node(code: string, options: { withoutTemporal?: boolean } = {}) {
  const args = [...(options.withoutTemporal ? ['--import', WITHOUT_TEMPORAL] : []), '--input-type=module', '-e', code];
  return spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
}

describe('the toolgate/temporal entry', () => {
  it('importing toolgate loads no Temporal package, even when none is installed', () => {
    const run = node("const toolgate = await import('toolgate'); console.log(typeof toolgate.runWorker);", { withoutTemporal: true });
    expect(run.stderr).not.toContain('loading @temporalio');
    expect(run.stdout.trim()).toBe('function');
    expect(run.status).toBe(0);
  });

  it('without the Temporal SDK, toolgate/temporal fails with one line saying what to install', () => {
    const run = node("await import('toolgate/temporal');", { withoutTemporal: true });
    expect(run.status).not.toBe(0);
    const lines = run.stderr.split('\n').filter((line) => line.includes('toolgate/temporal needs the Temporal SDK'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('missing: @temporalio/activity, @temporalio/common, @temporalio/workflow');
    expect(lines[0]).toContain('npm install @temporalio/client @temporalio/worker @temporalio/workflow @temporalio/activity @temporalio/common');
    // No stack trace into the module loader.
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('with the SDK it exports the contract', () => {
    const run = node(
      "const t = await import('toolgate/temporal'); console.log(JSON.stringify([typeof t.toolgateActivities, t.workflowsPath, t.TOOLGATE_RUN, t.PENDING_QUERY, t.ANSWER_UPDATE]));",
    );
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual(['function', join(ROOT, 'dist', 'temporal', 'workflows.js'), 'toolgateRun', 'toolgate.pending', 'toolgate.answer']);
  });

  it('loads through require as well (no top-level await)', () => {
    const run = spawnSync(process.execPath, ['-e', "console.log(typeof require('toolgate/temporal').toolgateActivities)"], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('function');
  });

  it('toolgateActivities refuses unknown and bad options', () => {
    const run = node(
      "const { toolgateActivities } = await import('toolgate/temporal'); for (const options of [{ modle: 'x' }, { heartbeatTimeout: 'soon' }, { maxSteps: -1 }, { readOnlyAttempts: 0 }]) { try { toolgateActivities(options); console.log('accepted'); } catch (error) { console.log(error.code + ': ' + error.message); } }",
    );
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toContain("CONFIG_INVALID: toolgateActivities: unknown option 'modle'");
    expect(lines[1]).toContain('heartbeatTimeout: "soon" is not a duration');
    expect(lines[2]).toMatch(/^CONFIG_INVALID: .*maxSteps/);
    expect(lines[3]).toContain('readOnlyAttempts is 0');
  });
});

/** Every module `entry` imports, transitively: relative files (absolute paths) and packages (their names). */
function importGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    const source = readFileSync(file, 'utf8');
    const specifiers = [
      ...source.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/gm),
      ...source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
      ...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ...source.matchAll(/\brequire\(\s*['"]([^'"]+)['"]\s*\)/g),
    ].map((match) => match[1]!);
    for (const specifier of specifiers) {
      const target = specifier.startsWith('.') ? resolve(dirname(file), specifier) : specifier;
      if (seen.has(target)) continue;
      seen.add(target);
      if (specifier.startsWith('.')) visit(target);
    }
  };
  visit(entry);
  return seen;
}

const DIST = join(ROOT, 'dist');

describe('what each entry loads', () => {
  it('toolgate reaches no file of toolgate/temporal and no Temporal package', () => {
    const graph = [...importGraph(join(DIST, 'index.js'))];
    expect(graph).toContain(join(DIST, 'worker', 'run-loop.js'));
    expect(graph.filter((module) => module.startsWith(join(DIST, 'temporal')) || module.startsWith('@temporalio'))).toEqual([]);
  });

  it('the workflow module imports only @temporalio/workflow and pure modules: no addon, no ai, no Node built-ins', () => {
    const source = readFileSync(join(DIST, 'temporal', 'workflows.js'), 'utf8');
    expect(source).not.toMatch(/\bimport\s*\(/);
    const graph = [...importGraph(join(DIST, 'temporal', 'workflows.js'))].map((module) => (module.startsWith(DIST) ? module.slice(DIST.length + 1) : module));
    expect(graph.sort()).toEqual(['@temporalio/workflow', 'temporal/answers.js', 'temporal/contract.js', 'temporal/durable-loop.js']);
  });
});
