/**
 * Network by host end to end (issue 24): worker files with `sandbox.network: { allow, deny, ask }`
 * run real programs (curl, python) whose only way out is toolgate's egress proxy, against servers
 * this test starts on 127.0.0.1. Asking goes through the run's approval handler (`toolName:
 * 'network'`), deferred runs stop and resume in another process, every decision is a record and an
 * audit line, and a refused connection is named in the call's result.
 *
 * Local servers are on 127.0.0.1, an internal address: a worker reaches them only with the address
 * itself in `allow` (a name resolving there is not enough). `localhost` is the name used for
 * asking: it is in no `allow` list, so it is asked about, and its address is allowed.
 */
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { type CallToolResult, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorker } from '../ts/src/worker/load-worker.js';
import { resumeWorker, runWorker, type ApprovalAnswer, type ApprovalRequest, type RunEvent } from '../ts/src/worker/index.js';
import { CLI, runToolgate, runToolgateAsync, type CliRun } from './helpers/cli.js';
import { startFakeOpenAiServer, toolResultsIn, type FakeTurn } from './helpers/fake-openai-server.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

/** The sandbox mode of these workers (the netns proxy network where the kernel gives one). */
const MODE = 'enforce';
const SECRET = 'network-secret-of-at-least-32-bytes-0123';

let server: Server;
let port: number;
let repository: string;

