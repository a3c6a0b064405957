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

/// Where git on the host reads configuration from outside any repository, and the home `~/`
/// stands for in it. Every file is read, whichever git would pick: the shell a person runs git
/// in later may set other variables than this process has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitEnv {
    pub home: Option<PathBuf>,
    /// The system and global config files.
    pub files: Vec<PathBuf>,
}

/// Where git installations keep their system config (distributions, `/usr/local`, Homebrew).
const SYSTEM_GIT_CONFIGS: &[&str] = &[
    "/etc/gitconfig",
    "/usr/local/etc/gitconfig",
    "/opt/homebrew/etc/gitconfig",
];

impl GitEnv {
    /// This process's: `$GIT_CONFIG_SYSTEM`, the system files, `$GIT_CONFIG_GLOBAL`,
    /// `$XDG_CONFIG_HOME/git/config`, `~/.config/git/config` and `~/.gitconfig`.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME");
        let mut files: Vec<PathBuf> = var("GIT_CONFIG_SYSTEM").into_iter().collect();
        files.extend(SYSTEM_GIT_CONFIGS.iter().map(PathBuf::from));
        files.extend(var("GIT_CONFIG_GLOBAL"));
        files.extend(var("XDG_CONFIG_HOME").map(|dir| dir.join("git/config")));
        if let Some(home) = &home {
            files.push(home.join(".config/git/config"));
            files.push(home.join(".gitconfig"));
        }
        GitEnv { home, files }
    }
}

/// The git configuration that runs programs on the host ([`git_guards_with`] this process's
/// [`GitEnv`]).
pub fn git_guards(work_dir: &Path) -> Guards {
    git_guards_with(work_dir, &GitEnv::from_env())
}

