import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { approvalOf, codeAgentTools, type NamedTool, offeredTools, ToolgateError, toToolSet } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { attackFixture, byName, call, escapingPaths, failure, snapshot, writeFiles } from './helpers/tools.js';

function setup(files: Record<string, string> = {}) {
  const root = tempDir();
  writeFiles(root, files);
  const tools = codeAgentTools({ workDir: root });
  return { root, tools, tool: (name: string) => byName(tools, name) };
}

describe('codeAgentTools: groups and approval', () => {
  it('offers the tools of each group', () => {
    const root = tempDir();
    const names = (group: 'search' | 'read' | 'write' | 'all') => codeAgentTools({ workDir: root, group }).map((t) => t.name);
    expect(names('search')).toEqual(['grep_search', 'glob_search', 'directory_tree']);
    expect(names('read')).toEqual(['grep_search', 'glob_search', 'directory_tree', 'file_read']);
    expect(names('write')).toEqual(['file_write', 'file_edit', 'file_patch']);
    expect(names('all')).toEqual([...names('read'), ...names('write')]);
    expect(codeAgentTools({ workDir: root }).map((t) => t.name)).toEqual(names('all'));
  });

  it('pre-approves search and read, asks for writes, and applies the caller config on top', () => {
    const root = tempDir();
    const decisions = (tools: NamedTool[]) => Object.fromEntries(tools.map((t) => [t.name, approvalOf(t)?.decision]));
    expect(decisions(codeAgentTools({ workDir: root }))).toEqual({
      grep_search: 'preApproved',
      glob_search: 'preApproved',
      directory_tree: 'preApproved',
      file_read: 'preApproved',
      file_write: 'ask',
      file_edit: 'ask',
      file_patch: 'ask',
    });
    const tuned = codeAgentTools({
      workDir: root,
      approval: { tools: { file_edit: 'preApproved', file_patch: 'blocked', grep_search: 'ask' } },
    });
    expect(decisions(tuned)).toMatchObject({ file_edit: 'preApproved', file_patch: 'blocked', grep_search: 'ask', file_write: 'ask' });
    expect(byName(tuned, 'file_edit').needsApproval).toBe(false);
    expect(byName(tuned, 'file_write').needsApproval).toBe(true);
    const strict = codeAgentTools({ workDir: root, approval: { default: 'ask', tools: { file_read: 'preApproved' } } });
    expect(decisions(strict)).toMatchObject({ grep_search: 'ask', file_read: 'preApproved', file_write: 'ask' });
  });

  it('a blocked tool refuses to run', async () => {
    const { root } = setup({ 'a.txt': 'x' });
    const tools = codeAgentTools({ workDir: root, approval: { tools: { file_write: 'blocked' } } });
    const error = await failure(byName(tools, 'file_write'), { path: 'a.txt', content: 'pwned' });
    expect(error).toMatchObject({ code: 'TOOL_BLOCKED' });
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('x');
  });

  it('rejects a missing work dir, an unknown group and approval for unknown tools', () => {
    const root = tempDir();
    expect(() => codeAgentTools({ workDir: join(root, 'nope') })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    expect(() => codeAgentTools({ workDir: root, group: 'everything' as 'all' })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('search, read, write, all') }),
    );
    expect(() => codeAgentTools({ workDir: root, approval: { tools: { file_raed: 'ask' } } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining("'file_raed'") }),
    );
  });
});

