//! What this kernel lets the launcher build, found out by trying it in a child process (a
//! kernel or a security module may allow a namespace and then refuse what is done in it:
//! Ubuntu's AppArmor default gives an unprivileged user namespace no capabilities).

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::view::{self, Access, ViewSpec};

/// The namespaces and mounts a call can get here.
#[derive(Debug, Clone)]
pub(crate) struct Features {
    /// A view can be built (`Err`: why not).
    pub view: Result<(), String>,
    /// A new `/proc` can be mounted for a call's PID namespace (else the host's is bound).
    pub fresh_proc: bool,
    pub network_namespace: bool,
    pub ipc_namespace: bool,
}

impl Features {
    /// Nothing: where namespaces cannot be made at all.
    pub fn none(why: &str) -> Self {
        Self {
            view: Err(why.to_string()),
            fresh_proc: false,
            network_namespace: false,
            ipc_namespace: false,
        }
    }
}

const FRESH_PROC: u8 = 1;
const NETWORK: u8 = 2;
const IPC: u8 = 4;
const VIEW: u8 = 8;

/// Tries each feature in a child in a new PID namespace, from this process's namespaces (the
/// server's: its user namespace and its own mount namespace).
pub(crate) fn probe() -> Features {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new fds into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Features::none("a pipe could not be made");
    }
    // SAFETY: both fds are new and ours.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: a fork-like clone into a new PID namespace from a single-threaded process; the
    // child only makes system calls and exits.
    let child = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::CLONE_NEWPID | libc::SIGCHLD,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    } as libc::pid_t;
    if child == 0 {
        drop(read);
        let report = try_all();
        // SAFETY: write of the bytes we own to our pipe end; then _exit.
        unsafe {
            libc::write(write.as_raw_fd(), report.as_ptr().cast(), report.len());
            libc::_exit(0);
        }
    }
    drop(write);
    if child < 0 {
        return Features::none(&format!(
            "a PID namespace cannot be made: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut report = Vec::new();
    let _ = std::fs::File::from(read).read_to_end(&mut report);
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
    let Some((&bits, message)) = report.split_first() else {
        return Features::none("the probe ended without an answer");
    };
    Features {
        view: if bits & VIEW != 0 {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(message).into_owned())
        },
        fresh_proc: bits & FRESH_PROC != 0,
        network_namespace: bits & NETWORK != 0,
        ipc_namespace: bits & IPC != 0,
    }
}

/// In the probe's child: the bits of what worked, then why the view did not.
fn try_all() -> Vec<u8> {
    let mut bits = 0;
    if view::fresh_proc_possible() {
        bits |= FRESH_PROC;
    }
    // SAFETY: unshare takes flags; this process exits right after.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) == 0 {
            bits |= NETWORK;
        }
        if libc::unshare(libc::CLONE_NEWIPC) == 0 {
            bits |= IPC;
        }
    }
    let message = match crate::sys::unshare(libc::CLONE_NEWNS) {
        Err(err) => format!("a mount namespace cannot be made: {err}"),
        Ok(()) => {
            let spec = ViewSpec {
                entries: vec![("/dev/null".into(), Access::Device)],
                private_dir: None,
                host_proc: false,
            };
            match view::build(&spec, &[]) {
                Ok(()) => {
                    bits |= VIEW;
                    String::new()
                }
                Err(err) => err.message,
            }
        }
    };
    let mut report = vec![bits];
    report.extend_from_slice(message.as_bytes());
    report
}
