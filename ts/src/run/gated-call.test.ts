/**
 * The one gated-call pipeline (`gatedCall`), with real tools (plain JavaScript tools and the
 * real `shell` toolset, whose policy runs in the core), a real gate, a real recorder and a real
 * audit log on disk.
 */
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool, type ToolSet } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { wrapWithDefaultApproval } from '../approval/approval.js';
import { named } from '../approval/named-tool.js';
import { ToolgateError } from '../native/errors.js';
import { shellToolset } from '../toolsets/shell.js';
import { ApprovalGate } from './approval-gate.js';
import { AuditTrail } from './audit.js';
import { askGate, gatedCall, gatedTools, outputOrThrow, rejectedDecision, type CallRun, type ToolCall } from './gated-call.js';
import { Recorder } from './records.js';
import type { ApprovalHandler, ApprovalRequest, RunEvent, ToolCallRecord } from './types.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-gated-call-')));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

type AnyTool = ToolSet[string];

/** A plain JavaScript tool that counts its runs, gated by the core with `approval`. */
function counter(approval: 'preApproved' | 'ask' | 'blocked', needsApproval?: (input: { n: number }) => unknown) {
  const runs: number[] = [];
  const gated = wrapWithDefaultApproval(
    named(
      'count',
      tool({
        description: 'adds one',
        inputSchema: z.object({ n: z.number() }),
        execute: async ({ n }: { n: number }) => {
          runs.push(n);
          return n + 1;
        },
        ...(needsApproval ? { needsApproval: needsApproval as (input: { n: number }) => boolean } : {}),
      }),
    ),
    { default: approval },
  );
  return { tool: gated as AnyTool, runs };
}

/** A gate with `handler`, a recorder, and every event the run emitted. */
function run(handler?: ApprovalHandler | 'defer', signal?: AbortSignal): CallRun & { events: RunEvent[]; asked: ApprovalRequest[] } {
  const events: RunEvent[] = [];
  const asked: ApprovalRequest[] = [];
  const counted: ApprovalHandler | 'defer' | undefined =
    typeof handler === 'function'
      ? (request, context) => {
          asked.push(request);
          return handler(request, context);
        }
      : handler;
  const emit = (event: RunEvent) => events.push(event);
  return { gate: new ApprovalGate(counted, emit, signal), recorder: new Recorder(emit), events, asked };
}

let ids = 0;
function call(toolName: string, gated: AnyTool, input: unknown, signal?: AbortSignal): ToolCall {
  return { toolName, tool: gated, input, options: { toolCallId: `call-${++ids}`, messages: [], ...(signal ? { abortSignal: signal } : {}) } };
}

const summary = (records: readonly ToolCallRecord[]) => records.map((record) => [record.decision, record.decidedBy, record.errorCode ?? null]);

