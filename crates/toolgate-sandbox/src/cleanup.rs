//! Removing a private directory: toolgate's call directories when a call ends, and the whole
//! per-process directory at toolgate's exit, or by the launcher server when toolgate was
//! killed; and what a sandboxed process made at a protected path. One implementation for both
//! processes, since either may be the one that outlives the other.
//!
//! What is removed was made by a sandboxed program, which may still be running: the removal
//! never follows a symlink (every step goes through a descriptor opened with `O_NOFOLLOW`), and
//! neither its stack nor its open files grow with the tree's depth (a program can nest
//! directories as deep as it likes): it holds at most [`MAX_OPEN_DEPTH`] directories open and
//! moves a deeper one up into the tree's top directory, where it is removed in turn.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// How many directories the removal holds open at once.
const MAX_OPEN_DEPTH: usize = 32;

/// How many entries one removal handles at most: a program still running could otherwise keep
/// it busy for ever by making files as fast as they go.
const MAX_STEPS: usize = 4_000_000;

/// Deletes `path` and everything in it without following symlinks (a symlink or file at
/// `path` is unlinked), giving directories the program made unreadable or unwritable back to
/// their owner first when needed. The directory `path` is in is followed (it may be named
/// through `/proc/self/fd`); its last name is not.
pub fn remove_tree(path: &Path) {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(parent) = rustix::fs::openat(
        rustix::fs::CWD,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    remove_at(&parent, name);
}

/// Removes what is at `name` in `parent` (see [`remove_tree`]).
pub fn remove_at(parent: &OwnedFd, name: &OsStr) {
    let Ok(name) = CString::new(name.as_bytes()) else {
        return;
    };
    match open_child(parent, &name) {
        Ok(top) => {
            empty_tree(top);
            let _ = rustix::fs::unlinkat(parent, &name, AtFlags::REMOVEDIR);
        }
        // Not a directory (a file, a symlink, a device): unlinked as it is.
        Err(Errno::NOTDIR | Errno::LOOP) => {
            let _ = rustix::fs::unlinkat(parent, &name, AtFlags::empty());
        }
        Err(_) => {}
    }
}

/// Empties the directory `top` (held open), depth first, without recursion.
fn empty_tree(top: OwnedFd) {
    // The directories being emptied, each with its name in the one before.
    let mut stack: Vec<(OwnedFd, CString)> = vec![(top, CString::default())];
    let mut moved_up = 0u64;
    let mut steps = 0usize;
    while let Some((dir, _)) = stack.last() {
        let mut descend = None;
        let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
            return;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                break;
            };
            steps += 1;
            if steps > MAX_STEPS {
                return;
            }
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory),
                _ => false,
            };
            if !is_dir {
                let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
                continue;
            }
            if rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).is_ok() {
                continue;
            }
            if stack.len() >= MAX_OPEN_DEPTH {
                // Too deep to hold open: moved up into the top directory, emptied from there.
                moved_up += 1;
                let _ =
                    rustix::fs::renameat(dir, name, &stack[0].0, moved_name(moved_up).as_c_str());
                continue;
            }
            descend = Some(name.to_owned());
            break;
        }
        match descend {
            Some(name) => match open_child(dir, &name) {
                Ok(child) => stack.push((child, name)),
                // Gone or replaced meanwhile (by a symlink or file, unlinked here): the next
                // read of this directory sees what is there now.
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {
                    let _ = rustix::fs::unlinkat(dir, &name, AtFlags::empty());
                }
                // A directory this process cannot open at all: the rest stays (reading the
                // same directory again would find it again).
                Err(_) => return,
            },
            None => {
                // Empty as far as this read saw: removed from its parent, which is read again
                // (a program may have added to it meanwhile).
                let (_, name) = stack.pop().expect("the stack holds this directory");
                if let Some((parent, _)) = stack.last() {
                    let _ = rustix::fs::unlinkat(parent, &name, AtFlags::REMOVEDIR);
                }
            }
        }
    }
}

