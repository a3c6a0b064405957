//! Which run states were already resumed. A state is self-contained and authenticated, but a
//! copy of it stays valid: resuming it twice would run the approved tools twice. The ledger is a
//! directory with one empty file per resumed state, created with `O_EXCL`, so that of two
//! resumes of one state — in two processes, even at the same moment — exactly one goes on.
//!
//! States expire after [`STATE_MAX_AGE_MS`], so a marker older than that can never be needed
//! again and is removed. Processes on several machines need a shared directory (a network file
//! system with `O_EXCL` semantics), given as the ledger directory.

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::limits::STATE_MAX_AGE_MS;

/// The directory of resumed-state markers.
#[derive(Debug, Clone)]
pub struct Ledger {
    dir: PathBuf,
}

/// The default ledger directory: private to the user, in the system's temporary directory.
pub fn default_ledger_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("toolgate-run-states-{uid}"))
}

impl Ledger {
    /// Opens (creating it, mode 0700) the ledger directory, or the default one. A directory
    /// another user owns, or one others may write to, is refused: they could pre-create
    /// markers (refusing resumes) or remove them (allowing replays).
    pub fn open(dir: Option<&Path>) -> Result<Self> {
        let dir = dir.map_or_else(default_ledger_dir, Path::to_path_buf);
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|err| Error::io("creating the run-state ledger directory", &dir, err))?;
        let meta = std::fs::metadata(&dir)
            .map_err(|err| Error::io("reading the run-state ledger directory", &dir, err))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
            return Err(Error::ConfigInvalid(format!(
                "the run-state ledger '{}' must be a directory owned by this user that others cannot write to (mode 0700); remove it or pass another stateLedger directory",
                dir.display()
            )));
        }
        Ok(Self { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Marks the state `id` resumed. Fails with `STATE_INVALID` when it already was (a replay).
    pub fn consume(&self, id: &str) -> Result<()> {
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::StateInvalid(format!(
                "the state id '{}' is not one toolgate issues",
                id.escape_debug()
            )));
        }
        self.prune();
        let marker = self.dir.join(id);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&marker)
        {
            Ok(_) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::StateInvalid(format!(
                "this run state ({id}) was already resumed; a state can be resumed once, so that no approved tool runs twice. Resume the newest state the run returned"
            ))),
            Err(err) => Err(Error::io("recording the resumed run state in", marker, err)),
        }
    }

    /// Removes markers of states that have expired anyway. Failures are harmless: a marker
    /// left behind only takes space.
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let cutoff = SystemTime::now() - Duration::from_millis(STATE_MAX_AGE_MS);
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_marker =
                name.len() == 32 && name.as_encoded_bytes().iter().all(u8::is_ascii_hexdigit);
            let expired = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| modified < cutoff);
            if is_marker && expired {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_state_is_consumed_once() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(Some(&dir.path().join("ledger"))).unwrap();
        ledger.consume(ID).unwrap();
        let err = ledger.consume(ID).unwrap_err();
        assert_eq!(err.code(), "STATE_INVALID");
        assert!(err.to_string().contains("already resumed"), "{err}");
        // a second handle on the same directory (another process) sees it too
        let other = Ledger::open(Some(ledger.dir())).unwrap();
        assert_eq!(other.consume(ID).unwrap_err().code(), "STATE_INVALID");
        other.consume(&ID.replace('0', "1")).unwrap();
    }

    #[test]
    fn ids_that_are_not_issued_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(Some(dir.path())).unwrap();
        for bad in [
            "",
            "../../etc/passwd",
            "0123456789abcdef0123456789abcdeg",
            "a/b",
        ] {
            assert_eq!(
                ledger.consume(bad).unwrap_err().code(),
                "STATE_INVALID",
                "{bad}"
            );
        }
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = Ledger::open(Some(&open)).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("0700"), "{err}");
    }

    #[test]
    fn expired_markers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(Some(dir.path())).unwrap();
        let old = dir.path().join(ID);
        std::fs::write(&old, "").unwrap();
        let long_ago = SystemTime::now() - Duration::from_millis(STATE_MAX_AGE_MS + 60_000);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        let keep = dir.path().join("notes.txt");
        std::fs::write(&keep, "").unwrap();
        ledger.consume(&ID.replace('0', "2")).unwrap();
        assert!(!old.exists());
        assert!(keep.exists());
    }
}
