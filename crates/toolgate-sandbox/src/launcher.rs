//! The launcher: the small program exec starts in place of a sandboxed program. It puts the
//! program's whole process tree into a PID namespace (or, where namespaces are not allowed,
//! becomes its subreaper), applies Landlock and seccomp to the program's process only, runs
//! the program, and ends with the program's own exit code or signal.
//!
//! Processes, where user namespaces are allowed (or the caller may create PID namespaces):
//!
//! ```text
//! toolgate ── launcher (outside, same process group) ── init (PID 1) ── program ── …
//! ```
//!
//! The init process only reaps: it keeps the program off PID 1, so the program has the normal
//! signal semantics (`kill -TERM $$` works), and when the program exits it exits too, which
//! makes the kernel kill everything left in the namespace (setsid daemons included) before the
//! launcher sees it go. It dies with the launcher (`PR_SET_PDEATHSIG`); the launcher is single
//! threaded, so "the parent thread" is the launcher itself. The launcher watches toolgate with a
//! pidfd rather than PDEATHSIG, which would fire when the toolgate *thread* that spawned it
//! ends (a runtime's idle worker), not when toolgate ends.
//!
//! Without namespaces the launcher is a child subreaper: when the program exits it kills every
//! process that was reparented to it until none is left.
//!
//! Signals: the launcher blocks all signals, so a TERM to the process group reaches the
//! program (and its group) once, while the launcher stays to report how the program ended.
//!
//! Exit codes of its own, each with a `toolgate-sandbox: ` line on stderr: 125 the sandbox
//! could not be set up (nothing ran), 126 the program could not be executed, 127 it was not
//! found.

use std::ffi::OsString;
use std::os::fd::AsFd;

use crate::confine::{fail, filters_of, ruleset_of, ChildStack, Program};
use crate::plan::{Confinement, Launch, Plan};
use crate::protocol::{ARG_PROBE, ARG_SERVE, EXIT_SETUP_FAILED};
use crate::tree::{block_signals, enter_user_namespace, kill_descendants, reap_until};

/// The launcher's `main`, given its arguments without the program name: returns only to
/// report a failure before anything ran (the caller exits with the returned code); on every
/// other path the process ends here.
pub fn launcher_main(args: Vec<OsString>) -> i32 {
    // Rust's runtime (when it ran) ignores SIGPIPE; the program must start with the default.
    // SAFETY: setting a signal disposition to default has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    match args.first().and_then(|arg| arg.to_str()) {
        Some(ARG_PROBE) => return probe(),
        Some(ARG_SERVE) => return crate::server::serve(args.into_iter().skip(1)),
        _ => {}
    }
    match Plan::parse(args, true) {
        Ok(Plan {
            parent,
            confinement,
            launch: Some(launch),
            ..
        }) => run(parent, &confinement, &launch),
        Ok(_) => fail(EXIT_SETUP_FAILED, "no program given"),
        Err(message) => fail(EXIT_SETUP_FAILED, &message),
    }
}

/// How the process tree is contained.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Containment {
    PidNamespace,
    Subreaper,
}

