#!/usr/bin/env node
// Layers point down: no top-level module of a crate may import one that imports it back.
//
// For every crate under crates/*/src (or the src folders given as arguments), this reads the
// non-test Rust code of each top-level module (`src/x.rs`, `src/x/**`) and records which other
// top-level modules it names: `crate::y`, `$crate::y`, `use crate::{y, z::w}` (nested braces),
// `super::…` resolved to the module it lands in, and names the crate root re-exports
// (`crate::Error` is `error` when lib.rs says `pub use error::Error`). Test code is left out:
// files named `tests.rs`, `*_tests.rs`, `test_support.rs` or under `tests/`, modules declared
// under `#[cfg(test)]`, files marked `#![cfg(test)]`, and any item marked `#[cfg(test)]`.
//
// It prints every cycle (a strongly connected group of modules) with the edges inside it and
// where each edge is written, and exits 1 when a crate has one.
//
// Usage: node scripts/check-module-cycles.mjs [--edges] [crate-src-dir ...]

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Removes comments and the contents of string and char literals, keeping line breaks. */
export function stripRust(text) {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < n && text[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          depth--;
          i += 2;
        } else {
          if (text[i] === '\n') out += '\n';
          i++;
        }
      }
      out += ' ';
      continue;
    }
    // Raw strings: r"…", r#"…"#, br#"…"#.
    const raw = /^b?r(#*)"/.exec(text.slice(i, i + 260));
    if (raw && !/[A-Za-z0-9_]/.test(text[i - 1] ?? '')) {
      const close = `"${raw[1]}`;
      const end = text.indexOf(close, i + raw[0].length);
      const stop = end < 0 ? n : end + close.length;
      out += '""' + '\n'.repeat((text.slice(i, stop).match(/\n/g) ?? []).length);
      i = stop;
      continue;
    }
    if (c === '"') {
      i++;
      let lines = 0;
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\') i++;
        else if (text[i] === '\n') lines++;
        i++;
      }
      i++;
      out += '""' + '\n'.repeat(lines);
      continue;
    }
    if (c === "'") {
      // A char literal ('a', '\n', '\u{1F600}', '\''), not a lifetime ('a, 'static).
      const literal = /^'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'/u.exec(
        text.slice(i, i + 16),
      );
      if (literal) {
        out += "' '";
        i += literal[0].length;
        continue;
      }
    }
    out += c;
    i++;
  }
  return out;
}

/** Index just past the item that starts at `start`: its `{…}` block or its `;`. */
function itemEnd(text, start) {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '(' || c === '[') depth++;
    else if (c === '}' || c === ')' || c === ']') {
      depth--;
      if (depth === 0 && c === '}') return i + 1;
      if (depth < 0) return i;
    } else if (c === ';' && depth === 0) return i + 1;
  }
  return text.length;
}

const CFG_TEST = /#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]/g;

/**
 * Cuts every `#[cfg(test)]` item out of stripped code (blanked, so line numbers stay), and
 * returns the names of the out-of-line modules it declared (`#[cfg(test)] mod tests;`), with
 * their `#[path]` when given.
 */
export function removeTestItems(text) {
  const testModules = [];
  let result = text;
  for (;;) {
    CFG_TEST.lastIndex = 0;
    const found = CFG_TEST.exec(result);
    if (!found) break;
    const end = itemEnd(result, found.index + found[0].length);
    const item = result.slice(found.index, end);
    const declared = /\bmod\s+(\w+)\s*;\s*$/.exec(item);
    if (declared) {
      const pathAttr = /#\s*\[\s*path\s*=\s*"([^"]*)"\s*\]/.exec(item);
      testModules.push({ name: declared[1], path: pathAttr ? pathAttr[1] : null });
    }
    result = result.slice(0, found.index) + item.replace(/[^\n]/g, ' ') + result.slice(end);
  }
  return { code: result, testModules };
}

// `#[path]` values are string literals, which stripRust empties; read them from the original.
function testModulePaths(original) {
  const paths = new Map();
  const pattern =
    /#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]\s*(?:#\s*\[[^\]]*\]\s*)*?#\s*\[\s*path\s*=\s*"([^"]*)"\s*\]\s*(?:#\s*\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g;
  for (const m of original.matchAll(pattern)) paths.set(m[2], m[1]);
  return paths;
}

const isTestFileName = (rel) =>
  /(^|\/)(tests|test_support)\.rs$|_tests\.rs$|(^|\/)tests\//.test(rel);

function listRustFiles(src) {
  const files = [];
  (function walk(dir) {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.rs')) files.push(full);
    }
  })(src);
  return files.sort();
}

