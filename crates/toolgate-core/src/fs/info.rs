//! The small operations of the filesystem toolset: `file_exists`, `file_info`, `delete_file`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};
use std::time::SystemTime;

use rustix::fs::AtFlags;

use super::access::Access;
use super::anchor::{self, Dir, Kind};
use super::lock::WriteLock;
use crate::error::{Error, Result};
#[cfg(test)]
use crate::path::PathValidator;

/// The type of a file system entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    File,
    Directory,
    Symlink,
    Other,
}

impl EntryType {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryType::File => "file",
            EntryType::Directory => "directory",
            EntryType::Symlink => "symlink",
            EntryType::Other => "other",
        }
    }

    fn of(meta: &std::fs::Metadata) -> Self {
        let file_type = meta.file_type();
        if file_type.is_file() {
            EntryType::File
        } else if file_type.is_dir() {
            EntryType::Directory
        } else if file_type.is_symlink() {
            EntryType::Symlink
        } else {
            EntryType::Other
        }
    }
}

/// Metadata of a file or directory (symlinks inside the root are followed).
#[derive(Debug, Clone)]
pub struct FileInfo {
    /// The path relative to the root (after following symlinks).
    pub path: String,
    pub entry_type: EntryType,
    pub size: u64,
    /// Milliseconds since the Unix epoch.
    pub modified_ms: Option<f64>,
    pub created_ms: Option<f64>,
    pub accessed_ms: Option<f64>,
    /// Permission bits, e.g. `0o644`.
    pub mode: u32,
    /// Whether no write permission bit is set.
    pub readonly: bool,
}

/// The type of what is at `path`, or `None` when nothing is. A path outside the root is an
/// error (`PATH_OUTSIDE_ROOT`), not `None`: the caller must learn it asked for something
/// it may not touch.
/// With path rules, a blocked path is refused (`PATH_BLOCKED`), whether it exists or not.
pub fn exists<'a>(access: impl Into<Access<'a>>, path: &str) -> Result<Option<EntryType>> {
    let (absolute, _) = access.into().target(path)?;
    match std::fs::symlink_metadata(&absolute) {
        Ok(meta) => Ok(Some(EntryType::of(&meta))),
        Err(err) if matches!(err.kind(), std::io::ErrorKind::NotFound) => Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
        Err(err) => Err(Error::io("inspecting", absolute, err)),
    }
}

/// Size, type, times and permissions of `path`.
pub fn info<'a>(access: impl Into<Access<'a>>, path: &str) -> Result<FileInfo> {
    let access = access.into();
    let validator = access.validator();
    let (absolute, _) = access.target(path)?;
    let meta = std::fs::symlink_metadata(&absolute)
        .map_err(|err| Error::io("inspecting", &absolute, err))?;
    let mode = meta.permissions().mode() & 0o7777;
    Ok(FileInfo {
        path: validator.relative(&absolute).display().to_string(),
        entry_type: EntryType::of(&meta),
        size: meta.len(),
        modified_ms: meta.modified().ok().and_then(epoch_ms),
        created_ms: meta.created().ok().and_then(epoch_ms),
        accessed_ms: meta.accessed().ok().and_then(epoch_ms),
        mode,
        readonly: mode & 0o222 == 0,
    })
}

fn epoch_ms(time: SystemTime) -> Option<f64> {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64() * 1000.0)
}

/// The result of a delete.
#[derive(Debug, Clone)]
pub struct DeleteOutput {
    /// The path relative to the root.
    pub path: String,
    /// Size of what was removed (of the link itself for a symlink).
    pub bytes: u64,
}

