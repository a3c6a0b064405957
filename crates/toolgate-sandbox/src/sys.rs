//! The system calls the view and the namespaces are built with, as thin wrappers: the new
//! mount API (`open_tree`, `move_mount`, `fsopen`/`fsconfig`/`fsmount`, `mount_setattr`,
//! Linux 5.2 and 5.12), `pivot_root`, `setns` and `unshare`. Each returns the OS error.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// `MOUNT_ATTR_*` (linux/mount.h).
pub(crate) const ATTR_RDONLY: u64 = 0x1;
pub(crate) const ATTR_NOSUID: u64 = 0x2;
pub(crate) const ATTR_NODEV: u64 = 0x4;
pub(crate) const ATTR_NOEXEC: u64 = 0x8;

fn last<T>() -> io::Result<T> {
    Err(io::Error::last_os_error())
}

fn fd_from(ret: libc::c_long) -> io::Result<OwnedFd> {
    if ret < 0 {
        return last();
    }
    // SAFETY: the kernel returned a new descriptor that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as libc::c_int) })
}

fn unit(ret: libc::c_long) -> io::Result<()> {
    if ret < 0 {
        return last();
    }
    Ok(())
}

/// A path as a C string (paths never hold NUL: they come from C strings or the kernel).
pub(crate) fn c_path(path: &OsStr) -> io::Result<CString> {
    CString::new(path.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// A detached copy of the mount tree at `path` (its submounts included), close-on-exec.
/// Symlinks in `path` are not followed at its end.
pub(crate) fn clone_tree(path: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::OPEN_TREE_CLONE
        | libc::OPEN_TREE_CLOEXEC
        | libc::AT_RECURSIVE as libc::c_uint
        | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint;
    // SAFETY: open_tree reads the NUL-terminated path and returns a new fd or -1.
    fd_from(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) })
}

/// Sets `attrs` (never clears one) on the mount `fd` is the root of, and on every mount
/// below it when `recursive`.
pub(crate) fn set_attrs(fd: BorrowedFd<'_>, attrs: u64, recursive: bool) -> io::Result<()> {
    let attr = libc::mount_attr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = libc::AT_EMPTY_PATH | if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: mount_setattr reads `attr` (of the size passed) and the empty path.
    unit(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    })
}

/// Attaches the detached mount `fd` at `to` (relative to `dir`).
pub(crate) fn attach(fd: BorrowedFd<'_>, dir: BorrowedFd<'_>, to: &CStr) -> io::Result<()> {
    // SAFETY: move_mount reads the two NUL-terminated paths.
    unit(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd.as_raw_fd(),
            c"".as_ptr(),
            dir.as_raw_fd(),
            to.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        )
    })
}

/// Attaches the detached mount `fd` at the absolute or cwd-relative `to`.
pub(crate) fn attach_at(fd: BorrowedFd<'_>, to: &CStr) -> io::Result<()> {
    // SAFETY: move_mount reads the two NUL-terminated paths.
    unit(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        )
    })
}

/// A new, detached file system `name` with the string `options`, mounted with `attrs`.
pub(crate) fn new_mount(
    name: &CStr,
    options: &[(&CStr, &CStr)],
    attrs: u64,
) -> io::Result<OwnedFd> {
    // SAFETY: fsopen reads the NUL-terminated name and returns a new fd or -1.
    let context =
        fd_from(unsafe { libc::syscall(libc::SYS_fsopen, name.as_ptr(), libc::FSOPEN_CLOEXEC) })?;
    for (key, value) in options {
        // SAFETY: fsconfig reads the two NUL-terminated strings.
        unit(unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                context.as_raw_fd(),
                libc::FSCONFIG_SET_STRING,
                key.as_ptr(),
                value.as_ptr(),
                0,
            )
        })?;
    }
    // SAFETY: fsconfig with CMD_CREATE takes no pointers.
    unit(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            libc::FSCONFIG_CMD_CREATE,
            0usize,
            0usize,
            0,
        )
    })?;
    // SAFETY: fsmount takes integers and returns a new fd or -1.
    fd_from(unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            context.as_raw_fd(),
            libc::FSMOUNT_CLOEXEC,
            attrs,
        )
    })
}

