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
//!   call and then mounted read-only: `.git/hooks` in a repository that has `.git` but no hooks,
//!   Python's `__pycache__` beside a module an MCP server imports (a forged `.pyc` there would
//!   run in place of the source);
//! - any other missing protected or hidden path (`toolgate.permissions.yaml` not written yet,
//!   `.env` that does not exist) is looked at after every call: one that now exists was made
//!   by the call, is removed, and the call's result says so;
//! - a protected path that is a symlink (the link itself lives in a writable directory): one
//!   replaced during the call is put back.
//!
//! Without a view (no mount namespace), only the last two happen; protected paths inside a
//! writable root are then not protected during the call, which `enforce` refuses (see
//! `Sandbox::prepare`).
//!
//! Every look and every change is made without following a symlink on the way to the path
//! ([`place`]): the path's parent was canonical when the sandbox was prepared, so a symlink
//! on the way now was put there since, most likely by a call, to make toolgate look at or
//! remove something else (`config -> /home/user/project` in place of a missing `config/`
//! would have had `config/app.yaml` removed there). Such a symlink is what is removed, and so
//! is a file a call made in place of a missing directory on the way (a `.git` file naming
//! another git directory, whose hooks git would run, in place of `.git/`).

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// The directories (as their parent's name, where it matters, and their own) toolgate makes
/// when missing so that they can be mounted read-only: a repository's hooks, Python's cache of
/// compiled modules (which Python makes itself, and does without when it cannot write it).
const OWNED_DIRECTORIES: &[(Option<&str>, &str)] =
    &[(Some(".git"), "hooks"), (None, "__pycache__")];

/// Puts `bytes` back at `name` in `parent` (a new file renamed over whatever is there, so a
/// process holding the old one open changes nothing), and notes it as toolgate's write.
fn put_back(parent: &OwnedFd, name: &OsStr, path: &Path, bytes: &[u8]) -> bool {
    // A name a process of the call cannot guess ahead (to have a file of its own there).
    let unguessable = {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".toolgate-restore-{unguessable:016x}"));
    let written = (|| -> std::io::Result<()> {
        let fd = rustix::fs::openat(
            parent,
            temporary.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from(0o644),
        )?;
        let mut file = std::fs::File::from(fd);
        std::io::Write::write_all(&mut file, bytes)?;
        file.sync_all()?;
        rustix::fs::renameat(parent, temporary.as_os_str(), parent, name)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(parent, temporary.as_os_str(), AtFlags::empty());
        return false;
    }
    super::host_writes::note(path);
    true
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
    /// Something other than a directory on the way to it (a symlink, a file): its path, and
    /// what it was.
    Redirected(PathBuf, (u64, u64)),
}

