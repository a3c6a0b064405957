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
//! The proxy network (`--network-proxy PORT --proxy-handoff FD`): the init makes the call's
//! network namespace and the proxy's listener in it (as a served init does), sends the
//! listener to toolgate over the inherited handoff socket and starts the program only once
//! toolgate answers that it serves it. The handoff socket is close-on-exec from the start and
//! closed before the program runs: the program never holds it. (The launcher server hands its
//! calls' listeners over each call's own socket instead.)
//!
//! Signals: the launcher blocks all signals, so a TERM to the process group reaches the
//! program (and its group) once, while the launcher stays to report how the program ended.
//!
//! Exit codes of its own, each with a `toolgate-sandbox: ` line on stderr: 125 the sandbox
//! could not be set up (nothing ran), 126 the program could not be executed, 127 it was not
//! found.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::Path;

use crate::confine::{fail, filters_of, ChildStack, Grant, Program, RulesetBuilder};
use crate::init::{own_network, Prepared};
use crate::limits::{CallCgroup, Cgroups, Limits};
use crate::plan::{Confinement, Launch, Network, Plan};
use crate::protocol::{probe as keys, wire, ARG_PROBE, ARG_SERVE, EXIT_SETUP_FAILED, LIMIT_REPORT};
use crate::seccomp;
use crate::tree::{block_signals, enter_user_namespace, kill_descendants, Ended, Watch};
use crate::view::{self, ViewSpec};

/// The launcher's `main`, given its arguments without the program name: returns only to
/// report a failure before anything ran (the caller exits with the returned code); on every
/// other path the process ends here.
pub fn launcher_main(args: Vec<OsString>) -> i32 {
    // Rust's runtime (when it ran) ignores SIGPIPE, Node ignores SIGPIPE and SIGXFSZ, and an
    // ignored signal stays ignored across exec: the program must start with the defaults (a
    // write past `fileSizeMb` ends it with SIGXFSZ, which is how the limit is reported).
    // SAFETY: setting a signal disposition to default has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
    }
    match args.first().and_then(|arg| arg.to_str()) {
        Some(ARG_PROBE) => return probe(),
        Some(ARG_SERVE) => return crate::server::serve(args.into_iter().skip(1)),
        _ => {}
    }
    // The one-shot launcher: nothing it inherited reaches the program but its streams.
    crate::sys::cloexec_from(3);
    match Plan::parse(args, true) {
        Ok(Plan {
            parent,
            confinement,
            launch: Some(launch),
            call_dir,
            proxy_handoff,
            ..
        }) => run(
            parent,
            &confinement,
            call_dir.as_deref(),
            proxy_handoff,
            &launch,
        ),
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

/// What the one-shot launcher's init (or the launcher itself, as a subreaper) runs.
struct OneShot<'a> {
    rules: &'a Confinement,
    call_dir: Option<&'a OsStr>,
    launch: &'a Launch,
    filters: &'a [seccomp::Program],
    mask: &'a libc::sigset_t,
    /// The socket the proxy's listener is handed to toolgate over (the proxy network).
    handoff: Option<libc::c_int>,
    /// The call's cgroup, where one can be made: it counts processes and memory, which
    /// rlimits do not bind for root nor for memory a process does not map itself (shared
    /// memory, `memfd`).
    cgroup: Option<&'a CallCgroup>,
}

/// How long the init waits for toolgate to take the proxy's listener.
const HANDOFF_TIMEOUT_MS: libc::c_int = 30_000;

