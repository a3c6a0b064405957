/**
 * Which tool call of which run a process belongs to, for the egress proxy of a network-by-host
 * sandbox. The run's pipeline (`run/network.ts`) sets it around a tool's `execute`; the one
 * process helper (`runProcess`) attaches every process started inside to it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { native } from './binding.js';
import { callNative } from './errors.js';

/** A run's side of network by host: the core's handle, and what to do with new records. */
export interface NetworkRunLink {
  readonly native: native.NetworkRun;
  /** Takes the records made so far into the run. */
  collect(): void;
}

export interface NetworkCallContext {
  run: NetworkRunLink;
  toolCallId: string;
  toolName: string;
}

const current = new AsyncLocalStorage<NetworkCallContext>();

/** Runs `body` as tool call `toolCallId` of `run`: processes started inside belong to it. */
export function runAsNetworkCall<T>(run: NetworkRunLink, toolCallId: string, toolName: string, body: () => Promise<T>): Promise<T> {
  return current.run({ run, toolCallId, toolName }, body);
}

/** The tool call running now (inside `runAsNetworkCall`), if any. */
export function currentNetworkCall(): Readonly<NetworkCallContext> | undefined {
  return current.getStore();
}

/**
 * Attaches a prepared process to the tool call running now, if any; returns what to do when it
 * has ended (take its records into the run).
 */
export function attachProcess(handle: native.ProcessHandle): (() => void) | undefined {
  const call = current.getStore();
  if (!call) return undefined;
  callNative(() => handle.attachNetwork(call.run.native, call.toolCallId, call.toolName));
  return () => call.run.collect();
}

/** A destination the egress proxy refused, as a call's result names it. */
export interface RefusedConnection {
  host: string;
  port: number;
  /** The refusal the program was sent: host, port, reason and how to allow it. */
  reason: string;
}

/** `{ refusedConnections }` when the proxy refused something, else nothing: for a call's result. */
export function withRefusals(result: native.ProcessResult): { refusedConnections?: RefusedConnection[] } {
  if (result.refusedConnections.length === 0) return {};
  return { refusedConnections: result.refusedConnections.map(({ host, port, reason }) => ({ host, port, reason })) };
}
