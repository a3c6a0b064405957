// Feeds every export of the native addon (functions, constructors, methods, getters) hostile
// values: huge, empty, NUL-containing and lone-surrogate strings, NaN, negative, infinite and
// 1e300 numbers, deep and cyclic objects, functions, symbols, bigints. Run in a child process
// by tests/napi-fuzz.test.ts: a panic that crossed napi would abort this process, which the
// test sees. Prints one JSON line with what was called. Run with cwd = a scratch directory.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const native = await import(process.argv[2]);
const scratch = process.cwd();

const deep = {};
{
  let level = deep;
  for (let i = 0; i < 5000; i++) level = level.next = {};
}
const cyclic = { name: 'x' };
cyclic.self = cyclic;
const huge = 'a'.repeat(400_000);
const hostile = [
  undefined,
  null,
  '',
  huge,
  'a\0b',
  '\0',
  '\uD800',
  '../../../../etc/passwd',
  '**/'.repeat(20_000),
  '('.repeat(10_000),
  NaN,
  -1,
  -0,
  Infinity,
  -Infinity,
  1e300,
  -1e300,
  2e22,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  0.5,
  4294967296,
  {},
  [],
  [huge],
  deep,
  cyclic,
  { timeoutMs: NaN, maxOutputBytes: 1e300, pattern: huge, path: 'a\0b', offset: -1, limit: Infinity },
  { command: huge, args: [huge], cwd: 'a\0b', env: { A: 'b\0c' }, timeoutMs: 2e22 },
  { pattern: huge, context: 1e300, maxResults: NaN },
  { pattern: huge },
  { pattern: '**/'.repeat(20_000) },
  { pattern: '('.repeat(10_000), path: '.' },
  { path: huge, maxDepth: 1e300 },
  () => 1,
  Symbol('s'),
  10n ** 30n,
  new Uint8Array(3),
  new AbortController().signal,
];

let calls = 0;
let threw = 0;
const pending = [];

function settle(value) {
  if (value && typeof value.then === 'function') {
    pending.push(
      Promise.race([value, new Promise((resolve) => setTimeout(resolve, 20_000).unref())]).catch(() => {
        threw++;
      }),
    );
  }
}

function attempt(call) {
  calls++;
  try {
    settle(call());
  } catch {
    threw++;
  }
}

/** Every argument list: each hostile value alone, in every position after valid leading strings. */
function argumentLists(valid) {
  const lists = [];
  for (const value of hostile) {
    lists.push([value], [value, value, value, value]);
    for (let position = 1; position < 4; position++) {
      lists.push([...valid.slice(0, position), value]);
    }
  }
  return lists;
}

// A worker file and a tool directory, so that valid calls reach deep code.
writeFileSync(join(scratch, 'w.yaml'), 'name: w\ntoolsets:\n  filesystem: {}\n');
mkdirSync(join(scratch, 'tools'), { recursive: true });

const validStrings = [scratch, 'name', 'python', 'x'];
for (const [name, exported] of Object.entries(native)) {
  if (typeof exported !== 'function' || /^[A-Z]/.test(name)) continue;
  if (name === 'constants' || name === 'errorCodes' || name === 'workerJsonSchema') {
    attempt(() => exported());
    continue;
  }
  for (const args of argumentLists(validStrings)) attempt(() => exported(...args));
}

const instances = {
  CliExecutePolicy: () => new native.CliExecutePolicy({ workDir: scratch, allowedBinaries: ['ls'] }),
  ShellPolicy: () => new native.ShellPolicy({ workDir: scratch, default: 'ask' }),
  FileTools: () => new native.FileTools(scratch),
  PathValidator: () => new native.PathValidator(scratch),
  ExecutableToolRegistry: () => new native.ExecutableToolRegistry({ workDir: scratch, dirs: ['tools'], cache: 'off' }),
  ProcessHandle: () => native.prepareProcess({ command: 'true', cwd: scratch }),
  WorkerPlan: () => native.planWorker(join(scratch, 'w.yaml')),
  McpToolsetPlan: () => new native.McpToolsetPlan({ servers: { s: { command: 'true' }, h: { url: 'http://127.0.0.1:1/mcp' } }, workDir: scratch, sandbox: false }),
  McpServerLaunch: () =>
    new native.McpToolsetPlan({ servers: { s: { command: 'true' } }, workDir: scratch, sandbox: false }).launch('s'),
};
for (const [className, make] of Object.entries(instances)) {
  const Class = native[className];
  for (const args of argumentLists([scratch, 'x', 'x'])) {
    if (className !== 'ProcessHandle' && className !== 'WorkerPlan' && className !== 'McpServerLaunch') attempt(() => new Class(...args));
  }
  const instance = await make();
  for (const member of Object.getOwnPropertyNames(Class.prototype)) {
    if (member === 'constructor') continue;
    const descriptor = Object.getOwnPropertyDescriptor(Class.prototype, member);
    if (descriptor?.get) {
      attempt(() => instance[member]);
      continue;
    }
    if (member === 'wait') {
      attempt(() => instance.wait());
      attempt(() => instance.wait());
      continue;
    }
    for (const args of argumentLists(['x', 'x', 'x'])) attempt(() => instance[member](...args));
  }
}

await Promise.all(pending);
process.stdout.write(`${JSON.stringify({ calls, threw })}\n`);
