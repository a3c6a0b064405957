import type { ApprovalHandler, RunEvent, WorkerRunResult, WorkerStream } from '../worker/index.js';
import { RunDisplay } from './progress.js';
import { describePending, writeStateFile, type StateFile } from './state-file.js';
import { terminalApproval, type ApprovalMode } from './terminal-approval.js';
import { terminalJson, terminalText } from '../native/terminal-text.js';

/** Exit codes of `toolgate run` and `toolgate resume`. */
export const EXIT = { done: 0, error: 1, usage: 2, maxSteps: 3, approvalRequired: 4, interrupted: 130 } as const;

/** How requests are answered: a person, a flag, deferred to a state file, or nobody (fail closed). */
export type SessionApproval = ApprovalMode | 'fail-closed' | 'defer';

export interface SessionOptions {
  command: 'run' | 'resume';
  approval: SessionApproval;
  json: boolean;
  /** With `defer`: where the state goes, and what else the file records. */
  stateFile?: { path: string; base: Omit<StateFile, 'runId' | 'pending' | 'state'> };
  /** Starts the streamed run with the handler, the signal and the event listener. */
  start: (options: { onApproval?: ApprovalHandler | 'defer'; signal: AbortSignal; onEvent: (event: RunEvent) => void }) => WorkerStream;
}

/** The note printed the first time a request is denied because nobody can be asked. */
const NO_TERMINAL_NOTE =
  'no terminal to ask for approvals: tool calls that need approval are denied. Pass --yes to approve them, --deny to silence this note, or --defer-approvals --state-file <file> to answer later.';

/**
 * Runs a streamed worker run in the terminal: progress on stderr, the model's text as it streams,
 * approvals asked with single keys (or answered by flags, or deferred to a state file), Ctrl-C
 * stopping the run and its tool processes (exit 130), and the answer on stdout.
 */
export async function runSession(options: SessionOptions): Promise<number> {
  const name = `toolgate ${options.command}`;
  const controller = new AbortController();
  const interrupt = (where: string) =>
    controller.abort(new Error(`interrupted (Ctrl-C)${where}: the run stopped and its running tool processes were stopped`));
  const onSigint = () => interrupt('');
  process.once('SIGINT', onSigint);

  const asking = options.approval === 'ask' || options.approval === 'yes' || options.approval === 'deny';
  const prompt = asking
    ? terminalApproval({ mode: options.approval as ApprovalMode, onInterrupt: () => interrupt(' at the approval prompt') })
    : undefined;
  const display = options.json ? undefined : new RunDisplay({ progress: process.stderr, text: process.stdout.isTTY ? process.stdout : process.stderr });
  let noted = false;
  const onEvent = (event: RunEvent) => {
    display?.onEvent(event);
    if (event.type === 'approval-answered' && event.source === 'no-handler' && options.approval === 'fail-closed' && !noted) {
      noted = true;
      process.stderr.write(`${name}: ${NO_TERMINAL_NOTE}\n`);
    }
  };

  let result: WorkerRunResult;
  try {
    const stream = options.start({
      ...(prompt ? { onApproval: prompt } : options.approval === 'defer' ? { onApproval: 'defer' as const } : {}),
      signal: controller.signal,
      onEvent,
    });
    result = await stream.result;
  } catch (error) {
    display?.finish();
    if (controller.signal.aborted) {
      process.stderr.write(`${name}: ${terminalText((controller.signal.reason as Error).message)}\n`);
      return EXIT.interrupted;
    }
    throw error;
  } finally {
    process.off('SIGINT', onSigint);
    prompt?.close();
  }
  display?.finish();

  if (result.status === 'approval-required' && options.stateFile && result.state && result.pending) {
    writeStateFile(options.stateFile.path, { ...options.stateFile.base, runId: result.runId, pending: result.pending, state: result.state });
  }
  if (options.json) {
    // Exact data: characters that could drive a terminal are JSON escapes, never raw.
    process.stdout.write(`${terminalJson(result)}\n`);
  } else if (result.status === 'approval-required' && options.stateFile && result.pending) {
    process.stdout.write(describePending(result.pending, options.stateFile.path));
  } else {
    if (result.status === 'max-steps') process.stderr.write(`${name}: stopped after ${result.steps.at(-1)?.step ?? 0} steps (--max-steps)\n`);
    if (result.status === 'question') process.stderr.write(`${name}: the worker has a question:\n`);
    // Text already streamed to stdout is not printed twice.
    const streamedHere = process.stdout.isTTY && result.status === 'completed' && display?.streamedText.trim() === result.text.trim();
    if (!streamedHere) process.stdout.write(`${terminalText(result.text, { layout: true })}\n`);
  }
  if (result.status === 'approval-required') return EXIT.approvalRequired;
  return result.status === 'max-steps' ? EXIT.maxSteps : EXIT.done;
}