/** The module path of a file: `a/b/c.rs` and `a/b/c/mod.rs` are `[a, b, c]`. */
function modulePathOf(rel) {
  const parts = rel.replace(/\.rs$/, '').split('/');
  if (parts[parts.length - 1] === 'mod') parts.pop();
  return parts;
}

/** The folder that a file's `mod x;` declarations resolve in. */
function childDir(file) {
  const base = path.basename(file);
  if (base === 'mod.rs' || base === 'lib.rs' || base === 'main.rs') return path.dirname(file);
  return file.replace(/\.rs$/, '');
}

/** Splits `a, b::{c, d}, e` at the commas outside braces. */
function splitTopLevel(list) {
  const items = [];
  let depth = 0;
  let current = '';
  for (const c of list) {
    if (c === '{') depth++;
    if (c === '}') depth--;
    if (c === ',' && depth === 0) {
      items.push(current);
      current = '';
    } else current += c;
  }
  items.push(current);
  return items.map((item) => item.trim()).filter(Boolean);
}

/** The text of the brace group opening at `open` (exclusive of the braces). */
function braceGroup(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}') {
      depth--;
      if (depth === 0) return text.slice(open + 1, i);
    }
  }
  return text.slice(open + 1);
}

const lineOf = (text, index) => text.slice(0, index).split('\n').length;

/**
 * Finds every path in `code` (a file whose module path is `filePath`) that starts at the crate
 * root, and calls `found(name, index)` with the name after the root: `crate::name`,
 * `$crate::name`, each item of `crate::{name, other::x}`, and a `super::` chain that climbs to
 * the root.
 */
function rootReferences(code, filePath, found) {
  // Inline modules (`mod x { … }`) deepen `super::` by one inside their braces.
  const inline = [];
  for (const m of code.matchAll(/\bmod\s+(\w+)\s*\{/g)) {
    const open = m.index + m[0].length - 1;
    inline.push({ start: open, end: open + braceGroup(code, open).length + 1 });
  }
  const depthAt = (index) =>
    filePath.length + inline.filter((block) => block.start < index && index < block.end).length;

  const emitFrom = (afterRoot, index) => {
    // `afterRoot` starts right after `crate::` (or the super:: chain landing at the root).
    const rest = code.slice(afterRoot);
    const ident = /^\s*(\w+)/.exec(rest);
    if (ident) {
      if (ident[1] !== 'self' && ident[1] !== 'super') found(ident[1], index);
      return;
    }
    if (/^\s*\{/.test(rest)) {
      const open = afterRoot + rest.indexOf('{');
      for (const item of splitTopLevel(braceGroup(code, open))) {
        const first = /^(\w+)/.exec(item);
        if (first && first[1] !== 'self') found(first[1], index);
      }
    }
  };

  // `crate::` and `$crate::`, but not a visibility `pub(in crate::x)`.
  for (const m of code.matchAll(/(\$?)\bcrate\s*::\s*/g)) {
    if (/\bin\s+$/.test(code.slice(Math.max(0, m.index - 8), m.index))) continue;
    emitFrom(m.index + m[0].length, m.index);
  }
  // `super::super::x`: lands at the crate root when the chain is as long as the depth.
  for (const m of code.matchAll(/(?<![\w:$])((?:super\s*::\s*)+)/g)) {
    const climbs = (m[1].match(/super/g) ?? []).length;
    const depth = depthAt(m.index);
    if (climbs > depth) continue;
    // A shorter chain stays inside the file's own top-level module: no edge.
    if (climbs === depth) emitFrom(m.index + m[0].length, m.index);
  }
}

/**
 * The top-level module graph of one crate: `{ modules, edges }`, where `edges` maps a module
 * to a map of the modules it names and where (file:line) it first does so.
 */
export function moduleGraph(src) {
  const files = listRustFiles(src);
  const rels = new Map(files.map((file) => [file, path.relative(src, file).split(path.sep).join('/')]));
  const roots = files.filter((file) => /^(lib|main)\.rs$/.test(rels.get(file)));

  // Files excluded as test code: by name, and every module declared under #[cfg(test)].
  const testFiles = new Set(files.filter((file) => isTestFileName(rels.get(file))));
  const parsed = new Map();
  for (const file of files) {
    const original = fs.readFileSync(file, 'utf8');
    const stripped = stripRust(original);
    // `#![cfg(test)]` makes the whole file test code.
    if (/#!\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]/.test(stripped)) testFiles.add(file);
    const { code, testModules } = removeTestItems(stripped);
    parsed.set(file, code);
    const explicit = testModulePaths(original);
    for (const { name } of testModules) {
      const given = explicit.get(name);
      const dir = given ? path.dirname(file) : childDir(file);
      const candidates = given
        ? [path.resolve(path.dirname(file), given)]
        : [path.join(dir, `${name}.rs`), path.join(dir, name, 'mod.rs')];
      for (const candidate of candidates) {
        testFiles.add(candidate);
        const folder = candidate.endsWith(`${path.sep}mod.rs`)
          ? path.dirname(candidate)
          : candidate.replace(/\.rs$/, '');
        for (const other of files) if (other.startsWith(folder + path.sep)) testFiles.add(other);
      }
    }
  }

  // Names the crate root re-exports from a module (`pub use error::{Error, Result};`).
  const aliases = new Map();
  for (const root of roots) {
    const code = parsed.get(root);
    for (const m of code.matchAll(/\bpub(?:\([^)]*\))?\s+use\s+(?:crate\s*::\s*|self\s*::\s*)?(\w+)\s*::\s*/g)) {
      const module = m[1];
      const after = code.slice(m.index + m[0].length);
      const names = after.startsWith('{')
        ? splitTopLevel(braceGroup(after, 0))
        : [/^[^;]*/.exec(after)[0]];
      for (const item of names) {
        const as = /\bas\s+(\w+)\s*$/.exec(item);
        const last = /(\w+)\s*$/.exec(item.replace(/\s+as\s+\w+\s*$/, ''));
        const name = as ? as[1] : last ? last[1] : null;
        if (name && name !== 'self' && name !== '*') aliases.set(name, module);
      }
    }
  }

  const modules = new Set();
  for (const file of files) {
    const rel = rels.get(file);
    if (roots.includes(file) || testFiles.has(file)) continue;
    modules.add(modulePathOf(rel)[0]);
  }
  const edges = new Map([...modules].map((module) => [module, new Map()]));
  for (const file of files) {
    if (roots.includes(file) || testFiles.has(file)) continue;
    const rel = rels.get(file);
    const filePath = modulePathOf(rel);
    const from = filePath[0];
    const code = parsed.get(file);
    rootReferences(code, filePath, (name, index) => {
      const to = modules.has(name) ? name : aliases.get(name);
      if (!to || to === from || !modules.has(to)) return;
      const out = edges.get(from);
      if (!out.has(to)) out.set(to, `${rel}:${lineOf(code, index)}`);
    });
  }
  return { modules: [...modules].sort(), edges };
}

/** Strongly connected groups of more than one module (Tarjan), each sorted, largest first. */
export function findCycles(modules, edges) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  const visit = (v) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const group = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of modules) if (!index.has(v)) visit(v);
  return groups.sort((a, b) => b.length - a.length || a[0].localeCompare(b[0]));
}

