/**
 * Writes through the native addon, as the toolsets make them: parallel tool calls on one file,
 * writers killed in the middle of a write, and read-then-write round trips.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeAgentTools, FileTools, filesystemToolset } from '../ts/src/index.js';
import { tempDir } from './helpers/fs.js';
import { byName, call } from './helpers/tools.js';

const lines = (count: number) => Array.from({ length: count }, (_, i) => `line ${i}\n`).join('');
const edited = (text: string) => text.split('\n').filter((line) => line.endsWith(' edited')).length;
const tempFiles = (dir: string) => readdirSync(dir).filter((name) => name.includes('.toolgate-') && name.endsWith('.tmp'));

describe('parallel tool calls on one file', () => {
  it('keeps all 200 edits of different lines made at once', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'f.txt'), lines(200));
    const files = new FileTools(root);
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) => files.edit({ path: 'f.txt', oldText: `line ${i}\n`, newText: `line ${i} edited\n` })),
    );
    expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
    expect(edited(readFileSync(join(root, 'f.txt'), 'utf8'))).toBe(200);
    expect(tempFiles(root)).toEqual([]);
  });

  it('loses nothing when edits, writes, patches and deletes of one directory run together', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'f.txt'), lines(60));
    writeFileSync(join(root, 'g.txt'), 'start');
    const files = new FileTools(root);
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      calls.push(files.edit({ path: 'f.txt', oldText: `line ${i}\n`, newText: `line ${i} edited\n` }));
      if (i % 3 === 0) calls.push(files.write(`w${i}.txt`, `written ${i}`).then(() => files.delete(`w${i}.txt`)));
      if (i % 3 === 1) calls.push(files.patch([{ action: 'add', path: `p${i}.txt`, content: `patched ${i}` }]));
      if (i % 3 === 2) calls.push(files.patch([{ action: 'update', path: 'g.txt', content: `update ${i}` }]));
    }
    await Promise.all(calls);
    expect(edited(readFileSync(join(root, 'f.txt'), 'utf8'))).toBe(60);
    const names = readdirSync(root);
    expect(names.filter((name) => name.startsWith('w'))).toEqual([]);
    expect(names.filter((name) => name.startsWith('p'))).toHaveLength(20);
    expect(readFileSync(join(root, 'g.txt'), 'utf8')).toMatch(/^update \d+$/);
    expect(tempFiles(root)).toEqual([]);
  });

  it('never brings back a file deleted while edits of it were in flight', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'd.txt'), lines(50));
    const files = new FileTools(root);
    const edits = Array.from({ length: 50 }, (_, i) =>
      files.edit({ path: 'd.txt', oldText: `line ${i}\n`, newText: `line ${i} edited\n` }).then(
        () => 'edited',
        (error: { code?: string }) => error.code,
      ),
    );
    const deleted = files.delete('d.txt');
    const outcomes = await Promise.all(edits);
    await deleted;
    expect(outcomes.filter((outcome) => outcome !== 'edited' && outcome !== 'FILE_NOT_FOUND')).toEqual([]);
    expect(readdirSync(root)).toEqual([]);
  });
});

describe('writers killed mid-write', () => {
  it('leaves temporary files that the next write in the directory removes', async () => {
    const root = tempDir();
    const index = new URL('../ts/src/index.ts', import.meta.url).href;
    // Four concurrent writers of 8 MiB files, forever: a kill lands in the middle of writes.
    const writer = `
      import { FileTools } from ${JSON.stringify(index)};
      const files = new FileTools(${JSON.stringify(root)});
      const big = 'x'.repeat(8 * 1024 * 1024);
      let n = 0;
      const loop = async (id) => { for (;;) await files.write('out' + id + '-' + (n++ % 3) + '.txt', big); };
      for (let id = 0; id < 4; id++) loop(id);
      console.log('writing');`;
    let leftBehind: string[] = [];
    // A kill can land between writes; try a few times until one leaves a temporary file.
    for (let attempt = 0; attempt < 10 && leftBehind.length === 0; attempt++) {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writer], { stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise((resolve) => child.stdout.once('data', resolve));
      const deadline = Date.now() + 20_000;
      while (tempFiles(root).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      leftBehind = tempFiles(root);
    }
    expect(leftBehind.length).toBeGreaterThan(0);
    // Another process's write into that directory sweeps them; the finished files stay.
    const finished = readdirSync(root).filter((name) => name.startsWith('out'));
    await new FileTools(root).write('next.txt', 'x');
    expect(tempFiles(root)).toEqual([]);
    expect(readdirSync(root).filter((name) => name.startsWith('out'))).toEqual(finished);
    expect(readFileSync(join(root, 'next.txt'), 'utf8')).toBe('x');
  });
});

describe('read then write changes no byte', () => {
  const cases: Record<string, string> = {
    'no final newline': 'first\nsecond',
    'final newline': 'first\nsecond\n',
    CRLF: 'first\r\nsecond\r\n',
    'CRLF, no final newline': 'first\r\nsecond',
    empty: '',
    'only a newline': '\n',
    'blank lines': '\n\n\nx\n\n',
  };

  it.each(Object.entries(cases))('read_file -> write_file: %s', async (_, text) => {
    const root = tempDir();
    writeFileSync(join(root, 'f.txt'), text);
    const tools = filesystemToolset({ root });
    const read = await call<{ content: string; noFinalNewline?: boolean }>(byName(tools, 'read_file'), { path: 'f.txt' });
    expect(read.content).toBe(text);
    expect(read.noFinalNewline ?? false).toBe(text.length > 0 && !text.endsWith('\n'));
    await call(byName(tools, 'write_file'), { path: 'f.txt', content: read.content });
    expect(readFileSync(join(root, 'f.txt'), 'utf8')).toBe(text);
  });

  it('read_file windows read with offset and limit add up to the file', async () => {
    const root = tempDir();
    const text = Array.from({ length: 23 }, (_, i) => `line ${i}${i % 2 ? '\r\n' : '\n'}`).join('') + 'tail';
    writeFileSync(join(root, 'f.txt'), text);
    const tool = byName(filesystemToolset({ root }), 'read_file');
    let joined = '';
    let offset: number | undefined = 1;
    while (offset !== undefined) {
      const read: { content: string; nextOffset?: number } = await call(tool, { path: 'f.txt', offset, limit: 5 });
      joined += read.nextOffset === undefined ? read.content : read.content.slice(0, read.content.lastIndexOf('[truncated:'));
      offset = read.nextOffset;
    }
    expect(joined).toBe(text);
  });

  it('file_read shows the lines as they are and says when the last one has no newline', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'crlf.txt'), 'one\r\ntwo');
    writeFileSync(join(root, 'lf.txt'), 'one\ntwo\n');
    const tool = byName(codeAgentTools({ workDir: root }), 'file_read');
    expect(await call(tool, { path: 'crlf.txt' })).toBe('     1\tone\r\n     2\ttwo\n[no newline at end of file]\n');
    expect(await call(tool, { path: 'lf.txt' })).toBe('     1\tone\n     2\ttwo\n');
    expect(await call(tool, { path: 'crlf.txt', limit: 1 })).not.toContain('no newline');
  });
});
