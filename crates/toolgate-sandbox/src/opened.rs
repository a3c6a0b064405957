//! The launcher server's open paths: the policy's roots stay open between calls, so a call's
//! Landlock ruleset is built from file descriptors instead of ~40 path lookups.
//!
//! A Landlock rule names an inode, not a path, so an open path must be dropped when its name
//! starts to mean another file: `/etc/resolv.conf` or `/etc/passwd` replaced by a rename, a
//! work directory removed and made again. inotify watches the directory holding each path
//! (and, for a path reached through a symlink, the directory of the file it reaches); any
//! entry created, removed or renamed there drops what is open under that name, and the next
//! call opens it again. Events are read before every ruleset is built, and the kernel queues
//! them before the renaming call returns, so a change made before a call was requested is
//! always seen. Without inotify (or past its limits) paths are opened per call, as the
//! one-shot launcher does. Not noticed: a directory further up renamed or mounted over.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use crate::confine::{is_directory, open_path};

/// At most this many paths stay open; more are opened per call.
const MAX_OPEN: usize = 2048;

/// One open path.
struct Open {
    fd: OwnedFd,
    directory: bool,
    /// The `(directory, name)` pairs whose change makes this entry stale.
    names: Vec<(PathBuf, OsString)>,
}

/// Paths kept open, dropped when inotify says their name changed.
pub(crate) struct OpenPaths {
    inotify: Option<OwnedFd>,
    open: HashMap<OsString, Open>,
    /// Watched directory → its watch.
    watches: HashMap<PathBuf, i32>,
    /// Watch → watched directory.
    watched: HashMap<i32, PathBuf>,
}

/// A path's fd: kept open, or opened for this call only.
pub(crate) enum PathHandle<'a> {
    Kept(BorrowedFd<'a>, bool),
    Once(OwnedFd, bool),
}

impl PathHandle<'_> {
    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            PathHandle::Kept(fd, _) => *fd,
            PathHandle::Once(fd, _) => fd.as_fd(),
        }
    }

    pub fn is_directory(&self) -> bool {
        match self {
            PathHandle::Kept(_, directory) | PathHandle::Once(_, directory) => *directory,
        }
    }
}

impl OpenPaths {
    /// An empty cache; without inotify every lookup opens the path.
    pub fn new() -> Self {
        Self {
            inotify: inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok(),
            open: HashMap::new(),
            watches: HashMap::new(),
            watched: HashMap::new(),
        }
    }

    /// `path`, open; `None` when it does not exist or cannot be opened (it is then not
    /// granted, and asked for again next time).
    pub fn get(&mut self, path: &OsString) -> Option<PathHandle<'_>> {
        if !self.open.contains_key(path) && !self.keep(path) {
            let (fd, directory) = open_path(path)?;
            return Some(PathHandle::Once(fd, directory));
        }
        let open = self.open.get(path)?;
        Some(PathHandle::Kept(open.fd.as_fd(), open.directory))
    }

    /// Opens `path` and keeps it, watching the names it depends on; false when it cannot be
    /// kept (no inotify, too many open, no watch possible).
    fn keep(&mut self, path: &OsString) -> bool {
        if self.open.len() >= MAX_OPEN || self.inotify.is_none() {
            return false;
        }
        let Some((fd, _)) = open_path(path) else {
            return false;
        };
        let mut names = Vec::new();
        for name in [Some(PathBuf::from(path)), resolved(fd.as_fd())]
            .into_iter()
            .flatten()
        {
            if let (Some(dir), Some(file)) = (name.parent(), name.file_name()) {
                if !names
                    .iter()
                    .any(|(d, f): &(PathBuf, OsString)| d == dir && f == file)
                {
                    names.push((dir.to_path_buf(), file.to_os_string()));
                }
            }
        }
        if names.is_empty() || !names.iter().all(|(dir, _)| self.watch(dir)) {
            return false;
        }
        let directory = is_directory(fd.as_fd());
        self.open.insert(
            path.clone(),
            Open {
                fd,
                directory,
                names,
            },
        );
        true
    }

    fn watch(&mut self, dir: &Path) -> bool {
        if self.watches.contains_key(dir) {
            return true;
        }
        let Some(inotify) = &self.inotify else {
            return false;
        };
        let flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR;
        match inotify::add_watch(inotify, dir, flags) {
            Ok(wd) => {
                self.watches.insert(dir.to_path_buf(), wd);
                self.watched.insert(wd, dir.to_path_buf());
                true
            }
            Err(_) => false,
        }
    }

    /// The inotify fd, to poll.
    pub fn events_fd(&self) -> Option<BorrowedFd<'_>> {
        self.inotify.as_ref().map(AsFd::as_fd)
    }

    /// Reads every queued event and drops what it makes stale; returns the paths dropped
    /// (every one when the queue overflowed).
    pub fn read_events(&mut self) -> Vec<OsString> {
        let Some(inotify) = &self.inotify else {
            return Vec::new();
        };
        let mut stale: Vec<(PathBuf, Option<OsString>)> = Vec::new();
        let mut buffer = [MaybeUninit::uninit(); 4096];
        let mut reader = inotify::Reader::new(inotify, &mut buffer);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break, // WOULDBLOCK: nothing more for now
            };
            if event.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                stale.push((PathBuf::new(), None));
                continue;
            }
            let Some(dir) = self.watched.get(&event.wd()) else {
                continue;
            };
            let whole_dir = event
                .events()
                .intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED);
            let name = event
                .file_name()
                .filter(|_| !whole_dir)
                .map(|name| OsStr::from_bytes(name.to_bytes()).to_os_string());
            if whole_dir || name.is_some() {
                stale.push((dir.clone(), name));
            }
        }
        let before: Vec<OsString> = if stale.is_empty() {
            Vec::new()
        } else {
            self.open.keys().cloned().collect()
        };
        for (dir, name) in stale {
            self.drop_stale(&dir, name.as_deref());
        }
        before
            .into_iter()
            .filter(|path| !self.open.contains_key(path))
            .collect()
    }

    /// Drops the entries depending on `name` in `dir` (every name there without one; every
    /// entry for an empty `dir`).
    fn drop_stale(&mut self, dir: &Path, name: Option<&OsStr>) {
        let everything = dir.as_os_str().is_empty();
        self.open.retain(|_, open| {
            everything
                || !open
                    .names
                    .iter()
                    .any(|(d, f)| d == dir && name.is_none_or(|name| f == name))
        });
        if everything || name.is_none() {
            // The directory itself went (or the queue overflowed): watch again when needed.
            let gone: Vec<PathBuf> = if everything {
                self.watches.keys().cloned().collect()
            } else {
                vec![dir.to_path_buf()]
            };
            for dir in gone {
                if let Some(wd) = self.watches.remove(&dir) {
                    self.watched.remove(&wd);
                    if let Some(inotify) = &self.inotify {
                        let _ = inotify::remove_watch(inotify, wd);
                    }
                }
            }
            let watches = &self.watches;
            self.open
                .retain(|_, open| open.names.iter().all(|(d, _)| watches.contains_key(d)));
        }
    }
}

