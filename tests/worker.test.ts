import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runWorker } from '../ts/src/worker/index.js';
import { loadWorker, workerJsonSchema } from '../ts/src/worker/load-worker.js';
import { tempDir } from './helpers/fs.js';
import { scriptedModel } from './helpers/mock-model.js';

const ROOT = join(import.meta.dirname, '..');

// Executable-tool discovery caches descriptions; keep that cache out of the real home.
beforeAll(() => {
  process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'toolgate-cache-'));
});

function workerFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

describe('loadWorker', () => {
  it('builds the quickstart worker with every toolset and its approvals', async () => {
    const worker = await loadWorker(join(ROOT, 'examples/quickstart/worker.yaml'), { workDir: tempDir() });
    expect(worker.name).toBe('quickstart');
    expect(worker.model).toBe('openai:gpt-4o-mini');
    expect(worker.maxSteps).toBe(12);
    expect(Object.keys(worker.tools).sort()).toEqual(
      expect.arrayContaining(['calculateFibonacci', 'convert_temperature', 'custom_tool_word_stats', 'read_file', 'write_file', 'shell']),
    );
    expect(worker.toolApproval.calculateFibonacci).toEqual({ decision: 'preApproved', dynamic: false });
    expect(worker.toolApproval.write_file?.decision).toBe('ask');
    expect(worker.toolApproval.custom_tool_word_stats?.decision).toBe('preApproved');
    expect(worker.toolApproval.custom_tool_today?.decision).toBe('ask');
    expect(worker.toolApproval.shell).toEqual({ decision: 'preApproved', dynamic: true });
    expect(worker.warnings).toEqual([]);
    // One example, one tool: temperatures are tools.ts's convert_temperature only, and no tool
    // is offered twice under two names (an executable named like a tools.ts tool).
    expect(worker.tools).not.toHaveProperty('custom_tool_convert_temperature');
    const capabilities = Object.keys(worker.tools).map((name) => name.replace(/^custom_tool_/, '').toLowerCase().replace(/[^a-z0-9]/g, ''));
    expect(capabilities.filter((name, index) => capabilities.indexOf(name) !== index)).toEqual([]);
  });

  it('loads the golem-forge example unchanged and warns about what it does not act on', async () => {
    const worker = await loadWorker(join(ROOT, 'examples/golem-forge-compat/index.worker'));
    expect(worker.instructions).toContain('note-taking assistant');
    expect(Object.keys(worker.tools)).toEqual(expect.arrayContaining(['read_file', 'write_file', 'calculateFibonacci', 'greeter']));
    expect(worker.toolApproval.greeter?.decision).toBe('ask');
    expect(worker.compatibleModels).toContain('anthropic:claude-*');
    expect(worker.warnings.join('\n')).toContain('sandbox.zones');
  });

  it('loads the later golem-forge keys, finds workers by declared name and honours allow_empty_input', async () => {
    const dir = tempDir();
    const main = workerFile(
      dir,
      'main.worker',
      [
        '---',
        'name: pdf_orchestrator',
        'allow_empty_input: false',
        'locked: true',
        'max_context_tokens: 100000',
        'output_schema_ref: AnalysisResult',
        'attachment_policy: { max_attachments: 1, max_total_bytes: 5000000, allowed_suffixes: [.pdf] }',
        'server_side_tools: [{ name: web_search }]',
        'sandbox:',
        '  approval: { write: false, delete: true }',
        'toolsets:',
        '  filesystem: {}',
        '  workers:',
        '    allowed_workers: [pdf_analyzer]',
        '---',
        'Route PDFs.',
        '',
      ].join('\n'),
    );
    workerFile(dir, 'analyzer.worker', '---\nname: pdf_analyzer\ndescription: Analyzes one PDF\n---\nAnalyze.\n');
    const worker = await loadWorker(main);
    expect(Object.keys(worker.tools)).toEqual(expect.arrayContaining(['pdf_analyzer', 'write_file', 'delete_file']));
    expect(worker.toolApproval.write_file?.decision).toBe('preApproved');
    expect(worker.toolApproval.delete_file?.decision).toBe('ask');
    expect(worker.allowEmptyInput).toBe(false);
    const warnings = worker.warnings.join('\n');
    expect(warnings).not.toContain('attachment_policy');
    for (const key of ['server_side_tools', 'locked', 'max_context_tokens', 'output_schema_ref']) {
      expect(warnings).toContain(key);
    }
    const model = scriptedModel([{ text: 'unused' }]);
    await expect(runWorker(worker, '   ', { model })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('allow_empty_input: false'),
    });
    expect(model.doGenerateCalls).toHaveLength(0);
    expect(await runWorker(worker, 'analyze input/', { model })).toMatchObject({ status: 'completed', text: 'unused' });
  });

  it('checks the task_completion result against an output_schema_ref file and lets the model fix it', async () => {
    const dir = tempDir();
    workerFile(dir, 'summary.json', JSON.stringify({ type: 'object', properties: { title: { type: 'string' } }, required: ['title'] }));
    const worker = await loadWorker(workerFile(dir, 'w.yaml', 'name: w\noutput_schema_ref: summary.json\n'));
    expect(JSON.parse(worker.outputSchema ?? 'null')).toMatchObject({ required: ['title'] });
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'task_completion', input: { result: '{"name": "x"}' } }] },
      { toolCalls: [{ toolName: 'task_completion', input: { result: '{"title": "Report"}' } }] },
    ]);
    const result = await runWorker(worker, 'summarize', { model });
    expect(result).toMatchObject({ status: 'task-completed', text: '{"title": "Report"}' });
    expect(model.doGenerateCalls).toHaveLength(2);
    const feedback = JSON.stringify(model.doGenerateCalls[1]?.prompt);
    expect(feedback).toContain("does not match the worker's output schema");
    expect(feedback).toContain('title');
    const offered = model.doGenerateCalls[0]?.tools?.find((tool) => tool.name === 'task_completion');
    expect(JSON.stringify(offered)).toContain('must be JSON text matching this JSON Schema');
    const stuck = scriptedModel([{ toolCalls: [{ toolName: 'task_completion', input: { result: 'no json' } }] }]);
    expect(await runWorker(worker, 'summarize', { model: stuck, maxSteps: 1 })).toMatchObject({ status: 'max-steps' });
  });

  it('applies the worker-level approval as a floor and removes blocked tools', async () => {
    const dir = tempDir();
    const path = workerFile(
      dir,
      'w.yaml',
      'name: w\napproval:\n  default: ask\n  tools: { delete_file: blocked }\ntoolsets:\n  filesystem: {}\n',
    );
    const worker = await loadWorker(path);
    expect(worker.toolApproval.read_file?.decision).toBe('ask');
    expect(worker.toolApproval.delete_file?.decision).toBe('blocked');
    expect(Object.keys(worker.tools)).not.toContain('delete_file');
    expect(Object.keys(worker.tools)).toContain('write_file');

    const typo = workerFile(dir, 'typo.yaml', 'name: t\napproval:\n  tools: { delete_fiel: blocked }\ntoolsets:\n  filesystem: {}\n');
    await expect(loadWorker(typo)).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('delete_fiel') });
  });

  it('a readonly sandbox leaves no tool that writes files', async () => {
    const dir = tempDir();
    const path = workerFile(dir, 'r.yaml', 'name: r\nsandbox: { readonly: true }\ntoolsets:\n  filesystem: {}\n  code_agent: { group: all }\n');
    const worker = await loadWorker(path);
    const names = Object.keys(worker.tools);
    for (const writer of ['write_file', 'delete_file', 'file_write', 'file_edit', 'file_patch']) expect(names).not.toContain(writer);
    expect(names).toEqual(expect.arrayContaining(['read_file', 'file_read', 'grep_search']));
  });

  it('reports configuration mistakes with file, line and column', async () => {
    const dir = tempDir();
    const path = workerFile(dir, 'bad.yaml', 'name: bad\ntoolsets:\n  shell:\n    rulez: []\n');
    await expect(loadWorker(path)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/bad\.yaml:4:5: toolsets\.shell: unknown field `rulez`, expected one of `rules`/),
    });
  });

  it('refuses delegation cycles when the worker is loaded', async () => {
    const dir = tempDir();
    workerFile(dir, 'a.yaml', 'name: a\ntoolsets:\n  workers: { allowed_workers: [b] }\n');
    workerFile(dir, 'b.yaml', 'name: b\ntoolsets:\n  workers: { allowed_workers: [a] }\n');
    await expect(loadWorker(join(dir, 'a.yaml'))).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('cycle') });
  });

  it('the published JSON Schema is the one the parser is generated from', () => {
    const published = JSON.parse(readFileSync(join(ROOT, 'schemas/worker.schema.json'), 'utf8')) as unknown;
    expect(published).toEqual(workerJsonSchema());
  });

  it('a malformed file names the schema by the path a project that installed toolgate can resolve', async () => {
    const path = workerFile(tempDir(), 'worker.yaml', 'name: w\nmax_steps: many\n');
    const error = (await loadWorker(path).then(
      () => undefined,
      (caught: unknown) => caught,
    )) as Error & { code?: string };
    expect(error).toMatchObject({ code: 'CONFIG_INVALID' });
    const named = /see the JSON Schema (\S+) for the accepted shape/.exec(error.message)?.[1];
    expect(named, error.message).toBe('toolgate/schemas/worker.schema.json');
    // That name resolves through the package's exports (as from a project's node_modules) to the shipped file.
    expect(createRequire(join(ROOT, 'package.json')).resolve(named!)).toBe(join(ROOT, 'schemas', 'worker.schema.json'));
  });
});

