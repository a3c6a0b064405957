//! Opening files that a sandboxed process may have swapped for something else.
//!
//! A plain `open` of a FIFO blocks until a writer appears, and one of some devices blocks or
//! never ends: a process that can write in the root could swap a file for a FIFO between a
//! file tool's check and its open, and hold the call (and the thread pool it runs on) forever.
//! So every open here is `O_NONBLOCK` (a FIFO opens at once, with or without a writer) and
//! `O_NOFOLLOW`, and what was opened is judged on the descriptor (`fstat`), never on the path:
//! anything but a regular file is closed again and refused.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use crate::error::Error;

/// The flags of every read-only open of a file: no blocking, no final symlink, no inheritance.
pub(crate) const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// What a file type is called in messages.
pub(crate) fn describe(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "a special file",
    }
}

/// The type of the open file `fd`.
pub(crate) fn type_of(fd: impl AsFd) -> std::io::Result<FileType> {
    rustix::fs::fstat(fd)
        .map(|stat| FileType::from_raw_mode(stat.st_mode))
        .map_err(std::io::Error::from)
}

/// `INVALID_INPUT` for `shown` (the path as the caller gave it), which is `file_type`.
pub(crate) fn not_regular(shown: &Path, file_type: FileType) -> Error {
    Error::InvalidInput(format!(
        "'{}' is {}, not a regular file; file tools only read and change regular files (and list directories)",
        shown.display(),
        describe(file_type)
    ))
}

/// Opens `name` in the directory `dir` for reading, without blocking and without following a
/// final symlink, and refuses anything but a regular file (judged on the descriptor).
/// `shown` names the file in the refusal. Errors of `openat` itself are returned as they are.
pub(crate) fn open_regular_at(
    dir: impl AsFd,
    name: &std::ffi::OsStr,
    shown: &Path,
) -> std::result::Result<File, OpenError> {
    let fd = rustix::fs::openat(dir, name, READ_FLAGS, Mode::empty()).map_err(OpenError::Open)?;
    let file_type = type_of(&fd).map_err(|err| OpenError::Open(errno_of(&err)))?;
    if file_type != FileType::RegularFile {
        return Err(OpenError::Refused(not_regular(shown, file_type)));
    }
    Ok(File::from(fd))
}

/// Why [`open_regular_at`] failed: the open itself, or what it found.
#[derive(Debug)]
pub(crate) enum OpenError {
    Open(rustix::io::Errno),
    Refused(Error),
}

/// Opens `path` for reading like [`open_regular_at`]; `Ok(None)` when it is not a regular file
/// (a walk skips it). For walks, which meet paths, not directory descriptors.
pub(crate) fn open_regular_path(path: &Path) -> std::io::Result<Option<File>> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    Ok((type_of(&file)? == FileType::RegularFile).then_some(file))
}

/// Reads the regular file `path` whole, up to `max` bytes (`None`: it is not a regular file,
/// it cannot be opened, or it is larger). For small control files such as `.gitignore`.
pub(crate) fn read_small_regular(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = open_regular_path(path).ok()??;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= max).then_some(bytes)
}

fn errno_of(err: &std::io::Error) -> rustix::io::Errno {
    err.raw_os_error()
        .map_or(rustix::io::Errno::IO, rustix::io::Errno::from_raw_os_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;
    use std::os::unix::net::UnixListener;

    /// `Ok` when the open `file` is a regular file.
    fn ensure_regular(file: &File, shown: &Path) -> Result<()> {
        let file_type =
            type_of(file).map_err(|err| Error::io("inspecting", shown.to_path_buf(), err))?;
        if file_type == FileType::RegularFile {
            Ok(())
        } else {
            Err(not_regular(shown, file_type))
        }
    }

    fn mkfifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }

    #[test]
    fn special_files_open_without_blocking_and_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let socket = dir.path().join("socket");
        let _listener = UnixListener::bind(&socket).unwrap();
        std::fs::write(dir.path().join("file"), "text").unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
        let opened = rustix::fs::open(dir.path(), OFlags::RDONLY, Mode::empty()).unwrap();

        // A FIFO without a writer: a blocking open would never return.
        let refused = open_regular_at(&opened, "fifo".as_ref(), Path::new("fifo")).unwrap_err();
        let OpenError::Refused(err) = refused else {
            panic!("{refused:?}")
        };
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("'fifo' is a FIFO"), "{err}");
        assert!(open_regular_path(&fifo).unwrap().is_none());
        assert!(read_small_regular(&fifo, 100).is_none());

        // A socket cannot be opened at all; a symlink to a device is not followed.
        assert!(open_regular_at(&opened, "socket".as_ref(), Path::new("socket")).is_err());
        assert!(matches!(
            open_regular_at(&opened, "zero".as_ref(), Path::new("zero")),
            Err(OpenError::Open(rustix::io::Errno::LOOP))
        ));
        assert!(open_regular_path(&dir.path().join("zero")).is_err());

        // A directory opens, and is refused for what it is.
        let OpenError::Refused(err) =
            open_regular_at(&opened, ".".as_ref(), Path::new(".")).unwrap_err()
        else {
            panic!("a directory is not a regular file")
        };
        assert!(err.to_string().contains("is a directory"), "{err}");

        // A regular file opens; small ones are read whole, larger ones are not.
        let file = open_regular_at(&opened, "file".as_ref(), Path::new("file")).unwrap();
        ensure_regular(&file, Path::new("file")).unwrap();
        assert_eq!(
            read_small_regular(&dir.path().join("file"), 4).unwrap(),
            b"text"
        );
        assert!(read_small_regular(&dir.path().join("file"), 3).is_none());
    }

    #[test]
    fn a_character_device_is_refused_on_its_descriptor() {
        let Ok(zero) = File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/zero")
        else {
            eprintln!("skipped: /dev/zero cannot be opened here");
            return;
        };
        let err = ensure_regular(&zero, Path::new("zero")).unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        assert!(open_regular_path(Path::new("/dev/zero")).unwrap().is_none());
    }
}
