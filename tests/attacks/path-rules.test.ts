/**
 * Path rules (`approval.paths`) against every file tool of both file toolsets, through the
 * built addon: the ways around a rule a model could try — other spellings and traversal,
 * symlinks (to a blocked file, named like one, into a blocked or asking directory, swapped
 * after approval), case variants, glob- and search-shaped requests that would list or read a
 * blocked file, and patches that touch one among others. The rules are the example
 * plus a blocked pattern that is not a dotfile (`*.key`).
 */
import { mkdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeAgentTools, FileTools, filesystemToolset, loadWorker, type NamedTool, runWorker, ToolgateError } from '../../ts/src/index.js';
import { runToolgate } from '../helpers/cli.js';
import { scriptedModel } from '../helpers/mock-model.js';
import { tempDir } from '../helpers/fs.js';
import { byName, snapshot, writeFiles } from '../helpers/tools.js';

const SECRET = 'PATH-RULE-SECRET-0815';
const RULES = [
  { pattern: '.env*', approval: 'blocked' },
  { pattern: '.git/**', approval: 'ask' },
  { pattern: 'src/**', approval: 'preApproved' },
  { pattern: '*.key', approval: 'blocked' },
] as const;

function workDir(): string {
  const work = tempDir('toolgate-paths-');
  writeFiles(work, {
    '.env': `TOKEN=${SECRET}\n`,
    '.env.local': `LOCAL=${SECRET}\n`,
    'config/.env': `NESTED=${SECRET}\n`,
    'keys/server.key': `${SECRET}\n`,
    '.git/config': '[core]\n\tbare = false\n',
    'src/a.ts': 'export const a = 1;\n',
    'docs/readme.md': 'the docs\n',
    '.ENV': 'another file, not the secret\n',
  });
  symlinkSync('.env', join(work, 'notes.txt'));
  symlinkSync('../keys/server.key', join(work, 'src/k.ts'));
  symlinkSync('keys', join(work, 'keyring'));
  symlinkSync('.git', join(work, 'gitlink'));
  symlinkSync('docs/readme.md', join(work, '.envlink'));
  return work;
}

const approval = { paths: RULES.map((rule) => ({ ...rule })) };

function tools(work: string): NamedTool[] {
  return [...codeAgentTools({ workDir: work, approval }), ...filesystemToolset({ workDir: work, approval })];
}

let callCount = 0;

/** Asks the tool's gate like the AI SDK does, then runs it: what a model's call leads to. */
async function modelCall(tool: NamedTool, input: unknown): Promise<{ asked: boolean; result?: unknown; code?: string; message?: string }> {
  const toolCallId = `call-${++callCount}`;
  const options = { toolCallId, messages: [] };
  const gate = tool.needsApproval;
  const asked = typeof gate === 'function' ? await gate(input as never, options) : Boolean(gate);
  try {
    const result = await (tool.execute as (input: unknown, options: object) => Promise<unknown>)(input, options);
    return { asked, result };
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    return { asked, code: error.code, message: error.message };
  }
}

function spellings(work: string): string[] {
  return [
    '.env',
    './.env',
    'src/../.env',
    'src/./../.env',
    'nothere/../.env',
    './/.env',
    join(work, '.env'),
    'config/.env',
    '.env.local',
    '.env.missing',
    'notes.txt',
    '.envlink',
    'keys/server.key',
    'keyring/server.key',
    'src/k.ts',
    'keys/../keys/server.key',
    // Trailing separators, dots and escapes that a file system or a matcher might drop.
    '.env/',
    '.env/.',
    'notes.txt/.',
    'src/../.env/',
    '.env.',
    '.env\\',
    'keys//server.key',
  ];
}

/** The model input that makes `tool` touch `path`. */
function inputFor(tool: string, path: string): unknown {
  switch (tool) {
    case 'file_write':
    case 'write_file':
      return { path, content: 'overwritten' };
    case 'file_edit':
      return { path, old_text: 'TOKEN', new_text: 'X' };
    case 'file_patch':
      return { operations: [{ action: 'add', path: 'fine.txt', content: 'x' }, { action: 'update', path, content: 'x' }] };
    case 'glob_search':
    case 'list_files':
      return { pattern: '*', path };
    case 'grep_search':
      return { pattern: 'TOKEN|LOCAL|NESTED|SECRET', path };
    default:
      return { path };
  }
}

