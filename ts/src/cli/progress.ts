import type { RunEvent, ToolCallRecord } from '../worker/index.js';
import { terminalText } from '../native/terminal-text.js';

const ONE_LINE = 160;

/** A value on one line of progress: safe for the terminal, runs of whitespace shown as one. */
function short(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const flat = terminalText(text.replace(/[ \t\n]+/g, ' '));
  return flat.length > ONE_LINE ? `${flat.slice(0, ONE_LINE)}… (${flat.length} characters)` : flat;
}

/** The line that ends a call: ✓ for a call that ran, ✗ for one that failed or was not run, with its decision. */
export function recordLine(record: ToolCallRecord): string {
  const ran = record.decision === 'preApproved' || record.decision === 'approved' || record.decision === 'always';
  const time = ran ? ` ${Math.round(record.durationMs)} ms` : '';
  const name = terminalText(record.toolName);
  const by = record.decidedBy === 'flag' && record.flag ? `${record.decidedBy} ${terminalText(record.flag)}` : record.decidedBy;
  if (ran && record.error === undefined) {
    const extra = record.decidedBy === 'flag' || record.decidedBy === 'saved' ? `, ${by}` : '';
    return `  ✓ ${name}${time} [${record.decision}${extra}]`;
  }
  const why = record.reason ?? `${record.errorCode ? `${record.errorCode}: ` : ''}${record.error ?? ''}`;
  return `  ✗ ${name}${time} [${record.decision}, ${by}]${why ? `: ${short(why)}` : ''}`;
}

export interface RunDisplayOptions {
  /** Progress lines (stderr). */
  progress: NodeJS.WritableStream;
  /** Where the model's text goes as it streams; none: not shown until the end. */
  text?: NodeJS.WritableStream;
}

/**
 * Prints a run as it happens: steps, each call as it starts and how it ended (with its
 * decision: preApproved, approved, always, denied, blocked, refused, unknown-tool,
 * invalid-input), and the model's text as it streams.
 */
export class RunDisplay {
  readonly #progress: NodeJS.WritableStream;
  readonly #text: NodeJS.WritableStream | undefined;
  /** The stream a streamed text line was left open on. */
  #open: NodeJS.WritableStream | undefined;
  #lastStepText = '';

  constructor(options: RunDisplayOptions) {
    this.#progress = options.progress;
    this.#text = options.text;
  }

  /** The text the model streamed in its last step (so the CLI does not print it twice). */
  get streamedText(): string {
    return this.#lastStepText;
  }

  #closeLine(): void {
    if (this.#open) this.#open.write('\n');
    this.#open = undefined;
  }

  readonly onEvent = (event: RunEvent): void => {
    const write = (line: string) => {
      this.#closeLine();
      this.#progress.write(event.worker ? `  [${terminalText(event.worker)}]${line}\n` : `${line}\n`);
    };
    switch (event.type) {
      case 'step-start':
        if (!event.worker) this.#lastStepText = '';
        write(`· step ${event.step}`);
        break;
      case 'text-delta':
        if (!this.#text || event.worker) break;
        // The model's text keeps its lines and tabs; escape sequences are shown, never sent.
        this.#text.write(terminalText(event.text, { layout: true }));
        this.#lastStepText += event.text;
        this.#open = event.text.endsWith('\n') ? undefined : this.#text;
        break;
      case 'tool-call':
        write(`  → ${terminalText(event.toolName)} ${short(event.input)}`);
        break;
      case 'call-recorded':
        write(recordLine(event.record));
        break;
      case 'error':
        write(`  ! ${short(event.error instanceof Error ? event.error.message : event.error)}`);
        break;
      case 'rule-saved':
        write(
          `  ✓ saved ${terminalText(event.rule.rule)} in ${terminalText(event.rule.file)}:${event.rule.line} (${terminalText(event.rule.saved)}); later runs will not ask for it`,
        );
        break;
      case 'rule-not-saved':
        write(`  ! the rule was not saved (the call is approved once): ${short(event.error)}`);
        break;
      case 'step-end':
        this.#closeLine();
        break;
      case 'approval-asked':
      case 'approval-answered':
      case 'tool-result':
      case 'tool-error':
        break;
    }
  };

  /** Ends an open text line. */
  finish(): void {
    this.#closeLine();
  }
}
