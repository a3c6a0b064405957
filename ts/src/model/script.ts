import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { ToolgateError } from '../native/errors.js';

/**
 * The script a scripted model replays (docs/scripted-model.md): a list of turns, one per model
 * call, each with reply text, tool calls or both, and optional checks of what the model received.
 */
export interface ModelScript {
  /** Free text for the reader; not used. */
  description?: string;
  turns: ScriptedTurn[];
}

/** One model call's answer. It has `text`, `toolCalls` or both. */
export interface ScriptedTurn {
  /** The reply text (streamed word by word). */
  text?: string;
  /** The tool calls of the reply, in order. */
  toolCalls?: ScriptedToolCall[];
  /** Checks of what the model received before this turn; a failed check stops the run. */
  expect?: ScriptedExpect;
}

export interface ScriptedToolCall {
  toolName: string;
  /** The call's input (default `{}`). */
  input?: unknown;
}

export interface ScriptedExpect {
  /** A tool result the model received since its previous turn contains this text. */
  toolResult?: string;
  /** A user message the model received since its previous turn (the task, on the first turn) contains this text. */
  userMessage?: string;
}

/** The largest script file read (4 MiB). */
export const MAX_SCRIPT_BYTES = 4 * 1024 * 1024;
/** The most turns a script may have. */
export const MAX_SCRIPT_TURNS = 10_000;
/** The most tool calls one turn may make. */
export const MAX_SCRIPT_CALLS_PER_TURN = 128;
/** The deepest nesting of objects and lists a tool call's input may have. */
export const MAX_SCRIPT_INPUT_DEPTH = 64;
/** The longest tool name accepted. */
const MAX_TOOL_NAME = 256;

const SCRIPT_KEYS = ['$schema', 'description', 'turns'] as const;
const TURN_KEYS = ['text', 'toolCalls', 'expect'] as const;
const CALL_KEYS = ['toolName', 'input'] as const;
const EXPECT_KEYS = ['toolResult', 'userMessage'] as const;

const TURN_EXAMPLE = '{ "text": "…" } or { "toolCalls": [{ "toolName": "…", "input": { … } }] }';

