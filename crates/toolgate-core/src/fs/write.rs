//! `file_write` / `write_file`: whole-file writes, atomic (temporary file + rename).

use std::path::PathBuf;

use super::access::Access;
use super::anchor::{Kind, Target};
use super::lock::WriteLock;
use super::text::human_size;
use crate::error::{Error, Result};
use crate::limits::MAX_CONTENT_BYTES;
use crate::path::PathValidator;

/// Whether a write made a new file or replaced an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAction {
    Created,
    Updated,
}

impl WriteAction {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteAction::Created => "created",
            WriteAction::Updated => "updated",
        }
    }
}

/// The result of a write.
#[derive(Debug, Clone)]
pub struct WriteOutput {
    /// The path relative to the root.
    pub path: String,
    pub action: WriteAction,
    pub bytes: u64,
}

/// Writes `content` to `path`, creating missing parent directories. The new content is
/// written to a temporary file beside the target and renamed over it, so a crash leaves the
/// old file or the new one, never half of one. An existing file keeps its permissions.
/// Writers of one file in this process take turns (see `lock`); the last one wins.
/// With path rules, a blocked path is refused before anything is created.
pub fn write<'a>(access: impl Into<Access<'a>>, path: &str, content: &[u8]) -> Result<WriteOutput> {
    check_content_size("content", content.len())?;
    let access = access.into();
    let (absolute, _) = access.target_to_change(path)?;
    let mut created = Vec::new();
    let outcome = write_creating(access.validator(), absolute, content, &mut created);
    if outcome.is_err() {
        remove_created_dirs(&created);
    }
    outcome
}

fn write_creating(
    validator: &PathValidator,
    absolute: PathBuf,
    content: &[u8],
    created: &mut Vec<PathBuf>,
) -> Result<WriteOutput> {
    let target = Target::at(validator, absolute, true, created)?;
    let _lock = WriteLock::acquire([target.absolute.clone()]);
    let (action, mode) = match target.kind()? {
        Kind::Missing => (WriteAction::Created, None),
        Kind::File => (WriteAction::Updated, Some(target.stat()?.st_mode & 0o7777)),
        // Only reachable through a race (the validator resolved symlinks): rename replaces the
        // link itself, never what it points to.
        Kind::Symlink => (WriteAction::Updated, None),
        Kind::Directory => {
            return Err(Error::InvalidInput(format!(
                "'{}' is a directory; give a file path inside it",
                target.relative.display()
            )))
        }
        Kind::Other => {
            return Err(Error::InvalidInput(format!(
                "'{}' is not a regular file; only regular files can be written",
                target.relative.display()
            )))
        }
    };
    target.write_atomic(content, mode, action == WriteAction::Created)?;
    Ok(WriteOutput {
        path: target.relative.display().to_string(),
        action,
        bytes: content.len() as u64,
    })
}

/// Refuses content over [`MAX_CONTENT_BYTES`]; `field` names it in the message.
pub(crate) fn check_content_size(field: &str, bytes: usize) -> Result<()> {
    if bytes > MAX_CONTENT_BYTES {
        return Err(Error::InvalidInput(format!(
            "{field} is {}; at most {} can be written at once. Write the file in parts (file_write, then file_edit to add to it) or generate it with a command",
            human_size(bytes as u64),
            human_size(MAX_CONTENT_BYTES as u64)
        )));
    }
    Ok(())
}

/// Removes directories a failed operation created, innermost first; ones that are no longer
/// empty stay.
pub(crate) fn remove_created_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    #[test]
    fn creates_parents_then_updates_in_place() {
        let (dir, v) = setup();
        let out = write(&v, "a/b/c.txt", b"hello").unwrap();
        assert_eq!(
            (out.path.as_str(), out.action, out.bytes),
            ("a/b/c.txt", WriteAction::Created, 5)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "hello"
        );
        std::fs::set_permissions(
            dir.path().join("a/b/c.txt"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let out = write(&v, "a/b/c.txt", b"bye").unwrap();
        assert_eq!(out.action, WriteAction::Updated);
        let meta = std::fs::metadata(dir.path().join("a/b/c.txt")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "bye"
        );
    }

    #[test]
    fn writing_through_an_inside_symlink_updates_its_target() {
        let (dir, v) = setup();
        std::fs::write(dir.path().join("real.txt"), "old").unwrap();
        symlink("real.txt", dir.path().join("alias.txt")).unwrap();
        let out = write(&v, "alias.txt", b"new").unwrap();
        assert_eq!(out.path, "real.txt");
        assert!(dir
            .path()
            .join("alias.txt")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("real.txt")).unwrap(),
            "new"
        );
    }

    #[test]
    fn refusals_leave_nothing_behind() {
        let (dir, v) = setup();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        symlink(&victim, dir.path().join("dangling")).unwrap();
        symlink(outside.path(), dir.path().join("outdir")).unwrap();
        for path in [
            "dangling",
            "outdir/x",
            "../x",
            &outside.path().join("abs").display().to_string(),
        ] {
            let err = write(&v, path, b"pwned").unwrap_err();
            assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{path}: {err}");
        }
        assert!(!victim.exists());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(write(&v, "d", b"x").unwrap_err().code(), "INVALID_INPUT");
        // A failure after parents were created removes them again.
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let err = write(&v, "file/child", b"x").unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{err}");
        let too_long = format!("new/dir/{}", "x".repeat(300));
        let err = write(&v, &too_long, b"x").unwrap_err();
        assert_eq!(err.code(), "IO_ERROR", "{err}");
        assert!(!dir.path().join("new").exists());

        let huge = vec![b'x'; MAX_CONTENT_BYTES + 1];
        let err = write(&v, "huge.txt", &huge).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("at most 16.0 MiB"), "{err}");
        assert!(!dir.path().join("huge.txt").exists());
    }
}