/// The git configuration that runs programs on the host. Of the repository the work directory
/// is (or is in): `hooks/` (also before it exists) and `config` of its git directory (a `.git`
/// file pointing elsewhere, as in a worktree or a submodule, is followed, and is protected
/// itself), a worktree's `config.worktree`, `.gitmodules` at its top. In those and in the
/// host's own config files (`env`), and in every file they include: the `core.hooksPath`
/// directory, the included files, and the files a command there names by path. In every hooks
/// directory: what a symlinked hook leads to. Nothing of a repository when the work directory
/// is in none: a repository the agent makes itself is its own (see docs/security.md).
pub fn git_guards_with(work_dir: &Path, env: &GitEnv) -> Guards {
    let mut guards = Guards {
        work_dirs: vec![work_dir.to_path_buf()],
        ..Guards::default()
    };
    let top = work_dir
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok());
    // git on the host reads these in every repository; one inside a writable root (a work
    // directory that is the home) would be the agent's to write.
    for file in &env.files {
        guards.protect(
            file,
            "git config outside the repository (git on the host reads it in every repository)",
        );
    }
    let host = ConfigPlace {
        top,
        whose: "the host's git config",
        home: env.home.as_deref(),
    };
    read_git_configs(env.files.clone(), &host, &mut guards);
    if let Some(top) = top {
        let whose = if top == work_dir {
            "the work directory's"
        } else {
            "the repository's"
        };
        repository_guards(top, &mut guards, whose, env);
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

/// The entries of a hooks directory looked at for symlinks, at most (git knows about 30 hooks).
const MAX_HOOK_ENTRIES: usize = 1024;

/// The paths one command in git config names that are protected, at most.
const MAX_COMMAND_PATHS: usize = 16;

fn repository_guards(top: &Path, guards: &mut Guards, whose: &str, env: &GitEnv) {
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
    protect_hooks(
        guards,
        &git_dir.join("hooks"),
        &format!("{whose} git hooks"),
    );
    protect_hooks(guards, &common.join("hooks"), &format!("{whose} git hooks"));
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
    let place = ConfigPlace {
        top: Some(top),
        whose,
        home: env.home.as_deref(),
    };
    read_git_configs(
        vec![config, git_dir.join("config.worktree")],
        &place,
        guards,
    );
    submodule_guards(&common.join("modules"), guards, whose, env, 0);
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

/// Protects a hooks directory (also before it exists) and what each symlink in it leads to:
/// git runs a hook through its link, so a link to a script elsewhere (`pre-commit ->
/// ../../scripts/pre-commit`, a common setup) makes that script a hook. Husky (v9) sets
/// `core.hooksPath` to `.husky/_`, whose every hook runs `.husky/<hook>`: with that layout
/// (a hooks directory named `_` in a folder named `.husky`) the `.husky` folder is protected too.
fn protect_hooks(guards: &mut Guards, dir: &Path, reason: &str) {
    guards.protect(dir, reason);
    protect_linked_hooks(guards, dir, reason);
    if let Some(husky) = husky_folder(dir) {
        let reason = format!("the husky folder (its '_' hooks run .husky/<hook>; {reason})");
        guards.protect(&husky, &reason);
        protect_linked_hooks(guards, &husky, &reason);
    }
}

/// Protects what the symlinks in the hooks directory `dir` lead to (each link of a chain, and
/// the file at its end: see [`Guards::protect`]).
fn protect_linked_hooks(guards: &mut Guards, dir: &Path, reason: &str) {
    let Ok(entries) = std::fs::read_dir(real_path(dir)) else {
        return;
    };
    for entry in entries.flatten().take(MAX_HOOK_ENTRIES) {
        if entry.file_type().is_ok_and(|kind| kind.is_symlink()) {
            guards.protect(
                &entry.path(),
                format!(
                    "what the symlinked hook {} runs ({reason})",
                    entry.path().display()
                ),
            );
        }
    }
}

/// The `.husky` folder of husky's hooks directory `.husky/_` (as written, or where it leads).
fn husky_folder(dir: &Path) -> Option<PathBuf> {
    [normal_path(dir), real_path(dir)]
        .into_iter()
        .find_map(|dir| {
            let parent = dir.parent()?;
            (dir.file_name()? == "_" && parent.file_name()? == ".husky")
                .then(|| parent.to_path_buf())
        })
}

/// `path` with `.` and `..` resolved by name.
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

/// How the values of a group of git config files are resolved.
struct ConfigPlace<'a> {
    /// The worktree top git runs hooks and commands in (relative `core.hooksPath` and command
    /// paths are against it); `None` outside a repository (only absolute ones count).
    top: Option<&'a Path>,
    /// Whose the files are, for reasons.
    whose: &'a str,
    /// What `~/` stands for.
    home: Option<&'a Path>,
}

/// What a git config variable means to toolgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConfigUse {
    /// `include.path`, `includeIf.<condition>.path`: another config file.
    Include,
    /// `core.hooksPath`: where hooks are.
    HooksPath,
    /// A command git runs (`core.fsmonitor`, a filter driver, an alias): the files it names
    /// by path are code.
    Command,
    Other,
}

impl ConfigUse {
    fn of(entry: &ConfigEntry) -> Self {
        let sub = entry.subsection.is_some();
        match (entry.section.as_str(), sub, entry.key.as_str()) {
            ("include", false, "path") | ("includeif", true, "path") => ConfigUse::Include,
            ("core", false, "hookspath") => ConfigUse::HooksPath,
            ("core", false, "fsmonitor" | "sshcommand" | "editor" | "pager" | "askpass")
            | ("core", false, "gitproxy")
            | ("sequence", false, "editor")
            | ("diff", false, "external")
            | ("credential", _, "helper")
            | ("gpg", _, "program")
            | ("alias", _, _)
            | ("pager", false, _)
            | ("hook", true, "command")
            | ("filter", true, "clean" | "smudge" | "process")
            | ("diff", true, "textconv" | "command")
            | ("merge", true, "driver")
            | ("difftool" | "mergetool", true, "cmd")
            | ("remote", true, "uploadpack" | "receivepack")
            | ("uploadpack", false, "packobjectshook")
            | ("sendemail", _, "sendmailcmd" | "tocmd" | "cccmd" | "headercmd") => {
                ConfigUse::Command
            }
            _ => ConfigUse::Other,
        }
    }
}