describe('file_read', () => {
  it('returns numbered lines and a marker that says how to continue', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n');
    const { tool } = setup({ 'a.txt': `${lines}\n` });
    expect(await call(tool('file_read'), { path: 'a.txt', limit: 2 })).toBe(
      "     1\tline 1\n     2\tline 2\n[truncated: showed lines 1-2 of 'a.txt'; 28 more lines (217 B) after line 2. Call again with offset=3 to continue]\n",
    );
    expect(await call(tool('file_read'), { path: 'a.txt', offset: 29 })).toBe('    29\tline 29\n    30\tline 30\n');
    const past = await failure(tool('file_read'), { path: 'a.txt', offset: 100 });
    expect(past).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('has 30 lines') });
    expect(await failure(tool('file_read'), { path: 'missing.txt' })).toMatchObject({ code: 'FILE_NOT_FOUND' });
  });

  it('lists a directory and describes a binary file', async () => {
    const { root, tool } = setup({ 'src/a.ts': 'x'.repeat(1536), 'src/b.ts': '' });
    writeFileSync(join(root, 'src/img.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0]));
    const listing = await call<string>(tool('file_read'), { path: 'src' });
    expect(listing.split('\n')[0]).toBe("directory 'src': 3 entries");
    expect(listing).toMatch(/file\s+1\.5 KiB {2}a\.ts/);
    const binary = await call<string>(tool('file_read'), { path: 'src/img.png' });
    expect(binary).toContain('binary file');
    expect(binary).toContain('PNG image');
  });

  it('reads a window of a 1 GiB file without loading it (RSS stays bounded)', async () => {
    const { root, tool } = setup();
    const file = join(root, 'huge.log');
    const fd = openSync(file, 'w');
    writeSync(fd, Array.from({ length: 1000 }, (_, i) => `header ${i + 1}`).join('\n') + '\n');
    // Sparse: one 1 GiB "line" of NUL bytes, then two text lines at the very end.
    writeSync(fd, '\ntail A\ntail B\n', 1024 ** 3);
    closeSync(fd);
    expect(statSync(file).size).toBeGreaterThan(1024 ** 3);

    let peak = process.memoryUsage.rss();
    const before = peak;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 5);
    try {
      const head = await call<string>(tool('file_read'), { path: 'huge.log', limit: 3 });
      expect(head).toContain('     1\theader 1\n');
      expect(head).toContain('1.0 GiB more after line 3. Call again with offset=4');
      const tail = await call<string>(tool('file_read'), { path: 'huge.log', offset: 1002, limit: 10 });
      expect(tail).toBe('  1002\ttail A\n  1003\ttail B\n');
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage.rss());
    expect(peak - before).toBeLessThan(64 * 1024 * 1024);
  });
});

describe('file_write', () => {
  it('creates parents, reports created/updated, and leaves no temporary files', async () => {
    const { root, tool } = setup();
    expect(await call(tool('file_write'), { path: 'a/b/c.txt', content: 'héllo' })).toEqual({
      path: 'a/b/c.txt',
      action: 'created',
      bytes: 6,
    });
    expect(await call(tool('file_write'), { path: 'a/b/c.txt', content: 'bye' })).toMatchObject({ action: 'updated', bytes: 3 });
    expect(readFileSync(join(root, 'a/b/c.txt'), 'utf8')).toBe('bye');
    expect(readdirSync(join(root, 'a/b'))).toEqual(['c.txt']);
    const dir = await failure(tool('file_write'), { path: 'a', content: 'x' });
    expect(dir).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('is a directory') });
  });
});

describe('file_edit', () => {
  const body = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

  it('replaces a unique match and returns a real unified diff', async () => {
    const { root, tool } = setup({ 'f.txt': body });
    const result = await call<{ path: string; replacements: number; diff: string }>(tool('file_edit'), {
      path: 'f.txt',
      old_text: 'line 6\n',
      new_text: 'line six\n',
    });
    expect(result).toEqual({
      path: 'f.txt',
      replacements: 1,
      diff: '--- a/f.txt\n+++ b/f.txt\n@@ -3,7 +3,7 @@\n line 3\n line 4\n line 5\n-line 6\n+line six\n line 7\n line 8\n line 9\n',
    });
    expect(readFileSync(join(root, 'f.txt'), 'utf8')).toContain('line 5\nline six\nline 7\n');
  });

  it('says how many matches there were and what to do', async () => {
    const { root, tool } = setup({ 'f.txt': 'a = 1\nb = 1\n' });
    const error = await failure(tool('file_edit'), { path: 'f.txt', old_text: '= 1', new_text: '= 2' });
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('matches 2 times');
    expect(error.message).toContain('at lines 1, 2');
    expect(error.message).toContain('replace_all');
    expect(readFileSync(join(root, 'f.txt'), 'utf8')).toBe('a = 1\nb = 1\n');
    const none = await failure(tool('file_edit'), { path: 'f.txt', old_text: 'c = 1', new_text: 'x' });
    expect(none).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('was not found') });
    await call(tool('file_edit'), { path: 'f.txt', old_text: '= 1', new_text: '= 2', replace_all: true });
    expect(readFileSync(join(root, 'f.txt'), 'utf8')).toBe('a = 2\nb = 2\n');
  });
});

