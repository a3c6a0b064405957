/**
 * The repository names no path of the machine it was written on, and its text files hold no raw
 * control bytes (issue 21): a clone in any folder passes `npm test`, and a NUL in a test literal
 * is written `\0`, where a reader and every tool can see it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/checkout.js';

/**
 * The folders this project is developed in (the main checkout, the helpers' worktrees, the shared
 * notes and tools). Written as a pattern so that this file does not name them itself.
 */
const DEVELOPMENT_PATHS = /\/work\/(?:main|wt|shared|helpers|\.library)(?![\w.-])/;

/** Files that are binary by nature: control bytes are their content. */
const BINARY_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.gif', '.ico', '.webp', '.woff', '.woff2', '.node', '.wasm', '.gz', '.tgz', '.zip']);

/** A control byte other than tab, line feed and carriage return, or DEL. */
function isRawControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f;
}

interface Finding {
  file: string;
  line: number;
  problem: string;
}

/** What is wrong with one file's text: machine paths (`checkoutPaths`, the development folders) and raw control bytes. */
function findingsIn(file: string, text: string, checkoutPaths: readonly string[]): Finding[] {
  const findings: Finding[] = [];
  text.split('\n').forEach((content, index) => {
    const line = index + 1;
    for (const path of checkoutPaths) {
      if (content.includes(path)) findings.push({ file, line, problem: `names this checkout's path ${path}: resolve it from the checkout (tests/helpers/checkout.ts)` });
    }
    const development = DEVELOPMENT_PATHS.exec(content);
    if (development) findings.push({ file, line, problem: `names the development path ${development[0]}: resolve it from the checkout (tests/helpers/checkout.ts)` });
    for (let column = 0; column < content.length; column++) {
      const code = content.charCodeAt(column);
      if (!isRawControl(code)) continue;
      const hex = code.toString(16).padStart(2, '0');
      findings.push({ file, line, problem: `raw control byte 0x${hex} at column ${column + 1}: write it as an escape (\\0, \\x${hex}, \\u{${hex}})` });
    }
  });
  return findings;
}

/** The files git tracks, and the new ones it would track (not ignored), that exist in the working tree. */
function repositoryFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  return [...new Set(listed.split('\0').filter(Boolean))].filter((file) => {
    const path = join(REPO_ROOT, file);
    return existsSync(path) && statSync(path).isFile() && !BINARY_EXTENSIONS.has(extname(file).toLowerCase());
  });
}

/** This checkout's absolute path as written and as the kernel resolves it (they differ below a symlink). */
const CHECKOUT_PATHS = [...new Set([REPO_ROOT, realpathSync(REPO_ROOT)])];

describe('repository hygiene', () => {
  it('the check finds a checkout path, a development path and raw control bytes (and passes clean text)', () => {
    // A checkout path of another clone: this checkout may itself lie below a development path.
    const CLONE = '/srv/clones/tool gate';
    const planted = [
      `const NODE_MODULES = '${CLONE}/node_modules';`,
      ["const INSPECTOR = '", '/work', "/wt/fresh/node_modules/x.js';"].join(''),
      ['read: [', '/work', '/shared/DESIGN.md]'].join(''),
      'refused(request("fn\u0000"), "NUL");',
      'let bell = "\u0007\u001b[0m";',
      'clean: /home/other/.ssh/id_rsa is an attack target, /work/repo an example, "fn\\0" an escape',
    ].join('\n');
    const found = findingsIn('planted.ts', planted, [CLONE]);
    expect(found.map((finding) => finding.line)).toEqual([1, 2, 3, 4, 5, 5]);
    expect(found[0]!.problem).toContain("this checkout's path");
    expect(found[1]!.problem).toContain(['development path ', '/work', '/wt'].join(''));
    expect(found[3]!.problem).toContain('0x00 at column 20');
    expect(found[5]!.problem).toContain('0x1b');
  });

  it('no tracked or new file names a machine path or holds a raw control byte', () => {
    const files = repositoryFiles();
    // The listing really is the repository (not an empty or foreign one).
    expect(files).toEqual(expect.arrayContaining(['package.json', 'tests/repository-hygiene.test.ts', 'crates/toolgate-core/src/fs/grep.rs']));
    const findings = files.flatMap((file) => findingsIn(file, readFileSync(join(REPO_ROOT, file), 'utf8'), CHECKOUT_PATHS));
    expect(findings.map(({ file, line, problem }) => `${file}:${line}: ${problem}`)).toEqual([]);
  });
});
