//! Opening directories and files inside the root without following symlinks that appear after
//! a path was validated.
//!
//! [`PathValidator::resolve`] returns a symlink-free absolute path, but it is only a string: a
//! component could be swapped for a symlink between the check and the use. So every file tool
//! reaches its target by walking from the root one component at a time with
//! `openat(O_NOFOLLOW | O_DIRECTORY)`, and then acts on the final name relative to that
//! directory descriptor (`openat`/`renameat`/`unlinkat` with `O_NOFOLLOW`). A component that
//! has become a symlink makes the walk fail with `ELOOP` instead of leaving the root.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{special, temp};
use crate::error::{Error, Result};
use crate::path::{PathValidator, OUTSIDE_DETAIL};

/// A directory inside the root, held open by descriptor.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    /// Absolute path, for messages and for walkers that need a path.
    pub path: PathBuf,
}

/// A path inside the root split into its (open) parent directory and final name.
#[derive(Debug)]
pub(crate) struct Target {
    pub parent: Dir,
    pub name: OsString,
    /// Absolute path of the target.
    pub absolute: PathBuf,
    /// Path relative to the root, as the caller should see it.
    pub relative: PathBuf,
}

/// What is at a target, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    File,
    Directory,
    Symlink,
    Other,
}

impl Dir {
    /// Opens `absolute` (a path the validator accepted) by walking down from the root with
    /// `O_NOFOLLOW` on every component. With `create`, missing directories are made on the way;
    /// the ones made are appended to `created` (outermost first) so a caller can undo them.
    pub fn open(
        validator: &PathValidator,
        absolute: &Path,
        create: bool,
        created: &mut Vec<PathBuf>,
    ) -> Result<Dir> {
        let root = validator.root();
        let below = absolute
            .strip_prefix(root)
            .map_err(|_| outside(validator, absolute))?;
        let mut fd = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| io_error("opening", root, errno))?;
        let mut path = root.to_path_buf();
        for component in below.components() {
            let Component::Normal(name) = component else {
                return Err(outside(validator, absolute));
            };
            path.push(name);
            if create {
                match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) => created.push(path.clone()),
                    Err(Errno::EXIST) => {}
                    Err(errno) => return Err(io_error("creating directory", &path, errno)),
                }
            }
            fd = rustix::fs::openat(
                &fd,
                name,
                OFlags::RDONLY
                    | OFlags::DIRECTORY
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|errno| match errno {
                // O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP).
                Errno::LOOP => swapped(validator, &path),
                Errno::NOTDIR if is_symlink(&fd, name) => swapped(validator, &path),
                Errno::NOTDIR => Error::InvalidInput(format!(
                    "'{}' is not a directory, so nothing can be inside it",
                    validator.relative(&path).display()
                )),
                other => io_error("opening directory", &path, other),
            })?;
        }
        Ok(Dir { fd, path })
    }

    pub fn fd(&self) -> impl AsFd + '_ {
        self.fd.as_fd()
    }
}

