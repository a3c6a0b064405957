//! The private, empty, toolgate-owned directory a call gets for its `HOME` and `TMPDIR`.
//!
//! Call directories live in one directory per toolgate process under the temp directory
//! (`$TMPDIR` of this process; else `/tmp`, or `/dev/shm` when only that is a tmpfs, see
//! [`temp_root`]): `toolgate-<random>/`, mode 0700, so no other user can enter it or guess a
//! name in it. Never inside the work directory, so files
//! the model writes there cannot become program configuration. (Not `$XDG_RUNTIME_DIR`: that
//! tmpfs is small and holds the session's sockets, and a program's temporary files could fill
//! it.) A call directory has an unpredictable name, mode 0700, and holds `home/` and `tmp/`;
//! the `XDG_*` base directories point under `home/`.
//!
//! Creating and removing directories is slow on some disks (on an ext4 mounted with `discard`
//! a removal takes milliseconds), so neither is on a call's path: a background thread keeps a
//! few fresh directories ready, and when a call ends its directory is renamed out of the way
//! (its path is gone when the call returns) and deleted by that thread. Deleting never
//! follows symlinks: what the program left inside is deleted, what a symlink points to is not.
//! A sandboxed call's directory is only named here ([`CallDir::reserve`]): the launcher makes
//! it where the program sees it, in the call's own tmpfs when the call has a view (a directory
//! here would be hidden under it), in this directory otherwise.
//! The process's directory goes when the process exits normally (an `atexit` hook), and the
//! launcher server removes it when toolgate exits or is killed while it runs sandboxed calls.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

use rustix::fs::Mode;
use toolgate_sandbox::cleanup::remove_tree;

use super::env;
use crate::error::{Error, Result};
/// How many fresh call directories the background thread keeps ready.
const READY: usize = 4;
/// The prefix of a call directory that was renamed out of the way, waiting to be deleted.
const GONE_PREFIX: &str = "gone-";

/// A per-call directory; removed on drop.
#[derive(Debug)]
pub struct CallDir {
    root: PathBuf,
}

impl CallDir {
    /// A fresh `<process dir>/toolgate-call-<random>/{home,tmp}`, all mode 0700: one made ahead of time
    /// when there is one, else made now.
    pub fn create() -> Result<Self> {
        let janitor = janitor();
        let ready = {
            let mut state = janitor.lock();
            state.refill = true;
            state.ready.pop()
        };
        janitor.wake.notify_one();
        if let Some(root) = ready.filter(|root| root.join("tmp").is_dir()) {
            return Ok(CallDir { root });
        }
        let parent = process_dir()?;
        Ok(CallDir {
            root: make_call_dir(&parent)?,
        })
    }

    /// A name for a call directory in this process's directory, not made yet: a sandboxed
    /// call's directory is made by the launcher where the program sees it (in the call's own
    /// tmpfs when the call has a view of its own, which covers this path, so a directory here
    /// would never be used), or here by [`CallDir::make`] where it is needed.
    pub fn reserve() -> Result<Self> {
        let parent = process_dir()?;
        Ok(CallDir {
            root: parent.join(call_dir_name()),
        })
    }

    /// Makes a reserved directory (with `home/` and `tmp/`) here, mode 0700.
    pub fn make(&self) -> Result<()> {
        make_dirs(&self.root)
    }

