//! A whole regular file's bytes, read inside the root like every file tool reads: reached by
//! walking from the root with `O_NOFOLLOW`, so a symlink swapped in after validation is
//! refused, and never more than a cap, whatever the file claims its size is.

use std::io::Read;
use std::path::PathBuf;

use super::anchor::{Kind, Target};
use crate::error::{Error, Result};
use crate::path::PathValidator;

/// What [`read_bytes`] found.
#[derive(Debug)]
pub enum FileBytes {
    /// The whole file.
    Whole {
        /// The path relative to the root.
        relative: PathBuf,
        bytes: Vec<u8>,
    },
    /// The file holds more than the cap; nothing beyond the cap was read.
    TooLarge {
        /// The path relative to the root.
        relative: PathBuf,
    },
}

/// Reads the regular file at `path` (relative to the root, or absolute inside it) when it holds
/// at most `max_bytes`. `PATH_OUTSIDE_ROOT` for a path (or a symlink) leading out of the root,
/// `FILE_NOT_FOUND` for a missing file, `INVALID_INPUT` for a directory or another kind of file.
pub fn read_bytes(validator: &PathValidator, path: &str, max_bytes: u64) -> Result<FileBytes> {
    let absolute = validator.resolve(path)?;
    let target = Target::at(validator, absolute, false, &mut Vec::new())?;
    let relative = target.relative.clone();
    match target.kind()? {
        Kind::File => {}
        Kind::Missing => {
            return Err(Error::FileNotFound(format!(
                "'{}' does not exist; check the path (glob_search finds files by name)",
                relative.display()
            )))
        }
        _ => {
            return Err(Error::InvalidInput(format!(
                "'{}' is not a regular file; only files can be read whole",
                relative.display()
            )))
        }
    }
    let file = target.open_read()?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| Error::io("reading", &target.absolute, err))?;
    if bytes.len() as u64 > max_bytes {
        return Ok(FileBytes::TooLarge { relative });
    }
    Ok(FileBytes::Whole { relative, bytes })
}
