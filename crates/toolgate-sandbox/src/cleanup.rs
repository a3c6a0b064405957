//! Removing a private directory: toolgate's call directories when a call ends, and the whole
//! per-process directory at toolgate's exit, or by the launcher server when toolgate was
//! killed. One implementation for both processes, since either may be the one that outlives
//! the other.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};

/// How deep the clean-up descends to give back permissions the program took away from its
/// own directories (`chmod 000`); deeper directories are left to `remove_dir_all`.
const MAX_REPAIR_DEPTH: usize = 64;

/// Deletes `path` and everything in it without following symlinks, giving directories the
/// program made unreadable or unwritable back to their owner first when needed.
pub fn remove_tree(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() {
        return;
    }
    if let Ok(fd) = open_dir(rustix::fs::CWD, path) {
        repair(&fd, 0);
    }
    let _ = std::fs::remove_dir_all(path);
}

fn open_dir<Fd: AsFd>(at: Fd, path: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

fn repair(dir: &OwnedFd, depth: usize) {
    if depth > MAX_REPAIR_DEPTH {
        return;
    }
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if entry.file_type() == rustix::fs::FileType::Directory
            && name.to_bytes() != b"."
            && name.to_bytes() != b".."
        {
            subdirs.push(name.to_owned());
        }
    }
    for name in subdirs {
        let _ = rustix::fs::chmodat(dir, &name, Mode::RWXU, AtFlags::SYMLINK_NOFOLLOW)
            .or_else(|_| rustix::fs::chmodat(dir, &name, Mode::RWXU, AtFlags::empty()));
        if let Ok(child) = rustix::fs::openat(
            dir,
            &name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            repair(&child, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn removes_locked_directories_without_following_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::fs::create_dir(outside.path().join("keep")).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path().join("private");
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/f"), "x").unwrap();
        symlink(outside.path(), root.join("a/link-dir")).unwrap();
        symlink(&victim, root.join("a/b/link-file")).unwrap();
        // The program locked itself out of its own directories.
        for dir in ["a/b/c", "a/b", "a"] {
            std::fs::set_permissions(root.join(dir), std::fs::Permissions::from_mode(0o000))
                .unwrap();
        }
        remove_tree(&root);
        assert!(!root.exists(), "{} still exists", root.display());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(outside.path().join("keep").is_dir());
        let mode = std::fs::metadata(outside.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "the symlink's target was chmodded");
        // Nothing there: nothing to do, no panic.
        remove_tree(&root);
    }
}