/// Reads the git config files `files` and every file they include (git follows includes of
/// included files too; every `includeIf` is followed, whatever its condition, which may hold
/// when git runs later), and protects the included files, the `core.hooksPath` directories
/// (see [`protect_hooks`]) and the files commands name (see [`command_paths`]), also those
/// that do not exist yet.
fn read_git_configs(files: Vec<PathBuf>, place: &ConfigPlace<'_>, guards: &mut Guards) {
    let whose = place.whose;
    let mut pending = files;
    pending.reverse();
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(config) = pending.pop() {
        let real = real_path(&config);
        if seen.contains(&real) {
            continue;
        }
        if seen.len() >= MAX_GIT_CONFIG_FILES {
            break;
        }
        seen.push(real);
        let Some(text) = read_small(&config) else {
            continue;
        };
        let base = config.parent().unwrap_or(Path::new("/")).to_path_buf();
        for entry in config_entries(&text) {
            let Some(value) = entry.value.as_deref().filter(|value| !value.is_empty()) else {
                continue;
            };
            let named = format!("{} in {}", entry.name(), config.display());
            match ConfigUse::of(&entry) {
                ConfigUse::Include => {
                    let included = base.join(expand_home(value, place.home));
                    guards.protect(
                        &included,
                        format!("a git config file {whose} git config includes ({named})"),
                    );
                    pending.push(included);
                }
                ConfigUse::HooksPath => {
                    if let Some(dir) = resolve_in(value, place) {
                        protect_hooks(guards, &dir, &format!("{whose} core.hooksPath ({named})"));
                    }
                }
                ConfigUse::Command => {
                    for path in command_paths(value, place) {
                        guards.protect(
                            &path,
                            format!("a file a command of {whose} git config runs ({named})"),
                        );
                    }
                }
                ConfigUse::Other => {}
            }
        }
    }
}

/// `value` as a path: `~/` expanded, a relative one against the worktree top (`None` outside a
/// repository).
fn resolve_in(value: &str, place: &ConfigPlace<'_>) -> Option<PathBuf> {
    let path = expand_home(value, place.home);
    if path.is_absolute() {
        Some(path)
    } else {
        place.top.map(|top| top.join(path))
    }
}

/// The files a command in git config names (`core.fsmonitor = .git/fsmonitor.sh`,
/// `filter.x.clean = python3 tools/clean.py`, an alias `!scripts/x`): every word with a `/`
/// (relative ones against the worktree top, where git runs them), and every argument that
/// names an existing file there (an interpreter's script). Words only: the rest of the shell's
/// syntax is not followed.
fn command_paths(value: &str, place: &ConfigPlace<'_>) -> Vec<PathBuf> {
    let command = value.trim_start();
    let command = command.strip_prefix('!').unwrap_or(command);
    let mut found = Vec::new();
    for (position, word) in shell_words(command) {
        if word.starts_with('-') || word.contains(['$', '`', '=']) {
            continue; // an option, or computed by the shell
        }
        let Some(path) = resolve_in(&word, place) else {
            continue;
        };
        // A program's name without `/` is looked for on PATH, not here.
        if word.contains('/') || (position > 0 && path.is_file()) {
            found.push(path);
        }
        if found.len() >= MAX_COMMAND_PATHS {
            break;
        }
    }
    found
}

