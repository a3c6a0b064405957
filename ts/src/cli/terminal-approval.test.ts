import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatToolInput, terminalApproval } from './terminal-approval.js';

function terminal(lines: string[], end = true) {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => (shown += chunk.toString()));
  for (const line of lines) input.write(`${line}\n`);
  if (end) input.end();
  return { input, output, shown: () => shown };
}

const request = { toolName: 'shell', input: { command: 'git push origin main' }, toolCallId: 'c1' };

describe('terminal approval prompt', () => {
  it('shows the tool and its input and reads approve / always / deny', async () => {
    const io = terminal(['a', 'l', 'd', 'not now']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request)).toBe('approve');
    expect(await ask(request)).toBe('always');
    expect(await ask(request)).toEqual({ decision: 'deny', reason: 'not now' });
    ask.close();
    expect(io.shown()).toContain('? approve shell');
    expect(io.shown()).toContain('"command": "git push origin main"');
    expect(io.shown()).toContain('[a]pprove  [d]eny  a[l]ways');
  });

  it('asks again after an unknown answer, and denies without a reason on an empty line', async () => {
    const io = terminal(['maybe', 'deny', '']);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request)).toEqual({ decision: 'deny' });
    expect(io.shown()).toContain("'maybe' is not an answer");
  });

  it('denies at end of input (fail closed)', async () => {
    const io = terminal([]);
    const ask = terminalApproval({ mode: 'ask', input: io.input, output: io.output });
    expect(await ask(request)).toMatchObject({ decision: 'deny' });
  });

  it('--yes approves and --deny denies without reading anything', async () => {
    const io = terminal([], false);
    expect(await terminalApproval({ mode: 'yes', input: io.input, output: io.output })(request)).toBe('approve');
    expect(await terminalApproval({ mode: 'deny', input: io.input, output: io.output })(request)).toMatchObject({ decision: 'deny' });
    expect(io.shown()).toBe('');
  });

  it('cuts very long inputs with a marker', () => {
    const long = { lines: Array.from({ length: 100 }, (_, i) => `line ${i}`) };
    const shown = formatToolInput(long);
    expect(shown.split('\n').length).toBe(41);
    expect(shown).toMatch(/… \(\d+ more lines\)$/);
  });
});