describe('gatedCall', () => {
  it('runs a preApproved tool once and records it as decided by the configuration', async () => {
    const { tool: gated, runs } = counter('preApproved');
    const calls = run();
    const outcome = await gatedCall(call('count', gated, { n: 1 }), calls, 'inline');
    expect(outcome).toMatchObject({ status: 'succeeded', output: 2 });
    expect(runs).toEqual([1]);
    expect(summary(calls.recorder.records)).toEqual([['preApproved', 'config', null]]);
    expect(calls.events.map((event) => event.type)).toEqual(['tool-call', 'tool-result', 'call-recorded']);
  });

  it('asks the handler for an ask tool: approve runs it, deny does not and records the reason', async () => {
    const { tool: gated, runs } = counter('ask');
    const calls = run((request) => (request.input as { n: number }).n === 1 ? 'approve' : { decision: 'deny', reason: 'not two' });
    expect(await gatedCall(call('count', gated, { n: 1 }), calls, 'inline')).toMatchObject({ status: 'succeeded', output: 2 });
    const denied = await gatedCall(call('count', gated, { n: 2 }), calls, 'inline');
    expect(denied).toMatchObject({ status: 'denied', answer: { approved: false, decidedBy: 'user', reason: 'not two' } });
    expect(runs).toEqual([1]);
    expect(summary(calls.recorder.records)).toEqual([
      ['approved', 'user', null],
      ['denied', 'user', null],
    ]);
    expect(calls.recorder.records[1]?.reason).toBe('not two');
    expect(() => outputOrThrow(denied, 'count')).toThrow(expect.objectContaining({ code: 'APPROVAL_DENIED', message: "tool 'count' was not run: not two" }));
  });

  it('fails closed without a handler, and when deferring is not possible', async () => {
    for (const handler of [undefined, 'defer' as const]) {
      const { tool: gated, runs } = counter('ask');
      const calls = run(handler);
      const outcome = await gatedCall(call('count', gated, { n: 1 }), calls, 'inline');
      expect(outcome).toMatchObject({ status: 'denied', answer: { decidedBy: 'no-handler' } });
      expect(runs).toEqual([]);
      expect(summary(calls.recorder.records)).toEqual([['denied', 'no-handler', null]]);
    }
  });

  it('"always" covers exactly the same call afterwards, without asking again', async () => {
    const { tool: gated, runs } = counter('ask');
    const calls = run(() => 'always');
    await gatedCall(call('count', gated, { n: 1 }), calls, 'inline');
    await gatedCall(call('count', gated, { n: 1 }), calls, 'inline');
    await gatedCall(call('count', gated, { n: 3 }), calls, 'inline');
    expect(calls.asked.map((request) => request.input)).toEqual([{ n: 1 }, { n: 3 }]);
    expect(runs).toEqual([1, 1, 3]);
    expect(summary(calls.recorder.records)).toEqual([
      ['always', 'user', null],
      ['always', 'always', null],
      ['always', 'user', null],
    ]);
    expect(calls.gate.alwaysScopes.map((scope) => scope.kind)).toEqual(['call', 'call']);
  });

  it("calls a tool's own needsApproval function once per call; any truthy answer asks", async () => {
    const seen: number[] = [];
    const { tool: gated, runs } = counter('preApproved', ({ n }) => {
      seen.push(n);
      return n > 1 ? 'yes' : 0;
    });
    const calls = run(() => 'deny');
    await gatedCall(call('count', gated, { n: 1 }), calls, 'inline');
    await gatedCall(call('count', gated, { n: 2 }), calls, 'inline');
    expect(seen).toEqual([1, 2]);
    expect(runs).toEqual([1]);
    // The function decided the first call (a rule), the person the second.
    expect(summary(calls.recorder.records)).toEqual([
      ['preApproved', 'rule', null],
      ['denied', 'user', null],
    ]);
  });

  it('records a refusal of the real shell policy as the core classifies it, and returns the failure', async () => {
    const work = tempDir();
    writeFileSync(join(work, 'keep.txt'), 'keep');
    const shell = shellToolset({
      workDir: work,
      default: 'ask',
      rules: [
        { pattern: 'cat', approval: 'preApproved' },
        { pattern: 'rm', approval: 'blocked' },
      ],
    }) as unknown as AnyTool;
    const calls = run(() => 'approve');
    const outside = await gatedCall(call('shell', shell, { command: 'cat ../outside.txt' }), calls, 'inline');
    const removed = await gatedCall(call('shell', shell, { command: 'rm keep.txt' }), calls, 'inline');
    const read = await gatedCall(call('shell', shell, { command: 'cat keep.txt' }), calls, 'inline');
    expect(outside.status).toBe('failed');
    expect(removed.status).toBe('failed');
    expect(read).toMatchObject({ status: 'succeeded', output: expect.objectContaining({ stdout: 'keep' }) });
    expect(() => outputOrThrow(outside, 'shell')).toThrow(ToolgateError);
    expect(summary(calls.recorder.records)).toEqual([
      ['refused', 'policy', 'PATH_OUTSIDE_ROOT'],
      ['blocked', 'rule', 'COMMAND_BLOCKED'],
      ['preApproved', 'rule', null],
    ]);
    expect(readFileSync(join(work, 'keep.txt'), 'utf8')).toBe('keep');
  });

  it('writes one audit line per call through the recorder, with the decision and who made it', async () => {
    const log = join(tempDir(), 'audit.jsonl');
    const trail = new AuditTrail({ file: log, redact: [] }, 'run-1', 'w');
    const events: RunEvent[] = [];
    const emit = (event: RunEvent) => {
      events.push(event);
      trail.collect(event);
    };
    const calls: CallRun = { gate: new ApprovalGate(() => ({ decision: 'deny', reason: 'no' }), emit, undefined), recorder: new Recorder(emit) };
    const free = counter('preApproved').tool;
    const asking = counter('ask').tool;
    await gatedCall(call('count', free, { n: 1 }), calls, 'inline');
    await gatedCall(call('count', asking, { n: 2 }), calls, 'inline');
    await trail.flush();
    const lines = readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => [line.event, line.decision, line.decidedBy, line.reason ?? null])).toEqual([
      ['tool-call', 'preApproved', 'config', null],
      ['tool-call', 'denied', 'user', 'no'],
    ]);
  });

  it('an abort while the handler is asked stops the call: the reason is thrown and nothing runs', async () => {
    const { tool: gated, runs } = counter('ask');
    const controller = new AbortController();
    const calls = run(() => new Promise(() => controller.abort(new Error('stopped by the caller'))), controller.signal);
    await expect(gatedCall(call('count', gated, { n: 1 }, controller.signal), calls, 'inline')).rejects.toThrow('stopped by the caller');
    expect(runs).toEqual([]);
    expect(calls.recorder.records).toEqual([]);
  });

  it("in the AI SDK's flow, takes the gate's answer for the call instead of asking again", async () => {
    const { tool: gated, runs } = counter('ask');
    const calls = run((request) => ((request.input as { n: number }).n === 1 ? 'always' : 'deny'));
    // The loop answers the SDK's approval requests between two model calls ...
    const first = call('count', gated, { n: 1 });
    const second = call('count', gated, { n: 2 });
    expect(await askGate(calls, { toolName: 'count', tool: gated, input: { n: 1 }, toolCallId: first.options.toolCallId })).toMatchObject({ approved: true });
    expect(await askGate(calls, { toolName: 'count', tool: gated, input: { n: 2 }, toolCallId: second.options.toolCallId })).toMatchObject({ approved: false });
    // ... and the SDK executes the approved call: recorded as the person's "always", asked once.
    expect(await gatedCall(first, calls, 'ai-sdk')).toMatchObject({ status: 'succeeded' });
    // A denial under a repeated id belongs to another call; it does not label this one.
    const repeated = { ...call('count', counter('preApproved').tool, { n: 5 }), options: { ...second.options } };
    expect(await gatedCall(repeated, calls, 'ai-sdk')).toMatchObject({ status: 'succeeded', output: 6 });
    expect(calls.asked).toHaveLength(2);
    expect(runs).toEqual([1]);
    expect(calls.recorder.records.map((record) => [record.toolCallId, record.decision, record.decidedBy])).toEqual([
      [second.options.toolCallId, 'denied', 'user'],
      [first.options.toolCallId, 'always', 'user'],
      [second.options.toolCallId, 'preApproved', 'config'],
    ]);
  });

  it('refuses a tool that cannot run', async () => {
    const clientSide = wrapWithDefaultApproval(named('client', tool({ description: 'runs elsewhere', inputSchema: z.object({}) })), { default: 'preApproved' });
    await expect(gatedCall(call('client', clientSide as AnyTool, {}), run(), 'inline')).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
  });
});

describe('gatedTools and rejectedDecision', () => {
  it('names the blocked tools (own gate or a plan decision) and refuses two tools with one name', () => {
    const open = named('open', counter('preApproved').tool);
    const closed = wrapWithDefaultApproval(named('closed', tool({ description: 'x', inputSchema: z.object({}), execute: async () => 1 })), { default: 'blocked' });
    const table = gatedTools([open, closed], { open: { decision: 'preApproved' }, planned: { decision: 'blocked' } });
    expect([...table.tools.keys()]).toEqual(['open', 'closed']);
    expect([...table.blocked].sort()).toEqual(['closed', 'planned']);
    expect(() => gatedTools([open, named('open', counter('ask').tool)], undefined)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));

    expect(rejectedDecision('closed', table.tools, table.blocked)).toBe('blocked');
    expect(rejectedDecision('open', table.tools, table.blocked)).toBe('invalid-input');
    expect(rejectedDecision('constructor', table.tools, table.blocked)).toBe('unknown-tool');
  });
});