/** A bare repository with one commit, ready to be cloned over dumb HTTP. */
function servedRepository(): string {
  // Not a tempDir(): those go after each test, and the repository serves every test.
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-repo-')));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: dir } });
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'README'), 'cloned through the proxy\n');
  git('-C', 'src', 'init', '-q');
  git('-C', 'src', 'add', 'README');
  git('-C', 'src', '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'one');
  git('clone', '-q', '--bare', 'src', 'repo.git');
  git('-C', 'repo.git', 'update-server-info');
  return join(dir, 'repo.git');
}
/** Every request path the local server was sent, in order. */
const served: string[] = [];
beforeAll(async () => {
  repository = servedRepository();
  server = createServer((request, response) => {
    served.push(request.url ?? '');
    const url = request.url ?? '';
    if (url.startsWith('/repo.git/')) {
      // A git repository over "dumb" HTTP: its files as they are.
      const file = join(repository, url.slice('/repo.git/'.length).split('?')[0]!);
      if (!file.startsWith(repository) || !existsSync(file) || !statSync(file).isFile()) {
        response.statusCode = 404;
        return response.end();
      }
      return response.end(readFileSync(file));
    }
    response.end(`hello from ${request.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dirname(repository), { recursive: true, force: true });
});

/** A worker file with a shell toolset that runs anything without asking, under `network`. */
function workerFile(network: string, extra: string[] = []): string {
  const dir = tempDir();
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    ['name: fetcher', 'instructions: test', `sandbox: { mode: ${MODE}, network: ${network} }`, ...extra, 'toolsets:', '  shell: { default: preApproved }', ''].join('\n'),
  );
  return file;
}

interface ShellOutput {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  refusedConnections?: { host: string; port: number; reason: string }[];
}

/** Runs `commands` as one model step each through the worker; the outputs, the asks and the connection records. */
async function run(file: string, commands: string[], onApproval?: (request: ApprovalRequest) => ApprovalAnswer) {
  const worker = await loadWorker(file);
  const model = scriptedModel([...commands.map((command) => ({ toolCalls: [{ toolName: 'shell', input: { command } }] })), { text: 'done' }]);
  const asked: ApprovalRequest[] = [];
  const events: RunEvent[] = [];
  const result = await runWorker(worker, 'fetch', {
    model,
    ...(onApproval
      ? {
          onApproval: (request: ApprovalRequest) => {
            asked.push(request);
            return onApproval(request);
          },
        }
      : {}),
    onEvent: (event: RunEvent) => events.push(event),
  });
  const outputs = result.toolCalls.map((call) => call.output as ShellOutput);
  const connections = events.flatMap((event) => (event.type === 'network-connection' ? [event.record] : []));
  return { result, outputs, asked, connections, events };
}

/** `toolgate <args>` in `cwd`, without blocking this process (its servers answer the child meanwhile). */
function toolgate(cwd: string, args: string[]): Promise<CliRun> {
  return runToolgateAsync(args, { cwd, env: { ...process.env, TOOLGATE_STATE_SECRET: SECRET, XDG_CACHE_HOME: join(cwd, '.cache') } });
}

const curl = (url: string) => `curl -sS --max-time 10 ${url}`;

describe('network by host in a worker run', () => {
  it('reaches an allowed address with curl, python and git, and records the connections', async () => {
    const file = workerFile(`{ allow: ["127.0.0.1:${port}"] }`);
    const python = `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}/py').read().decode())"`;
    const clone = `git clone -q http://127.0.0.1:${port}/repo.git cloned`;
    const { outputs, connections } = await run(file, [curl(`http://127.0.0.1:${port}/curl`), python, clone, 'cat cloned/README']);
    expect(outputs[0]!.stdout).toBe('hello from /curl');
    expect(outputs[1]!.stdout.trim()).toBe('hello from /py');
    expect(outputs[2]!.exitCode, outputs[2]!.stderr).toBe(0);
    expect(outputs[3]!.stdout).toBe('cloned through the proxy\n');
    expect(outputs[0]!.refusedConnections).toBeUndefined();
    expect(connections.length).toBeGreaterThanOrEqual(3);
    expect(connections.every((record) => record.decision === 'allowed')).toBe(true);
    expect(connections[0]).toMatchObject({ host: '127.0.0.1', port, tool: 'shell', decision: 'allowed', decidedBy: 'rule', rule: `127.0.0.1:${port}` });
    expect(connections[0]!.bytesDown).toBeGreaterThan(0);
    expect(connections[0]!.bytesUp).toBeGreaterThan(0);
  });

  it('the proxy is the only way out: direct connections, UDP, name resolution and an ignored proxy all fail', async () => {
    const file = workerFile(`{ allow: ["127.0.0.1"] }`);
    const python = (code: string) => `python3 -c "${code}"`;
    const probes = [
      // A direct TCP connection to the allowed address itself.
      python(`import socket; s = socket.create_connection(('127.0.0.1', ${port}), timeout=5); print('connected')`),
      // curl told to ignore the proxy variables.
      `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${port}/direct`,
      // UDP, to a resolver and to the local server's port.
      python(`import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.53', 53)); print('sent')`),
      // Name resolution inside (no DNS exfiltration): a name not in /etc/hosts.
      python(`import socket; print(socket.getaddrinfo('exfiltrate.example.com', 80))`),
      // A raw socket, and binding a port to listen on.
      python(`import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print('raw')`),
      python(`import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); print('listening', s.getsockname())`),
    ];
    const { outputs, connections } = await run(file, probes);
    for (const [index, output] of outputs.entries()) {
      expect(output.exitCode, `${probes[index]}: ${output.stdout}${output.stderr}`).not.toBe(0);
      expect(output.stdout, probes[index]).not.toMatch(/connected|hello|sent|raw|listening|\(\d/);
    }
    // Nothing reached the proxy either: these never asked it.
    expect(connections).toEqual([]);
    // And through the proxy the same address is reached in the same sandbox.
    const through = await run(file, [curl(`http://127.0.0.1:${port}/proxied`)]);
    expect(through.outputs[0]!.stdout).toBe('hello from /proxied');
  });

  it('tunnels HTTPS (CONNECT, no interception) to an allowed address with a self-signed certificate', async () => {
    const certificates = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-tls-')));
    try {
      const [cert, key] = [join(certificates, 'cert.pem'), join(certificates, 'key.pem')];
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
      const tls = createHttpsServer({ cert: readFileSync(cert), key: readFileSync(key) }, (request, response) => response.end(`secure ${request.url}`));
      await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
      const tlsPort = (tls.address() as AddressInfo).port;
      try {
        const file = workerFile(`{ allow: ["127.0.0.1:${tlsPort}"] }`);
        // The client checks the server's own certificate: the proxy only relays the bytes.
        writeFileSync(join(file, '..', 'server.pem'), readFileSync(cert));
        const python = `python3 -c "import ssl, urllib.request; print(urllib.request.urlopen('https://127.0.0.1:${tlsPort}/py', context=ssl.create_default_context(cafile='server.pem')).read().decode())"`;
        const { outputs, connections } = await run(file, [`curl -sS --max-time 10 --cacert server.pem https://127.0.0.1:${tlsPort}/curl`, python]);
        expect(outputs[0]!.stdout, outputs[0]!.stderr).toBe('secure /curl');
        expect(outputs[1]!.stdout.trim(), outputs[1]!.stderr).toBe('secure /py');
        expect(connections.map((record) => [record.protocol, record.decision])).toEqual([
          ['connect', 'allowed'],
          ['connect', 'allowed'],
        ]);
      } finally {
        tls.close();
      }
    } finally {
      rmSync(certificates, { recursive: true, force: true });
    }
  });

  it('reaches a raw TCP service through SOCKS5 (ALL_PROXY); a name is judged as a name', async () => {
    const raw = createNetServer((socket) => socket.once('data', (data) => socket.end(`raw: ${data.toString()}`)));
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const rawPort = (raw.address() as AddressInfo).port;
    try {
      const file = workerFile(`{ allow: ["127.0.0.1:${rawPort}"] }`);
      // A SOCKS5 client by hand: ALL_PROXY is socks5h://host:port.
      const client = String.raw`
import os, socket, sys
host, port = os.environ['ALL_PROXY'].split('//', 1)[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(bytes([5, 1, 0]))
assert s.recv(2) == bytes([5, 0])
name = sys.argv[1].encode()
s.sendall(bytes([5, 1, 0, 3, len(name)]) + name + int(sys.argv[2]).to_bytes(2, 'big'))
reply = s.recv(10)
if reply[1] != 0:
    print('refused %d' % reply[1])
    sys.exit(1)
s.sendall(b'ping')
print(s.recv(100).decode())
`;
      writeFileSync(join(file, '..', 'socks.py'), client);
      const { outputs, connections } = await run(file, [`python3 socks.py 127.0.0.1 ${rawPort}`, `python3 socks.py localhost ${rawPort}`]);
      expect(outputs[0]!.stdout.trim(), outputs[0]!.stderr).toBe('raw: ping');
      // A name is judged as a name: localhost is not in allow, so it is refused (SOCKS5 reply 2).
      expect(outputs[1]!.stdout.trim()).toBe('refused 2');
      expect(connections.map((record) => [record.protocol, record.host, record.decision])).toEqual([
        ['socks5', '127.0.0.1', 'allowed'],
        ['socks5', 'localhost', 'denied'],
      ]);
    } finally {
      raw.close();
    }
  });

  it('refuses a port not allowed, naming the host, the port and the fix in the result', async () => {
    const file = workerFile(`{ allow: ["127.0.0.1:${port === 1 ? 2 : 1}"] }`);
    const { outputs, connections } = await run(file, [curl(`http://127.0.0.1:${port}/`)]);
    expect(outputs[0]!.stdout).not.toContain('hello');
    expect(outputs[0]!.refusedConnections).toEqual([{ host: '127.0.0.1', port, reason: expect.stringContaining(`connection to 127.0.0.1:${port} refused`) }]);
    expect(outputs[0]!.refusedConnections![0]!.reason).toContain('network.allow');
    expect(connections[0]).toMatchObject({ decision: 'denied', decidedBy: 'address' });
  });

  it('deny wins over allow, in every spelling of the address', async () => {
    const file = workerFile(`{ allow: ["127.0.0.0/8", localhost], deny: ["127.0.0.1:${port}"] }`);
    const spellings = ['127.0.0.1', '2130706433', '0x7f000001', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]'];
    const { outputs, connections } = await run(
      file,
      spellings.map((host) => curl(`http://${host}:${port}/`)),
    );
    for (const [index, output] of outputs.entries()) {
      expect(output.stdout, spellings[index]).not.toContain('hello');
      expect(output.refusedConnections?.[0]?.reason, spellings[index]).toMatch(/refused/);
    }
    expect(connections.every((record) => record.decision === 'denied')).toBe(true);
  });

  it('a name resolving to loopback is refused unless the address itself is allowed', async () => {
    const byName = await run(workerFile('{ allow: [localhost, LOCALHOST., "*.localhost"] }'), [curl(`http://localhost:${port}/`), curl(`http://LocalHost.:${port}/`)]);
    for (const output of byName.outputs) {
      expect(output.stdout).not.toContain('hello');
      expect(output.refusedConnections?.[0]?.reason).toContain('allowing the name is not enough');
    }
    const withAddress = await run(workerFile('{ allow: [localhost, "127.0.0.1"] }'), [curl(`http://localhost:${port}/named`)]);
    expect(withAddress.outputs[0]!.stdout).toBe('hello from /named');
  });

  it('refuses credentials in the URL and internal addresses behind an allowed name', async () => {
    const file = workerFile('{ allow: ["127.0.0.1:1"], ask: true }');
    // A request with user info, the cloud metadata address and the unspecified address: none
    // is asked about (an answer never opens an internal address), all are refused.
    const commands = [
      `curl -sS --max-time 10 -x "$http_proxy" http://user:secret@169.254.169.254/latest/meta-data/`,
      curl('http://169.254.169.254/latest/meta-data/'),
      curl(`http://0.0.0.0:${port}/`),
      curl(`http://[::1]:${port}/`),
    ];
    const { outputs, asked } = await run(file, commands, () => 'approve');
    expect(asked).toEqual([]);
    for (const output of outputs) expect(output.stdout).not.toContain('hello');
    expect(outputs[1]!.refusedConnections?.[0]?.reason).toContain('169.254.169.254');
  });
});

/**
 * A program inside the sandbox speaking to the proxy itself ($http_proxy), trying to get past
 * it: each line of the script's output is `name => first line of the answer`.
 */
const PROXY_TRICKS = String.raw`
import os, socket, sys
host, port = os.environ['http_proxy'].rsplit('/', 1)[-1].rsplit(':', 1)
target = int(sys.argv[1])
CRLF = '\r\n'

def ask(name, text, read_all=False):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(text.encode('latin-1'))
    answer = b''
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
            if not read_all and CRLF.encode() in answer:
                break
    except socket.timeout:
        pass
    s.close()
    print(name + ' => ' + answer.split(CRLF.encode())[0].decode('latin-1'), flush=True)
    return answer

def request(line, *headers):
    return CRLF.join([line, *headers, '', ''])

# CONNECT to a port the policy does not allow (the allowed one is 'target').
ask('connect-denied-port', request('CONNECT 127.0.0.1:1 HTTP/1.1', 'Host: 127.0.0.1:1'))
# The allowed address in other spellings, on a port not allowed: judged as 127.0.0.1:1.
for spelling in ['127.0.0.1.', '0x7f.1', '2130706433', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '0177.0.0.01', 'LOCALHOST']:
    ask('connect-' + spelling, request('CONNECT %s:1 HTTP/1.1' % spelling, 'Host: %s:1' % spelling))
# A second request hidden behind an allowed one, on the same connection.
first = request('GET http://127.0.0.1:%d/allowed HTTP/1.1' % target, 'Host: 127.0.0.1:%d' % target, 'Content-Length: 0')
second = request('GET http://127.0.0.1:1/smuggled HTTP/1.1', 'Host: 127.0.0.1:1')
print('pipelined-answers => %d' % ask('pipelined', first + second, read_all=True).count(b'HTTP/1.1 '), flush=True)
# A Host header that disagrees with the target, credentials in the URL, a NUL in the host.
ask('host-mismatch', request('GET http://127.0.0.1:%d/x HTTP/1.1' % target, 'Host: 10.0.0.1:%d' % target))
ask('userinfo', request('GET http://user:pw@127.0.0.1:%d/x HTTP/1.1' % target, 'Host: 127.0.0.1:%d' % target))
ask('nul-host', request('CONNECT 127.0.0.1' + chr(0) + '.evil:%d HTTP/1.1' % target))
# Content-Length with Transfer-Encoding (request smuggling).
ask('cl-te', request('POST http://127.0.0.1:%d/x HTTP/1.1' % target, 'Host: 127.0.0.1:%d' % target, 'Content-Length: 4', 'Transfer-Encoding: chunked') + '0' + CRLF + CRLF)
# SOCKS5: the allowed address on a denied port, and a name for it (a name is not the address).
for name, address, to in [('socks-ip', bytes([1, 127, 0, 0, 1]), 1), ('socks-name', bytes([3, 9]) + b'localhost', target)]:
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(bytes([5, 1, 0]))
    s.recv(2)
    s.sendall(bytes([5, 1, 0]) + address + to.to_bytes(2, 'big'))
    reply = s.recv(10)
    print(name + ' => reply %d' % reply[1], flush=True)
    s.close()
`;

describe('a program speaking to the proxy itself', () => {
  it('cannot get past the policy with denied ports, address spellings, smuggling, userinfo, NUL bytes or SOCKS5', async () => {
    // Only the address 127.0.0.1 on the server's port.
    const file = workerFile(`{ allow: ["127.0.0.1:${port}"] }`);
    writeFileSync(join(file, '..', 'tricks.py'), PROXY_TRICKS);
    served.length = 0;
    const { outputs } = await run(file, [`python3 tricks.py ${port}`]);
    const lines = Object.fromEntries(
      outputs[0]!.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' => ')),
    );
    expect(outputs[0]!.exitCode, outputs[0]!.stderr).toBe(0);
    expect(lines['connect-denied-port']).toMatch(/^HTTP\/1.1 403/);
    for (const spelling of ['127.0.0.1.', '0x7f.1', '2130706433', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '0177.0.0.01', 'LOCALHOST']) {
      expect(lines[`connect-${spelling}`], spelling).toMatch(/^HTTP\/1.1 403/);
    }
    expect(lines.pipelined).toMatch(/^HTTP\/1.1 200/);
    expect(lines['pipelined-answers']).toBe('1');
    for (const name of ['host-mismatch', 'userinfo', 'nul-host', 'cl-te']) expect(lines[name], name).toMatch(/^HTTP\/1.1 400/);
    expect(lines['socks-ip']).toBe('reply 2');
    expect(lines['socks-name']).toBe('reply 2');
    // Only the one allowed request reached the server.
    expect(served).toEqual(['/allowed']);
  });
});

