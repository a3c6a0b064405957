//! Protected and hidden paths ([`SandboxPolicy::protect`](super::SandboxPolicy::protect),
//! [`hide`](super::SandboxPolicy::hide)): resolved once per sandbox, and looked at around each
//! call for what a mount cannot stop.
//!
//! The launcher's view mounts a protected path read-only over itself and replaces a hidden one
//! by an empty read-only node, and pins the directories between a writable root and it, so
//! none can be written, replaced, renamed, removed or hard-linked. A mount needs the path to
//! exist, though, so:
//!
//! - a missing protected **directory toolgate owns the layout of** is made empty before the
//!   call and then mounted read-only: `.git/hooks` in a repository that has `.git` but no hooks;
//! - any other missing protected or hidden path (`toolgate.permissions.yaml` not written yet,
//!   `.env` that does not exist) is looked at after every call: one that now exists was made
//!   by the call, is removed, and the call's result says so;
//! - a protected path that is a symlink (the link itself lives in a writable directory): one
//!   replaced during the call is put back.
//!
//! Without a view (no mount namespace), only the last two happen; protected paths inside a
//! writable root are then not protected during the call, which `enforce` refuses (see
//! `Sandbox::prepare`).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The directories (as their last two names) toolgate makes when missing so that they can be
/// mounted read-only: a repository's hooks.
const OWNED_DIRECTORIES: &[(&str, &str)] = &[(".git", "hooks")];

/// What toolgate itself last wrote at a guarded path (the permissions file a "save" answer
/// writes while a call runs), by path: such a file is toolgate's, not the call's, and is not
/// removed after the call. The identity includes the change time, which no process can set, so
/// a file a sandboxed process modified after toolgate wrote it no longer matches.
fn host_writes() -> &'static Mutex<HashMap<PathBuf, FileIdentity>> {
    static WRITES: OnceLock<Mutex<HashMap<PathBuf, FileIdentity>>> = OnceLock::new();
    WRITES.get_or_init(Default::default)
}

/// A file as it is now: device, inode, change time and size.
type FileIdentity = (u64, u64, i64, i64, u64);

fn identity(path: &Path) -> Option<FileIdentity> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type().is_file().then(|| {
        (
            meta.dev(),
            meta.ino(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.size(),
        )
    })
}

/// Notes that toolgate (the host, never a sandboxed process) has just written the regular file
/// at `path`, so that the check after a call that is running meanwhile does not take it for
/// the call's.
pub(crate) fn note_host_write(path: &Path) {
    if let Some(id) = identity(path) {
        host_writes()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_path_buf(), id);
    }
}

/// Whether what is at `path` now is exactly what toolgate last wrote there.
fn written_by_host(path: &Path) -> bool {
    let writes = host_writes().lock().unwrap_or_else(PoisonError::into_inner);
    writes
        .get(path)
        .is_some_and(|id| identity(path).as_ref() == Some(id))
}

/// A sandbox's protected and hidden paths, absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Guarded {
    pub protect: Vec<PathBuf>,
    pub hide: Vec<PathBuf>,
}

/// What a guarded path was before a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Missing,
    Link(PathBuf, (u64, u64)),
    Present((u64, u64)),
}

/// The guarded paths' states before a call.
#[derive(Debug, Clone, Default)]
pub struct GuardSnapshot(Vec<(PathBuf, bool, State)>);

impl Guarded {
    /// `protect` and `hide` made absolute against `work_dir` (whose path is canonical), with
    /// their existing parent directories resolved (the last name is kept: a protected symlink
    /// is the link).
    pub fn resolve(work_dir: &Path, protect: &[PathBuf], hide: &[PathBuf]) -> Self {
        let resolve = |paths: &[PathBuf]| {
            let mut resolved: Vec<PathBuf> =
                paths.iter().map(|path| absolute(work_dir, path)).collect();
            resolved.sort();
            resolved.dedup();
            resolved
        };
        Guarded {
            protect: resolve(protect),
            hide: resolve(hide),
        }
    }

