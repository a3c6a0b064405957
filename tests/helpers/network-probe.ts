/**
 * What a sandboxed program with the network by host tries, to get past the egress proxy: one
 * probe shared by the `toolgate sandbox` CLI test and the npx MCP server test. It is the source
 * of an async function `(modules, port) => string[]` (`modules`: Node's `net`, `dgram`, `dns`
 * and `fs`; `port`: a host service on 127.0.0.1 that is allowed through the proxy), which runs
 * inside the sandbox and returns one `name=outcome` line per attempt.
 */
import { expect } from 'vitest';

export const NETWORK_PROBE = `async ({ net, dgram, dns, fs }, port) => {
  const lines = [];
  const line = (name, outcome) => lines.push(name + '=' + outcome);
  const tcp = (name, options) => new Promise((done) => {
    const socket = net.connect(options);
    socket.setTimeout(3000, () => { socket.destroy(); line(name, 'timeout'); done(); });
    socket.on('connect', () => { socket.destroy(); line(name, 'connected'); done(); });
    socket.on('error', (error) => { line(name, 'refused:' + error.code); done(); });
  });
  // Directly to the allowed service's address, and to an address outside.
  await tcp('direct-allowed', { host: '127.0.0.1', port });
  await tcp('direct-outside', { host: '10.0.0.1', port: 80 });
  await new Promise((done) => {
    let said = false;
    const say = (outcome) => { if (!said) { said = true; line('udp', outcome); done(); } };
    try {
      const socket = dgram.createSocket('udp4');
      socket.on('error', (error) => say('refused:' + error.code));
      socket.send('x', 53, '127.0.0.1', (error) => { say(error ? 'refused:' + error.code : 'sent'); try { socket.close(); } catch {} });
    } catch (error) { say('refused:' + error.code); }
  });
  await new Promise((done) => dns.resolve4('example.com', (error) => { line('dns', error ? 'refused' : 'resolved'); done(); }));
  await new Promise((done) => dns.lookup('registry.npmjs.org', (error) => { line('lookup', error ? 'refused' : 'resolved'); done(); }));
  await new Promise((done) => {
    const listener = net.createServer();
    listener.on('error', (error) => { line('listen', 'refused:' + error.code); done(); });
    listener.listen(0, '127.0.0.1', () => { line('listen', 'listening'); listener.close(); done(); });
  });
  // The handoff socket: not among the descriptors beyond stdio, and no unix address in reach
  // (named or abstract, as /proc/net/unix lists them) answers.
  const sockets = fs.readdirSync('/proc/self/fd').filter((fd) => Number(fd) > 2).filter((fd) => {
    try { return fs.readlinkSync('/proc/self/fd/' + fd).startsWith('socket:'); } catch { return false; }
  });
  line('socket-fds', sockets.length);
  const unix = fs.readFileSync('/proc/net/unix', 'utf8').split('\\n').slice(1).map((row) => row.trim().split(/\\s+/)[7]).filter(Boolean);
  let reached = 0;
  for (const path of unix) {
    await new Promise((done) => {
      const socket = net.connect(path.startsWith('@') ? '\\0' + path.slice(1) : path);
      socket.on('connect', () => { reached += 1; socket.destroy(); done(); });
      socket.on('error', () => done());
    });
  }
  line('unix-reached', reached);
  return lines;
}`;

/** A `node -e` program running the probe against `port` and printing its lines. */
export function probeProgram(port: number): string {
  return `(${NETWORK_PROBE})({ net: require('node:net'), dgram: require('node:dgram'), dns: require('node:dns'), fs: require('node:fs') }, ${port}).then((lines) => console.log(lines.join('\\n')))`;
}

/** Asserts the probe's lines say that every way out failed. */
export function expectNoWayOut(output: string, context = ''): void {
  const lines = Object.fromEntries(
    output
      .trim()
      .split('\n')
      .map((row) => row.split('=') as [string, string]),
  );
  expect(lines['direct-allowed'], `${output}\n${context}`).toMatch(/^refused:/);
  expect(lines['direct-outside']).toMatch(/^refused:/);
  expect(lines.udp).toMatch(/^refused:/);
  expect(lines.dns).toBe('refused');
  expect(lines.lookup).toBe('refused');
  expect(lines.listen).toMatch(/^refused:/);
  expect(lines['socket-fds']).toBe('0');
  expect(lines['unix-reached']).toBe('0');
}
