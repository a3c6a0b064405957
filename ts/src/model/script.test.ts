import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolgateError } from '../native/errors.js';
import { checkScript, jsonErrorOffset, MAX_SCRIPT_BYTES, MAX_SCRIPT_CALLS_PER_TURN, MAX_SCRIPT_INPUT_DEPTH, MAX_SCRIPT_TURNS, parseScript, readScriptFile } from './script.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolgate-script-'));
  dirs.push(dir);
  return dir;
}

/** The error `run` throws, which must be a ToolgateError. */
function errorOf(run: () => unknown): ToolgateError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolgateError);
    return error as ToolgateError;
  }
  throw new Error('expected an error');
}

describe('checkScript', () => {
  it('accepts { turns } and a bare list of turns, with text, calls, both and expectations', () => {
    const turns = [
      { toolCalls: [{ toolName: 'add', input: { a: 1 } }, { toolName: 'now' }], expect: { userMessage: 'sum' } },
      { text: 'Here it is.', toolCalls: [{ toolName: 'task_completion', input: { result: '1' } }], expect: { toolResult: '1' } },
    ];
    const fromObject = checkScript({ description: 'demo', turns }, 'demo.json');
    expect(fromObject.description).toBe('demo');
    expect(fromObject.turns).toEqual(turns);
    expect(checkScript(turns, 'inline').turns).toEqual(turns);
    // An input left out stays out (the model sends {}).
    expect(fromObject.turns[0]!.toolCalls![1]).toEqual({ toolName: 'now' });
  });

  it.each([
    ['a string', 'hello', '', 'a script is an object'],
    ['no turns key', { steps: [] }, 'demo.json: steps', "unknown key 'steps'; accepted keys are $schema, description, turns"],
    ['turns missing', { description: 'x' }, 'demo.json:', "'turns' is missing"],
    ['turns not a list', { turns: { text: 'a' } }, 'demo.json: turns:', "'turns' must be a list, not an object"],
    ['no turns', { turns: [] }, 'demo.json: turns:', 'the script has no turns'],
    ['a turn that is a string', { turns: ['hi'] }, 'turns[0]:', 'a turn is an object'],
    ['an empty turn', { turns: [{ text: 'a' }, {}] }, 'turns[1]:', "neither non-empty 'text' nor 'toolCalls'"],
    ['an empty text alone', { turns: [{ text: '' }] }, 'turns[0]:', "neither non-empty 'text' nor 'toolCalls'"],
    ['a misspelt turn key', { turns: [{ tool_calls: [] }] }, 'turns[0].tool_calls:', 'accepted keys are text, toolCalls, expect'],
    ['text not a string', { turns: [{ text: 42 }] }, 'turns[0].text:', "'text' must be a string, not a number"],
    ['toolCalls not a list', { turns: [{ toolCalls: { toolName: 'a' } }] }, 'turns[0].toolCalls:', 'must be a list of calls'],
    ['toolCalls empty', { turns: [{ toolCalls: [] }] }, 'turns[0].toolCalls:', "'toolCalls' is empty"],
    ['a call without toolName', { turns: [{ toolCalls: [{ input: {} }] }] }, 'turns[0].toolCalls[0]:', "'toolName' is missing"],
    ['a call with a misspelt key', { turns: [{ toolCalls: [{ toolName: 'a', args: {} }] }] }, 'turns[0].toolCalls[0].args:', 'accepted keys are toolName, input'],
    ['an empty toolName', { turns: [{ toolCalls: [{ toolName: '' }] }] }, 'turns[0].toolCalls[0].toolName:', '1 to 256 characters'],
    ['a toolName that is a number', { turns: [{ toolCalls: [{ toolName: 7 }] }] }, 'turns[0].toolCalls[0].toolName:', 'must be a string, not a number'],
    ['a call that is a list', { turns: [{ toolCalls: [['a']] }] }, 'turns[0].toolCalls[0]:', 'a tool call is an object'],
    ['expect not an object', { turns: [{ text: 'a', expect: 'x' }] }, 'turns[0].expect:', "'expect' is an object"],
    ['an unknown expectation', { turns: [{ text: 'a', expect: { output: 'x' } }] }, 'turns[0].expect.output:', 'accepted keys are toolResult, userMessage'],
    ['an expectation not a string', { turns: [{ text: 'a', expect: { toolResult: 3 } }] }, 'turns[0].expect.toolResult:', 'must be a string'],
  ])('refuses %s with CONFIG_INVALID naming the place', (_name, script, place, problem) => {
    const error = errorOf(() => checkScript(script, 'demo.json'));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('scripted model script demo.json');
    expect(error.message).toContain(place);
    expect(error.message).toContain(problem);
    expect(error.message).toContain('(format: toolgate/docs/scripted-model.md)');
  });

  it('refuses an input nested too deep, or that is not JSON data, before anything serialises it', () => {
    let deep: unknown = 'leaf';
    for (let level = 0; level < 1_000_000; level++) deep = [deep];
    const tooDeep = errorOf(() => checkScript([{ toolCalls: [{ toolName: 'a', input: deep }] }], 'deep.json'));
    expect(tooDeep.message).toContain(`deep.json: turns[0].toolCalls[0].input: the input is nested more than ${MAX_SCRIPT_INPUT_DEPTH} levels deep`);
    // From a file too: JSON.parse reads it, the check refuses it.
    const text = `{"turns": [{"toolCalls": [{"toolName": "a", "input": ${'['.repeat(100_000)}${']'.repeat(100_000)}}]}]}`;
    expect(errorOf(() => parseScript(text, 'deep.json')).message).toContain('nested more than');
    let edge: unknown = {};
    for (let level = 1; level < MAX_SCRIPT_INPUT_DEPTH; level++) edge = { next: edge };
    expect(checkScript([{ toolCalls: [{ toolName: 'a', input: edge }] }], 'edge').turns).toHaveLength(1);
    expect(() => checkScript([{ toolCalls: [{ toolName: 'a', input: { next: edge } }] }], 'edge')).toThrow('nested more than');

    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(errorOf(() => checkScript([{ toolCalls: [{ toolName: 'a', input: cycle }] }], 'x')).message).toContain('cannot be written as JSON (Converting circular structure');
    expect(errorOf(() => checkScript([{ toolCalls: [{ toolName: 'a', input: { n: 1n } }] }], 'x')).message).toContain('cannot be written as JSON');
    expect(errorOf(() => checkScript([{ toolCalls: [{ toolName: 'a', input: () => 1 }] }], 'x')).message).toContain('the input is function, not JSON data');
    // Shared (not cyclic) objects are fine.
    const shared = { a: 1 };
    expect(checkScript([{ toolCalls: [{ toolName: 'a', input: { x: shared, y: shared } }] }], 'x').turns).toHaveLength(1);
  });

  it('refuses more turns and more calls per turn than the limits', () => {
    const turns = Array.from({ length: MAX_SCRIPT_TURNS + 1 }, () => ({ text: 'a' }));
    expect(errorOf(() => checkScript({ turns }, 'long.json')).message).toContain(`at most ${MAX_SCRIPT_TURNS}`);
    const toolCalls = Array.from({ length: MAX_SCRIPT_CALLS_PER_TURN + 1 }, () => ({ toolName: 'a' }));
    const error = errorOf(() => checkScript({ turns: [{ toolCalls }] }, 'wide.json'));
    expect(error.message).toContain('turns[0].toolCalls');
    expect(error.message).toContain(`at most ${MAX_SCRIPT_CALLS_PER_TURN}`);
  });
});

