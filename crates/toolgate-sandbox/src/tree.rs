//! Keeping a program's whole process tree inside its call: namespaces, the init that reaps
//! (and kills the call when a watch says so: its CPU time), and the subreaper fallback. Used by
//! the one-shot launcher and the launcher server.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Blocks every signal in this (single-threaded) process and returns the mask it had, for
/// the program to get back.
pub(crate) fn block_signals() -> libc::sigset_t {
    let mut original = empty_sigset();
    // SAFETY: sigset_t values are plain data we own; sigfillset/sigprocmask only write them.
    unsafe {
        let mut all = empty_sigset();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_BLOCK, &all, &mut original);
    }
    original
}

pub(crate) fn empty_sigset() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid (empty) set; sigemptyset makes it explicit.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        set
    }
}

/// Enters a new user namespace (with `extra` namespace flags, e.g. `CLONE_NEWPID`), mapping
/// our own uid and gid so files keep their owners. Returns false where user namespaces are not
/// allowed.
pub(crate) fn enter_user_namespace(extra: libc::c_int) -> bool {
    // SAFETY: geteuid/getegid/unshare take plain integers.
    unsafe {
        let uid = libc::geteuid();
        let gid = libc::getegid();
        let capped = cap_user_rlimits_for_a_namespace();
        let made = libc::unshare(libc::CLONE_NEWUSER | extra) == 0;
        restore_rlimits(&capped);
        if !made {
            return false;
        }
        // Without the maps the program would see itself as the overflow user; the permission
        // checks (kernel ids) are the same either way, so a failure is cosmetic.
        let _ = write_proc_self(b"setgroups\0", b"deny");
        let _ = write_proc_self(b"uid_map\0", format!("{uid} {uid} 1").as_bytes());
        let _ = write_proc_self(b"gid_map\0", format!("{gid} {gid} 1").as_bytes());
    }
    cap_inotify_counts();
    true
}

/// The per-user limits a new user namespace takes its ceiling from (the creator's soft limits
/// when it is made): what every process in it charges, together, to the host user — pending
/// signals (and POSIX timers), message queue bytes, locked shared memory. Halved while the
/// namespace is made, so that a call queueing signals to itself cannot leave the host user's
/// other processes with none (`EAGAIN` from `sigqueue`); returns the limits as they were.
fn cap_user_rlimits_for_a_namespace() -> Vec<(crate::sys::Resource, libc::rlimit)> {
    let mut was = Vec::new();
    for resource in [
        libc::RLIMIT_SIGPENDING,
        libc::RLIMIT_MSGQUEUE,
        libc::RLIMIT_MEMLOCK,
    ] {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit read and write the struct we own.
        unsafe {
            if libc::getrlimit(resource, &mut limit) != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
                continue;
            }
            let halved = libc::rlimit {
                rlim_cur: (limit.rlim_cur / 2).max(1),
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(resource, &halved) == 0 {
                was.push((resource, limit));
            }
        }
    }
    was
}

/// Puts back the limits [`cap_user_rlimits_for_a_namespace`] changed.
fn restore_rlimits(was: &[(crate::sys::Resource, libc::rlimit)]) {
    for (resource, limit) in was {
        // SAFETY: setrlimit reads the struct we own.
        unsafe { libc::setrlimit(*resource, limit) };
    }
}

/// The kernel's per-user inotify counts (`fs.inotify.max_user_instances`, `…_watches`) are
/// charged at every level of user namespaces, up to the host user's: a call could take all of
/// its user's, and the user's editors and file watchers (toolgate's own too) would then get
/// `EMFILE`/`ENOSPC`. In the namespace just made, half of the host's limits: what toolgate's
/// calls use together never reaches the host user's. Best effort (an older kernel has no such
/// files; the limits then stay the host's).
fn cap_inotify_counts() {
    for (host, ours) in [
        (
            "/proc/sys/fs/inotify/max_user_instances",
            "/proc/sys/user/max_inotify_instances",
        ),
        (
            "/proc/sys/fs/inotify/max_user_watches",
            "/proc/sys/user/max_inotify_watches",
        ),
    ] {
        let Some(limit) = std::fs::read_to_string(host)
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
        else {
            continue;
        };
        let _ = std::fs::write(ours, (limit / 2).max(1).to_string());
    }
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

/// How a call's program ended, as its init (or subreaper launcher) saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ended {
    /// The program's wait status.
    pub status: libc::c_int,
    /// The CPU time it and the children it waited for used.
    pub cpu: std::time::Duration,
    /// The limits' signals among the processes of the call reaped here (orphans: their parent
    /// had exited).
    pub orphans: OrphanSignals,
    /// The call's CPU time (its cgroup's) passed its limit, and the call was killed for it.
    pub over_cpu: bool,
}

