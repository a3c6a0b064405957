//! What an MCP server runs from inside the work directory, which the agent must not change:
//! the scripts its command line, its launcher (`npm start`, `uv run`, `-m`, `-c`) and its
//! code-loading environment name, and what those import ([`script_imports`]).

use std::path::{Path, PathBuf};

use super::script_imports;

/// What a program started as `command args…` in `work_dir` (an MCP server) runs from inside
/// it: its code, which the agent must not change. Any word naming a file counts (the value of
/// `--flag=value` too); the word in the program's place (the command, the first argument that
/// is not a flag, the module after `-m`) counts also as what Node or Python make of it
/// ([`program_inside`]). Other words naming a folder are data the program works on
/// (`server.js ./data`), not code. So does what `env` names where a variable makes the program
/// load code ([`CODE_VARIABLES`]: `NODE_OPTIONS=--require ./hook.js`, `PYTHONPATH=./lib`).
/// What those files import statically from inside the work directory counts too
/// ([`script_imports`]).
pub fn scripts_inside(
    work_dir: &Path,
    command: &str,
    args: &[String],
    env: &[(String, String)],
) -> Vec<PathBuf> {
    let program_at = args.iter().position(|arg| !arg.starts_with('-'));
    let module_at = args
        .iter()
        .position(|arg| arg == "-m")
        .map(|at| at + 1)
        .filter(|at| *at < args.len());
    let mut found = program_inside(work_dir, command);
    found.extend(environment_of(work_dir, command));
    for (at, word) in args.iter().enumerate() {
        if Some(at) == module_at {
            found.extend(module_inside(work_dir, word));
        } else if Some(at) == program_at {
            found.extend(program_inside(work_dir, word));
        } else {
            found.extend(file_inside(work_dir, word));
        }
    }
    let program = Path::new(command)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Code given on the command line (`python3 -c '…'`, `sh -c 'node server.js'`), or by a
    // package manager's script (`npm start` runs `scripts.start` of package.json).
    for pair in args.windows(2) {
        if matches!(pair[0].as_str(), "-c" | "-e" | "--eval" | "-p" | "--print") {
            found.extend(script_imports::inline_code_inside(
                work_dir, &program, &pair[1],
            ));
        }
    }
    found.extend(package_scripts_inside(work_dir, &program, args));
    for (_, value) in env
        .iter()
        .cloned()
        .chain(env_file_variables(work_dir, args))
        .filter(|(name, _)| loads_code(name))
    {
        found.extend(code_named_in(work_dir, &value));
    }
    let imported = script_imports::imports_inside(work_dir, &found);
    found.extend(imported);
    found
}