describe('asking about a host', () => {
  const asking = () => workerFile('{ allow: ["127.0.0.1"], ask: true }');
  /** Two calls to `localhost` (read once the server listens). */
  const twice = () => [curl(`http://localhost:${port}/one`), curl(`http://localhost:${port}/two`)];

  it('approve opens one connection, and the request names the host, the port and the tool', async () => {
    const { outputs, asked, connections } = await run(asking(), twice(), () => 'approve');
    expect(outputs.map((output) => output.stdout)).toEqual(['hello from /one', 'hello from /two']);
    expect(asked).toHaveLength(2);
    expect(asked[0]).toMatchObject({ toolName: 'network', input: { host: 'localhost', port, tool: 'shell' } });
    expect(connections.map((record) => [record.decision, record.decidedBy])).toEqual([
      ['asked-approved', 'user'],
      ['asked-approved', 'user'],
    ]);
  });

  it('always covers the host and port for the rest of the run', async () => {
    const { outputs, asked, connections } = await run(asking(), twice(), () => 'always');
    expect(outputs.map((output) => output.stdout)).toEqual(['hello from /one', 'hello from /two']);
    expect(asked).toHaveLength(1);
    expect(connections.map((record) => record.decidedBy)).toEqual(['user', 'run-allowance']);
  });

  it('save writes the host as a rule of the permissions file; the next run reaches it unasked, a denied host stays denied', async () => {
    const file = asking();
    const first = await run(file, [twice()[0]!], () => 'save');
    expect(first.outputs[0]!.stdout).toBe('hello from /one');
    expect(first.asked).toHaveLength(1);
    expect(first.asked[0]!.save).toBeDefined();
    const written = readFileSync(join(dirname(file), 'toolgate.permissions.yaml'), 'utf8');
    expect(written).toContain(`host: localhost:${port}`);
    expect(written).toContain('tool: network');
    const second = await run(file, [twice()[1]!], () => 'deny');
    expect(second.asked).toEqual([]);
    expect(second.outputs[0]!.stdout).toBe('hello from /two');
    expect(second.connections[0]).toMatchObject({ decision: 'asked-approved', decidedBy: 'saved', savedIn: expect.stringContaining('toolgate.permissions.yaml:') });
    // Another port of the same host is not covered: it is asked about.
    const other = await run(file, [curl(`http://localhost:1/`)], () => 'deny');
    expect(other.asked).toHaveLength(1);
    // A saved rule answers questions only: a host the worker denies is refused unasked.
    writeFileSync(file, readFileSync(file, 'utf8').replace('ask: true', 'deny: [localhost], ask: true'));
    const denied = await run(file, [twice()[0]!], () => 'approve');
    expect(denied.asked).toEqual([]);
    expect(denied.outputs[0]!.stdout).not.toContain('hello');
    expect(denied.connections[0]).toMatchObject({ decision: 'denied', decidedBy: 'rule' });
  });

  it('deny refuses with the reason the model reads in the result', async () => {
    const { outputs } = await run(asking(), [twice()[0]!], () => ({ decision: 'deny', reason: 'not during this task' }));
    expect(outputs[0]!.stdout).not.toContain('hello');
    expect(outputs[0]!.refusedConnections?.[0]).toMatchObject({ host: 'localhost', port, reason: expect.stringContaining('not during this task') });
  });

  it('with nobody to ask, it is refused (fail closed)', async () => {
    const { outputs, connections } = await run(asking(), [twice()[0]!]);
    expect(outputs[0]!.stdout).not.toContain('hello');
    expect(connections[0]).toMatchObject({ decision: 'denied', decidedBy: 'no-handler' });
  });

  it('is never asked about a denied host, or without ask: true', async () => {
    const denied = await run(workerFile('{ allow: ["127.0.0.1"], deny: [localhost], ask: true }'), [twice()[0]!], () => 'approve');
    const quiet = await run(workerFile('{ allow: ["127.0.0.1"] }'), [twice()[0]!], () => 'approve');
    expect(denied.asked).toEqual([]);
    expect(quiet.asked).toEqual([]);
    expect(denied.connections[0]).toMatchObject({ decidedBy: 'rule', rule: 'localhost' });
    expect(quiet.connections[0]).toMatchObject({ decidedBy: 'policy' });
  });

  it('a deferred run stops for the host and its resumed run reaches it once approved', async () => {
    const worker = await loadWorker(asking());
    const first = await runWorker(worker, 'fetch', {
      model: scriptedModel([{ toolCalls: [{ toolName: 'shell', input: { command: twice()[0]! } }] }]),
      onApproval: 'defer',
      stateSecret: SECRET,
    });
    expect(first.status).toBe('approval-required');
    const pending = first.pending!.find((request) => request.toolName === 'network')!;
    expect(pending.input).toEqual({ host: 'localhost', port, tool: 'shell' });
    const resumed = await resumeWorker(worker, first.state!, { [pending.id]: 'approve' }, {
      model: scriptedModel([{ toolCalls: [{ toolName: 'shell', input: { command: twice()[0]! } }] }, { text: 'done' }]),
      stateSecret: SECRET,
    });
    expect(resumed.status).toBe('completed');
    expect((resumed.toolCalls.at(-1)!.output as ShellOutput).stdout).toBe('hello from /one');
  });
});

