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

use std::ffi::{CString, OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use seccompiler::BpfProgram;

use super::seccomp;
use super::{
    ARG_BEST_EFFORT, ARG_DEVICE, ARG_END, ARG_NETWORK, ARG_PARENT, ARG_PROBE, ARG_READ,
    ARG_SECCOMP, ARG_WRITE, EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED,
    LAUNCHER_MESSAGE_PREFIX,
};

/// The newest Landlock ABI this code knows; older kernels get the subset they support.
const NEWEST_ABI: ABI = ABI::V10;

/// What to do, parsed from the arguments toolgate gave.
struct Plan {
    parent: Option<libc::pid_t>,
    best_effort: bool,
    network: bool,
    read: Vec<OsString>,
    write: Vec<OsString>,
    devices: Vec<OsString>,
    seccomp: Vec<BpfProgram>,
    program: CString,
    argv: Vec<CString>,
}

/// The launcher's `main`, given its arguments without the program name: returns only to
/// report a failure before anything ran (the caller exits with the returned code); on every
/// other path the process ends here.
pub fn launcher_main(args: Vec<OsString>) -> i32 {
    // Rust's runtime (when it ran) ignores SIGPIPE; the program must start with the default.
    // SAFETY: setting a signal disposition to default has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if args.first().map(OsString::as_os_str) == Some(OsStr::new(ARG_PROBE)) {
        return probe();
    }
    match Plan::parse(args) {
        Ok(plan) => run(plan),
        Err(message) => fail(EXIT_SETUP_FAILED, &message),
    }
}

fn fail(code: i32, message: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "{LAUNCHER_MESSAGE_PREFIX}{message}");
    code
}

impl Plan {
    fn parse(args: Vec<OsString>) -> Result<Self, String> {
        let mut plan = Plan {
            parent: None,
            best_effort: false,
            network: false,
            read: Vec::new(),
            write: Vec::new(),
            devices: Vec::new(),
            seccomp: Vec::new(),
            program: CString::default(),
            argv: Vec::new(),
        };
        let mut args = args.into_iter();
        let usage = "usage: toolgate-sandbox [--parent PID] [--best-effort] [--network] [--read PATH]... [--write PATH]... [--device PATH]... [--seccomp HEX]... -- PROGRAM [ARG]...";
        loop {
            let Some(arg) = args.next() else {
                return Err(format!("no program given; {usage}"));
            };
            let mut value = || {
                args.next()
                    .ok_or_else(|| format!("{} needs a value; {usage}", arg.to_string_lossy()))
            };
            match arg.to_str() {
                Some(ARG_END) => break,
                Some(ARG_PARENT) => {
                    let text = value()?;
                    let pid = text
                        .to_str()
                        .and_then(|t| t.parse().ok())
                        .filter(|&pid: &libc::pid_t| pid > 0);
                    plan.parent =
                        Some(pid.ok_or_else(|| format!("--parent {text:?} is not a process id"))?);
                }
                Some(ARG_BEST_EFFORT) => plan.best_effort = true,
                Some(ARG_NETWORK) => plan.network = true,
                Some(ARG_READ) => plan.read.push(value()?),
                Some(ARG_WRITE) => plan.write.push(value()?),
                Some(ARG_DEVICE) => plan.devices.push(value()?),
                Some(ARG_SECCOMP) => {
                    let text = value()?;
                    plan.seccomp.push(
                        seccomp::decode(text.as_bytes())
                            .ok_or("--seccomp is not a compiled filter")?,
                    );
                }
                _ => return Err(format!("unknown argument {arg:?}; {usage}")),
            }
        }
        let mut argv = args.map(|arg| {
            CString::new(arg.into_vec()).map_err(|_| "an argument contains a NUL byte".to_string())
        });
        plan.program = argv
            .next()
            .ok_or_else(|| format!("no program given; {usage}"))??;
        plan.argv = std::iter::once(Ok(plan.program.clone()))
            .chain(argv)
            .collect::<Result<_, _>>()?;
        Ok(plan)
    }
}

/// How the process tree is contained.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Containment {
    PidNamespace,
    Subreaper,
}

