/**
 * Issue 23 §6: a deferred state is bound to exactly the worker that issued it. A state issued by
 * one worker and resumed on another with the same name and tools — but another work directory,
 * other rules, another sandbox, other approvals, a tool more or less — is `STATE_INVALID`,
 * naming what differs, and nothing runs. Workers built in code (toolsets, `loadWorker` objects
 * spread into new ones) and worker files alike. Each attack has a control: the same state on
 * the worker that issued it (rebuilt the same way) does run.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type NamedTool } from '../../ts/src/approval/named-tool.js';
import { ToolgateError } from '../../ts/src/native/errors.js';
import { codeAgentTools } from '../../ts/src/toolsets/code-agent.js';
import { filesystemToolset } from '../../ts/src/toolsets/filesystem.js';
import { shellToolset } from '../../ts/src/toolsets/shell.js';
import { loadWorker } from '../../ts/src/worker/load-worker.js';
import { resumeWorker, runWorker, type RunnableWorker } from '../../ts/src/worker/index.js';
import { tempDir } from '../helpers/fs.js';
import { scriptedModel } from '../helpers/mock-model.js';

const SECRET = 'a-secret-of-at-least-32-bytes-0123456789';

/** A work directory holding the file the attack deletes. */
function victimDir(): string {
  const dir = tempDir('toolgate-binding-');
  writeFileSync(join(dir, 'a.txt'), 'keep me\n');
  return dir;
}

/** A worker built in code with the filesystem tools of `dir` (delete_file asks). */
function codeWorker(dir: string, extra: NamedTool[] = [], options: Parameters<typeof filesystemToolset>[0] = {}): RunnableWorker {
  return { name: 'cleaner', instructions: 'clean up', tools: [...filesystemToolset({ workDir: dir, ...options }), ...extra] };
}

const deleteA = [{ toolCalls: [{ toolName: 'delete_file', input: { path: 'a.txt' } }] }, { text: 'done' }];

/** Issues a deferred state on `issuer`; returns a resume of it on another worker. */
async function issued(issuer: RunnableWorker) {
  const model = scriptedModel(deleteA);
  const first = await runWorker(issuer, 'delete a.txt', { model, onApproval: 'defer', stateSecret: SECRET });
  expect(first.status).toBe('approval-required');
  const [pending] = first.pending!;
  const ledger = tempDir('toolgate-ledger-');
  return (worker: RunnableWorker) =>
    resumeWorker(worker, first.state!, { [pending!.id]: 'approve' }, { model, stateSecret: SECRET, stateLedger: ledger });
}

async function refused(resume: Promise<unknown>): Promise<string> {
  const error = await resume.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolgateError);
  expect((error as ToolgateError).code).toBe('STATE_INVALID');
  return (error as ToolgateError).message;
}

describe('a deferred state resumes only on the worker that issued it', () => {
  it('built in code: another work directory is refused and deletes nothing; the same one runs', async () => {
    const mine = victimDir();
    const theirs = victimDir();
    const resume = await issued(codeWorker(mine));
    const message = await refused(resume(codeWorker(theirs)));
    expect(message).toContain('work directories');
    expect(existsSync(join(theirs, 'a.txt'))).toBe(true);
    // Control: rebuilt on the same directory, the approved call runs.
    const done = await resume(codeWorker(mine));
    expect(done.status).toBe('completed');
    expect(existsSync(join(mine, 'a.txt'))).toBe(false);
  });

  it('built in code: other path rules, another read-only setting, other approvals, a tool more or less', async () => {
    const dir = victimDir();
    const variants: [string, RunnableWorker][] = [
      ['rules', codeWorker(dir, [], { approval: { paths: [{ pattern: 'secret/**', approval: 'blocked' }] } } as never)],
      ['approvals', codeWorker(dir, [], { approval: { default: 'preApproved', tools: { delete_file: 'ask' } } })],
      ['tools', codeWorker(dir, [shellToolset({ workDir: dir, default: 'ask' })])],
      ['tools', { name: 'cleaner', instructions: 'clean up', tools: filesystemToolset({ workDir: dir }).filter((tool) => tool.name !== 'file_info') }],
      ['instructions', { ...codeWorker(dir), instructions: 'something else' }],
    ];
    for (const [part, worker] of variants) {
      const resume = await issued(codeWorker(dir));
      const message = await refused(resume(worker));
      expect(message, part).toContain(part);
      expect(existsSync(join(dir, 'a.txt')), part).toBe(true);
    }
  });

  it('built in code: another sandbox or other shell rules of a tool in the worker are refused', async () => {
    const dir = victimDir();
    const shell = (options: Parameters<typeof shellToolset>[0]) => shellToolset({ workDir: dir, default: 'ask', ...options });
    const issuer = () => codeWorker(dir, [shell({ rules: [{ pattern: 'ls', approval: 'preApproved' }] })]);
    for (const [part, other] of [
      ['sandbox', shell({ rules: [{ pattern: 'ls', approval: 'preApproved' }], sandbox: 'best-effort' })],
      ['rules', shell({ rules: [{ pattern: 'ls', approval: 'preApproved' }, { pattern: 'rm', approval: 'preApproved' }] })],
      ['rules', shell({ rules: [{ pattern: 'ls', approval: 'preApproved' }], default: 'preApproved' })],
    ] as const) {
      const resume = await issued(issuer());
      const message = await refused(resume(codeWorker(dir, [other])));
      expect(message, part).toContain(part);
      expect(existsSync(join(dir, 'a.txt'))).toBe(true);
    }
    const resume = await issued(issuer());
    expect((await resume(issuer())).status).toBe('completed');
  });

  it('a loadWorker object spread into a new one keeps its binding: another work directory is refused', async () => {
    const files = tempDir('toolgate-binding-files-');
    const file = join(files, 'cleaner.yaml');
    writeFileSync(file, 'name: cleaner\ninstructions: clean up\ntoolsets:\n  code_agent: {}\n  filesystem: {}\n');
    const mine = victimDir();
    const theirs = victimDir();
    const issuer = await loadWorker(file, { workDir: mine });
    const resume = await issued({ ...issuer });
    for (const other of [await loadWorker(file, { workDir: theirs }), { ...(await loadWorker(file, { workDir: theirs })) }]) {
      const message = await refused(resume(other));
      expect(message).toMatch(/work directories|plan/);
      expect(existsSync(join(theirs, 'a.txt'))).toBe(true);
    }
    // A worker file with other rules, same work directory and name.
    writeFileSync(file, 'name: cleaner\ninstructions: clean up\ntoolsets:\n  code_agent: {}\n  filesystem: { approval: { default: preApproved } }\n');
    await refused(resume(await loadWorker(file, { workDir: mine })));
    expect(existsSync(join(mine, 'a.txt'))).toBe(true);
  });

  it('a tool built by hand is bound by what its author binds it to', async () => {
    const { bindTool } = await import('../../ts/src/approval/tool-binding.js');
    const dir = victimDir();
    const hand = (target: string) =>
      bindTool({ ...codeAgentTools({ workDir: dir, group: 'search' })[0]!, name: 'grep_search' }, { settings: { target } });
    const resume = await issued(codeWorker(dir, [hand('one')]));
    expect(await refused(resume(codeWorker(dir, [hand('two')])))).toContain('tools');
  });
});