impl Target {
    /// Opens the parent directory of `absolute`, a path the validator resolved (creating
    /// missing parents when `create_parents`). The root itself is not a target: it has no name.
    pub fn at(
        validator: &PathValidator,
        absolute: PathBuf,
        create_parents: bool,
        created: &mut Vec<PathBuf>,
    ) -> Result<Target> {
        let relative = validator.relative(&absolute);
        let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
            return Err(Error::InvalidInput(
                "the root directory itself cannot be used here; name a file inside it".into(),
            ));
        };
        if absolute == validator.root() {
            return Err(Error::InvalidInput(
                "the root directory itself cannot be used here; name a file inside it".into(),
            ));
        }
        let parent = Dir::open(validator, parent, create_parents, created)?;
        Ok(Target {
            name: name.to_os_string(),
            parent,
            relative,
            absolute,
        })
    }

    /// A second handle on the same target (the directory descriptor is duplicated).
    pub fn try_clone(&self) -> Result<Target> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&self.parent.fd, 0)
            .map_err(|errno| io_error("opening", &self.parent.path, errno))?;
        Ok(Target {
            parent: Dir {
                fd,
                path: self.parent.path.clone(),
            },
            name: self.name.clone(),
            absolute: self.absolute.clone(),
            relative: self.relative.clone(),
        })
    }

    /// What is at the target now (a final symlink is reported as a symlink, not followed).
    pub fn kind(&self) -> Result<Kind> {
        match rustix::fs::statat(self.parent.fd(), &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(kind_of(FileType::from_raw_mode(stat.st_mode))),
            Err(Errno::NOENT) => Ok(Kind::Missing),
            Err(errno) => Err(io_error("inspecting", &self.absolute, errno)),
        }
    }

    /// Metadata of the target (a final symlink is not followed).
    pub fn stat(&self) -> Result<rustix::fs::Stat> {
        rustix::fs::statat(self.parent.fd(), &self.name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|errno| io_error("inspecting", &self.absolute, errno))
    }

    /// Opens the target for reading; a symlink swapped in after validation is refused, and so is
    /// anything but a regular file: the open never blocks (a FIFO or device swapped in after
    /// the check would block a plain open forever), and the type is judged on the descriptor.
    pub fn open_read(&self) -> Result<File> {
        special::open_regular_at(self.parent.fd(), &self.name, &self.relative).map_err(|failure| {
            match failure {
                special::OpenError::Refused(err) => err,
                // A symlink swapped in after validation: refused like any other way out.
                special::OpenError::Open(Errno::LOOP) => Error::PathOutsideRoot {
                    path: self.relative.display().to_string(),
                    root: root_of(&self.absolute, &self.relative),
                    detail: OUTSIDE_DETAIL.into(),
                },
                special::OpenError::Open(other) => io_error("opening", &self.absolute, other),
            }
        })
    }

    /// Writes `bytes` to a new temporary file beside the target and renames it over the target,
    /// so readers see the old or the new content, never half of it. The temporary file is made
    /// with `O_EXCL | O_NOFOLLOW`; rename replaces a final symlink instead of writing through
    /// it. `mode` keeps an existing file's permissions; without it the umask applies.
    /// With `no_replace`, the rename fails if something appeared at the target meanwhile.
    pub fn write_atomic(&self, bytes: &[u8], mode: Option<u32>, no_replace: bool) -> Result<()> {
        self.write_atomic_checked(bytes, mode, no_replace, None)
            .map(|_| ())
    }

    /// Like [`write_atomic`](Self::write_atomic), but renames only if the target still holds
    /// exactly `expected` (what the caller read and changed). Returns false, and changes
    /// nothing, when another program changed the target meanwhile: the content is compared
    /// just before the rename, after the new content is on disk.
    pub fn write_atomic_unless_changed(
        &self,
        bytes: &[u8],
        mode: Option<u32>,
        expected: &[u8],
    ) -> Result<bool> {
        self.write_atomic_checked(bytes, mode, false, Some(expected))
    }

    fn write_atomic_checked(
        &self,
        bytes: &[u8],
        mode: Option<u32>,
        no_replace: bool,
        expected: Option<&[u8]>,
    ) -> Result<bool> {
        let temp = self.temp_file(mode)?;
        let outcome = write_and_sync(&temp.1, bytes)
            .map_err(|err| Error::io("writing", &self.absolute, err))
            .and_then(|()| match expected {
                Some(expected) => {
                    #[cfg(test)]
                    race::before_check(&self.absolute);
                    self.holds(expected)
                }
                None => Ok(true),
            })
            .and_then(|unchanged| {
                if unchanged {
                    self.rename_from(&temp.0, no_replace)?;
                }
                Ok(unchanged)
            });
        if !matches!(outcome, Ok(true)) {
            let _ = rustix::fs::unlinkat(self.parent.fd(), &temp.0, AtFlags::empty());
        }
        if outcome.is_ok() {
            temp::sweep_if_due(self.parent.fd.as_fd(), &self.parent.path);
        }
        outcome
    }

    /// Whether the target is a file holding exactly `expected`.
    fn holds(&self, expected: &[u8]) -> Result<bool> {
        use std::io::Read;
        let file = match self.open_read() {
            Ok(file) => file,
            Err(Error::FileNotFound(_)) => return Ok(false),
            Err(err) => return Err(err),
        };
        let size = file
            .metadata()
            .map_err(|err| Error::io("reading", &self.absolute, err))?
            .len();
        if size != expected.len() as u64 {
            return Ok(false);
        }
        let mut now = Vec::with_capacity(expected.len());
        (&file)
            .take(size + 1)
            .read_to_end(&mut now)
            .map_err(|err| Error::io("reading", &self.absolute, err))?;
        Ok(now == expected)
    }

    /// Creates a `.tmp` file beside the target, named after this process (see [`temp`]).
    fn temp_file(&self, mode: Option<u32>) -> Result<(OsString, File)> {
        loop {
            let name = self.hidden_name("tmp");
            let created = rustix::fs::openat(
                self.parent.fd(),
                &name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode.unwrap_or(0o666)),
            );
            match created {
                Ok(fd) => {
                    if let Some(mode) = mode {
                        // The umask trimmed the mode given to openat; restore the original.
                        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))
                            .map_err(|errno| io_error("writing", &self.absolute, errno))?;
                    }
                    return Ok((name, File::from(fd)));
                }
                Err(Errno::EXIST) => continue,
                Err(errno) => return Err(io_error("writing", &self.absolute, errno)),
            }
        }
    }

    /// A fresh hidden name beside the target that names this process as its writer (see
    /// [`temp`](super::temp)).
    pub fn hidden_name(&self, suffix: &str) -> OsString {
        temp::hidden_name(&self.name, suffix)
    }

    /// Renames `from` (a name in the same directory) onto the target.
    fn rename_from(&self, from: &OsStr, no_replace: bool) -> Result<()> {
        rename(&self.parent, from, &self.parent, &self.name, no_replace)
            .map_err(|errno| rename_error(&self.absolute, errno))
    }

    /// Removes the target (a file or symlink, never a directory).
    pub fn unlink(&self) -> Result<()> {
        rustix::fs::unlinkat(self.parent.fd(), &self.name, AtFlags::empty())
            .map_err(|errno| io_error("deleting", &self.absolute, errno))
    }
}

