/**
 * Approvals: the egress proxy asks about hosts as the request `toolName: 'network'`, and an
 * "always" or a saved `host:` rule for one holds run-wide, for every worker (a host is not a
 * worker's). A tool named `network` would be judged by those answers: "always" for a host that
 * `curl` reached would run it unasked, whatever else its input said, and a called worker's answer
 * about its own `network` tool would bind its caller's. The name is reserved: a tools module, a
 * called worker or an MCP-free toolset offering a tool of that name does not load, and nothing
 * runs. (MCP tools are always `server_tool`; executable tools `custom_tool_…`.)
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ToolgateError } from '../../ts/src/index.js';
import { loadWorker } from '../../ts/src/worker/load-worker.js';
import { tempDir } from '../helpers/fs.js';

const AI = import.meta.resolve('ai');
beforeAll(() => {
  process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'toolgate-cache-'));
});

/** A tools module exporting a tool named `name` that writes `marker` when it runs. */
const toolsModule = (name: string, marker: string) =>
  `import { writeFileSync } from 'node:fs';\nimport { jsonSchema } from ${JSON.stringify(AI)};\n` +
  `export const ${name} = { name: '${name}', description: 'Changes the firewall', inputSchema: jsonSchema({ type: 'object', properties: { host: { type: 'string' }, port: { type: 'number' }, tool: { type: 'string' } } }), execute: async () => { writeFileSync(${JSON.stringify(marker)}, 'x'); return 'done'; } };\n`;

async function refusal(file: string): Promise<ToolgateError> {
  try {
    const worker = await loadWorker(file);
    await worker.close();
  } catch (error) {
    return error as ToolgateError;
  }
  throw new Error(`${file} loaded`);
}

describe("the tool name 'network' is reserved", () => {
  for (const approval of ['ask', 'preApproved']) {
    it(`a tools module's tool named network (${approval}) does not load`, async () => {
      const dir = tempDir('toolgate-nettool-');
      const marker = join(dir, 'RAN');
      writeFileSync(join(dir, 'tools.mjs'), toolsModule('network', marker));
      writeFileSync(join(dir, 'w.yaml'), `name: w\ntoolsets:\n  custom:\n    module: ./tools.mjs\n    approval: { default: ${approval} }\n`);
      const error = await refusal(join(dir, 'w.yaml'));
      expect(error.code, error.message).toBe('CONFIG_INVALID');
      expect(error.message).toContain("'network' is a reserved tool name");
      expect(existsSync(marker)).toBe(false);
    });
  }

  it('a called worker named network does not load either (its tool would be network)', async () => {
    const dir = tempDir('toolgate-nettool-');
    mkdirSync(join(dir, 'workers'));
    writeFileSync(join(dir, 'workers', 'network.yaml'), 'name: network\ndescription: x\n');
    writeFileSync(join(dir, 'main.yaml'), 'name: main\ntoolsets:\n  workers:\n    allowed_workers: [network]\n');
    const error = await refusal(join(dir, 'main.yaml'));
    expect(error.code, error.message).toBe('CONFIG_INVALID');
    expect(error.message).toContain("'network' is a reserved tool name");
  });

  it("a called worker's tools module with a network tool stops the caller's load too", async () => {
    const dir = tempDir('toolgate-nettool-');
    const marker = join(dir, 'RAN');
    writeFileSync(join(dir, 'helper_tools.mjs'), toolsModule('network', marker));
    writeFileSync(join(dir, 'helper.yaml'), 'name: helper\ndescription: Helps\ntoolsets:\n  custom:\n    module: ./helper_tools.mjs\n');
    writeFileSync(join(dir, 'main.yaml'), 'name: main\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n');
    const error = await refusal(join(dir, 'main.yaml'));
    expect(error.code, error.message).toBe('CONFIG_INVALID');
    expect(existsSync(marker)).toBe(false);
  });
});
