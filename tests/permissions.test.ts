/**
 * Keep what you approved (issue 25, item 8): the answer "save" writes the scope shown as a rule
 * in `toolgate.permissions.yaml` beside the worker file, and later runs — new processes — read
 * it. The real CLI with the scripted model (offline), on a real pseudo-terminal where a person
 * types; MCP elicitation with the official SDK client; two processes saving at once.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { HAS_SCRIPT, inPty } from './helpers/pty.js';

const PERMISSIONS = 'toolgate.permissions.yaml';
const SECRET = 'permissions-test-secret-0123456789abcdef';

type Turn = { toolCalls?: { toolName: string; input: unknown }[]; text?: string };
const shell = (command: string): Turn => ({ toolCalls: [{ toolName: 'shell', input: { command } }] });
const done: Turn = { toolCalls: [{ toolName: 'task_completion', input: { result: 'done' } }] };

const WORKER =
  'name: keeper\nmodel: scripted:./script.json\ntoolsets:\n  shell:\n    default: ask\n    rules:\n      - { pattern: rm, approval: blocked }\n' +
  '  filesystem:\n    approval: { default: ask, tools: { delete_file: blocked } }\n';

/** A project folder with the worker and a script for the next run. */
function project(): { dir: string; worker: string; script: (turns: Turn[]) => void } {
  const dir = tempDir();
  const worker = join(dir, 'worker.yaml');
  writeFileSync(worker, WORKER);
  return { dir, worker, script: (turns) => writeFileSync(join(dir, 'script.json'), JSON.stringify({ turns })) };
}

function toolgate(dir: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const run = spawnSync(process.execPath, [CLI, ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, XDG_CACHE_HOME: join(dir, '.cache'), TOOLGATE_STATE_SECRET: SECRET, ...env },
    input: '',
  });
  return { status: run.status, stdout: String(run.stdout), stderr: String(run.stderr) };
}

interface Record_ {
  toolName: string;
  input: { command?: string; path?: string };
  decision: string;
  decidedBy: string;
  errorCode?: string;
  savedRule?: { file: string; line: number; rule: string; saved: string };
}

function records(stdout: string): Record_[] {
  return (JSON.parse(stdout) as { toolCalls: Record_[] }).toolCalls;
}

describe.skipIf(!HAS_SCRIPT)('[s]ave at the terminal prompt', () => {
  it('writes the rule shown, with the file and the date; the next run does not ask for it but asks for another', async () => {
    const { dir, worker, script } = project();
    script([shell('touch saved.txt'), done]);
    const session = inPty([process.execPath, CLI, 'run', worker, 'go'], { cwd: dir, env: { ...process.env, XDG_CACHE_HOME: join(dir, '.cache') } });
    await session.waitFor('[s]ave >');
    const file = join(dir, PERMISSIONS);
    expect(session.output()).toContain(`[s]ave writes to ${file}: worker keeper: shell command exactly: touch saved.txt`);
    session.type('s');
    expect(await session.exit, session.output()).toBe(0);
    expect(session.output()).toMatch(
      new RegExp(`✓ saved worker keeper: shell command exactly: touch saved.txt in ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+ \\(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\)`),
    );
    expect(existsSync(join(dir, 'saved.txt'))).toBe(true);
    const saved = readFileSync(file, 'utf8');
    expect(saved).toContain('version: 1');
    expect(saved).toMatch(/- worker: keeper\n {4}tool: shell\n {4}command: touch saved.txt\n {4}saved: \S+Z\n {4}by: terminal\n/);

    // A new process, nobody to ask (fail closed): the saved command runs, another one is denied.
    rmSync(join(dir, 'saved.txt'));
    script([shell('touch saved.txt'), shell('touch saved.txt --other'), shell('touch other.txt'), done]);
    const next = toolgate(dir, ['run', worker, 'go', '--json']);
    expect(next.status, next.stderr).toBe(0);
    const calls = records(next.stdout);
    expect(calls[0]).toMatchObject({ toolName: 'shell', decision: 'preApproved', decidedBy: 'saved', savedRule: { file, rule: 'worker keeper: shell command exactly: touch saved.txt' } });
    expect(calls.slice(1).map((call) => [call.input.command, call.decision, call.decidedBy])).toEqual([
      ['touch saved.txt --other', 'denied', 'no-handler'],
      ['touch other.txt', 'denied', 'no-handler'],
    ]);
    expect(existsSync(join(dir, 'saved.txt'))).toBe(true);
    expect(existsSync(join(dir, 'other.txt'))).toBe(false);
  });
});

