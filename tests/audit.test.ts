/**
 * The audit log (issue 17): one JSON line per event — run start and end, every call with its
 * decision, who decided, duration, exit code, output size and error code — appended when the run
 * ends, with secrets redacted (the worker's deny_output patterns and secret-named environment
 * variables); `toolgate audit FILE` summarises it.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { resumeWorker, runWorker, type ApprovalRequest } from '../ts/src/worker/index.js';
import { CLI } from './helpers/cli.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

const SECRET = 'a-secret-of-at-least-32-bytes-0123456789';
const TOKEN = 'tok-9f8e7d6c5b4a3210';

/** A worker with shell rules, cli_execute with a redacting guardrail, and an audit log. */
function workerIn(dir: string): string {
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    [
      'name: audited',
      'instructions: test',
      'audit: { file: ./.toolgate/audit.jsonl }',
      'toolsets:',
      '  shell:',
      '    default: ask',
      '    rules:',
      '      - { pattern: ls, approval: preApproved }',
      '      - { pattern: echo, approval: preApproved }',
      '      - { pattern: rm, approval: blocked }',
      '  cli_execute:',
      '    allowed_binaries: [cat]',
      '    guardrails:',
      "      deny_output: [{ pattern: 'AKIA[0-9A-Z]{16}', action: redact }]",
      '',
    ].join('\n'),
  );
  return file;
}

