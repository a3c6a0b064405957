/**
 * An MCP stdio server started with `npx -y <package>` under a network-by-host sandbox with the
 * default mode, `enforce` (issue 24): the server runs in a network namespace of its own whose
 * only way out is the egress proxy (its launcher's init hands the proxy's listener to toolgate
 * over the socket pair it inherited as descriptor 3). npx reaches the package registry through
 * the proxy (only the registry's address allowed), keeps what it downloaded in the server's
 * persistent package cache (a second start downloads nothing), a registry that is not allowed is
 * a startup failure naming the refused host, and the server itself cannot get past the proxy.
 *
 * The registry is a local one on 127.0.0.1 serving one package, made here with `npm pack`: an
 * MCP server whose code is this checkout's official SDK (`@modelcontextprotocol/sdk`, readable
 * through the toolset's `read` roots).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mcpToolset, ToolgateError, type McpToolset } from '../ts/src/index.js';
import { nodeModulesDir, packageDir } from './helpers/checkout.js';
import { tempDir } from './helpers/fs.js';
import { expectNoWayOut, NETWORK_PROBE } from './helpers/network-probe.js';

const PACKAGE = 'toolgate-echo-mcp';
/** The official SDK's package root (its `package.json` resolves inside `dist/cjs`). */
const SDK = sdkRoot(packageDir('@modelcontextprotocol/sdk'));

/** The SDK and what it imports must be readable in the server's sandbox. */
const READ = [nodeModulesDir('@modelcontextprotocol/sdk')];

function sdkRoot(found: string): string {
  for (let dir = found; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'dist/esm/server/index.js'))) return dir;
  }
  throw new Error(`no dist/esm/server/index.js above ${found}`);
}

/** The server's code: the official SDK's low-level server with one tool, `echo`. */
const SERVER_SOURCE = `#!/usr/bin/env node
const sdk = process.env.MCP_SDK_DIR;
const { Server } = await import(sdk + '/dist/esm/server/index.js');
const { StdioServerTransport } = await import(sdk + '/dist/esm/server/stdio.js');
const { ListToolsRequestSchema, CallToolRequestSchema } = await import(sdk + '/dist/esm/types.js');
const server = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } });
const modules = { net: await import('node:net'), dgram: await import('node:dgram'), dns: await import('node:dns'), fs: await import('node:fs') };
const probe = ${NETWORK_PROBE};
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: 'echo', description: 'Echoes its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
    { name: 'probe', description: 'Tries to get past the egress proxy', inputSchema: { type: 'object', properties: { port: { type: 'number' } }, required: ['port'] } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === 'probe') return { content: [{ type: 'text', text: (await probe(modules, request.params.arguments.port)).join('\\n') }] };
  return { content: [{ type: 'text', text: 'echo: ' + request.params.arguments.text }] };
});
await server.connect(new StdioServerTransport());
`;

interface Registry {
  port: number;
  /** Requests for the package's tarball so far. */
  tarballs: number;
  /** While set, every request's connection is dropped unanswered (the registry is down). */
  down: boolean;
  server: Server;
}

/** Packs the package and serves it as an npm registry would (packument + tarball). */
async function startRegistry(): Promise<Registry> {
  const source = tempDir();
  writeFileSync(join(source, 'package.json'), JSON.stringify({ name: PACKAGE, version: '1.0.0', type: 'module', bin: { [PACKAGE]: 'server.mjs' } }));
  writeFileSync(join(source, 'server.mjs'), SERVER_SOURCE, { mode: 0o755 });
  const packed = tempDir();
  execFileSync('npm', ['pack', '--pack-destination', packed, '--silent'], { cwd: source, env: { ...process.env, npm_config_cache: join(packed, '.npm') } });
  const tarball = readFileSync(join(packed, readdirSync(packed).find((name) => name.endsWith('.tgz'))!));
  const registry: Registry = { port: 0, tarballs: 0, down: false, server: createServer() };
  registry.server.on('request', (request, response) => {
    if (registry.down) {
      request.socket.destroy();
      return;
    }
    const base = `http://127.0.0.1:${registry.port}`;
    if (request.url === `/${PACKAGE}`) {
      const version = {
        name: PACKAGE,
        version: '1.0.0',
        bin: { [PACKAGE]: 'server.mjs' },
        dist: {
          tarball: `${base}/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`,
          shasum: createHash('sha1').update(tarball).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
        },
      };
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ name: PACKAGE, 'dist-tags': { latest: '1.0.0' }, versions: { '1.0.0': version } }));
    } else if (request.url === `/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`) {
      registry.tarballs += 1;
      response.setHeader('content-type', 'application/octet-stream');
      response.end(tarball);
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  await new Promise<void>((resolve) => registry.server.listen(0, '127.0.0.1', resolve));
  registry.port = (registry.server.address() as AddressInfo).port;
  return registry;
}

