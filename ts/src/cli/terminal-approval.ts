import { createInterface, type Interface } from 'node:readline';
import type { ApprovalAnswer, ApprovalHandler, ApprovalRequest } from '../worker/index.js';

/** How a run answers approval requests: ask a person, approve everything, or deny everything. */
export type ApprovalMode = 'ask' | 'yes' | 'deny';

export interface TerminalApprovalOptions {
  mode: ApprovalMode;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

const MAX_INPUT_LINES = 40;

/** The tool input as the prompt shows it: pretty JSON, long inputs cut with a marker. */
export function formatToolInput(input: unknown): string {
  const text = typeof input === 'string' ? input : JSON.stringify(input, null, 2) ?? String(input);
  const lines = text.split('\n');
  if (lines.length <= MAX_INPUT_LINES) return text;
  return [...lines.slice(0, MAX_INPUT_LINES), `… (${lines.length - MAX_INPUT_LINES} more lines)`].join('\n');
}

/**
 * An approval handler for the terminal. `yes` approves and `deny` denies every request without
 * asking; `ask` shows the tool and its input and reads the answer:
 *
 *   [a]pprove, [d]eny (then an optional reason the model sees), a[l]ways (this tool — or, for
 *   shell / cli_execute, this program and first argument — for the rest of the run).
 *
 * End of input denies (fail closed).
 */
export function terminalApproval(options: TerminalApprovalOptions): ApprovalHandler & { close(): void } {
  const output = options.output ?? process.stderr;
  let lines: Interface | undefined;
  const pending: ((line: string | null) => void)[] = [];
  const buffered: (string | null)[] = [];

  const nextLine = (): Promise<string | null> => {
    if (!lines) {
      lines = createInterface({ input: options.input ?? process.stdin, terminal: false });
      lines.on('line', (line) => (pending.shift() ?? ((l) => buffered.push(l)))(line));
      lines.on('close', () => {
        for (const resolve of pending.splice(0)) resolve(null);
        buffered.push(null);
      });
    }
    if (buffered.length > 0) return Promise.resolve(buffered[0] === null ? null : (buffered.shift() ?? null));
    return new Promise((resolve) => pending.push(resolve));
  };

  const ask = async (request: ApprovalRequest): Promise<ApprovalAnswer> => {
    output.write(`\n? approve ${request.toolName}\n${indent(formatToolInput(request.input))}\n`);
    for (;;) {
      output.write('  [a]pprove  [d]eny  a[l]ways > ');
      const line = await nextLine();
      if (line === null) {
        output.write('\n  no answer (end of input): denied\n');
        return { decision: 'deny', reason: 'no answer from the user (end of input)' };
      }
      const answer = line.trim().toLowerCase();
      if (answer === 'a' || answer === 'approve' || answer === 'y' || answer === 'yes') return 'approve';
      if (answer === 'l' || answer === 'always') return 'always';
      if (answer === 'd' || answer === 'deny' || answer === 'n' || answer === 'no') {
        output.write('  reason for the model (Enter to skip) > ');
        const reason = (await nextLine())?.trim();
        return { decision: 'deny', ...(reason ? { reason } : {}) };
      }
      output.write(`  '${line.trim()}' is not an answer\n`);
    }
  };

  const handler: ApprovalHandler = async (request) => {
    if (options.mode === 'yes') return 'approve';
    if (options.mode === 'deny') return { decision: 'deny', reason: 'denied by --deny: this run approves nothing' };
    return ask(request);
  };
  return Object.assign(handler, { close: () => lines?.close() });
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
