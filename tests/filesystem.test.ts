import { existsSync, lstatSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { approvalOf, filesystemToolset, type NamedTool } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { attackFixture, byName, call, escapingPaths, failure, snapshot, writeFiles } from './helpers/tools.js';

function setup(files: Record<string, string> = {}, readOnly = false) {
  const root = tempDir();
  writeFiles(root, files);
  const tools = filesystemToolset({ root, readOnly });
  return { root, tools, tool: (name: string) => byName(tools, name) };
}

describe('filesystemToolset: names and approval', () => {
  const decisions = (tools: NamedTool[]) => Object.fromEntries(tools.map((t) => [t.name, approvalOf(t)?.decision]));

  it('uses the names workers know; reads are preApproved, write and delete ask', () => {
    const { tools } = setup();
    expect(decisions(tools)).toEqual({
      read_file: 'preApproved',
      list_files: 'preApproved',
      file_exists: 'preApproved',
      file_info: 'preApproved',
      write_file: 'ask',
      delete_file: 'ask',
    });
  });

  it('readOnly removes write_file and delete_file', () => {
    const { tools } = setup({}, true);
    expect(tools.map((t) => t.name)).toEqual(['read_file', 'list_files', 'file_exists', 'file_info']);
  });

  it('applies the approval config on top and rejects unknown tool names', () => {
    const root = tempDir();
    const tools = filesystemToolset({ root, approval: { default: 'ask', tools: { write_file: 'preApproved', delete_file: 'blocked' } } });
    expect(decisions(tools)).toEqual({
      read_file: 'ask',
      list_files: 'ask',
      file_exists: 'ask',
      file_info: 'ask',
      write_file: 'preApproved',
      delete_file: 'blocked',
    });
    expect(() => filesystemToolset({ root, approval: { tools: { remove_file: 'ask' } } })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining('delete_file') }),
    );
    // Entries for write tools are accepted (and unused) in a read-only toolset.
    expect(filesystemToolset({ root, readOnly: true, approval: { tools: { write_file: 'ask' } } })).toHaveLength(4);
    expect(() => filesystemToolset({ root: join(root, 'missing') })).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});

describe('filesystem tools', () => {
  it('read_file returns the raw text with a continuation marker', async () => {
    const { tool } = setup({ 'a.txt': 'one\ntwo\nthree\n' });
    expect(await call(tool('read_file'), { path: 'a.txt' })).toEqual({
      path: 'a.txt',
      kind: 'text',
      content: 'one\ntwo\nthree\n',
      truncated: false,
      nextOffset: undefined,
    });
    const window = await call<{ content: string; truncated: boolean; nextOffset: number }>(tool('read_file'), {
      path: 'a.txt',
      offset: 2,
      limit: 1,
    });
    expect(window.content).toBe("two\n[truncated: showed lines 2-2 of 'a.txt'; 1 more line (6 B) after line 2. Call again with offset=3 to continue]\n");
    expect(window).toMatchObject({ truncated: true, nextOffset: 3 });
    expect(await failure(tool('read_file'), { path: 'nope' })).toMatchObject({ code: 'FILE_NOT_FOUND' });
  });

  it('write_file writes atomically and reports what it did', async () => {
    const { root, tool } = setup();
    expect(await call(tool('write_file'), { path: 'd/x.json', content: '{}' })).toEqual({ path: 'd/x.json', action: 'created', bytes: 2 });
    expect(readFileSync(join(root, 'd/x.json'), 'utf8')).toBe('{}');
  });

  it('list_files lists a directory, or the files matching a pattern', async () => {
    const { tool } = setup({ 'docs/a.md': '# A', 'docs/sub/b.md': '# B', 'docs/c.txt': 'c' });
    const listing = await call<string>(tool('list_files'), { path: 'docs' });
    expect(listing.split('\n').slice(0, 4)).toEqual([
      "directory 'docs': 3 entries",
      'dir            -  sub/',
      'file         3 B  a.md',
      'file         1 B  c.txt',
    ]);
    const markdown = await call<string>(tool('list_files'), { path: 'docs', pattern: '**/*.md' });
    expect(markdown.split('\n').slice(1).filter(Boolean).sort()).toEqual(['docs/a.md', 'docs/sub/b.md']);
    expect(await failure(tool('list_files'), { path: 'docs/a.md' })).toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('file_exists and file_info describe what is there', async () => {
    const { tool } = setup({ 'a.txt': 'hello' });
    expect(await call(tool('file_exists'), { path: 'a.txt' })).toEqual({ exists: true, type: 'file' });
    expect(await call(tool('file_exists'), { path: 'b.txt' })).toEqual({ exists: false });
    const info = await call<Record<string, unknown>>(tool('file_info'), { path: 'a.txt' });
    expect(info).toMatchObject({ path: 'a.txt', type: 'file', size: 5, mode: '0644', readonly: false });
    expect(Date.parse(info.modified as string)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('delete_file removes files and symlinks themselves, never directories', async () => {
    const { root, tool } = setup({ 'a.txt': 'hello', 'dir/b.txt': 'b' });
    symlinkSync('a.txt', join(root, 'alias'));
    expect(await call(tool('delete_file'), { path: 'alias' })).toEqual({ path: 'alias', bytes: 5 });
    expect(existsSync(join(root, 'a.txt'))).toBe(true);
    expect(await call(tool('delete_file'), { path: 'a.txt' })).toEqual({ path: 'a.txt', bytes: 5 });
    expect(existsSync(join(root, 'a.txt'))).toBe(false);
    expect(await failure(tool('delete_file'), { path: 'dir' })).toMatchObject({ code: 'INVALID_INPUT' });
    expect(await failure(tool('delete_file'), { path: 'a.txt' })).toMatchObject({ code: 'FILE_NOT_FOUND' });
  });
});

describe('attacks: every filesystem tool refuses to leave the root', () => {
  const attacks: Record<string, (path: string) => unknown> = {
    read_file: (path) => ({ path }),
    write_file: (path) => ({ path, content: 'pwned' }),
    list_files: (path) => ({ path }),
    delete_file: (path) => ({ path }),
    file_exists: (path) => ({ path }),
    file_info: (path) => ({ path }),
  };

  for (const [name, build] of Object.entries(attacks)) {
    it(`${name}: .., absolute paths, symlinked files and dirs, dangling symlinks`, async () => {
      const fixture = attackFixture();
      const tools = filesystemToolset({ root: fixture.root });
      const before = { outside: snapshot(fixture.outside), inside: snapshot(fixture.root) };
      const paths = escapingPaths(fixture).concat([['symlinked directory itself', 'outdir'], ['absolute outside dir', fixture.outside]]);
      for (const [label, path] of paths) {
        const error = await failure(byName(tools, name), build(path));
        expect(error.code, `${label}: ${error.message}`).toBe('PATH_OUTSIDE_ROOT');
      }
      if (name === 'list_files') {
        const error = await failure(byName(tools, name), { path: '.', pattern: 'outdir/**' });
        expect(error.code).toBe('PATH_OUTSIDE_ROOT');
      }
      expect(snapshot(fixture.outside)).toEqual(before.outside);
      expect(snapshot(fixture.root)).toEqual(before.inside);
      expect(existsSync(join(fixture.outside, 'created-by-attack.txt'))).toBe(false);
      expect(lstatSync(join(fixture.root, 'dangling.txt')).isSymbolicLink()).toBe(true);
    });
  }
});
