import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { type FakeOpenAiServer, type FakeTurn, startFakeOpenAiServer } from './helpers/fake-openai-server.js';
import { nodeModulesDir } from './helpers/checkout.js';
import { tempDir } from './helpers/fs.js';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'dist/cli/main.js');
const MISBEHAVING = join(ROOT, 'tests/fixtures/mcp/misbehaving-server.mjs');

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function sleepers(seconds: number): number[] {
  return readdirSync('/proc').filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      return readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${seconds}\0`;
    } catch {
      return false;
    }
  }).map(Number);
}

const call = (name: string, args: unknown): FakeTurn => ({ toolCalls: [{ name, arguments: args }] });

it('toolgate run ends the MCP servers of the worker (and their process trees) on Ctrl-C', async () => {
  const work = tempDir();
  const seconds = 5000 + Math.floor(Math.random() * 1000);
  writeFileSync(
    join(work, 'worker.yaml'),
    [
      'name: mcp-run',
      `sandbox: { read: [${JSON.stringify(ROOT)}, ${JSON.stringify(nodeModulesDir('@modelcontextprotocol/sdk'))}] }`,
      'toolsets:',
      '  mcp:',
      `    servers: { bad: { command: node, args: [${JSON.stringify(MISBEHAVING)}] } }`,
      '    approval: { default: preApproved }',
      '',
    ].join('\n'),
  );
  server = await startFakeOpenAiServer([call('bad_spawn', { seconds }), call('bad_hang', {})]);
  const child = spawn(
    process.execPath,
    [BIN, 'run', join(work, 'worker.yaml'), 'go', '--model', 'openai-compatible:fake', '--base-url', server.baseUrl],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  // Wait until the hanging call is running (the grandchild of the first call exists by then).
  for (let i = 0; i < 200 && !stderr.includes('bad_hang'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(stderr).toContain('bad_hang');
  expect(sleepers(seconds)).toHaveLength(1);
  child.kill('SIGINT');
  expect(await exited).toBe(130);
  expect(stderr).toContain('interrupted (Ctrl-C)');
  for (let i = 0; i < 50 && sleepers(seconds).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(sleepers(seconds)).toEqual([]);
}, 60_000);
