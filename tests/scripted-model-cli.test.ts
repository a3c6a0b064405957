/**
 * The scripted model from the command line (issue 25, item 3): the real built CLI runs a temp
 * copy of the quickstart with `--model scripted:<file>`, offline and without a key, through real
 * tools (a tools.ts function, a file write in the work directory, the shell); a deferred run is
 * resumed by another process, from another directory, at the right turn.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runToolgateAsync, type CliRun as Run } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SECRET = 'scripted-cli-secret-of-at-least-32-bytes';
const TASK = 'What is the 30th Fibonacci number? Save it in notes/fib.txt';
const SCRIPT = 'examples/quickstart/scripted.json';
const WORKER = 'examples/quickstart/worker.yaml';


/** A copy of the quickstart (and the executable tools it lists) in a temp folder, without run outputs. */
function quickstartCopy(): string {
  const dir = tempDir();
  for (const folder of ['quickstart', 'executable-tools']) {
    cpSync(join(ROOT, 'examples', folder), join(dir, 'examples', folder), {
      recursive: true,
      filter: (source) => !source.startsWith(join(ROOT, 'examples', 'quickstart', 'workspace', 'notes')),
    });
  }
  // tools.ts imports ai and zod: a user's project has them installed.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** `toolgate <args>` as a real process in `cwd`, with no model key in its environment. */
async function toolgate(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const clean: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: join(cwd, '.cache'), TOOLGATE_STATE_SECRET: SECRET };
  for (const key of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'TOOLGATE_API_KEY', 'TOOLGATE_BASE_URL', 'TOOLGATE_MODEL']) delete clean[key];
  return runToolgateAsync(args, { cwd, env: { ...clean, ...env } });
}

interface CallRecord {
  toolName: string;
  decision: string;
  decidedBy?: string;
  output?: unknown;
}

function callsOf(run: Run): CallRecord[] {
  return (JSON.parse(run.stdout) as { toolCalls: CallRecord[] }).toolCalls;
}

const fibFile = (dir: string) => join(dir, 'examples', 'quickstart', 'workspace', 'notes', 'fib.txt');

