/**
 * "Always" covers exactly the approved call unless a wider scope is chosen explicitly (issue 13,
 * item 9): approving `rm -rf build` always never approves `rm -rf src`; `npm run test` never
 * approves `npm run deploy:prod`. Real shell and cli_execute tools, real files.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { named } from '../ts/src/approval/named-tool.js';
import { wrapWithDefaultApproval } from '../ts/src/approval/approval.js';
import { cliExecuteTool } from '../ts/src/toolsets/cli-execute.js';
import { shellToolset } from '../ts/src/toolsets/shell.js';
import { runWorker, type ApprovalAnswer, type ApprovalRequest } from '../ts/src/worker/index.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

function workspace(): string {
  const work = tempDir();
  for (const dir of ['build', 'src', 'x', 'dist']) mkdirSync(join(work, dir));
  return work;
}

const shellCalls = (...commands: string[]) => commands.map((command) => ({ toolCalls: [{ toolName: 'shell', input: { command } }] }));

async function runShell(work: string, commands: string[], answer: (request: ApprovalRequest) => ApprovalAnswer) {
  const asked: ApprovalRequest[] = [];
  const shell = shellToolset({ workDir: work, default: 'ask' });
  const result = await runWorker({ name: 'w', tools: [shell] }, 'clean up', {
    model: scriptedModel([...shellCalls(...commands), { text: 'done' }]),
    onApproval: (request) => {
      asked.push(request);
      return answer(request);
    },
  });
  return { asked: asked.map((request) => (request.input as { command: string }).command), asked_requests: asked, result };
}

const always = (...exact: string[]) => (request: ApprovalRequest): ApprovalAnswer =>
  exact.includes((request.input as { command: string }).command) ? 'always' : { decision: 'deny', reason: 'not that one' };

describe('"always" scopes', () => {
  it('rm -rf build, always, does not approve rm -rf src (or anything but the same command)', async () => {
    const work = workspace();
    const { asked, result } = await runShell(
      work,
      ['rm -rf build', 'rm -rf src', 'rm -rf build', 'rm  -rf  x', 'rm -rf x build', 'rm -r dist'],
      always('rm -rf build'),
    );
    expect(asked).toEqual(['rm -rf build', 'rm -rf src', 'rm  -rf  x', 'rm -rf x build', 'rm -r dist']);
    expect(result.toolCalls.map((call) => call.decision)).toEqual(['always', 'denied', 'always', 'denied', 'denied', 'denied']);
    expect(existsSync(join(work, 'build'))).toBe(false);
    for (const kept of ['src', 'x', 'dist']) expect(existsSync(join(work, kept))).toBe(true);
  });

  it('the request says what always covers before anyone answers', async () => {
    const work = workspace();
    const { asked_requests } = await runShell(work, ['echo run test'], () => 'deny');
    const [request] = asked_requests;
    expect(request?.scope).toMatchObject({ kind: 'call', tool: 'shell', input: { command: 'echo run test' } });
    expect(request?.scope.description).toContain('exactly this command: echo run test');
    expect(request?.argv).toEqual(['echo', 'run', 'test']);
  });

  it('npm-style subcommands: always for one does not cover another of the same program and first word', async () => {
    const work = workspace();
    const { asked } = await runShell(work, ['echo run test', 'echo run deploy:prod', 'echo run test'], always('echo run test'));
    expect(asked).toEqual(['echo run test', 'echo run deploy:prod']);
  });

  it('an explicit prefix widens it, word by word, and only to commands starting with those words', async () => {
    const work = workspace();
    const { asked, result } = await runShell(
      work,
      ['rm -rf build', 'rm -rf src', 'rm -r x', 'rmdir dist', 'rm -rfv x'],
      (request) => ((request.input as { command: string }).command === 'rm -rf build' ? { decision: 'always', scope: { prefix: 'rm -rf' } } : 'deny'),
    );
    expect(asked).toEqual(['rm -rf build', 'rm -r x', 'rmdir dist', 'rm -rfv x']);
    expect(result.toolCalls[0]?.scope?.description).toContain('every shell command starting with rm -rf');
    expect(existsSync(join(work, 'src'))).toBe(false);
    expect(existsSync(join(work, 'x'))).toBe(true);
  });

  it('a prefix that does not cover the call is refused: nothing runs', async () => {
    const work = workspace();
    const run = runShell(work, ['rm -rf build'], () => ({ decision: 'always', scope: { prefix: 'rm -rf src' } }));
    await expect(run).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('does not cover') });
    expect(existsSync(join(work, 'build'))).toBe(true);
  });

  it('cli_execute: the same argv, and stdin, is the exact scope', async () => {
    const work = workspace();
    const cli = cliExecuteTool({ workDir: work, allowedBinaries: ['ls', 'cat'], approval: { default: 'ask' } });
    const asked: unknown[] = [];
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'ls', args: ['-a', 'build'] } }] },
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'ls', args: ['-a', 'src'] } }] },
      { toolCalls: [{ toolName: 'cli_execute', input: { args: ['-a', 'build'], binary: 'ls' } }] },
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'cat', args: [], stdin: 'one' } }] },
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'cat', args: [], stdin: 'two' } }] },
      { text: 'done' },
    ]);
    await runWorker({ name: 'w', tools: [cli] }, 'go', {
      model,
      onApproval: (request) => {
        asked.push(request.input);
        return 'always';
      },
    });
    expect(asked).toEqual([
      { binary: 'ls', args: ['-a', 'build'] },
      { binary: 'ls', args: ['-a', 'src'] },
      { binary: 'cat', args: [], stdin: 'one' },
      { binary: 'cat', args: [], stdin: 'two' },
    ]);
  });

  it('other tools: exact input by default, every call only when "tool" is chosen', async () => {
    const writes: string[] = [];
    const write = wrapWithDefaultApproval(
      named(
        'note',
        tool({
          description: 'writes a note',
          inputSchema: z.object({ path: z.string(), text: z.string() }),
          execute: async ({ path }) => {
            writes.push(path);
            return 'ok';
          },
        }),
      ),
      { default: 'ask' },
    );
    const calls = (...paths: string[]) => paths.map((path) => ({ toolCalls: [{ toolName: 'note', input: { path, text: 'x' } }] }));
    const exactAsked: string[] = [];
    await runWorker({ name: 'w', tools: [write] }, 'go', {
      model: scriptedModel([...calls('a', 'b', 'a'), { text: 'done' }]),
      onApproval: ({ input }) => {
        exactAsked.push((input as { path: string }).path);
        return 'always';
      },
    });
    expect(exactAsked).toEqual(['a', 'b']);
    const wideAsked: string[] = [];
    await runWorker({ name: 'w', tools: [write] }, 'go', {
      model: scriptedModel([...calls('c', 'd', 'e'), { text: 'done' }]),
      onApproval: ({ input }) => {
        wideAsked.push((input as { path: string }).path);
        return { decision: 'always', scope: 'tool' };
      },
    });
    expect(wideAsked).toEqual(['c']);
    expect(writes).toEqual(['a', 'b', 'a', 'c', 'd', 'e']);
  });
});
