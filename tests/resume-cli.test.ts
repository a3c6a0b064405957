/**
 * `toolgate run --defer-approvals --state-file F` and `toolgate resume F --answers …` for
 * scripted and CI use (issue 17): real CLI processes, a fake model on 127.0.0.1, real files.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runToolgateAsync, type CliRun as Run } from './helpers/cli.js';
import { startFakeOpenAiServer, toolResultsIn, type FakeOpenAiServer, type FakeTurn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';

const SECRET = 'cli-secret-of-at-least-32-bytes-012345678';
let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const shell = (...commands: string[]): FakeTurn => ({ toolCalls: commands.map((command) => ({ name: 'shell', arguments: { command } })) });


function toolgate(cwd: string, args: string[], env: NodeJS.ProcessEnv = { TOOLGATE_STATE_SECRET: SECRET }): Promise<Run> {
  return runToolgateAsync(args, { cwd, env: { ...process.env, XDG_CACHE_HOME: join(cwd, '.cache'), ...env } });
}

async function setUp(turns: FakeTurn[]) {
  const dir = tempDir();
  writeFileSync(join(dir, 'worker.yaml'), 'name: ci\ninstructions: test\ntoolsets:\n  shell:\n    default: ask\n');
  server = await startFakeOpenAiServer(turns);
  const ledger = join(tempDir(), 'ledger');
  const start = (extra: string[] = []) =>
    toolgate(dir, ['run', 'worker.yaml', 'make files', '--model', 'openai-compatible:fake', '--base-url', server!.baseUrl, '--defer-approvals', '--state-file', 'run.json', ...extra]);
  const resume = (answers: string[], extra: string[] = [], env?: NodeJS.ProcessEnv) =>
    toolgate(dir, ['resume', 'run.json', ...answers.flatMap((answer) => ['--answers', answer]), '--state-ledger', ledger, ...extra], env);
  const pending = () => (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string; input: { command: string } }[] }).pending;
  return { dir, start, resume, pending };
}

describe('toolgate run --defer-approvals and toolgate resume', () => {
  it('saves the waiting run, lists the requests, and resumes with per-id answers', async () => {
    const { dir, start, resume, pending } = await setUp([shell('touch yes.txt', 'touch no.txt'), { text: 'finished' }]);
    const started = await start();
    expect(started.status, started.stderr).toBe(4);
    expect(started.stdout).toContain('approval required; the run is saved in run.json');
    expect(started.stdout).toContain('always covers exactly this command: touch yes.txt');
    expect(started.stdout).toContain('toolgate resume run.json --answers');
    expect(statSync(join(dir, 'run.json')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(dir, 'yes.txt'))).toBe(false);
    const [yes, no] = pending();
    expect(started.stdout).toContain(yes!.id);

    const resumed = await resume([`${yes!.id}=approve,${no!.id}=deny:use another name, please`]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('finished');
    expect(existsSync(join(dir, 'yes.txt'))).toBe(true);
    expect(existsSync(join(dir, 'no.txt'))).toBe(false);
    expect(Object.values(toolResultsIn(server!.requests[1]!)).join('\n')).toContain('use another name, please');

    const replay = await resume([`${yes!.id}=approve,${no!.id}=deny`]);
    expect(replay.status).toBe(1);
    expect(replay.stderr).toContain('STATE_INVALID');
    expect(replay.stderr).toContain('already resumed');
    expect(server!.requests).toHaveLength(2);
  });

  it('refuses wrong answers, a tampered file, a changed worker and a missing secret, without using the state up', async () => {
    const { dir, start, resume, pending } = await setUp([shell('touch a.txt'), { text: 'ok' }]);
    expect((await start()).status).toBe(4);
    const [request] = pending();
    const id = request!.id;

    const unknown = await resume([`${id}=approve,0123456789ab=approve`]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('STATE_INVALID');
    expect(unknown.stderr).toContain('never asked');
    const bad = await resume([`${id}=maybe`]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('INVALID_INPUT');
    const noSecret = await resume([`${id}=approve`], [], { TOOLGATE_STATE_SECRET: '' });
    expect(noSecret.stderr).toContain('TOOLGATE_STATE_SECRET');
    const otherSecret = await resume([`${id}=approve`], [], { TOOLGATE_STATE_SECRET: 'another-secret-of-at-least-32-bytes!!!' });
    expect(otherSecret.stderr).toContain('STATE_INVALID');

    const original = readFileSync(join(dir, 'run.json'), 'utf8');
    const file = JSON.parse(original) as { state: string };
    const envelope = JSON.parse(file.state) as { body: string };
    writeFileSync(join(dir, 'run.json'), JSON.stringify({ ...file, state: JSON.stringify({ ...envelope, body: envelope.body.replace('touch a.txt', 'touch b.txt') }) }));
    const tampered = await resume([`${id}=approve`]);
    expect(tampered.stderr).toContain('STATE_INVALID');
    writeFileSync(join(dir, 'run.json'), original);

    writeFileSync(join(dir, 'worker.yaml'), 'name: ci\ninstructions: other\ntoolsets:\n  shell:\n    default: ask\n');
    const changed = await resume([`${id}=approve`]);
    expect(changed.stderr).toMatch(/issued for another worker than this 'ci': it differs in its .*instructions/);
    writeFileSync(join(dir, 'worker.yaml'), 'name: ci\ninstructions: test\ntoolsets:\n  shell:\n    default: ask\n');

    expect(existsSync(join(dir, 'a.txt'))).toBe(false);
    const good = await resume([`${id}=approve`]);
    expect(good.status, good.stderr).toBe(0);
    expect(existsSync(join(dir, 'a.txt'))).toBe(true);
  });

  it('resume --defer-approvals stops again and rewrites the file; always carries over', async () => {
    const { dir, start, resume, pending } = await setUp([shell('touch a.txt'), shell('touch a.txt'), shell('touch b.txt'), { text: 'done' }]);
    expect((await start()).status).toBe(4);
    const second = await resume([`${pending()[0]!.id}=always`], ['--defer-approvals']);
    expect(second.status, second.stderr).toBe(4);
    expect(pending().map((request) => request.input.command)).toEqual(['touch b.txt']);
    const third = await resume([`${pending()[0]!.id}=approve`]);
    expect(third.status, third.stderr).toBe(0);
    expect(existsSync(join(dir, 'b.txt'))).toBe(true);
  });

  it('checks its flags', async () => {
    const { start, dir } = await setUp([]);
    expect(existsSync(join(dir, 'run.json'))).toBe(false);
    const noFile = await toolgate(dir, ['run', 'worker.yaml', 'x', '--defer-approvals']);
    expect(noFile.status).toBe(1);
    expect(noFile.stderr).toContain('--state-file');
    const both = await start(['--yes']);
    expect(both.stderr).toContain('contradict');
    const noSecret = await toolgate(dir, ['run', 'worker.yaml', 'x', '--defer-approvals', '--state-file', 'r.json'], { TOOLGATE_STATE_SECRET: '' });
    expect(noSecret.stderr).toContain('TOOLGATE_STATE_SECRET');
    const shortSecret = await toolgate(dir, ['run', 'worker.yaml', 'x', '--model', 'openai-compatible:f', '--base-url', 'http://127.0.0.1:9', '--defer-approvals', '--state-file', 'r.json'], { TOOLGATE_STATE_SECRET: 'short' });
    expect(shortSecret.stderr).toContain('at least 32 bytes');
    writeFileSync(join(dir, 'run.json'), '{}');
    const noAnswers = await toolgate(dir, ['resume', 'run.json']);
    expect(noAnswers.status).toBe(2);
    const notAState = await toolgate(dir, ['resume', 'worker.yaml', '--answers', 'a=approve']);
    expect(notAState.status).toBe(1);
    expect(notAState.stderr).toContain('STATE_INVALID');
  });
});
