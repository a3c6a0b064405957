import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tool } from 'ai';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { named, serveMcp, shellToolset, toToolSet, wrapWithDefaultApproval } from '../ts/src/index.js';
import type { ApprovalRequest } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';

const textOf = (result: unknown) => (result as CallToolResult).content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');

describe('serveMcp embedded (the SDK in-memory transport)', () => {
  it('serves a gated tool set: blocked unlisted, onApproval asked without elicitation, "always" covers exactly the call', async () => {
    const work = tempDir();
    writeFileSync(join(work, 'a.txt'), 'A\n');
    const secret = wrapWithDefaultApproval(
      named('secret', tool({ description: 'never served', inputSchema: z.object({}), execute: async () => 'leaked' })),
      { default: 'blocked' },
    );
    const shell = shellToolset({ workDir: work, default: 'ask' });
    const asked: ApprovalRequest[] = [];
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const serving = await serveMcp(
      { name: 'embedded', tools: toToolSet([secret, shell]) },
      {
        transport: serverSide,
        onApproval: (request) => {
          asked.push(request);
          return asked.length === 1 ? 'always' : { decision: 'deny', reason: 'no thanks' };
        },
      },
    );
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      expect((await client.listTools()).tools.map((listed) => listed.name)).toEqual(['shell']);
      const blocked = await client.callTool({ name: 'secret', arguments: {} });
      expect(blocked.isError).toBe(true);
      expect(textOf(blocked)).not.toContain('leaked');

      for (const bad of [{ command: 42 }, {}, { command: ['ls'] }]) {
        const refused = await client.callTool({ name: 'shell', arguments: bad });
        expect(refused.isError, JSON.stringify(bad)).toBe(true);
        expect(textOf(refused)).toContain('INVALID_INPUT');
      }
      expect(asked).toHaveLength(0);

      const first = await client.callTool({ name: 'shell', arguments: { command: 'cat a.txt' } });
      expect(textOf(first)).toContain('A');
      // "always" covered exactly `cat a.txt`.
      await client.callTool({ name: 'shell', arguments: { command: 'cat a.txt' } });
      expect(asked).toHaveLength(1);
      const other = await client.callTool({ name: 'shell', arguments: { command: 'ls -la' } });
      expect(asked).toHaveLength(2);
      expect(other.isError).toBe(true);
      expect(textOf(other)).toContain('no thanks');
      // Refused calls are recorded too (and logged): the blocked tool, the inputs that fail the schema.
      expect(serving.records.map((record) => record.decision)).toEqual([
        'blocked',
        'invalid-input',
        'invalid-input',
        'invalid-input',
        'always',
        'always',
        'denied',
      ]);
      expect(serving.records.map((record) => record.decidedBy)).toEqual(['config', 'schema', 'schema', 'schema', 'user', 'always', 'user']);
    } finally {
      await client.close();
      await serving.close();
    }
  });

  it('log: the audit log of runs, redacted, written as each call ends, closed by mcp-serve-end', async () => {
    const work = tempDir();
    const log = join(work, 'audit.jsonl');
    const echo = named('echo', tool({ description: 'echoes', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => text }));
    const secretValue = 'mcp-serve-secret-value-42';
    process.env.TOOLGATE_TEST_MCP_TOKEN = secretValue;
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const serving = await serveMcp({ name: 'logged', tools: toToolSet([echo]) }, { transport: serverSide, log });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    const read = () => readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    try {
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: `token ${secretValue}` } }))).toContain(secretValue);
      await client.callTool({ name: 'nope', arguments: {} });
      // Written before the result reached the client, not when the serving ends.
      expect(read().map((line) => line.event)).toEqual(['mcp-serve-start', 'tool-call', 'tool-call']);
    } finally {
      delete process.env.TOOLGATE_TEST_MCP_TOKEN;
      await client.close();
      await serving.close();
    }
    const lines = read();
    expect(lines.map((line) => line.event)).toEqual(['mcp-serve-start', 'tool-call', 'tool-call', 'mcp-serve-end']);
    expect(lines[0]).toMatchObject({ worker: 'logged', tools: ['echo'] });
    expect(lines[1]).toMatchObject({ toolName: 'echo', decision: 'preApproved', decidedBy: 'config', input: { text: 'token [REDACTED]' } });
    expect(lines[2]).toMatchObject({ toolName: 'nope', decision: 'unknown-tool', decidedBy: 'schema', errorCode: 'TOOL_NOT_FOUND' });
    expect(lines[3]).toMatchObject({ calls: 2 });
    expect(readFileSync(log, 'utf8')).not.toContain(secretValue);
    expect(new Set(lines.map((line) => line.runId)).size).toBe(1);
  });
});
