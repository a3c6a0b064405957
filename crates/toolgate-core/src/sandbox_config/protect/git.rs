//! The git configuration of a work directory: what git on the host reads (the repository's
//! config files, the host's, and what they include) and what it runs from there (hooks,
//! `core.fsmonitor`, drivers and other commands config names), protected wherever a process
//! could change it.

use std::path::{Component, Path, PathBuf};

use super::git_config::{config_entries, ConfigEntry};
use super::{normal_path, real_path, Guards};

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
    // git on the host reads these in every repository; one inside the work directory or the
    // repository (a work directory that is the home) would be the agent's to write. What they
    // name elsewhere is no process's to write, and is left out of the list (it differs from
    // one machine and user to the next).
    let ours =
        |path: &Path| path.starts_with(work_dir) || top.is_some_and(|top| path.starts_with(top));
    let host_guards = host_config_guards(env, top);
    for guarded in host_guards.protected() {
        if ours(&guarded.path) {
            guards.protect(&guarded.path, guarded.reason.clone());
        }
    }
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

/// What the host's git config files (and what they include) name, for a repository at `top`
/// (`None`: outside any). Kept for up to [`HOST_CONFIG_KEPT`] while every file read then is as
/// it was (by identity, size and times; the age bounds a rewrite within one tick of the
/// clock): an `exec` with a sandbox prepares its scope per call, and reading the host's config
/// costs about a hundred system calls each time.
fn host_config_guards(env: &GitEnv, top: Option<&Path>) -> Guards {
    type Key = (Option<PathBuf>, GitEnv);
    struct Read {
        key: Key,
        taken: std::time::Instant,
        files: Vec<(PathBuf, FileSignature)>,
        guards: Guards,
    }
    static READS: std::sync::Mutex<Vec<Read>> = std::sync::Mutex::new(Vec::new());
    const KEPT: usize = 8;
    let key: Key = (top.map(Path::to_path_buf), env.clone());
    let unchanged = |read: &Read| {
        read.key == key
            && read.taken.elapsed() < HOST_CONFIG_KEPT
            && read
                .files
                .iter()
                .all(|(path, signature)| FileSignature::of(path) == *signature)
    };
    if let Ok(reads) = READS.lock() {
        if let Some(read) = reads.iter().find(|read| unchanged(read)) {
            return read.guards.clone();
        }
    }
    let mut guards = Guards::default();
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
    let mut files = Vec::new();
    read_git_configs_into(env.files.clone(), &host, &mut guards, &mut files);
    let files = files
        .into_iter()
        .map(|path| {
            let signature = FileSignature::of(&path);
            (path, signature)
        })
        .collect();
    if let Ok(mut reads) = READS.lock() {
        reads.retain(|read| read.key != key);
        if reads.len() >= KEPT {
            reads.remove(0);
        }
        reads.push(Read {
            key,
            taken: std::time::Instant::now(),
            files,
            guards: guards.clone(),
        });
    }
    guards
}

/// How long a reading of the host's git config is used again at most.
const HOST_CONFIG_KEPT: std::time::Duration = std::time::Duration::from_secs(1);

/// What a config file is, to notice a change: the file a path leads to and the path's own
/// entry (a symlink swapped), each by device, inode, size and change and modification times;
/// `None` for one that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileSignature([Option<[i64; 7]>; 2]);

impl FileSignature {
    fn of(path: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let of = |meta: std::io::Result<std::fs::Metadata>| {
            meta.ok().map(|meta| {
                [
                    meta.dev() as i64,
                    meta.ino() as i64,
                    meta.size() as i64,
                    meta.mtime(),
                    meta.mtime_nsec(),
                    meta.ctime(),
                    meta.ctime_nsec(),
                ]
            })
        };
        Self([of(std::fs::metadata(path)), of(path.symlink_metadata())])
    }
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
    read_git_configs_into(files, place, guards, &mut Vec::new());
}

/// [`read_git_configs`], naming in `read` every file it looked at (also those missing).
fn read_git_configs_into(
    files: Vec<PathBuf>,
    place: &ConfigPlace<'_>,
    guards: &mut Guards,
    read: &mut Vec<PathBuf>,
) {
    let whose = place.whose;
    let mut pending = files;
    pending.reverse();
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(config) = pending.pop() {
        read.push(config.clone());
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
                        // Its entries are looked at (symlinked hooks): a change shows there.
                        read.push(dir.clone());
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