/// Deletes a file. A symlink (whose target must be inside the root, like every path) is
/// removed itself, not what it points to. Directories are refused.
/// With path rules, a path that is blocked (or a symlink leading to one) is refused.
pub fn delete<'a>(access: impl Into<Access<'a>>, path: &str) -> Result<DeleteOutput> {
    let access = access.into();
    let validator = access.validator();
    // Refuse anything that resolves outside, symlinks included, before looking closer.
    access.target_to_change(path)?;
    let given = Path::new(path);
    let name = match given.components().next_back() {
        Some(Component::Normal(name)) => name.to_os_string(),
        _ => {
            return Err(Error::InvalidInput(format!(
                "'{path}' does not name a file; give the path of the file to delete"
            )))
        }
    };
    let parent = match given.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => validator.resolve(parent)?,
        _ => validator.resolve(".")?,
    };
    let dir = Dir::open(validator, &parent, false, &mut Vec::new())?;
    let absolute = parent.join(&name);
    let shown = validator.relative(&absolute).display().to_string();
    let _lock = WriteLock::acquire([absolute.clone()]);
    let stat = rustix::fs::statat(dir.fd(), &name, AtFlags::SYMLINK_NOFOLLOW).map_err(|errno| {
        if errno == rustix::io::Errno::NOENT {
            Error::FileNotFound(format!(
                "'{shown}' does not exist, so there is nothing to delete"
            ))
        } else {
            anchor::io_error("inspecting", &absolute, errno)
        }
    })?;
    match anchor::kind_of(rustix::fs::FileType::from_raw_mode(stat.st_mode)) {
        Kind::Directory => {
            return Err(Error::InvalidInput(format!(
                "'{shown}' is a directory; delete_file removes files only"
            )))
        }
        Kind::File | Kind::Symlink | Kind::Other | Kind::Missing => {}
    }
    rustix::fs::unlinkat(dir.fd(), &name, AtFlags::empty())
        .map_err(|errno| anchor::io_error("deleting", &absolute, errno))?;
    Ok(DeleteOutput {
        path: shown,
        bytes: stat.st_size as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "hello").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        symlink(outside.path(), dir.path().join("outdir")).unwrap();
        symlink(outside.path().join("nothing"), dir.path().join("dangling")).unwrap();
        symlink("sub/a.txt", dir.path().join("alias")).unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, outside, validator)
    }

    #[test]
    fn exists_and_info_report_types_sizes_and_times() {
        let (_dir, _out, v) = setup();
        assert_eq!(exists(&v, "sub/a.txt").unwrap(), Some(EntryType::File));
        assert_eq!(exists(&v, "sub").unwrap(), Some(EntryType::Directory));
        assert_eq!(exists(&v, "nope").unwrap(), None);
        assert_eq!(exists(&v, "sub/a.txt/x").unwrap(), None);
        let meta = info(&v, "alias").unwrap();
        assert_eq!(
            (meta.path.as_str(), meta.entry_type, meta.size),
            ("sub/a.txt", EntryType::File, 5)
        );
        assert!(meta.modified_ms.unwrap() > 1.6e12);
        assert!(!meta.readonly);
        assert_eq!(info(&v, "nope").unwrap_err().code(), "FILE_NOT_FOUND");
        assert_eq!(info(&v, ".").unwrap().entry_type, EntryType::Directory);
    }

    #[test]
    fn every_escape_is_refused() {
        let (_dir, out, v) = setup();
        let absolute = out.path().join("secret").display().to_string();
        for path in [
            "../x",
            "leak",
            "outdir/secret",
            "dangling",
            absolute.as_str(),
            "sub/../../x",
        ] {
            assert_eq!(
                exists(&v, path).unwrap_err().code(),
                "PATH_OUTSIDE_ROOT",
                "{path}"
            );
            assert_eq!(
                info(&v, path).unwrap_err().code(),
                "PATH_OUTSIDE_ROOT",
                "{path}"
            );
            assert_eq!(
                delete(&v, path).unwrap_err().code(),
                "PATH_OUTSIDE_ROOT",
                "{path}"
            );
        }
        assert!(out.path().join("secret").exists());
    }

    #[test]
    fn delete_removes_files_and_links_but_not_directories() {
        let (dir, _out, v) = setup();
        let removed = delete(&v, "alias").unwrap();
        assert_eq!(removed.path, "alias");
        assert!(
            dir.path().join("sub/a.txt").exists(),
            "the link's target stays"
        );
        assert!(dir.path().join("alias").symlink_metadata().is_err());
        assert_eq!(delete(&v, "sub").unwrap_err().code(), "INVALID_INPUT");
        assert_eq!(delete(&v, ".").unwrap_err().code(), "INVALID_INPUT");
        assert_eq!(delete(&v, "sub/..").unwrap_err().code(), "INVALID_INPUT");
        let removed = delete(&v, "sub/a.txt").unwrap();
        assert_eq!((removed.path.as_str(), removed.bytes), ("sub/a.txt", 5));
        assert_eq!(
            delete(&v, "sub/a.txt").unwrap_err().code(),
            "FILE_NOT_FOUND"
        );
    }
}