describe('path rules: every file tool, every spelling of a blocked path', () => {
  it('refuses each with PATH_BLOCKED, never asks for it, never shows the secret, and changes nothing', async () => {
    const work = workDir();
    const before = snapshot(work);
    for (const tool of tools(work)) {
      for (const path of spellings(work)) {
        const outcome = await modelCall(tool, inputFor(tool.name, path));
        const what = `${tool.name}(${path})`;
        expect(outcome.code, `${what}: ${JSON.stringify(outcome.result)}`).toBe('PATH_BLOCKED');
        expect(outcome.asked, what).toBe(false);
        expect(outcome.message, what).toMatch(/approval\.paths\[\d\] '(\.env\*|\*\.key)' \(blocked\)/);
        expect(outcome.message, what).not.toContain(SECRET);
      }
    }
    expect(snapshot(work)).toEqual(before);
    expect(readFileSync(join(work, '.env'), 'utf8')).toContain(SECRET);
  });

  it('says the same whether the blocked file exists or not', async () => {
    const work = workDir();
    const read = byName(codeAgentTools({ workDir: work, approval }), 'file_read');
    const existing = await modelCall(read, { path: '.env.local' });
    const missing = await modelCall(read, { path: '.env.gone' });
    expect(existing.code).toBe('PATH_BLOCKED');
    expect(existing.message?.replace('.env.local', 'P')).toBe(missing.message?.replace('.env.gone', 'P'));
  });
});

describe('path rules: searches and listings', () => {
  it('never list or search a blocked file, whatever the glob or include shape', async () => {
    const work = workDir();
    const all = codeAgentTools({ workDir: work, approval });
    const glob = byName(all, 'glob_search');
    const grep = byName(all, 'grep_search');
    const listed: string[] = [];
    for (const pattern of ['**/*', '**/.env*', '.e[n]v*', '{.env,.env.local}', '**/*.key', 'keys/*', '**/.*', '*', 'src/*', '**/[.]env']) {
      const outcome = await modelCall(glob, { pattern });
      // A pattern whose literal prefix is blocked is refused; the others list what they may.
      if (outcome.code) expect(outcome.code, pattern).toBe('PATH_BLOCKED');
      else listed.push(...String(outcome.result).split('\n').slice(1));
    }
    for (const hidden of ['.env', '.env.local', 'config/.env', 'keys/server.key', 'src/k.ts', 'notes.txt', '.envlink']) {
      expect(listed, hidden).not.toContain(hidden);
    }
    expect(listed).toContain('src/a.ts');
    for (const input of [
      { pattern: SECRET },
      { pattern: SECRET, include: ['.env*', '**/.env', '*.key'] },
      { pattern: SECRET, path: 'keys' },
      { pattern: SECRET, path: 'config' },
      { pattern: SECRET, path: 'src' },
      { pattern: SECRET, path: 'keyring' },
      { pattern: 'TOKEN=', ignore_case: true },
    ]) {
      const outcome = await modelCall(grep, input);
      expect(outcome.code, JSON.stringify(input)).toBeUndefined();
      expect(String(outcome.result), JSON.stringify(input)).toMatch(/^No matches/);
    }
    const tree = String((await modelCall(byName(all, 'directory_tree'), { max_depth: 5 })).result);
    for (const hidden of ['server.key', 'k.ts', 'notes.txt', '.env']) expect(tree, hidden).not.toContain(hidden);
    const fsTools = filesystemToolset({ workDir: work, approval });
    for (const path of ['.', 'keys', 'src', 'config', 'keyring/..']) {
      for (const [tool, input] of [
        ['list_files', { path }],
        ['read_file', { path }],
      ] as const) {
        const text = JSON.stringify((await modelCall(byName(fsTools, tool), input)).result);
        for (const hidden of ['.env"', '.env\\n', '.env.local', 'server.key', 'k.ts', 'notes.txt', '.envlink']) {
          expect(text, `${tool} ${path}: ${hidden}`).not.toContain(hidden);
        }
      }
    }
  });
});