describe('saved rules', () => {
  it('never lift a block: a blocked command, a blocked tool, another worker', () => {
    const { dir, worker, script } = project();
    writeFileSync(join(dir, 'victim.txt'), 'keep');
    const rule = (tool: string, scope: string, name = 'keeper') => `  - worker: ${name}\n    tool: ${tool}\n    ${scope}\n    saved: 2026-01-01T00:00:00Z\n    by: terminal\n`;
    writeFileSync(
      join(dir, PERMISSIONS),
      'version: 1\nrules:\n' +
        rule('shell', 'command: rm victim.txt') +
        rule('shell', 'prefix: rm') +
        rule('delete_file', 'path: victim.txt') +
        rule('shell', 'command: touch elsewhere.txt', 'another-worker'),
    );
    script([
      shell('rm victim.txt'),
      { toolCalls: [{ toolName: 'delete_file', input: { path: 'victim.txt' } }] },
      shell('touch elsewhere.txt'),
      done,
    ]);
    const run = toolgate(dir, ['run', worker, 'go', '--json']);
    expect(run.status, run.stderr).toBe(0);
    expect(records(run.stdout).map((call) => [call.toolName, call.decision, call.decidedBy, call.errorCode])).toEqual([
      ['shell', 'blocked', 'rule', 'COMMAND_BLOCKED'],
      ['delete_file', 'blocked', 'config', 'TOOL_BLOCKED'],
      ['shell', 'denied', 'no-handler', undefined],
    ]);
    expect(readFileSync(join(dir, 'victim.txt'), 'utf8')).toBe('keep');
    expect(existsSync(join(dir, 'elsewhere.txt'))).toBe(false);
  });

  it('a malformed permissions file stops the run with file:line:column', () => {
    const entry = '  - worker: keeper\n    tool: shell\n    command: ls\n    saved: 2026-01-01T00:00:00Z\n    by: terminal\n';
    const cases: [string, string, string][] = [
      ['unknown key', `version: 1\nrules:\n${entry.replace('command: ls', 'comand: ls')}`, ':5:5:'],
      ['a list where a name goes', 'version: 1\nrules:\n  - worker: [keeper\n', ':3:13:'],
      ['an unterminated quote', 'version: 1\nrules:\n  - worker: keeper\n    tool: "shell\n', ':5:1:'],
      ['two scopes', `version: 1\nrules:\n${entry.replace('command: ls', 'command: ls\n    path: a')}`, ':3:5:'],
      ['bad date', `version: 1\nrules:\n${entry.replace('2026-01-01T00:00:00Z', 'tomorrow')}`, ':3:5:'],
      ['bad saver', `version: 1\nrules:\n${entry.replace('by: terminal', 'by: the-agent')}`, ':7:9:'],
      ['a path out of the work directory', `version: 1\nrules:\n${entry.replace('command: ls', 'path: ../../etc/passwd')}`, ':3:5:'],
      ['another version', 'version: 9\nrules: []\n', ':1:1:'],
    ];
    for (const [what, text, place] of cases) {
      const { dir, worker, script } = project();
      script([done]);
      writeFileSync(join(dir, PERMISSIONS), text);
      const run = toolgate(dir, ['run', worker, 'go']);
      expect(run.status, what).toBe(1);
      expect(run.stderr, what).toContain('CONFIG_INVALID');
      expect(run.stderr, what).toContain(`${join(dir, PERMISSIONS)}${place}`);
    }
  });

  it('a deferred answer <id>=save writes the rule; an input too long to review takes neither save nor always', () => {
    const { dir, worker, script } = project();
    script([shell('touch deferred.txt'), done]);
    const started = toolgate(dir, ['run', worker, 'go', '--defer-approvals', '--state-file', 'run.json']);
    expect(started.status, started.stderr).toBe(4);
    expect(started.stdout).toContain(`save writes to ${join(dir, PERMISSIONS)}: worker keeper: shell command exactly: touch deferred.txt`);
    expect(started.stdout).toContain('(approve | always | save | deny[:reason])');
    const [request] = (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string; review: string; inputSha256: string }[] }).pending;
    expect(request!.review).toBe('command: touch deferred.txt');
    const resumed = toolgate(dir, ['resume', 'run.json', '--answers', `${request!.id}=save`, '--state-ledger', join(dir, 'ledger')]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/✓ saved worker keeper: shell command exactly: touch deferred.txt in \S+toolgate\.permissions\.yaml:\d+/);
    expect(readFileSync(join(dir, PERMISSIONS), 'utf8')).toContain('by: deferred-answer');
    expect(existsSync(join(dir, 'deferred.txt'))).toBe(true);

    // An input too long to show whole: approve once or deny.
    const long = `${'ab'.repeat(40_000)}; rm -rf ~`;
    script([{ toolCalls: [{ toolName: 'write_file', input: { path: 'long.txt', content: long } }] }, done]);
    const waiting = toolgate(dir, ['run', worker, 'go', '--defer-approvals', '--state-file', 'long.json']);
    expect(waiting.status, waiting.stderr).toBe(4);
    expect(waiting.stdout).toMatch(/too long to show whole \(\d+ bytes, sha256 [0-9a-f]{64}\): answer approve or deny only/);
    expect(waiting.stdout).not.toContain('save writes to');
    const [longRequest] = (JSON.parse(readFileSync(join(dir, 'long.json'), 'utf8')) as { pending: { id: string }[] }).pending;
    for (const answer of ['save', 'always']) {
      const refused = toolgate(dir, ['resume', 'long.json', '--answers', `${longRequest!.id}=${answer}`, '--state-ledger', join(dir, 'ledger')]);
      expect(refused.status, answer).toBe(1);
      expect(refused.stderr, answer).toContain('too long to review');
    }
    const once = toolgate(dir, ['resume', 'long.json', '--answers', `${longRequest!.id}=approve`, '--state-ledger', join(dir, 'ledger')]);
    expect(once.status, once.stderr).toBe(0);
    expect(readFileSync(join(dir, 'long.txt'), 'utf8')).toBe(long);
  });

  it('file tools save their path: any later write of that path runs, another path is asked', () => {
    const { dir, worker, script } = project();
    script([{ toolCalls: [{ toolName: 'write_file', input: { path: './notes/a.txt', content: 'one' } }] }, done]);
    const started = toolgate(dir, ['run', worker, 'go', '--defer-approvals', '--state-file', 'run.json']);
    expect(started.stdout).toContain('worker keeper: write_file on the path notes/a.txt, whatever else its input says');
    const [request] = (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string }[] }).pending;
    expect(toolgate(dir, ['resume', 'run.json', '--answers', `${request!.id}=save`, '--state-ledger', join(dir, 'ledger')]).status).toBe(0);
    script([
      { toolCalls: [{ toolName: 'write_file', input: { path: 'notes/a.txt', content: 'two' } }] },
      { toolCalls: [{ toolName: 'write_file', input: { path: 'notes/../notes/a.txt', content: 'three' } }] },
      { toolCalls: [{ toolName: 'write_file', input: { path: 'notes/b.txt', content: 'four' } }] },
      done,
    ]);
    const next = toolgate(dir, ['run', worker, 'go', '--json']);
    expect(records(next.stdout).map((call) => [call.input.path, call.decision, call.decidedBy])).toEqual([
      ['notes/a.txt', 'preApproved', 'saved'],
      ['notes/../notes/a.txt', 'denied', 'no-handler'],
      ['notes/b.txt', 'denied', 'no-handler'],
    ]);
    expect(readFileSync(join(dir, 'notes/a.txt'), 'utf8')).toBe('two');
  });

  it('two processes saving at once both land', async () => {
    const { dir, worker } = project();
    const binding = join(import.meta.dirname, '..', 'native', 'binding.js');
    const child = (name: string) =>
      new Promise<number | null>((resolve) => {
        const code = `
          const native = await import(${JSON.stringify(binding)});
          const plan = await native.planWorker(${JSON.stringify(worker)}, null, false);
          for (let i = 0; i < 25; i++) {
            const command = 'echo ${name} ' + i;
            native.planSaveRule(plan, 0, 'shell', JSON.stringify({ command }), ['echo', '${name}', String(i)], 'approval-handler');
          }`;
        const process_ = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
        process_.on('close', resolve);
      });
    expect(await Promise.all([child('first'), child('second')])).toEqual([0, 0]);
    const text = readFileSync(join(dir, PERMISSIONS), 'utf8');
    for (const name of ['first', 'second']) {
      for (let i = 0; i < 25; i++) expect(text).toContain(`command: echo ${name} ${i}\n`);
    }
    expect(text.match(/- worker: keeper/g)).toHaveLength(50);
  });
});

