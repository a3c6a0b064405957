//! The launcher server (`toolgate-sandbox --serve`): one small, single-threaded process per
//! toolgate process that starts sandboxed programs on request, so a call costs no `execve` of
//! a launcher and no namespace or filter set-up on its path.
//!
//! ```text
//! toolgate ── server (own process group, user namespace) ── init (PID 1, the call's group) ── program ── …
//! ```
//!
//! - It is started lazily by toolgate with a `SOCK_SEQPACKET` socket as its stdin and serves
//!   the requests of `wire.rs`. Policies are sent once per `Sandbox` and referred to by id.
//! - Ahead of each call, it starts the call's init: cloned into a new PID namespace (the
//!   server entered a user namespace once, at start, where it may), leader of its own process
//!   group, the seccomp filter already installed, everything else closed, waiting on a socket.
//!   A call's request gets such a waiting init (one is made on the spot when none matches),
//!   the Landlock ruleset (built here from paths kept open, see `opened.rs`), its standard
//!   streams and the program to run; the init starts the program's process (which only
//!   applies the ruleset and executes, see `confine.rs`) and reports its status on the call's
//!   socket. toolgate gets the init's pid and a pidfd, and kills the group on timeout or abort
//!   exactly as for a child of its own. When toolgate closes the call's socket the server
//!   kills the init (ending the namespace) and only then reaps it, so the group id is never
//!   reused while toolgate may still signal it.
//! - Without PID namespaces the init is a subreaper instead, which kills every leftover
//!   descendant when the program exits or the call's socket closes.
//! - It dies with toolgate (its socket reaches end of file, or toolgate's pidfd fires): it
//!   kills every call, waits for them, removes toolgate's private directories (`--clean`) and
//!   exits. Each init dies with the server (`PR_SET_PDEATHSIG`); toolgate then sees the call's
//!   socket close without a status and reports it.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use crate::confine::{
    fail, filters_of, install_filters, ChildStack, Grant, Program, RulesetBuilder,
};
use crate::opened::OpenPaths;
use crate::plan::{Confinement, Plan};
use crate::protocol::wire::{self, Reader};
use crate::protocol::words;
use crate::protocol::{ARG_CLEAN, ARG_PARENT, EXIT_SETUP_FAILED};
use crate::seccomp;
use crate::tree::{block_signals, enter_user_namespace, kill_descendants, reap_until};

/// How many kinds of waiting inits (one per seccomp set-up) are kept.
const MAX_WAITING_KINDS: usize = 4;
/// How long after a request the server waits before making the next waiting inits: the init
/// it just woke should get a CPU first, not queue behind that work.
const MAKE_WAITING_AFTER: std::time::Duration = std::time::Duration::from_micros(300);

/// The server's `main` (after `--serve`): returns only when it could not start.
pub(crate) fn serve(args: impl Iterator<Item = OsString>) -> i32 {
    let (parent, clean) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    let mask = block_signals();
    let mut server = match Server::start(parent, clean, mask) {
        Ok(server) => server,
        Err(message) => return fail(EXIT_SETUP_FAILED, &message),
    };
    if wire::send(server.socket.as_fd(), &[wire::READY, wire::VERSION], &[]).is_err() {
        return EXIT_SETUP_FAILED; // toolgate is gone already
    }
    let clean = server.run() == Ending::ToolgateGone;
    server.shut_down(clean);
    0
}

fn parse(args: impl Iterator<Item = OsString>) -> Result<(libc::pid_t, Option<PathBuf>), String> {
    let usage = "usage: toolgate-sandbox --serve --parent PID [--clean DIR] (stdin: the socket)";
    let mut parent = None;
    let mut clean = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{arg:?} needs a value; {usage}"))?;
        match arg.to_str() {
            Some(ARG_PARENT) => {
                parent = value
                    .to_str()
                    .and_then(|text| text.parse().ok())
                    .filter(|&pid: &libc::pid_t| pid > 0);
            }
            Some(ARG_CLEAN) => clean = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown argument {arg:?}; {usage}")),
        }
    }
    Ok((
        parent.ok_or_else(|| format!("--parent is required; {usage}"))?,
        clean,
    ))
}

