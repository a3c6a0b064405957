import { describe, expect, it } from 'vitest';
import { terminalJson, terminalLine, terminalText } from './terminal-text.js';

const unsafe = (text: string) => [...text.matchAll(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu)].map((match) => match[0]).filter((char) => char !== '\n');

describe('terminalText', () => {
  it('shows escape sequences, carriage returns, backspaces, bidi and zero-width characters escaped', () => {
    const cases: [string, string][] = [
      ['\u001b]52;c;aGk=\u0007', '\\x1b]52;c;aGk=\\x07'],
      ['\u001b[2J\u001b[H', '\\x1b[2J\\x1b[H'],
      ['\u001b]0;title\u0007', '\\x1b]0;title\\x07'],
      ['safe\u202etxt', 'safe\\u202etxt'],
      ['a\u200db\u200bc\ufeff', 'a\\u200db\\u200bc\\ufeff'],
      ['\u009b31m', '\\x9b31m'],
      ['x\by', 'x\\x08y'],
      ['a\rb', 'a\\rb'],
      ['del\u007f', 'del\\x7f'],
      ['tag\u{e0041}', 'tag\\u{e0041}'],
      ['line\u2028sep', 'line\\u2028sep'],
      ['plain text, ünïcödé and emoji 🎉', 'plain text, ünïcödé and emoji 🎉'],
    ];
    for (const [raw, shown] of cases) {
      expect(terminalText(raw)).toBe(shown);
      expect(unsafe(terminalText(raw, { layout: true }))).toEqual([]);
    }
  });

  it('keeps lines and tabs only where the layout is the text’s own', () => {
    expect(terminalText('a\nb\tc')).toBe('a\\nb\\tc');
    expect(terminalText('a\nb\tc', { layout: true })).toBe('a\nb\tc');
    expect(terminalLine({ a: '\u001b' })).toBe('{"a":"\\u001b"}');
  });

  it('JSON stays exact: raw characters become JSON escapes that parse back to the same value', () => {
    const value = { text: '\u001b[2J\u202e\u2028\u0085\u{e0041}ok', n: 1 };
    const shown = terminalJson(value);
    expect(unsafe(shown)).toEqual([]);
    expect(JSON.parse(shown)).toEqual(value);
  });
});