describe('parseScript and readScriptFile', () => {
  it('names the line and column of a JSON syntax error', () => {
    const error = errorOf(() => parseScript('{\n  "turns": [\n    { "text": "a" },\n  ]\n}\n', 'bad.json'));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('bad.json: 4:3: not valid JSON: unexpected "]"; fix the JSON syntax there');
    expect(errorOf(() => parseScript('{"turns": [', 'cut.json')).message).toContain('cut.json: 1:12: not valid JSON: the text ends too early');
    expect(errorOf(() => parseScript('{"turns": [{"text": "a\nb"}]}', 'ctl.json')).message).toContain('ctl.json: 1:23: not valid JSON: unexpected "\\n"');
    // A byte order mark is skipped.
    expect(parseScript('\ufeff{"turns": [{"text": "a"}]}', 'bom.json').turns).toEqual([{ text: 'a' }]);
  });

  it('finds the first wrong character exactly where JSON.parse fails, at any depth', () => {
    const cases: [string, number][] = [
      ['', 0],
      ['   ', 3],
      ['{', 1],
      ['{"a" 1}', 5],
      ['{"a": 1,}', 8],
      ['{a: 1}', 1],
      ['[1 2]', 3],
      ['[1,]', 3],
      ['[01]', 2],
      ['[-]', 1],
      ['[1.]', 2],
      ['"\\x"', 1],
      ['"\\u12G4"', 1],
      ['tru', 0],
      ['{} {}', 3],
      ["{'a': 1}", 1],
      ['[1]]', 3],
    ];
    for (const [text, offset] of cases) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(jsonErrorOffset(text), text).toBe(offset);
    }
    for (const valid of ['{}', '[]', ' [ ] ', '{"a": [1, -2.5e+3, true, false, null, "\\u00e9\\n"], "b": {}}', '"x"', '0', '{"a":{"b":[[]]}}']) {
      expect(jsonErrorOffset(valid), valid).toBe(-1);
    }
    // Deep nesting does not exhaust the stack.
    expect(jsonErrorOffset('['.repeat(1_000_000))).toBe(1_000_000);
    expect(jsonErrorOffset(`${'['.repeat(100_000)}1${']'.repeat(100_000)}`)).toBe(-1);
  });

  it('agrees with JSON.parse on every one-character change of a script', () => {
    const base = JSON.stringify({ turns: [{ text: 'a "b"\n', toolCalls: [{ toolName: 'x', input: { n: -1.5e2, ok: [true, null] } }] }] });
    const replacements = ['', '{', '}', '[', ']', ',', ':', '"', '\\', 'x', '1', ' ', '\n', '-', 'e'];
    for (let at = 0; at < base.length; at++) {
      for (const replacement of replacements) {
        const text = base.slice(0, at) + replacement + base.slice(at + 1);
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        expect(jsonErrorOffset(text) === -1, text).toBe(parses);
      }
    }
  });

  it('reads a file, and refuses a missing file, a directory, a FIFO and a file over the size limit', () => {
    const dir = scratch();
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ turns: [{ text: 'hi' }] }));
    expect(readScriptFile(good).turns).toEqual([{ text: 'hi' }]);

    const missing = errorOf(() => readScriptFile(join(dir, 'nope.json')));
    expect(missing.code).toBe('FILE_NOT_FOUND');
    expect(missing.message).toContain('nope.json does not exist');

    expect(errorOf(() => readScriptFile(dir)).message).toContain('is not a regular file');

    const fifo = join(dir, 'pipe.json');
    execFileSync('mkfifo', [fifo]);
    // Opening a FIFO must not wait for a writer.
    expect(errorOf(() => readScriptFile(fifo)).message).toContain('is not a regular file');

    const big = join(dir, 'big.json');
    writeFileSync(big, `{"turns": [{"text": "${'a'.repeat(MAX_SCRIPT_BYTES)}"}]}`);
    const error = errorOf(() => readScriptFile(big));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(`big.json: the file is larger than ${MAX_SCRIPT_BYTES} bytes`);

    // Exactly at the limit is still read (and then checked as JSON).
    const edge = join(dir, 'edge.json');
    const frame = '{"turns": [{"text": ""}]}';
    writeFileSync(edge, `{"turns": [{"text": "${'a'.repeat(MAX_SCRIPT_BYTES - frame.length)}"}]}`);
    expect(readScriptFile(edge).turns[0]!.text).toHaveLength(MAX_SCRIPT_BYTES - frame.length);
  });
});
