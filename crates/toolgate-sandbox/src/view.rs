//! The view: the file system a sandboxed program sees, built in a mount namespace of its own
//! the way bubblewrap builds one, with no external program.
//!
//! A new, empty tmpfs becomes the root (`pivot_root`; the old root is detached, so no other
//! host path can be reached, stat'ed, read as a link or watched). Into it, each granted path is
//! bind-mounted at its own place, with its submounts (`open_tree` + `move_mount`):
//!
//! - read roots (the system runtime, the `/etc` entries, `read` roots, a read-only work
//!   directory): read-only, `nosuid`, `nodev`;
//! - the work directory and `write` roots: read-write, `nosuid`, `nodev`;
//! - device files (`/dev/null`, `/dev/zero`, …): read-only mounts of the host's nodes, `nosuid`,
//!   `noexec` (writing to a device is not a write to the file system);
//! - protected paths: read-only over themselves, wherever they are;
//! - hidden paths: an empty read-only node of the same type in their place;
//! - every directory between a writable root and a protected or hidden path inside it: bound
//!   read-write over itself, so that it cannot be renamed or removed (a mount point is busy),
//!   which would carry the protection away and let a new file take the protected name.
//!
//! The symlinks on the way to each path are recreated (`/bin -> usr/bin`,
//! `/etc/resolv.conf -> ../run/...`), so a program finds everything by the names it knows;
//! what a link leads to is mounted at its real place. `/proc` (the call's own, mounted per
//! call), `/dev/fd` and `/dev/std*` are added, and the mount point of the call's private
//! tmpfs. The root tmpfs is made read-only at the end.
//!
//! Read-only mounts refuse every change with `EROFS`: content, mode, owner, times, extended
//! attributes; a hard link or a rename across mounts is `EXDEV`, of a mount point `EBUSY`. That
//! is what Landlock cannot refuse (it does not govern metadata).

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::plan::Confinement;
use crate::sys;

/// How many symlinks a name may lead through (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// How a path appears in the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Access {
    /// Read and execute.
    Read,
    /// A device node (read, write, ioctl; the mount is read-only).
    Device,
    /// Read and write.
    Write,
    /// Read-only over itself, also inside a writable root.
    Protect,
    /// Replaced by an empty read-only node.
    Hide,
    /// A directory between a writable root and a protected path, bound over itself so that it
    /// stays where it is.
    Pin,
}

/// The paths of `rules` as the view holds them, with `extra_read` (the read roots of a call's
/// program) read-only as well.
pub(crate) fn entries_of(rules: &Confinement, extra_read: &[OsString]) -> Vec<(OsString, Access)> {
    let mut entries = Vec::new();
    for (paths, access) in [
        (&rules.read[..], Access::Read),
        (extra_read, Access::Read),
        (&rules.write[..], Access::Write),
        (&rules.devices[..], Access::Device),
        (&rules.protect[..], Access::Protect),
        (&rules.hide[..], Access::Hide),
    ] {
        entries.extend(paths.iter().map(|path| (path.clone(), access)));
    }
    entries
}

/// What a view holds.
#[derive(Debug, Default, Clone)]
pub(crate) struct ViewSpec {
    /// Absolute names (symlinks followed when the view is built) and how each appears.
    pub entries: Vec<(OsString, Access)>,
    /// Where each call's private tmpfs is mounted (the directory holding call directories).
    pub private_dir: Option<OsString>,
    /// Mount the host's `/proc` into the view (where a new one cannot be mounted, see
    /// [`fresh_proc_possible`]); else `/proc` is a mount point for the call's own.
    pub host_proc: bool,
}

/// One planned mount.
struct Planned {
    access: Access,
    directory: bool,
}