/// Why the server stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// toolgate exited (or was killed): its private directories go too.
    ToolgateGone,
    /// toolgate replaced this server and said so.
    Quit,
}

/// How the server contains a call's process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Containment {
    /// A PID namespace per call (the server is in its own user namespace, or may make them).
    PidNamespace,
    /// An init that is a child subreaper.
    Subreaper,
}

/// A registered policy.
struct Policy {
    rules: Confinement,
    /// Which waiting inits fit it: its filters (and whether a filter may fail).
    kind: Kind,
}

/// The seccomp set-up of a waiting init.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    /// Whether it installs the filters (of `network`).
    seccomp: bool,
    network: bool,
    /// Whether a filter may fail to install.
    best_effort: bool,
}

struct Server {
    socket: OwnedFd,
    /// toolgate: readable when it has exited.
    parent: OwnedFd,
    /// The server itself: an init checks it is still alive once its death signal is set.
    itself: OwnedFd,
    devnull: OwnedFd,
    /// The signal mask and open-file limit toolgate started the server with, for programs.
    mask: libc::sigset_t,
    files: libc::rlimit,
    containment: Cell<Containment>,
    policies: HashMap<u64, Result<Policy, String>>,
    /// The compiled seccomp filters, without and with network access (the same for every
    /// policy with that setting: compiled for the first that needs them).
    filters: [Option<Vec<seccomp::Program>>; 2],
    paths: OpenPaths,
    /// Inits made ahead of calls.
    waiting: Vec<Waiting>,
    /// The kinds of the last calls, most recent last: what to make inits ahead for.
    recent: Vec<Kind>,
    calls: Vec<Call>,
    clean: Option<PathBuf>,
}

/// An init waiting for its call.
struct Waiting {
    kind: Kind,
    pid: libc::pid_t,
    pidfd: OwnedFd,
    socket: OwnedFd,
}

/// A started call.
struct Call {
    /// The server's end of the call's socket: readable once toolgate closed its end.
    socket: OwnedFd,
    init: OwnedFd,
    pid: libc::pid_t,
    /// toolgate is done with it: waiting for the init to be gone, then reaping it.
    closing: bool,
}

/// A call's request, as received.
struct Request {
    socket: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    stdin: Option<OwnedFd>,
    body: Vec<u8>,
}