describe('save through MCP elicitation', () => {
  it('writes the rule; the next serving runs that call without asking and asks for another', async () => {
    const { dir, worker } = project();
    const serve = () => new StdioClientTransport({ command: 'setsid', args: [process.execPath, CLI, 'mcp', 'serve', worker], cwd: dir, stderr: 'pipe' });
    const asked: string[] = [];
    let answer: ElicitResult = { action: 'accept', content: { decision: 'save' } };
    const connect = async () => {
      const mcp = new Client({ name: 'save-test', version: '1' }, { capabilities: { elicitation: { form: {} } } });
      mcp.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params.message);
        return answer;
      });
      await mcp.connect(serve());
      return mcp;
    };
    const first = await connect();
    const written = await first.callTool({ name: 'write_file', arguments: { path: 'kept.txt', content: 'one' } });
    expect(written.isError).toBeFalsy();
    expect(asked[0]).toContain(`"Save" writes to ${join(dir, PERMISSIONS)}: worker keeper: write_file on the path kept.txt`);
    await first.close();
    expect(readFileSync(join(dir, PERMISSIONS), 'utf8')).toContain('by: mcp-elicitation');

    answer = { action: 'accept', content: { decision: 'deny' } };
    const second = await connect();
    const again = await second.callTool({ name: 'write_file', arguments: { path: 'kept.txt', content: 'two' } });
    expect(again.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(readFileSync(join(dir, 'kept.txt'), 'utf8')).toBe('two');
    const other = await second.callTool({ name: 'write_file', arguments: { path: 'other.txt', content: 'x' } });
    expect(other.isError).toBe(true);
    expect(asked).toHaveLength(2);
    await second.close();
  });
});
