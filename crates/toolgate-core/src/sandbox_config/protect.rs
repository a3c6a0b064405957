//! Protected and hidden paths: what no sandboxed process may change, and what none may see.
//!
//! Nothing the agent can write may later run on the host. A process allowed to write the work
//! directory could otherwise rewrite the configuration toolgate reads at the next run (a worker
//! file saying `sandbox: { mode: off }`, a tools module imported on the host) or what git runs
//! on the host (`.git/hooks`, `core.fsmonitor` in `.git/config`). So such paths are
//! **protected**: read-only for every process whatever else is writable, and refused by the
//! file tools (`PATH_BLOCKED`, rule `protected`). Paths a `blocked` path rule matches are
//! **hidden**: processes can neither read, write, link nor create them.
//!
//! [`Guards`] holds both lists with the reason for each path. A sandbox scope carries them;
//! [`Guards::for_policy`] gives the kernel the paths that matter under that scope (protected
//! ones inside a writable root, hidden ones inside a readable one: elsewhere the kernel already
//! refuses), and [`Guards::report`] every path with its reason for `toolgate check`.
//!
//! Every scope protects the git configuration of its work directory ([`git_guards`]) and what
//! its `sandbox.protect` patterns match ([`protect_patterns`]). A worker plan adds the files of
//! its graph (`worker::protected`).

use std::path::{Component, Path, PathBuf};

use crate::approval::Decision;
use crate::error::{Error, Result};
use crate::fs::expand::expand_with_other_names;
use crate::fs::rules::{PathRule, PathRules};
use crate::limits::MAX_PROTECT_PATTERNS;

/// One protected or hidden path and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardedPath {
    /// Absolute; symlinks resolved (for a path that does not exist yet, those of its nearest
    /// existing ancestor).
    pub path: PathBuf,
    /// Why, in words: `worker file`, `git hooks of the repository`, `path rule '.env*' (blocked)`.
    pub reason: String,
}

/// How a path is guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardKind {
    /// Read-only for processes; file tools may not change it.
    Protected,
    /// Invisible to processes (not readable, writable, linkable or creatable).
    Hidden,
}

impl GuardKind {
    /// `protected` or `hidden`, as `toolgate check` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardKind::Protected => "protected",
            GuardKind::Hidden => "hidden",
        }
    }
}

/// One line of the report of a scope's guarded paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardReport {
    pub path: PathBuf,
    pub kind: GuardKind,
    pub reason: String,
    /// Whether the path exists now.
    pub exists: bool,
    /// Whether the kernel has to act on it under the scope (a protected path inside a writable
    /// root, a hidden one inside a readable root); elsewhere the sandbox refuses it already.
    pub enforced: bool,
}

/// The protected and hidden paths of a sandbox, each once, with its reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guards {
    protect: Vec<GuardedPath>,
    hide: Vec<GuardedPath>,
}

impl Guards {
    /// Protects `path` (made absolute and real, see [`real_path`]); the first reason given for a
    /// path is kept.
    pub fn protect(&mut self, path: &Path, reason: impl Into<String>) {
        let reason = reason.into();
        // A symlink on the way (`lib -> pkg` for `lib/tools.mjs`, `node_modules/pkg ->
        // ../vendor/pkg`) decides what is loaded by that name as much as the file does: it is
        // protected too (as the link, which is put back if a call replaces it).
        for link in links_on_the_way(path) {
            let what = format!("a symlink on the way to {} ({reason})", path.display());
            push(&mut self.protect, link, what);
        }
        add(&mut self.protect, path, reason);
    }

    /// Hides `path`; the first reason given for a path is kept.
    pub fn hide(&mut self, path: &Path, reason: impl Into<String>) {
        add(&mut self.hide, path, reason.into());
    }

    /// Adds every path of `other`.
    pub fn extend(&mut self, other: &Guards) {
        // Taken as they are: resolved already, and a protected symlink is the link.
        for guarded in &other.protect {
            push(
                &mut self.protect,
                guarded.path.clone(),
                guarded.reason.clone(),
            );
        }
        for guarded in &other.hide {
            add(&mut self.hide, &guarded.path, guarded.reason.clone());
        }
    }