fn run(plan: Plan) -> i32 {
    let mut original_mask = empty_sigset();
    // SAFETY: sigset_t values are plain data we own; sigfillset/sigprocmask only write them.
    unsafe {
        let mut all = empty_sigset();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_BLOCK, &all, &mut original_mask);
    }
    let parent = match plan.parent.map(watch_parent).transpose() {
        Ok(parent) => parent,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let containment = contain();
    match containment {
        Containment::PidNamespace => run_in_namespace(&plan, &original_mask, parent),
        Containment::Subreaper => run_as_subreaper(&plan, &original_mask, parent),
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

/// Enters new user and PID namespaces (mapping our own ids, so files keep their owners), or
/// only a PID namespace where that is allowed without a user namespace, or else becomes a
/// child subreaper.
fn contain() -> Containment {
    // SAFETY: getuid/getgid/unshare/prctl take plain integers.
    unsafe {
        let uid = libc::geteuid();
        let gid = libc::getegid();
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) == 0 {
            // Without the maps the program would see itself as the overflow user; the
            // permission checks (kernel ids) are the same either way, so a failure is cosmetic.
            let _ = write_proc_self(b"setgroups\0", b"deny");
            let _ = write_proc_self(b"uid_map\0", format!("{uid} {uid} 1").as_bytes());
            let _ = write_proc_self(b"gid_map\0", format!("{gid} {gid} 1").as_bytes());
            return Containment::PidNamespace;
        }
        if libc::unshare(libc::CLONE_NEWPID) == 0 {
            return Containment::PidNamespace;
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    Containment::Subreaper
}

fn write_proc_self(name: &[u8], content: &[u8]) -> std::io::Result<()> {
    let mut path = b"/proc/self/".to_vec();
    path.extend_from_slice(name);
    // SAFETY: `path` is NUL-terminated (name ends with NUL); write reads `content` only.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = libc::write(fd, content.as_ptr().cast(), content.len());
        libc::close(fd);
        if written < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn run_in_namespace(
    plan: &Plan,
    original_mask: &libc::sigset_t,
    parent: Option<libc::c_int>,
) -> i32 {
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
        init_main(plan, original_mask, status_write);
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
fn init_main(plan: &Plan, original_mask: &libc::sigset_t, status_write: libc::c_int) -> ! {
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
        let program = libc::fork();
        if program < 0 {
            let _ = fail(
                EXIT_SETUP_FAILED,
                &format!("fork: {}", std::io::Error::last_os_error()),
            );
            libc::_exit(EXIT_SETUP_FAILED);
        }
        if program == 0 {
            exec_program(plan, original_mask);
        }
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == program {
                let bytes = status.to_ne_bytes();
                libc::write(status_write, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
            if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(EXIT_SETUP_FAILED);
            }
        }
    }
}

fn run_as_subreaper(
    plan: &Plan,
    original_mask: &libc::sigset_t,
    parent: Option<libc::c_int>,
) -> i32 {
    // SAFETY: the launcher is single threaded, so the child may run any code.
    let program = unsafe { libc::fork() };
    if program < 0 {
        return fail(
            EXIT_SETUP_FAILED,
            &format!("fork: {}", std::io::Error::last_os_error()),
        );
    }
    if program == 0 {
        exec_program(plan, original_mask);
    }
    let status = wait_for(program, parent);
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

/// Kills and reaps every process reparented to us (subreaper mode; in namespace mode the only
/// child is init, already gone). Each round kills the children we have; their orphans become
/// ours and are killed in the next round.
fn kill_descendants() {
    loop {
        for pid in own_children() {
            // SAFETY: kill takes plain integers; these pids are our unreaped children.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // SAFETY: waitpid with a null status pointer.
        let reaped = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::__WALL) };
        if reaped < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return; // ECHILD: nothing left
        }
    }
}

fn own_children() -> Vec<libc::pid_t> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    std::fs::read_to_string(format!("/proc/self/task/{tid}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect()
        })
        .unwrap_or_default()
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
        let mut set = empty_sigset();
        libc::sigaddset(&mut set, signal);
        libc::raise(signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::_exit(128 + signal)
    }
}

/// In the program's process: restores the signal mask, applies Landlock and seccomp, and
/// executes the program.
fn exec_program(plan: &Plan, original_mask: &libc::sigset_t) -> ! {
    let code = match confine(plan) {
        Ok(()) => {
            // SAFETY: restoring the caller's mask; then execv with NUL-terminated strings and a
            // NULL-terminated argv built from CStrings that live until the call.
            unsafe {
                libc::sigprocmask(libc::SIG_SETMASK, original_mask, std::ptr::null_mut());
                let mut argv: Vec<*const libc::c_char> =
                    plan.argv.iter().map(|arg| arg.as_ptr()).collect();
                argv.push(std::ptr::null());
                libc::execv(plan.program.as_ptr(), argv.as_ptr());
            }
            let err = std::io::Error::last_os_error();
            let program = String::from_utf8_lossy(plan.program.as_bytes());
            if err.raw_os_error() == Some(libc::ENOENT) {
                fail(EXIT_NOT_FOUND, &format!("'{program}' was not found: {err}"))
            } else {
                fail(
                    EXIT_CANNOT_EXECUTE,
                    &format!("'{program}' could not be executed: {err}"),
                )
            }
        }
        Err(message) => fail(EXIT_SETUP_FAILED, &message),
    };
    // SAFETY: _exit never returns.
    unsafe { libc::_exit(code) }
}

fn confine(plan: &Plan) -> Result<(), String> {
    let status = landlock(plan).map_err(|err| format!("Landlock could not be applied: {err}"))?;
    if status == RulesetStatus::NotEnforced && !plan.best_effort {
        return Err("Landlock is not available on this kernel; run with sandbox: 'best-effort' or sandbox: false to go without it".into());
    }
    for program in &plan.seccomp {
        if let Err(err) = seccompiler::apply_filter(program) {
            if !plan.best_effort {
                return Err(format!("the seccomp filter could not be installed: {err}"));
            }
        }
    }
    if plan.seccomp.is_empty() {
        // seccompiler sets no_new_privs with each filter; without one, set it here.
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    }
    Ok(())
}

fn landlock(plan: &Plan) -> Result<RulesetStatus, landlock::RulesetError> {
    let all = AccessFs::from_all(NEWEST_ABI);
    // With the network open, path-named unix sockets (a session bus, a container daemon) may
    // be reached like any other service.
    let handled = if plan.network {
        all & !AccessFs::ResolveUnix
    } else {
        all
    };
    // Never granted: device nodes made in the work directory would reach raw disks.
    let write = handled & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let read = AccessFs::from_read(NEWEST_ABI);
    let file_rights = AccessFs::from_file(NEWEST_ABI);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    let mut scopes: BitFlags<Scope> = Scope::Signal.into();
    if !plan.network {
        scopes |= Scope::AbstractUnixSocket;
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)?
        .scope(scopes)?;
    if !plan.network {
        ruleset = ruleset.handle_access(AccessNet::from_all(NEWEST_ABI))?;
    }
    let mut created = ruleset.create()?;
    let groups: [(&[OsString], BitFlags<AccessFs>); 3] = [
        (&plan.read, read),
        (&plan.write, write),
        (&plan.devices, device),
    ];
    for (paths, rights) in groups {
        for path in paths {
            // A path that vanished since the sandbox was prepared is simply not granted.
            let Ok(fd) = PathFd::new(path) else { continue };
            let rights = if is_directory(&fd) {
                rights
            } else {
                rights & file_rights
            };
            created = created.add_rule(PathBeneath::new(fd, rights))?;
        }
    }
    Ok(created.restrict_self()?.ruleset)
}

/// Asks the already open path, rather than looking the name up a second time.
fn is_directory(fd: &PathFd) -> bool {
    use std::os::fd::{AsFd, AsRawFd};
    // SAFETY: fstat on an fd we own (O_PATH fds support it), writing into a zeroed stat.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_fd().as_raw_fd(), &mut stat) == 0
            && stat.st_mode & libc::S_IFMT == libc::S_IFDIR
    }
}

fn empty_sigset() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid (empty) set; sigemptyset makes it explicit.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
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
