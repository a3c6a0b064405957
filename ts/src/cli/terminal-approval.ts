import { ToolgateError } from '../native/errors.js';
import { flagAnswer } from '../run/approval-gate.js';
import { alwaysScope, type AlwaysScopeChoice, type ApprovalAnswer, type ApprovalHandler, type ApprovalRequest } from '../worker/index.js';
import { terminalInput, type PromptInput, type Read, type TerminalInput } from './terminal-input.js';
import { terminalText } from '../native/terminal-text.js';

/** How a run answers approval requests: ask a person, approve everything, or deny everything. */
export type ApprovalMode = 'ask' | 'yes' | 'deny';

export interface TerminalApprovalOptions {
  mode: ApprovalMode;
  input?: PromptInput;
  output?: NodeJS.WritableStream;
  /** Offer "always" (a run) or only approve / deny (one call, as `toolgate tools call`). Default true. */
  always?: boolean;
  /** Called on Ctrl-C at the prompt (the request is denied): stop the run. */
  onInterrupt?: () => void;
}

/** The reason a denial gives the model when the person pressed Ctrl-C. */
export const INTERRUPTED_REASON = 'the user interrupted the run (Ctrl-C) at the approval prompt';

/**
 * The request as the prompt shows it: the tool, the whole input as the core renders it for
 * review (nothing hidden: long whitespace runs counted, invisible characters named; an input
 * too long to show says so with its size and SHA-256), and what each answer covers.
 */
export function formatApprovalRequest(request: ApprovalRequest, offerAlways = true): string {
  const lines = [`? approve ${terminalText(request.toolName)}`, indent(terminalText(request.review, { layout: true }))];
  if (!request.reviewable) {
    lines.push(`  this input is too long to show whole (${request.inputBytes} bytes, sha256 ${request.inputSha256}): approve once or deny`);
  } else if (offerAlways) {
    lines.push(`  a[l]ways covers ${terminalText(request.scope.description)}`);
    if (request.save) lines.push(`  [s]ave writes to ${terminalText(request.save.file)}: ${terminalText(request.save.rule)}`);
  }
  return `${lines.join('\n')}\n`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/** A prompt was interrupted (Ctrl-C) or its input ended; the request is denied. */
class Stop {
  constructor(readonly answer: ApprovalAnswer) {}
}

/**
 * An approval handler for the terminal. `yes` approves and `deny` denies every request without
 * asking; `ask` shows the tool, its input and what "always" would cover, then reads one key:
 *
 *   [a]pprove   [d]eny (then a reason for the model on its own line, Enter to skip)
 *   a[l]ways    exactly this call, for the rest of the run (the line above the keys says so)
 *   [w]ider     a wider "always": a command prefix (shell, cli_execute) or every call of the
 *               tool, shown in full and confirmed before it counts
 *   [s]ave      approve, and save the scope shown as a rule in the project permissions file
 *               (later runs do not ask again); offered for workers loaded from a file
 *
 * "Always", wider and save are not offered for an input too long to show whole. Everything
 * shown that came from the model or a tool is printed safely (`terminalText`).
 *
 * In a terminal the keys are single keystrokes; from a pipe, one answer per line. Ctrl-C denies
 * the request and calls `onInterrupt`; end of input denies (fail closed).
 */
export function terminalApproval(options: TerminalApprovalOptions): ApprovalHandler & { close(): void } {
  const output = options.output ?? process.stderr;
  const offerAlways = options.always ?? true;
  let reader: TerminalInput | undefined;
  const input = () => (reader ??= terminalInput(options.input ?? process.stdin, output));

  /** A read that must be text: Ctrl-C and end of input stop the prompt with a denial. */
  const text = async (read: Promise<Read>): Promise<string> => {
    const got = await read;
    if (got.kind === 'text') return got.text;
    if (got.kind === 'interrupt') {
      output.write('^C\n  interrupted: the call is denied and the run stops\n');
      options.onInterrupt?.();
      throw new Stop({ decision: 'deny', reason: INTERRUPTED_REASON });
    }
    output.write('\n  no answer (end of input): denied\n');
    throw new Stop({ decision: 'deny', reason: 'no answer from the user (end of input)' });
  };

  /** Asks for a wider "always"; undefined when the person does not confirm. */
  const wider = async (request: ApprovalRequest): Promise<ApprovalAnswer | undefined> => {
    let choice: AlwaysScopeChoice;
    if (request.argv) {
      output.write(
        `  always approve ${terminalText(request.toolName)} commands starting with these words (the command is: ${terminalText(request.argv.join(' '))}) > `,
      );
      const words = (await text(input().line())).trim();
      if (!words) return undefined;
      choice = { prefix: words };
    } else {
      choice = 'tool';
    }
    let description: string;
    try {
      description = alwaysScope(request, choice).description;
    } catch (error) {
      if (!(error instanceof ToolgateError)) throw error;
      output.write(`  ${terminalText(error.message)}\n`);
      return undefined;
    }
    output.write(`  a wider always covers ${terminalText(description)}\n  confirm [y/N] > `);
    const confirm = (await text(input().key())).trim().toLowerCase();
    return confirm === 'y' || confirm === 'yes' ? { decision: 'always', scope: choice } : undefined;
  };

  const ask = async (request: ApprovalRequest): Promise<ApprovalAnswer> => {
    // Keys typed as soon as the question shows must not be echoed by a terminal still in line mode.
    input().ready();
    output.write(`\n${formatApprovalRequest(request, offerAlways)}`);
    const always = offerAlways && request.reviewable;
    const save = always && request.save !== undefined;
    const keys = `[a]pprove  [d]eny${always ? '  a[l]ways  [w]ider always' : ''}${save ? '  [s]ave' : ''}`;
    try {
      for (;;) {
        output.write(`  ${keys} > `);
        const given = (await text(input().key())).trim();
        const answer = given.toLowerCase();
        if (answer === 'a' || answer === 'approve' || answer === 'y' || answer === 'yes') return 'approve';
        if (answer === 'd' || answer === 'deny' || answer === 'n' || answer === 'no') {
          output.write('  reason for the model (Enter to skip) > ');
          const reason = (await text(input().line())).trim();
          return { decision: 'deny', ...(reason ? { reason } : {}) };
        }
        if (always && (answer === 'l' || answer === 'always')) return 'always';
        if (always && (answer === 'w' || answer === 'wider')) {
          const chosen = await wider(request);
          if (chosen) return chosen;
          continue;
        }
        if (save && (answer === 's' || answer === 'save')) return { decision: 'save', by: 'terminal' };
        output.write(`  '${terminalText(given)}' is not an answer\n`);
      }
    } catch (error) {
      if (error instanceof Stop) return error.answer;
      throw error;
    } finally {
      reader?.idle();
    }
  };

  // A flag answers for nobody in particular: the records say which flag decided.
  const handler: ApprovalHandler = async (request) => {
    if (options.mode === 'yes') return flagAnswer({ decision: 'approve' }, '--yes');
    if (options.mode === 'deny') return flagAnswer({ decision: 'deny', reason: 'denied by --deny: this run approves nothing' }, '--deny');
    return ask(request);
  };
  return Object.assign(handler, { close: () => reader?.close() });
}