/// Why a view was not built.
#[derive(Debug)]
pub(crate) struct ViewError {
    pub message: String,
    /// The kernel refused the mount API itself (`ENOSYS`: a kernel before 5.2/5.12, or
    /// qemu-user, which does not implement `open_tree`; `EPERM`: no capabilities, a seccomp
    /// profile) before anything was mounted: this process's mount tree is still the one it
    /// had, so the call may go on without a view.
    pub unavailable: bool,
}

impl ViewError {
    /// `what` failed with `err`; `before_mounting`: nothing was mounted yet.
    pub(crate) fn of(what: String, err: &io::Error, before_mounting: bool) -> Self {
        Self {
            message: format!("{what}: {err}"),
            unavailable: before_mounting && mount_api_refused(err),
        }
    }
}

impl From<String> for ViewError {
    fn from(message: String) -> Self {
        Self {
            message,
            unavailable: false,
        }
    }
}

impl From<ViewError> for String {
    fn from(err: ViewError) -> Self {
        err.message
    }
}

/// Whether `err` says the mount API is missing or not allowed here (rather than that one
/// path could not be mounted).
pub(crate) fn mount_api_refused(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EPERM))
}

/// Builds the view in this process's mount namespace, which must be its own (made with
/// `unshare(CLONE_NEWNS)` by a process with capabilities in the namespace's user namespace):
/// afterwards its root is the view. `extra` are detached mounts to attach at the end (a
/// call's `/proc` and private tmpfs, in the one-shot launcher). An error says whether the
/// mount tree is still untouched ([`ViewError::unavailable`]).
pub(crate) fn build(spec: &ViewSpec, extra: &[(OwnedFd, &OsStr)]) -> Result<(), ViewError> {
    sys::make_private()
        .map_err(|err| ViewError::of("making the mounts private".into(), &err, true))?;
    // Where processes may write, as it is now: a symlink in there is not followed for any
    // grant, since a sandboxed process may have pointed it anywhere since toolgate looked.
    let mut writable = Vec::new();
    for (name, access) in &spec.entries {
        if *access == Access::Write {
            writable.extend(resolve(Path::new(name), &mut BTreeMap::new(), &[])?);
        }
    }
    let mut links = BTreeMap::new();
    let mut planned: BTreeMap<PathBuf, Planned> = BTreeMap::new();
    for (name, access) in &spec.entries {
        if *access != Access::Device && Path::new(name) == Path::new("/proc") {
            continue; // the call's own /proc, below
        }
        let Some(real) = resolve(Path::new(name), &mut links, &writable)? else {
            continue; // does not exist, or only by a symlink a process can change: not granted
        };
        if real == Path::new("/") {
            return Err(format!(
                "'{}' is the root directory, which cannot be a root of the sandbox's view; give a subdirectory",
                Path::new(name).display()
            )
            .into());
        }
        let directory = is_directory(&real);
        let entry = planned.entry(real).or_insert(Planned {
            access: *access,
            directory,
        });
        entry.access = entry.access.max(*access);
    }
    if spec.host_proc {
        planned.insert(
            PathBuf::from("/proc"),
            Planned {
                access: Access::Read,
                directory: true,
            },
        );
    }
    let planned = with_pins(drop_covered(planned));
    // Every source is taken while the host's tree is still here.
    let mut sources = Vec::with_capacity(planned.len());
    for (path, plan) in &planned {
        let source = match plan.access {
            Access::Hide => None,
            access => Some(tree(path, access)?),
        };
        sources.push(source);
    }
    let private_dir = match &spec.private_dir {
        Some(dir) => Some(resolve(Path::new(dir), &mut links, &[])?.ok_or_else(|| {
            format!(
                "the private directory '{}' does not exist",
                Path::new(dir).display()
            )
        })?),
        None => None,
    };
    // The call's tmpfs would cover what is below it.
    if let Some(dir) = &private_dir {
        if let Some(covered) = planned
            .keys()
            .chain(links.keys())
            .find(|path| path.starts_with(dir))
        {
            return Err(format!(
                "the private directory '{}' holds '{}', which its tmpfs would cover; give the call a directory of its own",
                dir.display(),
                covered.display()
            )
            .into());
        }
    }

    let root = sys::new_mount(c"tmpfs", &[(c"mode", c"0755"), (c"size", c"1m")], 0)
        .map_err(|err| ViewError::of("mounting the view's root".into(), &err, true))?;
    // From here on this process's mount tree changes: no failure leaves it as it was.
    sys::attach_at(root.as_fd(), c"/")
        .map_err(|err| format!("attaching the view's root: {err}"))?;
    // SAFETY: fchdir to the fd of the new root, which we hold.
    if unsafe { libc::fchdir(std::os::fd::AsRawFd::as_raw_fd(&root)) } != 0 {
        return Err(format!("entering the view's root: {}", io::Error::last_os_error()).into());
    }
    let mounted: Vec<&Path> = planned.keys().map(PathBuf::as_path).collect();
    let inside_mount = |path: &Path| mounted.iter().any(|m| path != *m && path.starts_with(m));
    for (link, target) in &links {
        if !inside_mount(link) {
            make_parents(link)?;
            std::os::unix::fs::symlink(target, relative(link))
                .map_err(|err| format!("recreating the symlink '{}': {err}", link.display()))?;
        }
    }
    for (index, ((path, plan), source)) in planned.iter().zip(sources).enumerate() {
        if !inside_mount(path) {
            make_node(path, plan.directory)?;
        }
        let target = c_relative(path)?;
        match source {
            Some(tree) => sys::attach(tree.as_fd(), cwd(), &target),
            None => hide(index, &target, plan.directory),
        }
        .map_err(|err| format!("mounting '{}' in the view: {err}", path.display()))?;
    }
    if !spec.host_proc {
        make_node(Path::new("/proc"), true)?;
    }
    if let Some(dir) = &private_dir {
        if !inside_mount(dir) {
            make_node(dir, true)?;
        }
    }
    make_node(Path::new("/dev"), true)?;
    for (link, target) in [
        ("dev/fd", "/proc/self/fd"),
        ("dev/stdin", "/proc/self/fd/0"),
        ("dev/stdout", "/proc/self/fd/1"),
        ("dev/stderr", "/proc/self/fd/2"),
    ] {
        match std::os::unix::fs::symlink(target, link) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(format!("making /{link}: {err}").into()),
        }
    }
    // Relative to the new root: absolute names still start from the old one until the pivot.
    for (fd, to) in extra {
        let target = c_relative(Path::new(to))?;
        sys::attach(fd.as_fd(), cwd(), &target)
            .map_err(|err| format!("mounting '{}' in the view: {err}", Path::new(to).display()))?;
    }
    pivot()?;
    sys::set_attrs(
        root.as_fd(),
        sys::ATTR_RDONLY | sys::ATTR_NOSUID | sys::ATTR_NODEV,
        false,
    )
    .map_err(|err| format!("making the view's root read-only: {err}"))?;
    Ok(())
}