/// The guarded paths' states before a call.
#[derive(Debug, Clone)]
pub struct GuardSnapshot {
    states: Vec<(PathBuf, bool, State)>,
    /// When it was taken: toolgate's own writes since then are the ones a call may not change.
    taken: std::time::SystemTime,
}

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
                    && parent.is_none_or(|parent| {
                        path.parent()
                            .and_then(Path::file_name)
                            .is_some_and(|dir| dir == parent)
                    })
            });
            if !owned || !writable(path) {
                continue;
            }
            if let Place::Found(parent, name) = place(path) {
                if stat_at(&parent, &name).is_none() {
                    let _ = rustix::fs::mkdirat(&parent, name.as_os_str(), Mode::from(0o755));
                }
            }
        }
    }

    /// The states of every guarded path (a few `lstat`s).
    pub fn snapshot(&self) -> GuardSnapshot {
        GuardSnapshot {
            states: self
                .protect
                .iter()
                .map(|path| (path, true))
                .chain(self.hide.iter().map(|path| (path, false)))
                .map(|(path, protected)| (path.clone(), protected, state(path)))
                .collect(),
            taken: std::time::SystemTime::now(),
        }
    }

    /// After a call: removes what the call made at a guarded path that was missing, puts back
    /// a protected symlink that was replaced, and says what it did (one message each).
    pub fn repair(&self, before: &GuardSnapshot) -> Vec<String> {
        let mut messages = Vec::new();
        for (path, protected, was) in &before.states {
            let now = state(path);
            // A file toolgate wrote may have been changed in place (or its inode number
            // reused by the call's): not told by the path's state alone. Another toolgate
            // process's write replaced the file, which the state tells (its records are read
            // only then: this runs after every call).
            let changed_write = (&now != was || super::host_writes::written_here(path))
                .then(|| super::host_writes::changed_since(path, before.taken))
                .flatten();
            if &now == was && changed_write.is_none() {
                continue;
            }
            let what = if *protected {
                "a protected path (toolgate's configuration or code, sandbox.protect): sandboxed processes may not create or replace it"
            } else {
                "a blocked path (approval.paths): sandboxed processes may not create it"
            };
            if let State::Redirected(link, _) = &now {
                if let Place::Redirected(dir, name, _) = place(path) {
                    let _ = rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty());
                }
                messages.push(format!(
                    "toolgate removed '{}' (a symlink or file in place of a directory), which the call made on the way to '{}': it is {what}",
                    link.display(),
                    path.display()
                ));
                continue;
            }
            if super::host_writes::is_current(path) {
                continue;
            }
            let Place::Found(parent, name) = place(path) else {
                continue; // nothing is at the path now
            };
            // Toolgate wrote it during the call, and the call changed it after (the kernel's
            // read-only mount does not survive the file being replaced on the host: a process
            // of the call may have opened the new one).
            if let Some(bytes) = changed_write {
                remove_at(&parent, &name);
                let restored = put_back(&parent, &name, path, &bytes);
                messages.push(format!(
                    "toolgate {} what it last wrote to '{}', which changed during the call: it is {what}",
                    if restored { "put back" } else { "could not put back" },
                    path.display()
                ));
                continue;
            }
            match was {
                State::Missing | State::Redirected(..) => {
                    remove_at(&parent, &name);
                    messages.push(format!(
                        "toolgate removed '{}', which the call created: it is {what}",
                        path.display()
                    ));
                }
                State::Link(target, _) => {
                    remove_at(&parent, &name);
                    let restored =
                        rustix::fs::symlinkat(target.as_path(), &parent, name.as_os_str()).is_ok();
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
    let (parent, name) = match place(path) {
        Place::Found(parent, name) => (parent, name),
        Place::Absent => return State::Missing,
        Place::Redirected(dir, name, link) => {
            return match stat_at(&dir, &name) {
                Some(stat) => State::Redirected(link, (stat.st_dev, stat.st_ino)),
                None => State::Missing,
            };
        }
    };
    let Some(stat) = stat_at(&parent, &name) else {
        return State::Missing;
    };
    let id = (stat.st_dev, stat.st_ino);
    if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
        return State::Present(id);
    }
    match rustix::fs::readlinkat(&parent, name.as_os_str(), Vec::new()) {
        Ok(target) => State::Link(PathBuf::from(OsStr::from_bytes(target.as_bytes())), id),
        Err(_) => State::Present(id),
    }
}

/// Where a guarded path is, found from `/` one name at a time without following a symlink.
enum Place {
    /// Its parent directory (open as a path) and its last name.
    Found(OwnedFd, OsString),
    /// A directory on the way is missing: nothing can be at the path.
    Absent,
    /// Something other than a directory on the way (a symlink, a file): the directory holding
    /// it, its name, and its path.
    Redirected(OwnedFd, OsString, PathBuf),
}

fn place(path: &Path) -> Place {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Place::Absent;
    };
    let directory = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(mut dir) = rustix::fs::open("/", directory, Mode::empty()) else {
        return Place::Absent;
    };
    let mut walked = PathBuf::from("/");
    for part in parent.components() {
        let Component::Normal(part) = part else {
            continue; // the root (the path is absolute and has no `.` or `..`)
        };
        walked.push(part);
        match rustix::fs::openat(&dir, part, directory, Mode::empty()) {
            Ok(next) => dir = next,
            Err(_) => {
                // A directory that cannot be opened (no search permission) is no redirection:
                // nothing to look at there.
                return match stat_at(&dir, part) {
                    Some(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::Directory => {
                        Place::Redirected(dir, part.to_os_string(), walked)
                    }
                    _ => Place::Absent,
                };
            }
        }
    }
    Place::Found(dir, name.to_os_string())
}

/// `lstat` of `name` in `dir`.
fn stat_at(dir: &OwnedFd, name: &OsStr) -> Option<rustix::fs::Stat> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()
}

