import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolgateError } from '../../ts/src/index.js';
import { tempDir } from './fs.js';

/** The options the AI SDK passes to `execute`. */
export const CALL = { toolCallId: 'call-1', messages: [] };

/**
 * A work directory next to an `outside` directory holding a secret, with the usual escape
 * hatches already in place: a symlink out (`escape`), a dangling symlink out (`dangling`), a
 * symlink to bash (`innocent`), and a sibling sharing the work directory's name as a prefix.
 */
export function commandFixture() {
  const base = tempDir('toolgate-command-');
  const work = join(base, 'work');
  const outside = join(base, 'outside');
  mkdirSync(join(work, 'src'), { recursive: true });
  mkdirSync(outside);
  mkdirSync(`${work}2`);
  writeFileSync(join(work, 'src', 'main.rs'), 'fn main() {}\n');
  writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET\n');
  symlinkSync(outside, join(work, 'escape'));
  symlinkSync(join(outside, 'created-through-dangling-link'), join(work, 'dangling'));
  symlinkSync('/bin/bash', join(work, 'innocent'));
  return { base, work, outside, sibling: `${work}2` };
}

/** The error a call threw, or a failure when it did not throw. */
export async function refusalOf(call: () => unknown): Promise<ToolgateError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof ToolgateError) return error;
    throw error;
  }
  throw new Error('expected the call to be refused, but it ran');
}