    /// The protected paths, in the order they were added.
    pub fn protected(&self) -> &[GuardedPath] {
        &self.protect
    }

    /// The hidden paths, in the order they were added.
    pub fn hidden(&self) -> &[GuardedPath] {
        &self.hide
    }

    /// Whether nothing is guarded.
    pub fn is_empty(&self) -> bool {
        self.protect.is_empty() && self.hide.is_empty()
    }

    /// The lists the kernel applies under a sandbox that can write what `writable` accepts and
    /// read what `readable` accepts: protected paths inside a writable root (not inside a hidden
    /// path, which is stronger), hidden paths inside a readable root; each sorted, without a path
    /// that another of its list already covers.
    pub fn for_policy(
        &self,
        writable: impl Fn(&Path) -> bool,
        readable: impl Fn(&Path) -> bool,
    ) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let hide = outermost(
            self.hide
                .iter()
                .map(|guarded| guarded.path.clone())
                .filter(|path| readable(path)),
        );
        let protect = outermost(
            self.protect
                .iter()
                .map(|guarded| guarded.path.clone())
                .filter(|path| {
                    writable(path) && !hide.iter().any(|hidden| path.starts_with(hidden))
                }),
        );
        (protect, hide)
    }

    /// Every guarded path with its reason, whether it exists, and whether the kernel acts on it
    /// under a sandbox with these roots (see [`for_policy`](Self::for_policy)).
    pub fn report(
        &self,
        writable: impl Fn(&Path) -> bool,
        readable: impl Fn(&Path) -> bool,
    ) -> Vec<GuardReport> {
        let (protect, hide) = self.for_policy(&writable, &readable);
        let line = |guarded: &GuardedPath, kind: GuardKind, enforced: &[PathBuf]| GuardReport {
            path: guarded.path.clone(),
            kind,
            reason: guarded.reason.clone(),
            exists: guarded.path.symlink_metadata().is_ok(),
            enforced: enforced.iter().any(|path| guarded.path.starts_with(path)),
        };
        let mut lines: Vec<GuardReport> = self
            .protect
            .iter()
            .map(|guarded| line(guarded, GuardKind::Protected, &protect))
            .chain(
                self.hide
                    .iter()
                    .map(|guarded| line(guarded, GuardKind::Hidden, &hide)),
            )
            .collect();
        lines.sort_by(|a, b| a.path.cmp(&b.path));
        lines
    }
}

fn add(list: &mut Vec<GuardedPath>, path: &Path, reason: String) {
    push(list, real_path(path), reason);
}

/// Adds `path` as it is, unless it is listed already.
fn push(list: &mut Vec<GuardedPath>, path: PathBuf, reason: String) {
    if !list.iter().any(|known| known.path == path) {
        list.push(GuardedPath { path, reason });
    }
}

/// The symlinks `path` leads through, the last name included, each named by its real parent
/// directory and its own name (the link itself); at most [`MAX_LINKS_ON_THE_WAY`].
fn links_on_the_way(path: &Path) -> Vec<PathBuf> {
    let mut links = Vec::new();
    let mut prefix = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                prefix.pop();
                continue;
            }
            Component::CurDir => continue,
            other => prefix.push(other),
        }
        let is_link = prefix
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink());
        if !is_link || links.len() >= MAX_LINKS_ON_THE_WAY {
            continue;
        }
        if let (Some(parent), Some(name)) = (prefix.parent(), prefix.file_name()) {
            links.push(real_path(parent).join(name));
        }
    }
    links
}

/// The most symlinks on the way to one protected path that are protected with it.
const MAX_LINKS_ON_THE_WAY: usize = 40;

/// `paths` sorted, without duplicates and without a path inside another one of them.
fn outermost(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = paths.collect();
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for path in paths {
        if !kept.iter().any(|outer| path.starts_with(outer)) {
            kept.push(path);
        }
    }
    kept
}

