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
//! Every scope protects the git configuration of its work directory ([`git_guards`]: the
//! repository's and the host's config files, read as git reads them, and what they and the
//! hooks lead to) and what its `sandbox.protect` patterns match ([`protect_patterns`]). A worker
//! plan adds the files of its graph (`worker::protected`). The kernel gets, besides, every
//! other name (hard link) of a protected file found in a writable root: it protects paths,
//! not files.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::approval::Decision;
use crate::error::{Error, Result};
use crate::fs::expand::{expand_with_other_names, other_names};
use crate::fs::rules::{PathRule, PathRules};
use crate::limits::MAX_PROTECT_PATTERNS;

mod git;
mod git_config;
mod script_imports;
mod server_code;

pub use git::{file_tool_protection, git_guards, git_guards_with, GitEnv};
pub use server_code::scripts_inside;

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
    /// The work directories these guards were made for ([`git_guards`]): where, with the
    /// writable roots holding a protected path, other names of protected files are looked for.
    work_dirs: Vec<PathBuf>,
    /// The other names found so far, by root walked.
    links: LinkCache,
}

/// The other names (hard links) of protected files found below each root walked: a cache of
/// walks, emptied when the protected list changes. Not part of a value's identity.
#[derive(Clone, Default)]
struct LinkCache(Arc<Mutex<HashMap<PathBuf, Vec<GuardedPath>>>>);

impl PartialEq for LinkCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for LinkCache {}

impl std::fmt::Debug for LinkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkCache")
    }
}

impl Guards {
    /// Protects `path` (made absolute and real, see [`real_path`]); the first reason given for a
    /// path is kept.
    pub fn protect(&mut self, path: &Path, reason: impl Into<String>) {
        let reason = reason.into();
        self.links = LinkCache::default();
        // A symlink on the way (`lib -> pkg` for `lib/tools.mjs`, `node_modules/pkg ->
        // ../vendor/pkg`) decides what is loaded by that name as much as the file does: it is
        // protected too (as the link, which is put back if a call replaces it). So is each link
        // of a chain (`pre-commit -> ../../scripts/hook -> hook.sh`), and the file at its end,
        // also when missing (a dangling hook link would run what a call creates there).
        let mut at = path.to_path_buf();
        for _ in 0..MAX_LINKS_ON_THE_WAY {
            for link in links_on_the_way(&at) {
                let what = format!("a symlink on the way to {} ({reason})", path.display());
                push(&mut self.protect, link, what);
            }
            match link_target(&at) {
                Some(target) => at = target,
                None => break,
            }
        }
        add(&mut self.protect, &at, reason);
    }

    /// Hides `path`; the first reason given for a path is kept.
    pub fn hide(&mut self, path: &Path, reason: impl Into<String>) {
        add(&mut self.hide, path, reason.into());
    }

    /// Adds every path of `other`.
    pub fn extend(&mut self, other: &Guards) {
        self.links = LinkCache::default();
        for dir in &other.work_dirs {
            if !self.work_dirs.contains(dir) {
                self.work_dirs.push(dir.clone());
            }
        }
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
            self.with_other_names(&writable)
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
            .with_other_names(&writable)
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

impl Guards {
    /// The protected paths, with every other name (a hard link) of a protected file, or of a
    /// file inside a protected directory, found in a writable root: the kernel mounts a path
    /// read-only, not a file, so writing another name would change the protected file.
    fn with_other_names(&self, writable: &impl Fn(&Path) -> bool) -> Vec<GuardedPath> {
        let mut all = self.protect.clone();
        for root in self.link_roots(writable) {
            for guarded in self.other_names_below(&root) {
                push(&mut all, guarded.path, guarded.reason);
            }
        }
        all
    }

    /// The writable roots other names are looked for in: the outermost writable ancestor of
    /// each work directory these guards were made for, and of each protected path.
    fn link_roots(&self, writable: &impl Fn(&Path) -> bool) -> Vec<PathBuf> {
        let candidates = self
            .work_dirs
            .iter()
            .chain(self.protect.iter().map(|guarded| &guarded.path));
        outermost(candidates.filter_map(|path| {
            path.ancestors()
                .filter(|ancestor| writable(ancestor))
                .last()
                .map(Path::to_path_buf)
        }))
    }

    /// The other names below `root` of the protected files (walked once per root and list).
    /// A root too large to walk ([`MAX_GUARD_WALK_ENTRIES`](crate::limits::MAX_GUARD_WALK_ENTRIES)
    /// entries) gives none (docs/security.md, section 7).
    fn other_names_below(&self, root: &Path) -> Vec<GuardedPath> {
        let mut cache = self.links.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cache.get(root) {
            return found.clone();
        }
        let seeds: Vec<PathBuf> = self.protect.iter().map(|g| g.path.clone()).collect();
        let found: Vec<GuardedPath> = other_names(root, &seeds, None)
            .unwrap_or_default()
            .into_iter()
            .map(|other| GuardedPath {
                reason: format!(
                    "another name of {} (a hard link; {})",
                    other.of.display(),
                    self.protect[other.seed].reason
                ),
                path: other.path,
            })
            .collect();
        cache.insert(root.to_path_buf(), found.clone());
        found
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
        let is_link = match prefix.symlink_metadata() {
            Ok(meta) => meta.file_type().is_symlink(),
            // Nothing below a missing name exists (the kernel would stop there too).
            Err(_) => break,
        };
        if !is_link || links.len() >= MAX_LINKS_ON_THE_WAY {
            continue;
        }
        if let (Some(parent), Some(name)) = (prefix.parent(), prefix.file_name()) {
            links.push(real_path(parent).join(name));
        }
    }
    links
}

/// Where the symlink `path` leads (relative targets against its real parent directory), or
/// `None` when `path` is no symlink.
fn link_target(path: &Path) -> Option<PathBuf> {
    let target = std::fs::read_link(path).ok()?;
    let parent = real_path(path.parent()?);
    Some(parent.join(target))
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

/// `path` with `.` and `..` resolved by name (symlinks not looked at).
fn normal_path(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
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
    let normal = normal_path(&absolute);
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
