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
//! For a process killed otherwise, its directory holds `owner.lock`, on which the process
//! keeps an exclusive `flock` for its life: the next toolgate process (of the same user) finds
//! the lock free and removes the directory, in the background.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
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
/// The prefix of a process's directory in the temp directory.
const PROCESS_DIR_PREFIX: &str = "toolgate-";
/// The file in a process's directory that the process keeps locked while it lives.
const OWNER_LOCK: &str = "owner.lock";

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
        let dir = base.join(format!("{PROCESS_DIR_PREFIX}{:016x}", random_u64()));
        match rustix::fs::mkdir(&dir, Mode::RWXU) {
            Ok(()) => {
                if !state.exit_hook {
                    // SAFETY: registering a plain extern "C" function without arguments.
                    state.exit_hook = unsafe { libc::atexit(remove_at_exit) } == 0;
                }
                // Without the lock the directory is only never swept by another process.
                state.owner_lock = lock_owner(&dir).ok();
                state.process_dir = Some(dir.clone());
                janitor.wake.notify_one();
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

/// Makes `dir/owner.lock`, locked by this process for its life. The lock is taken before the
/// file gets its name, so that no other process ever sees the name unlocked while this one
/// lives.
fn lock_owner(dir: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::{flock, open, rename, FlockOperation, OFlags};
    let unnamed = dir.join(format!("{OWNER_LOCK}.new"));
    let file = open(
        &unnamed,
        OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::RUSR | Mode::WUSR,
    )?;
    flock(&file, FlockOperation::LockExclusive)?;
    rename(&unnamed, dir.join(OWNER_LOCK))?;
    Ok(file)
}

/// The directories in `base` of this user's toolgate processes that have ended (their
/// `owner.lock` can be locked), other than `own`. A directory without the lock file is left
/// alone: its process may be making it.
fn dead_process_dirs(base: &Path, own: &Path) -> Vec<PathBuf> {
    use rustix::fs::{flock, open, FlockOperation, OFlags};
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    let mut dead = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_process_dir = name.to_str().is_some_and(|name| {
            name.strip_prefix(PROCESS_DIR_PREFIX).is_some_and(|hex| {
                hex.len() == 16 && hex.bytes().all(|byte| byte.is_ascii_hexdigit())
            })
        });
        let path = entry.path();
        if !is_process_dir || path == own {
            continue;
        }
        // A directory of this user itself, not a symlink to one.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != user {
            continue;
        }
        let Ok(lock) = open(
            path.join(OWNER_LOCK),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
            Mode::empty(),
        ) else {
            continue;
        };
        if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok() {
            dead.push(path);
        }
    }
    dead
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
    /// The lock on this process's directory's `owner.lock`, held for the process's life.
    owner_lock: Option<OwnedFd>,
    /// Whether the directories of ended processes have been looked for.
    swept: bool,
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
                    if let (false, Some(own)) = (state.swept, state.process_dir.clone()) {
                        state.swept = true;
                        break Job::Sweep(own);
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
                Job::Sweep(own) => {
                    let base = own.parent().unwrap_or(&own);
                    for dead in dead_process_dirs(base, &own) {
                        remove_tree(&dead);
                    }
                }
            }
        }
    }
}

enum Job {
    Make(PathBuf),
    Remove(PathBuf),
    /// Removes the directories of ended toolgate processes beside this one's.
    Sweep(PathBuf),
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

    #[test]
    fn the_directories_of_ended_processes_are_found_by_their_free_lock() {
        let base = tempfile::tempdir().unwrap();
        let dir = |hex: &str| {
            let dir = base.path().join(format!("{PROCESS_DIR_PREFIX}{hex}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::create_dir(dir.join("toolgate-call-0")).unwrap();
            dir
        };
        let own = dir("0000000000000001");
        let _own_lock = lock_owner(&own).unwrap();
        // Another live process holds its lock (flock(1) keeps it while its `sleep` runs; `-o`:
        // the lock is flock's alone, so it ends with flock).
        let alive = dir("0000000000000002");
        std::fs::write(alive.join(OWNER_LOCK), "").unwrap();
        let mut holder = std::process::Command::new("flock")
            .arg("-o")
            .arg(alive.join(OWNER_LOCK))
            .args(["sleep", "60"])
            .spawn()
            .unwrap();
        // Its lock is taken once flock(1) runs `sleep`.
        for _ in 0..500 {
            if dead_process_dirs(base.path(), &own).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Ended: a lock nobody holds, as a killed process leaves it.
        let ended = dir("0000000000000003");
        std::fs::write(ended.join(OWNER_LOCK), "").unwrap();
        // Left alone: no lock file (still being made), a symlink, another name.
        let making = dir("0000000000000004");
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join(OWNER_LOCK), "").unwrap();
        symlink(
            elsewhere.path(),
            base.path()
                .join(format!("{PROCESS_DIR_PREFIX}0000000000000005")),
        )
        .unwrap();
        let other_name = base.path().join("toolgate-call-0000000000000006");
        std::fs::create_dir(&other_name).unwrap();
        std::fs::write(other_name.join(OWNER_LOCK), "").unwrap();
        assert_eq!(dead_process_dirs(base.path(), &own), vec![ended.clone()]);
        let _ = (&making, &alive);
        holder.kill().unwrap();
        holder.wait().unwrap();
        let mut dead = dead_process_dirs(base.path(), &own);
        dead.sort();
        assert_eq!(dead, vec![alive, ended]);
    }

    #[test]
    fn this_process_keeps_its_directory_locked() {
        let dir = CallDir::create().unwrap();
        let own = dir.process_dir().to_path_buf();
        let lock = own.join(OWNER_LOCK);
        assert!(lock.is_file());
        let status = std::process::Command::new("flock")
            .args(["--nonblock", "--conflict-exit-code", "7"])
            .arg(&lock)
            .arg("true")
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(7), "another process could lock it");
        assert!(
            !dead_process_dirs(own.parent().unwrap(), Path::new("/nonexistent")).contains(&own)
        );
    }
}