describe('path rules: ask and preApproved paths decide the call', () => {
  it('asks for .git (also through a symlink), pre-approves writes in src/, and keeps the tool decision elsewhere', async () => {
    const work = workDir();
    const all = codeAgentTools({ workDir: work, approval });
    const asks = async (name: string, input: unknown) => (await modelCall(byName(all, name), input)).asked;
    expect(await asks('file_read', { path: '.git/config' })).toBe(true);
    expect(await asks('file_read', { path: 'gitlink/config' })).toBe(true);
    expect(await asks('file_read', { path: './src/../.git/config' })).toBe(true);
    expect(await asks('grep_search', { pattern: 'x', path: 'gitlink' })).toBe(true);
    expect(await asks('glob_search', { pattern: '.git/**' })).toBe(true);
    expect(await asks('file_read', { path: 'docs/readme.md' })).toBe(false);
    expect(await asks('file_write', { path: 'src/new.ts', content: 'x' })).toBe(false);
    expect(await asks('file_write', { path: 'src/../docs/new.md', content: 'x' })).toBe(true);
    expect(await asks('file_patch', { operations: [{ action: 'update', path: 'src/a.ts', content: 'x' }, { action: 'add', path: 'README.md', content: 'x' }] })).toBe(true);
    // A case variant is another file on this (case-sensitive) file system, and no rule names it.
    const other = await modelCall(byName(all, 'file_read'), { path: '.ENV' });
    expect(String(other.result)).toContain('another file');
    expect(String(other.result)).not.toContain(SECRET);
  });

  it('refuses a call whose path was swapped to a stricter one after it was approved', async () => {
    const work = workDir();
    writeFileSync(join(work, 'plain.txt'), 'plain\n');
    const read = byName(codeAgentTools({ workDir: work, approval }), 'file_read');
    const options = { toolCallId: 'swap', messages: [] };
    const gate = read.needsApproval as (input: unknown, options: object) => Promise<boolean>;
    expect(await gate({ path: 'plain.txt' }, options)).toBe(false);
    // Between the decision and the run, plain.txt becomes a symlink into .git (ask) ...
    unlinkSync(join(work, 'plain.txt'));
    symlinkSync('.git/config', join(work, 'plain.txt'));
    const execute = read.execute as (input: unknown, options: object) => Promise<unknown>;
    await expect(execute({ path: 'plain.txt' }, options)).rejects.toMatchObject({ code: 'APPROVAL_DENIED' });
    // ... or into a blocked file.
    expect(await gate({ path: 'docs/readme.md' }, { ...options, toolCallId: 'swap2' })).toBe(false);
    renameSync(join(work, 'docs'), join(work, 'docs-old'));
    mkdirSync(join(work, 'docs'));
    symlinkSync('../.env', join(work, 'docs/readme.md'));
    await expect(execute({ path: 'docs/readme.md' }, { ...options, toolCallId: 'swap2' })).rejects.toMatchObject({ code: 'PATH_BLOCKED' });
  });
});

