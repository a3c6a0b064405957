//! What an MCP server's own code loads from inside the work directory besides the scripts its
//! command line names: their static imports, followed file by file. A sandboxed process that
//! could rewrite `lib.js`, which `server.js` imports, would change the code the server runs at
//! its next start as surely as by rewriting `server.js`.
//!
//! Read by patterns, not parsed: an import-like string in a comment protects one more file,
//! which costs nothing. Only code is read (by its extension, or for a file without one by its
//! `#!` line): a data file a command line names stays data. Followed:
//!
//! - JavaScript and TypeScript: `import … from '…'`, `import '…'`, `export … from '…'`,
//!   `import('…')`, `require('…')`, `require.resolve('…')`, `new Worker('…')` and
//!   `fork('…')` with a literal (a template literal without `${}` too). A relative or absolute specifier is
//!   resolved as Node and TypeScript resolve it (the name, then with an extension, then `x.ts`
//!   for an `x.js` it names; a folder is protected whole); a package name protects its folder
//!   in the nearest `node_modules` inside the work directory.
//! - Python: `import a.b`, `from a import b`, `__import__('a')`, `import_module('a')` (from
//!   the script's own folder and the work directory, where Python looks first), and relative
//!   `from . import x`, `from ..m import y`;
//!   a module is `name.py`, a package its folder (protected whole).
//!
//! Not followed: names computed at run time (`import(name)`, `importlib.import_module(name)`).

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// The most files read while following one server's imports.
const MAX_FILES: usize = 2_000;
/// Larger files are not read (generated bundles import nothing worth following).
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// The most bytes read in all (the plan and every server start follow the imports again).
const MAX_TOTAL_BYTES: usize = 64 * 1024 * 1024;

/// What Node and TypeScript try after a relative specifier that names no file.
const JS_EXTENSIONS: &[&str] = &[
    ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".json", ".node",
];
/// A folder's entry points, whose own imports are followed.
const FOLDER_ENTRIES: &[&str] = &[
    "index.js",
    "index.mjs",
    "index.cjs",
    "index.ts",
    "__init__.py",
    "__main__.py",
];

/// An import form and its literal; comments may sit between them (`import /* c */ './x'`).
static JS_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:\bfrom|\bimport|\brequire(?:\.resolve)?|\bWorker|\bfork)(?:\s|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|//[^\n]*\n)*\(?\s*["'`]([^"'`$\r\n]{1,1000})["'`]"#,
    )
    .expect("a valid pattern")
});
/// Any quoted relative path of a script (`new URL('./w.mjs', import.meta.url)`,
/// `spawn(node, ['./child.mjs'])`, `runpy.run_path('tool.py')`, a shell script's `node x.js`):
/// whatever form loads it, a script is code.
static SCRIPT_LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s"'`=(\[,])((?:\.{1,2}/)?[\w@.+-]+(?:/[\w@.+-]+)*\.(?:m?js|cjs|m?ts|cts|jsx|tsx|py|sh))\b"#)
        .expect("a valid pattern")
});
/// `import a.b, c as d`, also after `;` or `:` on a line (`if x: import y`).
static PY_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?:^|[;:])[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)")
        .expect("a valid pattern")
});
static PY_FROM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)(?:^|[;:])[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\r\n#;]*)",
    )
    .expect("a valid pattern")
});
static PY_DYNAMIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:\b__import__|\bimport_module)\(\s*["']([\w.]+)["']"#).expect("a valid pattern")
});
/// A folder put on Python's module path: `sys.path.insert(0, './lib')`, `sys.path.append('lib')`.
static PY_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bsys\.path\.(?:insert\(\s*-?\d+\s*,|append\()\s*["']([^"'\r\n]{1,1000})["']"#)
        .expect("a valid pattern")
});
static PY_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_]\w*").expect("a valid pattern"));

