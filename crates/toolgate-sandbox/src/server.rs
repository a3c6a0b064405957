//! The launcher server (`toolgate-sandbox --serve`): one small, single-threaded process per
//! toolgate process that starts sandboxed programs on request, so a call costs no `execve` of
//! a launcher and no namespace, view or filter set-up on its path.
//!
//! ```text
//! toolgate ── server (own process group, user and mount namespace) ── init (PID 1, session) ── program ── …
//! ```
//!
//! - It is started lazily by toolgate with a `SOCK_SEQPACKET` socket as its stdin and serves
//!   the requests of `wire.rs`. Policies are sent once per `Sandbox` and referred to by id.
//! - At its start it enters a user namespace and a mount namespace of its own (where the
//!   kernel allows it) and finds out what it can build there (`features.rs`).
//! - **Views** (`view.rs`): for each policy and the read roots of its calls' programs, the
//!   server builds the view once, in a child that then exits, and keeps the view's mount
//!   namespace (and the network namespace its calls share) open. A view whose paths change
//!   (inotify, see `opened.rs`; protected and hidden paths are looked at on every call) is
//!   dropped and built again.
//! - **Inits**: ahead of each call (when no call runs, or at once while calls come back to
//!   back: see [`MAKE_WAITING_AFTER`]), the server starts the call's init, cloned into new PID and
//!   IPC namespaces (and, for the proxy network, a network namespace), in the call's cgroup.
//!   The init makes itself a session leader, enters the view with a private copy of its mounts,
//!   mounts the call's own `/proc` and private tmpfs, applies the limits, builds the call's
//!   Landlock ruleset, gives up every capability, installs the seccomp filters, says it is
//!   ready, and waits (the server reads that while idle). A call's request gets an init made
//!   for its view (one is made on the spot when none waits), its standard streams and the
//!   program to run; the init makes the call's directory (renaming one it made ahead), hands
//!   the proxy's listener to toolgate, starts the program's process (which only applies the
//!   ruleset and executes, see `confine.rs`), and once the program has exited kills and reaps
//!   everything else in its namespace and reports how the program ended, with the limits it
//!   ran into, on the call's socket: that report ends the call for toolgate, which need not
//!   wait for the init's own exit (`serve.rs`; an init offered to toolgate starts the
//!   program's process before its call, and that process takes the call itself).
//!   toolgate gets the init's pid and a pidfd, and
//!   kills the group on timeout or abort exactly as for a child of its own. When toolgate
//!   closes the call's socket the server kills the init (ending the namespace) and only then
//!   reaps it and removes its cgroup, so the group id is never reused while toolgate may still
//!   signal it.
//! - Where no view can be built (user namespaces without capabilities), an init runs in the
//!   host's file system under Landlock alone, with its ruleset built per call; without PID
//!   namespaces it is a subreaper instead, which kills every leftover descendant when the
//!   program exits or the call's socket closes. A policy that needs the view is refused.
//! - It dies with toolgate (its socket reaches end of file, or toolgate's pidfd fires): it
//!   kills every call, waits for them, removes toolgate's private directories (`--clean`) and
//!   exits. Each init dies with the server (`PR_SET_PDEATHSIG`); toolgate then sees the call's
//!   socket close without a status and reports it.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use crate::confine::{fail, filters_of, install_filters, ChildStack, Grant, RulesetBuilder};
use crate::features::{self, Features};
use crate::init::{self, ServedInit, ViewHandles};
use crate::limits::{CallCgroup, Cgroups};
use crate::opened::{OpenPaths, PathHandle};
use crate::plan::{Confinement, Network, Plan};
use crate::protocol::kind::CallKind;
use crate::protocol::offer::{file_identity, Epoch, Guarded, Offer};
use crate::protocol::wire::{self, Reader};
use crate::protocol::words;
use crate::protocol::{ARG_CLEAN, ARG_PARENT, EXIT_SETUP_FAILED};
use crate::seccomp;
use crate::serve::{self, report_failure};
use crate::sys::poll_in;
use crate::tree::{block_signals, enter_user_namespace, reap};
use crate::view::{self, ViewSpec};

/// How many kinds of waiting inits (one per view) are kept.
const MAX_WAITING_KINDS: usize = 8;
/// How many views are kept built.
const MAX_VIEWS: usize = 32;
/// When the next waiting inits are made. Making one costs more CPU than the call it serves
/// (namespaces, view, limits, Landlock, seccomp), so while calls come one at a time it waits
/// until no call runs (a call's end makes them at once), not to slow the running call down;
/// a call that runs long gets them this long after its request.
const MAKE_WAITING_AFTER: std::time::Duration = std::time::Duration::from_millis(2);
/// How many requests in a row make the next init at once after a request that found none
/// ready (calls back to back: each would otherwise wait for its init's set-up).
const BUSY_REQUESTS: u32 = 8;
/// How many inits are offered to toolgate at a time at most (one per kind).
const MAX_OFFERED: usize = MAX_WAITING_KINDS;
/// How many used call cgroups are kept for the next calls (see `CallCgroup::emptied`).
const MAX_SPARE_CGROUPS: usize = 8;
/// How many ended calls wait for the server to be idle before they are cleaned up anyway (a
/// steady stream of requests never leaves it idle).
const MAX_ENDED: usize = 16;

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
    /// Whether its filters were compiled (false only where seccomp is missing, best-effort).
    seccomp: bool,
}

/// What a waiting init is for: a policy and a kind of call (the read roots of its program, in
/// its view, and the directory holding the call directories).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    policy: u64,
    kind: CallKind,
}