fn run(
    parent: Option<libc::pid_t>,
    rules: &Confinement,
    call_dir: Option<&OsStr>,
    handoff: Option<libc::c_int>,
    launch: &Launch,
) -> i32 {
    let original_mask = block_signals();
    let parent = match parent.map(watch_parent).transpose() {
        Ok(parent) => parent,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let handoff = match (rules.network, handoff) {
        (Network::Proxy(_), Some(fd)) => match take_handoff(fd) {
            Ok(fd) => Some(fd),
            Err(message) => return fail(EXIT_SETUP_FAILED, &message),
        },
        (Network::Proxy(_), None) => {
            return fail(
                EXIT_SETUP_FAILED,
                "the proxy network needs --proxy-handoff FD (the socket the call's listener is handed to toolgate over)",
            )
        }
        (_, Some(_)) => {
            return fail(
                EXIT_SETUP_FAILED,
                "--proxy-handoff goes with --network-proxy only",
            )
        }
        (_, None) => None,
    };
    let filters = match filters_of(rules) {
        Ok(filters) => filters,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    // The program starts where the launcher was started (in the view: the same path).
    let mut launch = launch.clone();
    if launch.cwd.is_none() {
        launch.cwd = std::env::current_dir()
            .ok()
            .and_then(|dir| std::ffi::CString::new(dir.into_os_string().into_encoded_bytes()).ok());
    }
    // Made while this process is still in the host's namespaces (as the launcher server
    // makes its calls' cgroups).
    let limits = if rules.without.limits {
        Limits::default()
    } else {
        rules.limits
    };
    // SAFETY: getpid and getppid have no preconditions.
    let (own, toolgate) = unsafe { (libc::getpid(), libc::getppid()) };
    let cgroups = Cgroups::prepare(own, toolgate);
    let cgroup = match cgroups.for_call(1, &limits) {
        Ok(cgroup) => cgroup,
        Err(message) => {
            cgroups.remove();
            return fail(EXIT_SETUP_FAILED, &message);
        }
    };
    let one_shot = OneShot {
        rules,
        call_dir,
        launch: &launch,
        filters: &filters,
        mask: &original_mask,
        handoff,
        cgroup: cgroup.as_ref(),
    };
    // Once the init and everything in its namespace are gone (the launcher then ends as the
    // program did, without returning).
    let remove_cgroups = || {
        if let Some(cgroup) = &cgroup {
            cgroup.remove();
        }
        cgroups.remove();
    };
    match contain() {
        Containment::PidNamespace => run_in_namespace(&one_shot, parent, remove_cgroups),
        // The launcher itself is in the cgroup then (it starts the program): it stays for
        // the next server's or launcher's sweep (see `limits::sweep`).
        Containment::Subreaper => run_as_subreaper(&one_shot, parent),
    }
}

impl OneShot<'_> {
    /// Sets the call up in this process (the init, or the subreaper launcher): the view where
    /// it can be built, limits, the ruleset, no capabilities. Returns what the call holds.
    fn prepare(&self, view_allowed: bool) -> Result<Prepared, String> {
        let rules = self.rules;
        let mut builder = RulesetBuilder::new(rules.network)?;
        for (paths, grant) in [
            (&rules.read, Grant::Read),
            (&rules.write, Grant::Write),
            (&rules.devices, Grant::Device),
        ] {
            for path in paths {
                builder.add_path(path, grant)?;
            }
        }
        if let Some(dir) = self.call_dir {
            builder.add_path(&dir.to_os_string(), Grant::Write)?;
        }
        let mut prepared = Prepared {
            // Opened before the view hides `/sys/fs/cgroup`.
            cgroup: self.cgroup.map(CallCgroup::open).transpose()?,
            ..Prepared::default()
        };
        let mut fresh_proc = false;
        let entered =
            view_allowed && !rules.without.view && crate::sys::unshare(libc::CLONE_NEWNS).is_ok();
        if entered {
            if !rules.without.ipc {
                let _ = crate::sys::unshare(libc::CLONE_NEWIPC);
            }
            if let Network::Proxy(_) = rules.network {
                // The only way out is the proxy: a network namespace of the call's own with
                // the listener toolgate serves, or nothing runs.
                if rules.without.network_namespace {
                    return Err("the proxy network needs the call's own network namespace (--without network-namespace)".into());
                }
                crate::sys::unshare(libc::CLONE_NEWNET).map_err(|err| {
                    format!("the proxy network needs the call's own network namespace, which cannot be made here: {err}")
                })?;
                prepared.listener = own_network(rules.network)?;
            } else if rules.network == Network::Off
                && !rules.without.network_namespace
                && crate::sys::unshare(libc::CLONE_NEWNET).is_ok()
            {
                own_network(rules.network)?;
            }
            match self.build_view(&mut builder, &mut prepared) {
                Ok(fresh) => fresh_proc = fresh,
                // The mount API is refused before anything was mounted (qemu-user, an old
                // kernel, a seccomp profile): the call goes on as where no mount namespace
                // can be made, under Landlock and seccomp, and says so.
                Err(err) if err.unavailable && !rules.require_view => {
                    let _ = fail(
                        0,
                        &format!(
                            "warning: the sandbox's view of the file system cannot be built here ({}); the program runs under Landlock and seccomp alone",
                            err.message
                        ),
                    );
                }
                Err(err) if err.unavailable => {
                    return Err(format!("this policy needs the sandbox's own view of the file system (protected or hidden paths inside the roots), which cannot be built here: {}", err.message));
                }
                Err(err) => return Err(err.message),
            }
        } else if matches!(rules.network, Network::Proxy(_)) {
            return Err("the proxy network needs the call's own view and network namespace, which cannot be made here: user namespaces (with capabilities in them) are not available".into());
        } else if rules.require_view {
            return Err("this policy needs the sandbox's own view of the file system (protected or hidden paths inside the roots), which cannot be built here: user namespaces (with capabilities in them) are not available".into());
        }
        let limits = if rules.without.limits {
            Default::default()
        } else {
            rules.limits
        };
        if fresh_proc {
            limits.cap_pid_namespace(self.cgroup);
        }
        limits.apply_rlimits(self.cgroup)?;
        prepared.ruleset = builder.finish(rules.best_effort)?;
        crate::isolate::drop_capabilities()
            .map_err(|err| format!("giving up capabilities: {err}"))?;
        prepared.mark_cpu_start();
        Ok(prepared)
    }

    /// The call's limits (none with `--without limits`).
    fn limits(&self) -> Limits {
        if self.rules.without.limits {
            Limits::default()
        } else {
            self.rules.limits
        }
    }

    /// Hands the proxy's listener to toolgate over the handoff socket and waits until toolgate
    /// says it serves it; closes the socket either way (the program never gets it).
    fn hand_off(&self, prepared: &Prepared) -> Result<(), String> {
        let Some(fd) = self.handoff else {
            return Ok(());
        };
        // SAFETY: `fd` is the inherited handoff socket, checked in `run`; from here this
        // process owns it (the launcher closed its copy) and it closes on return.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        let Some(listener) = &prepared.listener else {
            return Err("the proxy network has no listener to hand to toolgate".into());
        };
        wire::send(socket.as_fd(), &[wire::LISTENER], &[listener.as_fd()])
            .map_err(|err| format!("handing the egress proxy's listener to toolgate: {err}"))?;
        let mut watch = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes the one pollfd we own.
        let ready = loop {
            let ready = unsafe { libc::poll(&mut watch, 1, HANDOFF_TIMEOUT_MS) };
            if ready < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break ready;
        };
        if ready <= 0 {
            return Err("toolgate did not take the egress proxy's listener in time".into());
        }
        match wire::recv(socket.as_fd(), false) {
            Ok(reply) if reply.bytes == [wire::HANDED_OFF] => Ok(()),
            _ => Err("toolgate did not take the egress proxy's listener".into()),
        }
    }

    /// In this process's own mount namespace: builds the call's view (a view of one call,
    /// with its own `/proc` and private tmpfs) and adds those two to the ruleset. Returns
    /// whether the call has a `/proc` of its own.
    fn build_view(
        &self,
        builder: &mut RulesetBuilder,
        prepared: &mut Prepared,
    ) -> Result<bool, view::ViewError> {
        let rules = self.rules;
        // The tmpfs goes on the call's directory itself: a view of one call.
        let private_dir = self.call_dir.map(Path::new);
        let proc = view::new_proc().ok();
        let tmp = private_dir
            .map(|_| view::new_private_tmpfs(rules.limits.tmp_mb.unwrap_or(0)))
            .transpose()
            .map_err(|err| {
                view::ViewError::of("mounting the call's private tmpfs".into(), &err, true)
            })?;
        let spec = ViewSpec {
            entries: view::entries_of(rules, &[]),
            private_dir: private_dir.map(|dir| dir.as_os_str().to_os_string()),
            host_proc: proc.is_none(),
        };
        let mut extra: Vec<(OwnedFd, &OsStr)> = Vec::new();
        let proc_root = proc.as_ref().map(|proc| proc.try_clone()).transpose();
        let tmp_root = tmp.as_ref().map(|tmp| tmp.try_clone()).transpose();
        let (proc_root, tmp_root) = (
            proc_root.map_err(|err| err.to_string())?,
            tmp_root.map_err(|err| err.to_string())?,
        );
        if let Some(proc) = proc {
            extra.push((proc, OsStr::new("/proc")));
        }
        if let (Some(tmp), Some(dir)) = (tmp, private_dir) {
            extra.push((tmp, dir.as_os_str()));
        }
        view::build(&spec, &extra)?;
        view::mask_proc_files(proc_root.is_some())
            .map_err(|err| view::ViewError::of("masking host files of /proc".into(), &err, true))?;
        if let Some(proc) = &proc_root {
            builder.add(proc.as_fd(), true, Grant::Read)?;
        }
        if let Some(tmp) = &tmp_root {
            builder.add(tmp.as_fd(), true, Grant::Write)?;
        }
        prepared.private_dir = private_dir.map(|dir| dir.as_os_str().to_os_string());
        prepared.tmp = tmp_root;
        prepared.make_call_dir(self.call_dir)?;
        Ok(proc_root.is_some())
    }

    /// Starts the program with what `prepared` holds; returns its pid.
    fn start(&self, prepared: &Prepared) -> Result<libc::pid_t, String> {
        let program = Program {
            ruleset: prepared.ruleset.as_ref().map(AsFd::as_fd),
            seccomp: self.filters,
            best_effort: self.rules.best_effort,
            launch: self.launch,
            mask: self.mask,
            stdio: None,
            files: None,
        };
        ChildStack::new()
            .and_then(|stack| program.spawn(&stack))
            .map_err(|err| format!("clone: {err}"))
    }

    /// Says on stderr which limits the program ran into.
    fn report_limits(&self, prepared: &Prepared, ended: &Ended) {
        let hit = prepared.limits_hit(&self.limits(), ended);
        if !hit.is_empty() {
            let _ = fail(0, &format!("{LIMIT_REPORT}{}", hit.join(",")));
        }
    }
}