/// Whether a new `/proc` can be mounted from this process (it cannot where the host's is
/// partly covered, as in most containers: the kernel then refuses to reveal what is hidden).
pub(crate) fn fresh_proc_possible() -> bool {
    new_proc().is_ok()
}

/// A new, detached `/proc` of this process's PID namespace.
pub(crate) fn new_proc() -> io::Result<OwnedFd> {
    sys::new_mount(
        c"proc",
        &[],
        sys::ATTR_NOSUID | sys::ATTR_NODEV | sys::ATTR_NOEXEC,
    )
}

/// Files of a `/proc` that tell about the host rather than the call, whatever its PID
/// namespace: the keys of every user the call's user namespace maps (`keys`, `key-users`: a
/// key's description says what it is for, `ssh:deploy@prod`), the timers and scheduler state
/// of the host's processes (`timer_list`, `sched_debug`), and the kernel's memory and its
/// helpers, readable by file mode to root alone — which the call's processes are (without a
/// capability) when toolgate runs as root: slab and vmalloc lists, page flags and counts,
/// `kcore`, the usermode helper's capability sets. Each is covered with the view's
/// `/dev/null`, read-only, as container runtimes mask them.
const MASKED_PROC_FILES: &[&std::ffi::CStr] = &[
    c"/proc/keys",
    c"/proc/key-users",
    c"/proc/timer_list",
    c"/proc/sched_debug",
    c"/proc/slabinfo",
    c"/proc/vmallocinfo",
    c"/proc/pagetypeinfo",
    c"/proc/kpageflags",
    c"/proc/kpagecount",
    c"/proc/kpagecgroup",
    c"/proc/kcore",
    c"/proc/sysrq-trigger",
    c"/proc/sys/kernel/usermodehelper/bset",
    c"/proc/sys/kernel/usermodehelper/inheritable",
];