/// `pivot_root(".", ".")`: the current directory becomes the root; the old root is stacked
/// on it (detach it with `umount2(".", MNT_DETACH)` from inside it).
pub(crate) fn pivot_here() -> io::Result<()> {
    // SAFETY: pivot_root reads two NUL-terminated paths.
    unit(unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) })
}

/// Lazily unmounts the mount `path` is on.
pub(crate) fn detach(path: &CStr) -> io::Result<()> {
    // SAFETY: umount2 reads the NUL-terminated path.
    unit(unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) }.into())
}

/// Makes every mount of this namespace private (nothing propagates in or out).
pub(crate) fn make_private() -> io::Result<()> {
    // SAFETY: mount with null source, type and data changes the propagation of "/" and below.
    unit(
        unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_PRIVATE | libc::MS_REC,
                std::ptr::null(),
            )
        }
        .into(),
    )
}

/// Enters the namespace `fd` refers to (`kind`: a `CLONE_NEW*` flag).
pub(crate) fn enter(fd: BorrowedFd<'_>, kind: libc::c_int) -> io::Result<()> {
    // SAFETY: setns takes an fd and a flag.
    unit(unsafe { libc::setns(fd.as_raw_fd(), kind) }.into())
}

/// Leaves the namespaces of `flags` for new ones.
pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes integer flags.
    unit(unsafe { libc::unshare(flags) }.into())
}

/// Opens this process's namespace of `kind` (`mnt`, `net`), close-on-exec.
pub(crate) fn own_namespace(kind: &CStr) -> io::Result<OwnedFd> {
    let mut path = b"/proc/self/ns/".to_vec();
    path.extend_from_slice(kind.to_bytes_with_nul());
    // SAFETY: `path` is NUL-terminated; open returns a new fd or -1.
    fd_from(unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) }.into())
}

/// `fd`'s file type bits (`S_IFDIR`, …), without following a symlink it is.
pub(crate) fn file_type_at(dir: libc::c_int, path: &CStr) -> io::Result<libc::mode_t> {
    // SAFETY: fstatat writes into the zeroed stat we own and reads the NUL-terminated path.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstatat(dir, path.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW) != 0 {
            return last();
        }
        Ok(stat.st_mode & libc::S_IFMT)
    }
}

/// Free blocks of the file system `fd` is on (`None` when it cannot be asked).
pub(crate) fn free_blocks(fd: BorrowedFd<'_>) -> Option<u64> {
    // SAFETY: fstatfs writes into the zeroed statfs we own.
    unsafe {
        let mut stat: libc::statfs = std::mem::zeroed();
        (libc::fstatfs(fd.as_raw_fd(), &mut stat) == 0).then_some(stat.f_bavail as u64)
    }
}

/// A `pollfd` waiting for `fd` to be readable.
pub(crate) fn poll_in(fd: BorrowedFd<'_>) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

/// `CLOSE_RANGE_CLOEXEC` (linux/close_range.h, Linux 5.11; not in every libc's headers).
const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;

/// Marks every descriptor from `first` up close-on-exec. A process toolgate starts inherits
/// whatever toolgate's own process holds without the flag (from its parent: a shell's fd 255, a
/// terminal, a socket, a file), and a descriptor that reached the program would take it past the
/// view, Landlock and the network policy: only the program's standard streams go to it.
pub(crate) fn cloexec_from(first: libc::c_uint) {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC sets a flag on descriptors and touches no
    // memory.
    let done = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    } == 0;
    if done {
        return;
    }
    // Before Linux 5.11: each open descriptor.
    for fd in open_fds() {
        if fd >= first as libc::c_int {
            // SAFETY: fcntl on a descriptor number; one that closed meanwhile gives EBADF.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }
}

/// The descriptors open in this process (listed before they are used: the listing holds one
/// itself while it runs).
pub(crate) fn open_fds() -> Vec<libc::c_int> {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The type of `setrlimit`'s resource argument: glibc declares an enum type, musl an `int`.
#[cfg(target_env = "gnu")]
pub(crate) type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
pub(crate) type Resource = libc::c_int;