/** A `CONFIG_INVALID` error naming the script, the place in it and the fix. */
function invalid(source: string, place: string, problem: string): ToolgateError {
  const where = place ? `${source}: ${place}` : source;
  return new ToolgateError('CONFIG_INVALID', `scripted model script ${where}: ${problem} (format: toolgate/docs/scripted-model.md)`, { layer: 'config' });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function refuseUnknownKeys(value: Record<string, unknown>, accepted: readonly string[], source: string, place: string): void {
  for (const key of Object.keys(value)) {
    if (!accepted.includes(key)) {
      throw invalid(source, place ? `${place}.${key}` : key, `unknown key '${key}'; accepted keys are ${accepted.join(', ')}`);
    }
  }
}

function checkString(value: unknown, source: string, place: string, what: string): string {
  if (typeof value !== 'string') throw invalid(source, place, `${what} must be a string, not ${kindOf(value)}`);
  return value;
}

/**
 * Refuses an input nested deeper than the limit (serialising it would exhaust the stack), and
 * one that is not JSON data (a script given from code may hold a cycle, a BigInt, a function).
 */
function checkInput(input: unknown, source: string, place: string): void {
  const seen = new Set<object>();
  const stack: [unknown, number][] = [[input, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    if (depth > MAX_SCRIPT_INPUT_DEPTH) {
      throw invalid(source, place, `the input is nested more than ${MAX_SCRIPT_INPUT_DEPTH} levels deep; flatten it`);
    }
    // Each object is walked once: a cycle ends here, and JSON.stringify below reports it.
    if (seen.has(item)) continue;
    seen.add(item);
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(input);
  } catch (error) {
    throw invalid(source, place, `the input cannot be written as JSON (${(error as Error).message.split('\n')[0]}); give plain JSON data`);
  }
  if (json === undefined) throw invalid(source, place, `the input is ${typeof input}, not JSON data; give an object such as { "path": "…" }`);
}

function checkCall(value: unknown, source: string, place: string): ScriptedToolCall {
  if (!isObject(value)) throw invalid(source, place, `a tool call is an object { "toolName": "…", "input": { … } }, not ${kindOf(value)}`);
  refuseUnknownKeys(value, CALL_KEYS, source, place);
  if (value.toolName === undefined) throw invalid(source, place, `'toolName' is missing; name the tool to call`);
  const toolName = checkString(value.toolName, source, `${place}.toolName`, "'toolName'");
  if (toolName === '' || toolName.length > MAX_TOOL_NAME) {
    throw invalid(source, `${place}.toolName`, `'toolName' must have 1 to ${MAX_TOOL_NAME} characters`);
  }
  if (!('input' in value)) return { toolName };
  checkInput(value.input, source, `${place}.input`);
  return { toolName, input: value.input };
}

function checkExpect(value: unknown, source: string, place: string): ScriptedExpect {
  if (!isObject(value)) throw invalid(source, place, `'expect' is an object { "toolResult": "…", "userMessage": "…" }, not ${kindOf(value)}`);
  refuseUnknownKeys(value, EXPECT_KEYS, source, place);
  const expect: ScriptedExpect = {};
  for (const key of EXPECT_KEYS) {
    if (value[key] !== undefined) expect[key] = checkString(value[key], source, `${place}.${key}`, `'${key}'`);
  }
  return expect;
}

function checkTurn(value: unknown, source: string, place: string): ScriptedTurn {
  if (!isObject(value)) throw invalid(source, place, `a turn is an object, ${TURN_EXAMPLE}, not ${kindOf(value)}`);
  refuseUnknownKeys(value, TURN_KEYS, source, place);
  const turn: ScriptedTurn = {};
  if (value.text !== undefined) turn.text = checkString(value.text, source, `${place}.text`, "'text'");
  if (value.toolCalls !== undefined) {
    const calls = value.toolCalls;
    if (!Array.isArray(calls)) throw invalid(source, `${place}.toolCalls`, `'toolCalls' must be a list of calls, not ${kindOf(calls)}`);
    if (calls.length === 0) throw invalid(source, `${place}.toolCalls`, `'toolCalls' is empty; give at least one call or leave the key out`);
    if (calls.length > MAX_SCRIPT_CALLS_PER_TURN) {
      throw invalid(source, `${place}.toolCalls`, `${calls.length} calls in one turn; at most ${MAX_SCRIPT_CALLS_PER_TURN} are allowed`);
    }
    turn.toolCalls = calls.map((call, index) => checkCall(call, source, `${place}.toolCalls[${index}]`));
  }
  if (value.expect !== undefined) turn.expect = checkExpect(value.expect, source, `${place}.expect`);
  // An empty reply would add no assistant message, and the next call would replay this turn.
  if (!turn.toolCalls && !turn.text) throw invalid(source, place, `the turn has neither non-empty 'text' nor 'toolCalls'; write ${TURN_EXAMPLE}`);
  return turn;
}

/**
 * Checks a script (`{ "turns": [...] }`, or the list of turns itself) and returns it typed.
 * Anything malformed is `CONFIG_INVALID` naming `source`, the place (`turns[2].toolCalls[0].toolName`)
 * and the fix.
 */
export function checkScript(value: unknown, source: string): ModelScript {
  let turns: unknown;
  let description: string | undefined;
  if (Array.isArray(value)) {
    turns = value;
  } else if (isObject(value)) {
    refuseUnknownKeys(value, SCRIPT_KEYS, source, '');
    if (value.turns === undefined) throw invalid(source, '', `'turns' is missing; write { "turns": [${TURN_EXAMPLE}, …] }`);
    if (value.description !== undefined) description = checkString(value.description, source, 'description', "'description'");
    turns = value.turns;
  } else {
    throw invalid(source, '', `a script is an object { "turns": [ … ] } (or the list of turns), not ${kindOf(value)}`);
  }
  if (!Array.isArray(turns)) throw invalid(source, 'turns', `'turns' must be a list, not ${kindOf(turns)}`);
  if (turns.length === 0) throw invalid(source, 'turns', `the script has no turns; add at least one, ${TURN_EXAMPLE}`);
  if (turns.length > MAX_SCRIPT_TURNS) throw invalid(source, 'turns', `${turns.length} turns; at most ${MAX_SCRIPT_TURNS} are allowed`);
  const checked = turns.map((turn, index) => checkTurn(turn, source, `turns[${index}]`));
  return description === undefined ? { turns: checked } : { description, turns: checked };
}

/** Line and column (1-based) of a character offset in `text`. */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: before.length - before.lastIndexOf('\n') };
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERALS = ['true', 'false', 'null'] as const;

/**
 * Where JSON `text` stops being valid (the offset of the first wrong character, `text.length`
 * when it ends too early), or -1 when it is valid. JSON.parse says where only in some messages
 * and some Node versions; this scanner is iterative, so no nesting depth can exhaust the stack.
 */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const stack: ('{' | '[')[] = [];
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const readString = (): boolean => {
    if (text[i] !== '"') return false;
    i++;
    while (i < text.length) {
      const code = text.charCodeAt(i);
      if (code === 0x22) {
        i++;
        return true;
      }
      if (code < 0x20) return false;
      if (code === 0x5c) {
        const escape = text[i + 1] ?? '';
        if ('"\\/bfnrt'.includes(escape) && escape !== '') i += 2;
        else if (escape === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else return false;
      } else {
        i++;
      }
    }
    return false;
  };
  // A key and its colon, inside an object.
  const readKey = (): boolean => {
    skipSpace();
    if (!readString()) return false;
    skipSpace();
    if (text[i] !== ':') return false;
    i++;
    return true;
  };
  for (;;) {
    // A value is expected here.
    skipSpace();
    const c = text[i];
    if (c === '{' || c === '[') {
      i++;
      skipSpace();
      if (text[i] === (c === '{' ? '}' : ']')) {
        i++;
      } else {
        stack.push(c);
        if (c === '{' && !readKey()) return i;
        continue;
      }
    } else if (c === '"') {
      if (!readString()) return i;
    } else {
      NUMBER.lastIndex = i;
      const literal = LITERALS.find((word) => text.startsWith(word, i));
      if (literal) i += literal.length;
      else if (NUMBER.test(text)) i = NUMBER.lastIndex;
      else return i;
    }
    // After a value: a comma, the end of its containers, or the end of the text.
    for (;;) {
      skipSpace();
      const top = stack.at(-1);
      if (top === undefined) return i < text.length ? i : -1;
      if (text[i] === ',') {
        i++;
        if (top === '{' && !readKey()) return i;
        break;
      }
      if (text[i] !== (top === '{' ? '}' : ']')) return i;
      stack.pop();
      i++;
    }
  }
}

/** Parses a script's JSON text; a syntax error names the line and column. */
export function parseScript(text: string, source: string): ModelScript {
  let value: unknown;
  // An editor's byte order mark is not JSON; it is skipped.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    value = JSON.parse(text);
  } catch {
    const found = jsonErrorOffset(text);
    const offset = found < 0 ? 0 : found;
    const { line, column } = lineAndColumn(text, offset);
    const problem = offset >= text.length ? 'the text ends too early' : `unexpected ${JSON.stringify(text[offset])}`;
    throw invalid(source, `${line}:${column}`, `not valid JSON: ${problem}; fix the JSON syntax there`);
  }
  return checkScript(value, source);
}