    /// Whether there is nothing to guard.
    pub fn is_empty(&self) -> bool {
        self.protect.is_empty() && self.hide.is_empty()
    }

    /// Makes the missing protected directories toolgate owns the layout of, where `writable`
    /// (their parent is in a writable root): so that the view can mount them read-only.
    pub fn make_owned_directories(&self, writable: impl Fn(&Path) -> bool) {
        for path in &self.protect {
            let owned = OWNED_DIRECTORIES.iter().any(|(parent, name)| {
                path.file_name().is_some_and(|file| file == *name)
                    && path
                        .parent()
                        .and_then(Path::file_name)
                        .is_some_and(|dir| dir == *parent)
            });
            let parent_is_dir = path.parent().is_some_and(Path::is_dir);
            if owned && parent_is_dir && writable(path) && std::fs::symlink_metadata(path).is_err()
            {
                let _ = std::fs::create_dir(path);
            }
        }
    }

    /// The states of every guarded path (a few `lstat`s).
    pub fn snapshot(&self) -> GuardSnapshot {
        GuardSnapshot(
            self.protect
                .iter()
                .map(|path| (path, true))
                .chain(self.hide.iter().map(|path| (path, false)))
                .map(|(path, protected)| (path.clone(), protected, state(path)))
                .collect(),
        )
    }

    /// After a call: removes what the call made at a guarded path that was missing, puts back
    /// a protected symlink that was replaced, and says what it did (one message each).
    pub fn repair(&self, before: &GuardSnapshot) -> Vec<String> {
        let mut messages = Vec::new();
        for (path, protected, was) in &before.0 {
            let now = state(path);
            if &now == was || written_by_host(path) {
                continue;
            }
            let what = if *protected {
                "a protected path (toolgate's configuration or code, sandbox.protect): sandboxed processes may not create or replace it"
            } else {
                "a blocked path (approval.paths): sandboxed processes may not create it"
            };
            match was {
                State::Missing => {
                    remove(path);
                    messages.push(format!(
                        "toolgate removed '{}', which the call created: it is {what}",
                        path.display()
                    ));
                }
                State::Link(target, _) => {
                    remove(path);
                    let restored = std::os::unix::fs::symlink(target, path).is_ok();
                    messages.push(format!(
                        "toolgate {} the symlink '{}' -> '{}', which the call replaced: it is {what}",
                        if restored { "put back" } else { "could not put back" },
                        path.display(),
                        target.display()
                    ));
                }
                State::Present(_) => messages.push(format!(
                    "'{}' was replaced or removed during the call; it is {what}: check it before the next run",
                    path.display()
                )),
            }
        }
        messages
    }
}

fn state(path: &Path) -> State {
    match std::fs::symlink_metadata(path) {
        Err(_) => State::Missing,
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::read_link(path) {
            Ok(target) => State::Link(target, (meta.dev(), meta.ino())),
            Err(_) => State::Present((meta.dev(), meta.ino())),
        },
        Ok(meta) => State::Present((meta.dev(), meta.ino())),
    }
}