/// The words of a shell command, each with its position in its simple command (0: the
/// program). Quotes and backslashes are taken as the shell takes them; `;`, `|`, `&`, `(`, `)`
/// and newlines start a new command, `<` and `>` separate words.
fn shell_words(command: &str) -> Vec<(usize, String)> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut position = 0;
    let mut chars = command.chars();
    let end = |word: &mut Option<String>, words: &mut Vec<(usize, String)>, next: &mut usize| {
        if let Some(done) = word.take() {
            words.push((*next, done));
            *next += 1;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ';' | '|' | '&' | '(' | ')' | '\n' => {
                end(&mut word, &mut words, &mut position);
                position = 0;
            }
            '<' | '>' => end(&mut word, &mut words, &mut position),
            _ if c.is_whitespace() => end(&mut word, &mut words, &mut position),
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                text.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                let text = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => text.extend(chars.next()),
                        other => text.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    end(&mut word, &mut words, &mut position);
    words
}

/// The `(name, path)` of each `[submodule "name"]` section of a `.gitmodules` file whose name
/// and `path` are relative and without `..`.
fn submodules(text: &str) -> Vec<(String, String)> {
    let plain = |text: &str| {
        !text.is_empty()
            && Path::new(text)
                .components()
                .all(|part| matches!(part, Component::Normal(_)))
    };
    config_entries(text)
        .into_iter()
        .filter(|entry| entry.section == "submodule" && entry.key == "path")
        .filter_map(|entry| Some((entry.subsection?, entry.value?)))
        .filter(|(name, path)| plain(name) && plain(path))
        .collect()
}

/// The git directories of a repository's submodules (`.git/modules/<name>`, and theirs): git
/// runs in a submodule when it runs in its superproject (`git status` recurses), with the
/// submodule's own config (and what it names, against the submodule's worktree) and hooks.
fn submodule_guards(modules: &Path, guards: &mut Guards, whose: &str, env: &GitEnv, depth: usize) {
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
            for name in ["config", "commondir", "config.worktree"] {
                guards.protect(&dir.join(name), reason.clone());
            }
            protect_hooks(guards, &dir.join("hooks"), &reason);
            // Its worktree, where its relative hooksPath and commands are.
            let worktree = read_small(&dir.join("config")).and_then(|text| {
                config_entries(&text)
                    .into_iter()
                    .filter(|entry| entry.name() == "core.worktree")
                    .find_map(|entry| entry.value)
                    .map(|path| normal_path(&dir.join(path)))
            });
            let place = ConfigPlace {
                top: worktree.as_deref(),
                whose: &reason,
                home: env.home.as_deref(),
            };
            read_git_configs(vec![dir.join("config")], &place, guards);
            submodule_guards(&dir.join("modules"), guards, whose, env, depth + 1);
        } else {
            // A submodule named with a slash (`libs/a`) keeps its git directory deeper.
            submodule_guards(&dir, guards, whose, env, depth + 1);
        }
    }
}

fn read_small(path: &Path) -> Option<String> {
    let bytes = crate::fs::read_small_regular_file(path, MAX_GIT_FILE_BYTES)?;
    String::from_utf8(bytes).ok()
}

/// `value` with a leading `~/` replaced by `home`.
fn expand_home(value: &str, home: Option<&Path>) -> PathBuf {
    match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(value),
    }
}

/// One variable of a git config file, as git reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConfigEntry {
    /// Lower case.
    section: String,
    /// As written in `[section "sub"]`; lower case in the old `[section.sub]`.
    subsection: Option<String>,
    /// Lower case.
    key: String,
    /// `None` for a key without `=` (a boolean true).
    value: Option<String>,
}

impl ConfigEntry {
    /// `section.subsection.key`, as `git config --list` names it.
    fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// The variables of a git config file, read as git reads them
/// (<https://git-scm.com/docs/git-config#_syntax>): comments after `#` or `;` (also after a
/// value, outside double quotes), section headers `[section]`, `[section "subsection"]` (with
/// `\"` and `\\`) and `[section.subsection]`, with a variable allowed on the header's line,
/// case-insensitive section and key names, values with whitespace trimmed (inside kept as
/// written, as git 2.45 and later do; older versions made each a space),
/// double quotes removed, the escapes `\"`, `\\`, `\n`, `\t`, `\b` and a backslash at the end of
/// a line continuing it. A line git refuses is skipped (git refuses the whole file, and then
/// runs nothing).
fn config_entries(text: &str) -> Vec<ConfigEntry> {
    let mut input = ConfigInput::new(text.strip_prefix('\u{feff}').unwrap_or(text));
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    let mut comment = false;
    while let Some(c) = input.next() {
        match c {
            '\n' => comment = false,
            _ if comment || git_space(c) => {}
            '#' | ';' => comment = true,
            '[' => {
                section = input.section_header();
                if section.is_none() {
                    input.skip_line();
                }
            }
            _ if c.is_ascii_alphabetic() => match (input.variable(c), &section) {
                (Some((key, value)), Some((name, subsection))) => entries.push(ConfigEntry {
                    section: name.clone(),
                    subsection: subsection.clone(),
                    key,
                    value,
                }),
                (Some(_), None) => {} // a variable before any section: git refuses it
                (None, _) => input.skip_line(),
            },
            _ => input.skip_line(),
        }
    }
    entries
}

/// git's `isspace`: space, tab, newline and carriage return only.
fn git_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// git's `iskeychar`.
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// A git config file read one character at a time, `\r\n` as `\n`.
struct ConfigInput<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    last: Option<char>,
}

