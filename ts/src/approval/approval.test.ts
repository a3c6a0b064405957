import { tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  approvalOf,
  type ApprovalDecision,
  isBlocked,
  offeredTools,
  strictest,
  wrapWithDefaultApproval,
} from './approval.js';
import { ToolgateError } from '../native/errors.js';
import { named, toToolSet } from './named-tool.js';

type Own = 'none' | true | false | 'fn';
const EXPLICIT: (ApprovalDecision | 'none')[] = ['none', 'preApproved', 'ask', 'blocked'];
const OWN: Own[] = ['none', true, false, 'fn'];
const DEFAULTS: (ApprovalDecision | 'none')[] = ['none', 'preApproved', 'ask', 'blocked'];
const INPUTS = [{ dangerous: true }, { dangerous: false }];

function makeTool(own: Own) {
  let runs = 0;
  const base = tool({
    description: 'test tool',
    inputSchema: z.object({ dangerous: z.boolean() }),
    execute: async () => {
      runs += 1;
      return 'ran';
    },
    ...(own === 'none' ? {} : { needsApproval: own === 'fn' ? ({ dangerous }: { dangerous: boolean }) => dangerous : own }),
  });
  return { tool: named('probe', base), runs: () => runs };
}

/** The rule of DESIGN.md, written independently of the implementation. */
function expected(explicit: ApprovalDecision | 'none', own: Own, fallback: ApprovalDecision | 'none', input: { dangerous: boolean }) {
  const candidates: ApprovalDecision[] = [];
  if (explicit !== 'none') candidates.push(explicit);
  if (own === 'fn') candidates.push(input.dangerous ? 'ask' : 'preApproved');
  else if (own !== 'none') candidates.push(own ? 'ask' : 'preApproved');
  if (explicit === 'none' && own === 'none') candidates.push(fallback === 'none' ? 'ask' : fallback);
  return strictest(...candidates);
}

const options = { toolCallId: 'call-1', messages: [] };

describe('wrapWithDefaultApproval', () => {
  const cases = EXPLICIT.flatMap((explicit) => OWN.flatMap((own) => DEFAULTS.map((fallback) => [explicit, own, fallback] as const)));

  it.each(cases)('explicit=%s own needsApproval=%s default=%s', async (explicit, own, fallback) => {
    const { tool: probe, runs } = makeTool(own);
    const wrapped = wrapWithDefaultApproval(probe, {
      ...(fallback === 'none' ? {} : { default: fallback }),
      ...(explicit === 'none' ? {} : { tools: { probe: explicit } }),
    });
    for (const input of INPUTS) {
      const want = expected(explicit, own, fallback, input);
      if (want === 'blocked') {
        expect(isBlocked(wrapped)).toBe(true);
        const error = await Promise.resolve()
          .then(() => wrapped.execute?.(input, options))
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ToolgateError);
        expect(error).toMatchObject({ code: 'TOOL_BLOCKED' });
        expect(runs()).toBe(0);
        continue;
      }
      const gate = wrapped.needsApproval;
      const asks = typeof gate === 'function' ? await gate(input, options) : gate === true;
      expect(asks, `input ${JSON.stringify(input)}`).toBe(want === 'ask');
    }
  });

  it('records the static decision and whether the tool decides per call', () => {
    expect(approvalOf(wrapWithDefaultApproval(makeTool('none').tool))).toEqual({ decision: 'ask', dynamic: false });
    expect(approvalOf(wrapWithDefaultApproval(makeTool('fn').tool, { default: 'preApproved' }))).toEqual({
      decision: 'preApproved',
      dynamic: true,
    });
    expect(approvalOf(makeTool('none').tool)).toBeUndefined();
  });

  it('leaves blocked tools out of what the model is offered', () => {
    const a = wrapWithDefaultApproval(makeTool('none').tool, { default: 'blocked' });
    const b = wrapWithDefaultApproval(named('other', makeTool('none').tool), { default: 'ask' });
    expect(offeredTools([a, b]).map((t) => t.name)).toEqual(['other']);
  });

  it('rejects unknown decisions with CONFIG_INVALID', () => {
    expect(() => wrapWithDefaultApproval(makeTool('none').tool, { default: 'maybe' as ApprovalDecision })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('preApproved, ask, blocked') }),
    );
  });

  it('does not let two tools share a name', () => {
    const first = makeTool('none').tool;
    const second = makeTool('none').tool;
    expect(() => toToolSet([first, second])).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});
