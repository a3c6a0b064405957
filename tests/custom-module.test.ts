import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { approvalOf, isBlocked } from '../ts/src/approval/approval.js';
import { loadCustomTools } from '../ts/src/tools-module/load-custom-tools.js';
import { ToolgateError } from '../ts/src/native/errors.js';
import type { NamedTool } from '../ts/src/approval/named-tool.js';
import { toToolSet } from '../ts/src/approval/named-tool.js';
import { tempDir } from './helpers/fs.js';

const FIXTURES = resolve(import.meta.dirname, 'fixtures/tools-modules');
const fixture = (name: string) => join(FIXTURES, name);
const callOptions = { toolCallId: 'call-1', messages: [] };

function byName(tools: readonly NamedTool[], name: string): NamedTool {
  const found = tools.find((tool) => tool.name === name);
  if (!found) throw new Error(`no tool ${name} among ${tools.map((tool) => tool.name).join(', ')}`);
  return found;
}

async function run(tool: NamedTool, input: unknown): Promise<unknown> {
  if (!tool.execute) throw new Error(`tool ${tool.name} has no execute`);
  return await tool.execute(input, callOptions);
}

/** The error `promise` rejects with; fails the test when it resolves. */
async function failure(promise: Promise<unknown>): Promise<ToolgateError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(ToolgateError);
  return outcome.error as ToolgateError;
}

describe('format 1: a function plus a zod schema', () => {
  it('exposes every function that has a schema, sorted by name, and nothing else', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'));
    expect(tools.map((tool) => tool.name)).toEqual(['add', 'divide', 'greet', 'repeatWords', 'reverse', 'undocumented']);
  });

  it('runs sync and async functions, including one exported under another name', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'));
    expect(await run(byName(tools, 'add'), { a: 2, b: 3 })).toBe(5);
    expect(await run(byName(tools, 'greet'), { name: 'Ada' })).toBe('Hello, Ada!');
    expect(await run(byName(tools, 'reverse'), { text: 'abc' })).toBe('cba');
    expect(await run(byName(tools, 'undocumented'), { text: 'four' })).toEqual({ length: 4 });
  });

  it('passes the input object as the only argument', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'), { tools: ['repeatWords'] });
    expect(await run(byName(tools, 'repeatWords'), { word: 'go', times: 3 })).toEqual({ words: 'go go go', argumentCount: 1 });
  });

  it('lets an error thrown by the function propagate unchanged', async () => {
    const divide = byName(await loadCustomTools(fixture('format1.ts')), 'divide');
    expect(await run(divide, { a: 6, b: 3 })).toBe(2);
    await expect(run(divide, { a: 1, b: 0 })).rejects.toThrow(new Error('division by zero'));
  });

  it('takes the description from the JSDoc above the function, without its tags', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'));
    expect(byName(tools, 'add').description).toBe('Adds two numbers and returns their sum.\n\nUse it for exact integer arithmetic.');
    expect(byName(tools, 'greet').description).toBe('Greets someone, after a short pause.');
    expect(byName(tools, 'divide').description).toBe('Divides a by b; refuses to divide by zero.');
    // Exported as `reverse`, declared (and documented) as `reverseText`.
    expect(byName(tools, 'reverse').description).toBe(
      'Reverses a string.\nThe slash in "a/b" and this `/*` are not the end of anything.',
    );
  });

  it('falls back to "Custom tool: <name>" without a JSDoc comment', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'));
    expect(byName(tools, 'undocumented').description).toBe('Custom tool: undocumented');
  });

  it('uses the exported zod schema as the input schema', async () => {
    const [add] = await loadCustomTools(fixture('format1.ts'), { tools: ['add'] });
    const schema = add?.inputSchema as { safeParse: (value: unknown) => { success: boolean } };
    expect(schema.safeParse({ a: 1, b: 2 }).success).toBe(true);
    expect(schema.safeParse({ a: 1 }).success).toBe(false);
  });

  it('loads TypeScript that imports a sibling .ts file and uses top-level await', async () => {
    const tools = await loadCustomTools(fixture('imports-local.ts'));
    expect(tools.map((tool) => [tool.name, tool.description])).toEqual([['fib', 'Returns the nth Fibonacci number.']]);
    expect(await run(byName(tools, 'fib'), { n: 10 })).toBe(55);
  });
});