/// A built view.
struct View {
    mount: OwnedFd,
    /// The network namespace its calls without network share.
    network: Option<OwnedFd>,
    /// What its protected and hidden paths were when it was built: `(dev, inode)` or missing.
    guarded: Vec<(OsString, Option<(u64, u64)>)>,
    /// The paths it was built from (a change to one drops it).
    names: Vec<OsString>,
    last_used: u64,
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
    features: Features,
    cgroups: Cgroups,
    /// Cgroups of ended calls, emptied, for the next calls with the same limits.
    spare_cgroups: Vec<CallCgroup>,
    policies: HashMap<u64, Result<Policy, String>>,
    /// The compiled seccomp filters per network setting (off, on, proxy): the same for every
    /// policy with that setting, compiled for the first that needs them.
    filters: [Option<Vec<seccomp::Program>>; 3],
    paths: OpenPaths,
    views: HashMap<Key, View>,
    /// Inits made ahead of calls.
    waiting: Vec<Waiting>,
    /// Inits offered to toolgate (see `protocol::offer`): never killed by the server while
    /// offered (toolgate may be sending one a call), they become calls when they say `TAKEN`
    /// or end.
    offered: Vec<Waiting>,
    /// Raised before inotify events are read; `None` where no memfd could be made (then no
    /// init is offered).
    epoch: Option<Epoch>,
    /// The kinds of the last calls, most recent last: what to make inits ahead for.
    recent: Vec<Key>,
    calls: Vec<Call>,
    /// Calls whose init is gone, to reap and clean up when the server is idle (not between
    /// toolgate's next request and its answer).
    ended: Vec<Call>,
    clean: Option<PathBuf>,
    /// Counts inits (cgroup names) and view uses.
    counter: u64,
    /// Set to [`BUSY_REQUESTS`] by a request that found no ready init, counted down by each
    /// that found one (or took an offered one): while it is not zero, inits are made right
    /// after each request.
    busy: u32,
}

/// An init made ahead of its call.
struct Waiting {
    key: Key,
    pid: libc::pid_t,
    pidfd: OwnedFd,
    socket: OwnedFd,
    cgroup: Option<CallCgroup>,
    /// It built its ruleset itself (it has a view): no `RULES` per call.
    has_view: bool,
    /// Its mount namespace, once it said `READY` (see `Prepared::mount_namespace`).
    mount_namespace: Option<OwnedFd>,
    /// What it said of its set-up: nothing yet, `READY`, or why it could not set itself up.
    /// Heard while the server is idle, so that a call's request does not wait to read it.
    said: Option<Result<(), String>>,
    /// Once offered: the init's end of the call's socket (the server never reads it; once the
    /// call is taken, it is readable when toolgate closed its end, as a served call's).
    call_socket: Option<OwnedFd>,
}

/// What a waiting init says on its socket.
enum Said {
    Ready(Option<OwnedFd>),
    Failed(String),
    /// Anything else, or its end: it is gone.
    Gone,
}

impl Waiting {
    /// Reads what the init says of its set-up (`blocking`: waits for it); `None` when it has
    /// not said it yet.
    fn hear(&mut self, blocking: bool) -> Option<Said> {
        let message = match wire::recv(self.socket.as_fd(), blocking) {
            Ok(message) => message,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(_) => return Some(Said::Gone),
        };
        Some(match message.bytes.split_first() {
            Some((&wire::READY, _)) => Said::Ready(message.fds.into_iter().next()),
            Some((&wire::FAILED, text)) => Said::Failed(String::from_utf8_lossy(text).into_owned()),
            _ => Said::Gone,
        })
    }

    /// Keeps what the init said; false when it is gone.
    fn keep(&mut self, said: Said) -> bool {
        match said {
            Said::Ready(mount_namespace) => {
                self.mount_namespace = mount_namespace;
                self.said = Some(Ok(()));
            }
            Said::Failed(text) => self.said = Some(Err(text)),
            Said::Gone => return false,
        }
        true
    }
}

/// A started call.
struct Call {
    /// The server's end of the call's socket: readable once toolgate closed its end.
    socket: OwnedFd,
    init: OwnedFd,
    pid: libc::pid_t,
    cgroup: Option<CallCgroup>,
    /// toolgate is done with it: waiting for the init to be gone, then reaping it.
    closing: bool,
    /// Held (never read) until the call is cleaned up, so that the init's exit does not
    /// wait for the kernel to tear the namespace down.
    _mount_namespace: Option<OwnedFd>,
}

/// A call's request, as received.
struct Request {
    socket: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    stdin: Option<OwnedFd>,
    body: Vec<u8>,
}

