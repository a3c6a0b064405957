//! The one set of skip rules for every tree walk (glob, grep, tree), and cancellation.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{Match, WalkBuilder};

use super::access::{Access, WalkFilter};
use super::special;
use crate::error::{Error, Result};
use crate::limits::SKIPPED_DIRECTORIES;

/// Whether a directory with this name is skipped by walks.
pub fn is_skipped_dir(name: &std::ffi::OsStr) -> bool {
    SKIPPED_DIRECTORIES.iter().any(|skipped| name == *skipped)
}

/// Lets a caller stop a long walk or search from another thread. Cloning shares the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Asks every operation holding a clone to stop at its next check.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(TOOL_FAILED)` once cancelled; `what` names the operation.
    pub fn check(&self, what: &str) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::ToolFailed(format!("{what} was cancelled")));
        }
        Ok(())
    }
}

/// What a walk should include beyond the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalkOptions {
    /// Also yield hidden (dot) files and directories.
    pub hidden: bool,
    /// Do not descend deeper than this (the base is depth 0).
    pub max_depth: Option<usize>,
}

/// A walker over `base` (inside the root) with toolgate's rules: `.gitignore`, `.ignore` and
/// `.git/info/exclude` are honoured (also outside a git repository, and those of the
/// directories between the root and `base`, but never those above the root); the
/// [`SKIPPED_DIRECTORIES`] are pruned; hidden entries are skipped unless asked for; symlinks are
/// never followed. With path rules, blocked entries are never yielded and blocked directories
/// never entered.
///
/// The ignore files are read by toolgate ([`IgnoreFiles`]), not by the `ignore` crate, which
/// opens them with a plain blocking `open` that follows symlinks: a FIFO named `.gitignore`
/// would hold the walk forever.
pub fn walker<'a>(access: impl Into<Access<'a>>, base: &Path, options: WalkOptions) -> WalkBuilder {
    walker_pruned(access, base, options, |_| true)
}

/// Like [`walker`], and also prunes the directories for which `enter` returns false.
pub fn walker_pruned<'a>(
    access: impl Into<Access<'a>>,
    base: &Path,
    options: WalkOptions,
    enter: impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static,
) -> WalkBuilder {
    let access = access.into();
    let validator = access.validator();
    // Only blocked entries matter to a walk; the level is not used here.
    let filter: Option<WalkFilter> = access.walk_filter(crate::approval::Decision::Blocked);
    let ignores = IgnoreFiles::new(validator.root());
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(!options.hidden)
        .parents(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .ignore(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(options.max_depth)
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            let file_type = entry.file_type();
            let is_dir = file_type.is_some_and(|t| t.is_dir());
            if is_dir && (is_skipped_dir(entry.file_name()) || !enter(entry)) {
                return false;
            }
            if ignores.ignored(entry.path(), is_dir) {
                return false;
            }
            let is_symlink = file_type.is_some_and(|t| t.is_symlink());
            let is_file = file_type.is_some_and(|t| t.is_file());
            !filter.as_ref().is_some_and(|filter| {
                filter.is_blocked(entry.path(), is_dir, is_symlink)
                    || (is_file
                        && entry
                            .ino()
                            .is_some_and(|ino| filter.hides_file(entry.path(), ino)))
            })
        });
    builder
}

/// The largest ignore file honoured; a larger one is not read (its rules do not apply).
const MAX_IGNORE_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The ignore files of the directories a walk passes through, read once per directory with
/// non-blocking, no-follow opens of regular files only ([`super::special`]). They apply as
/// ripgrep applies them: the deepest directory with an opinion decides, `.ignore` before
/// `.gitignore` before `.git/info/exclude`, and git's files stop at the top of a repository.
#[derive(Debug)]
struct IgnoreFiles {
    root: PathBuf,
    dirs: Mutex<HashMap<PathBuf, Arc<DirIgnores>>>,
}

/// The ignore rules one directory contributes, and its parent's (up to the root).
#[derive(Debug)]
struct DirIgnores {
    parent: Option<Arc<DirIgnores>>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds a `.git` directory: the top of a repository.
    repository: bool,
}