    /// The directory itself (the sandbox makes it writable).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of this process that holds every call directory (see [`temp_root`]);
    /// the launcher server removes it when toolgate is killed.
    pub fn process_dir(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
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
    /// Renames the directory out of the way (within its parent, so no permission inside it
    /// matters) and leaves the deleting to the background thread; removes it here when it
    /// cannot be renamed.
    fn drop(&mut self) {
        let name = self
            .root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
        let gone = name.map(|name| self.root.with_file_name(format!("{GONE_PREFIX}{name}")));
        let Some(gone) = gone else {
            return remove_tree(&self.root);
        };
        match std::fs::rename(&self.root, &gone) {
            Ok(()) => {
                let janitor = janitor();
                janitor.lock().gone.push(gone);
                janitor.wake.notify_one();
            }
            // A reserved directory that was never made here.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => remove_tree(&self.root),
        }
    }
}

/// The name of a call directory: unpredictable, so nobody can make it first.
fn call_dir_name() -> String {
    format!("toolgate-call-{:016x}", random_u64())
}

/// Makes `<parent>/toolgate-call-<random>/{home,tmp}`.
fn make_call_dir(parent: &Path) -> Result<PathBuf> {
    for _ in 0..8 {
        let root = parent.join(call_dir_name());
        match make_dirs(&root) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {
                continue
            }
            made => return made.map(|()| root),
        }
    }
    Err(Error::Io {
        action: "creating a private HOME/TMPDIR under",
        path: parent.to_path_buf(),
        source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
    })
}

/// Makes `root` and its `home/` and `tmp/`, mode 0700 (`root` must not exist yet).
fn make_dirs(root: &Path) -> Result<()> {
    rustix::fs::mkdir(root, Mode::RWXU)
        .map_err(|err| Error::io("creating a private HOME/TMPDIR at", root, err.into()))?;
    for sub in ["home", "tmp"] {
        let path = root.join(sub);
        if let Err(err) = rustix::fs::mkdir(&path, Mode::RWXU) {
            remove_tree(root);
            return Err(Error::io(
                "creating the private directory",
                path,
                err.into(),
            ));
        }
    }
    Ok(())
}

/// This process's directory for call directories, made on first use (and again if something
/// removed it).
fn process_dir() -> Result<PathBuf> {
    let janitor = janitor();
    let mut state = janitor.lock();
    if let Some(dir) = &state.process_dir {
        if dir.is_dir() {
            return Ok(dir.clone());
        }
        state.ready.clear();
    }
    let base = temp_root();
    for _ in 0..8 {
        let dir = base.join(format!("toolgate-{:016x}", random_u64()));
        match rustix::fs::mkdir(&dir, Mode::RWXU) {
            Ok(()) => {
                if !state.exit_hook {
                    // SAFETY: registering a plain extern "C" function without arguments.
                    state.exit_hook = unsafe { libc::atexit(remove_at_exit) } == 0;
                }
                state.process_dir = Some(dir.clone());
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

/// At a normal exit: nothing of this process's call directories stays behind.
extern "C" fn remove_at_exit() {
    let Some(janitor) = JANITOR.get() else { return };
    let dir = {
        let mut state = janitor.lock();
        state.closed = true;
        state.ready.clear();
        state.gone.clear();
        state.process_dir.take()
    };
    if let Some(dir) = dir {
        remove_tree(&dir);
    }
}

/// The background thread's work list.
struct Janitor {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    process_dir: Option<PathBuf>,
    /// Fresh call directories.
    ready: Vec<PathBuf>,
    /// Renamed call directories to delete.
    gone: Vec<PathBuf>,
    /// Whether to make more ready directories (off after a failure, until the next call).
    refill: bool,
    thread: bool,
    exit_hook: bool,
    /// The process is exiting: no more work.
    closed: bool,
}

static JANITOR: OnceLock<Janitor> = OnceLock::new();

fn janitor() -> &'static Janitor {
    let this = JANITOR.get_or_init(|| Janitor {
        state: Mutex::new(State::default()),
        wake: Condvar::new(),
    });
    let mut state = this.lock();
    if !state.thread {
        state.thread = std::thread::Builder::new()
            .name("toolgate-call-dirs".into())
            .spawn(|| janitor().work())
            .is_ok();
    }
    drop(state);
    this
}

impl Janitor {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refills the ready directories first (the next call waits for one), then deletes.
    fn work(&self) {
        loop {
            let job = {
                let mut state = self.lock();
                loop {
                    if state.closed {
                        return;
                    }
                    if state.refill && state.ready.len() < READY && state.process_dir.is_some() {
                        break Job::Make(state.process_dir.clone().expect("checked"));
                    }
                    if let Some(gone) = state.gone.pop() {
                        break Job::Remove(gone);
                    }
                    state = self
                        .wake
                        .wait(state)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            };
            match job {
                Job::Make(parent) => {
                    let made = make_call_dir(&parent);
                    let mut state = self.lock();
                    match made {
                        Ok(root)
                            if !state.closed && state.process_dir.as_ref() == Some(&parent) =>
                        {
                            state.ready.push(root);
                        }
                        Ok(root) => {
                            drop(state);
                            remove_tree(&root);
                        }
                        // The call that needs one makes it and reports the error.
                        Err(_) => state.refill = false,
                    }
                }
                Job::Remove(gone) => remove_tree(&gone),
            }
        }
    }
}

enum Job {
    Make(PathBuf),
    Remove(PathBuf),
}

/// The smallest tmpfs that may hold call directories in place of `/tmp` on a disk.
const MIN_TMPFS_BYTES: u64 = 1 << 30;

/// Where call directories go, decided once (symlinks followed, so the paths a program sees are
/// the real ones): `$TMPDIR` when set; else `/tmp` when it is a tmpfs; else `/dev/shm` when it
/// is a tmpfs of at least 1 GiB that allows executing (programs run what they build in their
/// `TMPDIR`); else `/tmp`. On a disk, making and removing directories costs milliseconds of
/// CPU per call on some file systems (ext4 mounted with `discard`); on a tmpfs, microseconds.
pub(crate) fn temp_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::var_os("TMPDIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let tmp = PathBuf::from("/tmp");
                let shm = PathBuf::from("/dev/shm");
                if !is_tmpfs(&tmp, 0) && is_tmpfs(&shm, MIN_TMPFS_BYTES) {
                    shm
                } else {
                    tmp
                }
            });
        std::fs::canonicalize(&dir).unwrap_or(dir)
    })
}