/// `renameat`, with `RENAME_NOREPLACE` when asked (falling back to a check on file systems
/// that lack it).
pub(crate) fn rename(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
    no_replace: bool,
) -> std::result::Result<(), Errno> {
    if no_replace {
        match rustix::fs::renameat_with(
            from_dir.fd(),
            from,
            to_dir.fd(),
            to,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                if rustix::fs::statat(to_dir.fd(), to, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
                    return Err(Errno::EXIST);
                }
            }
            other => return other,
        }
    }
    rustix::fs::renameat(from_dir.fd(), from, to_dir.fd(), to)
}

pub(crate) fn rename_error(path: &Path, errno: Errno) -> Error {
    if errno == Errno::EXIST {
        return Error::InvalidInput(format!(
            "'{}' appeared while it was being written; nothing was overwritten. Try again",
            path.display()
        ));
    }
    io_error("renaming onto", path, errno)
}

/// Test-only: an action registered for a path runs between writing an edit's new content and
/// checking that the target is unchanged, the moment another program's write would land. Tests
/// use it to run a real other process exactly then, instead of hoping a timed one hits it.
#[cfg(test)]
pub(crate) mod race {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::{LazyLock, Mutex, PoisonError};

    type Action = Box<dyn FnMut() + Send>;
    static ACTIONS: LazyLock<Mutex<HashMap<PathBuf, Action>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));

    /// Runs `action` each time an edit of `path` is about to check it (until [`clear`]).
    pub fn before_check_of(path: &Path, action: impl FnMut() + Send + 'static) {
        let mut actions = ACTIONS.lock().unwrap_or_else(PoisonError::into_inner);
        actions.insert(path.to_path_buf(), Box::new(action));
    }

    pub fn clear(path: &Path) {
        let mut actions = ACTIONS.lock().unwrap_or_else(PoisonError::into_inner);
        actions.remove(path);
    }

    pub(super) fn before_check(path: &Path) {
        let mut actions = ACTIONS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(action) = actions.get_mut(path) {
            action();
        }
    }
}