describe('format 2: tool objects', () => {
  it('loads tool() results and plain objects, with zod or jsonSchema() input schemas', async () => {
    const tools = await loadCustomTools(fixture('format2.ts'));
    expect(tools.map((tool) => tool.name)).toEqual(['delete-everything', 'echo', 'failing', 'get_weather', 'transfer']);
    expect(await run(byName(tools, 'get_weather'), { city: 'Oslo' })).toEqual({ city: 'Oslo', forecast: 'sunny' });
    expect(await run(byName(tools, 'echo'), { text: 'hi' })).toBe('echo: hi');
    expect(await run(byName(tools, 'delete-everything'), {})).toBe('nothing was deleted');
  });

  it('names a tool by its name property and describes it by its description, not its JSDoc', async () => {
    const weather = byName(await loadCustomTools(fixture('format2.ts')), 'get_weather');
    expect(weather.description).toBe('Reports the weather in a city.');
  });

  it('lets an error thrown by execute propagate unchanged', async () => {
    const failing = byName(await loadCustomTools(fixture('format2.ts')), 'failing');
    await expect(run(failing, {})).rejects.toThrow(new Error('the failing tool failed'));
  });

  it('treats one object exported twice (also as default) as one tool', async () => {
    const tools = await loadCustomTools(fixture('format2.ts'), { tools: ['get_weather'] });
    expect(tools).toHaveLength(1);
  });
});

describe('plain JavaScript modules', () => {
  it('loads an ES module (.mjs) with both formats', async () => {
    const tools = await loadCustomTools(fixture('mixed.mjs'));
    expect(tools.map((tool) => [tool.name, tool.description])).toEqual([
      ['multiply', 'Multiplies two numbers.'],
      ['shout', 'Upper-cases a text.'],
    ]);
    expect(await run(byName(tools, 'multiply'), { a: 6, b: 7 })).toBe(42);
    expect(await run(byName(tools, 'shout'), { text: 'hey' })).toBe('HEY');
  });

  it('loads a CommonJS module (.cjs) and its JSDoc', async () => {
    const tools = await loadCustomTools(fixture('commonjs.cjs'));
    expect(tools.map((tool) => [tool.name, tool.description])).toEqual([['countWords', 'Counts the words in a text.']]);
    expect(await run(byName(tools, 'countWords'), { text: ' one two  three ' })).toBe(3);
  });
});

describe('zod 3 and zod 4', () => {
  it('recognises zod 3 schemas in both formats', async () => {
    const tools = await loadCustomTools(fixture('zod3.ts'));
    expect(tools.map((tool) => tool.name)).toEqual(['negate', 'square']);
    expect(await run(byName(tools, 'square'), { n: 7 })).toBe(49);
    expect(await run(byName(tools, 'negate'), { n: 7 })).toBe(-7);
  });

  it('is not fooled by a zod shape, a JSON Schema, a look-alike object or undefined', async () => {
    const error = await failure(loadCustomTools(fixture('bad-schemas.ts')));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(fixture('bad-schemas.ts'));
    expect(error.message).toContain("'shapeSchema' is a plain object of zod schemas (a zod shape), not a zod schema; wrap it in z.object({ ... })");
    expect(error.message).toContain("'jsonSchema' is a plain JSON Schema object; make it a zod schema, or export a tool object whose inputSchema is jsonSchema({ ... }) instead");
    expect(error.message).toContain("'forgedSchema' is a plain object; make it a zod schema such as z.object({ ... })");
    expect(error.message).toContain("'nothingSchema' is undefined; make it a zod schema");
    expect(error.message).not.toContain("'fine");
  });
});