/// A name for a directory moved up into the top directory (unique among those this removal
/// moved; one that exists already is skipped by `renameat` failing, then read in place).
fn moved_name(index: u64) -> CString {
    CString::new(format!(".toolgate-removing-{index}")).expect("no NUL in the name")
}

/// The directory `name` in `dir`, opened for reading without following a symlink; a
/// directory its owner may not read or write (`chmod 000` by the program) is given back to
/// them first.
fn open_child(dir: &OwnedFd, name: &CStr) -> rustix::io::Result<OwnedFd> {
    // The name is pinned to the directory it names now (`O_PATH | O_NOFOLLOW`): a process
    // still running may swap it for a symlink at any time, and a `chmod` by name would follow
    // that link to any file of the host. The mode is changed and the directory opened through
    // the pinned descriptor only (Linux cannot `chmod` a symlink, so there is no "no-follow"
    // form to fall back from).
    let pinned = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let through = fd_path(&pinned);
    let reopen = || {
        rustix::fs::openat(
            rustix::fs::CWD,
            through.as_c_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let usable = rustix::fs::fstat(&pinned)
        .is_ok_and(|stat| stat.st_mode & Mode::RWXU.bits() == Mode::RWXU.bits());
    if !usable {
        let _ = rustix::fs::chmodat(
            rustix::fs::CWD,
            through.as_c_str(),
            Mode::RWXU,
            AtFlags::empty(),
        );
    }
    reopen()
}

/// The `/proc/self/fd` name of `fd`: the very inode it holds, whatever its name stands for now.
fn fd_path(fd: &impl AsFd) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd())).expect("no NUL in the name")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn open_dir(at: impl AsFd, path: &Path) -> rustix::io::Result<OwnedFd> {
        rustix::fs::openat(
            at,
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

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

    #[test]
    fn a_symlink_in_place_of_a_directory_is_never_chmodded_through() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("target");
        std::fs::create_dir(&target).unwrap();
        // A mode the removal would change on a directory of its own (no write for the owner).
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o500)).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        symlink(&target, scratch.path().join("swapped")).unwrap();
        let dir = open_dir(rustix::fs::CWD, scratch.path()).unwrap();
        let err = open_child(&dir, c"swapped").unwrap_err();
        assert!(matches!(err, Errno::NOTDIR | Errno::LOOP), "{err:?}");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o500, "the symlink's target was chmodded");
        remove_tree(&scratch.path().join("swapped"));
        assert!(target.is_dir(), "a symlink is unlinked, not followed");
        assert!(!scratch.path().join("swapped").exists());
    }

    #[test]
    fn a_tree_of_any_depth_is_removed_on_a_small_stack() {
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path().join("deep");
        std::fs::create_dir(&root).unwrap();
        // 20,000 levels (deeper than any path name can reach: made one level at a time), a
        // file and a locked directory on the way.
        let mut dir = open_dir(rustix::fs::CWD, &root).unwrap();
        for level in 0..20_000 {
            if level % 5_000 == 0 {
                let file = rustix::fs::openat(
                    &dir,
                    c"f",
                    OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                    Mode::from(0o644),
                )
                .unwrap();
                drop(file);
            }
            rustix::fs::mkdirat(&dir, c"d", Mode::from(0o755)).unwrap();
            dir = rustix::fs::openat(
                &dir,
                c"d",
                OFlags::RDONLY | OFlags::DIRECTORY,
                Mode::empty(),
            )
            .unwrap();
        }
        rustix::fs::mkdirat(&dir, c"locked", Mode::from(0o000)).unwrap();
        drop(dir);
        // A thread with a 64 KiB stack: a removal that recursed per level would overflow it.
        let removal = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || remove_tree(&root))
            .unwrap();
        removal.join().unwrap();
        assert!(
            std::fs::read_dir(scratch.path()).unwrap().next().is_none(),
            "everything is gone"
        );
    }
}
