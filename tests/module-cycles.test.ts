// scripts/check-module-cycles.mjs: the check in .ci/run that no top-level module of a crate
// imports one that imports it back. Each test writes a small crate tree and runs the script
// on it as CI does.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/fs.js';

const script = fileURLToPath(new URL('../scripts/check-module-cycles.mjs', import.meta.url));

/** Writes `files` (path → Rust source) under a fresh `<crate>/src` and returns that folder. */
function crate(files: Record<string, string>, name = 'fixture'): string {
  const src = join(tempDir('toolgate-modules-'), name, 'src');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(src, path)), { recursive: true });
    writeFileSync(join(src, path), text);
  }
  return src;
}

function check(...args: string[]) {
  const run = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The edges the script reports for a crate (`--edges`), as `from -> to`. */
function edges(src: string): string[] {
  const run = check('--edges', src);
  return [...run.stdout.matchAll(/^ {2}edge (\w+) -> (\w+)/gm)].map((m) => `${m[1]} -> ${m[2]}`).sort();
}

const lib = 'pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod error;\npub use error::Error;\n';

describe('check-module-cycles', () => {
  it('sees crate::, use crate::{…} with nested braces, pub use and $crate::', () => {
    const src = crate({
      'lib.rs': lib,
      'a.rs': 'use crate::b::Thing;\nfn f() { crate::c::run(); }\n',
      'b.rs': 'use crate::{c, d::{One, Two}};\n',
      'c.rs': 'pub use crate::d::Other;\n',
      'd.rs': 'macro_rules! m { () => { $crate::error::fail() } }\n',
      'error.rs': 'pub struct Error;\n',
    });
    expect(edges(src)).toEqual(['a -> b', 'a -> c', 'b -> c', 'b -> d', 'c -> d', 'd -> error']);
  });

  it('resolves super:: to the module it lands in, inline modules included', () => {
    const src = crate({
      'lib.rs': lib,
      // super:: from a/mod.rs is the crate root; from a/inner.rs it is a itself.
      'a/mod.rs': 'mod inner;\nuse super::b::X;\n',
      'a/inner.rs': 'use super::Local;\nuse super::super::c::Y;\n',
      // An inline module is one level deeper: super::super:: from inside it is the root.
      'b.rs': 'mod nested {\n    use super::super::d::Z;\n    use super::Here;\n}\n',
      'c.rs': 'fn f() { super::error::fail() }\n',
      'd.rs': '',
      'error.rs': '',
    });
    expect(edges(src)).toEqual(['a -> b', 'a -> c', 'b -> d', 'c -> error']);
  });

  it('reads a name the crate root re-exports as the module it comes from', () => {
    const src = crate({
      'lib.rs': lib,
      'a.rs': 'fn f() -> Result<(), crate::Error> { todo!() }\n',
      'b.rs': '',
      'c.rs': '',
      'd.rs': '',
      'error.rs': 'pub struct Error;\n',
    });
    expect(edges(src)).toEqual(['a -> error']);
  });

  it('leaves out test code, comments and strings', () => {
    const src = crate({
      'lib.rs': lib,
      'a.rs': [
        '// crate::b in a comment',
        '/* crate::b in a /* nested */ block comment */',
        'const S: &str = "crate::b in a string";',
        'const R: &str = r#"crate::b in a "raw" string"#;',
        "const C: char = '\"'; fn f<'a>(x: &'a str) {}",
        '#[cfg(test)]',
        'mod tests {',
        '    use crate::b::Helper;',
        '}',
        '#[cfg(test)]',
        '#[path = "a_checks.rs"]',
        'mod checks;',
        '#[cfg(test)]',
        'use crate::c::OnlyInTests;',
        '',
      ].join('\n'),
      'a_checks.rs': 'use crate::b::X;\n',
      'b.rs': '',
      'b/tests.rs': 'use crate::c::X;\n',
      'c.rs': '',
      'c/attack_tests.rs': 'use crate::a::X;\n',
      'd.rs': '',
      'd/tests/more.rs': 'use crate::a::X;\n',
      'd/fuzz.rs': '#![cfg(test)]\nuse crate::a::X;\n',
      'error.rs': '',
    });
    expect(edges(src)).toEqual([]);
  });

  it('fails on a cycle, naming every edge in it and where it is written', () => {
    const src = crate({
      'lib.rs': lib,
      'a.rs': 'use crate::b::X;\n',
      'b.rs': '\n\nuse crate::{c::Y};\n',
      'c/mod.rs': 'mod deep;\n',
      'c/deep.rs': 'use super::super::a::Z;\n',
      'd.rs': 'use crate::a::X;\n',
      'error.rs': '',
    });
    const run = check(src);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('fixture: cycle of 3 modules: a, b, c');
    expect(run.stdout).toMatch(/^ {2}a -> b {3}\(a\.rs:1\)$/m);
    expect(run.stdout).toMatch(/^ {2}b -> c {3}\(b\.rs:3\)$/m);
    expect(run.stdout).toMatch(/^ {2}c -> a {3}\(c\/deep\.rs:1\)$/m);
    // d points into the cycle but is not part of it.
    expect(run.stdout).not.toMatch(/d -> a/);
    expect(run.stdout).toMatch(/^module cycles: 1\./m);
  });

  it('passes a crate whose layers only point down, and checks every crate it is given', () => {
    const down = crate({ 'lib.rs': lib, 'a.rs': 'use crate::b::X;\n', 'b.rs': 'use crate::c::Y;\n', 'c.rs': '', 'd.rs': '', 'error.rs': '' }, 'down');
    const pair = crate({ 'main.rs': 'mod x;\nmod y;\n', 'x.rs': 'use crate::y::A;\n', 'y.rs': 'use super::x::B;\n' }, 'pair');
    const ok = check(down);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain('down: 5 modules, no cycle');
    expect(ok.stdout).toContain('module cycles: none');
    const both = check(down, pair);
    expect(both.status).toBe(1);
    expect(both.stdout).toContain('down: 5 modules, no cycle');
    expect(both.stdout).toContain('pair: cycle of 2 modules: x, y');
  });
});