describe('file_patch', () => {
  it('applies add, update, delete and move in order', async () => {
    const { root, tool } = setup({ 'a.txt': 'A', 'b.txt': 'B', 'c.txt': 'C' });
    const result = await call<{ summary: string; changed: string[] }>(tool('file_patch'), {
      operations: [
        { action: 'add', path: 'new/n.txt', content: 'N' },
        { action: 'update', path: 'a.txt', content: 'A2' },
        { action: 'delete', path: 'b.txt' },
        { action: 'move', path: 'c.txt', new_path: 'moved/c.txt' },
      ],
    });
    expect(result.summary.trim().split('\n')).toEqual([
      'added new/n.txt (1 B)',
      'updated a.txt (2 B)',
      'deleted b.txt',
      'moved c.txt -> moved/c.txt',
    ]);
    expect(snapshot(root)).toEqual({
      'a.txt': 'A2 (420)',
      'moved/': '',
      'moved/c.txt': 'C (420)',
      'new/': '',
      'new/n.txt': 'N (420)',
    });
  });

  it('a bad third operation changes nothing on disk', async () => {
    const { root, tool } = setup({ 'a.txt': 'A', 'b.txt': 'B' });
    const before = snapshot(root);
    const thirds = [
      [{ action: 'update', path: 'missing.txt', content: 'x' }, 'FILE_NOT_FOUND'],
      [{ action: 'add', path: 'a.txt', content: 'x' }, 'INVALID_INPUT'],
      [{ action: 'add', path: '../escape.txt', content: 'x' }, 'PATH_OUTSIDE_ROOT'],
      [{ action: 'move', path: 'a.txt' }, 'INVALID_INPUT'],
      [{ action: 'delete', path: 'b.txt' }, 'FILE_NOT_FOUND'],
    ] as const;
    for (const [third, code] of thirds) {
      const error = await failure(tool('file_patch'), {
        operations: [{ action: 'update', path: 'a.txt', content: 'changed' }, { action: 'delete', path: 'b.txt' }, third],
      });
      expect(error.code, error.message).toBe(code);
      expect(error.message).toContain('operation 3');
      expect(snapshot(root)).toEqual(before);
    }
  });

  it('rolls every step back when the third operation fails while applying', async () => {
    const { root, tool } = setup({ 'a.txt': 'A', 'b.txt': 'B' });
    const before = snapshot(root);
    const error = await failure(tool('file_patch'), {
      operations: [
        { action: 'update', path: 'a.txt', content: 'changed' },
        { action: 'move', path: 'b.txt', new_path: 'sub/b.txt' },
        // Passes every check but the kernel refuses a 300-byte file name (ENAMETOOLONG).
        { action: 'add', path: `deep/${'x'.repeat(300)}`, content: 'x' },
      ],
    });
    expect(error.code).toBe('IO_ERROR');
    expect(error.message).toContain('operation 3');
    expect(error.message).toContain('every file is as it was');
    expect(snapshot(root)).toEqual(before);
  });
});

describe('glob_search', () => {
  it('respects the literal prefix of **, skips build dirs and gitignored files, newest first', async () => {
    const { root, tool } = setup({
      'src/a.ts': '',
      'src/deep/b.ts': '',
      'lib/src/c.ts': '',
      'top.ts': '',
      'node_modules/x/d.ts': '',
      'dist/e.ts': '',
      'gen/f.ts': '',
      '.gitignore': 'gen/\n',
    });
    const now = Date.now() / 1000;
    utimesSync(join(root, 'src/a.ts'), now - 100, now - 100);
    utimesSync(join(root, 'src/deep/b.ts'), now - 10, now - 10);
    expect(await call(tool('glob_search'), { pattern: 'src/**/*.ts' })).toBe(
      "2 files match 'src/**/*.ts' in '.' (newest first):\nsrc/deep/b.ts\nsrc/a.ts\n",
    );
    const all = await call<string>(tool('glob_search'), { pattern: '**/*.ts' });
    expect(all.split('\n').slice(1).filter(Boolean).sort()).toEqual(['lib/src/c.ts', 'src/a.ts', 'src/deep/b.ts', 'top.ts']);
    const capped = await call<string>(tool('glob_search'), { pattern: '**/*.ts', max_results: 1 });
    expect(capped).toContain('[truncated: showed the 1 newest of 4 matches; 3 more not shown.');
  });
});

