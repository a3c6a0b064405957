import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { native } from '../native/binding.js';
import { named } from './named-tool.js';
import { planSavedRules, SavedRules, savedRulesOf, withSavedRules } from './saved-rules.js';

async function planIn(rules: string) {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-saved-'));
  writeFileSync(join(dir, 'worker.yaml'), 'name: w\ntoolsets:\n  shell: { default: ask }\n');
  writeFileSync(join(dir, 'toolgate.permissions.yaml'), `version: 1\nrules:\n${rules}`);
  return { dir, plan: await native.planWorker(join(dir, 'worker.yaml'), null, false) };
}

const RULE = '  - worker: w\n    tool: lookup\n    input: { q: 1 }\n    saved: 2026-01-02T03:04:05Z\n    by: terminal\n';

describe('saved rules of a plan', () => {
  it('lists every rule with where it came from', async () => {
    const { dir, plan } = await planIn(RULE);
    expect(planSavedRules(plan)).toEqual([
      expect.objectContaining({
        worker: 'w',
        tool: 'lookup',
        kind: 'input',
        input: { q: 1 },
        saved: '2026-01-02T03:04:05Z',
        by: 'terminal',
        file: join(dir, 'toolgate.permissions.yaml'),
        line: 3,
      }),
    ]);
  });

  it('answer needsApproval for a covered call, but never for a call already in the approval round trip', async () => {
    const { plan } = await planIn(RULE);
    const rules = new SavedRules(plan, 0);
    const tool = withSavedRules(named('lookup', { inputSchema: {} as never, needsApproval: true, execute: async () => 'x' }), rules);
    expect(savedRulesOf(tool)).toBe(rules);
    const ask = tool.needsApproval as (input: unknown, options: { toolCallId: string; messages: unknown[] }) => Promise<boolean>;
    expect(await ask({ q: 1 }, { toolCallId: 'a', messages: [] })).toBe(false);
    expect(rules.takeCovered('a')).toMatchObject({ line: 3 });
    expect(rules.takeCovered('a')).toBeUndefined();
    expect(await ask({ q: 2 }, { toolCallId: 'b', messages: [] })).toBe(true);
    const inRoundTrip = [{ role: 'assistant', content: [{ type: 'tool-approval-request', approvalId: 'x', toolCallId: 'c' }] }];
    expect(await ask({ q: 1 }, { toolCallId: 'c', messages: inRoundTrip })).toBe(true);
    // A tool that never asks is left as it is.
    const never = named('plain', { inputSchema: {} as never, execute: async () => 'x' });
    expect(withSavedRules(never, rules)).toBe(never);
  });
});
