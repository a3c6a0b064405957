/**
 * Class 3 across a worker graph: a caller blocks `.env*`; the called worker narrows its work
 * directory with `sandbox.restrict: /sub`, where a hard link to `.env` lies (made before the
 * load). The caller's rules bind the callee's file tools, and the file tools refuse a file that
 * is the same file as a blocked one: the callee must not read the secret through the link.
 */
import { linkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorker } from '../../ts/src/worker/load-worker.js';
import { runWorker } from '../../ts/src/worker/index.js';
import { tempDir } from '../helpers/fs.js';
import { scriptedModel, toolResultsSeen } from '../helpers/mock-model.js';
import { writeFiles } from '../helpers/tools.js';

const SECRET = 'CALLEE-LINK-SECRET-5519';

describe("a caller's blocked file, under another name in a called worker's narrower work directory", () => {
  for (const [tool, input] of [
    ['file_read', { path: 'notes.txt' }],
    ['grep_search', { pattern: 'CALLEE-LINK' }],
    ['read_file', { path: 'notes.txt' }],
    ['cli_execute', { binary: 'cat', args: ['notes.txt'] }],
  ] as const) {
    it(`${tool}: the callee does not read it`, { timeout: 30_000 }, async () => {
      const dir = tempDir('toolgate-callee-link-');
      writeFiles(dir, {
        'top.yaml': [
          'name: top',
          'sandbox: { root: ./work }',
          'toolsets:',
          '  code_agent:',
          '    approval:',
          '      default: preApproved',
          "      paths: [{ pattern: '.env*', approval: blocked }]",
          '  workers: { allowed_workers: [./callee.yaml], approval: { default: preApproved } }',
          '',
        ].join('\n'),
        'callee.yaml': [
          'name: callee',
          'sandbox: { restrict: /sub }',
          'approval: { default: preApproved }',
          'toolsets:',
          '  code_agent: { approval: { default: preApproved } }',
          '  filesystem: { approval: { default: preApproved } }',
          '  cli_execute: { allowed_binaries: [cat] }',
          '',
        ].join('\n'),
        'work/.env': `TOKEN=${SECRET}\n`,
        'work/sub/readme.md': 'hello\n',
      });
      linkSync(join(dir, 'work/.env'), join(dir, 'work/sub/notes.txt'));
      const model = scriptedModel([
        { toolCalls: [{ toolName: 'callee', input: { input: 'read notes' } }] },
        { toolCalls: [{ toolName: tool, input }] },
        { text: 'read' },
        { text: 'done' },
      ]);
      const worker = await loadWorker(join(dir, 'top.yaml'));
      try {
        await runWorker(worker, 'go', { model, onApproval: async () => 'approve' as const });
      } finally {
        await worker.close();
      }
      const seen = JSON.stringify(toolResultsSeen(model, 2));
      expect(seen.length).toBeGreaterThan(2);
      expect(seen).not.toContain(SECRET);
    });
  }
});