describe('grep_search', () => {
  const files = {
    'src/a.ts': 'const a = 1;\nfunction alpha() {}\nconst b = 2;\n',
    'src/b.ts': "const flags = ['--pre=sh', '--files'];\n",
    'node_modules/m/index.js': 'function alpha() {}\n',
  };

  it('prints path:line:text, context with dashes, and -- between groups', async () => {
    const { tool } = setup(files);
    expect(await call(tool('grep_search'), { pattern: 'function \\w+' })).toBe('src/a.ts:2:function alpha() {}\n');
    expect(await call(tool('grep_search'), { pattern: 'alpha|flags', context: 1 })).toBe(
      'src/a.ts-1-const a = 1;\nsrc/a.ts:2:function alpha() {}\nsrc/a.ts-3-const b = 2;\n--\nsrc/b.ts:1:const flags = [\'--pre=sh\', \'--files\'];\n',
    );
    expect(await call(tool('grep_search'), { pattern: 'CONST A', ignore_case: true, include: '*.ts' })).toBe('src/a.ts:1:const a = 1;\n');
    expect(await call(tool('grep_search'), { pattern: 'const', exclude: ['a.ts'] })).toBe(
      "src/b.ts:1:const flags = ['--pre=sh', '--files'];\n",
    );
    const capped = await call<string>(tool('grep_search'), { pattern: 'const', max_results: 1 });
    expect(capped).toContain('[truncated: showed 1 of 3 matching lines in 2 files; 2 not shown.');
  });

  it('treats option-like patterns as patterns and rejects invalid regexes', async () => {
    const { tool } = setup(files);
    expect(await call(tool('grep_search'), { pattern: '--pre=sh' })).toBe("src/b.ts:1:const flags = ['--pre=sh', '--files'];\n");
    expect(await call(tool('grep_search'), { pattern: '--files' })).toBe("src/b.ts:1:const flags = ['--pre=sh', '--files'];\n");
    expect(await call(tool('grep_search'), { pattern: '--version' })).toMatch(/^No matches for \/--version\//);
    const bad = await failure(tool('grep_search'), { pattern: 'alpha(' });
    expect(bad).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('unclosed group') });
  });

  it('stops when the abort signal fires and rejects with its reason', async () => {
    // Enough files that the search is still running when the signal fires in the same tick;
    // a search that already finished has nothing left to stop.
    const many: Record<string, string> = { ...files };
    for (let index = 0; index < 3000; index++) many[`big/f${index}.ts`] = 'function alpha() {}\n'.repeat(20);
    const { tool } = setup(many);
    const controller = new AbortController();
    const reason = new Error('user stopped');
    const pending = call(tool('grep_search'), { pattern: 'alpha' }, controller.signal);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect(call(tool('grep_search'), { pattern: 'alpha' }, controller.signal)).rejects.toBe(reason);
  });
});

describe('directory_tree', () => {
  it('draws the tree with sizes from 1 KiB up and skips dotfiles and build dirs', async () => {
    const { tool } = setup({
      'src/main.ts': 'x'.repeat(2048),
      'src/util.ts': 'x',
      'README.md': '',
      '.env': 'SECRET=1',
      'node_modules/m/i.js': '',
      'build/out.js': '',
    });
    expect(await call(tool('directory_tree'), {})).toBe(
      './\n├── src/\n│   ├── main.ts (2.0 KiB)\n│   └── util.ts\n└── README.md\n\n1 directory, 3 files\n',
    );
    expect(await call(tool('directory_tree'), { max_depth: 1 })).toBe('./\n├── src/ (2 entries not shown)\n└── README.md\n\n1 directory, 1 file\n');
  });
});

