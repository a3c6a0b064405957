/**
 * Issue 22 §3: path rules are kernel rules too. `approval.paths` rules stop the file tools, but
 * rules judge names: a sandboxed `cat .env` read the blocked file, and a hard link made by a
 * sandboxed `ln .env notes.txt` was then read by `file_read` and `grep_search` under its new
 * name. A `blocked` path is hidden from processes (not readable, writable or linkable), and the
 * file tools refuse a file that is the same file (device, inode) as a blocked one.
 *
 * The file tools' part runs everywhere: hard links made before the worker was loaded, after it
 * was loaded, inside a blocked directory, and by a sandboxed process where the kernel still lets
 * it. The processes' part needs the kernel view (`MOUNT_VIEW`, see protected-fixture.ts).
 */
import { linkSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { call, failure, writeFiles } from '../helpers/tools.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const SECRET = 'KERNEL-RULE-SECRET-2718';

const WORKER = `name: keeper
toolsets:
  code_agent:
    approval:
      default: preApproved
      paths:
        - { pattern: '.env*', approval: blocked }
        - { pattern: '/secrets/', approval: blocked }
  filesystem:
    approval:
      default: preApproved
      paths:
        - { pattern: '.env*', approval: blocked }
  cli_execute: { allowed_binaries: [cat, ln, cp, python3, grep, head] }
  shell: { default: preApproved }
`;

const open: LoadedWorker[] = [];
afterEach(async () => {
  for (const worker of open.splice(0)) await worker.close();
});

async function keeper() {
  const base = tempDir('toolgate-rules-kernel-');
  writeFiles(base, {
    'worker.yaml': WORKER,
    'work/.env': `TOKEN=${SECRET}\n`,
    'work/config/.env.local': `LOCAL=${SECRET}\n`,
    'work/secrets/key': `KEY=${SECRET}\n`,
    'work/src/app.ts': 'export const needle = 1;\n',
  });
  const work = join(base, 'work');
  // Made before the worker was loaded (an earlier run, a person): the same files by other names.
  linkSync(join(work, '.env'), join(work, 'notes.txt'));
  linkSync(join(work, 'secrets/key'), join(work, 'src/key.txt'));
  const worker = await loadWorker(join(base, 'worker.yaml'), { workDir: work });
  open.push(worker);
  return { work, worker, tool: (name: string) => worker.tools[name] as NamedTool };
}

async function refusedAsSameFile(tool: NamedTool, input: unknown, blocked: string): Promise<void> {
  const error = await failure(tool, input);
  expect(error.code, `${tool.name} ${JSON.stringify(input)}: ${error.message}`).toBe('PATH_BLOCKED');
  expect(error.message).toContain(`is the same file as '${blocked}'`);
  expect(error.message).not.toContain(SECRET);
}

describe('the file tools refuse another name of a blocked file (a hard link)', () => {
  it('refuses to read it and leaves it out of every search and listing', async () => {
    const { tool } = await keeper();
    await refusedAsSameFile(tool('file_read'), { path: 'notes.txt' }, '.env');
    await refusedAsSameFile(tool('read_file'), { path: 'notes.txt' }, '.env');
    await refusedAsSameFile(tool('file_read'), { path: 'src/key.txt' }, 'secrets/key');
    await refusedAsSameFile(tool('file_info'), { path: 'notes.txt' }, '.env');
    await refusedAsSameFile(tool('grep_search'), { pattern: 'TOKEN', path: 'notes.txt' }, '.env');
    const grep = (await call(tool('grep_search'), { pattern: 'TOKEN|KEY=' })) as string;
    expect(grep).not.toContain(SECRET);
    expect(grep).not.toContain('notes.txt');
    const glob = (await call(tool('glob_search'), { pattern: '**/*.txt' })) as string;
    expect(glob).not.toContain('notes.txt');
    expect(glob).not.toContain('key.txt');
    const tree = (await call(tool('directory_tree'), {})) as string;
    expect(tree).not.toContain('notes.txt');
    expect(tree).toContain('app.ts');
    const listing = JSON.stringify(await call(tool('list_files'), { path: '.' }));
    expect(listing).not.toContain('notes.txt');
  });

  it('refuses a link made after the worker was loaded, by a sandboxed process or anyone', async () => {
    const { work, tool } = await keeper();
    linkSync(join(work, '.env'), join(work, 'later.txt'));
    await refusedAsSameFile(tool('file_read'), { path: 'later.txt' }, '.env');
    // The agent's own `ln`: refused by the kernel where the view hides `.env`; where the link
    // can still be made, the file tools refuse it.
    const ln = (await call(tool('cli_execute'), { binary: 'ln', args: ['.env', 'made.txt'] })) as { exitCode: number };
    if (ln.exitCode === 0) {
      await refusedAsSameFile(tool('file_read'), { path: 'made.txt' }, '.env');
      await refusedAsSameFile(tool('read_file'), { path: 'made.txt' }, '.env');
      const grep = (await call(tool('grep_search'), { pattern: SECRET.slice(0, 12) })) as string;
      expect(grep).not.toContain('made.txt');
    } else {
      expect(MOUNT_VIEW, 'ln .env failed without the kernel view').toBe(true);
      expect((await failure(tool('file_read'), { path: 'made.txt' })).code).toBe('FILE_NOT_FOUND');
    }
    // The secret itself was never shown, and ordinary files with several names still read.
    linkSync(join(work, 'src/app.ts'), join(work, 'src/app2.ts'));
    expect(await call(tool('file_read'), { path: 'src/app2.ts' })).toContain('needle');
  });
});

/** The ways a process could get at a hidden file's content. */
const READS: { name: string; binary: string; args: string[] }[] = [
  { name: 'cat .env', binary: 'cat', args: ['.env'] },
  { name: 'cat ./config/.env.local', binary: 'cat', args: ['./config/.env.local'] },
  { name: 'cat secrets/key', binary: 'cat', args: ['secrets/key'] },
  { name: 'head -c 100 .env', binary: 'head', args: ['-c', '100', '.env'] },
  { name: 'grep -r SECRET .', binary: 'grep', args: ['-r', SECRET.slice(0, 12), '.'] },
  { name: "python3 -c open('.env')", binary: 'python3', args: ['-c', "print(open('.env').read())"] },
  { name: 'python3 opens through a symlink', binary: 'python3', args: ['-c', "import os; os.symlink('.env', 'sym'); print(open('sym').read())"] },
];

/** Two-step ways: make a copy or a link, then read it. */
const COPIES: { name: string; make: { binary: string; args: string[] }; read: string }[] = [
  { name: 'ln .env x', make: { binary: 'ln', args: ['.env', 'x1'] }, read: 'x1' },
  { name: 'ln secrets/key x', make: { binary: 'ln', args: ['secrets/key', 'x2'] }, read: 'x2' },
  { name: 'cp .env x', make: { binary: 'cp', args: ['.env', 'x3'] }, read: 'x3' },
  { name: 'cp -r secrets x', make: { binary: 'cp', args: ['-r', 'secrets', 'x4'] }, read: 'x4/key' },
  { name: 'python3 os.link', make: { binary: 'python3', args: ['-c', "import os; os.link('.env', 'x5')"] }, read: 'x5' },
];

describe.runIf(MOUNT_VIEW)('processes never get a hidden file (needs the kernel view: sandboxSupport().view)', () => {
  it('cli_execute: reads, links and copies of .env and of a blocked directory give nothing', { timeout: 120_000 }, async () => {
    const { work, tool } = await keeper();
    for (const read of READS) {
      const result = JSON.stringify(await call(tool('cli_execute'), { binary: read.binary, args: read.args }));
      expect(result, read.name).not.toContain(SECRET);
    }
    for (const copy of COPIES) {
      const made = JSON.stringify(await call(tool('cli_execute'), copy.make));
      const read = JSON.stringify(await call(tool('cli_execute'), { binary: 'cat', args: [copy.read] }));
      expect(`${made}${read}`, copy.name).not.toContain(SECRET);
      expect(readFileSync(join(work, '.env'), 'utf8')).toBe(`TOKEN=${SECRET}\n`);
    }
  });

  it('shell: the same, and a hidden file cannot be written either', { timeout: 120_000 }, async () => {
    const { work, tool } = await keeper();
    for (const command of ['cat .env', 'cat secrets/key', `grep -r ${SECRET.slice(0, 12)} .`, 'ln .env y1', 'cp .env y2']) {
      const result = JSON.stringify(await call(tool('shell'), { command }));
      expect(result, command).not.toContain(SECRET);
    }
    for (const copy of ['y1', 'y2']) {
      expect(JSON.stringify(await call(tool('shell'), { command: `cat ${copy}` })), copy).not.toContain(SECRET);
    }
    await call(tool('cli_execute'), { binary: 'python3', args: ['-c', "open('.env', 'w').write('overwritten')"] });
    expect(readFileSync(join(work, '.env'), 'utf8')).toBe(`TOKEN=${SECRET}\n`);
  });
});
