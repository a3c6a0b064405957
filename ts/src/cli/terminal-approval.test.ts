import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { reviewOf } from '../run/approval-gate.js';
import { alwaysScope, type ApprovalRequest } from '../worker/index.js';
import { INTERRUPTED_REASON, terminalApproval } from './terminal-approval.js';

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

/** A request as the gate makes it (the core's scope and review). */
function requestOf(toolName: string, input: unknown, argv?: string[], extra: Partial<ApprovalRequest> = {}): ApprovalRequest {
  const base = { toolName, input, toolCallId: 'c1', ...(argv ? { argv } : {}) };
  return { ...base, scope: alwaysScope(base), ...reviewOf(input), ...extra };
}
const shellRequest = (command: string): ApprovalRequest => requestOf('shell', { command }, command.split(' '));
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
    expect(io.shown()).toContain('    command: git push origin main\n');
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
    const writeRequest = requestOf('write_file', { path: 'a.txt', content: 'x' });
    const io = terminal(['w', 'yes']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(writeRequest, context)).toEqual({ decision: 'always', scope: 'tool' });
    expect(io.shown()).toContain('a[l]ways covers exactly this call: write_file');
    expect(io.shown()).toContain('every call of write_file');
  });

  it('--yes approves and --deny denies without reading anything', async () => {
    const io = terminal([], false);
    expect(await terminalApproval({ mode: 'yes', input: io.input, output: io.output })(request, context)).toMatchObject({ decision: 'approve' });
    expect(await terminalApproval({ mode: 'deny', input: io.input, output: io.output })(request, context)).toMatchObject({ decision: 'deny' });
    expect(io.shown()).toBe('');
  });

  it('[s]ave is offered with the rule and the file when the request can be saved', async () => {
    const save = { file: '/p/toolgate.permissions.yaml', rule: 'worker w: shell command exactly: git push origin main' };
    const io = terminal(['s']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask({ ...request, save }, context)).toEqual({ decision: 'save', by: 'terminal' });
    expect(io.shown()).toContain('[s]ave writes to /p/toolgate.permissions.yaml: worker w: shell command exactly: git push origin main');
    expect(io.shown()).toContain('a[l]ways  [w]ider always  [s]ave >');
    // not offered without a file: s is not an answer
    const without = terminal(['s', 'a']);
    const again = terminalApproval({ mode: 'ask', input: without.input, output: without.output });
    expect(await again(request, context)).toBe('approve');
    expect(without.shown()).toContain("'s' is not an answer");
  });

  it('an input too long to show whole is shown cut with its size and digest, and only approve or deny is offered', async () => {
    const content = 'ab'.repeat(40_000);
    const long = requestOf('write_file', { path: 'a', content: `${content}\nimport os; os.remove('x')` }, undefined, {
      save: { file: '/p/f.yaml', rule: 'r' },
    });
    expect(long.reviewable).toBe(false);
    const io = terminal(['l', 's', 'w', 'a']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(long, context)).toBe('approve');
    const shown = io.shown();
    expect(shown).toContain(`(${long.inputBytes} bytes, sha256 ${long.inputSha256}): approve once or deny`);
    expect(shown).toContain('[a]pprove  [d]eny >');
    expect(shown).not.toContain('a[l]ways');
    expect(shown).not.toContain('[s]ave');
    for (const key of ['l', 's', 'w']) expect(shown).toContain(`'${key}' is not an answer`);
  });

  it('shows the whole input: padding and escape sequences are visible, never raw', async () => {
    const command = `python3 -c "print('hello')${' '.repeat(4100)};import os;os.remove('x')" \u001b]52;c;aGk=\u0007\u202e`;
    const io = terminal(['d', '']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    await ask(requestOf('shell', { command }, ['python3', '-c', 'x']), context);
    const shown = io.shown();
    expect(shown).toContain("⟨4100 spaces⟩;import os;os.remove('x')");
    expect(shown).toContain('⟨ESC⟩]52;c;aGk=⟨BEL⟩⟨U+202E⟩');
    expect([...shown.matchAll(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu)].map((match) => match[0]).filter((char) => char !== '\n')).toEqual([]);
  });

  it('without always (one call), l and w are not answers', async () => {
    const io = terminal(['l', 'w', 'd', '']);
    const ask = terminalApproval({ mode: 'ask', always: false, input: io.input, output: io.output });
    expect(await ask(request, context)).toEqual({ decision: 'deny' });
    expect(io.shown()).toContain('[a]pprove  [d]eny >');
    expect(io.shown()).not.toContain('always');
    expect(io.shown()).toContain("'l' is not an answer");
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