/// `path` made absolute (against the current directory), `.` and `..` resolved lexically, and
/// symlinks resolved as far as it exists: a protected path that does not exist yet is named
/// by where it would be created.
pub fn real_path(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut normal = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let mut rest = Vec::new();
    let mut base = normal.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(base) {
            let mut real = real;
            for name in rest.iter().rev() {
                real.push(name);
            }
            return real;
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                base = parent;
            }
            _ => return normal,
        }
    }
}

/// The git configuration that runs programs on the host, of the repository the work directory
/// is (or is in): `hooks/` (also before it exists) and `config` of its git directory (a `.git`
/// file pointing elsewhere, as in a worktree or a submodule, is followed, and is protected
/// itself), a worktree's `config.worktree`, `.gitmodules` at its top, the `core.hooksPath`
/// directory and the files `include.path` names. Nothing when the work directory is in no
/// repository: a repository the agent makes itself is its own (see docs/security.md).
pub fn git_guards(work_dir: &Path) -> Guards {
    let mut guards = Guards::default();
    if let Some(top) = work_dir
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
    {
        let whose = if top == work_dir {
            "the work directory's"
        } else {
            "the repository's"
        };
        repository_guards(top, &mut guards, whose);
        if top != work_dir {
            // A `.git` made here would be where git run in this folder reads config and
            // hooks from, instead of the protected repository's.
            guards.protect(
                &work_dir.join(".git"),
                "the work directory's .git (inside a repository: one made here would take git over in this folder)",
            );
        }
    }
    guards
}

/// What file tools built on their own (not from a worker file) in `work_dir` may not change:
/// its git hooks and config (see [`git_guards`]), each with its reason.
pub fn file_tool_protection(work_dir: &Path) -> Vec<(PathBuf, String)> {
    let work_dir = real_path(work_dir);
    git_guards(&work_dir)
        .protected()
        .iter()
        .map(|guarded| (guarded.path.clone(), guarded.reason.clone()))
        .collect()
}

/// Git files bigger than this are not read for `gitdir:`, `commondir` or `hooksPath`.
const MAX_GIT_FILE_BYTES: u64 = 1024 * 1024;

/// Git config files read for includes, at most (a chain longer than this is not a
/// configuration toolgate expects).
const MAX_GIT_CONFIG_FILES: usize = 64;

/// How deep submodules' git directories are looked for.
const MAX_SUBMODULE_DEPTH: usize = 8;

/// The linked worktrees of a repository whose files are protected, at most (the rest of a
/// larger number is left: a repository with more is not one toolgate expects to work in).
const MAX_LINKED_WORKTREES: usize = 256;