/// Where an open path really is (differs from its name when a symlink was followed).
fn resolved(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;

    fn inode(fd: BorrowedFd<'_>) -> u64 {
        // SAFETY: fstat into a zeroed stat we own.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            libc::fstat(fd.as_raw_fd(), &mut stat);
            stat.st_ino
        }
    }

    fn kept_inode(paths: &mut OpenPaths, path: &Path) -> (bool, u64) {
        paths.read_events();
        let fd = paths.get(&path.as_os_str().to_os_string()).expect("exists");
        (matches!(fd, PathHandle::Kept(..)), inode(fd.fd()))
    }

    #[test]
    fn replaced_files_and_directories_are_opened_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("resolv.conf");
        let work = dir.path().join("work");
        std::fs::write(&file, "one").unwrap();
        std::fs::create_dir(&work).unwrap();
        let mut paths = OpenPaths::new();
        let (kept, first) = kept_inode(&mut paths, &file);
        assert!(kept, "kept open");
        assert_eq!(kept_inode(&mut paths, &file).1, first, "the same open file");

        // Replaced by a rename, as editors and resolvconf do.
        std::fs::write(dir.path().join("new"), "two").unwrap();
        std::fs::rename(dir.path().join("new"), &file).unwrap();
        let (_, second) = kept_inode(&mut paths, &file);
        assert_ne!(second, first, "the new file is granted, not the old one");
        assert_eq!(second, std::fs::metadata(&file).unwrap().ino());

        // A work directory removed and made again.
        let (_, old_work) = kept_inode(&mut paths, &work);
        std::fs::remove_dir(&work).unwrap();
        std::fs::create_dir(&work).unwrap();
        let (_, new_work) = kept_inode(&mut paths, &work);
        assert_ne!(old_work, new_work);
        assert_eq!(new_work, std::fs::metadata(&work).unwrap().ino());

        // A path reached through a symlink follows its target's replacement too.
        let target_dir = tempfile::tempdir().unwrap();
        let target = target_dir.path().join("hosts");
        std::fs::write(&target, "a").unwrap();
        let link = dir.path().join("hosts");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let (_, before) = kept_inode(&mut paths, &link);
        std::fs::write(target_dir.path().join("hosts.new"), "b").unwrap();
        std::fs::rename(target_dir.path().join("hosts.new"), &target).unwrap();
        let (_, after) = kept_inode(&mut paths, &link);
        assert_ne!(before, after);
        assert_eq!(after, std::fs::metadata(&target).unwrap().ino());

        // A missing path is not granted, and found once it exists.
        let later = dir.path().join("later");
        assert!(paths.get(&later.as_os_str().to_os_string()).is_none());
        std::fs::write(&later, "x").unwrap();
        assert_eq!(
            kept_inode(&mut paths, &later).1,
            std::fs::metadata(&later).unwrap().ino()
        );

        // The whole directory going away drops everything in it.
        let (_, _) = kept_inode(&mut paths, &file);
        drop(dir);
        paths.read_events();
        assert!(paths.get(&file.as_os_str().to_os_string()).is_none());
    }
}