impl<'a> ConfigInput<'a> {
    fn new(text: &'a str) -> Self {
        ConfigInput {
            chars: text.chars().peekable(),
            last: None,
        }
    }

    fn next(&mut self) -> Option<char> {
        let mut c = self.chars.next();
        if c == Some('\r') && self.chars.peek() == Some(&'\n') {
            c = self.chars.next();
        }
        self.last = c;
        c
    }

    /// Past the end of the current line (nothing when it just ended).
    fn skip_line(&mut self) {
        while self.last.is_some_and(|c| c != '\n') {
            self.next();
        }
    }

    /// After `[`: the section's name (lower case) and subsection, through `]`.
    fn section_header(&mut self) -> Option<(String, Option<String>)> {
        let mut name = String::new();
        loop {
            let c = self.next()?;
            if c == ']' {
                break;
            }
            if git_space(c) {
                let subsection = self.quoted_subsection(c)?;
                return (!name.is_empty()).then_some((name, Some(subsection)));
            }
            if !key_char(c) && c != '.' {
                return None;
            }
            name.push(c.to_ascii_lowercase());
        }
        match name.split_once('.') {
            _ if name.is_empty() => None,
            Some((section, sub)) => Some((section.to_string(), Some(sub.to_string()))),
            None => Some((name, None)),
        }
    }

    /// After the space following a section's name: `"subsection"]`.
    fn quoted_subsection(&mut self, mut c: char) -> Option<String> {
        while git_space(c) {
            if c == '\n' {
                return None;
            }
            c = self.next()?;
        }
        if c != '"' {
            return None;
        }
        let mut subsection = String::new();
        loop {
            match self.next()? {
                '\n' => return None,
                '"' => break,
                '\\' => match self.next()? {
                    '\n' => return None,
                    escaped => subsection.push(escaped),
                },
                other => subsection.push(other),
            }
        }
        (self.next()? == ']').then_some(subsection)
    }

    /// From a key's first letter: the key (lower case) and its value, through the line's end.
    fn variable(&mut self, first: char) -> Option<(String, Option<String>)> {
        let mut key = first.to_ascii_lowercase().to_string();
        let mut c = loop {
            match self.next() {
                Some(c) if key_char(c) => key.push(c.to_ascii_lowercase()),
                Some(c) => break c,
                None => return Some((key, None)),
            }
        };
        while c == ' ' || c == '\t' {
            match self.next() {
                Some(next) => c = next,
                None => return Some((key, None)),
            }
        }
        match c {
            '\n' => Some((key, None)),
            '=' => self.value().map(|value| (key, Some(value))),
            _ => None,
        }
    }

    /// After `=`: the value, through the line's end (git's `parse_value`).
    fn value(&mut self) -> Option<String> {
        let mut value = String::new();
        // Whitespace after the value so far: kept when more of the value follows.
        let mut spaces = String::new();
        let (mut quoted, mut comment) = (false, false);
        loop {
            let c = self.next().unwrap_or('\n');
            if c == '\n' {
                return (!quoted).then_some(value);
            }
            if comment {
                continue;
            }
            if git_space(c) && !quoted {
                if !value.is_empty() {
                    spaces.push(c);
                }
                continue;
            }
            if !quoted && (c == ';' || c == '#') {
                comment = true;
                continue;
            }
            value.push_str(&spaces);
            spaces.clear();
            match c {
                '\\' => match self.next().unwrap_or('\n') {
                    '\n' => {}
                    't' => value.push('\t'),
                    'b' => value.push('\u{8}'),
                    'n' => value.push('\n'),
                    escaped @ ('\\' | '"') => value.push(escaped),
                    _ => return None, // git refuses an unknown escape
                },
                '"' => quoted = !quoted,
                other => value.push(other),
            }
        }
    }
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
