import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { alwaysScope, type ApprovalRequest } from '../worker/index.js';
import { formatToolInput, INTERRUPTED_REASON, terminalApproval } from './terminal-approval.js';

function terminal(lines: string[], end = true) {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => (shown += chunk.toString()));
  for (const line of lines) input.write(`${line}\n`);
  if (end) input.end();
  return { input, output, shown: () => shown };
}

/** A fake terminal: `isTTY`, raw mode recorded, keys written as raw bytes (no newline needed). */
function tty(keys: string, end = false) {
  const input = Object.assign(new PassThrough(), { isTTY: true, rawModes: [] as boolean[] });
  Object.assign(input, { setRawMode: (raw: boolean) => input.rawModes.push(raw) });
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => (shown += chunk.toString()));
  input.write(keys);
  if (end) input.end();
  return { input, output, shown: () => shown };
}

const shellRequest = (command: string): ApprovalRequest => {
  const argv = command.split(' ');
  const base = { toolName: 'shell', input: { command }, toolCallId: 'c1', argv };
  return { ...base, scope: alwaysScope({ ...base, scope: undefined as never }) };
};
const request = shellRequest('git push origin main');
const context = {};

describe('terminal approval prompt (lines, as from a pipe)', () => {
  it('shows the tool, its input and what always covers, and reads approve / always / deny', async () => {
    const io = terminal(['a', 'l', 'd', 'not now']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toBe('approve');
    expect(await ask(request, context)).toBe('always');
    expect(await ask(request, context)).toEqual({ decision: 'deny', reason: 'not now' });
    ask.close();
    expect(io.shown()).toContain('? approve shell');
    expect(io.shown()).toContain('"command": "git push origin main"');
    expect(io.shown()).toContain('[a]pprove  [d]eny  a[l]ways  [w]ider always');
    expect(io.shown()).toContain('a[l]ways covers exactly this command: git push origin main');
  });

  it('asks again after an unknown answer, and denies without a reason on an empty line', async () => {
    const io = terminal(['maybe', 'deny', '']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toEqual({ decision: 'deny' });
    expect(io.shown()).toContain("'maybe' is not an answer");
  });

  it('denies at end of input (fail closed), also in the middle of a wider choice', async () => {
    for (const lines of [[], ['w'], ['d']]) {
      const io = terminal(lines);
      const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
      const answer = await ask(request, context);
      expect(typeof answer === 'object' && answer.decision).toBe('deny');
      expect(io.shown()).toContain('end of input');
    }
  });

  it('a wider always is a prefix the person types, sees in full and confirms', async () => {
    const io = terminal(['w', 'git push', 'y']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toEqual({ decision: 'always', scope: { prefix: 'git push' } });
    expect(io.shown()).toContain('every shell command starting with git push');
  });

  it('a prefix that does not cover the call is refused and the question comes back; no confirmation is no', async () => {
    const io = terminal(['w', 'git pull', 'w', 'git', 'n', 'a']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toBe('approve');
    expect(io.shown()).toContain('does not cover');
    expect(io.shown()).toContain('every shell command starting with git ');
  });

  it('for a tool that runs no command, wider means every call of the tool', async () => {
    const base = { toolName: 'write_file', input: { path: 'a.txt', content: 'x' }, toolCallId: 'c2' };
    const writeRequest = { ...base, scope: alwaysScope({ ...base, scope: undefined as never }) };
    const io = terminal(['w', 'yes']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(writeRequest, context)).toEqual({ decision: 'always', scope: 'tool' });
    expect(io.shown()).toContain('a[l]ways covers exactly this call: write_file');
    expect(io.shown()).toContain('every call of write_file');
  });

  it('--yes approves and --deny denies without reading anything', async () => {
    const io = terminal([], false);
    expect(await terminalApproval({ mode: 'yes', input: io.input, output: io.output })(request, context)).toBe('approve');
    expect(await terminalApproval({ mode: 'deny', input: io.input, output: io.output })(request, context)).toMatchObject({ decision: 'deny' });
    expect(io.shown()).toBe('');
  });

  it('without always (one call), l and w are not answers', async () => {
    const io = terminal(['l', 'w', 'd', '']);
    const ask = terminalApproval({ mode: 'ask', always: false, input: io.input, output: io.output });
    expect(await ask(request, context)).toEqual({ decision: 'deny' });
    expect(io.shown()).toContain('[a]pprove  [d]eny >');
    expect(io.shown()).not.toContain('always');
    expect(io.shown()).toContain("'l' is not an answer");
  });

  it('cuts very long inputs with a marker', () => {
    const long = { lines: Array.from({ length: 100 }, (_, i) => `line ${i}`) };
    const shown = formatToolInput(long);
    expect(shown.split('\n').length).toBe(41);
    expect(shown).toMatch(/… \(\d+ more lines\)$/);
  });
});

describe('terminal approval prompt (single keys in a terminal)', () => {
  it('takes one key without Enter, then the reason on its own line with backspace', async () => {
    const io = tty('dno wayx\u007f!\r');
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toEqual({ decision: 'deny', reason: 'no way!' });
    // raw mode only while the prompt waits
    expect(io.input.rawModes).toEqual([true, false]);
    ask.close();
  });

  it('typing the reason of the README example gives a reason, not an unknown answer', async () => {
    const io = tty('duse notes/fibonacci.txt instead\r');
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toEqual({ decision: 'deny', reason: 'use notes/fibonacci.txt instead' });
    expect(io.shown()).not.toContain('is not an answer');
    ask.close();
  });

  it('Ctrl-C at the key or at the reason denies and reports the interruption once', async () => {
    for (const keys of ['\u0003', 'd\u0003', 'wgit\u0003']) {
      const io = tty(keys);
      let interrupted = 0;
      const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output, onInterrupt: () => interrupted++ });
      expect(await ask(request, context)).toEqual({ decision: 'deny', reason: INTERRUPTED_REASON });
      expect(interrupted).toBe(1);
      expect(io.shown()).toContain('interrupted');
      expect(io.input.rawModes.at(-1)).toBe(false);
      ask.close();
    }
  });

  it('Ctrl-D denies (end of input); unknown keys ask again', async () => {
    const io = tty('x\u0004');
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request, context)).toMatchObject({ decision: 'deny' });
    expect(io.shown()).toContain("'x' is not an answer");
    ask.close();
  });
});