describe('levels and records', () => {
  it("a toolset's network widens its worker's inside one file; the worker's other toolsets keep theirs", async () => {
    const dir = tempDir();
    const file = join(dir, 'worker.yaml');
    writeFileSync(
      file,
      [
        'name: levels',
        'instructions: test',
        `sandbox: { mode: ${MODE}, network: false }`,
        'toolsets:',
        `  shell: { default: preApproved, sandbox: { network: { allow: ["127.0.0.1:${port}"] } } }`,
        '  cli_execute: { allowed_binaries: [curl] }',
        '',
      ].join('\n'),
    );
    const worker = await loadWorker(file);
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'shell', input: { command: curl(`http://127.0.0.1:${port}/shell`) } }] },
      { toolCalls: [{ toolName: 'cli_execute', input: { binary: 'curl', args: ['-sS', '--max-time', '5', `http://127.0.0.1:${port}/cli`] } }] },
      { text: 'done' },
    ]);
    const result = await runWorker(worker, 'fetch', { model, onApproval: () => 'approve' });
    expect((result.toolCalls[0]!.output as ShellOutput).stdout).toBe('hello from /shell');
    expect((result.toolCalls[1]!.output as ShellOutput).stdout).not.toContain('hello');
  });

  it('writes a network line per decision to the audit log, and toolgate audit summarises them', async () => {
    const file = workerFile('{ allow: ["127.0.0.1"], ask: true }', ['audit: { file: ./audit.jsonl }']);
    await run(file, [curl(`http://127.0.0.1:${port}/a`), curl(`http://localhost:${port}/b`)], () => ({ decision: 'deny', reason: 'no' }));
    const lines = readFileSync(join(file, '..', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const network = lines.filter((line) => line.event === 'network');
    expect(network).toHaveLength(2);
    expect(network[0]).toMatchObject({ host: '127.0.0.1', port, decision: 'allowed', decidedBy: 'rule', tool: 'shell' });
    expect(network[0]!.bytesDown).toBeGreaterThan(0);
    expect(network[1]).toMatchObject({ host: 'localhost', port, decision: 'denied', decidedBy: 'user' });
    // `toolgate audit` summarises them per host, with the refused ones.
    const summary = await toolgate(dirname(file), ['audit', 'audit.jsonl', '--json']);
    expect(summary.status, summary.stderr).toBe(0);
    const { network: connections } = JSON.parse(summary.stdout) as { network: { connections: number; hosts: { host: string; decisions: Record<string, number> }[]; refused: { host: string }[] } };
    expect(connections.connections).toBe(2);
    expect(connections.hosts.map((host) => [host.host, host.decisions])).toEqual([
      ['127.0.0.1', { allowed: 1 }],
      ['localhost', { denied: 1 }],
    ]);
    expect(connections.refused.map((refused) => refused.host)).toEqual(['localhost']);
    const text = await toolgate(dirname(file), ['audit', 'audit.jsonl']);
    expect(text.stdout).toContain('network: 2 connection(s) through the egress proxy');
    expect(text.stdout).toContain(`localhost:${port} from shell by user — toolgate: connection to localhost:${port} refused: denied when asked: no`);
  });
});