fn write_and_sync(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut writer = file;
    writer.write_all(bytes)?;
    file.sync_all()
}

fn is_symlink(dir: &OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
}

pub(crate) fn kind_of(file_type: FileType) -> Kind {
    match file_type {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Directory,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    }
}

pub(crate) fn io_error(action: &'static str, path: &Path, errno: Errno) -> Error {
    Error::io(action, path, std::io::Error::from(errno))
}

/// The refusal of a path that is not below the root. Only its final name is shown: the path is
/// already resolved, and where it leads is not the caller's to learn.
fn outside(validator: &PathValidator, path: &Path) -> Error {
    let name = path.file_name().map_or_else(
        || ".".to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    validator.outside(&name)
}

/// The refusal of a path one of whose directories became a symlink after it was checked: the
/// same message as every other way out of the root.
fn swapped(validator: &PathValidator, path: &Path) -> Error {
    validator.outside(&validator.relative(path).display().to_string())
}

/// The root a target was resolved against: its absolute path without the relative part.
fn root_of(absolute: &Path, relative: &Path) -> PathBuf {
    let mut root = absolute.to_path_buf();
    if relative != Path::new(".") {
        for _ in relative.components() {
            root.pop();
        }
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root/a")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        let validator = PathValidator::new(dir.path().join("root")).unwrap();
        (dir, validator)
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_after_validation_is_not_followed() {
        let (dir, validator) = setup();
        let absolute = validator.resolve("a/file.txt").unwrap();
        // The race: after validation, `a` becomes a symlink to a directory outside.
        std::fs::remove_dir(dir.path().join("root/a")).unwrap();
        symlink(dir.path().join("outside"), dir.path().join("root/a")).unwrap();
        let err = Target::at(&validator, absolute, false, &mut Vec::new()).unwrap_err();
        assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{err}");
    }

    #[test]
    fn a_final_symlink_swapped_in_is_replaced_not_written_through() {
        let (dir, validator) = setup();
        let target = Target::at(
            &validator,
            validator.resolve("a/file.txt").unwrap(),
            false,
            &mut Vec::new(),
        )
        .unwrap();
        let secret = dir.path().join("outside/secret");
        std::fs::write(&secret, "secret").unwrap();
        symlink(&secret, dir.path().join("root/a/file.txt")).unwrap();
        assert_eq!(target.open_read().unwrap_err().code(), "PATH_OUTSIDE_ROOT");
        target.write_atomic(b"new", None, false).unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
        let written = dir.path().join("root/a/file.txt");
        assert!(!written.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(written).unwrap(), "new");
    }

    #[test]
    fn atomic_writes_keep_permissions_and_leave_no_temporary_files() {
        let (dir, validator) = setup();
        let file = dir.path().join("root/a/run.sh");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o751)).unwrap();
        let target = Target::at(
            &validator,
            validator.resolve("a/run.sh").unwrap(),
            false,
            &mut Vec::new(),
        )
        .unwrap();
        target.write_atomic(b"new", Some(0o751), false).unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o751);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("root/a"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("run.sh")]);
    }

    #[test]
    fn no_replace_refuses_an_existing_target() {
        let (dir, validator) = setup();
        std::fs::write(dir.path().join("root/a/taken"), "x").unwrap();
        let target = Target::at(
            &validator,
            validator.resolve("a/taken").unwrap(),
            false,
            &mut Vec::new(),
        )
        .unwrap();
        let err = target.write_atomic(b"y", None, true).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("root/a/taken")).unwrap(),
            "x"
        );
    }

    #[test]
    fn missing_parents_are_created_and_reported() {
        let (_dir, validator) = setup();
        let mut created = Vec::new();
        let target = Target::at(
            &validator,
            validator.resolve("x/y/z.txt").unwrap(),
            true,
            &mut created,
        )
        .unwrap();
        assert_eq!(created.len(), 2);
        assert!(created[1].ends_with("x/y"));
        assert_eq!(target.kind().unwrap(), Kind::Missing);
        let err = Target::at(
            &validator,
            validator.resolve(".").unwrap(),
            false,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
    }
}