/**
 * Reads and checks a script file: missing is `FILE_NOT_FOUND`, over 4 MiB or malformed is
 * `CONFIG_INVALID`. The file is opened once, without blocking (a FIFO is refused, not waited
 * on), and read no further than the limit.
 */
export function readScriptFile(path: string): ModelScript {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ToolgateError('FILE_NOT_FOUND', `scripted model script ${path} does not exist; give the path of a JSON script (format: toolgate/docs/scripted-model.md)`, {
        layer: 'config',
      });
    }
    throw new ToolgateError('IO_ERROR', `scripted model script ${path} cannot be opened: ${(error as Error).message}`, { layer: 'config' });
  }
  let bytes: Buffer;
  try {
    if (!fstatSync(fd).isFile()) throw invalid(path, '', 'is not a regular file; give the path of a JSON script');
    const buffer = Buffer.alloc(MAX_SCRIPT_BYTES + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > MAX_SCRIPT_BYTES) {
        throw invalid(path, '', `the file is larger than ${MAX_SCRIPT_BYTES} bytes (4 MiB), the most a script may have; shorten its texts or inputs`);
      }
    }
    bytes = buffer.subarray(0, length);
  } catch (error) {
    if (error instanceof ToolgateError) throw error;
    throw new ToolgateError('IO_ERROR', `scripted model script ${path} cannot be read: ${(error as Error).message}`, { layer: 'config' });
  } finally {
    closeSync(fd);
  }
  return parseScript(bytes.toString('utf8'), path);
}
