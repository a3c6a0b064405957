import { describe, expect, it } from 'vitest';
import { setCommandWords } from './approval.js';
import { AlwaysAnswers, alwaysScope, alwaysScopeFor } from './always.js';
import { splitCommand } from '../native/split-command.js';
import type { ApprovalRequest } from './request.js';

/** A request as the gate makes it. */
function requestFor(toolName: string, input: unknown, argv?: string[]): Pick<ApprovalRequest, 'toolName' | 'input' | 'argv'> {
  return { toolName, input, ...(argv ? { argv } : {}) };
}

/** A command tool as the shell toolset declares one: its calls run `input.command`. */
const shell = setCommandWords({}, (input) => splitCommand((input as { command: string }).command));

describe('AlwaysAnswers', () => {
  it('holds the scopes the core made and asks the core whether one covers a call', () => {
    const answers = new AlwaysAnswers();
    expect(answers.covers(shell, 'shell', { command: 'rm -rf build' })).toBe(false);
    answers.add([alwaysScopeFor('shell', { command: 'rm -rf build' }, ['rm', '-rf', 'build'])]);
    // Exactly the call: the same input, keys in any order; never a neighbour.
    expect(answers.covers(shell, 'shell', { command: 'rm -rf build' })).toBe(true);
    expect(answers.covers(shell, 'shell', { command: 'rm -rf src' })).toBe(false);
    expect(answers.covers(shell, 'other', { command: 'rm -rf build' })).toBe(false);
  });

  it('a prefix scope covers commands word by word, only for command tools', () => {
    const request = requestFor('shell', { command: 'rm -rf build' }, ['rm', '-rf', 'build']);
    const answers = new AlwaysAnswers([alwaysScope(request, { prefix: 'rm -rf' })]);
    expect(answers.covers(shell, 'shell', { command: 'rm -rf src' })).toBe(true);
    expect(answers.covers(shell, 'shell', { command: 'rm -r src' })).toBe(false);
    expect(answers.covers(shell, 'shell', { command: 'rmdir src' })).toBe(false);
    expect(() => alwaysScope(request, { prefix: 'git' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => alwaysScope(requestFor('read', { path: 'a' }), { prefix: 'cat' })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('keeps each scope once and hands out a copy', () => {
    const scope = alwaysScope(requestFor('read', { path: 'a' }), 'tool');
    const answers = new AlwaysAnswers([scope, scope]);
    answers.add([scope]);
    expect(answers.scopes).toEqual([scope]);
    answers.scopes.pop();
    expect(answers.scopes).toHaveLength(1);
    expect(answers.covers(undefined, 'read', { path: 'anything' })).toBe(true);
  });

  it('an input the core cannot read is not covered', () => {
    const answers = new AlwaysAnswers([alwaysScope(requestFor('read', { path: 'a' }), 'tool')]);
    let deep: unknown = 'x';
    for (let depth = 0; depth < 10_000; depth++) deep = [deep];
    expect(answers.covers(undefined, 'read', deep)).toBe(false);
  });
});
