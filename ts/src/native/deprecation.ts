const warned = new Set<string>();

/** Emits each deprecation note of the core once per process, as a Node `DeprecationWarning`. */
export function warnDeprecated(notes: readonly string[]): void {
  for (const note of notes) {
    if (warned.has(note)) continue;
    warned.add(note);
    process.emitWarning(note, { type: 'DeprecationWarning', code: 'TOOLGATE_DEPRECATED' });
  }
}
