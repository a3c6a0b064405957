/**
 * The egress proxy's cost, in one run (crates/toolgate-core/examples/network_bench.rs): an HTTP
 * server on 127.0.0.1 reached directly (the baseline: what `network: true` gives) and through
 * the proxy. A 100 MB download (absolute-form request as with `http_proxy`, and a CONNECT tunnel
 * as with `https_proxy`; by a Rust client, and by curl where it is installed): rounds interleave
 * the contenders, each keeps its best round. Then small requests, each on a new connection,
 * direct and proxied alternating call by call: the median of each.
 *
 * Targets (issue 24): proxied throughput at least 90 % of direct; at most 1 ms added per new
 * connection. The sandboxed start-up figure and the comparison with `srt` come with the sandbox
 * integration.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { printComparison, printLine } from './lib/report.js';

const MEGABYTES = 100;
const REQUESTS = 1000;
const ROUNDS = 10;

const checkout = fileURLToPath(new URL('../..', import.meta.url));

interface Figures {
  download: {
    directMBps: number;
    forwardMBps: number;
    tunnelMBps: number;
    curlDirectMBps: number | null;
    curlProxiedMBps: number | null;
    proxyCpuMs: number;
    clientCpuMs: number;
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
  printLine(
    `  CPU per proxied download: the proxy's threads ${download.proxyCpuMs.toFixed(1)} ms, the receiving client ${download.clientCpuMs.toFixed(1)} ms (scheduler accounting: on a busy machine wall time also counts waiting for a core)`,
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

export const benchmarks = { network: benchNetwork };