describe('toolgate run --model scripted:<file>', () => {
  it('runs the quickstart offline through a tools.ts function, a file write and the shell', async () => {
    const dir = quickstartCopy();
    const run = await toolgate(dir, ['run', WORKER, TASK, '--model', `scripted:${SCRIPT}`, '--yes']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('The 30th Fibonacci number is 832040; it is saved in notes/fib.txt.');
    // The model's text streams to the terminal as progress.
    expect(run.stderr).toContain("I'll compute it with calculateFibonacci.");
    expect(readFileSync(fibFile(dir), 'utf8')).toBe('F(30) = 832040\n');

    const json = await toolgate(dir, ['run', WORKER, TASK, '--model', `scripted:${SCRIPT}`, '--yes', '--json']);
    expect(json.status, json.stderr).toBe(0);
    const calls = callsOf(json);
    expect(calls.map((call) => [call.toolName, call.decision])).toEqual([
      ['calculateFibonacci', 'preApproved'],
      ['write_file', 'approved'],
      ['shell', 'preApproved'],
    ]);
    expect(JSON.stringify(calls[0]!.output)).toContain('832040');
    // wc ran in the work directory, on the file the run wrote.
    expect(JSON.stringify(calls[2]!.output)).toContain('15 notes/fib.txt');
    expect((JSON.parse(json.stdout) as { status: string; text: string }).status).toBe('task-completed');
  });

  it("reads the worker file's model relative to the worker file, and TOOLGATE_MODEL relative to the current directory", async () => {
    const dir = quickstartCopy();
    const workerFile = join(dir, WORKER);
    writeFileSync(workerFile, readFileSync(workerFile, 'utf8').replace('model: openai:gpt-4o-mini', 'model: scripted:./scripted.json'));
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const fromWorker = await toolgate(elsewhere, ['run', join('..', WORKER), TASK, '--yes']);
    expect(fromWorker.status, fromWorker.stderr).toBe(0);
    expect(fromWorker.stdout).toContain('832040');

    // TOOLGATE_MODEL is for a worker file that names no model.
    const other = quickstartCopy();
    const otherWorker = join(other, WORKER);
    writeFileSync(otherWorker, readFileSync(otherWorker, 'utf8').replace('model: openai:gpt-4o-mini\n', ''));
    const fromEnv = await toolgate(other, ['run', WORKER, TASK, '--yes'], { TOOLGATE_MODEL: `scripted:${SCRIPT}` });
    expect(fromEnv.status, fromEnv.stderr).toBe(0);
    expect(existsSync(fibFile(other))).toBe(true);
  });

  it('a deferred run resumed by another process, from another directory, continues at the right turn', async () => {
    const dir = quickstartCopy();
    // The shipped script, with checks on what each later turn receives.
    const script = JSON.parse(readFileSync(join(dir, SCRIPT), 'utf8')) as { turns: { expect?: object }[] };
    script.turns[2]!.expect = { toolResult: '"bytes":15' };
    script.turns[3]!.expect = { toolResult: '15 notes/fib.txt' };
    writeFileSync(join(dir, 'checked.json'), JSON.stringify(script));
    const state = join(dir, 'run.json');

    const started = await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:checked.json', '--defer-approvals', '--state-file', 'run.json']);
    expect(started.status, started.stderr).toBe(4);
    expect(started.stdout).toContain('write_file');
    expect(existsSync(fibFile(dir))).toBe(false);
    const [request] = (JSON.parse(readFileSync(state, 'utf8')) as { pending: { id: string; toolName: string }[] }).pending;
    expect(request!.toolName).toBe('write_file');

    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const resumed = await toolgate(elsewhere, ['resume', state, '--answers', `${request!.id}=approve`, '--state-ledger', join(dir, 'ledger'), '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(readFileSync(fibFile(dir), 'utf8')).toBe('F(30) = 832040\n');
    // Turns 3 and 4 only: nothing of turns 1 and 2 is played again.
    expect(callsOf(resumed).map((call) => call.toolName)).toEqual(['write_file', 'shell']);
    expect((JSON.parse(resumed.stdout) as { text: string }).text).toBe('The 30th Fibonacci number is 832040; it is saved in notes/fib.txt.');
  });

  it('a denied request resumes at the next turn, which sees the reason', async () => {
    const dir = quickstartCopy();
    const script = JSON.parse(readFileSync(join(dir, SCRIPT), 'utf8')) as { turns: { expect?: object }[] };
    script.turns[2]!.expect = { toolResult: 'denied: keep notes out of this' };
    writeFileSync(join(dir, 'checked.json'), JSON.stringify(script));
    expect((await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:checked.json', '--defer-approvals', '--state-file', 'run.json'])).status).toBe(4);
    const [request] = (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string }[] }).pending;
    const resumed = await toolgate(dir, ['resume', 'run.json', '--answers', `${request!.id}=deny:keep notes out of this`, '--state-ledger', join(dir, 'ledger')]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(existsSync(fibFile(dir))).toBe(false);
  });

  it('says so when the run goes past the end of the script, without a silent empty answer', async () => {
    const dir = quickstartCopy();
    writeFileSync(join(dir, 'short.json'), JSON.stringify({ turns: [{ toolCalls: [{ toolName: 'calculateFibonacci', input: { n: 30 } }] }] }));
    const run = await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:short.json', '--yes']);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`CONFIG_INVALID: scripted model ${join(dir, 'short.json')}: the run asks for turn 2, but the script has 1 turn`);
  });

  it('refuses a malformed, a missing and a failing script with the file, the place and the fix', async () => {
    const dir = quickstartCopy();
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ turns: [{ toolCalls: [{ toolName: 'write_file', inputs: { path: 'x' } }] }] }));
    const bad = await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:bad.json', '--yes']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`CONFIG_INVALID: scripted model script ${join(dir, 'bad.json')}: turns[0].toolCalls[0].inputs: unknown key 'inputs'; accepted keys are toolName, input`);
    expect(existsSync(join(dir, 'examples', 'quickstart', 'workspace', 'notes'))).toBe(false);

    writeFileSync(join(dir, 'syntax.json'), '{ "turns": [\n  { "text": "hi" }\n  { "text": "again" }\n] }');
    const syntax = await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:syntax.json']);
    expect(syntax.stderr).toContain(`${join(dir, 'syntax.json')}: 3:3: not valid JSON`);

    const missing = await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:nope.json']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`FILE_NOT_FOUND: scripted model script ${join(dir, 'nope.json')} does not exist`);

    writeFileSync(join(dir, 'wrong.json'), JSON.stringify({ turns: [{ toolCalls: [{ toolName: 'calculateFibonacci', input: { n: 31 } }] }, { text: 'x', expect: { toolResult: '832040' } }] }));
    const wrong = await toolgate(dir, ['run', WORKER, TASK, '--model', 'scripted:wrong.json']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain('turn 2 (turns[1].expect.toolResult) expects a tool result containing "832040", but the tool results since turn 1 were "1346269"');
  });
});
