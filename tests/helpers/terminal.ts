/**
 * What a terminal must never receive raw from toolgate: control characters (line feeds, and
 * where `allow` says so tabs or the carriage returns a pseudo-terminal adds, excepted), format
 * characters (bidirectional overrides, zero-width characters) and line separators.
 */
export function rawControls(text: string, allow: readonly string[] = ['\n']): string[] {
  return [...text.matchAll(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu)]
    .map((match) => match[0])
    .filter((char) => !allow.includes(char))
    .map((char) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
}

/** Escape sequences and invisible characters an attacker puts in text that reaches a terminal. */
export const HOSTILE = {
  osc52: '\u001b]52;c;ZWNobyBwd25lZA==\u0007',
  clear: '\u001b[2J\u001b[H',
  title: '\u001b]0;pwned\u0007',
  bidi: 'safe\u202etxt.exe',
  zeroWidth: 'a\u200db\u200bc\ufeff',
  c1: '\u009b31m',
  backspace: 'rm -rf /\b\b\b\b\b\b\b\bls      ',
  carriage: 'harmless\rrm -rf ~',
} as const;