/// Whether `dir` is a writable tmpfs of at least `min_bytes` that allows executing.
fn is_tmpfs(dir: &Path, min_bytes: u64) -> bool {
    const TMPFS_MAGIC: rustix::fs::FsWord = 0x0102_1994;
    let Ok(fs) = rustix::fs::statfs(dir) else {
        return false;
    };
    let Ok(vfs) = rustix::fs::statvfs(dir) else {
        return false;
    };
    let size = vfs.f_blocks.saturating_mul(vfs.f_frsize);
    fs.f_type == TMPFS_MAGIC
        && size >= min_bytes
        && !vfs.f_flag.intersects(
            rustix::fs::StatVfsMountFlags::NOEXEC | rustix::fs::StatVfsMountFlags::RDONLY,
        )
        && rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
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
        // Deleted in the background, through the directory made unreadable.
        let gone = root.with_file_name(format!(
            "{GONE_PREFIX}{}",
            root.file_name().unwrap().to_string_lossy()
        ));
        assert!(
            eventually(|| !gone.exists()),
            "{} was never deleted",
            gone.display()
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }

    fn eventually(check: impl Fn() -> bool) -> bool {
        (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            check()
        })
    }

    #[test]
    fn directories_made_ahead_are_fresh_private_and_in_the_process_directory() {
        let parent = process_dir().unwrap();
        assert!(parent.starts_with(temp_root()));
        let mode = std::fs::metadata(&parent).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "no other user may enter or list it");
        let mut seen = std::collections::HashSet::new();
        for round in 0..20 {
            let dir = CallDir::create().unwrap();
            assert_eq!(dir.root().parent(), Some(parent.as_path()));
            assert!(seen.insert(dir.root().to_path_buf()), "handed out twice");
            for sub in ["home", "tmp"] {
                let path = dir.root().join(sub);
                let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700);
                assert_eq!(
                    std::fs::read_dir(&path).unwrap().count(),
                    0,
                    "round {round}"
                );
            }
            std::fs::write(dir.home().join("left"), "x").unwrap();
            if round % 5 == 0 {
                // Give the background thread time to make some ahead.
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
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
