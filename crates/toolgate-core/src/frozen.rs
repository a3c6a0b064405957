//! Files frozen when they were loaded: a worker's delegation graph (worker files, tools
//! modules, executable tools and their manifests) is read once, when the top worker loads, and
//! a file that changed since then is refused — never silently read again. A model that can write
//! files could otherwise rewrite a worker it is about to call.
//!
//! A file is identified by device, inode, size, modification time and status-change time. The
//! status-change time (`ctime`) is set by the kernel on every write, rename or `chmod` and cannot
//! be set back from user space, so a rewrite is seen even when the size and `mtime` are forged.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The stamp of the file at `path` now (symlinks followed).
    pub fn now(path: &Path) -> std::io::Result<Self> {
        std::fs::metadata(path).map(|meta| Self::of(&meta))
    }
}

/// Reads a text file and stamps the version that was read. Fails when the file changes while it
/// is being read.
pub fn read_stamped(path: &Path) -> std::io::Result<(String, FileStamp)> {
    let mut file = std::fs::File::open(path)?;
    let before = FileStamp::of(&file.metadata()?);
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let after = FileStamp::of(&file.metadata()?);
    if before != after {
        return Err(std::io::Error::other(
            "the file changed while it was being read",
        ));
    }
    Ok((text, after))
}

/// What a frozen file is, for messages (`worker file`, `tools module`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    stamp: Option<FileStamp>,
    role: &'static str,
}

/// Files and the versions that were loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrozenFiles {
    files: BTreeMap<PathBuf, Entry>,
}

impl FrozenFiles {
    /// Records the version of `path` read now; a missing file is recorded as missing, so that
    /// creating it later counts as a change. `role` names it in messages.
    pub fn freeze(&mut self, path: &Path, role: &'static str) {
        let stamp = FileStamp::now(path).ok();
        self.files
            .entry(path.to_path_buf())
            .or_insert(Entry { stamp, role });
    }

    /// Records a version that was already stamped when it was read.
    pub fn insert(&mut self, path: &Path, stamp: FileStamp, role: &'static str) {
        self.files.entry(path.to_path_buf()).or_insert(Entry {
            stamp: Some(stamp),
            role,
        });
    }

    /// The files, in path order.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.keys().map(PathBuf::as_path)
    }

    /// Whether `path` is frozen.
    pub fn contains(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// What the frozen file at `path` is (`worker file`, `tools module`, …), for messages.
    pub fn role(&self, path: &Path) -> Option<&'static str> {
        self.files.get(path).map(|entry| entry.role)
    }

    /// Checks every frozen file (see [`verify_paths`](Self::verify_paths)).
    pub fn verify_all(&self, what: &str) -> Result<()> {
        self.verify_paths(self.files.keys().map(PathBuf::as_path), what)
    }

    /// Checks the given files; paths that are not frozen are not checked. The first one that
    /// changed is a `CONFIG_INVALID` error naming it; `what` says what is refused.
    pub fn verify_paths<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a Path>,
        what: &str,
    ) -> Result<()> {
        paths.into_iter().try_for_each(|path| {
            let Some(entry) = self.files.get(path) else {
                return Ok(());
            };
            let now = FileStamp::now(path).ok();
            if now == entry.stamp {
                return Ok(());
            }
            let how = match (entry.stamp, now) {
                (Some(_), None) => "was removed",
                (None, Some(_)) => "was created",
                _ => "changed",
            };
            Err(Error::ConfigInvalid(format!(
                "{} '{}' {how} after the run started; {what} is refused, because a file that changed after loading is never read again. Restart the run to load the new version",
                entry.role,
                path.display()
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_removal_or_creation_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("helper.worker");
        std::fs::write(&file, "one").unwrap();
        let (text, stamp) = read_stamped(&file).unwrap();
        assert_eq!(text, "one");
        let mut frozen = FrozenFiles::default();
        frozen.insert(&file, stamp, "worker file");
        let later = dir.path().join("later.ts");
        frozen.freeze(&later, "tools module");
        frozen.verify_all("calling 'helper'").unwrap();

        // Same size, same mtime: the ctime still moves.
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::fs::write(&file, "two").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let err = frozen.verify_all("calling 'helper'").unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        let message = err.to_string();
        assert!(
            message.contains("helper.worker' changed after the run started"),
            "{message}"
        );
        assert!(message.contains("calling 'helper' is refused"), "{message}");

        let mut frozen = FrozenFiles::default();
        frozen.freeze(&later, "tools module");
        std::fs::write(&later, "export {}").unwrap();
        let err = frozen.verify_all("x").unwrap_err();
        assert!(err.to_string().contains("was created"), "{err}");

        let mut frozen = FrozenFiles::default();
        frozen.freeze(&later, "tools module");
        std::fs::remove_file(&later).unwrap();
        let err = frozen.verify_paths([later.as_path()], "x").unwrap_err();
        assert!(err.to_string().contains("was removed"), "{err}");
        // A file that is not frozen is not checked.
        frozen.verify_paths([file.as_path()], "x").unwrap();
    }

    #[test]
    fn a_rename_over_the_file_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tools.ts");
        std::fs::write(&file, "a").unwrap();
        let mut frozen = FrozenFiles::default();
        frozen.freeze(&file, "tools module");
        let replacement = dir.path().join("evil.ts");
        std::fs::write(&replacement, "a").unwrap();
        std::fs::rename(&replacement, &file).unwrap();
        assert!(frozen.verify_all("x").is_err());
    }
}
