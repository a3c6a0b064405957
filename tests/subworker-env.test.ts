/**
 * Host environment variables through delegation: a called worker (every toolset in it) may pass
 * on only the host variables its caller passes on, so calling a worker cannot hand a secret to
 * processes the caller's own never get. Real worker files, real loads, a real MCP server script.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorker, runWorker, ToolgateError } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel, toolResultsSeen } from './helpers/mock-model.js';

/** The host secret: set in toolgate's environment, named by no worker of the first graphs. */
const SECRET = 'TOOLGATE_SUBWORKER_ENV_SECRET';
const VALUE = 'hunter2-subworker';

beforeAll(() => {
  process.env[SECRET] = VALUE;
});
afterAll(() => {
  delete process.env[SECRET];
});

/** An "MCP server" that only leaves what it was given in a marker file: proof that it started. */
const MARKER_SERVER = "import { writeFileSync } from 'node:fs';\nwriteFileSync('STARTED', process.env.LEAK ?? '');\n";

async function loadFailure(path: string): Promise<ToolgateError> {
  const error = await loadWorker(path).then(
    async (worker) => {
      await worker.close();
      return undefined;
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolgateError);
  return error as ToolgateError;
}

function graph(topShell: string, sub: string): { dir: string; top: string } {
  const dir = tempDir();
  writeFileSync(join(dir, 'server.mjs'), MARKER_SERVER);
  const top = join(dir, 'top.yaml');
  writeFileSync(
    top,
    `name: top\nsandbox: { mode: best-effort }\ntoolsets:\n  shell: ${topShell}\n  workers: { allowed_workers: [./sub.yaml] }\n`,
  );
  writeFileSync(join(dir, 'sub.yaml'), `name: sub\ninstructions: You help.\ntoolsets:\n${sub}`);
  return { dir, top };
}

const SUB_SHELL = `  shell: { default: preApproved, env_passthrough: [${SECRET}] }\n`;
const SUB_MCP = `  mcp: { servers: { files: { command: node, args: [./server.mjs], env: { LEAK: '\${${SECRET}}' } } }, startup_timeout: 5 }\n`;

describe('a called worker passes on only the host variables its caller passes on', () => {
  it('the MCP server of a worker loaded on its own starts at load with the secret (control)', async () => {
    const { dir } = graph('{ default: ask }', SUB_MCP);
    const alone = join(dir, 'sub.yaml');
    writeFileSync(alone, `sandbox: { mode: best-effort }\n${readFileSync(alone, 'utf8')}`);
    // It is no MCP server, so the load fails, but only after the server ran.
    await loadFailure(alone);
    expect(readFileSync(join(dir, 'STARTED'), 'utf8')).toBe(VALUE);
  });

  it("refuses a called worker's MCP env naming a secret the caller does not pass; the server never starts", async () => {
    const { dir, top } = graph('{ default: ask }', SUB_MCP);
    const error = await loadFailure(top);
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(`${join(dir, 'sub.yaml')}: toolsets.mcp.servers.files.env.LEAK`);
    expect(error.message).toContain(`host environment variable ${SECRET}`);
    expect(error.message).toContain(`add ${SECRET} to an env_passthrough of the caller`);
    expect(existsSync(join(dir, 'STARTED'))).toBe(false);
  });

  it("refuses a called worker's shell env_passthrough naming a secret the caller does not pass", async () => {
    const { dir, top } = graph('{ default: ask }', SUB_SHELL);
    const error = await loadFailure(top);
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(`${join(dir, 'sub.yaml')}: toolsets.shell.env_passthrough`);
    expect(error.message).toContain(`calling worker '${top}' (it passes on: none)`);
  });

  it('accepts it when the caller passes the variable on too, and the called shell sees it', async () => {
    const { top } = graph(`{ default: ask, env_passthrough: [${SECRET}] }`, SUB_SHELL);
    const worker = await loadWorker(top);
    try {
      const model = scriptedModel([
        { toolCalls: [{ toolName: 'sub', input: { input: 'print it' } }] },
        { toolCalls: [{ toolName: 'shell', input: { command: `printenv ${SECRET}` } }] },
        { text: 'printed' },
        { text: 'done' },
      ]);
      const result = await runWorker(worker, 'go', { model, onApproval: () => 'approve' });
      expect(result.status).toBe('completed');
      // The called worker's model read the shell's output (its third model call).
      expect(JSON.stringify(toolResultsSeen(model, 2))).toContain(VALUE);
    } finally {
      await worker.close();
    }
  });
});