impl Server {
    fn start(
        parent: libc::pid_t,
        clean: Option<PathBuf>,
        mask: libc::sigset_t,
    ) -> Result<Self, String> {
        let parent_fd = wire::pidfd_open(parent)
            .ok()
            // SAFETY: getppid has no preconditions.
            .filter(|_| unsafe { libc::getppid() } == parent)
            .ok_or_else(|| format!("toolgate (pid {parent}) is gone"))?;
        // SAFETY: fd 0 is the socket toolgate gave us; from here on it is ours alone (and
        // close-on-exec, like every fd the server holds).
        let socket = unsafe { OwnedFd::from_raw_fd(0) };
        set_cloexec(socket.as_fd());
        // SAFETY: getpid has no preconditions.
        let itself = wire::pidfd_open(unsafe { libc::getpid() })
            .map_err(|err| format!("pidfd_open: {err}"))?;
        let devnull = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|err| format!("/dev/null: {err}"))?;
        let files = raise_file_limit();
        let containment = choose_containment();
        Ok(Self {
            socket,
            parent: parent_fd,
            itself,
            devnull,
            mask,
            files,
            containment: Cell::new(containment),
            policies: HashMap::new(),
            filters: [None, None],
            paths: OpenPaths::new(),
            waiting: Vec::new(),
            recent: Vec::new(),
            calls: Vec::new(),
            clean,
        })
    }

    /// Serves until toolgate is gone or says to quit.
    fn run(&mut self) -> Ending {
        let mut make_waiting_at: Option<std::time::Instant> = None;
        loop {
            let mut polls = vec![
                poll_in(self.socket.as_fd()),
                poll_in(self.parent.as_fd()),
                poll_in(self.paths.events_fd().unwrap_or(self.parent.as_fd())),
            ];
            polls.extend(self.calls.iter().map(|call| {
                poll_in(if call.closing {
                    call.init.as_fd()
                } else {
                    call.socket.as_fd()
                })
            }));
            let timeout = make_waiting_at.map_or(-1, |at| {
                let left = at.saturating_duration_since(std::time::Instant::now());
                left.as_micros().div_ceil(1000) as libc::c_int
            });
            // SAFETY: poll reads and writes the array we own, of the length we pass.
            let ready =
                unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, timeout) };
            if ready < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Ending::ToolgateGone;
            }
            if polls[1].revents != 0 {
                return Ending::ToolgateGone;
            }
            if polls[2].revents != 0 {
                self.paths.read_events();
            }
            // Calls first: their indices are those of this poll.
            let mut finished = Vec::new();
            for (index, poll) in polls[3..].iter().enumerate() {
                if poll.revents == 0 {
                    continue;
                }
                if self.calls[index].closing {
                    finished.push(index);
                } else {
                    self.close(index);
                }
            }
            for index in finished.into_iter().rev() {
                let call = self.calls.swap_remove(index);
                reap(call.pid);
            }
            if polls[0].revents != 0 {
                if let Some(ending) = self.handle_requests() {
                    return ending;
                }
                make_waiting_at = Some(std::time::Instant::now() + MAKE_WAITING_AFTER);
            } else if make_waiting_at.is_some_and(|at| at <= std::time::Instant::now()) {
                // Quiet for a moment: make the inits the next calls will want.
                make_waiting_at = None;
                self.make_waiting();
            }
        }
    }

    /// toolgate is done with call `index`: end what is left of it; the init is reaped once
    /// it is gone.
    fn close(&mut self, index: usize) {
        let call = &mut self.calls[index];
        call.closing = true;
        if self.containment.get() == Containment::PidNamespace {
            // The init's death ends its namespace. (A subreaper init sees the socket close
            // itself and kills its descendants before it exits.)
            signal(call.init.as_fd(), libc::SIGKILL);
        }
    }

    /// Handles every request waiting on the socket; `Some` when the server is to stop.
    fn handle_requests(&mut self) -> Option<Ending> {
        loop {
            let message = match wire::recv(self.socket.as_fd(), false) {
                Ok(message) => message,
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return None,
                Err(_) => return Some(Ending::ToolgateGone),
            };
            if message.bytes.is_empty() {
                // End of file without a QUIT: toolgate exited (its files close before its
                // pidfd reports it).
                return Some(Ending::ToolgateGone);
            }
            let mut fds = message.fds;
            let mut reader = Reader::new(&message.bytes);
            match (reader.u8(), reader.u64()) {
                (Some(wire::QUIT), _) => return Some(Ending::Quit),
                (Some(wire::POLICY), Some(id)) => {
                    let flags = reader.u8().unwrap_or(0);
                    let policy = wire::take_body(reader.rest(), flags, &mut fds)
                        .map_err(|err| err.to_string())
                        .and_then(|body| Plan::parse(words::split(&body), false))
                        .and_then(|plan| self.policy(plan.confinement));
                    self.policies.insert(id, policy);
                }
                (Some(wire::FORGET), Some(id)) => {
                    self.policies.remove(&id);
                }
                (Some(wire::SPAWN), Some(policy)) => {
                    let flags = reader.u8().unwrap_or(0);
                    let request = Request::take(flags, reader.rest(), fds);
                    match request {
                        Ok(request) => self.spawn(policy, request),
                        Err((Some(socket), message)) => report_failure(socket.as_fd(), &message),
                        Err((None, _)) => {}
                    }
                }
                _ => {} // not ours to understand: toolgate never sends it
            }
        }
    }

    /// A policy to register: which inits fit it, its filters compiled when they are the first
    /// of their network setting.
    fn policy(&mut self, rules: Confinement) -> Result<Policy, String> {
        let slot = &mut self.filters[usize::from(rules.network)];
        let seccomp = match slot {
            Some(_) => rules.seccomp,
            None => {
                let filters = filters_of(&rules)?;
                let compiled = !filters.is_empty();
                if compiled {
                    *slot = Some(filters);
                }
                compiled
            }
        };
        Ok(Policy {
            kind: Kind {
                seccomp,
                network: rules.network,
                best_effort: rules.best_effort,
            },
            rules,
        })
    }

    /// Starts a call; every failure is reported on the call's socket. The init gets its
    /// streams and program first and prepares while the ruleset is built here.
    fn spawn(&mut self, policy: u64, request: Request) {
        let kind = match self.policies.get(&policy) {
            Some(Ok(policy)) => policy.kind,
            Some(Err(message)) => {
                let message = format!("the policy was not accepted: {message}");
                return report_failure(request.socket.as_fd(), &message);
            }
            None => {
                let message = format!("unknown policy {policy}");
                return report_failure(request.socket.as_fd(), &message);
            }
        };
        self.remember(&kind);
        let Some(waiting) = self.assign(&kind, &request) else {
            return;
        };
        let rules = match self.ruleset(policy, &request.body) {
            Ok(ruleset) => {
                let fds: Vec<BorrowedFd<'_>> = ruleset.iter().map(AsFd::as_fd).collect();
                wire::send(waiting.socket.as_fd(), &[wire::RULES], &fds)
            }
            Err(message) => {
                let mut bytes = vec![wire::FAILED];
                bytes.extend_from_slice(message.as_bytes());
                bytes.truncate(wire::MAX_MESSAGE);
                wire::send(waiting.socket.as_fd(), &bytes, &[])
            }
        };
        if rules.is_err() {
            // The init died: its end of file reaches toolgate without a status.
            signal(waiting.pidfd.as_fd(), libc::SIGKILL);
        }
        self.started(request.socket, waiting);
    }

    /// Hands the call's streams and program to a waiting init of `kind` (one made now when
    /// none waits; one that died meanwhile is replaced once).
    fn assign(&mut self, kind: &Kind, request: &Request) -> Option<Waiting> {
        for _ in 0..2 {
            let waiting = match self.take_waiting(kind) {
                Some(waiting) => waiting,
                None => match self.make_init(kind) {
                    Ok(waiting) => waiting,
                    Err(message) => {
                        report_failure(request.socket.as_fd(), &message);
                        return None;
                    }
                },
            };
            let mut flags = 0;
            let mut fds = vec![
                request.socket.as_fd(),
                request.stdout.as_fd(),
                request.stderr.as_fd(),
            ];
            if let Some(stdin) = &request.stdin {
                flags |= wire::HAS_STDIN;
                fds.push(stdin.as_fd());
            }
            let head = vec![wire::ASSIGN, flags];
            if wire::send_with_body(waiting.socket.as_fd(), head, 1, &request.body, &fds).is_ok() {
                return Some(waiting);
            }
            signal(waiting.pidfd.as_fd(), libc::SIGKILL);
            reap(waiting.pid);
        }
        report_failure(
            request.socket.as_fd(),
            "the call's init ended before it started",
        );
        None
    }

    /// Tells toolgate the call runs, and keeps it.
    fn started(&mut self, socket: OwnedFd, waiting: Waiting) {
        let started = wire::tagged_i32(wire::STARTED, waiting.pid);
        let mut call = Call {
            socket,
            init: waiting.pidfd,
            pid: waiting.pid,
            closing: false,
        };
        if wire::send(call.socket.as_fd(), &started, &[call.init.as_fd()]).is_err() {
            // toolgate gave up on the call already.
            call.closing = true;
            if self.containment.get() == Containment::PidNamespace {
                signal(call.init.as_fd(), libc::SIGKILL);
            }
        }
        self.calls.push(call);
    }

    /// The call's Landlock ruleset: the policy's paths and the program's read roots from the
    /// open paths, the call's private directory opened now.
    fn ruleset(&mut self, policy: u64, body: &[u8]) -> Result<Option<OwnedFd>, String> {
        let Some(Ok(Policy { rules, .. })) = self.policies.get(&policy) else {
            return Err(format!("unknown policy {policy}"));
        };
        let plan = Plan::parse(words::split(body), true)?;
        // A name changed since the last call is seen before any rule is made from it.
        self.paths.read_events();
        let mut builder = RulesetBuilder::new(rules.network)?;
        for (paths, grant) in [
            (&rules.read, Grant::Read),
            (&plan.confinement.read, Grant::Read),
            (&rules.write, Grant::Write),
            (&rules.devices, Grant::Device),
        ] {
            for path in paths {
                if let Some(open) = self.paths.get(path) {
                    builder.add(open.fd(), open.is_directory(), grant)?;
                }
            }
        }
        for path in &plan.confinement.write {
            builder.add_path(path, Grant::Write)?;
        }
        builder.finish(rules.best_effort)
    }

    fn remember(&mut self, kind: &Kind) {
        self.recent.retain(|known| known != kind);
        self.recent.push(*kind);
        if self.recent.len() > MAX_WAITING_KINDS {
            let forgotten = self.recent.remove(0);
            self.waiting.retain(|waiting| waiting.kind != forgotten);
        }
    }

    fn take_waiting(&mut self, kind: &Kind) -> Option<Waiting> {
        let index = self
            .waiting
            .iter()
            .position(|waiting| &waiting.kind == kind)?;
        Some(self.waiting.swap_remove(index))
    }

    /// One waiting init for each kind recently asked for. (Dropping a waiting init closes
    /// its socket: it exits.)
    fn make_waiting(&mut self) {
        for kind in self.recent.clone() {
            if self.waiting.iter().any(|waiting| waiting.kind == kind) {
                continue;
            }
            match self.make_init(&kind) {
                Ok(waiting) => self.waiting.push(waiting),
                Err(_) => return, // made on demand, with the error reported, by the next call
            }
        }
    }

    /// Starts an init of `kind`: PID 1 of a new PID namespace, or a subreaper.
    fn make_init(&self, kind: &Kind) -> Result<Waiting, String> {
        let (ours, theirs) = wire::socket_pair().map_err(|err| format!("socketpair: {err}"))?;
        let pid = self.clone_init(kind, theirs.as_fd())?;
        drop(theirs);
        // Both sides set the group, so it exists before toolgate learns the pid.
        // SAFETY: setpgid takes plain integers; the init has not executed anything.
        unsafe { libc::setpgid(pid, pid) };
        match wire::pidfd_open(pid) {
            Ok(pidfd) => Ok(Waiting {
                kind: *kind,
                pid,
                pidfd,
                socket: ours,
            }),
            Err(err) => {
                // SAFETY: kill of our own child; reaped right after.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                reap(pid);
                Err(format!("pidfd_open: {err}"))
            }
        }
    }

    fn clone_init(&self, kind: &Kind, socket: BorrowedFd<'_>) -> Result<libc::pid_t, String> {
        if self.containment.get() == Containment::PidNamespace {
            // SAFETY: a fork-like clone (no new stack, no shared memory) in a single-threaded
            // process: the child may run any code.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone,
                    libc::CLONE_NEWPID | libc::SIGCHLD,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                )
            } as libc::pid_t;
            if pid == 0 {
                self.init(kind, socket);
            }
            if pid > 0 {
                return Ok(pid);
            }
            let err = std::io::Error::last_os_error();
            if !matches!(
                err.raw_os_error(),
                Some(libc::EPERM | libc::EINVAL | libc::ENOSPC)
            ) {
                return Err(format!("clone: {err}"));
            }
            // Not allowed here after all: subreapers from now on.
            self.containment.set(Containment::Subreaper);
        }
        // SAFETY: single-threaded process: the child may run any code.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            self.init(kind, socket);
        }
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        Ok(pid)
    }

    /// A call's init: set up ahead of the call (group, filter, nothing else open), it waits
    /// for its call, starts the program and reports how it ended on the call's socket.
    fn init(&self, kind: &Kind, socket: BorrowedFd<'_>) -> ! {
        let namespace = self.containment.get() == Containment::PidNamespace;
        // SAFETY: plain-integer system calls.
        unsafe {
            if namespace {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // The server may have died before the death signal was set.
                if wire::ready(self.itself.as_fd()) {
                    libc::_exit(EXIT_SETUP_FAILED);
                }
            } else {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            }
            libc::setpgid(0, 0);
        }
        // Nothing of the server's or of calls stays open here: another call's pipe held by
        // this init would keep that call's output open.
        keep_only(&[socket.as_raw_fd(), self.devnull.as_raw_fd()]);
        // Fds 0 to 2 taken, the call's streams arrive above them (see `Program`).
        for fd in 0..3 {
            // SAFETY: dup2 of an fd we hold onto a free slot.
            unsafe { libc::dup2(self.devnull.as_raw_fd(), fd) };
        }
        // The filter the program inherits (installing it costs more than the rest of a start).
        let filters = match &self.filters[usize::from(kind.network)] {
            Some(filters) if kind.seccomp => filters.as_slice(),
            _ => &[],
        };
        let ready = install_filters(filters, kind.best_effort)
            .and_then(|()| ChildStack::new().map_err(|err| format!("the program's stack: {err}")));
        let code = match self.serve_call(socket, namespace, ready) {
            Ok(()) => 0,
            Err(()) => EXIT_SETUP_FAILED,
        };
        // SAFETY: _exit never returns. In a namespace this ends every process left in it.
        unsafe { libc::_exit(code) }
    }

    /// In an init: waits for the call, runs it, reports. `Err` when there was no call to run.
    fn serve_call(
        &self,
        socket: BorrowedFd<'_>,
        namespace: bool,
        ready: Result<ChildStack, String>,
    ) -> Result<(), ()> {
        let message = wire::recv(socket, true).map_err(|_| ())?;
        let mut reader = Reader::new(&message.bytes);
        if reader.u8() != Some(wire::ASSIGN) {
            return Err(()); // end of file: the server is gone or dropped this init
        }
        let flags = reader.u8().unwrap_or(0);
        let mut fds = message.fds;
        let body = wire::take_body(reader.rest(), flags, &mut fds);
        let stdin = if flags & wire::HAS_STDIN != 0 {
            fds.pop()
        } else {
            None
        };
        let (Some(stderr), Some(stdout), Some(call), None) =
            (fds.pop(), fds.pop(), fds.pop(), fds.pop())
        else {
            return Err(());
        };
        let stdin = stdin.as_ref().map_or(self.devnull.as_fd(), AsFd::as_fd);
        let launch = ready.and_then(|stack| {
            let body = body.map_err(|err| format!("reading the request: {err}"))?;
            let plan = Plan::parse(words::split(&body), true)?;
            Ok((stack, plan.launch.ok_or("no program given")?))
        });
        // The ruleset, built by the server meanwhile.
        let rules = wire::recv(socket, true).map_err(|_| ())?;
        let ruleset = match rules.bytes.split_first() {
            Some((&wire::RULES, _)) => Ok(rules.fds.into_iter().next()),
            Some((&wire::FAILED, message)) => Err(String::from_utf8_lossy(message).into_owned()),
            _ => return Err(()),
        };
        let (stack, launch, ruleset) =
            match launch.and_then(|(stack, launch)| Ok((stack, launch, ruleset?))) {
                Ok(ready) => ready,
                Err(message) => {
                    report_failure(call.as_fd(), &message);
                    return Ok(());
                }
            };
        let program = Program {
            ruleset: ruleset.as_ref().map(AsFd::as_fd),
            seccomp: &[], // installed in this init already, and inherited
            best_effort: false,
            launch: &launch,
            mask: &self.mask,
            stdio: Some([stdin, stdout.as_fd(), stderr.as_fd()]),
            files: Some(self.files),
        }
        .spawn(&stack);
        drop((stdout, stderr, ruleset));
        let program = match program {
            Ok(program) => program,
            Err(err) => {
                report_failure(call.as_fd(), &format!("clone: {err}"));
                return Ok(());
            }
        };
        let status = if namespace {
            reap_until(program)
        } else {
            subreaper_wait(program, call.as_fd())
        };
        if let Some(status) = status {
            let _ = wire::send(call.as_fd(), &wire::tagged_i32(wire::EXITED, status), &[]);
        }
        Ok(())
    }

    /// Kills every call and waiting init and waits until each is gone; when toolgate is gone
    /// (`clean`), removes its private directories.
    fn shut_down(&mut self, clean: bool) {
        for index in 0..self.calls.len() {
            if !self.calls[index].closing {
                self.close(index);
            }
        }
        for call in self.calls.drain(..) {
            reap(call.pid);
        }
        for waiting in self.waiting.drain(..) {
            signal(waiting.pidfd.as_fd(), libc::SIGKILL);
            reap(waiting.pid);
        }
        if let Some(dir) = self.clean.as_ref().filter(|_| clean) {
            crate::cleanup::remove_tree(dir);
        }
    }
}