fn filter_slot(network: Network) -> usize {
    match network {
        Network::Off => 0,
        Network::On => 1,
        Network::Proxy(_) => 2,
    }
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
        let own_pid = unsafe { libc::getpid() };
        let itself = wire::pidfd_open(own_pid).map_err(|err| format!("pidfd_open: {err}"))?;
        let devnull = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|err| format!("/dev/null: {err}"))?;
        let files = raise_file_limit();
        // Cgroups first: made from the host's view of /proc and /sys.
        let cgroups = Cgroups::prepare(own_pid, parent);
        let (containment, features) = choose_containment();
        Ok(Self {
            socket,
            parent: parent_fd,
            itself,
            devnull,
            mask,
            files,
            containment: Cell::new(containment),
            features,
            cgroups,
            spare_cgroups: Vec::new(),
            policies: HashMap::new(),
            filters: [None, None, None],
            paths: OpenPaths::new(),
            views: HashMap::new(),
            waiting: Vec::new(),
            offered: Vec::new(),
            epoch: Epoch::create().ok(),
            recent: Vec::new(),
            calls: Vec::new(),
            ended: Vec::new(),
            clean,
            counter: 0,
            busy: 0,
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
            // Waiting inits still setting themselves up, after the calls.
            let mut unheard = Vec::new();
            for waiting in self.waiting.iter().filter(|waiting| waiting.said.is_none()) {
                unheard.push(waiting.pid);
                polls.push(poll_in(waiting.socket.as_fd()));
            }
            // Offered inits, last: `TAKEN`, or their end.
            let offered: Vec<libc::pid_t> = self.offered.iter().map(|init| init.pid).collect();
            polls.extend(self.offered.iter().map(|init| poll_in(init.socket.as_fd())));
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
            // The poll's layout: three fds, the calls, the unheard waiting inits, the offered.
            let first_unheard = 3 + self.calls.len();
            let first_offered = first_unheard + unheard.len();
            self.hear_waiting(&unheard, &polls[first_unheard..first_offered]);
            if polls[2].revents != 0 {
                self.read_events();
            }
            // Calls first: their indices are those of this poll.
            let mut finished = Vec::new();
            for (index, poll) in polls[3..first_unheard].iter().enumerate() {
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
                self.ended.push(call);
                make_waiting_at = Some(std::time::Instant::now());
            }
            // After the calls: an offered init that spoke becomes one.
            if self.hear_offered(&offered, &polls[first_offered..]) {
                // As for a request: the next init of its kind after a moment.
                let after = if self.busy > 0 {
                    std::time::Duration::ZERO
                } else {
                    MAKE_WAITING_AFTER
                };
                make_waiting_at.get_or_insert(std::time::Instant::now() + after);
            }
            if self.ended.len() >= MAX_ENDED {
                self.tidy();
            }
            if self.offer_ready() {
                make_waiting_at.get_or_insert(std::time::Instant::now());
            }
            if polls[0].revents != 0 {
                if let Some(ending) = self.handle_requests() {
                    return ending;
                }
                let after = if self.busy > 0 {
                    std::time::Duration::ZERO
                } else {
                    MAKE_WAITING_AFTER
                };
                make_waiting_at = Some(std::time::Instant::now() + after);
            } else if make_waiting_at.is_some_and(|at| at <= std::time::Instant::now()) {
                // Quiet for a moment: make the inits the next calls will want, then clean up
                // after the calls that ended.
                make_waiting_at = None;
                self.make_waiting();
                self.tidy();
            }
        }
    }

    /// Hears the waiting inits `unheard` (their pids) whose poll says they spoke: set up, or
    /// why not; one that is gone is dropped.
    fn hear_waiting(&mut self, unheard: &[libc::pid_t], polls: &[libc::pollfd]) {
        for (&pid, poll) in unheard.iter().zip(polls) {
            if poll.revents == 0 {
                continue;
            }
            let Some(index) = self.waiting.iter().position(|waiting| waiting.pid == pid) else {
                continue;
            };
            let waiting = &mut self.waiting[index];
            let gone = waiting.hear(false).is_some_and(|said| !waiting.keep(said));
            if gone {
                let waiting = self.waiting.swap_remove(index);
                self.discard(waiting);
            }
        }
    }

    /// Hears the offered inits `offered` (their pids) whose poll says they spoke: `TAKEN`
    /// (toolgate sent one a call) or their end (toolgate let it go, or it died). Either way it
    /// is a call now, cleaned up once its pidfd says it is gone. True when one was taken.
    fn hear_offered(&mut self, offered: &[libc::pid_t], polls: &[libc::pollfd]) -> bool {
        let mut taken = false;
        for (&pid, poll) in offered.iter().zip(polls) {
            if poll.revents == 0 {
                continue;
            }
            let Some(index) = self.offered.iter().position(|init| init.pid == pid) else {
                continue;
            };
            let init = self.offered.swap_remove(index);
            let said_taken = matches!(wire::recv(init.socket.as_fd(), false), Ok(message) if message.bytes == [wire::TAKEN]);
            if said_taken {
                // A call that found its init ready, as a request that did (see `busy`).
                taken = true;
                self.busy = self.busy.saturating_sub(1);
                self.remember(&init.key);
            }
            // A taken call is watched as one through the server: its socket, until toolgate
            // closes its end. One that ended unused is only waited for.
            let (socket, closing) = match init.call_socket {
                Some(socket) if said_taken => (socket, false),
                _ => (init.socket, true),
            };
            self.calls.push(Call {
                socket,
                init: init.pidfd,
                pid: init.pid,
                cgroup: init.cgroup,
                closing,
                _mount_namespace: init.mount_namespace,
            });
        }
        taken
    }

    /// Whether inits of `key` are offered to toolgate: toolgate can check their freshness
    /// (an epoch and inotify here), they have a view (their ruleset built ahead) and are PID
    /// 1 of their namespace (their report is the end of the call's whole tree), and their
    /// calls need no listener handed up first.
    fn offers_kind(&self, key: &Key) -> bool {
        self.epoch.is_some()
            && self.paths.events_fd().is_some()
            && self.containment.get() == Containment::PidNamespace
            && matches!(self.policies.get(&key.policy), Some(Ok(policy))
                if !matches!(policy.rules.network, Network::Proxy(_))
                    && matches!(self.uses_view(&policy.rules), Ok(true)))
            && key.kind.offered_message().len() <= wire::MAX_MESSAGE
    }

    /// Offers toolgate, for each kind that has none offered, a waiting init that is ready,
    /// once the checks a request would make passed (events read, protected paths looked at).
    /// True when one was offered (a waiting init of its kind is then made again: calls that
    /// find the offer stale go through the server, which should not have to make one then).
    fn offer_ready(&mut self) -> bool {
        let ready: Vec<libc::pid_t> = self
            .waiting
            .iter()
            .filter(|init| {
                matches!(init.said, Some(Ok(())))
                    && init.has_view
                    && !self.offered.iter().any(|offered| offered.key == init.key)
                    && self.offers_kind(&init.key)
            })
            .map(|init| init.pid)
            .collect();
        if ready.is_empty() {
            return false;
        }
        self.read_events();
        let mut any = false;
        for pid in ready {
            if self.offered.len() >= MAX_OFFERED {
                break;
            }
            let Some(key) = self
                .waiting
                .iter()
                .find(|init| init.pid == pid)
                .map(|init| init.key.clone())
            else {
                continue; // its view went stale, and it with it
            };
            self.check_guarded(&key);
            let Some(guarded) = self.views.get(&key).map(|view| view.guarded.clone()) else {
                continue;
            };
            let Some(index) = self.waiting.iter().position(|init| init.pid == pid) else {
                continue;
            };
            if self.offered.iter().any(|offered| offered.key == key) {
                continue; // another of its kind, earlier in this round
            }
            let mut init = self.waiting.swap_remove(index);
            match self.send_offer(&init, guarded) {
                Ok(call_socket) => {
                    init.call_socket = Some(call_socket);
                    self.offered.push(init);
                    any = true;
                }
                Err(_) => self.discard(init),
            }
        }
        any
    }

    /// Tells `init` it is offered, with its end of the call's socket, and toolgate of the
    /// offer, with the other; returns the init's end (see `Waiting::call_socket`).
    fn send_offer(&self, init: &Waiting, guarded: Vec<Guarded>) -> std::io::Result<OwnedFd> {
        let (Some(epoch), Some(events)) = (&self.epoch, self.paths.events_fd()) else {
            return Err(std::io::Error::other("no epoch or no inotify"));
        };
        let (toolgate_end, init_end) = wire::socket_pair()?;
        wire::send(
            init.socket.as_fd(),
            &init.key.kind.offered_message(),
            &[init_end.as_fd()],
        )?;
        let offer = Offer {
            policy: init.key.policy,
            epoch: epoch.get(),
            pid: init.pid,
            kind: init.key.kind.clone(),
            guarded,
        };
        offer.send(
            self.socket.as_fd(),
            toolgate_end.as_fd(),
            init.pidfd.as_fd(),
            epoch,
            events,
        )?;
        Ok(init_end)
    }

    /// Reaps the inits of ended calls and keeps or removes their cgroups; their mount
    /// namespaces go (the kernel tears each down now, in this process).
    fn tidy(&mut self) {
        for call in std::mem::take(&mut self.ended) {
            reap(call.pid);
            if let Some(cgroup) = call.cgroup {
                self.release_cgroup(cgroup);
            }
        }
    }

    /// The cgroup of a call whose processes are all gone: kept for the next calls when it is
    /// as good as new, else removed.
    fn release_cgroup(&mut self, cgroup: CallCgroup) {
        if self.spare_cgroups.len() < MAX_SPARE_CGROUPS && cgroup.emptied() {
            self.spare_cgroups.push(cgroup);
        } else {
            cgroup.remove();
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
                    self.views.retain(|key, _| key.policy != id);
                    let (stale, kept): (Vec<Waiting>, Vec<Waiting>) = self
                        .waiting
                        .drain(..)
                        .partition(|waiting| waiting.key.policy == id);
                    self.waiting = kept;
                    for waiting in stale {
                        self.discard(waiting);
                    }
                    self.recent.retain(|key| key.policy != id);
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

    /// A policy to register, its filters compiled when they are the first of their network
    /// setting.
    fn policy(&mut self, rules: Confinement) -> Result<Policy, String> {
        let slot = &mut self.filters[filter_slot(rules.network)];
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
        Ok(Policy { rules, seccomp })
    }

    /// Starts a call; every failure is reported on the call's socket.
    fn spawn(&mut self, policy: u64, request: Request) {
        match self.policies.get(&policy) {
            Some(Ok(_)) => {}
            Some(Err(message)) => {
                let message = format!("the policy was not accepted: {message}");
                return report_failure(request.socket.as_fd(), &message);
            }
            None => {
                let message = format!("unknown policy {policy}");
                return report_failure(request.socket.as_fd(), &message);
            }
        }
        let plan = match Plan::parse(words::split(&request.body), true) {
            Ok(plan) => plan,
            Err(message) => return report_failure(request.socket.as_fd(), &message),
        };
        let key = Key {
            policy,
            kind: CallKind::new(&plan.confinement.read, plan.call_dir.as_deref()),
        };
        // A name changed since the last call is seen before any view or rule is made from it.
        self.read_events();
        self.check_guarded(&key);
        self.remember(&key);
        let Some(waiting) = self.assign(&key, &request) else {
            return;
        };
        if !waiting.has_view {
            let rules = match self.ruleset(policy, &plan) {
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
        }
        self.started(request.socket, waiting);
    }

    /// Hands the call's streams and program to a ready init of `key` (one made now when none
    /// waits; one that died meanwhile is replaced once).
    fn assign(&mut self, key: &Key, request: &Request) -> Option<Waiting> {
        for _ in 0..2 {
            let waiting = match self.take_waiting(key) {
                Some(waiting) => waiting,
                None => match self.make_init(key) {
                    Ok(waiting) => waiting,
                    Err(message) => {
                        report_failure(request.socket.as_fd(), &message);
                        return None;
                    }
                },
            };
            // The init says whether it could set itself up (usually heard already, see `run`).
            let mut waiting = waiting;
            self.busy = match waiting.said {
                None => BUSY_REQUESTS,
                Some(_) => self.busy.saturating_sub(1),
            };
            if waiting.said.is_none() {
                let said = waiting.hear(true).unwrap_or(Said::Gone);
                if !waiting.keep(said) {
                    self.discard(waiting);
                    continue;
                }
            }
            if let Some(Err(text)) = waiting.said.take() {
                self.discard(waiting);
                report_failure(
                    request.socket.as_fd(),
                    &format!("the call's sandbox could not be set up: {text}"),
                );
                return None;
            }
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
            self.discard(waiting);
        }
        report_failure(
            request.socket.as_fd(),
            "the call's init ended before it started",
        );
        None
    }

    /// Kills and reaps an init that will not run a call.
    fn discard(&mut self, waiting: Waiting) {
        signal(waiting.pidfd.as_fd(), libc::SIGKILL);
        reap(waiting.pid);
        if let Some(cgroup) = waiting.cgroup {
            self.release_cgroup(cgroup);
        }
    }

    /// Tells toolgate the call runs, and keeps it.
    fn started(&mut self, socket: OwnedFd, waiting: Waiting) {
        let started = wire::tagged_i32(wire::STARTED, waiting.pid);
        let mut call = Call {
            socket,
            init: waiting.pidfd,
            pid: waiting.pid,
            cgroup: waiting.cgroup,
            closing: false,
            _mount_namespace: waiting.mount_namespace,
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

    /// The call's Landlock ruleset for an init without a view: the policy's paths and the
    /// program's read roots from the open paths, the call's private directory opened now.
    fn ruleset(&mut self, policy: u64, plan: &Plan) -> Result<Option<OwnedFd>, String> {
        let Some(Ok(Policy { rules, .. })) = self.policies.get(&policy) else {
            return Err(format!("unknown policy {policy}"));
        };
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
        if let Some(call_dir) = &plan.call_dir {
            init::make_host_call_dir(call_dir)?;
        }
        for path in plan.confinement.write.iter().chain(&plan.call_dir) {
            builder.add_path(path, Grant::Write)?;
        }
        builder.finish(rules.best_effort)
    }

    /// Reads the inotify events and drops every view built from a path that changed (with
    /// the inits made for it).
    fn read_events(&mut self) {
        match self.paths.events_fd() {
            Some(events) if wire::ready(events) => {}
            _ => return,
        }
        // Raised before the queue is read (see `protocol::offer`): offers made before no
        // longer count as fresh.
        if let Some(epoch) = &self.epoch {
            epoch.raise();
        }
        let dropped = self.paths.read_events();
        if dropped.is_empty() {
            return;
        }
        let stale: Vec<Key> = self
            .views
            .iter()
            .filter(|(_, view)| view.names.iter().any(|name| dropped.contains(name)))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            self.drop_view(&key);
        }
    }

    /// Drops the view of `key` when one of its protected or hidden paths is not what it was
    /// (made, removed or replaced since), so that the next init gets one that mounts it.
    fn check_guarded(&mut self, key: &Key) {
        let stale = self.views.get(key).is_some_and(|view| {
            view.guarded
                .iter()
                .any(|(path, identity)| file_identity(path) != *identity)
        });
        if stale {
            self.drop_view(key);
        }
    }

    fn drop_view(&mut self, key: &Key) {
        self.views.remove(key);
        let (stale, kept): (Vec<Waiting>, Vec<Waiting>) = self
            .waiting
            .drain(..)
            .partition(|waiting| &waiting.key == key);
        self.waiting = kept;
        for waiting in stale {
            self.discard(waiting);
        }
    }

    fn remember(&mut self, key: &Key) {
        self.recent.retain(|known| known != key);
        self.recent.push(key.clone());
        if self.recent.len() > MAX_WAITING_KINDS {
            let forgotten = self.recent.remove(0);
            let (stale, kept): (Vec<Waiting>, Vec<Waiting>) = self
                .waiting
                .drain(..)
                .partition(|waiting| waiting.key == forgotten);
            self.waiting = kept;
            for waiting in stale {
                self.discard(waiting);
            }
        }
    }

    fn take_waiting(&mut self, key: &Key) -> Option<Waiting> {
        let index = self
            .waiting
            .iter()
            .position(|waiting| &waiting.key == key)?;
        Some(self.waiting.swap_remove(index))
    }

    /// One waiting init for each kind recently asked for, and one more to offer toolgate
    /// where its kind is offered. (Dropping a waiting init closes its socket: it exits.)
    fn make_waiting(&mut self) {
        for key in self.recent.clone() {
            if !self.policies.contains_key(&key.policy) {
                continue;
            }
            let wanted = 1 + usize::from(self.offers_kind(&key));
            let made = self
                .waiting
                .iter()
                .chain(&self.offered)
                .filter(|waiting| waiting.key == key)
                .count();
            for _ in made..wanted {
                match self.make_init(&key) {
                    Ok(waiting) => self.waiting.push(waiting),
                    Err(_) => return, // made on demand, with the error reported, by the next call
                }
            }
        }
    }

    /// Whether calls of `rules` get a view here; `Err` when they need one and none can be
    /// built.
    fn uses_view(&self, rules: &Confinement) -> Result<bool, String> {
        match &self.features.view {
            Ok(()) if !rules.without.view => Ok(true),
            Ok(()) => Ok(false),
            Err(why) if rules.require_view => Err(format!(
                "this policy needs the sandbox's own view of the file system (protected or hidden paths inside the roots, or the proxy network), which cannot be built here: {why}"
            )),
            Err(_) => Ok(false),
        }
    }

    /// The view of `key`, built when there is none.
    fn view(&mut self, key: &Key) -> Result<&View, String> {
        self.counter += 1;
        let counter = self.counter;
        if !self.views.contains_key(key) {
            if self.views.len() >= MAX_VIEWS {
                if let Some(oldest) = self
                    .views
                    .iter()
                    .min_by_key(|(_, view)| view.last_used)
                    .map(|(key, _)| key.clone())
                {
                    self.drop_view(&oldest);
                }
            }
            let view = self.build_view(key)?;
            self.views.insert(key.clone(), view);
        }
        let view = self.views.get_mut(key).expect("just made");
        view.last_used = counter;
        Ok(view)
    }

    /// Builds the view of `key` in a child that enters a new mount namespace (and, for calls
    /// without network, a network namespace they share), builds it, and hands both back.
    fn build_view(&mut self, key: &Key) -> Result<View, String> {
        let Some(Ok(policy)) = self.policies.get(&key.policy) else {
            return Err(format!("unknown policy {}", key.policy));
        };
        let rules = &policy.rules;
        let spec = ViewSpec {
            entries: view::entries_of(rules, &key.kind.reads),
            private_dir: key.kind.private_dir.clone(),
            host_proc: !self.features.fresh_proc,
        };
        let shared_network = rules.network == Network::Off
            && self.features.network_namespace
            && !rules.without.network_namespace;
        let guarded: Vec<(OsString, Option<(u64, u64)>)> = rules
            .protect
            .iter()
            .chain(&rules.hide)
            .map(|path| (path.clone(), file_identity(path)))
            .collect();
        let names: Vec<OsString> = rules
            .read
            .iter()
            .chain(&key.kind.reads)
            .chain(&rules.write)
            .chain(&rules.devices)
            .chain(&rules.protect)
            .chain(&rules.hide)
            .cloned()
            .collect();
        // Watched from now on: a change after this point drops the view.
        for name in &names {
            let _ = self.paths.get(name);
        }
        let (ours, theirs) = wire::socket_pair().map_err(|err| format!("socketpair: {err}"))?;
        // SAFETY: fork in a single-threaded process; the child builds and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            drop(ours);
            build_in_child(&spec, shared_network, theirs.as_fd());
        }
        drop(theirs);
        if child < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        let answer = wire::recv(ours.as_fd(), true);
        reap(child);
        let message = answer.map_err(|err| format!("building the view: {err}"))?;
        match message.bytes.split_first() {
            Some((&wire::READY, _)) => {
                let mut fds = message.fds.into_iter();
                let mount = fds
                    .next()
                    .ok_or("building the view: no namespace came back")?;
                Ok(View {
                    mount,
                    network: fds.next(),
                    guarded,
                    names,
                    last_used: 0,
                })
            }
            Some((&wire::FAILED, text)) => Err(format!(
                "the sandbox's view could not be built: {}",
                String::from_utf8_lossy(text)
            )),
            _ => Err("the sandbox's view could not be built: its builder ended".into()),
        }
    }

    /// Starts an init for `key`: PID 1 of new PID and IPC namespaces (or a subreaper), in
    /// the call's cgroup, setting itself up to report `READY`.
    fn make_init(&mut self, key: &Key) -> Result<Waiting, String> {
        let rules = match self.policies.get(&key.policy) {
            Some(Ok(policy)) => policy.rules.clone(),
            Some(Err(message)) => return Err(format!("the policy was not accepted: {message}")),
            None => return Err(format!("unknown policy {}", key.policy)),
        };
        let has_view = self.uses_view(&rules)?;
        if has_view {
            self.view(key)?;
        }
        let own_network = match rules.network {
            Network::Proxy(_) if !self.features.network_namespace => {
                return Err("the proxy network needs a network namespace of the call's own, which this kernel does not allow here (unprivileged user namespaces restricted?)".into())
            }
            Network::Proxy(_) => true,
            _ => false,
        };
        self.counter += 1;
        let spare = self
            .spare_cgroups
            .iter()
            .position(|cgroup| cgroup.serves(&rules.limits));
        let cgroup = if rules.without.limits {
            None
        } else if let Some(index) = spare {
            Some(self.spare_cgroups.swap_remove(index))
        } else {
            self.cgroups.for_call(self.counter, &rules.limits)?
        };
        // The paths of the ruleset, open here for the init to build it from (an init with a
        // view builds it ahead; one without gets it per call).
        let mut handles: Vec<(PathHandleOwned, Grant)> = Vec::new();
        if has_view {
            for (paths, grant) in [
                (&rules.read, Grant::Read),
                (&key.kind.reads, Grant::Read),
                (&rules.write, Grant::Write),
                (&rules.devices, Grant::Device),
            ] {
                for path in paths {
                    if let Some(handle) = self.paths.get(path) {
                        handles.push((PathHandleOwned::from(handle), grant));
                    }
                }
            }
        }
        let (ours, theirs) = wire::socket_pair().map_err(|err| format!("socketpair: {err}"))?;
        let seccomp = matches!(self.policies.get(&key.policy), Some(Ok(policy)) if policy.seccomp);
        let view = if has_view { self.views.get(key) } else { None };
        let setup = InitSetup {
            rules: &rules,
            seccomp,
            view: view.map(|view| ViewHandles {
                mount: view.mount.as_fd(),
                network: view.network.as_ref().map(AsFd::as_fd),
                fresh_proc: self.features.fresh_proc,
                private_dir: key.kind.private_dir.as_deref(),
            }),
            own_network,
            ipc: self.features.ipc_namespace && !rules.without.ipc,
            cgroup: cgroup.as_ref(),
            grants: handles
                .iter()
                .map(|(handle, grant)| (handle.fd(), handle.directory(), *grant))
                .collect(),
        };
        let pid = self.clone_init(&setup, theirs.as_fd());
        drop(theirs);
        drop(handles);
        let pid = match pid {
            Ok(pid) => pid,
            Err(message) => {
                if let Some(cgroup) = &cgroup {
                    cgroup.remove();
                }
                return Err(message);
            }
        };
        // The init enters its cgroup itself (see `init::prepare_served`).
        let pidfd = wire::pidfd_open(pid).map_err(|err| format!("pidfd_open: {err}"));
        match pidfd {
            Ok(pidfd) => Ok(Waiting {
                key: key.clone(),
                pid,
                pidfd,
                socket: ours,
                cgroup,
                has_view,
                mount_namespace: None,
                said: None,
                call_socket: None,
            }),
            Err(message) => {
                // SAFETY: kill of our own child; reaped right after.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                reap(pid);
                if let Some(cgroup) = &cgroup {
                    cgroup.remove();
                }
                Err(message)
            }
        }
    }

    fn clone_init(
        &self,
        setup: &InitSetup<'_>,
        socket: BorrowedFd<'_>,
    ) -> Result<libc::pid_t, String> {
        let mut flags = libc::SIGCHLD;
        if setup.ipc {
            flags |= libc::CLONE_NEWIPC;
        }
        if setup.own_network {
            flags |= libc::CLONE_NEWNET;
        }
        if self.containment.get() == Containment::PidNamespace {
            // SAFETY: a fork-like clone (no new stack, no shared memory) in a single-threaded
            // process: the child may run any code.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone,
                    flags | libc::CLONE_NEWPID,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                )
            } as libc::pid_t;
            if pid == 0 {
                self.init(setup, socket, true);
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
        // SAFETY: as above.
        let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) }
            as libc::pid_t;
        if pid == 0 {
            self.init(setup, socket, false);
        }
        if pid < 0 {
            return Err(format!("clone: {}", std::io::Error::last_os_error()));
        }
        Ok(pid)
    }

    /// A call's init: set up ahead of the call, it says so, waits for its call, starts the
    /// program and reports how it ended on the call's socket.
    fn init(&self, setup: &InitSetup<'_>, socket: BorrowedFd<'_>, namespace: bool) -> ! {
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
            // A session of its own: the call's process group, and no controlling terminal.
            libc::setsid();
        }
        // The epoch is the server's to raise, not an init's.
        if let Some(epoch) = &self.epoch {
            epoch.unmap_in_child();
        }
        let prepared = init::prepare_served(&ServedInit {
            rules: setup.rules,
            view: setup.view.as_ref().map(|view| ViewHandles {
                mount: view.mount,
                network: view.network,
                fresh_proc: view.fresh_proc,
                private_dir: view.private_dir,
            }),
            own_network: setup.own_network,
            cgroup: setup.cgroup,
            grants: &setup.grants,
        });
        // Nothing of the server's or of calls stays open here: another call's pipe held by
        // this init would keep that call's output open.
        let mut keep = vec![socket.as_raw_fd(), self.devnull.as_raw_fd()];
        if let Ok(prepared) = &prepared {
            keep.extend(prepared.fds());
        }
        keep_only(&keep);
        // Fds 0 to 2 taken, the call's streams arrive above them (see `Program`).
        for fd in 0..3 {
            // SAFETY: dup2 of an fd we hold onto a free slot.
            unsafe { libc::dup2(self.devnull.as_raw_fd(), fd) };
        }
        // The filter the program inherits (installing it costs more than the rest of a start).
        let filters = match &self.filters[filter_slot(setup.rules.network)] {
            Some(filters) if setup.seccomp => filters.as_slice(),
            _ => &[],
        };
        let ready = prepared.and_then(|prepared| {
            install_filters(filters, setup.rules.best_effort)?;
            let stack = ChildStack::new().map_err(|err| format!("the program's stack: {err}"))?;
            Ok((prepared, stack))
        });
        let code = match ready {
            Ok((prepared, stack)) => {
                let mount = prepared.mount_namespace.as_ref().map(AsFd::as_fd);
                if wire::send(socket, &[wire::READY], mount.as_slice()).is_err() {
                    EXIT_SETUP_FAILED
                } else {
                    let init = serve::Init {
                        socket,
                        namespace,
                        prepared: &prepared,
                        rules: setup.rules,
                        devnull: self.devnull.as_fd(),
                        mask: &self.mask,
                        files: self.files,
                    };
                    match init.serve(stack) {
                        Ok(()) => 0,
                        Err(()) => EXIT_SETUP_FAILED,
                    }
                }
            }
            Err(message) => {
                let mut bytes = vec![wire::FAILED];
                bytes.extend_from_slice(message.as_bytes());
                bytes.truncate(wire::MAX_MESSAGE);
                let _ = wire::send(socket, &bytes, &[]);
                EXIT_SETUP_FAILED
            }
        };
        // SAFETY: _exit never returns. In a namespace this ends every process left in it.
        unsafe { libc::_exit(code) }
    }

    /// Kills every call and waiting init and waits until each is gone; when toolgate is gone
    /// (`clean`), removes its private directories.
    fn shut_down(&mut self, clean: bool) {
        for index in 0..self.calls.len() {
            if !self.calls[index].closing {
                self.close(index);
            }
        }
        self.ended.append(&mut self.calls);
        self.tidy();
        for waiting in std::mem::take(&mut self.waiting) {
            self.discard(waiting);
        }
        for offered in std::mem::take(&mut self.offered) {
            self.discard(offered);
        }
        for cgroup in self.spare_cgroups.drain(..) {
            cgroup.remove();
        }
        self.cgroups.remove();
        if let Some(dir) = self.clean.as_ref().filter(|_| clean) {
            crate::cleanup::remove_tree(dir);
        }
    }
}