/// The inherited handoff socket `fd`, checked to be a unix `SOCK_SEQPACKET` socket and made
/// close-on-exec at once, so that no program ever inherits it.
fn take_handoff(fd: libc::c_int) -> Result<libc::c_int, String> {
    let option = |name: libc::c_int| {
        let mut value: libc::c_int = 0;
        let mut size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `size` bytes into the integer we own.
        let done = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut size,
            )
        };
        (done == 0).then_some(value)
    };
    if option(libc::SO_DOMAIN) != Some(libc::AF_UNIX)
        || option(libc::SO_TYPE) != Some(libc::SOCK_SEQPACKET)
    {
        return Err(format!(
            "--proxy-handoff {fd}: that descriptor is not the handoff socket toolgate passes (a unix SOCK_SEQPACKET socket)"
        ));
    }
    // SAFETY: fcntl on a descriptor we checked is open.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(format!(
            "--proxy-handoff {fd}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(fd)
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

/// Runs the call in a PID namespace whose init is a child of this process; `after` runs once
/// that init is reaped, before this process ends as the program did.
fn run_in_namespace(
    one_shot: &OneShot<'_>,
    parent: Option<libc::c_int>,
    after: impl FnOnce(),
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
        init_main(one_shot, status_write);
    }
    // SAFETY: closing our copies of the write end and of the handoff socket (the init has
    // them).
    unsafe {
        libc::close(status_write);
        if let Some(handoff) = one_shot.handoff {
            libc::close(handoff);
        }
    }
    // Without the terminal, the program has a session of its own: signals sent to ours
    // (toolgate's TERM to its group, the terminal's interrupt) are passed on to it.
    let forward = (!one_shot.rules.tty).then_some(init);
    let (init_status, _) = wait_for(init, parent, forward, None);
    let mut reported = [0u8; 4];
    // SAFETY: read writes at most 4 bytes into `reported`.
    let got = unsafe { libc::read(status_read, reported.as_mut_ptr().cast(), reported.len()) };
    let status = if got == 4 {
        libc::c_int::from_ne_bytes(reported)
    } else {
        init_status
    };
    after();
    mirror(status)
}

