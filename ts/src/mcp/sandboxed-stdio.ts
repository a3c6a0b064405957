import { type ChildProcess, spawn } from 'node:child_process';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { native } from '../native/binding.js';
import { callNative } from '../native/errors.js';
import { currentNetworkCall, type RefusedConnection } from '../native/network-call.js';

/** How long a server's end waits for its output streams to close. */
const STREAMS_CLOSE_GRACE_MS = 2000;
/** How much of a server's stderr is kept for error messages. */
const STDERR_TAIL_BYTES = 2048;
/** How long a server has to exit after TERM before it is killed. */
const KILL_GRACE_MS = 2000;

/** Every server process group still running, ended when this process exits. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A server outlives no toolgate: on a normal exit (also after Ctrl-C handlers ran) every group
  // gets KILL. Sandboxed servers are also ended by their launcher when toolgate dies abruptly.
  process.on('exit', () => {
    for (const child of running) killGroup(child, 'SIGKILL');
  });
}

/**
 * The MCP SDK's transport contract over a stdio server started from a core-prepared launch: the
 * sandbox launcher (or the program when the sandbox is off) in a process group of its own, the
 * reduced environment, the work directory as cwd. Messages are framed and validated by the
 * SDK's own `ReadBuffer`, with the core's size limit; a message that does not parse ends the
 * connection, and the reason is kept for the error the caller sees.
 */
export class SandboxedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Why the connection ended, when the server did something wrong (exited, sent garbage). */
  failure: string | undefined;
  private child: ChildProcess | undefined;
  private readonly buffer: ReadBuffer;
  private stderrTail = '';
  /** What the check when the server ended repaired, for the next `checkGuarded`. */
  private readonly finishedRepairs: string[] = [];
  /** Settles once the server's end is handled (its last check made): `close()` waits for it. */
  private ended: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly launch: native.McpServerLaunch,
    maxMessageBytes: number,
  ) {
    this.buffer = new ReadBuffer({ maxBufferSize: maxMessageBytes });
  }

  /**
   * After a tool call: what the server created at a missing protected or hidden path was
   * removed (the view cannot mount over a path that does not exist); one message per path.
   */
  checkGuarded(): string[] {
    return [...this.finishedRepairs.splice(0), ...this.launch.checkGuarded()];
  }

  /**
   * Starts tool call `toolCallId` of the server, as `tool` (its name as the model sees it): until
   * `end()`, the connections the server opens through the egress proxy belong to that call. Inside
   * a run's tool call (the gated pipeline) the run's approval handler is asked and records go to
   * the run, under the call's id and name as the run knows them (as for a shell's processes);
   * outside one nobody is asked. `end()` resolves with the destinations refused to it.
   */
  beginCall(toolCallId: string, tool: string): { end(): Promise<RefusedConnection[]> } {
    const call = currentNetworkCall();
    const scope = callNative(() =>
      call ? this.launch.beginCall(call.run.native, call.toolCallId, call.toolName) : this.launch.beginCallAlone(toolCallId, tool),
    );
    return {
      end: async () => (await scope.end()).map(({ host, port, reason }) => ({ host, port, reason })),
    };
  }

  /** The last bytes the server wrote to stderr, for error messages. */
  get stderr(): string {
    return this.stderrTail.trim();
  }

  /** What the egress proxy refused the server (network by host), for error messages. */
  get refused(): string[] {
    return this.launch.refusedConnections().map((refused) => refused.reason);
  }

  async start(): Promise<void> {
    installExitHook();
    // With the network by host, the launcher's fd 3 is the socket its init hands the egress
    // proxy's listener over; our copy is closed once it is spawned.
    const handoff = this.launch.handoffFd;
    const child = spawn(this.launch.file, this.launch.args, {
      cwd: this.launch.cwd,
      env: this.launch.env,
      stdio: handoff === null ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', handoff],
      detached: true,
    });
    this.child = child;
    running.add(child);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => {
        this.launch.closeHandoff();
        if (child.pid !== undefined) this.launch.setProcessGroup(child.pid);
        resolve();
      });
      child.once('error', (error) => {
        this.launch.closeHandoff();
        this.launch.finish();
        this.fail(`could not be started: ${error.message}`);
        reject(error);
      });
    });
    // The launcher's last words (a limit that ended the server) are on stderr just before it
    // exits, and the server's processes in its sandbox end just after it: the last check of the
    // guarded paths and the failure wait until both streams are closed, briefly (a process
    // that escaped the launcher could hold them open).
    const closed = (stream: NodeJS.ReadableStream | null) =>
      new Promise<void>((resolve) => (stream ? stream.once('close', () => resolve()) : resolve()));
    const streamsClosed = Promise.all([closed(child.stdout), closed(child.stderr)]);
    let endHandled: () => void = () => undefined;
    this.ended = new Promise<void>((resolve) => {
      endHandled = resolve;
    });
    child.on('exit', (code, signal) => {
      running.delete(child);
      const why = signal ? `exited on signal ${signal}` : `exited with code ${code}`;
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, STREAMS_CLOSE_GRACE_MS);
      });
      void Promise.race([streamsClosed, grace]).then(() => {
        clearTimeout(timer);
        // The last check's messages (and why the server was stopped, when it was) go to the
        // next call's result.
        this.finishedRepairs.push(...this.launch.finish());
        this.fail(why);
        endHandled();
      });
    });
    child.stdout?.on('data', (chunk: Buffer) => this.receive(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    // EPIPE after the server died is reported through `exit`.
    child.stdin?.on('error', () => undefined);
  }

  private receive(chunk: Buffer): void {
    try {
      this.buffer.append(chunk);
      for (;;) {
        const message = this.buffer.readMessage();
        if (message === null) break;
        this.onmessage?.(message);
      }
    } catch (error) {
      const why = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
      this.fail(`sent a malformed message (${why.slice(0, 200)})`);
    }
  }

  /**
   * Stops the server for `why` (its whole process tree: the launcher ends every process of its
   * sandbox) and resolves once its end is handled, the launcher's last words (a limit the
   * server ran into) in its stderr.
   */
  async stop(why: string): Promise<void> {
    this.fail(why);
    await this.ended;
  }

  /** Records why the connection failed (the first reason wins) and closes it. */
  private fail(why: string): void {
    if (this.closed) return;
    this.failure ??= why;
    void this.close();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.closed) throw new Error('the server is not running');
    await new Promise<void>((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Ends the server's whole process group: TERM, then KILL after a grace period. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const child = this.child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      killGroup(child, 'SIGTERM');
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
    await this.ended;
    this.buffer.clear();
    this.onclose?.();
  }
}