/// A check made while a call's processes run (the call's CPU time against its limit).
pub(crate) trait Watch {
    /// How long until the next check, or `None` once the call is over its limit and is to be
    /// killed.
    fn check(&mut self) -> Option<std::time::Duration>;
}

/// How soon the processes of a call that is being killed are killed again (until its program
/// is gone; it takes one round but for a process that was forking).
pub(crate) const KILL_AGAIN: std::time::Duration = std::time::Duration::from_millis(10);

/// Whether an orphan of the call was killed by a limit's signal: `SIGXFSZ` (`fileSizeMb`) or
/// `SIGXCPU` (`cpuSeconds`). The kernel tells only a process's parent how it ended, so these
/// are the only processes besides the program whose ending the init learns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OrphanSignals {
    pub file_size: bool,
    pub cpu: bool,
    /// The most CPU time an orphan had used when `SIGKILL` ended it (the kernel's kill at
    /// `RLIMIT_CPU`'s hard limit, for a process that ignored `SIGXCPU`), where its usage is
    /// known.
    pub killed_cpu: std::time::Duration,
}

impl OrphanSignals {
    /// Notes the wait status of a process reaped here.
    fn note(&mut self, status: libc::c_int) {
        if libc::WIFSIGNALED(status) {
            match libc::WTERMSIG(status) {
                libc::SIGXFSZ => self.file_size = true,
                libc::SIGXCPU => self.cpu = true,
                _ => {}
            }
        }
    }

    /// Notes the wait status of a process reaped here that had used `cpu`.
    fn note_with_usage(&mut self, status: libc::c_int, cpu: std::time::Duration) {
        self.note(status);
        if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL {
            self.killed_cpu = self.killed_cpu.max(cpu);
        }
    }

    /// Both together.
    pub(crate) fn and(self, other: Self) -> Self {
        Self {
            file_size: self.file_size || other.file_size,
            cpu: self.cpu || other.cpu,
            killed_cpu: self.killed_cpu.max(other.killed_cpu),
        }
    }
}

