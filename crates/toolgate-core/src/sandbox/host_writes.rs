//! What toolgate itself wrote at guarded paths (the permissions file a "save" answer writes
//! while calls run), so that the check after a call neither takes such a write for the call's
//! nor lets the call keep a change it made after it: the kernel's read-only mount of a file does
//! not survive the file being replaced on the host, so a process of a running call may open the
//! new one.
//!
//! Kept in this process, and — for a write by another toolgate process of the same user (two
//! runs in one project) — in a folder private to the user in the system's temporary directory,
//! which no sandboxed process sees: the file's identity (device, inode, change time, size; the
//! change time no process can set), when it was written, and its bytes.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest write whose bytes are kept to be put back (a permissions file is a few KiB).
const MAX_KEPT_WRITE: u64 = 1 << 20;

/// A file as it is now: device, inode, change time and size.
type FileIdentity = (u64, u64, i64, i64, u64);

#[derive(Clone)]
struct HostWrite {
    identity: FileIdentity,
    /// When toolgate wrote it.
    at: SystemTime,
    /// What toolgate wrote (files up to [`MAX_KEPT_WRITE`]).
    bytes: Option<Arc<[u8]>>,
}

fn here() -> &'static Mutex<HashMap<PathBuf, HostWrite>> {
    static WRITES: OnceLock<Mutex<HashMap<PathBuf, HostWrite>>> = OnceLock::new();
    WRITES.get_or_init(Default::default)
}

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
/// at `path`.
pub(crate) fn note(path: &Path) {
    let Some(id) = identity(path) else {
        return;
    };
    let bytes = (id.4 <= MAX_KEPT_WRITE)
        .then(|| std::fs::read(path).ok())
        .flatten()
        .filter(|bytes| bytes.len() as u64 == id.4)
        .map(Arc::from);
    let write = HostWrite {
        identity: id,
        at: SystemTime::now(),
        bytes,
    };
    if let Some(records) = Records::open() {
        records.write(path, &write);
    }
    here()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(path.to_path_buf(), write);
}

/// The last write of toolgate at `path`, this process's or another's, whichever is newer.
fn last(path: &Path) -> Option<HostWrite> {
    let mine = here()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(path)
        .cloned();
    let recorded = Records::open().and_then(|records| records.read(path));
    match (mine, recorded) {
        (Some(mine), Some(recorded)) if recorded.at > mine.at => Some(recorded),
        (Some(mine), _) => Some(mine),
        (None, recorded) => recorded,
    }
}

/// Whether this process wrote at `path` (a look at memory only: cheap enough for every call).
pub(crate) fn written_here(path: &Path) -> bool {
    here()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains_key(path)
}

/// Whether what is at `path` now is exactly what toolgate last wrote there.
pub(crate) fn is_current(path: &Path) -> bool {
    last(path).is_some_and(|write| identity(path) == Some(write.identity))
}

/// What toolgate wrote at `path` since `since`, when what is there now is not that.
pub(crate) fn changed_since(path: &Path, since: SystemTime) -> Option<Arc<[u8]>> {
    let write = last(path)?;
    (write.at >= since && identity(path) != Some(write.identity))
        .then_some(write.bytes)
        .flatten()
}

/// `$TMPDIR/<prefix>-<uid>`, made mode 0700 if missing, when it is a folder of this user's that
/// nobody else may use (sandboxed processes get a private temporary directory: they do not see
/// it); `None` otherwise.
pub(crate) fn private_user_dir(prefix: &str) -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("{prefix}-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0).then_some(dir)
}

/// The folder of the records, private to this user.
struct Records {
    dir: PathBuf,
}

impl Records {
    fn open() -> Option<Records> {
        private_user_dir("toolgate-host-writes").map(|dir| Records { dir })
    }

    /// The record of `path`: named by a digest of the path (any length, any bytes).
    fn file(&self, path: &Path) -> PathBuf {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.dir.join(name)
    }

    /// One line (`dev ino ctime ctime_nsec size at_nanos`), then the bytes; written whole
    /// (a new file renamed into place).
    fn write(&self, path: &Path, write: &HostWrite) {
        let Some(bytes) = &write.bytes else {
            return;
        };
        let (dev, ino, ctime, ctime_nsec, size) = write.identity;
        let at = write
            .at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let file = self.file(path);
        let temporary = file.with_extension(format!("{}.tmp", std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&temporary)?;
            writeln!(out, "{dev} {ino} {ctime} {ctime_nsec} {size} {at}")?;
            out.write_all(bytes)?;
            std::fs::rename(&temporary, &file)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }

    fn read(&self, path: &Path) -> Option<HostWrite> {
        let text = crate::fs::read_small_regular_file(&self.file(path), MAX_KEPT_WRITE + 256)?;
        let end = text.iter().position(|&byte| byte == b'\n')?;
        let head = std::str::from_utf8(&text[..end]).ok()?;
        let fields: Vec<&str> = head.split(' ').collect();
        let [dev, ino, ctime, ctime_nsec, size, at] = fields.as_slice() else {
            return None;
        };
        let at: u64 = at.parse().ok()?;
        Some(HostWrite {
            identity: (
                dev.parse().ok()?,
                ino.parse().ok()?,
                ctime.parse().ok()?,
                ctime_nsec.parse().ok()?,
                size.parse().ok()?,
            ),
            at: UNIX_EPOCH + Duration::from_nanos(at),
            bytes: Some(Arc::from(&text[end + 1..])),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forget_here(path: &Path) {
        here()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(path);
    }

    #[test]
    fn another_processs_write_is_known_from_its_record_and_only_since_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::canonicalize(dir.path())
            .unwrap()
            .join("toolgate.permissions.yaml");
        let before = SystemTime::now();
        std::fs::write(&file, "version: 1\nrules: []\n").unwrap();
        note(&file);
        // As another toolgate process knows it: from the record alone.
        forget_here(&file);
        assert!(!written_here(&file));
        assert!(is_current(&file));
        assert!(changed_since(&file, before).is_none(), "unchanged");
        // A call's process replaces it (the mount detached) with more rules.
        let planted = file.with_extension("new");
        std::fs::write(&planted, "version: 1\nrules: []\n  - planted\n").unwrap();
        std::fs::rename(&planted, &file).unwrap();
        assert!(!is_current(&file));
        assert_eq!(
            changed_since(&file, before).as_deref(),
            Some(&b"version: 1\nrules: []\n"[..])
        );
        // A write from before the call is not the call's to keep or lose.
        assert!(changed_since(&file, SystemTime::now()).is_none());
    }
}