/// PID 1 of the namespace: sets the call up, starts the program, reaps whatever is orphaned
/// to it, and when the program has exited reports its status and exits, which ends every
/// other process in the namespace.
fn init_main(one_shot: &OneShot<'_>, status_write: libc::c_int) -> ! {
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
        if !one_shot.rules.tty {
            // A session of its own: no controlling terminal for the program.
            libc::setsid();
        }
    }
    let entered = one_shot.cgroup.map_or(Ok(()), CallCgroup::enter);
    crate::init::own_cgroup_namespace();
    let started = entered
        .and_then(|()| one_shot.prepare(true))
        .and_then(|prepared| {
            one_shot.hand_off(&prepared)?;
            Ok((one_shot.start(&prepared)?, prepared))
        });
    let (pid, prepared) = match started {
        Ok(started) => started,
        Err(message) => {
            let _ = fail(EXIT_SETUP_FAILED, &message);
            // SAFETY: _exit never returns.
            unsafe { libc::_exit(EXIT_SETUP_FAILED) }
        }
    };
    // The call's CPU time, watched while it runs (a call with `cpuSeconds` whose cgroup counts
    // it; else no cost is added).
    let limits = one_shot.limits();
    let mut cpu_watch = prepared.cpu_watch(&limits);
    let watch = cpu_watch.as_mut().map(|watch| watch as &mut dyn Watch);
    let Some(ended) = crate::tree::reap_until_watched(pid, watch) else {
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(EXIT_SETUP_FAILED) }
    };
    one_shot.report_limits(&prepared, &ended);
    let bytes = ended.status.to_ne_bytes();
    // SAFETY: write of the 4 bytes we own; _exit never returns.
    unsafe {
        libc::write(status_write, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(0);
    }
}