/// The files and folders inside `work_dir` that `entries` (what a server's command line names:
/// scripts and folders) import, directly or through each other. Each is given by the name it
/// is imported by (`lib/v.mjs` through a symlink `lib`), so that the links on the way are
/// protected with it; `__pycache__` beside every Python module read is protected too (Python
/// loads a `.pyc` there in place of the source).
pub(super) fn imports_inside(work_dir: &Path, entries: &[PathBuf]) -> Vec<PathBuf> {
    let mut queue: VecDeque<(PathBuf, PathBuf)> = VecDeque::new();
    for entry in entries {
        let Ok(real) = std::fs::canonicalize(entry) else {
            continue;
        };
        // Python looks for top-level modules beside the script run (for `-m pkg`, in the
        // folder it runs in: the package's parent here).
        let top = real.parent().unwrap_or(work_dir).to_path_buf();
        if real.is_dir() {
            for file in entry_points(&real) {
                queue.push_back((file, top.clone()));
            }
        } else {
            queue.push_back((real, top));
        }
    }
    let mut read = BTreeSet::new();
    let mut bytes_read = 0;
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    while let Some((file, top)) = queue.pop_front() {
        if read.len() >= MAX_FILES || bytes_read >= MAX_TOTAL_BYTES {
            break;
        }
        let Ok(file) = std::fs::canonicalize(&file) else {
            continue;
        };
        if !read.insert(file.clone()) {
            continue;
        }
        let Some(folder) = file.parent() else {
            continue;
        };
        let Some(bytes) = crate::fs::read_small_regular_file(&file, MAX_FILE_BYTES) else {
            continue;
        };
        bytes_read += bytes.len();
        let text = String::from_utf8_lossy(&bytes);
        let mut targets = match language(&file, &text) {
            Some(Language::Python) => {
                if folder.starts_with(work_dir) && folder != work_dir {
                    found.push(folder.join("__pycache__"));
                } else if folder == work_dir {
                    found.push(work_dir.join("__pycache__"));
                }
                python_imports(&text, folder, &top)
            }
            Some(Language::JavaScript) => js_imports(&text, folder, work_dir),
            Some(Language::Shell) => Vec::new(),
            None => continue, // data a command line names (`--db=./notes.json`), not code
        };
        targets.extend(script_literals(&text, folder, work_dir));
        for target in targets {
            let Ok(real) = std::fs::canonicalize(&target) else {
                continue;
            };
            if !real.starts_with(work_dir) || real == work_dir {
                continue;
            }
            let target = named(&target, &real);
            if !seen.insert(target.clone()) {
                continue;
            }
            found.extend(package_shadow(&target));
            found.push(target);
            if real.is_dir() {
                queue.extend(entry_points(&real).into_iter().map(|f| (f, top.clone())));
            } else {
                queue.push_back((real, top.clone()));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// What code given on a command line runs from inside `work_dir` (it runs there): `text` read
/// as `program` reads it (`python3 -c`, `node -e`, `sh -c`, a package.json script), its
/// imports and the scripts it names, followed.
pub(super) fn inline_code_inside(work_dir: &Path, program: &str, text: &str) -> Vec<PathBuf> {
    let mut targets = if program.starts_with("python") {
        python_imports(text, work_dir, work_dir)
    } else if ["node", "deno", "bun", "tsx", "ts-node"].contains(&program) {
        js_imports(text, work_dir, work_dir)
    } else {
        Vec::new()
    };
    targets.extend(script_literals(text, work_dir, work_dir));
    let inside: Vec<PathBuf> = targets
        .into_iter()
        .filter_map(|target| {
            let real = std::fs::canonicalize(&target).ok()?;
            (real.starts_with(work_dir) && real != work_dir).then(|| named(&target, &real))
        })
        .collect();
    let mut found = imports_inside(work_dir, &inside);
    found.extend(inside.iter().filter_map(|module| package_shadow(module)));
    found.extend(inside);
    found
}

/// Where a package made beside an imported Python module (`helpers/` beside `helpers.py`)
/// would be imported in its place: protected while nothing is there.
fn package_shadow(module: &Path) -> Option<PathBuf> {
    if module.extension()? != "py" {
        return None;
    }
    let package = module.with_extension("");
    std::fs::symlink_metadata(&package)
        .is_err()
        .then_some(package)
}

/// `path` with `.` and `..` taken out, where that names the same file as `real` (its real
/// path); else `real`. The links on the way stay in it, to be protected too.
pub(super) fn named(path: &Path, real: &Path) -> PathBuf {
    let plain = super::normal_path(path);
    match std::fs::canonicalize(&plain) {
        Ok(same) if same == real => plain,
        _ => real.to_path_buf(),
    }
}

/// The scripts quoted in `text` by a relative path (from its file's `folder`, or from the work
/// directory, where a server runs).
fn script_literals(text: &str, folder: &Path, work_dir: &Path) -> Vec<PathBuf> {
    SCRIPT_LITERAL
        .captures_iter(text)
        .filter_map(|captures| {
            let literal = captures.get(1)?.as_str();
            [folder, work_dir]
                .iter()
                .map(|base| base.join(literal))
                .find(|path| path.is_file())
        })
        .collect()
}

/// What a file is written in, by its extension, or for a file without one by its `#!` line.
#[derive(Clone, Copy)]
enum Language {
    JavaScript,
    Python,
    /// Only the scripts it names are followed.
    Shell,
}

fn language(file: &Path, text: &str) -> Option<Language> {
    match file.extension().and_then(|extension| extension.to_str()) {
        Some("js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "tsx" | "jsx") => {
            Some(Language::JavaScript)
        }
        Some("py") => Some(Language::Python),
        Some("sh" | "bash") => Some(Language::Shell),
        Some(_) => None,
        None => {
            let interpreter = text.lines().next()?.strip_prefix("#!")?;
            if interpreter.contains("python") {
                Some(Language::Python)
            } else if ["node", "deno", "bun", "tsx", "ts-node"]
                .iter()
                .any(|name| interpreter.contains(name))
            {
                Some(Language::JavaScript)
            } else if ["sh", "bash", "dash", "zsh"]
                .iter()
                .any(|name| interpreter.trim_end().ends_with(name))
            {
                Some(Language::Shell)
            } else {
                None
            }
        }
    }
}

/// The entry points of `folder` that exist: the files its `package.json` names (`main`, every
/// path in `exports`), else `index.*`; `__init__.py` and `__main__.py`.
fn entry_points(folder: &Path) -> Vec<PathBuf> {
    let mut points: Vec<PathBuf> = FOLDER_ENTRIES
        .iter()
        .map(|name| folder.join(name))
        .filter(|file| file.is_file())
        .collect();
    let manifest = folder.join("package.json");
    if let Some(json) = crate::fs::read_small_regular_file(&manifest, MAX_FILE_BYTES)
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
    {
        let mut named = Vec::new();
        for field in ["main", "module", "exports", "bin"] {
            if let Some(value) = json.get(field) {
                strings_in(value, &mut named);
            }
        }
        points.extend(
            named
                .iter()
                .filter(|name| name.starts_with("./") || !name.contains(':'))
                .filter_map(|name| resolve_relative(&folder.join(name))),
        );
    }
    points
}

/// Every string in `value` (nested objects and arrays, as `exports` conditions are), at most 256.
fn strings_in(value: &serde_json::Value, out: &mut Vec<String>) {
    if out.len() >= 256 {
        return;
    }
    match value {
        serde_json::Value::String(text) => out.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|item| strings_in(item, out)),
        serde_json::Value::Object(map) => map.values().for_each(|item| strings_in(item, out)),
        _ => {}
    }
}

/// What the JavaScript or TypeScript `text` of a file in `folder` imports, resolved.
fn js_imports(text: &str, folder: &Path, work_dir: &Path) -> Vec<PathBuf> {
    JS_IMPORT
        .captures_iter(text)
        .filter_map(|captures| {
            let specifier = captures.get(1)?.as_str();
            if specifier.starts_with("./") || specifier.starts_with("../") || specifier == "." {
                resolve_relative(&folder.join(specifier))
            } else if specifier.starts_with('/') {
                resolve_relative(Path::new(specifier))
            } else if specifier.starts_with('#') {
                package_import(specifier, folder, work_dir)
            } else {
                package_folder(specifier, folder, work_dir)
            }
        })
        .collect()
}

/// A relative specifier's file as Node and TypeScript find it: the name, the name with an
/// extension, the TypeScript file an emitted `.js` name stands for, or the folder.
fn resolve_relative(named: &Path) -> Option<PathBuf> {
    if named.is_file() {
        return Some(named.to_path_buf());
    }
    let completed = JS_EXTENSIONS.iter().find_map(|extension| {
        let mut with = named.as_os_str().to_os_string();
        with.push(extension);
        Some(PathBuf::from(with)).filter(|file| file.is_file())
    });
    let typescript = || {
        let emitted = named.extension()?.to_str()?;
        let source = match emitted {
            "js" => "ts",
            "mjs" => "mts",
            "cjs" => "cts",
            "jsx" => "tsx",
            _ => return None,
        };
        Some(named.with_extension(source)).filter(|file| file.is_file())
    };
    completed
        .or_else(typescript)
        .or_else(|| named.is_dir().then(|| named.to_path_buf()))
}

/// What `#name` imports: the target the nearest `package.json` maps it to in `imports` (the
/// first path among its conditions that exists).
fn package_import(specifier: &str, folder: &Path, work_dir: &Path) -> Option<PathBuf> {
    let root = folder
        .ancestors()
        .take_while(|ancestor| ancestor.starts_with(work_dir))
        .find(|ancestor| ancestor.join("package.json").is_file())?;
    let bytes = crate::fs::read_small_regular_file(&root.join("package.json"), MAX_FILE_BYTES)?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let mut targets = Vec::new();
    strings_in(json.get("imports")?.get(specifier)?, &mut targets);
    targets
        .iter()
        .find_map(|target| resolve_relative(&root.join(target)))
}

/// The folder of package `specifier` (`pkg`, `pkg/sub`, `@scope/pkg/sub`) in the nearest
/// `node_modules` from `folder` up to `work_dir`; built-ins (`node:fs`) have none.
fn package_folder(specifier: &str, folder: &Path, work_dir: &Path) -> Option<PathBuf> {
    if specifier.contains(':') || specifier.is_empty() {
        return None;
    }
    let mut parts = specifier.split('/');
    let first = parts.next()?;
    let name = if first.starts_with('@') {
        PathBuf::from(first).join(parts.next()?)
    } else {
        PathBuf::from(first)
    };
    folder
        .ancestors()
        .take_while(|ancestor| ancestor.starts_with(work_dir))
        .map(|ancestor| ancestor.join("node_modules").join(&name))
        .find(|package| package.is_dir())
}

/// What the Python `text` of a file in `folder` imports: top-level modules from `top` (the
/// folder of the script run) and the folders the text puts on `sys.path`, relative ones from
/// `folder` and its parents. A folder counts as a package when it has an `__init__.py` (a
/// folder without one loses to the standard library's module of its name).
fn python_imports(text: &str, folder: &Path, top: &Path) -> Vec<PathBuf> {
    // A line continued with a backslash is one statement.
    let text = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut tops = vec![top.to_path_buf()];
    for captures in PY_PATH.captures_iter(&text) {
        tops.push(folder.join(&captures[1]));
        tops.push(top.join(&captures[1]));
    }
    let mut found = Vec::new();
    let mut module = |base: &Path, dotted: &str| {
        let first = dotted.split('.').next().unwrap_or_default();
        if first.is_empty() {
            return;
        }
        let file = base.join(format!("{first}.py"));
        if file.is_file() {
            found.push(file);
        }
        let package = base.join(first);
        if package.join("__init__.py").is_file() {
            found.push(package);
        }
    };
    for captures in PY_IMPORT.captures_iter(&text) {
        for item in captures[1].split(',') {
            let dotted = item.split_whitespace().next().unwrap_or_default();
            for top in &tops {
                module(top, dotted);
            }
        }
    }
    for captures in PY_DYNAMIC.captures_iter(&text) {
        for top in &tops {
            module(top, &captures[1]);
        }
    }
    for captures in PY_FROM.captures_iter(&text) {
        let dots = captures[1].len();
        let dotted = &captures[2];
        if dots == 0 {
            for top in &tops {
                module(top, dotted);
            }
            continue;
        }
        // `.` is this file's package (its folder), each further dot one folder up.
        let Some(base) = folder.ancestors().nth(dots - 1) else {
            continue;
        };
        if dotted.is_empty() {
            // `from . import a, b`: the names are modules of the package.
            for name in PY_NAME.find_iter(&captures[3]) {
                if name.as_str() != "as" {
                    module(base, name.as_str());
                }
            }
        } else {
            // `from .net.http import get`: every package on the way runs too.
            let mut path = base.to_path_buf();
            for part in dotted.split('.') {
                module(&path, part);
                path.push(part);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn relative(root: &Path, found: Vec<PathBuf>) -> Vec<String> {
        found
            .iter()
            .map(|path| path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn javascript_imports_are_followed_through_every_form() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        write(
            &root,
            "srv/server.mjs",
            "import { a } from './lib/a.js';\nimport './side.mjs';\nexport * from \"../shared/b\";\nconst c = await import('./c.cjs');\nconst d = require ( './d' );\nnew Worker(`./w.js`);\nfork('./child');\nrequire.resolve('./r.cjs');\nimport(`./${name}.js`);\nimport fs from 'node:fs';\nimport { z } from 'zod';\nimport x from '@scope/pkg/sub';\n",
        );
        write(&root, "srv/lib/a.ts", "import { deep } from './deep.js';\n");
        write(&root, "srv/lib/deep.ts", "export const deep = 1;\n");
        write(&root, "srv/side.mjs", "");
        write(
            &root,
            "shared/b.js",
            "module.exports = require('./b-helper.json');\n",
        );
        write(&root, "shared/b-helper.json", "{}");
        write(&root, "srv/c.cjs", "");
        write(&root, "srv/d/index.js", "require('../e');\n");
        write(&root, "srv/e.js", "");
        write(&root, "node_modules/zod/index.js", "");
        write(&root, "node_modules/@scope/pkg/sub.js", "");
        write(&root, "srv/w.js", "");
        write(&root, "srv/child.js", "");
        write(&root, "srv/r.cjs", "");
        write(&root, "srv/unrelated.js", "");
        let found = imports_inside(&root, &[root.join("srv/server.mjs")]);
        assert_eq!(
            relative(&root, found),
            [
                "node_modules/@scope/pkg",
                "node_modules/zod",
                "shared/b-helper.json",
                "shared/b.js",
                "srv/c.cjs",
                "srv/child.js",
                "srv/d",
                "srv/e.js",
                "srv/lib/a.ts",
                "srv/lib/deep.ts",
                "srv/r.cjs",
                "srv/side.mjs",
                "srv/w.js",
            ]
        );
    }

    #[test]
    fn python_imports_are_followed_from_the_script_and_its_packages() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        write(
            &root,
            "server.py",
            "import os, helpers as h\nfrom tools.search import find\nfrom config import (\n  a,\n  b,\n)\nimport json\nplugin = importlib.import_module('plugins.one')\nold = __import__(\"legacy\")\n",
        );
        write(&root, "helpers.py", "");
        write(
            &root,
            "tools/__init__.py",
            "from . import fmt, net as n\nfrom .net.http import get\n",
        );
        write(&root, "tools/fmt.py", "from ..util import x\n");
        write(&root, "tools/net/__init__.py", "");
        write(&root, "util.py", "");
        write(&root, "config.py", "");
        write(&root, "plugins/__init__.py", "");
        write(&root, "legacy.py", "");
        write(&root, "unrelated.py", "");
        let found = imports_inside(&root, &[root.join("server.py")]);
        assert_eq!(
            relative(&root, found),
            [
                "__pycache__",
                "config",
                "config.py",
                "helpers",
                "helpers.py",
                "legacy",
                "legacy.py",
                "plugins",
                "plugins/__pycache__",
                "tools",
                "tools/__pycache__",
                "tools/fmt",
                "tools/fmt.py",
                "tools/net",
                "tools/net/__pycache__",
                "util",
                "util.py",
            ]
        );
    }

    #[test]
    fn a_package_run_with_dash_m_is_followed_from_its_entry_points() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        write(
            &root,
            "srv/__main__.py",
            "from .app import run\nimport common\n",
        );
        write(&root, "srv/app.py", "");
        write(&root, "common.py", "");
        let found = imports_inside(&root, &[root.join("srv")]);
        assert_eq!(
            relative(&root, found),
            [
                "__pycache__",
                "common",
                "common.py",
                "srv/__pycache__",
                "srv/app",
                "srv/app.py"
            ]
        );
    }

    #[test]
    fn only_code_is_read_a_script_without_extension_by_its_interpreter() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        write(
            &root,
            "server",
            "#!/usr/bin/env node\nrequire('./lib.js');\n",
        );
        write(&root, "tool", "#!/usr/bin/env python3\nimport helpers\n");
        write(&root, "notes.json", "{\"import\": \"./secret.js\"}\n");
        write(&root, "plain", "import './other.js';\n");
        for name in ["lib.js", "helpers.py", "secret.js", "other.js"] {
            write(&root, name, "");
        }
        let entries = ["server", "tool", "notes.json", "plain"].map(|name| root.join(name));
        let found = imports_inside(&root, &entries);
        assert_eq!(
            relative(&root, found),
            ["__pycache__", "helpers", "helpers.py", "lib.js"]
        );
    }

    #[test]
    fn what_the_scanner_once_missed_is_followed() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        write(
            &root,
            "server.mjs",
            "import /* why */ './c1.mjs';\nimport { a } from // because\n './c2.mjs';\nnew Worker(new URL('./w.mjs', import.meta.url));\nconst r = createRequire(import.meta.url); r('./cr.cjs');\nspawn(process.execPath, ['./child.mjs']);\nimport lib from '#lib';\nimport { v } from './linked/v.mjs';\nimport dep from 'dep';\n",
        );
        for name in [
            "c1.mjs",
            "c2.mjs",
            "w.mjs",
            "cr.cjs",
            "child.mjs",
            "src/lib.mjs",
        ] {
            write(&root, name, "");
        }
        write(
            &root,
            "package.json",
            "{\"imports\": {\"#lib\": {\"node\": \"./src/lib.mjs\"}}}",
        );
        write(&root, "real/v.mjs", "");
        std::os::unix::fs::symlink("real", root.join("linked")).unwrap();
        // A package whose entry is its `main`, which requires another package.
        write(
            &root,
            "node_modules/dep/package.json",
            "{\"main\": \"dist/main.js\"}",
        );
        write(
            &root,
            "node_modules/dep/dist/main.js",
            "require('other');\n",
        );
        write(
            &root,
            "node_modules/other/package.json",
            "{\"exports\": {\".\": {\"require\": \"./lib/o.cjs\"}}}",
        );
        write(&root, "node_modules/other/lib/o.cjs", "");
        let found = imports_inside(&root, &[root.join("server.mjs")]);
        assert_eq!(
            relative(&root, found),
            [
                "c1.mjs",
                "c2.mjs",
                "child.mjs",
                "cr.cjs",
                "linked/v.mjs",
                "node_modules/dep",
                "node_modules/other",
                "src/lib.mjs",
                "w.mjs",
            ]
        );
    }

    #[test]
    fn python_statements_anywhere_on_a_line_and_sys_path_folders_are_followed() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        write(
            &root,
            "server.py",
            "import sys; import h1\nif True: import h2\ntry: import h3\nexcept: pass\nimport os, \\\n  h4\nsys.path.insert(0, './lib')\nimport inlib\nrunpy.run_path('h7.py')\nimport email\n",
        );
        for name in [
            "h1.py",
            "h2.py",
            "h3.py",
            "h4.py",
            "lib/inlib.py",
            "h7.py",
            "email/notes.txt",
        ] {
            write(&root, name, "");
        }
        write(
            &root,
            "start.sh",
            "#!/bin/sh\nexec python3 server.py \"$@\"\n",
        );
        let found = imports_inside(&root, &[root.join("start.sh")]);
        // A folder without `__init__.py` (data named like a standard module) is not a package.
        assert_eq!(
            relative(&root, found),
            [
                "__pycache__",
                "h1",
                "h1.py",
                "h2",
                "h2.py",
                "h3",
                "h3.py",
                "h4",
                "h4.py",
                "h7",
                "h7.py",
                "lib/__pycache__",
                "lib/inlib",
                "lib/inlib.py",
                "server",
                "server.py",
            ]
        );
    }

    #[test]
    fn nothing_outside_the_work_directory_and_cycles_end() {
        let temp = tempfile::tempdir().unwrap();
        let outer = std::fs::canonicalize(temp.path()).unwrap();
        let root = outer.join("work");
        write(
            &root,
            "a.js",
            "import './b.js'; import '../outside.js'; import '/etc/hostname';\n",
        );
        write(&root, "b.js", "import './a.js';\n");
        write(&outer, "outside.js", "");
        let found = imports_inside(&root, &[root.join("a.js")]);
        assert_eq!(relative(&root, found), ["a.js", "b.js"]);
    }
}
