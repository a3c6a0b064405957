/**
 * The egress proxy's cost, in one run (crates/toolgate-core/examples/network_bench.rs): an HTTP
 * server on 127.0.0.1 reached directly (the baseline: what `network: true` gives) and through
 * the proxy. A 100 MB download (absolute-form request as with `http_proxy`, and a CONNECT tunnel
 * as with `https_proxy`; by a Rust client, and by curl where it is installed): rounds interleave
 * the contenders, each keeps its best round. Then small requests, each on a new connection,
 * direct and proxied alternating call by call: the median of each.
 *
 * Then the same through the sandbox, end to end: sandboxed calls started through `exec`
 * (`/bin/true`) with `network: false` against an `allow` list (a network namespace of the
 * call's own and its proxy listener), and curl in a sandboxed call downloading 100 MB and making
 * 200 small requests with `network: true` (direct) against an `allow` list (through the proxy);
 * and the same curl commands under Anthropic's sandbox-runtime (`srt`) where it runs here.
 *
 * Targets (issue 24): proxied throughput at least 90 % of direct; at most 1 ms added per new
 * connection; a sandboxed call's start-up with an `allow` list at most 1.2x one with
 * `network: false`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exec, type ExecOptions } from '../../ts/src/index.js';
import { packageDir } from '../helpers/checkout.js';
import { printComparison, printLine, timeMs } from './lib/report.js';

const MEGABYTES = 100;
const REQUESTS = 1000;
const ROUNDS = 10;

const checkout = fileURLToPath(new URL('../..', import.meta.url));

interface PartyCpu {
  server: number;
  proxy: number;
  client: number;
}

interface Figures {
  download: {
    directMBps: number;
    forwardMBps: number;
    tunnelMBps: number;
    curlDirectMBps: number | null;
    curlProxiedMBps: number | null;
    /** CPU per download (ms, averaged over the rounds) of each party. */
    cpuMs: Record<'direct' | 'forward' | 'tunnel', PartyCpu>;
  };
  newConnection: { directMs: number; proxiedMs: number; directMeanMs: number; proxiedMeanMs: number };
}

function percent(part: number, whole: number): string {
  return `${((part / whole) * 100).toFixed(1)} %`;
}

