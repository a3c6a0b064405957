/**
 * Issue 23 §1: a caller's restrictions bind every worker below it. The caller's shell blocks
 * `rm`; the called worker's shell defaults to `preApproved` and it has `cli_execute: [rm]`. Only
 * the delegation is approved. Through the real agent loop (the scripted model is the only fake),
 * real worker files, real processes in the kernel sandbox: the called worker's `rm`, in every
 * spelling and through every command tool, is refused, at every depth. Each attack is first run
 * without the caller's rule (the control), where it deletes the file.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorker } from '../../ts/src/worker/load-worker.js';
import { runWorker } from '../../ts/src/worker/index.js';
import { tempDir } from '../helpers/fs.js';
import { scriptedModel, toolResultsSeen } from '../helpers/mock-model.js';

type Call = { toolName: string; input: unknown };

/**
 * A graph `top -> [middle ->] cleaner` in a fresh folder with `victim.txt`. `topToolsets` is the
 * top worker's toolset YAML (indented by 2); the workers toolset is added.
 */
function graph(topToolsets: string, depth: 1 | 2): { dir: string; top: string } {
  const dir = tempDir('toolgate-callers-');
  writeFileSync(join(dir, 'victim.txt'), 'keep me\n');
  const first = depth === 2 ? 'middle' : 'cleaner';
  writeFileSync(
    join(dir, 'top.yaml'),
    `name: top\ntoolsets:\n${topToolsets}\n  workers: { allowed_workers: [${first}], approval: { default: preApproved } }\n`,
  );
  writeFileSync(join(dir, 'middle.yaml'), 'name: middle\ntoolsets:\n  workers: { allowed_workers: [cleaner], approval: { default: preApproved } }\n');
  writeFileSync(
    join(dir, 'cleaner.yaml'),
    'name: cleaner\napproval: { default: preApproved }\ntoolsets:\n  shell: { default: preApproved }\n  cli_execute: { allowed_binaries: [rm, find, ls] }\n',
  );
  return { dir, top: join(dir, 'top.yaml') };
}

/**
 * Runs the top worker: it delegates down to `cleaner`, which makes `attack`. Shell calls run
 * without a handler (anything that asks is denied: only preApproved calls run, as in the issue);
 * `cli_execute` asks in a worker file, so its calls are approved by a person who approves
 * everything — the caller's rules must still hold.
 */
async function attack(top: string, depth: 1 | 2, call: Call) {
  const turns = [
    { toolCalls: [{ toolName: depth === 2 ? 'middle' : 'cleaner', input: { input: 'tidy up' } }] },
    ...(depth === 2 ? [{ toolCalls: [{ toolName: 'cleaner', input: { input: 'tidy up' } }] }] : []),
    { toolCalls: [call] },
    { text: 'cleaned' },
    ...(depth === 2 ? [{ text: 'done' }] : []),
    { text: 'done' },
  ];
  const model = scriptedModel(turns);
  const worker = await loadWorker(top);
  try {
    const onApproval = call.toolName === 'cli_execute' ? async () => 'approve' as const : undefined;
    const result = await runWorker(worker, 'tidy up', { model, ...(onApproval ? { onApproval } : {}) });
    const seen = JSON.stringify(toolResultsSeen(model, depth + 1));
    return { result, seen };
  } finally {
    await worker.close();
  }
}

const ATTACKS: Call[] = [
  { toolName: 'shell', input: { command: 'rm victim.txt' } },
  { toolName: 'shell', input: { command: '/bin/rm -f victim.txt' } },
  { toolName: 'shell', input: { command: '/usr/bin/rm -- victim.txt' } },
  { toolName: 'shell', input: { command: 'find . -name victim.txt -exec rm {} +' } },
  { toolName: 'cli_execute', input: { binary: 'rm', args: ['victim.txt'] } },
  { toolName: 'cli_execute', input: { binary: 'find', args: ['.', '-name', 'victim.txt', '-exec', 'rm', '{}', ';'] } },
];

describe("a caller's restrictions bind every worker below it", () => {
  for (const depth of [1, 2] as const) {
    for (const call of ATTACKS) {
      it(`depth ${depth}: ${call.toolName} ${JSON.stringify(call.input)}`, async () => {
        const free = graph('  code_agent: { group: read }', depth);
        await attack(free.top, depth, call);
        expect(existsSync(join(free.dir, 'victim.txt')), 'control: the attack deletes the file unbound').toBe(false);

        const bound = graph('  shell: { default: ask, rules: [{ pattern: rm, approval: blocked }] }', depth);
        const { seen } = await attack(bound.top, depth, call);
        expect(existsSync(join(bound.dir, 'victim.txt'))).toBe(true);
        // COMMAND_BLOCKED, in the words the model reads.
        expect(seen).toMatch(/is blocked by rules\[0\] \(pattern 'rm'\) of the shell toolset of the calling worker 'top'/);
      });
    }
  }

  it("a caller's allowlist and guardrails bind the commands below", async () => {
    for (const [toolsets, said] of [
      // BINARY_NOT_ALLOWED and GUARDRAIL_BLOCKED, in the words the model reads.
      ['  cli_execute: { allowed_binaries: [ls] }', 'the allowed_binaries of the calling worker'],
      ['  cli_execute: { allowed_binaries: [ls, rm], guardrails: { deny_commands: [{ pattern: "^rm ", message: "no deleting" }] } }', 'no deleting'],
    ] as const) {
      for (const call of [ATTACKS[0]!, ATTACKS[2]!, ATTACKS[4]!]) {
        const bound = graph(toolsets, 1);
        const { seen } = await attack(bound.top, 1, call);
        expect(existsSync(join(bound.dir, 'victim.txt')), `${toolsets} ${JSON.stringify(call)}`).toBe(true);
        expect(seen).toContain(said);
      }
    }
  });

  it("a caller's ask makes the command below ask, though the called worker's own rules pre-approve it", async () => {
    const bound = graph('  shell: { default: preApproved, rules: [{ pattern: rm, approval: ask }] }', 1);
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'cleaner', input: { input: 'tidy up' } }] },
      { toolCalls: [ATTACKS[0]!, { toolName: 'shell', input: { command: 'ls' } }] },
      { text: 'cleaned' },
      { text: 'done' },
    ]);
    const worker = await loadWorker(bound.top);
    const asked: string[] = [];
    try {
      await runWorker(worker, 'tidy up', {
        model,
        onApproval: async (request) => {
          asked.push(JSON.stringify(request.input));
          return { decision: 'deny', reason: 'not now' };
        },
      });
    } finally {
      await worker.close();
    }
    expect(asked).toEqual([JSON.stringify({ command: 'rm victim.txt' })]);
    expect(existsSync(join(bound.dir, 'victim.txt'))).toBe(true);
  });
});