describe('the whitelist', () => {
  it('exposes only the listed tools, in the listed order, once each', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'), { tools: ['greet', 'add', 'greet'] });
    expect(tools.map((tool) => tool.name)).toEqual(['greet', 'add']);
  });

  it('exposes nothing when it is empty', async () => {
    expect(await loadCustomTools(fixture('format1.ts'), { tools: [] })).toEqual([]);
  });

  it('mixes both formats and matches tool objects by their tool name', async () => {
    const tools = await loadCustomTools(fixture('mixed.mjs'), { tools: ['shout'] });
    expect(tools.map((tool) => tool.name)).toEqual(['shout']);
  });

  it('ignores broken exports that are not listed', async () => {
    expect((await loadCustomTools(fixture('bad-tool-objects.ts'), { tools: ['good'] })).map((tool) => tool.name)).toEqual(['good']);
    expect((await loadCustomTools(fixture('bad-schemas.ts'), { tools: ['fine'] })).map((tool) => tool.name)).toEqual(['fine']);
  });

  it('refuses a name the module does not export, listing the available tools and exports', async () => {
    const error = await failure(loadCustomTools(fixture('format1.ts'), { tools: ['add', 'substract'] }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toBe(
      `tools module ${fixture('format1.ts')}: has no export and no tool named 'substract'\n` +
        'available tools: add, divide, greet, repeatWords, reverse, undocumented; exports: VERSION, add, addSchema, divide, ' +
        'divideSchema, greet, greetSchema, helper, repeatWords, repeatWordsSchema, reverse, reverseSchema, sharedSchema, ' +
        'undocumented, undocumentedSchema',
    );
  });

  it('names the missing schema of a listed function', async () => {
    const error = await failure(loadCustomTools(fixture('format1.ts'), { tools: ['helper'] }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(
      "export 'helper' is a function, but the module has no export 'helperSchema'; add `export const helperSchema = z.object({ ... })`",
    );
    expect(error.message).toContain('available tools: add, divide');
  });

  it('refuses a listed schema: a schema is never a tool', async () => {
    const paired = await failure(loadCustomTools(fixture('format1.ts'), { tools: ['addSchema'] }));
    expect(paired.message).toContain("'addSchema' is the input schema of tool 'add', not a tool; whitelist 'add'");
    const alone = await failure(loadCustomTools(fixture('format1.ts'), { tools: ['sharedSchema'] }));
    expect(alone.message).toContain("export 'sharedSchema' is a zod schema; a schema is never a tool itself: export a function 'shared' that takes it");
  });

  it.each([
    ['VERSION', 'format1.ts', 'a number'],
    ['settings', 'odd-exports.ts', 'a plain object'],
    ['names', 'odd-exports.ts', 'an array'],
    ['Calculator', 'odd-exports.ts', 'a class'],
  ])('refuses listed export %s of the wrong kind', async (name, file, kind) => {
    const error = await failure(loadCustomTools(fixture(file), { tools: [name] }));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(
      `export '${name}' is ${kind}, not a tool; export a function '${name}' with a zod schema '${name}Schema', ` +
        'or a tool object with name, description, inputSchema and execute',
    );
  });

  it('points from the export name of a tool object to its tool name', async () => {
    const error = await failure(loadCustomTools(fixture('format2.ts'), { tools: ['weather'] }));
    expect(error.message).toContain("'weather' is the export of the tool named 'get_weather'; whitelist 'get_weather'");
  });

  it('refuses a whitelist that is not a list of names', async () => {
    const error = await failure(loadCustomTools(fixture('format1.ts'), { tools: 'add' as unknown as string[] }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('must be a list of tool names');
  });
});

describe('malformed tool objects', () => {
  it('reports every problem of every tool object when no whitelist is given', async () => {
    const error = await failure(loadCustomTools(fixture('bad-tool-objects.ts')));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message.split('\n')).toEqual([
      `tools module ${fixture('bad-tool-objects.ts')}:`,
      "  - export 'notRunnable' (a tool object) has an execute that is a string; it must be a function (input, options) => result",
      "  - export 'oddApproval' (a tool object) has a needsApproval that is a string; use true, false or a function",
      "  - export 'plainSchema' (a tool object) has an inputSchema that is a plain JSON Schema object; use a zod schema or jsonSchema({ ... }) from 'ai'",
      "  - export 'spaced' (a tool object) has name \"has spaces\", which is not a valid tool name (letters, digits, _ and -, at most 64 characters)",
      "  - export 'undescribed' (a tool object) has no description; add one: the model reads it to decide when to call the tool",
      "  - export 'unnamed' (a tool object) has no name; add name: 'unnamed'",
    ]);
  });

  it('reports the problem of a listed function whose schema is not zod', async () => {
    const error = await failure(loadCustomTools(fixture('bad-schemas.ts'), { tools: ['fine', 'shape'] }));
    expect(error.message).toBe(
      `tools module ${fixture('bad-schemas.ts')}: 'shapeSchema' is a plain object of zod schemas (a zod shape), not a zod schema; wrap it in z.object({ ... })`,
    );
  });

  it('reports the problem of a listed tool object that has no name', async () => {
    const error = await failure(loadCustomTools(fixture('bad-tool-objects.ts'), { tools: ['unnamed'] }));
    expect(error.message).toBe(`tools module ${fixture('bad-tool-objects.ts')}: export 'unnamed' (a tool object) has no name; add name: 'unnamed'`);
  });

  it('refuses two different tools with the same name', async () => {
    const error = await failure(loadCustomTools(fixture('duplicate-names.ts')));
    expect(error.message).toBe(
      `tools module ${fixture('duplicate-names.ts')}: exports 'first' and 'second' are both tools named 'lookup'; give each tool its own name`,
    );
    expect((await loadCustomTools(fixture('duplicate-names.ts'), { tools: ['other'] })).map((tool) => tool.name)).toEqual(['other']);
  });
});

describe('modules that do not load', () => {
  it('reports a syntax error in TypeScript with file, line, column and the line itself', async () => {
    const path = fixture('broken/syntax-error.ts');
    const error = await failure(loadCustomTools(path));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toBe(
      `syntax error in ${path}:5:14: Unexpected token\n` +
        '  5 |   return a + * b;\n' +
        '    |              ^\n' +
        'fix the syntax error and load the module again',
    );
  });

  it('names the file as given when it is reached through a symlink', async () => {
    const dir = tempDir();
    symlinkSync(fixture('broken/syntax-error.ts'), join(dir, 'tools.ts'));
    const error = await failure(loadCustomTools(join(dir, 'tools.ts')));
    expect(error.message).toMatch(new RegExp(`^syntax error in ${join(dir, 'tools.ts')}:5:14: Unexpected token\n`));
    expect(error.message).not.toContain('imported by');
  });

  it('reports a syntax error in JavaScript with file, line and column', async () => {
    const path = fixture('broken/unfinished.js');
    const error = await failure(loadCustomTools(path));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(`syntax error in ${path}:4:26: Unexpected token, expected ","`);
  });

  it('reports a syntax error in an imported file, naming both files', async () => {
    const error = await failure(loadCustomTools(fixture('broken/imports-broken.ts')));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(
      `syntax error in ${fixture('broken/syntax-error.ts')}:5:14 (imported by tools module ${fixture('broken/imports-broken.ts')})`,
    );
  });

  it('reports a module that throws while it is evaluated, with the thrown message and the place', async () => {
    const path = fixture('broken/throws-on-load.ts');
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await failure(loadCustomTools(path));
      expect(error.code).toBe('MODULE_INVALID');
      expect(error.message).toBe(
        `tools module ${path} threw while loading: TOOLGATE_FIXTURE_SURELY_UNSET_KEY is not set (at ${path}:9:20)`,
      );
    }
  });

  it('reports an import that cannot be found', async () => {
    const path = fixture('broken/missing-dependency.ts');
    const error = await failure(loadCustomTools(path));
    expect(error.code).toBe('MODULE_INVALID');
    expect(error.message).toContain(`tools module ${path} threw while loading: Cannot find module './no-such-helper.js'`);
  });

  it('reports a missing file as FILE_NOT_FOUND with the resolved path', async () => {
    const error = await failure(loadCustomTools('no-such-tools.ts', { baseDir: FIXTURES }));
    expect(error.code).toBe('FILE_NOT_FOUND');
    expect(error.message).toBe(`tools module not found: ${fixture('no-such-tools.ts')} (from 'no-such-tools.ts'); check the path`);
  });

  it('suggests the file when the extension was left out', async () => {
    const error = await failure(loadCustomTools('format1', { baseDir: FIXTURES }));
    expect(error.code).toBe('FILE_NOT_FOUND');
    expect(error.message).toContain(`did you mean ${fixture('format1.ts')}?`);
  });

  it('refuses a directory and a file that is not a module', async () => {
    const directory = await failure(loadCustomTools(FIXTURES));
    expect(directory.code).toBe('MODULE_INVALID');
    expect(directory.message).toBe(`tools module ${FIXTURES} is not a file; give the path of a .ts or .js module`);
    const dir = tempDir();
    writeFileSync(join(dir, 'tools.json'), '{}');
    const json = await failure(loadCustomTools(join(dir, 'tools.json')));
    expect(json.code).toBe('MODULE_INVALID');
    expect(json.message).toContain('has an unsupported extension; use one of .ts .mts .cts .js .mjs .cjs');
  });
});

describe('where a relative path is resolved', () => {
  const cwd = process.cwd();
  afterEach(() => process.chdir(cwd));

  it('against the current directory by default', async () => {
    process.chdir(FIXTURES);
    expect((await loadCustomTools('./mixed.mjs')).map((tool) => tool.name)).toEqual(['multiply', 'shout']);
  });

  it('against baseDir when given, which an absolute path ignores', async () => {
    const elsewhere = tempDir();
    process.chdir(elsewhere);
    expect((await loadCustomTools('mixed.mjs', { baseDir: FIXTURES })).map((tool) => tool.name)).toEqual(['multiply', 'shout']);
    expect((await loadCustomTools(fixture('mixed.mjs'), { baseDir: elsewhere })).map((tool) => tool.name)).toEqual([
      'multiply',
      'shout',
    ]);
    const error = await failure(loadCustomTools('mixed.mjs'));
    expect(error.message).toContain(join(elsewhere, 'mixed.mjs'));
  });
});

describe('approval', () => {
  it('gates every tool: default ask when nothing is configured', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'), { tools: ['add'] });
    expect(approvalOf(byName(tools, 'add'))).toEqual({ decision: 'ask', dynamic: false });
    expect(byName(tools, 'add').needsApproval).toBe(true);
  });

  it('applies the default and per-tool entries to function tools (which have no own needsApproval)', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'), {
      tools: ['add', 'greet', 'divide'],
      approval: { default: 'preApproved', tools: { greet: 'ask', divide: 'blocked' } },
    });
    expect(approvalOf(byName(tools, 'add'))?.decision).toBe('preApproved');
    expect(approvalOf(byName(tools, 'greet'))?.decision).toBe('ask');
    expect(isBlocked(byName(tools, 'divide'))).toBe(true);
    const blocked = await failure(Promise.resolve().then(() => run(byName(tools, 'divide'), { a: 1, b: 1 })));
    expect(blocked.code).toBe('TOOL_BLOCKED');
  });

  it("keeps a tool object's own needsApproval in the strictest-wins rule", async () => {
    const tools = await loadCustomTools(fixture('format2.ts'), {
      tools: ['delete-everything', 'transfer'],
      approval: { default: 'preApproved', tools: { 'delete-everything': 'preApproved' } },
    });
    // Its own `needsApproval: true` outranks the explicit preApproved entry.
    expect(approvalOf(byName(tools, 'delete-everything'))).toEqual({ decision: 'ask', dynamic: false });
    const transfer = byName(tools, 'transfer');
    expect(approvalOf(transfer)).toEqual({ decision: 'preApproved', dynamic: true });
    const gate = transfer.needsApproval as (input: { amount: number }, options: unknown) => Promise<boolean>;
    expect(await gate({ amount: 500 }, callOptions)).toBe(true);
    expect(await gate({ amount: 5 }, callOptions)).toBe(false);
  });

  it('refuses a per-tool entry that names no tool of the module (a typo would leave a tool unblocked)', async () => {
    const error = await failure(loadCustomTools(fixture('format1.ts'), { approval: { tools: { ad: 'blocked' } } }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toBe(
      `tools module ${fixture('format1.ts')}: approval.tools names 'ad', which is not one of its tools; its tools are: add, divide, greet, repeatWords, reverse, undocumented`,
    );
  });

  it('refuses an unknown decision before loading the module', async () => {
    const error = await failure(
      loadCustomTools(fixture('format1.ts'), { approval: { default: 'sometimes' as unknown as 'ask' } }),
    );
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toBe("option 'approval.default' is 'sometimes', expected one of preApproved, ask, blocked");
  });
});

describe('with the AI SDK', () => {
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
  const toolCalls = (...calls: { id: string; name: string; input: unknown }[]) => ({
    content: calls.map(({ id, name, input }) => ({
      type: 'tool-call' as const,
      toolCallId: id,
      toolName: name,
      input: JSON.stringify(input),
    })),
    finishReason: { unified: 'tool-calls' as const, raw: undefined },
    usage,
    warnings: [],
  });
  const text = (value: string) => ({
    content: [{ type: 'text' as const, text: value }],
    finishReason: { unified: 'stop' as const, raw: undefined },
    usage,
    warnings: [],
  });
  const recorded = () => ((globalThis as { toolgateRecordedCalls?: unknown[] }).toolgateRecordedCalls ??= []);

  it('runs a loaded function tool exactly once with the parsed input the model sent', async () => {
    recorded().length = 0;
    const tools = await loadCustomTools(fixture('recording.ts'), { approval: { default: 'preApproved' } });
    const model = new MockLanguageModelV3({
      doGenerate: [toolCalls({ id: 'call-1', name: 'repeat', input: { text: 'hi' } }), text('done')],
    });
    const result = await generateText({ model, tools: toToolSet(tools), prompt: 'repeat hi', stopWhen: stepCountIs(3) });

    // The function ran once, and received the input after zod parsing (the default applied).
    expect(recorded()).toEqual([{ text: 'hi', times: 2 }]);
    expect(result.steps[0]?.toolResults.map((r) => [r.toolName, r.input, r.output])).toEqual([
      ['repeat', { text: 'hi', times: 2 }, 'hi hi'],
    ]);
    expect(result.text).toBe('done');
    // The model was offered the tool with its JSDoc description and the schema as JSON Schema.
    const offered = model.doGenerateCalls[0]?.tools?.[0] as { name: string; description: string; inputSchema: { properties: object } };
    expect(offered.name).toBe('repeat');
    expect(offered.description).toBe('Repeats a text a number of times.');
    expect(Object.keys(offered.inputSchema.properties)).toEqual(['text', 'times']);
  });

  it('does not run a tool that needs approval; the SDK asks instead', async () => {
    recorded().length = 0;
    const tools = await loadCustomTools(fixture('recording.ts'));
    const model = new MockLanguageModelV3({ doGenerate: [toolCalls({ id: 'call-1', name: 'repeat', input: { text: 'hi' } })] });
    const result = await generateText({ model, tools: toToolSet(tools), prompt: 'repeat hi', stopWhen: stepCountIs(3) });
    expect(recorded()).toEqual([]);
    expect(result.content.filter((part) => part.type === 'tool-approval-request')).toHaveLength(1);
  });

  it('runs zod 3, zod 4 and jsonSchema() tools called in one step', async () => {
    const tools = [
      ...(await loadCustomTools(fixture('zod3.ts'), { tools: ['square'], approval: { default: 'preApproved' } })),
      ...(await loadCustomTools(fixture('format2.ts'), { tools: ['get_weather', 'echo'], approval: { default: 'preApproved' } })),
    ];
    const model = new MockLanguageModelV3({
      doGenerate: [
        toolCalls(
          { id: 'a', name: 'square', input: { n: 12 } },
          { id: 'b', name: 'get_weather', input: { city: 'Lima' } },
          { id: 'c', name: 'echo', input: { text: 'ok' } },
        ),
        text('done'),
      ],
    });
    const result = await generateText({ model, tools: toToolSet(tools), prompt: 'go', stopWhen: stepCountIs(3) });
    expect(result.steps[0]?.toolResults.map((r) => [r.toolName, r.output])).toEqual([
      ['square', 144],
      ['get_weather', { city: 'Lima', forecast: 'sunny' }],
      ['echo', 'echo: ok'],
    ]);
  });

  it('reports an error thrown by a tool to the model instead of swallowing it', async () => {
    const tools = await loadCustomTools(fixture('format1.ts'), { tools: ['divide'], approval: { default: 'preApproved' } });
    const model = new MockLanguageModelV3({
      doGenerate: [toolCalls({ id: 'call-1', name: 'divide', input: { a: 1, b: 0 } }), text('sorry')],
    });
    const result = await generateText({ model, tools: toToolSet(tools), prompt: 'divide', stopWhen: stepCountIs(3) });
    const errors = result.steps[0]?.content.filter((part) => part.type === 'tool-error') ?? [];
    expect(errors.map((part) => (part.error as Error).message)).toEqual(['division by zero']);
    const sentBack = JSON.stringify(model.doGenerateCalls[1]?.prompt);
    expect(sentBack).toContain('division by zero');
  });
});

describe('the quickstart example', () => {
  it('loads examples/quickstart/tools.ts with both formats', async () => {
    const tools = await loadCustomTools(resolve(import.meta.dirname, '../examples/quickstart/tools.ts'));
    const fibonacci = byName(tools, 'calculateFibonacci');
    expect(fibonacci.description).toMatch(/Fibonacci/);
    expect(fibonacci.description).not.toContain('@param');
    expect(await run(fibonacci, { n: 10 })).toBe("55");
    expect(await run(fibonacci, { n: 100 })).toBe("354224848179261915075");
    expect(tools.some((tool) => tool.name !== 'calculateFibonacci')).toBe(true);
  });
});

describe('a module written by the user at run time', () => {
  it('loads a fresh TypeScript file with type-only syntax and import.meta', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'nested'));
    writeFileSync(
      join(dir, 'nested/tools.ts'),
      [
        "import { z } from 'zod';",
        'interface Input { values: number[] }',
        'type Output = { max: number };',
        'enum Unit { None = 0 }',
        '/** Finds the largest value. */',
        'export function largest<T extends Input>({ values }: T): Output {',
        '  return { max: Math.max(...values) + Unit.None };',
        '}',
        'export const largestSchema = z.object({ values: z.array(z.number()) });',
        '/** Where this module lives. */',
        'export const whereAmI = () => ({ url: import.meta.url, dirname: import.meta.dirname });',
        'export const whereAmISchema = z.object({});',
      ].join('\n'),
    );
    // The fresh file lives outside the repository: zod must still resolve, so link node_modules.
    symlinkSync(resolve(import.meta.dirname, '../node_modules'), join(dir, 'node_modules'));
    const tools = await loadCustomTools('nested/tools.ts', { baseDir: dir });
    expect(tools.map((tool) => [tool.name, tool.description])).toEqual([
      ['largest', 'Finds the largest value.'],
      ['whereAmI', 'Where this module lives.'],
    ]);
    expect(await run(byName(tools, 'largest'), { values: [3, 9, 4] })).toEqual({ max: 9 });
    expect(await run(byName(tools, 'whereAmI'), {})).toEqual({
      url: pathToFileURL(join(dir, 'nested/tools.ts')).href,
      dirname: join(dir, 'nested'),
    });
  });
});