impl Request {
    /// Sorts a `SPAWN` message's descriptors; on failure, the call's socket (if any) to report
    /// it on.
    fn take(
        flags: u8,
        rest: &[u8],
        mut fds: Vec<OwnedFd>,
    ) -> Result<Self, (Option<OwnedFd>, String)> {
        let body = wire::take_body(rest, flags, &mut fds);
        let expected = if flags & wire::HAS_STDIN != 0 { 4 } else { 3 };
        if fds.len() != expected {
            let socket = (!fds.is_empty()).then(|| fds.swap_remove(0));
            return Err((socket, "the request came without its descriptors".into()));
        }
        let stdin = (expected == 4).then(|| fds.pop()).flatten();
        let (Some(stderr), Some(stdout), Some(socket)) = (fds.pop(), fds.pop(), fds.pop()) else {
            return Err((None, "the request came without its descriptors".into()));
        };
        let body = match body {
            Ok(body) => body,
            Err(err) => return Err((Some(socket), format!("reading the request: {err}"))),
        };
        Ok(Self {
            socket,
            stdout,
            stderr,
            stdin,
            body,
        })
    }
}

/// In a subreaper init: waits for the program, or for toolgate to close the call's socket;
/// either way kills every leftover descendant. Returns the program's status if it exited.
fn subreaper_wait(program: libc::pid_t, socket: BorrowedFd<'_>) -> Option<libc::c_int> {
    let Ok(program_fd) = wire::pidfd_open(program) else {
        let status = reap_until(program);
        kill_descendants();
        return status;
    };
    loop {
        let mut polls = [poll_in(program_fd.as_fd()), poll_in(socket)];
        // SAFETY: poll reads and writes the array we own.
        let ready = unsafe { libc::poll(polls.as_mut_ptr(), 2, -1) };
        if ready < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if polls[0].revents != 0 || ready < 0 {
            let mut status = 0;
            // SAFETY: waitpid of our own child into the integer we own.
            let reaped = unsafe { libc::waitpid(program, &mut status, 0) } == program;
            kill_descendants();
            return reaped.then_some(status);
        }
        if polls[1].revents != 0 {
            // SAFETY: kill of our own unreaped child.
            unsafe { libc::kill(program, libc::SIGKILL) };
            kill_descendants();
            return None;
        }
    }
}

