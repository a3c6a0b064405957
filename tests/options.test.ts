/**
 * Every options object a caller passes is read by the core, strictly: a misspelled key at any
 * depth is refused with its path and the accepted keys, never silently ignored (issue 11).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  checkApprovalConfig,
  cliExecuteTool,
  codeAgentTools,
  createCustomTool,
  exec,
  executableTool,
  executableTools,
  ExecutableToolRegistry,
  explainCommand,
  FileTools,
  filesystemToolset,
  loadCustomTools,
  loadWorker,
  loadWorkerSpec,
  named,
  resolveModel,
  runWorker,
  shellToolset,
  workerTools,
  wrapWithDefaultApproval,
} from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

const FIXTURE = join(import.meta.dirname, 'fixtures/tools-modules/format1.ts');

let dir: string;
beforeEach(() => {
  dir = tempDir();
  writeFileSync(join(dir, 'w.yaml'), 'name: w\n');
});

/** What a call that should be refused threw or rejected with. */
async function refusal(call: () => unknown): Promise<{ code?: string; message?: string }> {
  try {
    await call();
  } catch (error) {
    return error as { code?: string; message?: string };
  }
  throw new Error('the call was not refused');
}

async function expectUnknown(call: () => unknown, path: string, code = 'CONFIG_INVALID') {
  const error = await refusal(call);
  expect(error.code, error.message).toBe(code);
  // A function may say which block it read first (`approval for tool 'probe': unknown option …`).
  expect(error.message).toMatch(new RegExp(`(^|: )unknown option '${path.replace(/[.[\]]/g, '\\$&')}', expected one of '`));
}

const probe = () => named('probe', tool({ description: 'probe', inputSchema: z.object({}), execute: async () => 'ok' }));

// Each case: the function, a misspelled key at the top, and (where the options nest) one below.
const cases: [string, (options: never) => unknown, unknown, string, unknown?, string?][] = [
  ['cliExecuteTool', (o) => cliExecuteTool(o), { allowedBinaries: ['ls'], timeout: 5 }, 'timeout', { allowedBinaries: ['ls'], guardrails: { deny_commands: [] } }, 'guardrails.deny_commands'],
  ['shellToolset', (o) => shellToolset(o), { rule: [] }, 'rule', { rules: [{ pattern: 'git', aproval: 'ask' }] }, 'rules[0].aproval'],
  ['explainCommand', (o) => explainCommand(o, 'ls'), { defualt: 'ask' }, 'defualt', { approval: { tools: {}, defaults: 'ask' } }, 'approval.defaults'],
  ['filesystemToolset', (o) => filesystemToolset(o), { readonly: true }, 'readonly', { approval: { tool: {} } }, 'approval.tool'],
  ['codeAgentTools', (o) => codeAgentTools(o), { groups: 'read' }, 'groups', { approval: { Tools: {} } }, 'approval.Tools'],
  ['createCustomTool', (o) => createCustomTool(o), { directory: 'x' }, 'directory', { approval: { default: 'ask', tool: {} } }, 'approval.tool'],
  ['executableTools', (o) => executableTools(o), { dir: [] }, 'dir', { approval: { defualt: 'ask' } }, 'approval.defualt'],
  ['ExecutableToolRegistry', (o) => new ExecutableToolRegistry(o), { toolTimeouts: {} }, 'toolTimeouts'],
  ['loadCustomTools', (o) => loadCustomTools(FIXTURE, o), { tool: ['add'] }, 'tool', { approval: { deafult: 'ask' } }, 'approval.deafult'],
  ['loadWorker', (o) => loadWorker(join(dir, 'w.yaml'), o), { work_dir: '/tmp' }, 'work_dir'],
  ['loadWorkerSpec', (o) => loadWorkerSpec(join(dir, 'w.yaml'), o), { readOnly: true }, 'readOnly'],
  ['workerTools', (o) => workerTools([join(dir, 'w.yaml')], o), { workdir: '/tmp' }, 'workdir', { approval: { tools: {}, x: 1 } }, 'approval.x'],
  ['runWorker', (o) => runWorker({ name: 'w', tools: [] }, 'go', o), { max_steps: 3 }, 'max_steps'],
  ['resolveModel', (o) => resolveModel('openai:gpt-4o-mini', o), { baseURL: 'http://127.0.0.1' }, 'baseURL'],
  ['wrapWithDefaultApproval', (o) => wrapWithDefaultApproval(probe(), o), { defaults: 'ask' }, 'defaults'],
  ['checkApprovalConfig', (o) => checkApprovalConfig(o, 'here'), { tool: {} }, 'tool'],
];