/// Removes what is at `path`, not following symlinks.
fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => toolgate_sandbox::cleanup::remove_tree(path),
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// `path` against `base`, `.` and `..` resolved by name, its parent directory canonical (the
/// deepest existing ancestor resolved, the missing rest kept) and its last name as written (a
/// protected symlink is the link).
fn absolute(base: &Path, path: &Path) -> PathBuf {
    let mut joined = PathBuf::new();
    for part in base.join(path).components() {
        match part {
            Component::ParentDir => {
                joined.pop();
            }
            Component::CurDir => {}
            other => joined.push(other),
        }
    }
    let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
        return joined;
    };
    let mut missing = Vec::new();
    let mut ancestor = parent;
    loop {
        if let Ok(mut real) = std::fs::canonicalize(ancestor) {
            real.extend(missing.iter().rev());
            real.push(name);
            return real;
        }
        match (ancestor.parent(), ancestor.file_name()) {
            (Some(up), Some(dir)) => {
                missing.push(dir.to_os_string());
                ancestor = up;
            }
            _ => return joined,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_work_dir_keeping_the_last_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        std::fs::write(root.join("real/worker.yaml"), "").unwrap();
        std::os::unix::fs::symlink("worker.yaml", root.join("real/link.yaml")).unwrap();
        let guarded = Guarded::resolve(
            &root.join("alias"),
            &[
                "worker.yaml".into(),
                "link.yaml".into(),
                "../real/./missing/x".into(),
            ],
            &[root.join("alias/.env")],
        );
        assert_eq!(
            guarded.protect,
            [
                root.join("real/link.yaml"),
                root.join("real/missing/x"),
                root.join("real/worker.yaml"),
            ]
        );
        assert_eq!(guarded.hide, [root.join("real/.env")]);
    }

    #[test]
    fn a_file_toolgate_wrote_during_a_call_is_kept_unless_the_call_changed_it_after() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let file = root.join("toolgate.permissions.yaml");
        let guarded = Guarded::resolve(&root, std::slice::from_ref(&file), &[]);
        // Toolgate saves a rule while the call runs: kept, no message.
        let before = guarded.snapshot();
        std::fs::write(&file, "version: 1\nrules: []\n").unwrap();
        note_host_write(&file);
        assert!(guarded.repair(&before).is_empty());
        assert!(file.exists());
        // The call then rewrites it in place (same inode, new change time): reported.
        std::fs::remove_file(&file).unwrap();
        let before = guarded.snapshot();
        std::fs::write(&file, "version: 1\nrules: []\n").unwrap();
        note_host_write(&file);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&file, "version: 1\nrules: [] # planted\n").unwrap();
        assert_eq!(guarded.repair(&before).len(), 1);
        assert!(!file.exists(), "what the call changed is removed");
        // Or replaces it by a file of its own under the same name: removed too.
        let before = guarded.snapshot();
        std::fs::write(&file, "a").unwrap();
        note_host_write(&file);
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "b").unwrap();
        assert_eq!(guarded.repair(&before).len(), 1);
        assert!(!file.exists());
    }

    #[test]
    fn what_a_call_made_is_removed_and_a_replaced_link_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("worker.yaml"), "real").unwrap();
        std::os::unix::fs::symlink("worker.yaml", root.join("link.yaml")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let guarded = Guarded::resolve(
            &root,
            &[
                "worker.yaml".into(),
                "link.yaml".into(),
                "toolgate.permissions.yaml".into(),
                ".git/hooks".into(),
                "sub/.git/hooks".into(),
            ],
            &[".env".into()],
        );
        guarded.make_owned_directories(|_| true);
        assert!(
            root.join(".git/hooks").is_dir(),
            "made, to be mounted read-only"
        );
        assert!(!root.join("sub").exists(), "only where .git exists");
        let before = guarded.snapshot();
        assert!(guarded.repair(&before).is_empty(), "nothing changed");

        std::fs::write(root.join("toolgate.permissions.yaml"), "planted").unwrap();
        std::fs::create_dir_all(root.join(".env/deep")).unwrap();
        std::fs::remove_file(root.join("link.yaml")).unwrap();
        std::fs::write(root.join("link.yaml"), "planted").unwrap();
        let messages = guarded.repair(&before);
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages
            .iter()
            .any(|m| m.contains("toolgate.permissions.yaml") && m.contains("protected")));
        assert!(messages
            .iter()
            .any(|m| m.contains(".env") && m.contains("blocked")));
        assert!(!root.join("toolgate.permissions.yaml").exists());
        assert!(!root.join(".env").exists());
        assert_eq!(
            std::fs::read_link(root.join("link.yaml")).unwrap(),
            Path::new("worker.yaml")
        );
        assert_eq!(
            std::fs::read_to_string(root.join("worker.yaml")).unwrap(),
            "real"
        );
    }
}
