import { createInterface, type Interface } from 'node:readline';
import { StringDecoder } from 'node:string_decoder';
import { terminalText } from '../native/terminal-text.js';

/** What a read returns: text, the end of input, or Ctrl-C. */
export type Read = { kind: 'text'; text: string } | { kind: 'end' } | { kind: 'interrupt' };

/** A stream that may be a terminal (process.stdin is one when it is a TTY). */
export type PromptInput = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };

/**
 * Reads answers from a person. In a terminal, single keys (raw mode, so Ctrl-C arrives as a key
 * and is reported, not lost) and lines with echo and backspace; raw mode is on only while a
 * prompt waits, so Ctrl-C between prompts stays a normal interrupt. Elsewhere (a pipe, a test
 * stream), whole lines: a "key" is the first line's text.
 */
export interface TerminalInput {
  /** Starts a prompt: in a terminal, raw mode goes on before the question is shown. */
  ready(): void;
  key(): Promise<Read>;
  line(): Promise<Read>;
  /** Ends a prompt: leaves raw mode and stops reading. */
  idle(): void;
  close(): void;
  readonly terminal: boolean;
}

const CTRL_C = '\u0003';
const CTRL_D = '\u0004';
const ESCAPE = '\u001b';

/** Raw-mode reading of a terminal. */
class RawTerminal implements TerminalInput {
  readonly terminal = true;
  readonly #input: PromptInput;
  readonly #output: NodeJS.WritableStream;
  readonly #decoder = new StringDecoder('utf8');
  #buffer = '';
  #ended = false;
  #wake: (() => void) | undefined;
  #raw = false;
  readonly #onData = (chunk: Buffer | string) => {
    this.#buffer += typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    this.#notify();
  };
  readonly #onEnd = () => {
    this.#ended = true;
    this.#notify();
  };

  constructor(input: PromptInput, output: NodeJS.WritableStream) {
    this.#input = input;
    this.#output = output;
    input.on('data', this.#onData);
    input.on('end', this.#onEnd);
    input.pause();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #listen(): void {
    if (!this.#raw) {
      this.#input.setRawMode?.(true);
      this.#raw = true;
    }
    this.#input.resume();
  }

  ready(): void {
    this.#listen();
  }

  async #char(): Promise<string | null> {
    this.#listen();
    while (this.#buffer === '') {
      if (this.#ended) return null;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    const [first = ''] = this.#buffer;
    this.#buffer = this.#buffer.slice(first.length);
    if (first === ESCAPE) {
      // An escape sequence (an arrow key): drop what came with it.
      this.#buffer = this.#buffer.replace(/^\[[0-9;]*[A-Za-z~]/, '');
      return '';
    }
    return first;
  }

  async key(): Promise<Read> {
    for (;;) {
      const char = await this.#char();
      if (char === null || char === CTRL_D) return { kind: 'end' };
      if (char === CTRL_C) return { kind: 'interrupt' };
      if (char === '' || char === '\r' || char === '\n') continue;
      this.#output.write(`${terminalText(char)}\n`);
      return { kind: 'text', text: char };
    }
  }

  async line(): Promise<Read> {
    let text = '';
    for (;;) {
      const char = await this.#char();
      if (char === null) return text ? { kind: 'text', text } : { kind: 'end' };
      if (char === CTRL_C) return { kind: 'interrupt' };
      if (char === CTRL_D) {
        if (!text) return { kind: 'end' };
        continue;
      }
      if (char === '\r' || char === '\n') {
        this.#output.write('\n');
        return { kind: 'text', text };
      }
      if (char === '\u007f' || char === '\b') {
        if (text) {
          text = [...text].slice(0, -1).join('');
          this.#output.write('\b \b');
        }
        continue;
      }
      if (char === '' || char < ' ') continue;
      text += char;
      // Echoed safely: a typed C1 control or bidi character must not drive the terminal.
      this.#output.write(terminalText(char));
    }
  }

  idle(): void {
    if (this.#raw) {
      this.#input.setRawMode?.(false);
      this.#raw = false;
    }
    this.#input.pause();
  }

  close(): void {
    this.idle();
    this.#input.off('data', this.#onData);
    this.#input.off('end', this.#onEnd);
  }
}

/** Line reading of anything that is not a terminal. */
class LineInput implements TerminalInput {
  readonly terminal = false;
  readonly #input: NodeJS.ReadableStream;
  #lines: Interface | undefined;
  readonly #pending: ((read: Read) => void)[] = [];
  readonly #buffered: Read[] = [];
  #ended = false;

  constructor(input: NodeJS.ReadableStream) {
    this.#input = input;
  }

  #next(): Promise<Read> {
    if (!this.#lines) {
      this.#lines = createInterface({ input: this.#input, terminal: false });
      this.#lines.on('line', (text) => {
        const read: Read = { kind: 'text', text };
        const waiting = this.#pending.shift();
        if (waiting) waiting(read);
        else this.#buffered.push(read);
      });
      this.#lines.on('close', () => {
        this.#ended = true;
        for (const waiting of this.#pending.splice(0)) waiting({ kind: 'end' });
      });
    }
    const buffered = this.#buffered.shift();
    if (buffered) return Promise.resolve(buffered);
    if (this.#ended) return Promise.resolve({ kind: 'end' });
    return new Promise((resolve) => this.#pending.push(resolve));
  }

  ready(): void {}

  key(): Promise<Read> {
    return this.#next();
  }

  line(): Promise<Read> {
    return this.#next();
  }

  idle(): void {}

  close(): void {
    this.#lines?.close();
  }
}

/** Single keys on a terminal, lines elsewhere. */
export function terminalInput(input: PromptInput, output: NodeJS.WritableStream): TerminalInput {
  return input.isTTY && typeof input.setRawMode === 'function' ? new RawTerminal(input, output) : new LineInput(input);
}