/// As PID 1 of a namespace (or a subreaper): reaps every child, orphans included, until
/// `program` has exited, and returns how it ended (`None` if waiting failed).
pub(crate) fn reap_until_with_usage(program: libc::pid_t) -> Option<Ended> {
    let mut orphans = OrphanSignals::default();
    loop {
        let mut status = 0;
        // SAFETY: wait4 writes the status and the usage into values we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(-1, &mut status, 0, &mut usage) };
        if pid == program {
            return Some(Ended {
                status,
                cpu: cpu_time(&usage),
                orphans,
                over_cpu: false,
            });
        }
        if pid > 0 {
            orphans.note_with_usage(status, cpu_time(&usage));
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// [`reap_until_with_usage`], checking `watch` meanwhile (when it is given): its checks come
/// between the children's ends, which a `SIGCHLD` signalfd wakes this process for (every
/// signal is blocked in an init), and when it says the call is over its limit, the call's
/// processes are killed (see [`kill_call`]). Without a watch (a call without `cpuSeconds`,
/// or no cgroup counts its CPU time) it is `reap_until_with_usage` itself: no cost added.
pub(crate) fn reap_until_watched(
    program: libc::pid_t,
    watch: Option<&mut dyn Watch>,
) -> Option<Ended> {
    let Some(watch) = watch else {
        return reap_until_with_usage(program);
    };
    let Some(children) = child_signals() else {
        return reap_until_with_usage(program); // RLIMIT_CPU still stops each process
    };
    let mut orphans = OrphanSignals::default();
    let mut over = false;
    let mut next = std::time::Instant::now();
    loop {
        // Every child that ended.
        loop {
            let mut status = 0;
            // SAFETY: wait4 writes the status and the usage into values we own.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut usage) };
            if pid == program {
                return Some(Ended {
                    status,
                    cpu: cpu_time(&usage),
                    orphans,
                    over_cpu: over,
                });
            }
            if pid > 0 {
                orphans.note_with_usage(status, cpu_time(&usage));
            } else if pid == 0 {
                break;
            } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return None;
            }
        }
        let wait = watch_step(program, watch, &mut over, &mut next);
        let mut poll = libc::pollfd {
            fd: children.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes the one pollfd we own; read fills the buffer we own
        // (the signalfd is non-blocking: until it is empty).
        unsafe {
            libc::poll(&mut poll, 1, poll_timeout(wait));
            let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
            while libc::read(children.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) > 0 {}
        }
    }
}

/// One step of a watch while a call runs: checks it when it is due (or kills the call again
/// once it is over) and returns how long to wait for the next step. `over` becomes true when
/// the watch says the call is over its limit; `next` is when the next check is due.
pub(crate) fn watch_step(
    program: libc::pid_t,
    watch: &mut dyn Watch,
    over: &mut bool,
    next: &mut std::time::Instant,
) -> std::time::Duration {
    if !*over {
        let now = std::time::Instant::now();
        if now < *next {
            return *next - now;
        }
        match watch.check() {
            Some(wait) => {
                *next = now + wait;
                return wait;
            }
            None => *over = true,
        }
    }
    kill_call(program);
    KILL_AGAIN
}

/// `wait` as `poll`'s timeout: milliseconds, rounded up.
pub(crate) fn poll_timeout(wait: std::time::Duration) -> libc::c_int {
    libc::c_int::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX)
}

/// A signalfd for `SIGCHLD` (blocked here first, as it is in every init already), non-blocking.
fn child_signals() -> Option<OwnedFd> {
    let mut set = empty_sigset();
    // SAFETY: sigaddset/sigprocmask/signalfd read the set we own; the result is a new fd.
    unsafe {
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    }
}

/// Kills every process of a call at once, without reaping any: as PID 1 of the call's
/// namespace, every other process in it (`kill(-1)`; none can leave the namespace); as a
/// subreaper, `program` and this process's other children (what they leave is orphaned to
/// this subreaper, which kills it when it ends the call: [`kill_descendants`]).
pub(crate) fn kill_call(program: libc::pid_t) {
    // SAFETY: getpid has no preconditions; kill takes plain integers.
    unsafe {
        if libc::getpid() == 1 {
            libc::kill(-1, libc::SIGKILL);
            return;
        }
        libc::kill(program, libc::SIGKILL);
    }
    for pid in own_children() {
        // SAFETY: kill takes plain integers; these pids are our unreaped children.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// As PID 1 of a namespace: kills every other process in it and reaps them all. Returns the
/// limits' signals that had killed one of them before (see [`OrphanSignals`]).
///
/// `kill(-1)` from PID 1 reaches every process of its namespace but itself; a `fork` racing
/// with it fails (its parent has the signal pending), so once `wait` says there is no child
/// left, the namespace holds nothing but this init.
pub(crate) fn end_pid_namespace() -> OrphanSignals {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        // Not a namespace's init after all: `kill(-1)` would reach the host's processes.
        return kill_descendants();
    }
    let mut orphans = OrphanSignals::default();
    // Every process of the namespace descends from its init: no child, nothing left (the
    // usual case, without `kill(-1)` walking every process of the host).
    let mut status = 0;
    // SAFETY: waitpid writes the status into the integer we own.
    match unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) } {
        0 => {}
        reaped if reaped > 0 => orphans.note(status),
        _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) => {
            return orphans;
        }
        _ => {}
    }
    loop {
        let mut status = 0;
        // SAFETY: kill and waitpid take integers and write the status into the integer we own.
        let reaped = unsafe {
            libc::kill(-1, libc::SIGKILL);
            libc::waitpid(-1, &mut status, libc::__WALL)
        };
        if reaped > 0 {
            orphans.note(status);
        } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return orphans; // ECHILD: nothing left
        }
    }
}

/// User and system time together.
pub(crate) fn cpu_time(usage: &libc::rusage) -> std::time::Duration {
    let micros = |time: libc::timeval| time.tv_sec as u64 * 1_000_000 + time.tv_usec as u64;
    std::time::Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

/// Kills and reaps every process reparented to us (subreaper mode). Each round kills the
/// children we have; their orphans become ours and are killed in the next round. Returns the
/// limits' signals that had killed one of them before (an orphan that was waiting to be
/// reaped).
pub(crate) fn kill_descendants() -> OrphanSignals {
    let mut orphans = OrphanSignals::default();
    loop {
        for pid in own_children() {
            // SAFETY: kill takes plain integers; these pids are our unreaped children.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let mut status = 0;
        // SAFETY: waitpid writes the status into the integer we own.
        let reaped = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if reaped > 0 {
            orphans.note(status);
        }
        if reaped < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return orphans; // ECHILD: nothing left
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

/// Waits until the child `pid` is gone and reaps it.
pub(crate) fn reap(pid: libc::pid_t) {
    // SAFETY: waitpid of our own child, into nothing, blocking until it has exited.
    unsafe {
        while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}