describe('toolgate sandbox --allow-host / --deny-host', () => {
  it('reaches an allowed host and names a refused one on stderr', async () => {
    const dir = tempDir();
    // Under the default enforce (tests/sandbox-cli-network.test.ts has the rest).
    const allowed = await toolgate(dir, ['sandbox', '--allow-host', `127.0.0.1:${port}`, '--', 'curl', '-sS', '--max-time', '10', `http://127.0.0.1:${port}/cli`]);
    expect(allowed.stdout).toBe('hello from /cli');
    const denied = await toolgate(dir, ['sandbox', '--allow-host', '127.0.0.1', '--deny-host', `127.0.0.1:${port}`, '--', 'curl', '-sS', '--max-time', '10', `http://127.0.0.1:${port}/`]);
    expect(denied.stdout).not.toContain('hello');
    expect(denied.stderr).toContain(`127.0.0.1:${port}`);
    expect(denied.stderr).toContain('network.deny');
    const malformed = await toolgate(dir, ['sandbox', '--allow-host', 'https://example.com', '--', 'true']);
    expect(malformed.status).not.toBe(0);
    expect(malformed.stderr).toContain('example.com');
  });

  it('toolgate check --sandbox prints each toolset network policy', () => {
    const file = workerFile('{ allow: [registry.npmjs.org, "127.0.0.1:8080"], deny: [gist.github.com], ask: true }');
    const check = runToolgate(['check', '--sandbox', file]);
    expect(check.stdout).toContain('registry.npmjs.org');
    expect(check.stdout).toContain('gist.github.com');
    expect(check.stdout).toMatch(/ask/);
  });
});

