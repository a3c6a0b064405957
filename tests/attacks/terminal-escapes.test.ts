/**
 * Untrusted text never reaches the operator's terminal raw, and the approver sees everything
 * that will run (issue 23, sections 3 and 4). Escape sequences (OSC 52 writes the clipboard,
 * `ESC [2J` clears the screen, `OSC 0` sets the title), carriage returns and backspaces that
 * overwrite a line, bidi overrides and zero-width characters, put where an attacker can put
 * them: the model's text (streamed and final), a tool's error, a file name in a tool input, an
 * executable tool's description, an audit log, the command words of a [w]ider prompt; and
 * whitespace padding that pushed the rest of an input out of sight.
 *
 * The real CLI, offline with the scripted model; a real pseudo-terminal where a person types.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/fs.js';
import { HAS_SCRIPT, inPty } from '../helpers/pty.js';
import { HOSTILE, rawControls } from '../helpers/terminal.js';

type Turn = { toolCalls?: { toolName: string; input: unknown }[]; text?: string };
const call = (toolName: string, input: unknown): Turn => ({ toolCalls: [{ toolName, input }] });
const SECRET = 'terminal-escapes-secret-0123456789abcdef';

/** A project: a worker whose shell and file tools ask, an executable tool that fails loudly. */
function project(turns: Turn[]): { dir: string; worker: string } {
  const dir = tempDir('toolgate-escapes-');
  const worker = join(dir, 'worker.yaml');
  writeFileSync(
    worker,
    'name: escapes\nmodel: scripted:./script.json\ntoolsets:\n  shell:\n    default: ask\n  filesystem:\n    approval: { default: ask }\n' +
      '  executables:\n    dirs: [./toolgate-tools]\n    approval: { default: preApproved }\n',
  );
  writeFileSync(join(dir, 'script.json'), JSON.stringify({ turns }));
  mkdirSync(join(dir, 'toolgate-tools'));
  const tool = join(dir, 'toolgate-tools', 'loud');
  // Its description and its failure both carry escape sequences.
  writeFileSync(
    tool,
    [
      '#!/bin/sh',
      'if [ "$1" = description ]; then',
      `  printf '%s\\n' '{"name": "loud", "description": "Loud \\u001b]0;pwned\\u0007 tool \\u202eexe.txt \\u001b[2J", "input_schema": {"type": "object"}}'`,
      '  exit 0',
      'fi',
      "printf 'boom \\033]52;c;ZWNobyBwd25lZA==\\007 \\033[2J\\033[H \\033]0;pwned\\007 done\\r\\b\\b\\n' >&2",
      'exit 3',
      '',
    ].join('\n'),
  );
  chmodSync(tool, 0o755);
  return { dir, worker };
}

function toolgate(dir: string, args: string[]) {
  const run = spawnSync(process.execPath, [CLI, ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    input: '',
    env: { ...process.env, XDG_CACHE_HOME: join(dir, '.cache'), TOOLGATE_STATE_SECRET: SECRET },
  });
  return { status: run.status, stdout: String(run.stdout), stderr: String(run.stderr) };
}

const hostileTexts = Object.entries(HOSTILE);

