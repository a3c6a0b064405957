/**
 * `toolgate tools ...` as a user runs it: real subprocesses of the built CLI (`npm run build:ts`
 * first), real tool directories, a throw-away HOME and XDG_CACHE_HOME.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, runToolgate, type CliRun } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { HAS_SCRIPT, inPty } from './helpers/pty.js';

const EXAMPLES = join(import.meta.dirname, '..', 'examples', 'executable-tools');

interface Project {
  root: string;
  home: string;
  cache: string;
  tools: string;
}

function project(): Project {
  const root = tempDir();
  const home = join(root, 'home');
  mkdirSync(home);
  return { root, home, cache: join(root, 'xdg-cache'), tools: join(root, 'toolgate-tools') };
}

/** `toolgate tools <args>` in the project, with no terminal on stdin. */
function tools(p: Project, args: readonly string[], env: Record<string, string> = {}): CliRun {
  return runToolgate(['tools', ...args], {
    cwd: p.root,
    input: '',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: p.home, XDG_CACHE_HOME: p.cache, ...env },
  });
}

function protocolTool(dir: string, name: string, body: string, schema = '{"type":"object"}'): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh\nif [ "$1" = description ]; then\ncat <<'EOF'\n{"name": "${name}", "description": "The ${name} tool", "input_schema": ${schema}}\nEOF\nexit 0\nfi\n${body}\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

function json(run: CliRun): any {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`not JSON (exit ${run.status}): ${run.stdout}\n${run.stderr}`);
  }
}