fn run(parent: Option<libc::pid_t>, rules: &Confinement, launch: &Launch) -> i32 {
    let original_mask = block_signals();
    let parent = match parent.map(watch_parent).transpose() {
        Ok(parent) => parent,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let ruleset = match ruleset_of(rules) {
        Ok(ruleset) => ruleset,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let filters = match filters_of(rules) {
        Ok(filters) => filters,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let program = Program {
        ruleset: ruleset.as_ref().map(AsFd::as_fd),
        seccomp: &filters,
        best_effort: rules.best_effort,
        launch,
        mask: &original_mask,
        stdio: None,
        files: None,
    };
    match contain() {
        Containment::PidNamespace => run_in_namespace(&program, parent),
        Containment::Subreaper => run_as_subreaper(&program, parent),
    }
}

/// A pidfd for toolgate, checked to really be our parent (it may have died before we looked).
fn watch_parent(pid: libc::pid_t) -> Result<libc::c_int, String> {
    // SAFETY: pidfd_open takes a pid and flags; the result is a new fd (always close-on-exec)
    // or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    // SAFETY: getppid has no preconditions.
    if fd < 0 || unsafe { libc::getppid() } != pid {
        return Err(format!("toolgate (pid {pid}) is gone; nothing was run"));
    }
    Ok(fd)
}

/// Enters new user and PID namespaces, or only a PID namespace where that is allowed without a
/// user namespace, or else becomes a child subreaper.
fn contain() -> Containment {
    if enter_user_namespace(libc::CLONE_NEWPID) {
        return Containment::PidNamespace;
    }
    // SAFETY: unshare/prctl take plain integers.
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID) == 0 {
            return Containment::PidNamespace;
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    Containment::Subreaper
}

fn run_in_namespace(program: &Program, parent: Option<libc::c_int>) -> i32 {
    let mut status_pipe = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the array we own.
    if unsafe { libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return fail(
            EXIT_SETUP_FAILED,
            &format!("pipe: {}", std::io::Error::last_os_error()),
        );
    }
    let [status_read, status_write] = status_pipe;
    // SAFETY: the launcher is single threaded, so the child may run any code.
    let init = unsafe { libc::fork() };
    if init < 0 {
        return fail(
            EXIT_SETUP_FAILED,
            &format!("fork: {}", std::io::Error::last_os_error()),
        );
    }
    if init == 0 {
        // SAFETY: closing our copy of the read end.
        unsafe { libc::close(status_read) };
        init_main(program, status_write);
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(status_write) };
    let init_status = wait_for(init, parent);
    let mut reported = [0u8; 4];
    // SAFETY: read writes at most 4 bytes into `reported`.
    let got = unsafe { libc::read(status_read, reported.as_mut_ptr().cast(), reported.len()) };
    let status = if got == 4 {
        libc::c_int::from_ne_bytes(reported)
    } else {
        init_status
    };
    mirror(status)
}

/// PID 1 of the namespace: starts the program, reaps whatever is orphaned to it, and when the
/// program has exited reports its status and exits, which ends every other process in the
/// namespace.
fn init_main(program: &Program, status_write: libc::c_int) -> ! {
    // SAFETY: plain-integer system calls; `poll` reads and writes the one pollfd we own.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // The launcher may have died before PDEATHSIG was set: its end of the pipe is then closed.
        let mut watch = libc::pollfd {
            fd: status_write,
            events: 0,
            revents: 0,
        };
        if libc::poll(&mut watch, 1, 0) > 0 && watch.revents & libc::POLLERR != 0 {
            libc::_exit(EXIT_SETUP_FAILED);
        }
        let pid = match ChildStack::new().and_then(|stack| program.spawn(&stack)) {
            Ok(pid) => pid,
            Err(err) => {
                let _ = fail(EXIT_SETUP_FAILED, &format!("clone: {err}"));
                libc::_exit(EXIT_SETUP_FAILED);
            }
        };
        let Some(status) = reap_until(pid) else {
            libc::_exit(EXIT_SETUP_FAILED)
        };
        let bytes = status.to_ne_bytes();
        libc::write(status_write, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(0);
    }
}

fn run_as_subreaper(program: &Program, parent: Option<libc::c_int>) -> i32 {
    let pid = match ChildStack::new().and_then(|stack| program.spawn(&stack)) {
        Ok(pid) => pid,
        Err(err) => return fail(EXIT_SETUP_FAILED, &format!("clone: {err}")),
    };
    let status = wait_for(pid, parent);
    kill_descendants();
    mirror(status)
}

/// Waits for `child` to exit; if toolgate dies first, kills the child (in namespace mode that
/// ends the whole namespace) and exits.
fn wait_for(child: libc::pid_t, parent: Option<libc::c_int>) -> libc::c_int {
    if let Some(parent) = parent {
        // SAFETY: pidfd_open of our own unreaped child; poll reads/writes the array we own.
        unsafe {
            let child_fd = libc::syscall(libc::SYS_pidfd_open, child, 0) as libc::c_int;
            if child_fd >= 0 {
                let mut fds = [
                    libc::pollfd {
                        fd: parent,
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: child_fd,
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                loop {
                    let ready = libc::poll(fds.as_mut_ptr(), 2, -1);
                    if ready < 0 {
                        if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                            continue;
                        }
                        break;
                    }
                    if fds[1].revents != 0 {
                        break;
                    }
                    if fds[0].revents != 0 {
                        libc::kill(child, libc::SIGKILL);
                        kill_descendants();
                        libc::_exit(EXIT_SETUP_FAILED);
                    }
                }
            }
        }
    }
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into the integer we own.
        let pid = unsafe { libc::waitpid(child, &mut status, 0) };
        if pid == child {
            return status;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return status;
        }
    }
}

/// Ends the launcher the way the program ended: the same exit code, or the same signal.
fn mirror(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(libc::WEXITSTATUS(status)) };
    }
    let signal = if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else {
        libc::SIGKILL
    };
    // SAFETY: plain-integer calls and sigset values we own. No core file: the program already
    // wrote one if the system wanted it.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set = crate::tree::empty_sigset();
        libc::sigaddset(&mut set, signal);
        libc::raise(signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::_exit(128 + signal)
    }
}

/// `--probe`: prints which kinds of containment this kernel lets the launcher use.
fn probe() -> i32 {
    // SAFETY: fork in a single-threaded process; the child only calls unshare and _exit.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: plain-integer calls.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) == 0 {
                libc::_exit(0);
            }
            if libc::unshare(libc::CLONE_NEWPID) == 0 {
                libc::_exit(2);
            }
            libc::_exit(1);
        }
    }
    let mut status = 0;
    // SAFETY: waitpid writes into the integer we own.
    unsafe { libc::waitpid(child, &mut status, 0) };
    let code = if child > 0 && libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    };
    println!(
        "user_namespaces={} pid_namespace={}",
        u8::from(code == 0),
        u8::from(code == 0 || code == 2)
    );
    0
}