describe('no command writes untrusted text raw', () => {
  it('toolgate run: the model text, tool errors, file names in inputs and the answer are shown escaped', () => {
    const turns: Turn[] = [
      ...hostileTexts.map(([name, text]): Turn => ({ text: `${name}: ${text}`, ...call('write_file', { path: `${text}.txt`, content: text }) })),
      call('custom_tool_loud', {}),
      call('task_completion', { result: `answer ${Object.values(HOSTILE).join(' ')}` }),
    ];
    const { dir, worker } = project(turns);
    const run = toolgate(dir, ['run', worker, 'go']);
    expect(run.status, run.stderr).toBe(0);
    expect(rawControls(run.stderr), run.stderr).toEqual([]);
    expect(rawControls(run.stdout), run.stdout).toEqual([]);
    // What was escaped is still there to read.
    expect(run.stderr).toContain('\\x1b]52;c;ZWNobyBwd25lZA==\\x07');
    expect(run.stderr).toContain('✗ custom_tool_loud');
    expect(run.stdout).toContain('answer \\x1b]52;c;');
    expect(run.stdout).toContain('safe\\u202etxt.exe');

    // --json stays exact: the same text, spelled as JSON escapes.
    const json = toolgate(dir, ['run', worker, 'go', '--json']);
    expect(rawControls(json.stdout)).toEqual([]);
    expect((JSON.parse(json.stdout) as { text: string }).text).toBe(`answer ${Object.values(HOSTILE).join(' ')}`);
  });

  it('toolgate run --defer-approvals lists the requests escaped, the whole input readable', () => {
    const padding: [string, string][] = [
      [' '.repeat(4100), '⟨4100 spaces⟩'],
      ['\t'.repeat(300), '⟨300 tabs⟩'],
      ['\u00a0'.repeat(500), '⟨500 × U+00A0⟩'],
      ['\u2028'.repeat(64), '⟨64 × U+2028⟩'],
    ];
    for (const [pad, mark] of padding) {
      const command = `python3 -c "print('hello')${pad};import os;os.remove('victim')"`;
      const { dir, worker } = project([call('shell', { command }), call('task_completion', { result: 'x' })]);
      const run = toolgate(dir, ['run', worker, 'go', '--defer-approvals', '--state-file', 'run.json']);
      expect(run.status, run.stderr).toBe(4);
      expect(run.stdout, mark).toContain(`${mark};import os;os.remove('victim')`);
      expect(rawControls(run.stdout), mark).toEqual([]);
      // The "always" sentence is not the input JSON-escaped twice.
      expect(run.stdout).not.toContain('\\"');
    }
    for (const [name, text] of hostileTexts) {
      const { dir, worker } = project([call('write_file', { path: `${text}.txt`, content: text }), call('task_completion', { result: 'x' })]);
      const run = toolgate(dir, ['run', worker, 'go', '--defer-approvals', '--state-file', 'run.json']);
      expect(run.status, run.stderr).toBe(4);
      expect(rawControls(run.stdout), name).toEqual([]);
      expect(rawControls(run.stderr), name).toEqual([]);
    }
  });

  it('toolgate tools list / describe / call escape what an executable tool says about itself', () => {
    const { dir } = project([]);
    for (const args of [['tools', 'list'], ['tools', 'describe', 'loud'], ['tools', 'validate'], ['tools', 'call', 'loud', '{}', '--yes']]) {
      const run = toolgate(dir, args);
      expect(rawControls(run.stdout), args.join(' ')).toEqual([]);
      expect(rawControls(run.stderr), args.join(' ')).toEqual([]);
    }
    const described = toolgate(dir, ['tools', 'describe', 'loud']);
    expect(described.stdout).toContain('Loud \\x1b]0;pwned\\x07 tool \\u202eexe.txt');
    const json = toolgate(dir, ['tools', 'describe', 'loud', '--json']);
    expect(rawControls(json.stdout)).toEqual([]);
    expect((JSON.parse(json.stdout) as { description: string }).description).toContain('\u001b]0;pwned\u0007');
  });

  it('toolgate audit summarises a log written by a hostile run without replaying its escapes', () => {
    const { dir, worker } = project([
      ...hostileTexts.map(([, text]) => call('write_file', { path: `${text}.txt`, content: text })),
      call('custom_tool_loud', {}),
      call('task_completion', { result: 'x' }),
    ]);
    const log = join(dir, 'audit.jsonl');
    expect(toolgate(dir, ['run', worker, 'go', '--deny', '--audit', log]).status).toBe(0);
    // A log edited by hand (or by anyone who could write it) holds anything.
    const forged = Object.values(HOSTILE).map((text) =>
      JSON.stringify({ time: text, runId: text, event: 'tool-call', worker: text, toolName: text, input: { path: text }, decision: text, decidedBy: text, flag: text, reason: text, durationMs: 5 }),
    );
    writeFileSync(log, `${readFileSync(log, 'utf8')}${forged.join('\n')}\n`);
    for (const args of [['audit', log], ['audit', log, '--json']]) {
      const summary = toolgate(dir, args);
      expect(summary.status, summary.stderr).toBe(0);
      expect(rawControls(summary.stdout), args.join(' ')).toEqual([]);
    }
  });

  it('error messages that quote a file or a tool are escaped', () => {
    const { dir } = project([]);
    for (const text of Object.values(HOSTILE)) {
      const run = toolgate(dir, ['run', join(dir, `${text}.yaml`), 'go']);
      expect(run.status).toBe(1);
      expect(rawControls(run.stderr), JSON.stringify(text)).toEqual([]);
    }
  });
});

describe.skipIf(!HAS_SCRIPT)('on a terminal', () => {
  /** The pseudo-terminal adds carriage returns to line ends itself. */
  const ownControls = ['\n', '\r'];

  it('the prompt shows the whole input past any padding, and the model text streams escaped', async () => {
    for (const [pad, mark] of [
      [' '.repeat(4100), '⟨4100 spaces⟩'],
      ['\n'.repeat(300), '⟨299 empty lines⟩'],
    ] as const) {
      const content = `print('hello')${pad};import os;os.remove('victim')`;
      const { dir, worker } = project([
        { text: `thinking ${Object.values(HOSTILE).join(' ')}`, ...call('write_file', { path: 'a.py', content }) },
        call('task_completion', { result: 'x' }),
      ]);
      const session = inPty([process.execPath, CLI, 'run', worker, 'go'], { cwd: dir, env: { ...process.env, XDG_CACHE_HOME: join(dir, '.cache') } });
      await session.waitFor('[s]ave >');
      const shown = session.output();
      expect(shown, mark).toContain(mark);
      expect(shown, mark).toContain(";import os;os.remove('victim')");
      expect(shown).toContain('thinking \\x1b]52;c;');
      session.type('d');
      await session.waitFor('reason for the model');
      session.type('\r');
      expect(await session.exit).toBe(0);
      expect(rawControls(session.output(), ownControls)).toEqual([]);
    }
  });

  it('the [w]ider prompt shows the command words escaped', async () => {
    const command = `echo '${HOSTILE.title}' '${HOSTILE.bidi}' '${HOSTILE.osc52}'`;
    const { dir, worker } = project([call('shell', { command }), call('task_completion', { result: 'x' })]);
    const session = inPty([process.execPath, CLI, 'run', worker, 'go'], { cwd: dir, env: { ...process.env, XDG_CACHE_HOME: join(dir, '.cache') } });
    const asked = await session.waitFor('[s]ave >');
    session.type('w');
    await session.waitFor('(the command is:');
    session.type(`echo \u001b]0;typed\u0007\r`);
    // The typed prefix is refused (it does not split, or does not cover), and the question comes back.
    await session.waitFor('[s]ave >', asked);
    session.type('d');
    await session.waitFor('reason for the model');
    session.type('\r');
    expect(await session.exit).toBe(0);
    const shown = session.output();
    expect(shown).toContain('\\x1b]0;pwned\\x07');
    expect(rawControls(shown, ownControls)).toEqual([]);
  });
});