describe('path rules: configuration', () => {
  it('refuses bad rules with CONFIG_INVALID naming the rule', () => {
    const work = workDir();
    for (const [pattern, said] of [
      ['!.env.example', 'negation'],
      ['', 'empty'],
      ['../outside', "'..'"],
      ['a//b', "'//'"],
      ['[unclosed', 'not a valid glob'],
    ] as const) {
      const attempt = () => codeAgentTools({ workDir: work, approval: { paths: [{ pattern, approval: 'blocked' }] } });
      expect(attempt, pattern).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
      expect(attempt, pattern).toThrow(said);
      expect(attempt, pattern).toThrow('code_agent approval.paths[0]');
    }
    const many = Array.from({ length: 300 }, (_, index) => ({ pattern: `f${index}`, approval: 'ask' as const }));
    expect(() => filesystemToolset({ workDir: work, approval: { paths: many } })).toThrow(/at most 256/);
    expect(() => codeAgentTools({ workDir: work, approval: { paths: [{ pattern: 'x', approval: 'maybe' as never }] } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });

  it('answers hostile model input to the per-call decision with a decision or a clear error, quickly', () => {
    const work = workDir();
    const files = new FileTools(work, { place: 'approval.paths', rules: RULES.map((rule) => ({ ...rule })) });
    const tool = { decision: 'preApproved' as const };
    const started = Date.now();
    // A patch far over the operation limit (it is refused before running) is judged in bounded time.
    const many = { operations: Array.from({ length: 200_000 }, (_, index) => ({ action: 'add', path: `f${index}` })) };
    expect(files.decideCall('file_patch', many, tool).decision).toBe('preApproved');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(files.decideCall('file_read', { path: 'x/'.repeat(50_000) }, tool).decision).toBe('preApproved');
    expect(files.decideCall('file_read', { path: 42 }, tool).decision).toBe('preApproved');
    expect(files.decideCall('file_read', { path: '.env\u0000.txt' }, tool).decision).toBe('preApproved');
    expect(files.decideCall('glob_search', { pattern: '{.env,x}/**' }, tool).decision).toBe('preApproved');
    expect(files.decideCall('glob_search', { pattern: '.env/**/*' }, tool).decision).toBe('blocked');
    expect(() => files.decideCall('shell', { command: 'cat .env' }, tool)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('applies approval.paths from a worker file, and toolgate check --path explains them', async () => {
    const work = workDir();
    const dir = tempDir('toolgate-paths-worker-');
    const file = join(dir, 'agent.worker');
    writeFileSync(
      file,
      [
        '---',
        'name: agent',
        'toolsets:',
        '  code_agent:',
        '    approval:',
        '      paths:',
        ...RULES.flatMap((rule) => [`        - pattern: "${rule.pattern}"`, `          approval: ${rule.approval}`]),
        '  filesystem:',
        '    read_only: true',
        '---',
        'Work on the code.',
        '',
      ].join('\n'),
    );
    const worker = await loadWorker(file, { workDir: work });
    const offered = Object.entries(worker.tools).map(([name, tool]) => ({ ...tool, name }) as NamedTool);
    const read = byName(offered, 'file_read');
    expect((await modelCall(read, { path: 'src/../.env' })).code).toBe('PATH_BLOCKED');
    expect((await modelCall(read, { path: '.git/config' })).asked).toBe(true);
    // The filesystem toolset of the same worker has no rules of its own.
    const plain = await modelCall(byName(offered, 'read_file'), { path: '.env' });
    expect(JSON.stringify(plain.result)).toContain(SECRET);

    const blocked = runToolgate(['check', '--path', 'notes.txt', '--work-dir', work, file]);
    expect(blocked.stdout).toMatch(/code_agent\.file_read\s+blocked\s+.*'\.env\*' \(blocked\)/);
    expect(blocked.stdout).toMatch(/filesystem\.read_file\s+preApproved\s+no rule matched/);
    expect(blocked.status).toBe(0);
    const json = JSON.parse(runToolgate(['check', '--path', '.git/config', '--work-dir', work, '--json', file]).stdout) as Array<Record<string, unknown>>;
    expect(json.find((check) => check.tool === 'file_write')).toMatchObject({ decision: 'ask', by: 'rule', pattern: '.git/**' });
    expect(runToolgate(['check', '--path', 'x', file, 'extra']).status).toBe(2);
    // Blocked for every file tool of a worker: exit status 1.
    const only = join(dir, 'only.yaml');
    writeFileSync(only, `name: only\ntoolsets:\n  code_agent:\n    approval:\n      paths: [{ pattern: "*.key", approval: blocked }]\n`);
    const keyring = runToolgate(['check', '--path', 'keyring/server.key', '--work-dir', work, only]);
    expect(keyring.stdout).toContain("(judged as 'keys/server.key')");
    expect(keyring.status).toBe(1);
  });
});

describe('path rules: in the agent loop and across delegation', () => {
  it('asks for .git, refuses .env without asking, and a called worker without rules cannot reach .env either', async () => {
    const work = workDir();
    writeFileSync(
      join(work, 'boss.worker'),
      [
        '---',
        'name: boss',
        'toolsets:',
        '  code_agent:',
        '    group: read',
        '    approval:',
        '      paths:',
        ...RULES.flatMap((rule) => [`        - pattern: "${rule.pattern}"`, `          approval: ${rule.approval}`]),
        '  workers:',
        '    allowed_workers: [scribe]',
        '    approval: { default: preApproved }',
        '---',
        'You lead.',
        '',
      ].join('\n'),
    );
    writeFileSync(join(work, 'scribe.worker'), '---\nname: scribe\ntoolsets:\n  filesystem: { read_only: true }\n---\nYou read.\n');
    const boss = await loadWorker(join(work, 'boss.worker'));
    const model = scriptedModel([
      { toolCalls: [{ toolName: 'file_read', input: { path: '.git/config' } }, { toolName: 'file_read', input: { path: './.env' } }] },
      { toolCalls: [{ toolName: 'scribe', input: { input: 'read the env' } }] },
      {
        toolCalls: [
          { toolName: 'read_file', input: { path: 'src/../.env' } },
          { toolName: 'read_file', input: { path: 'notes.txt' } },
          { toolName: 'list_files', input: { pattern: '**/*' } },
        ],
      },
      { text: 'could not' },
      { text: 'done' },
    ]);
    const asked: string[] = [];
    const result = await runWorker(boss, 'look around', {
      model,
      onApproval: ({ toolName, input }) => {
        asked.push(`${toolName} ${JSON.stringify(input)}`);
        return 'approve';
      },
    });
    expect(result.text).toBe('done');
    expect(asked).toEqual(['file_read {"path":".git/config"}']);
    const prompts = JSON.stringify(model.doGenerateCalls.map((call) => call.prompt));
    expect(prompts).toContain('bare = false');
    expect(prompts).toContain("'./.env' is blocked by the path rule");
    expect(prompts).toContain("'.env*' (blocked) of a calling worker");
    expect(prompts).not.toContain(SECRET);
    expect(prompts).not.toContain('server.key');
  });
});