export async function benchNetwork(): Promise<void> {
  execFileSync('cargo', ['build', '--quiet', '--release', '-p', 'toolgate-core', '--example', 'network_bench'], {
    cwd: checkout,
    stdio: 'inherit',
  });
  const binary = fileURLToPath(new URL('../../target/release/examples/network_bench', import.meta.url));
  const figures = JSON.parse(
    execFileSync(binary, [String(MEGABYTES), String(REQUESTS), String(ROUNDS)], { encoding: 'utf8' }),
  ) as Figures;
  const { download, newConnection } = figures;
  const msPer = (mbps: number): number => (MEGABYTES / mbps) * 1000;
  printComparison(
    `${MEGABYTES} MB download from 127.0.0.1, Rust client (best of ${ROUNDS})`,
    [
      { name: 'direct (network: true)', value: msPer(download.directMBps), unit: 'ms' },
      { name: 'proxy, absolute-form (http_proxy)', value: msPer(download.forwardMBps), unit: 'ms' },
      { name: 'proxy, CONNECT tunnel', value: msPer(download.tunnelMBps), unit: 'ms' },
    ],
    'direct (network: true)',
  );
  printLine(
    `  throughput: direct ${download.directMBps.toFixed(0)} MB/s, proxied ${download.forwardMBps.toFixed(0)} MB/s (${percent(download.forwardMBps, download.directMBps)}), tunnelled ${download.tunnelMBps.toFixed(0)} MB/s (${percent(download.tunnelMBps, download.directMBps)}); target >= 90 %`,
  );
  // Where the time goes: each party's CPU per download (the scheduler's own accounting; a
  // busy machine's waiting is not in it). A proxied download adds a third busy party: with
  // `cores` cores it cannot take less than the sum over the cores, however well it is relayed.
  const cores = availableParallelism();
  const sum = (cpu: PartyCpu) => cpu.server + cpu.proxy + cpu.client;
  const parties = (cpu: PartyCpu) => `server ${cpu.server.toFixed(1)} + proxy ${cpu.proxy.toFixed(1)} + client ${cpu.client.toFixed(1)} = ${sum(cpu).toFixed(1)} ms`;
  const { cpuMs } = download;
  printLine(`  CPU per ${MEGABYTES} MB: direct ${parties(cpuMs.direct)}`);
  printLine(`                 absolute-form ${parties(cpuMs.forward)}`);
  printLine(`                 tunnel ${parties(cpuMs.tunnel)}`);
  const directMs = msPer(download.directMBps);
  const floorMs = Math.max(sum(cpuMs.tunnel) / cores, cpuMs.tunnel.server, cpuMs.tunnel.proxy, cpuMs.tunnel.client);
  printLine(
    `  on ${cores} cores a tunnelled download needs at least ${floorMs.toFixed(1)} ms of wall time (its CPU spread over every core) against ${directMs.toFixed(1)} ms measured direct: at most ${percent(directMs, floorMs)} of direct even with every core free`,
  );
  if (download.curlDirectMBps !== null && download.curlProxiedMBps !== null) {
    printComparison(
      `${MEGABYTES} MB download, curl (best of ${ROUNDS})`,
      [
        { name: 'curl direct', value: msPer(download.curlDirectMBps), unit: 'ms' },
        { name: 'curl through the proxy', value: msPer(download.curlProxiedMBps), unit: 'ms' },
      ],
      'curl direct',
    );
    printLine(`  curl through the proxy: ${percent(download.curlProxiedMBps, download.curlDirectMBps)} of direct`);
  } else {
    printLine('  (curl not found: its rows are left out)');
  }
  printComparison(
    `${REQUESTS} sequential small requests each way, a new connection each, alternating (median)`,
    [
      { name: 'direct', value: newConnection.directMs, unit: 'ms/req' },
      { name: 'through the proxy', value: newConnection.proxiedMs, unit: 'ms/req' },
    ],
    'direct',
  );
  printLine(
    `  added per new connection: ${(newConnection.proxiedMs - newConnection.directMs).toFixed(3)} ms median (${(newConnection.proxiedMeanMs - newConnection.directMeanMs).toFixed(3)} ms mean); target <= 1 ms`,
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** `srt` of @anthropic-ai/sandbox-runtime below this checkout (`npm install --no-save`), or on PATH. */
function findSrt(): string | null {
  try {
    const dir = packageDir('@anthropic-ai/sandbox-runtime');
    const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> };
    const program = typeof bin === 'string' ? bin : bin?.srt;
    if (program && existsSync(join(dir, program))) return join(dir, program);
  } catch {
    // Not installed below the checkout.
  }
  try {
    return execFileSync('sh', ['-c', 'command -v srt'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

const STARTS = 300;
const SMALL = 200;

/** The sandboxed side: start-up, and curl's download and small requests, direct and proxied (and under srt). */
export async function benchSandboxedNetwork(): Promise<void> {
  const big = Buffer.alloc(MEGABYTES * 1024 * 1024, 7);
  const server = createServer((request, response) => {
    if (request.url === '/big') response.end(big);
    else response.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const work = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-bench-')));
  try {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const off: ExecOptions = { command: '/bin/true', cwd: work, env, sandbox: 'enforce' };
    const byHost: ExecOptions = { ...off, sandbox: { network: { allow: [`127.0.0.1:${port}`] } } };
    for (let i = 0; i < 20; i++) {
      await exec(off);
      await exec(byHost);
    }
    const starts: number[][] = [[], []];
    for (let call = 0; call < STARTS; call++) {
      starts[0]!.push(await timeMs(() => exec(off)));
      starts[1]!.push(await timeMs(() => exec(byHost)));
    }
    const [offMs, byHostMs] = starts.map(median) as [number, number];
    printComparison(
      `a sandboxed call's start-up (/bin/true through exec, ${STARTS} each, interleaved, medians)`,
      [
        { name: 'network: false', value: offMs, unit: 'ms/call' },
        { name: 'network: { allow: [...] }', value: byHostMs, unit: 'ms/call' },
      ],
      'network: false',
    );
    printLine(`  start-up with an allow list / network: false: ${(byHostMs / offMs).toFixed(2)}x (target <= 1.2x)`);

    const urls = Array.from({ length: SMALL }, () => `http://127.0.0.1:${port}/small`);
    const download = ['-sS', '-o', '/dev/null', `http://127.0.0.1:${port}/big`];
    const small = ['-sS', '-o', '/dev/null', '-H', 'Connection: close', ...urls.flatMap((url) => [url, '-o', '/dev/null'])];
    const curlUnder = (sandbox: ExecOptions['sandbox'], args: string[]): ExecOptions => ({ command: 'curl', args, cwd: work, env, sandbox, timeoutMs: 120_000 });
    const contenders: { name: string; download: ExecOptions; small: ExecOptions }[] = [
      { name: 'toolgate, network: true', download: curlUnder({ network: true }, download), small: curlUnder({ network: true }, small) },
      {
        name: 'toolgate, allow list (proxy)',
        download: curlUnder({ network: { allow: [`127.0.0.1:${port}`] } }, download),
        small: curlUnder({ network: { allow: [`127.0.0.1:${port}`] } }, small),
      },
    ];
    const srt = findSrt();
    if (srt) {
      const settings = join(work, 'srt-settings.json');
      writeFileSync(settings, JSON.stringify({ network: { allowedDomains: ['127.0.0.1', 'localhost'], deniedDomains: [], allowLocalBinding: true }, filesystem: { denyRead: [], allowWrite: [work], denyWrite: [] } }));
      // srt exempts 127.0.0.1 from its proxy (no_proxy), and its sandbox has no route there:
      // curl is told to use the proxy for it too, as toolgate's sandbox does.
      // `-c`: srt reads options anywhere on its command line (curl's `-sS` would be its `-s`).
      const quoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;
      const srtUnder = (args: string[]): ExecOptions => ({
        command: process.execPath,
        args: [srt, '--settings', settings, '-c', ['curl', '--noproxy', '', ...args].map(quoted).join(' ')],
        cwd: work,
        env: { ...env, HOME: work },
        timeoutMs: 120_000,
      });
      const probe = await exec(srtUnder(['-sS', '-f', `http://127.0.0.1:${port}/small`])).catch((error: Error) => ({ exitCode: -1, stdout: '', stderr: error.message }));
      if (probe.exitCode === 0 && probe.stdout === 'ok') contenders.push({ name: 'srt (sandbox-runtime)', download: srtUnder(download), small: srtUnder(small) });
      else printLine(`  srt (@anthropic-ai/sandbox-runtime) does not reach 127.0.0.1 here (exit ${probe.exitCode}: ${(probe.stderr || probe.stdout).trim().split('\n')[0]}): its rows are left out`);
    } else {
      printLine('  srt is not installed (npm install --no-save @anthropic-ai/sandbox-runtime): its rows are left out');
    }
    for (const contender of contenders) {
      for (const options of [contender.download, contender.small]) {
        const result = await exec(options);
        if (result.exitCode !== 0) throw new Error(`${contender.name}: curl ${options.args?.slice(0, 4).join(' ')} failed: ${result.stderr}`);
      }
    }
    const downloads: number[][] = contenders.map(() => []);
    const smalls: number[][] = contenders.map(() => []);
    for (let round = 0; round < 5; round++) {
      for (const [index, contender] of contenders.entries()) {
        downloads[index]!.push(await timeMs(() => exec(contender.download)));
        smalls[index]!.push(await timeMs(() => exec(contender.small)));
      }
    }
    const best = (values: number[]) => Math.min(...values);
    printComparison(
      `curl in a sandboxed call: ${MEGABYTES} MB from 127.0.0.1 (best of 5 calls, start-up included)`,
      contenders.map((contender, index) => ({ name: contender.name, value: best(downloads[index]!), unit: 'ms' })),
      'toolgate, network: true',
    );
    printLine(`  proxied download: ${percent(best(downloads[0]!), best(downloads[1]!))} of direct throughput (target >= 90 %)`);
    printComparison(
      `curl in a sandboxed call: ${SMALL} small requests, a new connection each (best of 5 calls)`,
      contenders.map((contender, index) => ({ name: contender.name, value: best(smalls[index]!) / SMALL, unit: 'ms/req' })),
      'toolgate, network: true',
    );
  } finally {
    server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

export const benchmarks = {
  network: async () => {
    await benchNetwork();
    await benchSandboxedNetwork();
  },
};
