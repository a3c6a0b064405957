import { spawn, spawnSync } from 'node:child_process';

/** Whether `script` (util-linux) is there to give a process a pseudo-terminal. */
export const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0;

/** A process running on a real pseudo-terminal (through `script`), driven like a person would. */
export interface PtySession {
  /** Everything the terminal showed so far. */
  output(): string;
  /** Types text (raw bytes: `\u0003` is Ctrl-C, `\u0004` Ctrl-D). */
  type(text: string): void;
  /** Resolves when the output contains `text` after `from` (a position in the output). */
  waitFor(text: string, from?: number): Promise<number>;
  /** The exit status (130 for an interrupt, null when killed). */
  exit: Promise<number | null>;
  kill(): void;
}

function quote(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

/** Starts `argv` on a pseudo-terminal. */
export function inPty(argv: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }): PtySession {
  const child = spawn('script', ['-qfec', argv.map(quote).join(' '), '/dev/null'], {
    cwd: options.cwd,
    env: { TERM: 'dumb', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let shown = '';
  const waiters: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    shown += chunk.toString();
    for (const wake of waiters.splice(0)) wake();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  let exited = false;
  void exit.then(() => {
    exited = true;
    for (const wake of waiters.splice(0)) wake();
  });
  return {
    output: () => shown,
    type: (text) => child.stdin.write(text),
    waitFor: async (text, from = 0) => {
      for (;;) {
        const at = shown.indexOf(text, from);
        if (at >= 0) return at + text.length;
        if (exited) throw new Error(`the process ended without showing ${JSON.stringify(text)}; it showed:\n${shown}`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    exit,
    kill: () => child.kill('SIGKILL'),
  };
}
