import { readdirSync, readFileSync } from 'node:fs';

/**
 * A `sh` fragment that sets `$pid` to the pid of the shell running it as the host sees it.
 * Inside the sandbox's PID namespace `$$` and `$!` are other numbers; `/proc` is the host's,
 * so the shell's own `/proc/self/stat` names it by its host pid.
 */
export const HOST_PID = 'read pid rest < /proc/self/stat';

/**
 * A `sh` command line that starts `sleep 30` in the background and appends its host pid to
 * `file` (a path, or a parameter of the calling script such as `$1`).
 */
export function backgroundSleepRecordingPid(file: string): string {
  return `sh -c '${HOST_PID}; echo $pid >> "$0"; exec sleep 30' "${file}" &`;
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