/// Waits until an init is gone and reaps it.
fn reap(pid: libc::pid_t) {
    // SAFETY: waitpid of our own child (an init), blocking until it has exited.
    unsafe {
        while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

fn report_failure(socket: BorrowedFd<'_>, message: &str) {
    let mut bytes = vec![wire::FAILED];
    bytes.extend_from_slice(&EXIT_SETUP_FAILED.to_le_bytes());
    let room = wire::MAX_MESSAGE - bytes.len();
    let mut end = message.len().min(room);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    bytes.extend_from_slice(&message.as_bytes()[..end]);
    let _ = wire::send(socket, &bytes, &[]);
}

fn poll_in(fd: BorrowedFd<'_>) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

fn signal(pidfd: BorrowedFd<'_>, signal: libc::c_int) {
    // SAFETY: pidfd_send_signal with a pidfd we hold and no siginfo; ESRCH (gone) is fine.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
}

fn set_cloexec(fd: BorrowedFd<'_>) {
    // SAFETY: fcntl on an fd we hold.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
}

/// Raises the soft open-file limit to the hard one (hundreds of calls hold two fds each) and
/// returns the limit as it was, which programs get back.
fn raise_file_limit() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &raised);
        }
    }
    limit
}

/// A user namespace for the server's whole life where one lets it make PID namespaces (tried
/// in a child first, so a user namespace that would not help is never entered); else PID
/// namespaces directly (root), found out on the first call; else subreapers.
fn choose_containment() -> Containment {
    // SAFETY: fork in a single-threaded process; the child only makes system calls and exits.
    unsafe {
        let probe = libc::fork();
        if probe == 0 {
            let works = enter_user_namespace(0) && {
                let child = libc::syscall(
                    libc::SYS_clone,
                    libc::CLONE_NEWPID | libc::SIGCHLD,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                );
                if child == 0 {
                    libc::_exit(0);
                }
                child > 0 && libc::waitpid(child as libc::pid_t, std::ptr::null_mut(), 0) > 0
            };
            libc::_exit(if works { 0 } else { 1 });
        }
        let mut status = 0;
        let probed = probe > 0 && libc::waitpid(probe, &mut status, 0) == probe;
        if probed
            && libc::WIFEXITED(status)
            && libc::WEXITSTATUS(status) == 0
            && enter_user_namespace(0)
        {
            return Containment::PidNamespace;
        }
    }
    Containment::PidNamespace // without a user namespace: works for root; else falls back
}

/// Closes every fd but `keep` (close_range where the kernel has it, 5.9; else one by one).
fn keep_only(keep: &[libc::c_int]) {
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    keep.dedup();
    let mut first: libc::c_uint = 0;
    for &fd in keep.iter().chain(std::iter::once(&libc::c_int::MAX)) {
        let fd = fd as libc::c_uint;
        if fd > first {
            close_range(first, fd - 1);
        }
        first = fd.saturating_add(1);
    }
}

fn close_range(first: libc::c_uint, last: libc::c_uint) {
    // SAFETY: close_range closes fds in the range and touches no memory.
    let done = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } == 0;
    if done {
        return;
    }
    let open: Vec<libc::c_uint> = std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in open.into_iter().filter(|fd| (first..=last).contains(fd)) {
        // SAFETY: closing an fd in the range we were asked to close.
        unsafe { libc::close(fd as libc::c_int) };
    }
}