/// What `make_init` hands a new init (in the server's memory, which the init gets a copy of).
struct InitSetup<'a> {
    rules: &'a Confinement,
    seccomp: bool,
    view: Option<ViewHandles<'a>>,
    own_network: bool,
    ipc: bool,
    cgroup: Option<&'a CallCgroup>,
    grants: Vec<(BorrowedFd<'a>, bool, Grant)>,
}

/// A path's fd for the init's ruleset: one kept open by the server, or opened for this init.
enum PathHandleOwned {
    Kept(libc::c_int, bool),
    Once(OwnedFd, bool),
}

impl PathHandleOwned {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            // SAFETY: an fd the server keeps open (in `OpenPaths`) at least until the init is
            // cloned, which is when this is used.
            PathHandleOwned::Kept(fd, _) => unsafe { BorrowedFd::borrow_raw(*fd) },
            PathHandleOwned::Once(fd, _) => fd.as_fd(),
        }
    }
}

impl From<PathHandle<'_>> for PathHandleOwned {
    fn from(handle: PathHandle<'_>) -> Self {
        let directory = handle.is_directory();
        match handle {
            PathHandle::Kept(fd, _) => PathHandleOwned::Kept(fd.as_raw_fd(), directory),
            PathHandle::Once(fd, _) => PathHandleOwned::Once(fd, directory),
        }
    }
}

