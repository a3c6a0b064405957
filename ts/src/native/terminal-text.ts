/**
 * Text for the operator's terminal. Whatever toolgate prints that came from a model, a tool, a
 * file or a server may hold escape sequences that drive the terminal (OSC 52 writes the
 * clipboard, `ESC [2J` clears the screen, `OSC 0` sets the window title), carriage returns and
 * backspaces that overwrite what was shown, or bidirectional and zero-width characters that
 * reorder or hide text. Every CLI command routes such text through this module before printing
 * it: those characters are shown escaped (`\x1b`, `\r`, `\u202e`), never sent raw.
 *
 * Escaped: C0 controls (line feeds and tabs are kept where `layout` says so), DEL, C1
 * controls, format characters (bidirectional controls, zero-width characters, the byte order
 * mark, tags: Unicode category Cf) and the line and paragraph separators. A literal backslash
 * is left as it is: the text is for reading, not for parsing back.
 *
 * JSON output (`--json`) stays exact: `terminalJson` only spells such characters as the JSON
 * escapes `\u001b`, `\u202e`, which read back as the same text.
 */

/** Characters that must not reach a terminal raw (line feed and tab are decided by the caller). */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** Escapes one character: `\x1b` for controls up to U+00FF, `\u202e` or `\u{e0041}` above. */
function escapeChar(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (char === '\r') return '\\r';
  if (char === '\n') return '\\n';
  if (char === '\t') return '\\t';
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`;
  return `\\u{${code.toString(16)}}`;
}

/**
 * `text` safe to print on a terminal. `layout: true` keeps line feeds and tabs (a model's
 * answer, a multi-line report); otherwise they are escaped too, so the text stays on one line
 * (a name, a message inside a progress line) and cannot fake a line of toolgate's own.
 */
export function terminalText(text: string, options: { layout?: boolean } = {}): string {
  const layout = options.layout ?? false;
  return text.replace(UNSAFE, (char) => (layout && (char === '\n' || char === '\t') ? char : escapeChar(char)));
}

/** `value` as a one-line safe string (JSON text for anything but a string). */
export function terminalLine(value: unknown): string {
  return terminalText(typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)));
}

/**
 * `value` as indented JSON safe to print: `JSON.stringify` escapes C0 controls itself; the
 * characters it leaves raw (DEL, C1, format characters, line separators) are written as JSON
 * escapes, which parse back to the same value.
 */
export function terminalJson(value: unknown): string {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return text.replace(UNSAFE, (char) => {
    if (char === '\n') return char;
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`;
    // Outside the BMP: the two UTF-16 halves, as JSON spells them.
    return String.fromCodePoint(code)
      .split('')
      .map((half) => `\\u${half.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join('');
  });
}
