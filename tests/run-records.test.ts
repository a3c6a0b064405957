/**
 * Every call the model makes is recorded with the decision actually taken (issue 13, item 8),
 * in `runWorker` results and events, against real toolsets: a shell command a rule blocks is
 * `blocked` (not `preApproved`), a path outside the work directory is `refused`, unknown tools
 * and input that fails the schema are recorded, not dropped.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { named } from '../ts/src/approval/named-tool.js';
import { wrapWithDefaultApproval } from '../ts/src/approval/approval.js';
import { shellToolset } from '../ts/src/toolsets/shell.js';
import { cliExecuteTool } from '../ts/src/toolsets/cli-execute.js';
import { runWorker, type RunEvent, type ToolCallRecord } from '../ts/src/worker/index.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

function shellWorker(work: string) {
  const shell = shellToolset({
    workDir: work,
    default: 'ask',
    rules: [
      { pattern: 'ls', approval: 'preApproved' },
      { pattern: 'cat', approval: 'preApproved' },
      { pattern: 'echo', approval: 'preApproved' },
      { pattern: 'rm', approval: 'blocked' },
      { pattern: 'git push', approval: 'blocked' },
    ],
  });
  const secret = wrapWithDefaultApproval(
    named('vault', tool({ description: 'opens the vault', inputSchema: z.object({}), execute: async () => 'opened' })),
    { default: 'blocked' },
  );
  const counted = named(
    'count',
    tool({ description: 'counts', inputSchema: z.object({ n: z.number().int() }), execute: async ({ n }) => n + 1 }),
  );
  return { name: 'w', tools: [shell, secret, wrapWithDefaultApproval(counted, { default: 'preApproved' })] };
}

const decisions = (records: readonly ToolCallRecord[]) =>
  records.map((record) => [record.toolName, record.decision, record.decidedBy, record.errorCode ?? null]);

describe('run records', () => {
  it('records refusals by rule and by policy truthfully, never as preApproved', async () => {
    const work = tempDir();
    writeFileSync(join(work, 'keep.txt'), 'keep');
    const model = scriptedModel([
      {
        toolCalls: [
          { toolName: 'shell', input: { command: 'ls' } },
          { toolName: 'shell', input: { command: 'rm -rf keep.txt' } },
          { toolName: 'shell', input: { command: 'git push origin main' } },
          { toolName: 'shell', input: { command: 'cat /etc/passwd' } },
          { toolName: 'shell', input: { command: 'cat ../outside.txt' } },
          { toolName: 'shell', input: { command: 'echo $(id)' } },
          { toolName: 'shell', input: { command: 'ls | cat' } },
        ],
      },
      { text: 'done' },
    ]);
    const events: RunEvent[] = [];
    const result = await runWorker(shellWorker(work), 'go', { model, onEvent: (event) => events.push(event) });
    expect(decisions(result.toolCalls)).toEqual([
      ['shell', 'preApproved', 'rule', null],
      ['shell', 'blocked', 'rule', 'COMMAND_BLOCKED'],
      ['shell', 'blocked', 'rule', 'COMMAND_BLOCKED'],
      ['shell', 'refused', 'policy', 'PATH_OUTSIDE_ROOT'],
      ['shell', 'refused', 'policy', 'PATH_OUTSIDE_ROOT'],
      ['shell', 'refused', 'policy', 'ARGUMENT_REJECTED'],
      ['shell', 'refused', 'policy', 'ARGUMENT_REJECTED'],
    ]);
    expect(existsSync(join(work, 'keep.txt'))).toBe(true);
    // every call ends with exactly one call-recorded event carrying the same record
    const recorded = events.filter((event) => event.type === 'call-recorded');
    expect(recorded).toHaveLength(result.toolCalls.length);
    const ids = (list: readonly (string | false)[]) => [...list].sort();
    expect(ids(recorded.map((event) => event.type === 'call-recorded' && event.record.toolCallId))).toEqual(ids(result.toolCalls.map((call) => call.toolCallId)));
  });

  it('records calls to unknown tools, blocked tools and input that fails the schema', async () => {
    const work = tempDir();
    const model = scriptedModel([
      {
        toolCalls: [
          { toolName: 'no_such_tool', input: { x: 1 } },
          { toolName: 'vault', input: {} },
          { toolName: 'count', input: { n: 'three' } },
          { toolName: 'count', input: { n: 1.5 } },
          { toolName: 'shell', input: { cmd: 'ls' } },
          { toolName: 'count', input: { n: 2 } },
        ],
      },
      { text: 'done' },
    ]);
    const result = await runWorker(shellWorker(work), 'go', { model });
    const byDecision = decisions(result.toolCalls).sort((a, b) => String(a).localeCompare(String(b)));
    expect(byDecision).toEqual(
      [
        ['no_such_tool', 'unknown-tool', 'schema', 'TOOL_NOT_FOUND'],
        ['vault', 'blocked', 'config', 'TOOL_BLOCKED'],
        ['count', 'invalid-input', 'schema', 'INVALID_INPUT'],
        ['count', 'invalid-input', 'schema', 'INVALID_INPUT'],
        ['shell', 'invalid-input', 'schema', 'INVALID_INPUT'],
        ['count', 'preApproved', 'config', null],
      ].sort((a, b) => String(a).localeCompare(String(b))),
    );
    const unknown = result.toolCalls.find((call) => call.toolName === 'no_such_tool');
    expect(unknown?.input).toEqual({ x: 1 });
    expect(unknown?.error).toMatch(/no_such_tool/);
    expect(result.toolCalls.find((call) => call.decision === 'preApproved')?.output).toBe(3);
  });

  it('records approved, always, denied and no-handler denials with who decided', async () => {
    const work = tempDir();
    mkdirSync(join(work, 'build'));
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'shell', input: { command: 'touch a.txt' } }] },
      { toolCalls: [{ toolName: 'shell', input: { command: 'touch b.txt' } }] },
      { toolCalls: [{ toolName: 'shell', input: { command: 'touch b.txt' } }] },
      { toolCalls: [{ toolName: 'shell', input: { command: 'touch c.txt' } }] },
      { text: 'done' },
    ]);
    const result = await runWorker(shellWorker(work), 'go', {
      model,
      onApproval: ({ input }) => {
        const { command } = input as { command: string };
        if (command === 'touch a.txt') return 'approve';
        if (command === 'touch b.txt') return 'always';
        return { decision: 'deny', reason: 'no c' };
      },
    });
    expect(decisions(result.toolCalls)).toEqual([
      ['shell', 'approved', 'user', null],
      ['shell', 'always', 'user', null],
      ['shell', 'always', 'always', null],
      ['shell', 'denied', 'user', null],
    ]);
    expect(result.toolCalls[1]?.scope?.description).toContain('exactly this command: touch b.txt');
    expect(result.toolCalls[3]?.reason).toBe('no c');
    const failClosed = await runWorker(shellWorker(work), 'go', {
      model: scriptedModel([{ toolCalls: [{ toolName: 'shell', input: { command: 'touch d.txt' } }] }, { text: 'ok' }]),
    });
    expect(decisions(failClosed.toolCalls)).toEqual([['shell', 'denied', 'no-handler', null]]);
    expect(existsSync(join(work, 'd.txt'))).toBe(false);
  });

  it('a call a person approved but a policy refused is recorded as refused', async () => {
    const work = tempDir();
    const cli = cliExecuteTool({ workDir: work, allowedBinaries: ['cat', 'ls'], approval: { default: 'ask' } });
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'cat', args: ['/etc/hostname'] } }] },
      { text: 'done' },
    ]);
    const result = await runWorker({ name: 'w', tools: [cli] }, 'go', { model, onApproval: () => 'approve' });
    expect(decisions(result.toolCalls)).toEqual([['cli_execute', 'refused', 'policy', 'PATH_OUTSIDE_ROOT']]);
  });
});