fn repository_guards(top: &Path, guards: &mut Guards, whose: &str) {
    let dot_git = top.join(".git");
    let git_dir = match dot_git.symlink_metadata() {
        Ok(meta) if meta.is_file() => {
            guards.protect(
                &dot_git,
                format!("{whose} .git file (it names the git directory)"),
            );
            read_small(&dot_git)
                .and_then(|text| {
                    text.lines()
                        .find_map(|line| line.strip_prefix("gitdir:"))
                        .map(|dir| top.join(dir.trim()))
                })
                .unwrap_or_else(|| dot_git.clone())
        }
        Ok(meta) if meta.file_type().is_symlink() => {
            guards.protect(&dot_git, format!("{whose} .git link"));
            std::fs::canonicalize(&dot_git).unwrap_or_else(|_| dot_git.clone())
        }
        _ => dot_git.clone(),
    };
    let common = read_small(&git_dir.join("commondir"))
        .map(|dir| git_dir.join(dir.trim()))
        .unwrap_or_else(|| git_dir.clone());
    guards.protect(&git_dir.join("hooks"), format!("{whose} git hooks"));
    guards.protect(&common.join("hooks"), format!("{whose} git hooks"));
    let config = common.join("config");
    guards.protect(
        &config,
        format!("{whose} git config (core.fsmonitor, aliases, hooksPath run programs)"),
    );
    // The files that tell git where to read config and hooks from instead: `commondir`
    // (another directory's config and hooks, a copy the agent made), `config.worktree`, and
    // each linked worktree's own under `worktrees/`. Protected whether or not they exist yet.
    guards.protect(
        &git_dir.join("commondir"),
        format!("{whose} git commondir (where git reads config and hooks from)"),
    );
    guards.protect(
        &git_dir.join("config.worktree"),
        format!("{whose} git worktree config"),
    );
    // Each linked worktree's own (git in that worktree reads them).
    if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
        for entry in entries.flatten().take(MAX_LINKED_WORKTREES) {
            let linked = entry.path();
            guards.protect(
                &linked.join("commondir"),
                format!("{whose} git commondir of a linked worktree"),
            );
            guards.protect(
                &linked.join("config.worktree"),
                format!("{whose} git worktree config of a linked worktree"),
            );
        }
    }
    guards.protect(&top.join(".gitmodules"), format!("{whose} .gitmodules"));
    // The config files, and the files they include, and theirs (git follows includes of
    // included files too).
    let mut pending = vec![config, git_dir.join("config.worktree")];
    let mut read = 0;
    while let Some(config) = pending.pop() {
        read += 1;
        if read > MAX_GIT_CONFIG_FILES {
            break;
        }
        let Some(text) = read_small(&config) else {
            continue;
        };
        let base = config.parent().unwrap_or(top).to_path_buf();
        for (key, value) in config_values(&text) {
            let value = expand_home(&value);
            match key.as_str() {
                "core.hookspath" => {
                    guards.protect(&top.join(&value), format!("{whose} core.hooksPath"));
                }
                "include.path" | "includeif.path" => {
                    let included = base.join(&value);
                    guards.protect(
                        &included,
                        format!("a git config file {whose} git config includes"),
                    );
                    pending.push(included);
                }
                _ => {}
            }
        }
    }
    submodule_guards(&common.join("modules"), guards, whose, 0);
    // The submodules `.gitmodules` names, also those not checked out yet: the `.git` file in
    // each one's folder (it names the git directory git uses there), and the config and hooks
    // of the git directory it would get.
    if let Some(text) = read_small(&top.join(".gitmodules")) {
        let reason = format!("{whose} git submodule (its .git file, config and hooks)");
        for (name, path) in submodules(&text).into_iter().take(MAX_LINKED_WORKTREES) {
            guards.protect(&top.join(&path).join(".git"), reason.clone());
            for dir in [&name, &path] {
                let git_dir = common.join("modules").join(dir);
                for file in ["config", "hooks", "commondir", "config.worktree"] {
                    guards.protect(&git_dir.join(file), reason.clone());
                }
            }
        }
    }
}

/// The `(name, path)` of each `[submodule "name"]` section of a `.gitmodules` file whose name
/// and `path` are relative and without `..`.
fn submodules(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            name = header
                .strip_prefix("submodule")
                .map(str::trim)
                .and_then(|rest| rest.strip_prefix('"'))
                .and_then(|rest| rest.split_once('"'))
                .map(|(name, _)| name.to_string());
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if !key.trim().eq_ignore_ascii_case("path") {
            continue;
        }
        let path = value.trim().trim_matches('"').to_string();
        let plain = |text: &str| {
            !text.is_empty()
                && Path::new(text)
                    .components()
                    .all(|part| matches!(part, Component::Normal(_)))
        };
        if let Some(name) = name.as_ref().filter(|name| plain(name) && plain(&path)) {
            found.push((name.clone(), path));
        }
    }
    found
}

/// The git directories of a repository's submodules (`.git/modules/<name>`, and theirs): git
/// runs in a submodule when it runs in its superproject (`git status` recurses), with the
/// submodule's own config and hooks.
fn submodule_guards(modules: &Path, guards: &mut Guards, whose: &str, depth: usize) {
    if depth >= MAX_SUBMODULE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(modules) else {
        return;
    };
    for entry in entries.flatten().take(MAX_LINKED_WORKTREES) {
        let dir = entry.path();
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        if dir.join("HEAD").is_file() {
            let reason = format!("{whose} git config and hooks of a submodule");
            for name in ["config", "hooks", "commondir", "config.worktree"] {
                guards.protect(&dir.join(name), reason.clone());
            }
            submodule_guards(&dir.join("modules"), guards, whose, depth + 1);
        } else {
            // A submodule named with a slash (`libs/a`) keeps its git directory deeper.
            submodule_guards(&dir, guards, whose, depth + 1);
        }
    }
}

