//! The private, empty, toolgate-owned directory a call gets for its `HOME` and `TMPDIR`.
//!
//! It is created under the system temp directory (`$TMPDIR` of this process, else `/tmp`),
//! never inside the work directory, so files the model writes there cannot become program
//! configuration. It has an unpredictable name and mode 0700, and holds `home/` and `tmp/`.
//! (Not `$XDG_RUNTIME_DIR`: that tmpfs is small and holds the session's sockets, and a
//! program's temporary files could fill it.) The `XDG_*` base directories point under `home/`.
//! It is removed when the call ends (and when the run is dropped, aborted or times out),
//! without following symlinks: what the program left inside is deleted, what a symlink points
//! to is not.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::env;
use crate::error::{Error, Result};

/// How deep the clean-up descends to give back permissions the program took away from its
/// own directories (`chmod 000`); deeper directories are left to `remove_dir_all`.
const MAX_REPAIR_DEPTH: usize = 64;

/// A per-call directory; removed on drop.
#[derive(Debug)]
pub struct CallDir {
    root: PathBuf,
}

impl CallDir {
    /// Creates `<temp>/toolgate-call-<random>/{home,tmp}`, all mode 0700.
    pub fn create() -> Result<Self> {
        let base = temp_root();
        for _ in 0..8 {
            let root = base.join(format!("toolgate-call-{:016x}", random_u64()));
            match rustix::fs::mkdir(&root, Mode::RWXU) {
                Ok(()) => {
                    let dir = CallDir { root };
                    for sub in ["home", "tmp"] {
                        let path = dir.root.join(sub);
                        rustix::fs::mkdir(&path, Mode::RWXU).map_err(|err| {
                            Error::io("creating the private directory", path, err.into())
                        })?;
                    }
                    return Ok(dir);
                }
                Err(rustix::io::Errno::EXIST) => continue,
                Err(err) => {
                    return Err(Error::io(
                        "creating a private HOME/TMPDIR under",
                        base,
                        err.into(),
                    ))
                }
            }
        }
        Err(Error::Io {
            action: "creating a private HOME/TMPDIR under",
            path: base.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        })
    }

    /// The directory itself (the sandbox makes it writable).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The child's `HOME`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// Points `HOME`, `TMPDIR` and the XDG base directories of `vars` into this directory.
    pub fn apply(&self, vars: &mut Vec<(OsString, OsString)>) {
        let home = self.home();
        env::set(vars, "HOME", home.clone().into_os_string());
        env::set(vars, "TMPDIR", self.root.join("tmp").into_os_string());
        for (name, sub) in [
            ("XDG_CONFIG_HOME", ".config"),
            ("XDG_CACHE_HOME", ".cache"),
            ("XDG_DATA_HOME", ".local/share"),
            ("XDG_STATE_HOME", ".local/state"),
        ] {
            env::set(vars, name, home.join(sub).into_os_string());
        }
    }
}

impl Drop for CallDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.root).is_ok() {
            return;
        }
        // A directory inside was made unreadable or unwritable by the program: give every
        // directory back to its owner (never through a symlink) and try once more.
        if let Ok(fd) = open_dir(rustix::fs::CWD, &self.root) {
            repair(&fd, 0);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
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

/// The system temp directory, resolved once (symlinks followed, so the paths a program sees
/// are the real ones).
pub(crate) fn temp_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir();
        std::fs::canonicalize(&dir).unwrap_or(dir)
    })
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    if filled < bytes.len() {
        // No getrandom (very old kernels): the address of a stack slot and the clock are not
        // secret, but mkdir's exclusive create still keeps the directory ours.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return nanos ^ (&bytes as *const _ as u64) ^ u64::from(std::process::id());
    }
    u64::from_ne_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn the_directory_is_private_and_removed_without_following_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let dir = CallDir::create().unwrap();
        let root = dir.root().to_path_buf();
        assert!(root.starts_with(temp_root()));
        let mode = std::fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(dir.home().is_dir() && root.join("tmp").is_dir());
        symlink(outside.path(), dir.home().join("link")).unwrap();
        symlink(&victim, root.join("tmp/file-link")).unwrap();
        std::fs::create_dir_all(root.join("tmp/a/b")).unwrap();
        std::fs::write(root.join("tmp/a/b/f"), "x").unwrap();
        std::fs::set_permissions(root.join("tmp/a"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        drop(dir);
        assert!(!root.exists(), "{} still exists", root.display());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }

    #[test]
    fn names_are_unpredictable_and_the_environment_points_inside() {
        let a = CallDir::create().unwrap();
        let b = CallDir::create().unwrap();
        assert_ne!(a.root(), b.root());
        let mut vars = vec![
            (OsString::from("HOME"), OsString::from("/home/u")),
            (OsString::from("PATH"), OsString::from("/usr/bin")),
        ];
        a.apply(&mut vars);
        for name in [
            "HOME",
            "TMPDIR",
            "XDG_CONFIG_HOME",
            "XDG_CACHE_HOME",
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
        ] {
            let value = env::lookup(&vars, name).unwrap();
            assert!(Path::new(value).starts_with(a.root()), "{name}={value:?}");
        }
        assert_eq!(vars.iter().filter(|(k, _)| k == "HOME").count(), 1);
    }
}