let registry: Registry;
const savedCache = process.env.XDG_CACHE_HOME;
beforeAll(async () => {
  registry = await startRegistry();
  // The servers' package caches go to a cache directory of this test's own.
  process.env.XDG_CACHE_HOME = tempDir('toolgate-cache-');
}, 60_000);
afterAll(async () => {
  if (savedCache === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = savedCache;
  await new Promise<void>((resolve) => registry.server.close(() => resolve()));
});

const open: McpToolset[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((toolset) => toolset.close()));
});

/** The toolset with the server started by npx from the local registry, under `network`. */
async function npxServer(workDir: string, network: { allow?: string[]; deny?: string[] }): Promise<McpToolset> {
  const toolset = await mcpToolset({
    servers: {
      echo: {
        command: 'npx',
        args: ['-y', PACKAGE],
        env: { npm_config_registry: `http://127.0.0.1:${registry.port}/`, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_fetch_retries: '0', MCP_SDK_DIR: SDK },
      },
    },
    approval: { default: 'preApproved' },
    sandbox: { read: READ, network },
    startupTimeoutMs: 60_000,
    workDir,
  });
  open.push(toolset);
  return toolset;
}

describe('an npx MCP server with the network by host', () => {
  it('installs from the allowed registry through the proxy, once, and serves its tools', async () => {
    const work = tempDir();
    mkdirSync(join(work, 'src'));
    const first = await npxServer(work, { allow: [`127.0.0.1:${registry.port}`] });
    const echo = first.tools.find((tool) => tool.name === 'echo_echo')!;
    expect(echo).toBeDefined();
    const output = (await echo.execute!({ text: 'hi' } as never, { toolCallId: 'c1', messages: [] })) as { content: { text: string }[] };
    expect(output.content[0]!.text).toBe('echo: hi');
    expect(registry.tarballs).toBe(1);
    await first.close();
    open.splice(0);

    // A second start finds the package in the server's cache: no new download.
    const second = await npxServer(work, { allow: [`127.0.0.1:${registry.port}`] });
    expect(second.tools.map((tool) => tool.name)).toContain('echo_echo');
    expect(registry.tarballs).toBe(1);
    await second.close();
    open.splice(0);

    // A third with the registry down still starts, from the cache alone.
    registry.down = true;
    try {
      const third = await npxServer(work, { allow: [`127.0.0.1:${registry.port}`] });
      expect(third.tools.map((tool) => tool.name)).toContain('echo_echo');
    } finally {
      registry.down = false;
    }
    expect(registry.tarballs).toBe(1);
    open.splice(0).forEach((toolset) => void toolset.close());

    // The same server in another project has a cache of its own (the cache is writable by the
    // server, so a shared one would carry files from one project's agent to the other): it
    // downloads again.
    const elsewhere = await npxServer(tempDir(), { allow: [`127.0.0.1:${registry.port}`] });
    expect(elsewhere.tools.map((tool) => tool.name)).toContain('echo_echo');
    expect(registry.tarballs).toBe(2);
  }, 120_000);

  it('leaves the server no way past the proxy: not to the registry directly, no UDP, no DNS, no listener, no handoff socket', async () => {
    const toolset = await npxServer(tempDir(), { allow: [`127.0.0.1:${registry.port}`] });
    const probe = toolset.tools.find((tool) => tool.name === 'echo_probe')!;
    const output = (await probe.execute!({ port: registry.port } as never, { toolCallId: 'c2', messages: [] })) as { content: { text: string }[] };
    expectNoWayOut(output.content[0]!.text);
  }, 120_000);

  it('fails to start when the registry is not allowed, naming the refused host', async () => {
    const work = tempDir();
    const before = registry.tarballs;
    // A server of its own (the cache is per work directory, server and command line): nothing
    // cached.
    const error = await mcpToolset({
      servers: { other: { command: 'npx', args: ['-y', '--prefer-online', PACKAGE], env: { npm_config_registry: `http://127.0.0.1:${registry.port}/`, MCP_SDK_DIR: SDK } } },
      sandbox: { read: READ, network: { allow: ['registry.npmjs.org'] } },
      startupTimeoutMs: 60_000,
      workDir: work,
    }).then(
      (toolset) => {
        open.push(toolset);
        return undefined;
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ToolgateError);
    expect((error as ToolgateError).message).toContain(`the egress proxy refused it: toolgate: connection to 127.0.0.1:${registry.port} refused`);
    expect(registry.tarballs).toBe(before);
  }, 120_000);
});