fn run_as_subreaper(one_shot: &OneShot<'_>, parent: Option<libc::c_int>) -> i32 {
    let started = one_shot
        .cgroup
        .map_or(Ok(()), CallCgroup::enter)
        .and_then(|()| one_shot.prepare(false))
        .and_then(|prepared| Ok((one_shot.start(&prepared)?, prepared)));
    let (pid, prepared) = match started {
        Ok(started) => started,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let limits = one_shot.limits();
    let mut cpu_watch = prepared.cpu_watch(&limits);
    let watch = cpu_watch.as_mut().map(|watch| watch as &mut dyn Watch);
    let (status, over_cpu) = wait_for(pid, parent, None, watch);
    let ended = Ended {
        status,
        cpu: std::time::Duration::ZERO,
        orphans: kill_descendants(),
        over_cpu,
    };
    one_shot.report_limits(&prepared, &ended);
    mirror(status)
}

/// Signals passed on to the program's session (`forward`) while the launcher waits.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Waits for `child` to exit; if toolgate dies first, kills the child (in namespace mode that
/// ends the whole namespace) and exits. Signals of [`FORWARDED`] reaching the launcher (which
/// blocks them) go to the process group `forward`. A `watch` (the subreaper launcher's, of the
/// call's CPU time) is checked meanwhile; when it says the call is over its limit, the call's
/// processes are killed. Returns the child's wait status, and whether that happened.
fn wait_for(
    child: libc::pid_t,
    parent: Option<libc::c_int>,
    forward: Option<libc::pid_t>,
    mut watch: Option<&mut dyn Watch>,
) -> (libc::c_int, bool) {
    let mut over = false;
    // SAFETY: pidfd_open of our own unreaped child; signalfd reads the set we own; poll
    // reads/writes the array we own; read fills the siginfo we own.
    unsafe {
        let child_fd = libc::syscall(libc::SYS_pidfd_open, child, 0) as libc::c_int;
        let signals = match forward {
            Some(_) => {
                let mut set = crate::tree::empty_sigset();
                for signal in FORWARDED {
                    libc::sigaddset(&mut set, signal);
                }
                libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
            }
            None => -1,
        };
        if child_fd >= 0 && (parent.is_some() || signals >= 0 || watch.is_some()) {
            let mut fds = [
                libc::pollfd {
                    fd: parent.unwrap_or(-1),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: child_fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: signals,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let mut next = std::time::Instant::now();
            loop {
                let timeout = match watch.as_deref_mut() {
                    Some(watch) => crate::tree::poll_timeout(crate::tree::watch_step(
                        child, watch, &mut over, &mut next,
                    )),
                    None => -1,
                };
                let ready = libc::poll(fds.as_mut_ptr(), 3, timeout);
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
                if fds[2].revents != 0 {
                    let mut info: libc::signalfd_siginfo = std::mem::zeroed();
                    let size = std::mem::size_of::<libc::signalfd_siginfo>();
                    while libc::read(
                        signals,
                        (&mut info as *mut libc::signalfd_siginfo).cast(),
                        size,
                    ) == size as isize
                    {
                        if let Some(group) = forward {
                            libc::kill(-group, info.ssi_signo as libc::c_int);
                        }
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
            return (status, over);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return (status, over);
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

/// `--probe`: prints, one `key=value` per line, which kinds of containment this kernel lets
/// the launcher use (see [`keys`]): `0` or `1`, `view_error` and `cgroups` the rest of their
/// line.
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
    let user = code == 0;
    println!("{}={}", keys::USER_NAMESPACES, u8::from(user));
    println!(
        "{}={}",
        keys::PID_NAMESPACE,
        u8::from(code == 0 || code == 2)
    );
    // SAFETY: getppid/getpid have no preconditions.
    let (toolgate, own) = unsafe { (libc::getppid(), libc::getpid()) };
    let features = probe_features(user);
    println!("{}={}", keys::VIEW, u8::from(features.view.is_ok()));
    if let Err(why) = &features.view {
        println!("view_error={}", why.replace('\n', " "));
    }
    println!("{}={}", keys::FRESH_PROC, u8::from(features.fresh_proc));
    println!(
        "{}={}",
        keys::NETWORK_NAMESPACE,
        u8::from(features.network_namespace)
    );
    println!(
        "{}={}",
        keys::CGROUPS,
        crate::limits::Cgroups::probe(own, toolgate)
    );
    0
}

/// The server's features, found out as the server would (in a user and mount namespace of
/// its own, in a child that then exits).
fn probe_features(user: bool) -> crate::features::Features {
    use crate::features::Features;
    // SAFETY: geteuid has no preconditions.
    if !user && unsafe { libc::geteuid() } != 0 {
        return Features::none("user namespaces cannot be made here");
    }
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new fds into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Features::none("a pipe could not be made");
    }
    // SAFETY: fork in a single-threaded process; the child probes and exits.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: closing our copy of the read end; plain system calls; _exit.
        unsafe {
            libc::close(fds[0]);
            let features = if user && !enter_user_namespace(0) {
                Features::none("a user namespace cannot be entered")
            } else {
                match crate::sys::unshare(libc::CLONE_NEWNS) {
                    Ok(()) => crate::features::probe(),
                    Err(err) => Features::none(&format!("a mount namespace cannot be made: {err}")),
                }
            };
            let mut bytes = vec![
                u8::from(features.view.is_ok()),
                u8::from(features.fresh_proc),
                u8::from(features.network_namespace),
                u8::from(features.ipc_namespace),
            ];
            if let Err(why) = &features.view {
                bytes.extend_from_slice(why.as_bytes());
            }
            libc::write(fds[1], bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end; read into the buffer we own; reaping.
    let bytes = unsafe {
        libc::close(fds[1]);
        let mut bytes = vec![0u8; 4096];
        let mut read = 0usize;
        loop {
            let n = libc::read(
                fds[0],
                bytes[read..].as_mut_ptr().cast(),
                bytes.len() - read,
            );
            if n <= 0 {
                break;
            }
            read += n as usize;
        }
        libc::close(fds[0]);
        libc::waitpid(child, std::ptr::null_mut(), 0);
        bytes.truncate(read);
        bytes
    };
    match bytes.as_slice() {
        [view, fresh_proc, network, ipc, why @ ..] => Features {
            view: if *view == 1 {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(why).into_owned())
            },
            fresh_proc: *fresh_proc == 1,
            network_namespace: *network == 1,
            ipc_namespace: *ipc == 1,
        },
        _ => Features::none("the probe ended without an answer"),
    }
}
