import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MockLanguageModelV3 } from 'ai/test';
import { beforeAll, describe, expect, it } from 'vitest';
import { runWorker } from '../ts/src/worker/index.js';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel, toolResultsSeen } from './helpers/mock-model.js';

beforeAll(() => {
  process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'toolgate-cache-'));
});

function put(dir: string, name: string, content: string | Uint8Array): void {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content);
}

/** A boss that may call `analyzer` (attachments: at most 2 PDFs, 100 bytes together). */
function project(): { dir: string; work: string; outside: string } {
  const dir = tempDir();
  const work = join(dir, 'work');
  const outside = join(dir, 'outside');
  put(
    work,
    'boss.yaml',
    [
      'name: boss',
      'toolsets:',
      "  filesystem: { approval: { paths: [{ pattern: 'private/**', approval: blocked }] } }",
      '  workers: { allowed_workers: [analyzer], approval: { default: preApproved } }',
      '',
    ].join('\n'),
  );
  put(
    work,
    'analyzer.worker',
    '---\nname: analyzer\nattachment_policy: { max_attachments: 2, max_total_bytes: 100, allowed_suffixes: [.pdf] }\n---\nYou analyze PDFs.\n',
  );
  put(work, 'docs/report.PDF', '%PDF-1.4 report');
  put(work, 'docs/b.pdf', '%PDF-1.4 b');
  put(work, 'docs/c.pdf', '%PDF-1.4 c');
  put(work, 'notes.txt', 'notes');
  put(work, 'big.pdf', 'x'.repeat(200));
  put(work, 'private/keys.pdf', '%PDF secret');
  put(outside, 'secret.pdf', '%PDF outside');
  symlinkSync(join(outside, 'secret.pdf'), join(work, 'docs/link.pdf'));
  return { dir, work, outside };
}

/** The file parts of the user messages of the model's `index`-th call. */
function fileParts(model: MockLanguageModelV3, index: number): { mediaType: string; text: string }[] {
  const files: { mediaType: string; text: string }[] = [];
  for (const message of model.doGenerateCalls[index]?.prompt ?? []) {
    if (message.role !== 'user') continue;
    for (const part of message.content) {
      if (part.type !== 'file') continue;
      const data = part.data;
      const bytes = typeof data === 'string' ? Buffer.from(data, 'base64') : data instanceof URL ? Buffer.from(data.href) : Buffer.from(data);
      files.push({ mediaType: part.mediaType, text: bytes.toString('utf8') });
    }
  }
  return files;
}

describe('worker attachments', () => {
  it("sends the attached files to the called worker's model as file parts beside the task", async () => {
    const { work } = project();
    const boss = await loadWorker(join(work, 'boss.yaml'));
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'analyzer', input: { input: 'summarize these', attachments: ['docs/report.PDF', './docs/b.pdf'] } }] },
      { text: 'two reports' },
      { text: 'the analyzer read two reports' },
    ]);
    const result = await runWorker(boss, 'analyze the reports', { model });
    expect(result.text).toBe('the analyzer read two reports');
    expect(result.toolCalls).toMatchObject([{ toolName: 'analyzer', output: { status: 'completed', result: 'two reports' } }]);
    expect(fileParts(model, 1)).toEqual([
      { mediaType: 'application/pdf', text: '%PDF-1.4 report' },
      { mediaType: 'application/pdf', text: '%PDF-1.4 b' },
    ]);
    expect(JSON.stringify(model.doGenerateCalls[1]?.prompt)).toContain('summarize these');
    // The caller's own model never sees the files.
    expect(fileParts(model, 0)).toEqual([]);
    expect(fileParts(model, 2)).toEqual([]);
  });

  it('refuses attachments the policy, the work directory or a path rule does not allow, and the called worker never runs', async () => {
    const { work, outside } = project();
    const boss = await loadWorker(join(work, 'boss.yaml'));
    const refused: [string[], string[]][] = [
      [['docs/report.PDF', 'docs/b.pdf', 'docs/c.pdf'], ['INVALID_INPUT', 'max_attachments']],
      [['notes.txt'], ['INVALID_INPUT', 'allowed_suffixes']],
      [['big.pdf'], ['INVALID_INPUT', 'max_total_bytes']],
      [['../outside/secret.pdf'], ['PATH_OUTSIDE_ROOT']],
      [[join(outside, 'secret.pdf')], ['PATH_OUTSIDE_ROOT']],
      [['docs/link.pdf'], ['PATH_OUTSIDE_ROOT']],
      [['private/keys.pdf'], ['PATH_BLOCKED', 'private/**']],
    ];
    const model = scriptedModel([
      { toolCalls: refused.map(([attachments]) => ({ toolName: 'analyzer', input: { input: 'read', attachments } })) },
      { text: 'nothing could be attached' },
    ]);
    const result = await runWorker(boss, 'try everything', { model });
    expect(result.text).toBe('nothing could be attached');
    // Two model calls: the analyzer never ran.
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(Object.values(toolResultsSeen(model, 1))).toHaveLength(refused.length);
    expect(result.toolCalls).toHaveLength(refused.length);
    refused.forEach(([attachments, [code, ...words]], index) => {
      const call = result.toolCalls[index];
      expect(call?.input, attachments.join(', ')).toMatchObject({ attachments });
      expect(call?.errorCode, attachments.join(', ')).toBe(code);
      for (const word of words) expect(call?.error, attachments.join(', ')).toContain(word);
    });
  });
});