describe('toolgate run --yes / --deny answer network questions like any other', () => {
  it('--yes reaches the host it was asked about, --deny refuses it; the records name the flag', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'worker.yaml'),
      ['name: ci', 'instructions: test', `sandbox: { mode: ${MODE}, network: { allow: ["127.0.0.1"], ask: true } }`, 'toolsets:', '  shell: { default: preApproved }', 'audit: { file: ./audit.jsonl }', ''].join('\n'),
    );
    const turn: FakeTurn = { toolCalls: [{ name: 'shell', arguments: { command: curl(`http://localhost:${port}/flag`) } }] };
    for (const flag of ['--yes', '--deny'] as const) {
      const model = await startFakeOpenAiServer([turn, { text: 'finished' }]);
      try {
        const ran = await toolgate(dir, ['run', 'worker.yaml', 'fetch', '--model', 'openai-compatible:fake', '--base-url', model.baseUrl, flag]);
        expect(ran.status, ran.stderr).toBe(0);
        const result = Object.values(toolResultsIn(model.requests[1]!)).join('\n');
        if (flag === '--yes') expect(result).toContain('hello from /flag');
        else expect(result).toContain(`connection to localhost:${port} refused`);
      } finally {
        await model.close();
      }
    }
    const network = readFileSync(join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.event === 'network');
    expect(network.map((line) => [line.decision, line.decidedBy, line.flag])).toEqual([
      ['asked-approved', 'flag', '--yes'],
      ['denied', 'flag', '--deny'],
    ]);
  });
});