impl IgnoreFiles {
    fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            dirs: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `path` (a walk entry below the root) is ignored.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let Some(parent) = path.parent() else {
            return false;
        };
        let Some(mut dir) = self.of(parent) else {
            return false;
        };
        // For each kind of file, what the deepest one with an opinion says: Some(true) to
        // ignore, Some(false) for a `!` whitelist.
        let (mut ignore, mut git, mut exclude) = (None, None, None);
        let mut in_repository = true;
        loop {
            ignore = ignore.or_else(|| verdict(dir.ignore.as_ref(), path, is_dir));
            if in_repository {
                git = git.or_else(|| verdict(dir.git.as_ref(), path, is_dir));
                exclude = exclude.or_else(|| verdict(dir.exclude.as_ref(), path, is_dir));
            }
            // A repository's own files are its last: those above it do not apply inside it.
            in_repository &= !dir.repository;
            let Some(parent) = dir.parent.clone() else {
                break;
            };
            dir = parent;
        }
        ignore.or(git).or(exclude).unwrap_or(false)
    }

    /// The rules of `dir` and its parents up to the root; `None` outside the root.
    fn of(&self, dir: &Path) -> Option<Arc<DirIgnores>> {
        if !dir.starts_with(&self.root) {
            return None;
        }
        if let Some(known) = self.lock().get(dir) {
            return Some(Arc::clone(known));
        }
        let parent = if dir == self.root {
            None
        } else {
            self.of(dir.parent()?)
        };
        let read = |name: &str| {
            let file = dir.join(name);
            let bytes = special::read_small_regular(&file, MAX_IGNORE_FILE_BYTES)?;
            parse_ignore_file(dir, &file, &bytes)
        };
        let repository = dir.join(".git").is_dir();
        let built = Arc::new(DirIgnores {
            parent,
            ignore: read(".ignore"),
            git: read(".gitignore"),
            exclude: repository.then(|| read(".git/info/exclude")).flatten(),
            repository,
        });
        Some(Arc::clone(
            self.lock().entry(dir.to_path_buf()).or_insert(built),
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<DirIgnores>>> {
        self.dirs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What `rules` say about `path`: `Some(true)` ignore, `Some(false)` whitelist, `None` nothing.
fn verdict(rules: Option<&Gitignore>, path: &Path, is_dir: bool) -> Option<bool> {
    match rules?.matched(path, is_dir) {
        Match::None => None,
        Match::Ignore(_) => Some(true),
        Match::Whitelist(_) => Some(false),
    }
}

/// The rules of an ignore file `file` in `dir`; lines that are not valid globs are skipped, as
/// ripgrep skips them.
fn parse_ignore_file(dir: &Path, file: &Path, bytes: &[u8]) -> Option<Gitignore> {
    let text = String::from_utf8_lossy(bytes);
    let mut builder = GitignoreBuilder::new(dir);
    for (index, line) in text.lines().enumerate() {
        let line = if index == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}

/// A per-thread buffer for parallel walks that hands its items to the shared list in batches
/// and when the walk drops it.
pub struct Collector<'a, T> {
    local: Vec<T>,
    shared: &'a Mutex<Vec<T>>,
}

impl<'a, T> Collector<'a, T> {
    pub fn new(shared: &'a Mutex<Vec<T>>) -> Self {
        Self {
            local: Vec::new(),
            shared,
        }
    }

    pub fn push(&mut self, item: T) {
        self.local.push(item);
        if self.local.len() >= 512 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.append(&mut self.local);
    }
}

impl<T> Drop for Collector<'_, T> {
    fn drop(&mut self) {
        if !self.local.is_empty() {
            self.flush();
        }
    }
}

/// The bytes of `path` below `base` (`a/b.txt` for `/root/a/b.txt` under `/root`; empty for
/// `base` itself). Walk entries are built by joining names onto their base, so a byte prefix is
/// exact here, and far cheaper than `Path::strip_prefix`, which compares component by component.
pub fn bytes_below<'a>(path: &'a Path, base: &Path) -> Option<&'a [u8]> {
    let path = path.as_os_str().as_bytes();
    let base = base.as_os_str().as_bytes();
    let rest = path.strip_prefix(base)?;
    if rest.is_empty() {
        return Some(rest);
    }
    if base.ends_with(b"/") {
        return Some(rest);
    }
    rest.strip_prefix(b"/")
}

/// Worker threads for parallel walks: one per core, at most eight.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::PathValidator;

    #[test]
    fn skipped_dirs_hidden_files_and_gitignore_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            "src",
            "node_modules/x",
            ".git",
            "dist",
            "src/build",
            ".hidden",
            "logs",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "src/a.rs",
            "node_modules/x/i.js",
            ".git/config",
            "dist/out.js",
            "src/build/gen.rs",
            ".hidden/h",
            ".env",
            "logs/x.log",
            "keep.log",
            "src/scratch.tmp",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "logs/\n*.tmp\n").unwrap();
        let validator = PathValidator::new(root).unwrap();
        let root = validator.root().to_path_buf();
        let files = |base: &Path, options| {
            let mut files: Vec<String> = walker(&validator, base, options)
                .build()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(|e| validator.relative(e.path()).display().to_string())
                .collect();
            files.sort();
            files
        };
        assert_eq!(
            files(&root, WalkOptions::default()),
            ["keep.log", "src/a.rs"]
        );
        let with_hidden = files(
            &root,
            WalkOptions {
                hidden: true,
                max_depth: None,
            },
        );
        assert_eq!(
            with_hidden,
            [".env", ".gitignore", ".hidden/h", "keep.log", "src/a.rs"]
        );
        // Naming a skipped directory explicitly searches it; the root's .gitignore still
        // applies to a walk that starts below the root.
        assert_eq!(
            files(&root.join("node_modules"), WalkOptions::default()),
            ["node_modules/x/i.js"]
        );
        assert_eq!(
            files(&root.join("src"), WalkOptions::default()),
            ["src/a.rs"]
        );
    }

    #[test]
    fn bytes_below_strips_whole_components_only() {
        let below = |p: &str, b: &str| {
            bytes_below(Path::new(p), Path::new(b)).map(|x| String::from_utf8_lossy(x).into_owned())
        };
        assert_eq!(below("/r/a/b.txt", "/r").as_deref(), Some("a/b.txt"));
        assert_eq!(below("/r", "/r").as_deref(), Some(""));
        assert_eq!(below("/a", "/").as_deref(), Some("a"));
        assert_eq!(below("/r2/a", "/r"), None);
        assert_eq!(below("/x/a", "/r"), None);
    }

    #[test]
    fn cancel_is_shared_between_clones() {
        let cancel = Cancel::default();
        let clone = cancel.clone();
        assert!(clone.check("grep_search").is_ok());
        cancel.cancel();
        let err = clone.check("grep_search").unwrap_err();
        assert_eq!(err.code(), "TOOL_FAILED");
        assert!(err.to_string().contains("cancelled"));
    }
}