fn read_small(path: &Path) -> Option<String> {
    let bytes = crate::fs::read_small_regular_file(path, MAX_GIT_FILE_BYTES)?;
    String::from_utf8(bytes).ok()
}

fn expand_home(value: &str) -> PathBuf {
    match (value.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(value),
    }
}

/// The `section.key` (lower case; a subsection's name dropped, so `includeIf "gitdir:x".path`
/// is `includeif.path`) and value of each line of a git config file. Enough of git's syntax to
/// find `core.hooksPath` and include paths; quoted values lose their quotes.
fn config_values(text: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut values = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or_default();
            let name = header
                .split(|c: char| c.is_whitespace() || c == '"')
                .next()
                .unwrap_or_default();
            section = name.split('.').next().unwrap_or_default().to_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        values.push((
            format!("{section}.{}", key.trim().to_lowercase()),
            value.to_string(),
        ));
    }
    values
}

/// The file `word` (a program's command or argument, e.g. an MCP server's) names, when it is a
/// file inside `work_dir` (relative words are relative to it, the program's cwd; the value of
/// `--flag=value` counts): such a script is the program's code, which the agent must not change.
pub fn script_inside(work_dir: &Path, word: &str) -> Option<PathBuf> {
    let value = word.rsplit_once('=').map_or(word, |(_, value)| value);
    if value.is_empty() {
        return None;
    }
    let real = std::fs::canonicalize(work_dir.join(value)).ok()?;
    (real.starts_with(work_dir) && real.is_file()).then_some(real)
}

/// Protects what the gitignore-style `patterns` match below `work_dir` (`setting` names the
/// list in messages, e.g. `/w/worker.yaml: sandbox.protect`). A pattern without wildcards is
/// protected also while nothing exists there, so that it cannot be created. `CONFIG_INVALID`
/// for a bad pattern, too many, or a walk over [`MAX_GUARD_WALK_ENTRIES`](crate::limits::MAX_GUARD_WALK_ENTRIES) entries.
pub fn protect_patterns(work_dir: &Path, patterns: &[String], setting: &str) -> Result<Guards> {
    let mut guards = Guards::default();
    if patterns.is_empty() {
        return Ok(guards);
    }
    if patterns.len() > MAX_PROTECT_PATTERNS {
        return Err(Error::ConfigInvalid(format!(
            "{setting} has {} patterns; at most {MAX_PROTECT_PATTERNS} are allowed. Cover several paths with one pattern (e.g. 'config/**')",
            patterns.len()
        )));
    }
    let rules: Vec<PathRule> = patterns
        .iter()
        .map(|pattern| PathRule {
            pattern: pattern.clone(),
            approval: Decision::Blocked,
        })
        .collect();
    let compiled = PathRules::new(&rules, setting, false)?;
    let reason = |pattern: &str| format!("{setting} '{pattern}'");
    for pattern in patterns {
        if let Some(literal) = literal_path(pattern) {
            guards.protect(&work_dir.join(literal), reason(pattern));
        }
    }
    let matches = |_: &Path, relative: &Path, kind| compiled.decide(relative, kind).is_some();
    let found = expand_with_other_names(work_dir, &[&matches], None)
        .map_err(|stopped| stopped.into_error(setting))?;
    for matched in found {
        let relative = matched.path.strip_prefix(work_dir).unwrap_or(&matched.path);
        let pattern = compiled
            .decide(relative, crate::fs::rules::EntryKind::Unknown)
            .map(|rule| rule.pattern)
            .unwrap_or_default();
        guards.protect(&matched.path, reason(&pattern));
    }
    Ok(guards)
}

/// The path a pattern without wildcards names at the top of the work directory (`Makefile`,
/// `/config/app.yaml`, `scripts/`), or `None` for one with wildcards or escapes.
fn literal_path(pattern: &str) -> Option<PathBuf> {
    if pattern.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        return None;
    }
    let body = pattern.trim_start_matches('/').trim_end_matches('/');
    (!body.is_empty()).then(|| PathBuf::from(body))
}

#[cfg(test)]
mod tests;