describe('toolgate mcp serve asks about hosts through MCP elicitation', () => {
  it('approve reaches the host, deny refuses it with the reason, and the question names the host', async () => {
    const file = workerFile('{ allow: ["127.0.0.1"], ask: true }');
    const asked: string[] = [];
    let answer: ElicitResult = { action: 'accept', content: { decision: 'approve' } };
    const client = new Client({ name: 'toolgate-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return answer;
    });
    await client.connect(new StdioClientTransport({ command: 'setsid', args: [process.execPath, CLI, 'mcp', 'serve', file], cwd: dirname(file), stderr: 'pipe' }));
    try {
      const call = async () => {
        const result = (await client.callTool({ name: 'shell', arguments: { command: curl(`http://localhost:${port}/served`) } })) as CallToolResult;
        return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
      };
      expect(await call()).toContain('hello from /served');
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('network');
      expect(asked[0]).toContain('localhost');
      expect(asked[0]).toContain(String(port));
      answer = { action: 'accept', content: { decision: 'deny', reason: 'not from this server' } };
      const refused = await call();
      expect(refused).not.toContain('hello');
      expect(refused).toContain('not from this server');
    } finally {
      await client.close();
    }
  });
});

describe('a deferred CLI run asking for a host, resumed in another process', () => {
  it('stops with the network request pending and reaches the host after the answer', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'worker.yaml'),
      ['name: ci', 'instructions: test', `sandbox: { mode: ${MODE}, network: { allow: ["127.0.0.1"], ask: true } }`, 'toolsets:', '  shell: { default: preApproved }', ''].join('\n'),
    );
    const command = curl(`http://localhost:${port}/resumed`);
    const turn: FakeTurn = { toolCalls: [{ name: 'shell', arguments: { command } }] };
    const model = await startFakeOpenAiServer([turn, turn, { text: 'finished' }]);
    try {
      const started = await toolgate(dir, ['run', 'worker.yaml', 'fetch', '--model', 'openai-compatible:fake', '--base-url', model.baseUrl, '--defer-approvals', '--state-file', 'run.json']);
      expect(started.status, started.stderr).toBe(4);
      const pending = (JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { pending: { id: string; toolName: string; input: unknown }[] }).pending;
      expect(pending).toEqual([expect.objectContaining({ toolName: 'network', input: { host: 'localhost', port, tool: 'shell' } })]);
      const resumed = await toolgate(dir, ['resume', 'run.json', '--answers', `${pending[0]!.id}=approve`, '--state-ledger', join(dir, 'ledger')]);
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(Object.values(toolResultsIn(model.requests[2]!)).join('\n')).toContain('hello from /resumed');
    } finally {
      await model.close();
    }
  });
});
