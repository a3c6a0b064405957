import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * A unique argument for `sleep` (30 seconds and a random fraction). A sandboxed call has a PID
 * namespace and a `/proc` of its own, so it cannot tell the host its pids: the host finds the
 * process by this argument instead ([`processesWith`]).
 */
export function sleepMarker(): string {
  return `30.${randomInt(100_000_000, 1_000_000_000)}`;
}

/**
 * A `sh` loop that waits until a process with `sleep <marker>` as its command line is visible
 * in the `/proc` it sees (inside a sandbox: its own), so a call knows its child started.
 */
export function waitInsideFor(marker: string): string {
  return `found() { for p in /proc/[0-9]*/cmdline; do [ "$(tr '\\0' ' ' < "$p" 2>/dev/null)" = 'sleep ${marker} ' ] && return 0; done; return 1; }; until found; do sleep 0.01; done`;
}

/** The host pids of the live processes that have `marker` as an argument. */
export function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.includes(marker) && !isGone(Number(entry))) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** Waits up to five seconds until `count` processes have `marker` as an argument; their pids. */
export async function waitForMarker(marker: string, count = 1): Promise<number[]> {
  const until = Date.now() + 5000;
  for (;;) {
    const pids = processesWith(marker);
    if (pids.length >= count) return pids;
    if (Date.now() > until) throw new Error(`no ${count} process(es) with '${marker}' started`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** State letter of a process from /proc, or null when it does not exist. */
export function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

/**
 * A process is gone when it does not exist or is a zombie waiting for a reaper other than us
 * (PID 1 in a container may not reap orphans): either way it runs no code.
 */
export function isGone(pid: number): boolean {
  const state = processState(pid);
  return state === null || state === 'Z';
}

export async function waitUntilGone(pid: number, ms = 1000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (isGone(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return isGone(pid);
}

/** Zombie children of this process: processes we started and never reaped. */
export function zombieChildren(): number[] {
  const zombies: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' && Number(fields[1]) === process.pid) zombies.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return zombies;
}

export function openDescriptorCount(): number {
  return readdirSync('/proc/self/fd').length;
}