type Line = Record<string, any>;
const readLog = (dir: string): Line[] =>
  readFileSync(join(dir, '.toolgate/audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Line);

const shell = (command: string) => ({ toolName: 'shell', input: { command } });

describe('audit log', () => {
  beforeEach(() => {
    process.env.DEPLOY_TOKEN = TOKEN;
  });
  afterEach(() => {
    delete process.env.DEPLOY_TOKEN;
  });

  it('records a run with approve, deny, always, blocked, refused and unknown-tool calls, redacted', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'keys.txt'), 'key AKIAABCDEFGHIJKLMNOP here\n');
    const worker = await loadWorker(workerIn(dir));
    const model = scriptedModel([
      { toolCalls: [shell('echo hello'), shell('rm -rf keys.txt'), shell('cat /etc/hostname')] },
      { toolCalls: [shell('touch approved.txt')] },
      { toolCalls: [shell(`touch ${TOKEN}.txt`)] },
      { toolCalls: [shell('touch always.txt')] },
      { toolCalls: [shell('touch always.txt')] },
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'cat', args: ['keys.txt'] } }, { toolName: 'nope', input: {} }] },
      { text: 'done' },
    ]);
    const answers: Record<string, 'approve' | 'always' | 'deny'> = { 'touch approved.txt': 'approve', 'touch always.txt': 'always' };
    const result = await runWorker(worker, `clean up with ${TOKEN}`, {
      model,
      onApproval: (request: ApprovalRequest) =>
        request.toolName === 'cli_execute' ? 'approve' : (answers[(request.input as { command: string }).command] ?? { decision: 'deny', reason: `not ${TOKEN}` }),
    });
    expect(result.status).toBe('completed');
    const lines = readLog(dir);
    expect(statSync(join(dir, '.toolgate/audit.jsonl')).mode & 0o777).toBe(0o600);
    expect(lines[0]).toMatchObject({ event: 'run-start', worker: 'audited', runId: result.runId, model: 'mock-provider:mock-model-id' });
    expect(lines.at(-1)).toMatchObject({ event: 'run-end', status: 'completed', steps: 7, calls: 9 });
    for (const line of lines) {
      expect(line.runId).toBe(result.runId);
      expect(Date.parse(line.time)).not.toBeNaN();
    }
    const calls = lines.filter((line) => line.event === 'tool-call');
    const summary = calls.map((line) => [line.input?.command ?? line.toolName, line.decision, line.decidedBy, line.errorCode ?? null]);
    expect(summary).toEqual(
      expect.arrayContaining([
        ['echo hello', 'preApproved', 'rule', null],
        ['rm -rf keys.txt', 'blocked', 'rule', 'COMMAND_BLOCKED'],
        ['cat /etc/hostname', 'refused', 'policy', 'PATH_OUTSIDE_ROOT'],
        ['touch approved.txt', 'approved', 'user', null],
        ['touch [REDACTED].txt', 'denied', 'user', null],
        ['touch always.txt', 'always', 'user', null],
        ['touch always.txt', 'always', 'always', null],
        ['cli_execute', 'approved', 'user', null],
        ['nope', 'unknown-tool', 'schema', 'TOOL_NOT_FOUND'],
      ]),
    );
    expect(calls).toHaveLength(9);
    const echo = calls.find((line) => line.input?.command === 'echo hello');
    expect(echo).toMatchObject({ exitCode: 0, outputBytes: expect.any(Number) });
    expect(echo?.durationMs).toBeGreaterThan(0);
    expect(calls.find((line) => line.decision === 'always' && line.decidedBy === 'user')?.alwaysScope).toContain('exactly this command');
    // secrets: the env token (input, reason, task) and the deny_output pattern (the output is never logged, its size is)
    const text = readFileSync(join(dir, '.toolgate/audit.jsonl'), 'utf8');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('AKIAABCDEFGHIJKLMNOP');
    expect(calls.find((line) => line.decision === 'denied')?.reason).toBe('not [REDACTED]');
    expect(lines[0]?.input).toBe('clean up with [REDACTED]');
  });

  it('appends: a deferred run and its resume share the run id; an aborted run still ends its log', async () => {
    const dir = tempDir();
    const ledger = tempDir();
    const worker = await loadWorker(workerIn(dir));
    const model = scriptedModel([{ toolCalls: [shell('touch later.txt')] }, { text: 'ok' }]);
    const first = await runWorker(worker, 'go', { model, onApproval: 'defer', stateSecret: SECRET });
    await resumeWorker(worker, first.state!, { [first.pending![0]!.id]: 'approve' }, { model, stateSecret: SECRET, stateLedger: ledger });
    const controller = new AbortController();
    controller.abort(new Error('stopped by the caller'));
    await expect(runWorker(worker, 'again', { model: scriptedModel([{ text: 'x' }]), signal: controller.signal })).rejects.toThrow();
    const lines = readLog(dir);
    expect(lines.map((line) => line.event)).toEqual(['run-start', 'run-end', 'run-resume', 'tool-call', 'run-end', 'run-start', 'run-end']);
    expect(lines[1]).toMatchObject({ status: 'approval-required', pending: [first.pending![0]!.id] });
    expect(lines[2]?.runId).toBe(first.runId);
    expect(lines[3]).toMatchObject({ decision: 'approved', decidedBy: 'user', runId: first.runId });
    expect(lines[6]).toMatchObject({ status: 'error', error: 'stopped by the caller' });
  });

  it('the audit option overrides the file and adds redaction patterns; bad patterns fail before the run', async () => {
    const dir = tempDir();
    const other = join(tempDir(), 'nested', 'log.jsonl');
    const worker = await loadWorker(workerIn(dir));
    await runWorker(worker, 'order 4711', { model: scriptedModel([{ text: 'fine' }]), audit: { file: other, redact: ['\\b4711\\b'] } });
    const text = readFileSync(other, 'utf8');
    expect(text).toContain('order [REDACTED]');
    for (const bad of ['(', '.*']) {
      await expect(runWorker(worker, 'x', { model: scriptedModel([{ text: 'never' }]), audit: { file: other, redact: [bad] } })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    }
    await expect(runWorker(worker, 'x', { model: scriptedModel([]), audit: { path: other } as never })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});

describe('toolgate run --audit and toolgate audit', () => {
  let server: FakeOpenAiServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('writes the log from the CLI and summarises calls per tool, denials, refusals and slow calls', async () => {
    const dir = tempDir();
    const log = join(dir, 'cli-audit.jsonl');
    server = await startFakeOpenAiServer([
      { toolCalls: [{ name: 'shell', arguments: { command: 'echo one' } }, { name: 'shell', arguments: { command: 'rm x' } }] },
      { toolCalls: [{ name: 'shell', arguments: { command: 'touch denied.txt' } }, { name: 'ghost', arguments: {} }] },
      { text: 'done' },
    ]);
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [CLI, 'run', workerIn(dir), 'go', '--model', 'openai-compatible:fake', '--base-url', server.baseUrl, '--deny', '--audit', log], {
      cwd: dir,
      env: { ...process.env, XDG_CACHE_HOME: join(dir, '.cache') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await new Promise((resolve) => child.on('close', resolve)), stderr).toBe(0);
    // the progress shows every decision
    expect(stderr).toMatch(/✓ shell \d+ ms \[preApproved\]/);
    expect(stderr).toContain('✗ shell [blocked, rule]: COMMAND_BLOCKED');
    expect(stderr).toContain('✗ shell [denied, flag --deny]: denied by --deny');
    expect(stderr).toContain('✗ ghost [unknown-tool, schema]');
    // the log names the flag that decided, not a user
    const logged = readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged.find((line) => line.decision === 'denied')).toMatchObject({ decidedBy: 'flag', flag: '--deny' });

    const summary = spawnSync(process.execPath, [CLI, 'audit', log], { encoding: 'utf8' });
    expect(summary.status, summary.stderr).toBe(0);
    expect(summary.stdout).toContain('1 run(s), 4 tool call(s)');
    const shellLine = summary.stdout.split('\n').find((line) => /^\s+shell\s+3\s/.test(line)) ?? '';
    for (const part of ['preApproved 1', 'blocked 1', 'denied 1']) expect(shellLine).toContain(part);
    expect(summary.stdout).toMatch(/denials \(1 shown\)\n.*touch denied\.txt.*denied by flag --deny/);
    expect(summary.stdout).toMatch(/refusals \(2 shown\)/);
    expect(summary.stdout).toContain('unknown-tool by schema');
    expect(summary.stdout).toMatch(/slowest calls\n\s+\d+ ms {2}shell/);
    const json = JSON.parse(spawnSync(process.execPath, [CLI, 'audit', log, '--json', '--top', '1'], { encoding: 'utf8' }).stdout) as { refusals: unknown[]; calls: number };
    expect(json.calls).toBe(4);
    expect(json.refusals).toHaveLength(1);
    // the worker file's own audit.file is not used when --audit names another
    expect(() => readFileSync(join(dir, '.toolgate/audit.jsonl'))).toThrow();

    writeFileSync(join(dir, 'broken.jsonl'), 'not json\n{"event":"tool-call","toolName":"t","decision":"denied","decidedBy":"user","time":"x","runId":"r"}\n');
    const broken = spawnSync(process.execPath, [CLI, 'audit', join(dir, 'broken.jsonl')], { encoding: 'utf8' });
    expect(broken.status).toBe(0);
    expect(broken.stdout).toContain('1 line(s) are not JSON');
    const missing = spawnSync(process.execPath, [CLI, 'audit', join(dir, 'none.jsonl')], { encoding: 'utf8' });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('none.jsonl');
  });
});