/// The variables of the env files Node is given (`--env-file=.env`): `NAME=value` lines.
fn env_file_variables(work_dir: &Path, args: &[String]) -> Vec<(String, String)> {
    args.iter()
        .filter_map(|arg| {
            arg.strip_prefix("--env-file=")
                .or_else(|| arg.strip_prefix("--env-file-if-exists="))
        })
        .filter_map(|file| crate::fs::read_small_regular_file(&work_dir.join(file), 1024 * 1024))
        .flat_map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|line| {
                    let line = line.trim();
                    let (name, value) = line
                        .strip_prefix("export ")
                        .unwrap_or(line)
                        .split_once('=')?;
                    Some((
                        name.trim().to_string(),
                        value.trim().trim_matches(['"', '\'']).to_string(),
                    ))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `-m srv.server`: the module's file (`srv/server.py`) and the top package it is in, which
/// runs first and is protected whole.
fn module_inside(work_dir: &Path, dotted: &str) -> Vec<PathBuf> {
    let mut found = program_inside(work_dir, &dotted.replace('.', "/"));
    if let Some((package, _)) = dotted.split_once('.') {
        let folder = work_dir.join(package);
        if folder.is_dir() {
            found.push(folder);
        }
    }
    found
}

/// The project environment a command runs from inside the work directory: the virtual
/// environment its path is in (`.venv/bin/python`: everything it imports is there), and for a
/// project runner (`uv run`, `poetry run`, …) the project's `.venv` and the files that decide
/// what it installs into it.
fn environment_of(work_dir: &Path, command: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if command.contains('/') {
        let named = work_dir.join(command);
        if let Some(venv) = named
            .ancestors()
            .skip(1)
            .take_while(|folder| folder.starts_with(work_dir) && *folder != work_dir)
            .find(|folder| folder.join("pyvenv.cfg").is_file())
        {
            found.push(venv.to_path_buf());
        }
    }
    let program = Path::new(command).file_name().unwrap_or_default();
    if ["uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "rye"]
        .iter()
        .any(|runner| program == *runner)
    {
        for name in [
            ".venv",
            "pyproject.toml",
            "uv.lock",
            "poetry.lock",
            "Pipfile",
            "Pipfile.lock",
            "pdm.lock",
            "requirements.txt",
        ] {
            let path = work_dir.join(name);
            if path.exists() {
                found.push(path);
            }
        }
    }
    found
}

/// What a package manager runs for `npm start`, `npm run serve`, `yarn serve`, …: the
/// work directory's `package.json` (which says it) and the scripts the script's command
/// names (with its `pre` and `post` scripts).
fn package_scripts_inside(work_dir: &Path, program: &str, args: &[String]) -> Vec<PathBuf> {
    if !["npm", "pnpm", "yarn", "bun"].contains(&program) {
        return Vec::new();
    }
    let mut words = args.iter().filter(|arg| !arg.starts_with('-'));
    let name = match words.next().map(String::as_str) {
        Some("run" | "run-script") => words.next().cloned(),
        Some(name @ ("start" | "test" | "restart" | "stop")) => Some(name.to_string()),
        // yarn and bun run a script named first (`yarn serve`).
        Some(name) if program != "npm" => Some(name.to_string()),
        _ => None,
    };
    let Some(name) = name else {
        return Vec::new();
    };
    let manifest = work_dir.join("package.json");
    let Some(json) = read_small_json(&manifest) else {
        return Vec::new();
    };
    let mut found = vec![manifest];
    for script in [format!("pre{name}"), name.clone(), format!("post{name}")] {
        if let Some(text) = json
            .get("scripts")
            .and_then(|scripts| scripts.get(&script))
            .and_then(|text| text.as_str())
        {
            found.extend(script_imports::inline_code_inside(work_dir, "sh", text));
        }
    }
    found
}

/// The variables that make a program load code from a path: Node's options
/// (`--require`, `--import`, loaders; also as npm passes them) and module folders, Python's,
/// Perl's, Ruby's and Java's module paths, startup files and options, Python's user base
/// (whose `.pth` files run), what the dynamic linker preloads or audits and glibc's converter
/// modules, a shell's startup file. Others (`DATA_DIR=./data`,
/// `MEMORY_FILE_PATH=./memory.json`) name data the program may write, which must stay
/// writable.
const CODE_VARIABLES: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_PATH",
    "npm_config_node_options",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONHOME",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "PERL5DB",
    "RUBYLIB",
    "RUBYOPT",
    "GEM_HOME",
    "GEM_PATH",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "CLASSPATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "GCONV_PATH",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    // Where other runtimes and tools find code or the configuration that names it.
    "npm_config_userconfig",
    "npm_config_globalconfig",
    "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONPYCACHEPREFIX",
    "PIP_CONFIG_FILE",
    "UV_CONFIG_FILE",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "TCLLIBPATH",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON_USER",
    "IRBRC",
    "BUNDLE_GEMFILE",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "GUILE_LOAD_PATH",
    "GUILE_LOAD_COMPILED_PATH",
    "ERL_LIBS",
    "BUN_CONFIG",
    "DENO_DIR",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
];

/// Whether the variable `name` makes a program load code ([`CODE_VARIABLES`]; npm reads its
/// `npm_config_*` variables whatever their case, Lua its variables with a version too,
/// `LUA_PATH_5_4`).
fn loads_code(name: &str) -> bool {
    let unversioned = name
        .strip_prefix("LUA_")
        .and_then(|rest| rest.split_once("_5_"))
        .map_or(name, |(base, _)| &name[..4 + base.len()]);
    CODE_VARIABLES.iter().any(|known| {
        *known == unversioned
            || (known.starts_with("npm_config_") && known.eq_ignore_ascii_case(name))
    })
}

/// The files and folders inside `work_dir` (not the work directory itself) that the words of a
/// code variable's `value` name: words as Node splits `NODE_OPTIONS` (blanks, with `"…"` and
/// `'…'` quoting), each split again at `:`, `,` and `=` (`--require=./hook.js`, `-javaagent:
/// ./a.jar`), and a short option's attached value taken (`-I./lib`, `-r./x.rb`). A name that
/// does not exist is what Node or Python would make of it (`--require ./hook` loads
/// `hook.js`; see [`program_inside`]), the name itself included: a file made there would run.
fn code_named_in(work_dir: &Path, value: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for word in quoted_words(value) {
        for part in word.split([':', ',', '=', ';']) {
            for candidate in spellings_of(part) {
                if candidate.is_empty() || candidate.starts_with('-') {
                    continue;
                }
                found.extend(named_code(work_dir, &candidate));
            }
        }
    }
    found
}

/// What one part of a code variable may name: itself, a short option's attached value
/// (`-I./lib`), a file given with `@` (`LUA_INIT=@init.lua`), the folder of a search template
/// (`./lua/?.lua`: `./lua/`), and the name percent-decoded (Node decodes `--import`
/// specifiers: `./h%2emjs` loads `./h.mjs`).
fn spellings_of(part: &str) -> Vec<String> {
    let mut spellings = vec![part.to_string()];
    spellings.extend(attached_value(part).map(str::to_string));
    spellings.extend(part.strip_prefix('@').map(str::to_string));
    for spelling in spellings.clone() {
        if let Some((folder, _)) = spelling.split_once('?') {
            spellings.push(folder.to_string());
        }
        if let Some(decoded) = percent_decoded(&spelling) {
            spellings.push(decoded);
        }
    }
    spellings
}

/// `text` with its `%XX` escapes decoded, when it has any and they decode to UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |byte: u8| (byte as char).to_digit(16);
        match (
            bytes[at],
            bytes.get(at + 1).copied().and_then(hex),
            bytes.get(at + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                at += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// What `word` names inside `work_dir` as code: the file or folder it leads to, else what a
/// program would make of it, and the name itself where it is missing and spelled as a path.
fn named_code(work_dir: &Path, word: &str) -> Vec<PathBuf> {
    match std::fs::canonicalize(work_dir.join(word)) {
        Ok(real) => (real.starts_with(work_dir) && real != work_dir)
            .then_some(real)
            .into_iter()
            .collect(),
        Err(_) => {
            let mut found = program_inside(work_dir, word);
            let named = work_dir.join(word);
            // Only a word spelled as a path (`./e13`, `lib/h.cjs`): `4096` or `strict` in an
            // option's place name no file.
            let spelled_as_path = word.contains('/') || word.starts_with('.');
            if spelled_as_path && !found.contains(&named) && !is_parent_walk(word) {
                found.push(named);
            }
            found
        }
    }
}

/// Whether `word` climbs out with `..` (it then names nothing inside the work directory).
fn is_parent_walk(word: &str) -> bool {
    Path::new(word)
        .components()
        .any(|part| part == std::path::Component::ParentDir)
}

/// The value of a short option with its value attached (`-I./lib`: `./lib`; `-r./x.rb`).
fn attached_value(word: &str) -> Option<&str> {
    let rest = word.strip_prefix('-')?;
    if rest.starts_with('-') {
        return None;
    }
    let mut chars = rest.chars();
    chars.next()?;
    Some(chars.as_str())
}

/// The words of `value` split at blanks, where `"…"` (with `\` escapes) and `'…'` quote.
fn quoted_words(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('"'), '\\') => word.extend(chars.next()),
            (Some(open), c) if c == open => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The file `word` names inside `work_dir`, if any.
fn file_inside(work_dir: &Path, word: &str) -> Option<PathBuf> {
    let value = word.rsplit_once('=').map_or(word, |(_, value)| value);
    if value.is_empty() {
        return None;
    }
    let named = work_dir.join(value);
    let real = std::fs::canonicalize(&named).ok()?;
    // By the name it is run by: a symlink on the way is protected with it.
    (real.starts_with(work_dir) && real.is_file()).then(|| script_imports::named(&named, &real))
}

/// What `word` in a program's place makes Node or Python load from inside `work_dir`:
///
/// - a file: that file;
/// - a folder (`node ./srv`, `python3 -m srv`): the folder, whose `index.js`, `package.json`
///   or `__init__.py`/`__main__.py` runs; the work directory itself (`node .`): what it runs
///   ([`folder_entry_points`]);
/// - nothing, where a file of that name with a script extension exists (`node ./server` runs
///   `server.js`, `-m srv` finds `srv.py`): those files, and the name itself, which a file made
///   there would take the place of.
fn program_inside(work_dir: &Path, word: &str) -> Vec<PathBuf> {
    let value = word;
    if value.is_empty() || value.starts_with('-') {
        return Vec::new();
    }
    let inside = |path: &Path| {
        std::fs::canonicalize(path)
            .ok()
            .filter(|real| real.starts_with(work_dir))
    };
    let named = work_dir.join(value);
    match named.symlink_metadata() {
        Ok(_) if inside(&named).as_deref() == Some(work_dir) => folder_entry_points(work_dir),
        Ok(_) => inside(&named)
            .filter(|real| real.is_file() || real.is_dir())
            .map(|real| script_imports::named(&named, &real))
            .into_iter()
            .collect(),
        Err(_) => {
            let found: Vec<PathBuf> = SCRIPT_EXTENSIONS
                .iter()
                .filter_map(|extension| {
                    let mut with = named.clone().into_os_string();
                    with.push(extension);
                    inside(Path::new(&with)).filter(|real| real.is_file())
                })
                .collect();
            if found.is_empty() || !named.starts_with(work_dir) {
                return found;
            }
            std::iter::once(named).chain(found).collect()
        }
    }
}

/// What `node .` or `python3 .` runs of `folder` (the work directory itself, which cannot be
/// protected whole): its `package.json` and the `main` it names, else `index.js`, …, and
/// `__main__.py`; also those that do not exist yet, where a file made would run.
fn folder_entry_points(folder: &Path) -> Vec<PathBuf> {
    let manifest = folder.join("package.json");
    let main = read_small_json(&manifest)
        .and_then(|json| json.get("main")?.as_str().map(str::to_string))
        .map(|main| folder.join(main))
        .and_then(|main| std::fs::canonicalize(main).ok())
        .filter(|main| main.starts_with(folder) && main.is_file());
    let mut points = vec![manifest];
    points.extend(main);
    points.extend(
        [
            "index.js",
            "index.mjs",
            "index.cjs",
            "index.json",
            "__main__.py",
        ]
        .iter()
        .map(|name| folder.join(name)),
    );
    points
}

/// `path` as JSON, when it is a small regular file that parses.
fn read_small_json(path: &Path) -> Option<serde_json::Value> {
    let bytes = crate::fs::read_small_regular_file(path, 1024 * 1024)?;
    serde_json::from_slice(&bytes).ok()
}

/// What Node and Python add to a module name they look for (`node ./server`, `-m srv`).
const SCRIPT_EXTENSIONS: &[&str] = &[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".json", ".py"];