describe('attacks: every code-agent tool refuses to leave the work directory', () => {
  type Attack = (path: string) => unknown;
  const attacks: Record<string, Attack[]> = {
    file_read: [(path) => ({ path })],
    file_write: [(path) => ({ path, content: 'pwned' })],
    file_edit: [(path) => ({ path, old_text: 'secret', new_text: 'pwned' })],
    file_patch: [
      (path) => ({ operations: [{ action: 'add', path, content: 'pwned' }] }),
      (path) => ({ operations: [{ action: 'update', path, content: 'pwned' }] }),
      (path) => ({ operations: [{ action: 'delete', path }] }),
      (path) => ({ operations: [{ action: 'move', path, new_path: 'stolen.txt' }] }),
      (path) => ({ operations: [{ action: 'move', path: 'notes.md', new_path: path }] }),
    ],
    glob_search: [(path) => ({ pattern: '*', path })],
    grep_search: [(path) => ({ pattern: 'secret', path })],
    directory_tree: [(path) => ({ path })],
  };

  for (const [name, builders] of Object.entries(attacks)) {
    it(`${name}: .., absolute paths, symlinked files and dirs, dangling symlinks`, async () => {
      const fixture = attackFixture();
      const tools = codeAgentTools({ workDir: fixture.root });
      const before = { outside: snapshot(fixture.outside), inside: snapshot(fixture.root) };
      const searchTool = ['glob_search', 'grep_search', 'directory_tree'].includes(name);
      // Search tools take directories: point them at the outside directory itself too.
      const paths = escapingPaths(fixture).concat(searchTool ? [['symlinked directory itself', 'outdir'], ['absolute outside dir', fixture.outside]] : []);
      for (const build of builders) {
        for (const [label, path] of paths) {
          const error = await failure(byName(tools, name), build(path));
          expect(error.code, `${label}: ${error.message}`).toBe('PATH_OUTSIDE_ROOT');
        }
      }
      expect(snapshot(fixture.outside)).toEqual(before.outside);
      expect(snapshot(fixture.root)).toEqual(before.inside);
      expect(existsSync(join(fixture.outside, 'created-by-attack.txt'))).toBe(false);
    });
  }

  it('file_patch with a bad third operation (an escape) changes nothing on disk', async () => {
    const fixture = attackFixture();
    const tools = codeAgentTools({ workDir: fixture.root });
    const before = { outside: snapshot(fixture.outside), inside: snapshot(fixture.root) };
    for (const [, path] of escapingPaths(fixture)) {
      const error = await failure(byName(tools, 'file_patch'), {
        operations: [
          { action: 'update', path: 'notes.md', content: 'changed' },
          { action: 'add', path: 'new.txt', content: 'new' },
          { action: 'add', path, content: 'pwned' },
        ],
      });
      expect(error.code).toBe('PATH_OUTSIDE_ROOT');
    }
    expect(snapshot(fixture.outside)).toEqual(before.outside);
    expect(snapshot(fixture.root)).toEqual(before.inside);
  });

  it('searches from the root never follow symlinks out of it', async () => {
    const fixture = attackFixture();
    const tools = codeAgentTools({ workDir: fixture.root });
    expect(await call(byName(tools, 'grep_search'), { pattern: 'secret' })).toBe('src/app.ts:1:export const secret = "inside";\n');
    const globbed = await call<string>(byName(tools, 'glob_search'), { pattern: '**/*' });
    expect(globbed).not.toContain('secret.txt');
    expect(globbed).not.toContain('leak.txt');
    expect(await call(byName(tools, 'glob_search'), { pattern: 'outdir/*' }).catch((e: ToolgateError) => e.code)).toBe(
      'PATH_OUTSIDE_ROOT',
    );
    const tree = await call<string>(byName(tools, 'directory_tree'), { max_depth: 5 });
    expect(tree).toContain('outdir -> (outside the root)');
    expect(tree).not.toContain('secret.txt');
  });

  it('grep patterns that look like rg options are searched for literally', async () => {
    const fixture = attackFixture();
    writeFiles(fixture.root, { 'flags.txt': '--pre=sh\n--files\n' });
    const tools = codeAgentTools({ workDir: fixture.root });
    for (const pattern of ['--pre=sh', '--files', '--pre', '-e']) {
      const out = await call<string>(byName(tools, 'grep_search'), { pattern });
      expect(out.startsWith('flags.txt:') || out.startsWith('No matches'), out).toBe(true);
      expect(out).not.toContain('secret');
    }
    expect(await call(byName(tools, 'grep_search'), { pattern: '--files' })).toBe('flags.txt:2:--files\n');
  });
});

describe('codeAgentTools in a real AI SDK loop (scripted model)', () => {
  it('runs pre-approved search tools and stops at an approval request for writes', async () => {
    const { root } = setup({ 'src/a.ts': 'function alpha() {}\n' });
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const call = (id: string, toolName: string, input: unknown) => ({
      type: 'tool-call' as const,
      toolCallId: id,
      toolName,
      input: JSON.stringify(input),
    });
    const model = new MockLanguageModelV3({
      doGenerate: async () => ({
        content: [call('c1', 'grep_search', { pattern: 'alpha' }), call('c2', 'file_write', { path: 'out.txt', content: 'x' })],
        finishReason: { unified: 'tool-calls' as const, raw: undefined },
        usage,
        warnings: [],
      }),
    });
    const tools = codeAgentTools({ workDir: root, approval: { tools: { file_patch: 'blocked' } } });
    const toolSet = toToolSet(offeredTools(tools));
    expect(Object.keys(toolSet)).not.toContain('file_patch');
    const result = await generateText({ model, tools: toolSet, prompt: 'find alpha', stopWhen: stepCountIs(3) });
    const parts = result.steps[0]!.content;
    const grepResult = parts.find((part) => part.type === 'tool-result' && part.toolName === 'grep_search');
    expect(grepResult).toMatchObject({ output: 'src/a.ts:1:function alpha() {}\n' });
    expect(parts.some((part) => part.type === 'tool-approval-request' && part.toolCall.toolName === 'file_write')).toBe(true);
    expect(existsSync(join(root, 'out.txt'))).toBe(false);
    expect(model.doGenerateCalls).toHaveLength(1);
  });
});
