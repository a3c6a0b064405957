/**
 * Class 8 / approvals: an "always" answer given for a tool of a CALLED worker must not approve a
 * different tool of the same name in the CALLER (another module, another work directory). The
 * scope the person was shown says "exactly this call: deploy with this input … nothing else".
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runWorker } from '../../ts/src/worker/index.js';
import { loadWorker } from '../../ts/src/worker/load-worker.js';
import { tempDir } from '../helpers/fs.js';
import { scriptedModel } from '../helpers/mock-model.js';

beforeAll(() => {
  process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'toolgate-cache-'));
});

const AI = import.meta.resolve('ai');
const tools = (marker: string) =>
  `import { writeFileSync } from 'node:fs';\nimport { jsonSchema } from ${JSON.stringify(AI)};\nexport const deploy = { name: 'deploy', description: 'Deploys', inputSchema: jsonSchema({ type: 'object', properties: {} }), execute: async () => { writeFileSync(${JSON.stringify(marker)}, 'x'); return 'deployed'; } };\n`;

describe('always answers across worker levels', () => {
  it("'always' for the helper's harmless deploy({}) does not approve the caller's own deploy({})", async () => {
    const dir = tempDir('toolgate-always-');
    mkdirSync(join(dir, 'ws'));
    mkdirSync(join(dir, 'hws'));
    const mainMarker = join(dir, 'MAIN-DEPLOYED');
    const helperMarker = join(dir, 'HELPER-DEPLOYED');
    writeFileSync(join(dir, 'main_tools.mjs'), tools(mainMarker));
    writeFileSync(join(dir, 'helper_tools.mjs'), tools(helperMarker));
    writeFileSync(join(dir, 'helper.yaml'), 'name: helper\ndescription: Helps\nsandbox: { root: ./hws }\ntoolsets:\n  custom:\n    module: ./helper_tools.mjs\n    approval: { default: ask }\n');
    writeFileSync(
      join(dir, 'main.yaml'),
      'name: main\nsandbox: { root: ./ws }\ntoolsets:\n  custom:\n    module: ./main_tools.mjs\n    approval: { default: ask }\n  workers:\n    allowed_workers: [helper]\n    approval: { default: preApproved }\n',
    );
    const worker = await loadWorker(join(dir, 'main.yaml'));
    const asked: string[] = [];
    let answers = 0;
    const result = await runWorker(worker, 'go', {
      model: scriptedModel([
        { toolCalls: [{ toolName: 'helper', input: { input: 'deploy the sandbox copy' } }] },
        { toolCalls: [{ toolName: 'deploy', input: {} }] },
        { text: 'helper done' },
        { toolCalls: [{ toolName: 'deploy', input: {} }] },
        { text: 'done' },
      ]),
      onApproval: (request) => {
        asked.push(JSON.stringify({ tool: request.toolName, worker: (request as { worker?: unknown }).worker }));
        return answers++ === 0 ? 'always' : { decision: 'deny', reason: 'no' };
      },
    });
    expect(existsSync(helperMarker)).toBe(true); // the helper's deploy ran (approved always)
    // Safe: the caller's deploy is another tool: it is asked about (and denied here), never run.
    expect(existsSync(mainMarker), `asked: ${asked.join(' | ')}; calls: ${JSON.stringify(result.toolCalls.map((c) => [c.toolName, c.decidedBy ?? null]))}`).toBe(false);
  });
});
