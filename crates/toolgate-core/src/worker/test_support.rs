//! What the worker tests share: real temporary folders, real files, real loads.

use std::path::{Path, PathBuf};

use super::{load_worker, LoadOptions, Worker};
use crate::error::Result;

pub(crate) struct Dir {
    _temp: tempfile::TempDir,
    /// The folder, canonical (so that paths compare equal to what loading returns).
    pub path: PathBuf,
}

/// A fresh folder. Worker tools get the enforced sandbox by default, so the launcher is made
/// ready (found or built) first.
pub(crate) fn dir() -> Dir {
    crate::test_support::launcher();
    let temp = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(temp.path()).unwrap();
    Dir { _temp: temp, path }
}

/// Writes `text` to `dir/name`, making the folders on the way.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

pub(crate) fn load(path: &Path) -> Result<Worker> {
    load_worker(path, &LoadOptions::default())
}

/// The message of a `CONFIG_INVALID`; anything else fails the test.
pub(crate) fn config_error(result: Result<Worker>) -> String {
    match result {
        Err(err) => {
            assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
            err.to_string()
        }
        Ok(worker) => panic!("expected CONFIG_INVALID, got worker {}", worker.name),
    }
}