/// Covers [`MASKED_PROC_FILES`] in the view's `/proc` (attached already) with `/dev/null`.
/// `fresh`: the call's own `/proc`, where this always works (an error is the call's); on the
/// host's `/proc` bound into the view (a container that hides parts of it), a file the kernel
/// does not let be covered stays as it is.
pub(crate) fn mask_proc_files(fresh: bool) -> io::Result<()> {
    for path in MASKED_PROC_FILES {
        // A kernel built without one has nothing to show there.
        if std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path.to_bytes())).is_err() {
            continue;
        }
        let masked = sys::clone_tree(c"/dev/null").and_then(|null| {
            sys::set_attrs(
                null.as_fd(),
                sys::ATTR_RDONLY | sys::ATTR_NOSUID | sys::ATTR_NOEXEC,
                false,
            )?;
            sys::attach_at(null.as_fd(), path)
        });
        if fresh {
            masked?;
        }
    }
    Ok(())
}

/// A new, detached tmpfs of `megabytes` (0: the kernel's default, half the memory), mode
/// 0700, for a call's private directory.
pub(crate) fn new_private_tmpfs(megabytes: u64) -> io::Result<OwnedFd> {
    let size = CString::new(format!("{megabytes}m")).expect("digits");
    let mut options: Vec<(&std::ffi::CStr, &std::ffi::CStr)> = vec![(c"mode", c"0700")];
    if megabytes > 0 {
        options.push((c"size", &size));
    }
    sys::new_mount(c"tmpfs", &options, sys::ATTR_NOSUID | sys::ATTR_NODEV)
}

/// The real path `name` leads to, recording every symlink on the way (by its real place)
/// with its target; `None` when it does not exist, or leads through a symlink inside one of
/// `writable` (not followed).
fn resolve(
    name: &Path,
    links: &mut BTreeMap<PathBuf, PathBuf>,
    writable: &[PathBuf],
) -> Result<Option<PathBuf>, String> {
    if !name.is_absolute() {
        return Err(format!("'{}' is not an absolute path", name.display()));
    }
    let mut real = PathBuf::from("/");
    let mut rest: Vec<OsString> = components(name);
    rest.reverse();
    let mut hops = 0;
    while let Some(part) = rest.pop() {
        match part.as_bytes() {
            b"." => continue,
            b".." => {
                real.pop();
                continue;
            }
            _ => {}
        }
        let next = real.join(&part);
        let kind = match sys::c_path(next.as_os_str())
            .and_then(|path| sys::file_type_at(libc::AT_FDCWD, &path))
        {
            Ok(kind) => kind,
            Err(err) if matches!(err.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Ok(None)
            }
            Err(err) => return Err(format!("looking at '{}': {err}", next.display())),
        };
        if kind != libc::S_IFLNK {
            real = next;
            continue;
        }
        if writable
            .iter()
            .any(|root| next.starts_with(root) && next != *root)
        {
            return Ok(None);
        }
        hops += 1;
        if hops > MAX_LINKS {
            return Err(format!(
                "'{}' leads through too many symlinks",
                name.display()
            ));
        }
        let target = std::fs::read_link(&next)
            .map_err(|err| format!("reading the symlink '{}': {err}", next.display()))?;
        links.insert(next, target.clone());
        if target.is_absolute() {
            real = PathBuf::from("/");
        }
        let mut more = components(&target);
        more.reverse();
        rest.extend(more);
    }
    Ok(Some(real))
}

fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|part| match part {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

fn is_directory(path: &Path) -> bool {
    sys::c_path(path.as_os_str())
        .and_then(|path| sys::file_type_at(libc::AT_FDCWD, &path))
        .is_ok_and(|kind| kind == libc::S_IFDIR)
}

/// Leaves out what an enclosing mount shows already as it should be: a read root inside
/// another readable one, a writable root inside a writable one, a protected path inside a
/// read-only one, anything inside a hidden one. (Parents come first: paths sort by
/// component.)
fn drop_covered(planned: BTreeMap<PathBuf, Planned>) -> BTreeMap<PathBuf, Planned> {
    let mut kept: BTreeMap<PathBuf, Planned> = BTreeMap::new();
    for (path, plan) in planned {
        let enclosing = kept
            .iter()
            .filter(|(other, _)| path.starts_with(other))
            .max_by_key(|(other, _)| other.components().count())
            .map(|(_, other)| other.access);
        let covered = match (enclosing, plan.access) {
            (None, _) => false,
            (Some(Access::Hide), _) => true,
            (Some(_), Access::Hide) => false,
            (Some(Access::Read | Access::Protect), Access::Read | Access::Protect) => true,
            (Some(Access::Write), Access::Read | Access::Write) => true,
            _ => false,
        };
        if !covered {
            kept.insert(path, plan);
        }
    }
    kept
}

/// Adds a pin for every directory between a writable root and a protected or hidden path
/// inside it.
fn with_pins(mut planned: BTreeMap<PathBuf, Planned>) -> BTreeMap<PathBuf, Planned> {
    let guarded: Vec<PathBuf> = planned
        .iter()
        .filter(|(_, plan)| matches!(plan.access, Access::Protect | Access::Hide))
        .map(|(path, _)| path.clone())
        .collect();
    for path in guarded {
        let writable = planned
            .iter()
            .filter(|(other, plan)| {
                path.starts_with(other)
                    && **other != path
                    && matches!(plan.access, Access::Write | Access::Pin)
            })
            .max_by_key(|(other, _)| other.components().count())
            .map(|(other, _)| other.clone());
        let Some(writable) = writable else { continue };
        let mut dir = path.parent();
        while let Some(current) = dir {
            if current == writable || !current.starts_with(&writable) {
                break;
            }
            planned.entry(current.to_path_buf()).or_insert(Planned {
                access: Access::Pin,
                directory: true,
            });
            dir = current.parent();
        }
    }
    planned
}

/// A detached copy of `path`'s mount tree with the attributes of `access`.
/// (Before anything is mounted: an error may say the mount API is unavailable.)
fn tree(path: &Path, access: Access) -> Result<OwnedFd, ViewError> {
    let name = sys::c_path(path.as_os_str()).map_err(|err| err.to_string())?;
    let fd = sys::clone_tree(&name).map_err(|err| {
        ViewError::of(
            format!("taking '{}' into the view", path.display()),
            &err,
            true,
        )
    })?;
    let attrs = match access {
        Access::Read | Access::Protect => sys::ATTR_RDONLY | sys::ATTR_NOSUID | sys::ATTR_NODEV,
        Access::Write | Access::Pin => sys::ATTR_NOSUID | sys::ATTR_NODEV,
        Access::Device => sys::ATTR_RDONLY | sys::ATTR_NOSUID | sys::ATTR_NOEXEC,
        Access::Hide => unreachable!("a hidden path has no source"),
    };
    // mount_setattr came in 5.12, after open_tree (5.2).
    sys::set_attrs(fd.as_fd(), attrs, true).map_err(|err| {
        ViewError::of(
            format!("making '{}' {access:?} in the view", path.display()),
            &err,
            true,
        )
    })?;
    Ok(fd)
}

/// Mounts an empty read-only node of the right type at `target`: made in the root tmpfs under
/// a temporary name, bound, made read-only, and its name removed.
fn hide(index: usize, target: &CString, directory: bool) -> io::Result<()> {
    let name = CString::new(format!(".toolgate-empty-{index}")).expect("no NUL");
    // SAFETY: mkdir/open/close/unlink/rmdir/mount read the NUL-terminated names we own.
    unsafe {
        if directory {
            if libc::mkdir(name.as_ptr(), 0o555) != 0 {
                return Err(io::Error::last_os_error());
            }
        } else {
            let fd = libc::open(
                name.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                0o444,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::close(fd);
        }
        // The name goes once the node is mounted (an unlinked node cannot be mounted).
        let mounted = sys::clone_tree(&name).and_then(|tree| {
            sys::set_attrs(
                tree.as_fd(),
                sys::ATTR_RDONLY | sys::ATTR_NOSUID | sys::ATTR_NODEV | sys::ATTR_NOEXEC,
                true,
            )?;
            sys::attach(tree.as_fd(), cwd(), target)
        });
        if directory {
            libc::rmdir(name.as_ptr());
        } else {
            libc::unlink(name.as_ptr());
        }
        mounted
    }
}

/// Makes `path` (absolute, meaning below the current directory) in the root tmpfs: its
/// parents, then a directory or an empty file.
fn make_node(path: &Path, directory: bool) -> Result<(), String> {
    make_parents(path)?;
    let relative = relative(path);
    let made = if directory {
        std::fs::create_dir(&relative)
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&relative)
            .map(drop)
    };
    match made {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(format!("making '{}' in the view: {err}", path.display())),
    }
}

fn make_parents(path: &Path) -> Result<(), String> {
    match relative(path).parent() {
        Some(parent) if !parent.as_os_str().is_empty() => std::fs::create_dir_all(parent)
            .map_err(|err| format!("making '{}' in the view: {err}", parent.display())),
        _ => Ok(()),
    }
}

/// `path` below the current directory (the view's root while it is built).
fn relative(path: &Path) -> PathBuf {
    PathBuf::from(".").join(path.strip_prefix("/").unwrap_or(path))
}

fn c_relative(path: &Path) -> Result<CString, String> {
    sys::c_path(relative(path).as_os_str()).map_err(|err| err.to_string())
}

fn cwd() -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: AT_FDCWD is a constant the *at calls understand as the current directory; it is
    // never closed.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

/// Makes the current directory the root and detaches the old one.
fn pivot() -> Result<(), String> {
    // SAFETY: open of "/" returns a new fd or -1; it is closed below.
    let old = unsafe {
        libc::open(
            c"/".as_ptr(),
            libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if old < 0 {
        return Err(format!(
            "opening the old root: {}",
            io::Error::last_os_error()
        ));
    }
    let result = (|| {
        sys::pivot_here().map_err(|err| format!("pivot_root: {err}"))?;
        // SAFETY: fchdir to the old root we hold; then it is detached from the namespace.
        if unsafe { libc::fchdir(old) } != 0 {
            return Err(format!(
                "entering the old root: {}",
                io::Error::last_os_error()
            ));
        }
        sys::detach(c".").map_err(|err| format!("detaching the old root: {err}"))?;
        // SAFETY: chdir reads the NUL-terminated path.
        if unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
            return Err(format!("entering the view: {}", io::Error::last_os_error()));
        }
        Ok(())
    })();
    // SAFETY: closing the fd opened above.
    unsafe { libc::close(old) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(entries: &[(&str, Access)]) -> Vec<(String, Access)> {
        let planned = entries
            .iter()
            .map(|(path, access)| {
                (
                    PathBuf::from(path),
                    Planned {
                        access: *access,
                        directory: true,
                    },
                )
            })
            .collect();
        with_pins(drop_covered(planned))
            .into_iter()
            .map(|(path, plan)| (path.display().to_string(), plan.access))
            .collect()
    }

    #[test]
    fn covered_entries_are_left_out_and_protected_paths_pinned() {
        use Access::*;
        assert_eq!(
            plan(&[
                ("/usr", Read),
                ("/usr/bin", Read),
                ("/w", Write),
                ("/w/vendor", Read),
                ("/w/out", Write),
                ("/w/a/b/worker.yaml", Protect),
                ("/w/.env", Hide),
                ("/r", Read),
                ("/r/cache", Write),
                ("/r/x.yaml", Protect),
                ("/h", Hide),
                ("/h/inner", Write),
            ]),
            [
                ("/h".to_string(), Hide),
                ("/r".into(), Read),
                ("/r/cache".into(), Write),
                ("/usr".into(), Read),
                ("/w".into(), Write),
                ("/w/.env".into(), Hide),
                ("/w/a".into(), Pin),
                ("/w/a/b".into(), Pin),
                ("/w/a/b/worker.yaml".into(), Protect),
            ]
        );
    }

    #[test]
    fn names_resolve_through_symlinks_which_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::write(root.join("usr/bin/tool"), "").unwrap();
        std::os::unix::fs::symlink("usr/bin", root.join("bin")).unwrap();
        std::os::unix::fs::symlink(root.join("bin/tool"), root.join("abs")).unwrap();
        let mut links = BTreeMap::new();
        assert_eq!(
            resolve_free(&root.join("bin/tool"), &mut links).unwrap(),
            Some(root.join("usr/bin/tool"))
        );
        assert_eq!(
            links.get(&root.join("bin")),
            Some(&PathBuf::from("usr/bin"))
        );
        assert_eq!(
            resolve_free(&root.join("abs"), &mut links).unwrap(),
            Some(root.join("usr/bin/tool"))
        );
        assert!(links.contains_key(&root.join("abs")));
        assert_eq!(
            resolve_free(&root.join("missing/x"), &mut links).unwrap(),
            None
        );
        assert_eq!(
            resolve_free(&root.join("usr/../usr/bin"), &mut links).unwrap(),
            Some(root.join("usr/bin"))
        );
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(resolve_free(&root.join("loop"), &mut links).is_err());
        assert!(resolve_free(Path::new("relative"), &mut links).is_err());
        // Inside a writable root a symlink is not followed: the name is not granted. The root
        // itself may be reached through one.
        let writable = [root.join("usr")];
        std::fs::create_dir(root.join("etc")).unwrap();
        std::fs::write(root.join("etc/shadow"), "").unwrap();
        std::os::unix::fs::symlink(root.join("etc"), root.join("usr/bin/out")).unwrap();
        let name = root.join("usr/bin/out/shadow");
        assert_eq!(
            resolve_free(&name, &mut links).unwrap(),
            Some(root.join("etc/shadow"))
        );
        assert_eq!(resolve(&name, &mut links, &writable).unwrap(), None);
        assert_eq!(
            resolve(&root.join("bin/tool"), &mut links, &[root.join("usr/bin")]).unwrap(),
            Some(root.join("usr/bin/tool")),
            "through a symlink outside the writable root, to it"
        );
    }

    /// [`resolve`] with nothing writable.
    fn resolve_free(
        name: &Path,
        links: &mut BTreeMap<PathBuf, PathBuf>,
    ) -> Result<Option<PathBuf>, String> {
        resolve(name, links, &[])
    }
}