/// Removes what is at `name` in `parent`, not following symlinks (a directory with all it
/// holds, however deep).
fn remove_at(parent: &OwnedFd, name: &OsStr) {
    toolgate_sandbox::cleanup::remove_at(parent, name);
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
    use crate::sandbox::note_host_write;

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
        let messages = guarded.repair(&before);
        assert_eq!(messages.len(), 1);
        assert!(messages[0].contains("put back"), "{messages:?}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "version: 1\nrules: []\n",
            "what toolgate wrote is put back"
        );
        // Or replaces it by a file of its own under the same name: toolgate's put back too.
        let before = guarded.snapshot();
        std::fs::write(&file, "a").unwrap();
        note_host_write(&file);
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "b").unwrap();
        assert_eq!(guarded.repair(&before).len(), 1);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a");
        // A file that was there before the call, replaced by toolgate's save (the kernel's
        // read-only mount is gone with the old file), then appended to by the call.
        let before = guarded.snapshot();
        let replacement = root.join("saved.tmp");
        std::fs::write(&replacement, "version: 1\nrules: [saved]\n").unwrap();
        std::fs::rename(&replacement, &file).unwrap();
        note_host_write(&file);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut appended = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        std::io::Write::write_all(&mut appended, b"  - planted\n").unwrap();
        drop(appended);
        assert_eq!(guarded.repair(&before).len(), 1);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "version: 1\nrules: [saved]\n"
        );
        assert!(guarded.repair(&guarded.snapshot()).is_empty());
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
                "__pycache__".into(),
                "srv/__pycache__".into(),
            ],
            &[".env".into()],
        );
        guarded.make_owned_directories(|_| true);
        assert!(
            root.join(".git/hooks").is_dir(),
            "made, to be mounted read-only"
        );
        assert!(root.join("__pycache__").is_dir(), "made, in any folder");
        assert!(!root.join("sub").exists(), "only where .git exists");
        assert!(!root.join("srv").exists(), "only where its folder exists");
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

    #[test]
    fn nothing_is_made_or_removed_through_a_symlink_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = root.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("app.yaml"), "keep").unwrap();
        let work = root.join("work");
        std::fs::create_dir(&work).unwrap();
        let guarded = Guarded::resolve(&work, &[".git/hooks".into(), "conf/app.yaml".into()], &[]);
        // `.git` made a symlink to a directory elsewhere before the call: no hooks made there.
        std::os::unix::fs::symlink(&outside, work.join(".git")).unwrap();
        guarded.make_owned_directories(|_| true);
        assert!(!outside.join("hooks").exists());
        let before = guarded.snapshot();
        assert!(guarded.repair(&before).is_empty(), "nothing new");
        // A call puts `conf -> outside` in place of the missing `conf/`: the link goes.
        std::os::unix::fs::symlink(&outside, work.join("conf")).unwrap();
        let messages = guarded.repair(&before);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].contains("symlink"), "{messages:?}");
        assert!(work.join("conf").symlink_metadata().is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("app.yaml")).unwrap(),
            "keep"
        );
        // A file in place of the missing directory (`conf` naming another place, as a `.git`
        // file names a git directory): removed too.
        std::fs::write(work.join("conf"), "gitdir: ../outside\n").unwrap();
        let messages = guarded.repair(&before);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(!work.join("conf").exists());
    }
}
