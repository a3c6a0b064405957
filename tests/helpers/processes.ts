import { readdirSync, readFileSync } from 'node:fs';

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