impl PathHandleOwned {
    fn directory(&self) -> bool {
        match self {
            PathHandleOwned::Kept(_, directory) | PathHandleOwned::Once(_, directory) => *directory,
        }
    }
}

/// In the view builder's child: a new mount namespace (and network namespace), the view
/// built in it, both handed back as `READY` + [mount, network?], or `FAILED message`.
fn build_in_child(spec: &ViewSpec, network: bool, socket: BorrowedFd<'_>) -> ! {
    let result = (|| -> Result<(OwnedFd, Option<OwnedFd>), String> {
        let mut flags = libc::CLONE_NEWNS;
        if network {
            flags |= libc::CLONE_NEWNET;
        }
        crate::sys::unshare(flags).map_err(|err| format!("a mount namespace: {err}"))?;
        let mount = crate::sys::own_namespace(c"mnt").map_err(|err| err.to_string())?;
        let net = if network {
            Some(crate::sys::own_namespace(c"net").map_err(|err| err.to_string())?)
        } else {
            None
        };
        view::build(spec, &[])?;
        Ok((mount, net))
    })();
    let sent = match result {
        Ok((mount, net)) => {
            let mut fds = vec![mount.as_fd()];
            fds.extend(net.as_ref().map(AsFd::as_fd));
            wire::send(socket, &[wire::READY], &fds)
        }
        Err(message) => {
            let mut bytes = vec![wire::FAILED];
            bytes.extend_from_slice(message.as_bytes());
            bytes.truncate(wire::MAX_MESSAGE);
            wire::send(socket, &bytes, &[])
        }
    };
    // SAFETY: _exit never returns.
    unsafe { libc::_exit(i32::from(sent.is_err())) }
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
/// in a child first, so a user namespace that would not help is never entered), and a mount
/// namespace of its own in it (owned by that user namespace, so that inits may mount in
/// theirs); then what can be built there. Without a user namespace: PID namespaces directly
/// (root), found out on the first call; else subreapers.
fn choose_containment() -> (Containment, Features) {
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
            let features = match crate::sys::unshare(libc::CLONE_NEWNS) {
                Ok(()) => {
                    // Host mounts still propagate in; nothing made here propagates out.
                    libc::mount(
                        std::ptr::null(),
                        c"/".as_ptr(),
                        std::ptr::null(),
                        libc::MS_SLAVE | libc::MS_REC,
                        std::ptr::null(),
                    );
                    features::probe()
                }
                Err(err) => Features::none(&format!("a mount namespace cannot be made: {err}")),
            };
            return (Containment::PidNamespace, features);
        }
    }
    // Without a user namespace: works for root; else falls back. Root may still build views.
    // SAFETY: geteuid has no preconditions.
    let features = if unsafe { libc::geteuid() } == 0 {
        features::probe()
    } else {
        Features::none("user namespaces cannot be made here")
    };
    (Containment::PidNamespace, features)
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
    let range = first as i64..=last as i64;
    for fd in crate::sys::open_fds()
        .into_iter()
        .filter(|&fd| range.contains(&i64::from(fd)))
    {
        // SAFETY: closing an fd in the range we were asked to close.
        unsafe { libc::close(fd) };
    }
}