/** Checks each crate source folder; returns the report lines and whether any cycle exists. */
export function check(srcDirs, { showEdges = false } = {}) {
  const lines = [];
  let cycles = 0;
  for (const src of srcDirs) {
    const { modules, edges } = moduleGraph(src);
    const name = path.basename(path.dirname(src));
    const groups = findCycles(modules, edges);
    cycles += groups.length;
    if (groups.length === 0) lines.push(`${name}: ${modules.length} modules, no cycle`);
    for (const group of groups) {
      lines.push(`${name}: cycle of ${group.length} modules: ${group.join(', ')}`);
      for (const from of group) {
        for (const [to, where] of edges.get(from)) {
          if (group.includes(to)) lines.push(`  ${from} -> ${to}   (${where})`);
        }
      }
    }
    if (showEdges) {
      for (const from of modules) {
        for (const [to, where] of edges.get(from)) lines.push(`  edge ${from} -> ${to}   (${where})`);
      }
    }
  }
  return { lines, cycles };
}

function main() {
  const args = process.argv.slice(2);
  const showEdges = args.includes('--edges');
  let dirs = args.filter((arg) => arg !== '--edges').map((dir) => path.resolve(dir));
  if (dirs.length === 0) {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const crates = path.join(root, 'crates');
    dirs = fs
      .readdirSync(crates, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(crates, entry.name, 'src')))
      .map((entry) => path.join(crates, entry.name, 'src'))
      .sort();
  }
  const { lines, cycles } = check(dirs, { showEdges });
  for (const line of lines) console.log(line);
  if (cycles > 0) {
    console.log(
      `module cycles: ${cycles}. Layers point down (docs/architecture.md, "Layers"): move what both sides need into the lower module, or pass it in.`,
    );
    process.exit(1);
  }
  console.log('module cycles: none');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