describe('workers toolset', () => {
  it('runs an allowed worker as a sub-agent with the caller approval handler', async () => {
    const dir = tempDir();
    workerFile(dir, 'workers/scribe.worker', '---\nname: scribe\ndescription: Writes files\ntoolsets:\n  filesystem: {}\n---\nYou write files.\n');
    const path = workerFile(dir, 'boss.yaml', 'name: boss\ntoolsets:\n  workers:\n    allowed_workers: [scribe]\n    approval: { default: preApproved }\n');
    const boss = await loadWorker(path);
    // one model plays both: the boss delegates, the scribe writes, the scribe answers, the boss answers
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'scribe', input: { input: 'write hello.txt' } }] },
      { toolCalls: [{ toolName: 'write_file', input: { path: 'hello.txt', content: 'hello' } }] },
      { text: 'wrote it' },
      { text: 'the scribe wrote it' },
    ]);
    const asked: string[] = [];
    const result = await runWorker(boss, 'get hello.txt written', {
      model,
      onApproval: ({ toolName }) => {
        asked.push(toolName);
        return 'approve';
      },
    });
    expect(result.text).toBe('the scribe wrote it');
    expect(asked).toEqual(['write_file']);
    expect(readFileSync(join(dir, 'hello.txt'), 'utf8')).toBe('hello');
    expect(result.toolCalls).toMatchObject([{ toolName: 'scribe', decision: 'preApproved', output: { status: 'completed', result: 'wrote it' } }]);
    // the sub-agent's instructions and tools reached the model
    expect(JSON.stringify(model.doGenerateCalls[1]?.prompt)).toContain('You write files.');
  });

  it("loads golem-forge's example layout: the orchestrator calls a sibling example by name, note_taker gets its notes folder", async () => {
    const repo = tempDir();
    workerFile(repo, 'package.json', '{}');
    const orchestrator = workerFile(
      repo,
      'examples/orchestrator/main.worker',
      '---\nname: orchestrator\ntoolsets:\n  workers:\n    allowed_workers: [greeter, math]\n    approval: { default: preApproved }\n---\nRoute.\n',
    );
    workerFile(repo, 'examples/orchestrator/workers/math.worker', '---\nname: math\n---\nCount.\n');
    workerFile(repo, 'examples/greeter/main.worker', '---\nname: greeter\ndescription: Greets\n---\nYou greet warmly.\n');
    workerFile(repo, 'experiments/workers/greeter.worker', '---\nname: greeter\n---\nAn older greeter.\n');
    const worker = await loadWorker(orchestrator);
    expect(Object.keys(worker.tools)).toEqual(expect.arrayContaining(['greeter', 'math']));
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'greeter', input: { input: 'say hi' } }] },
      { text: 'Hello there!' },
      { text: 'The greeter said: Hello there!' },
    ]);
    const result = await runWorker(worker, 'greet me', { model });
    expect(result.text).toBe('The greeter said: Hello there!');
    const greeterPrompt = JSON.stringify(model.doGenerateCalls[1]?.prompt);
    expect(greeterPrompt).toContain('You greet warmly.');
    expect(greeterPrompt).not.toContain('An older greeter.');

    const noteTaker = workerFile(
      repo,
      'examples/note_taker/main.worker',
      '---\nname: note_taker\ntoolsets:\n  filesystem: {}\nsandbox:\n  restrict: /notes\n---\nTake notes.\n',
    );
    const notes = await loadWorker(noteTaker);
    expect(notes.warnings.join('\n')).toContain("sandbox.restrict '/notes' did not exist; created");
    expect(notes.workDir).toBe(join(repo, 'examples/note_taker/notes'));
    expect(statSync(notes.workDir).isDirectory()).toBe(true);

    // file_manager's program config: `sandbox.root: "workspace"`, and a default model.
    workerFile(repo, 'examples/file_manager/golem-forge.config.yaml', '# Program config\nmodel: openai:gpt-4o-mini\nsandbox:\n  root: "workspace"\n');
    workerFile(repo, 'examples/file_manager/workspace/.gitkeep', '');
    const fileManager = await loadWorker(workerFile(repo, 'examples/file_manager/main.worker', '---\nname: file_manager\ntoolsets:\n  filesystem: {}\n---\nManage files.\n'));
    expect(fileManager.workDir).toBe(join(repo, 'examples/file_manager/workspace'));
    expect(fileManager.model).toBe('openai:gpt-4o-mini');
    expect(fileManager.warnings).toEqual([]);
  });
});