describe('strict options', () => {
  it.each(cases)('%s refuses a misspelled key at the top and one level down', async (_name, call, top, topPath, nested, nestedPath) => {
    if (_name === 'checkApprovalConfig') {
      const error = await refusal(() => call(top as never));
      expect(error.message).toBe(`here: unknown option '${topPath}', expected one of 'default', 'tools'`);
    } else {
      await expectUnknown(() => call(top as never), topPath);
    }
    if (nested !== undefined && nestedPath) await expectUnknown(() => call(nested as never), nestedPath);
  });

  it('gives the documented message for a guardrail in snake_case (it used to turn the guardrail off)', () => {
    expect(() => cliExecuteTool({ allowedBinaries: ['ls'], guardrails: { deny_commands: [{ pattern: 'x' }] } } as never)).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: "unknown option 'guardrails.deny_commands', expected one of 'denyCommands', 'denyOutput'",
      }),
    );
  });

  it('refuses misspelled per-call arguments with INVALID_INPUT', async () => {
    await expectUnknown(() => exec({ command: 'true', cwd: dir, timeout: 5 } as never), 'timeout', 'INVALID_INPUT');
    const files = new FileTools(dir);
    await expectUnknown(() => files.read({ path: 'x', lines: 3 } as never), 'lines', 'INVALID_INPUT');
    await expectUnknown(() => files.grep({ pattern: 'x', ignore_case: true } as never), 'ignore_case', 'INVALID_INPUT');
    await expectUnknown(() => files.glob({ pattern: '*', max: 3 } as never), 'max', 'INVALID_INPUT');
    await expectUnknown(() => files.tree({ depth: 3 } as never), 'depth', 'INVALID_INPUT');
    await expectUnknown(() => files.edit({ path: 'x', oldText: 'a', newText: 'b', all: true } as never), 'all', 'INVALID_INPUT');
    await expectUnknown(() => files.patch([{ action: 'add', path: 'x', contents: '' }] as never), '[0].contents', 'INVALID_INPUT');
    const registry = new ExecutableToolRegistry({ workDir: dir, dirs: [] });
    await expectUnknown(() => registry.refresh({ forced: true } as never), 'forced');
    await expectUnknown(() => registry.run('x', {}, { signals: undefined, abort: 1 } as never), 'abort');
  });

  it('refuses an executables approval entry that names no discovered tool', async () => {
    const tools = join(dir, 'tools');
    await expect(executableTools({ workDir: dir, dirs: [tools], approval: { tools: { wether: 'blocked' } } })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining("'wether'"),
    });
    // One tool gated on its own may share a block that names others.
    const registry = new ExecutableToolRegistry({ workDir: dir, dirs: [tools] });
    expect(() =>
      executableTool(registry, { name: 'x', description: 'x', inputSchema: { type: 'object' }, format: 'protocol', source: '', program: '', directory: '' }, { tools: { other: 'ask' } }),
    ).not.toThrow();
  });

  it('takes JavaScript-only values (functions, signals, models) where they belong', async () => {
    const model = scriptedModel([{ text: 'done' }]);
    const result = await runWorker({ name: 'w', tools: [] }, 'go', {
      model,
      onApproval: () => 'approve',
      onEvent: () => undefined,
      signal: new AbortController().signal,
      maxSteps: 2,
    });
    expect(result.text).toBe('done');
    await expect(runWorker({ name: 'w', tools: [] }, 'go', { model, maxSteps: 0 })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining("option 'maxSteps' is 0"),
    });
  });
});

describe('workDir everywhere', () => {
  let warnings: string[];
  beforeEach(() => {
    warnings = [];
    vi.spyOn(process, 'emitWarning').mockImplementation((warning: string | Error) => {
      warnings.push(String(warning));
    });
  });
  afterEach(() => vi.restoreAllMocks());

  it('shellToolset({ workDir }) runs commands there', async () => {
    writeFileSync(join(dir, 'here.txt'), 'x');
    const shell = shellToolset({ workDir: dir, default: 'preApproved' });
    const output = await shell.execute?.({ command: 'ls' }, { toolCallId: 'c', messages: [] });
    expect(output).toMatchObject({ exitCode: 0, stdout: expect.stringContaining('here.txt') });
    expect(shell.description).toContain(dir);
    expect(warnings).toEqual([]);
  });

  it('keeps the old names working for one release, with a deprecation warning', async () => {
    writeFileSync(join(dir, 'old.txt'), 'x');
    const shell = shellToolset({ cwd: dir, default: 'preApproved' });
    const output = await shell.execute?.({ command: 'ls' }, { toolCallId: 'c', messages: [] });
    expect(output).toMatchObject({ stdout: expect.stringContaining('old.txt') });
    const files = filesystemToolset({ root: dir });
    expect(files.map((t) => t.name)).toContain('read_file');
    expect(warnings.join('\n')).toContain('shellToolset({ cwd }) is deprecated');
    expect(warnings.join('\n')).toContain('filesystemToolset({ root }) is deprecated');
    expect(() => shellToolset({ cwd: dir, workDir: join(dir, 'other') })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});