describe('toolgate tools', () => {
  it('prints its help and rejects unknown commands with exit 2', () => {
    const p = project();
    const help = tools(p, ['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('toolgate tools <command>');
    const unknown = tools(p, ['frobnicate']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown tools command 'frobnicate'");
    expect(tools(p, ['describe']).status).toBe(2);
    expect(runToolgate(['--help']).stdout).toContain('tools <list|describe|call|validate|new>');
  });

  it('validates the shipped examples', () => {
    const p = project();
    const run = tools(p, ['validate', EXAMPLES]);
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('5 valid tool(s), 0 problem(s)');
    const listed = json(tools(p, ['list', '--dir', EXAMPLES, '--json']));
    expect(listed.tools.map((t: { name: string; format: string }) => `${t.name}:${t.format}`)).toEqual([
      'count_lines:manifest',
      'days_between:docstring',
      'slugify:docstring',
      'today:protocol',
      'word_stats:protocol',
    ]);
    const slug = json(tools(p, ['call', 'slugify', '{"title": "Hello, Forge World!"}', '--dir', EXAMPLES, '--yes', '--json']));
    expect(slug.result).toEqual({ slug: 'hello-forge-world' });
    const bin = join(import.meta.dirname, '..', 'node_modules', '.bin');
    const withTsx = { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    const days = json(tools(p, ['call', 'days_between', '{"from": "2024-02-01", "to": "2024-03-01"}', '--dir', EXAMPLES, '--yes', '--json'], withTsx));
    expect(days.result).toEqual({ days: 29 });
    // `{ "error": … }` on stdout is the tool reporting an error: a failed call naming it
    const notADate = tools(p, ['call', 'days_between', '{"from": "2025-02-30", "to": "2025-03-01"}', '--dir', EXAMPLES, '--yes', '--json'], withTsx);
    expect(notADate.status).toBe(1);
    expect(JSON.parse(notADate.stdout).error).toEqual({ code: 'TOOL_FAILED', message: "tool 'days_between' reported an error: '2025-02-30' is not a date written YYYY-MM-DD" });
    const noTsx = tools(p, ['call', 'days_between', '{"from": "2024-01-01", "to": "2024-01-02"}', '--dir', EXAMPLES, '--yes'], { PATH: '/usr/bin:/bin' });
    expect(noTsx.status).not.toBe(0);
    expect(noTsx.stderr).toContain('none of tsx, bun is on PATH');
    const stats = json(tools(p, ['call', 'word_stats', '{"text": "a b a", "top": 1}', '--dir', EXAMPLES, '--yes', '--json']));
    expect(stats.result).toMatchObject({ words: 3, top_words: [{ word: 'a', count: 2 }] });
    writeFileSync(join(p.root, 'notes.txt'), 'todo\ndone\ntodo later\n');
    const counted = tools(p, ['call', 'count_lines', '{"path": "notes.txt", "contains": "todo"}', '--dir', EXAMPLES, '--yes']);
    expect(counted.status, counted.stderr).toBe(0);
    expect(JSON.parse(counted.stdout)).toEqual({ lines: 2 });
  });

  for (const lang of ['python', 'node', 'bash']) {
    for (const manifest of [false, true]) {
      const kind = manifest ? 'tool.yaml' : 'protocol';
      it(`new --lang ${lang} (${kind}) writes a tool that validate accepts and call runs`, () => {
        const p = project();
        const created = tools(p, ['new', 'hello', '--lang', lang, ...(manifest ? ['--manifest'] : [])]);
        expect(created.status, created.stderr).toBe(0);
        expect(created.stdout).toContain('Created toolgate-tools/');
        const validated = tools(p, ['validate']);
        expect(validated.status, validated.stdout).toBe(0);
        expect(validated.stdout).toContain('1 valid tool(s), 0 problem(s)');
        const input = lang === 'bash' && !manifest ? '{"text": "hi"}' : '{"name": "Ada"}';
        const called = tools(p, ['call', 'hello', input, '--yes']);
        expect(called.status, called.stderr).toBe(0);
        const expected = lang === 'bash' ? (manifest ? 'Hello, Ada!' : '"received"') : '"greeting": "Hello, Ada!"';
        expect(called.stdout).toContain(expected);
        const again = tools(p, ['new', 'hello', '--lang', lang]);
        expect(again.status).toBe(1);
        expect(again.stderr).toContain('already exists');
      });
    }
  }

  it('new refuses bad names and languages', () => {
    const p = project();
    for (const args of [['new', '../escape'], ['new', 'ok', '--lang', 'ruby'], ['new', 'a b']]) {
      const run = tools(p, args);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('INVALID_INPUT');
    }
    expect(existsSync(join(p.root, 'escape.py'))).toBe(false);
  });

  it('list shows a table, problems and the project-over-global override', () => {
    const p = project();
    protocolTool(p.tools, 'weather', 'echo project');
    protocolTool(join(p.home, '.toolgate', 'tools'), 'weather', 'echo global');
    protocolTool(join(p.home, '.toolgate', 'tools'), 'global_only', 'echo global');
    writeFileSync(join(p.tools, 'broken'), '#!/bin/sh\nexit 3\n');
    chmodSync(join(p.tools, 'broken'), 0o755);
    const run = tools(p, ['list']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^NAME\s+FORMAT\s+DESCRIPTION\s+SOURCE$/m);
    expect(run.stdout).toMatch(/^weather\s+protocol\s+The weather tool\s+toolgate-tools\/weather$/m);
    expect(run.stdout).toMatch(/^global_only\s+protocol/m);
    expect(run.stdout).toContain('Problems (2):');
    expect(run.stdout).toContain('invalid: toolgate-tools/broken');
    expect(run.stdout).toContain('exit code 3');
    expect(run.stdout).toContain('shadowed:');
    expect(tools(p, ['call', 'weather', '--yes']).stdout.trim()).toBe('project');

    const listed = json(tools(p, ['list', '--json']));
    expect(listed.tools[0]).toMatchObject({ name: 'weather', modelName: 'custom_tool_weather', source: join(p.tools, 'weather') });
    expect(listed.diagnostics.map((d: { kind: string }) => d.kind).sort()).toEqual(['invalid', 'shadowed']);
  });

  it('describe shows a tool, in text and JSON; an unknown name is TOOL_NOT_FOUND', () => {
    const p = project();
    protocolTool(p.tools, 'weather', 'cat', '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}');
    const run = tools(p, ['describe', 'weather']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('weather (protocol tool)');
    expect(run.stdout).toContain('model name:  custom_tool_weather');
    expect(run.stdout).toContain('"city"');
    const described = json(tools(p, ['describe', 'weather', '--json']));
    expect(described.inputSchema.required).toEqual(['city']);
    const missing = tools(p, ['describe', 'nope']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('TOOL_NOT_FOUND');
    expect(missing.stderr).toContain('known tools: weather');
    expect(json(tools(p, ['describe', 'nope', '--json'])).error.code).toBe('TOOL_NOT_FOUND');
  });

  it('call refuses without a terminal and without --yes, and nothing runs', () => {
    const p = project();
    const marker = join(p.root, 'ran');
    protocolTool(p.tools, 'touchy', `touch '${marker}'; echo ok`);
    const run = tools(p, ['call', 'touchy', '{}']);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('APPROVAL_DENIED');
    expect(run.stderr).toContain('--yes');
    expect(existsSync(marker)).toBe(false);
    const approved = tools(p, ['call', 'touchy', '{}', '--yes']);
    expect(approved.status).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });

  it.skipIf(!HAS_SCRIPT)('call asks with the run prompt on a terminal: single keys, no always, Ctrl-C interrupts', async () => {
    const p = project();
    const marker = join(p.root, 'ran');
    protocolTool(p.tools, 'touchy', `touch '${marker}'; echo ran-it`);
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: p.home, XDG_CACHE_HOME: p.cache };
    const inTerminal = () => inPty([process.execPath, CLI, 'tools', 'call', 'touchy', '{"a": 1}'], { cwd: p.root, env });
    // d, then the reason on its own line
    const denied = inTerminal();
    await denied.waitFor('[a]pprove  [d]eny >');
    denied.type('d');
    await denied.waitFor('reason for the model');
    denied.type('not today\r');
    expect(await denied.exit).toBe(1);
    expect(denied.output()).toContain('? approve touchy');
    expect(denied.output()).toContain('    a: 1');
    expect(denied.output()).not.toContain('a[l]ways');
    expect(denied.output()).toContain('APPROVAL_DENIED');
    expect(denied.output()).toContain('not today');
    expect(existsSync(marker)).toBe(false);
    // l is not an answer for one call; Ctrl-D (end of input) then denies
    const unknown = inTerminal();
    await unknown.waitFor('[a]pprove  [d]eny >');
    unknown.type('l');
    const after = await unknown.waitFor("'l' is not an answer");
    await unknown.waitFor('[a]pprove  [d]eny >', after);
    unknown.type('\u0004');
    expect(await unknown.exit).toBe(1);
    expect(existsSync(marker)).toBe(false);
    // Ctrl-C at the prompt: interrupted, exit 130, nothing ran
    const interrupted = inTerminal();
    await interrupted.waitFor('[a]pprove  [d]eny >');
    interrupted.type('\u0003');
    expect(await interrupted.exit).toBe(130);
    expect(interrupted.output()).toContain('interrupted');
    expect(existsSync(marker)).toBe(false);
    // a approves with one key (it used to deny silently)
    const approved = inTerminal();
    await approved.waitFor('[a]pprove  [d]eny >');
    approved.type('a');
    expect(await approved.exit, approved.output()).toBe(0);
    expect(approved.output()).toContain('ran-it');
    expect(existsSync(marker)).toBe(true);
  });

  it('call checks the input first and reports failures with exit 1', () => {
    const p = project();
    protocolTool(p.tools, 'strict', 'echo ok', '{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}');
    protocolTool(p.tools, 'fails', "echo 'it broke' >&2; exit 2");
    const notJson = tools(p, ['call', 'strict', '{n: 1}', '--yes']);
    expect(notJson.status).toBe(1);
    expect(notJson.stderr).toContain('INVALID_INPUT: the input is not valid JSON');
    const invalid = tools(p, ['call', 'strict', '{"n": "x"}']);
    expect(invalid.status).toBe(1);
    expect(invalid.stderr).toContain('at /n:');
    const failed = tools(p, ['call', 'fails', '--yes', '--json']);
    expect(failed.status).toBe(1);
    expect(json(failed).error).toMatchObject({ code: 'TOOL_FAILED' });
    expect(json(failed).error.message).toContain('it broke');
  });

  it('call --timeout kills a tool that outlives it', () => {
    const p = project();
    protocolTool(p.tools, 'slow', 'sleep 30');
    const started = Date.now();
    const run = tools(p, ['call', 'slow', '--yes', '--timeout', '0.5']);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('TIMEOUT');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('validate fails with every problem listed', () => {
    const p = project();
    protocolTool(p.tools, 'good', 'cat');
    protocolTool(p.tools, 'bad_schema', 'cat', '{"type":"object","properties":{"a":{"type":"nope"}}}');
    writeFileSync(join(p.tools, 'plain.txt'), 'x');
    const run = tools(p, ['validate', 'toolgate-tools']);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/^ok\s+good\s+protocol/m);
    expect(run.stdout).toContain('does not compile');
    expect(run.stdout).toContain('plain.txt');
    expect(run.stdout).toContain('1 valid tool(s), 2 problem(s)');
    const report = json(tools(p, ['validate', 'toolgate-tools', '--json']));
    expect(report.valid).toBe(false);
    expect(report.diagnostics).toHaveLength(2);
    const missing = tools(p, ['validate', 'no-such-dir']);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toContain('missing directory');
  });

  it('keeps its cache under XDG_CACHE_HOME, never in HOME', () => {
    const p = project();
    protocolTool(p.tools, 'one', 'cat');
    expect(tools(p, ['list']).status).toBe(0);
    expect(existsSync(join(p.cache, 'toolgate', 'executable-tools.json'))).toBe(true);
    expect(existsSync(join(p.home, '.cache'))).toBe(false);
    const cached = JSON.parse(readFileSync(join(p.cache, 'toolgate', 'executable-tools.json'), 'utf8'));
    expect(Object.keys(cached.entries)).toEqual([join(p.tools, 'one')]);
    const second = json(tools(p, ['list', '--json']));
    expect(second.stats).toMatchObject({ spawned: 0, fromCache: 1 });
    const noCache = json(tools(p, ['list', '--json', '--no-cache']));
    expect(noCache.stats.spawned).toBe(1);
  });
});
