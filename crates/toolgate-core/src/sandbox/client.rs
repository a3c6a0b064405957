//! toolgate's side of the launcher server (`toolgate-sandbox --serve`, the `server` module of
//! the toolgate-sandbox crate): starting it once per process (and again after it died),
//! registering a sandbox's policy with it, and starting calls. The messages are those of
//! `toolgate_sandbox::protocol::wire`.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use toolgate_sandbox::protocol::kind::CallKind;
use toolgate_sandbox::protocol::offer::{Epoch, Offer, Received};
use toolgate_sandbox::protocol::wire::{self, Reader};
use toolgate_sandbox::protocol::{words, ARG_CLEAN, ARG_PARENT, ARG_SERVE, EXIT_SETUP_FAILED};

/// How long a request may wait for the server's answer (it answers after one `clone`).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// How many offered inits are kept at most (the server offers one per kind, for eight kinds).
const MAX_OFFERS: usize = 16;

/// A running launcher server.
#[derive(Debug)]
pub(crate) struct Server {
    socket: OwnedFd,
    process: Mutex<Child>,
    launcher: PathBuf,
    generation: u64,
    gone: AtomicBool,
    offers: Mutex<Offers>,
}

/// The inits the server offered (see `toolgate_sandbox::protocol::offer`), with what toolgate
/// checks their freshness by: the server's epoch and inotify descriptor (from the first offer).
#[derive(Debug, Default)]
struct Offers {
    inits: Vec<Offered>,
    epoch: Option<Epoch>,
    events: Option<OwnedFd>,
}

impl Offers {
    /// Takes in every offer waiting on the server's socket.
    fn receive(&mut self, socket: BorrowedFd<'_>) {
        while let Ok(message) = wire::recv(socket, false) {
            if message.bytes.is_empty() {
                return; // the server is gone
            }
            let Some(Received {
                offer,
                socket,
                pidfd,
                epoch,
                events,
            }) = Offer::receive(&message.bytes, message.fds)
            else {
                continue; // not an offer: nothing else comes on this socket after READY
            };
            if self.epoch.is_none() {
                self.epoch = Epoch::open(epoch).ok();
                self.events = Some(events);
            }
            if self.inits.len() >= MAX_OFFERS {
                self.inits.remove(0); // the oldest goes: its init exits
            }
            self.inits.push(Offered {
                offer,
                socket,
                pidfd,
            });
        }
    }

    /// The offered init for a call of `policy` and `kind`, when its view is still fresh; one
    /// that is not is dropped (its init exits, the server makes another).
    fn take(&mut self, policy: u64, kind: &CallKind) -> Option<Offered> {
        let index = self
            .inits
            .iter()
            .position(|init| init.offer.policy == policy && init.offer.kind == *kind)?;
        let init = self.inits.swap_remove(index);
        let (Some(epoch), Some(events)) = (&self.epoch, &self.events) else {
            return None;
        };
        init.offer
            .still_fresh(events.as_fd(), epoch)
            .then_some(init)
    }
}

/// An offered init: the offer, toolgate's end of the call's socket, the init's pidfd.
#[derive(Debug)]
struct Offered {
    offer: Offer,
    socket: OwnedFd,
    pidfd: OwnedFd,
}

static CURRENT: Mutex<Option<Arc<Server>>> = Mutex::new(None);
/// Launchers whose server did not start (an older launcher, a kernel without what it needs):
/// their calls use the one-shot launcher.
static NO_SERVER: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static GENERATION: AtomicU64 = AtomicU64::new(1);
static POLICY_IDS: AtomicU64 = AtomicU64::new(1);

impl Server {
    fn pid(&self) -> u32 {
        lock(&self.process).id()
    }

    /// Marks the server dead (its socket failed or it stopped answering): the next call
    /// starts another; this one is killed and reaped.
    fn retire(&self) {
        if self.gone.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut process = lock(&self.process);
        if let Ok(None) = process.try_wait() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

impl Drop for Server {
    /// The last user is gone (a newer server took over): tell the server to quit (it leaves
    /// the private directories alone: toolgate still runs) and reap it.
    fn drop(&mut self) {
        let _ = wire::send(self.socket.as_fd(), &[wire::QUIT], &[]);
        let process = self.process.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = process.wait();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The process's server for `launcher`, started when there is none (or it died), told to
/// remove `clean` when toolgate is gone. `None` where a server cannot run (no pidfds: Linux
/// before 5.3) or cannot be started: calls then use the one-shot launcher, which reports its
/// own failure.
fn server(launcher: &Path, clean: Option<&Path>) -> Option<Arc<Server>> {
    let mut current = lock(&CURRENT);
    if let Some(server) = current.as_ref() {
        if !server.gone.load(Ordering::Relaxed) && server.launcher == launcher {
            return Some(Arc::clone(server));
        }
    }
    if lock(&NO_SERVER).iter().any(|known| known == launcher) {
        return None;
    }
    match start(launcher, clean) {
        Ok(server) => {
            let server = Arc::new(server);
            *current = Some(Arc::clone(&server));
            Some(server)
        }
        Err(_) => {
            lock(&NO_SERVER).push(launcher.to_path_buf());
            None
        }
    }
}

fn start(launcher: &Path, clean: Option<&Path>) -> io::Result<Server> {
    // SAFETY: getpid has no preconditions; pidfd_open is only asked whether it exists.
    wire::pidfd_open(unsafe { libc::getpid() })?;
    let (ours, theirs) = wire::socket_pair()?;
    let mut command = Command::new(launcher);
    command
        .arg(ARG_SERVE)
        .arg(ARG_PARENT)
        .arg(std::process::id().to_string());
    if let Some(dir) = clean {
        command.arg(ARG_CLEAN).arg(dir);
    }
    let mut process = command
        .env_clear()
        .current_dir("/")
        .process_group(0)
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    // The command still holds the server's end of the socket; once that is closed, a server
    // that exits shows as the socket's end of file.
    drop(command);
    if !wait_readable(ours.as_fd(), ANSWER_TIMEOUT)
        || !matches!(wire::recv(ours.as_fd(), false), Ok(message) if message.bytes == [wire::READY, wire::VERSION])
    {
        let _ = process.kill();
        let _ = process.wait();
        return Err(io::Error::other("the sandbox server did not start"));
    }
    Ok(Server {
        socket: ours,
        process: Mutex::new(process),
        launcher: launcher.to_path_buf(),
        generation: GENERATION.fetch_add(1, Ordering::Relaxed),
        gone: AtomicBool::new(false),
        offers: Mutex::default(),
    })
}

/// A sandbox's registration with a server: `(generation, policy id)`.
pub(crate) type Registration = Mutex<Option<(u64, u64)>>;

/// The pids of the inits the current server offered for `registration`'s policy and toolgate
/// holds now (see [`crate::Sandbox::offered_inits`]).
pub(crate) fn offered_inits(registration: &Registration) -> Vec<u32> {
    let Some((generation, id)) = *lock(registration) else {
        return Vec::new();
    };
    let current = lock(&CURRENT).clone();
    let Some(server) = current.filter(|server| server.generation == generation) else {
        return Vec::new();
    };
    let mut offers = lock(&server.offers);
    offers.receive(server.socket.as_fd());
    offers
        .inits
        .iter()
        .filter(|init| init.offer.policy == id)
        .map(|init| init.offer.pid as u32)
        .collect()
}

/// Tells the server that a policy is no longer used (its `Sandbox` is dropped).
pub(crate) fn forget(registration: &Registration) {
    let Some((generation, id)) = *lock(registration) else {
        return;
    };
    let current = lock(&CURRENT).clone();
    if let Some(server) = current.filter(|server| server.generation == generation) {
        // Its offered inits go first (the server leaves offered inits to toolgate).
        let mut offers = lock(&server.offers);
        offers.receive(server.socket.as_fd());
        offers.inits.retain(|init| init.offer.policy != id);
        drop(offers);
        let _ = wire::send(server.socket.as_fd(), &wire::forget(id), &[]);
    }
}

/// The standard streams of a call, the child's ends.
pub(crate) struct CallStdio {
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Why the server did not start a call.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No server can run here: use the one-shot launcher.
    Unavailable,
    /// The launcher's own failure: its exit code and message (as the one-shot would report).
    Failed(i32, String),
    /// The server died or hung; it is replaced for the next call.
    Broken(String),
}

/// Starts a call through the server. `policy` is the sandbox's fixed launcher arguments,
/// `call` the call's own (paths, working directory, environment, `--`, program and arguments)
/// as one word list; `clean` is what a server started now removes when toolgate is gone.
/// With `listener`, the call's init hands up the egress proxy's listener, which the answer
/// waits for.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spawn(
    launcher: &Path,
    registration: &Registration,
    policy: &[OsString],
    call: &[u8],
    kind: &CallKind,
    stdio: CallStdio,
    clean: Option<&Path>,
    listener: bool,
) -> Result<Served, Refusal> {
    // A server found dead while sending is replaced once: nothing reached it, so nothing ran.
    for _ in 0..2 {
        let server = server(launcher, clean).ok_or(Refusal::Unavailable)?;
        if !listener {
            if let Some(served) = offered_call(&server, registration, kind, call, &stdio) {
                return Ok(served);
            }
        }
        match request(&server, registration, policy, call, &stdio) {
            Ok(socket) => return answer(server, socket, listener),
            Err(err) if is_gone(&err) => server.retire(),
            Err(err) => {
                return Err(Refusal::Broken(format!(
                    "a request to the sandbox server failed: {err}"
                )))
            }
        }
    }
    Err(Refusal::Broken(
        "the sandbox server ended twice in a row before it could start the program".into(),
    ))
}

fn is_gone(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN)
    )
}

/// Sends the call straight to an init the server offered for its kind, when one is there and
/// its view is still fresh (see `toolgate_sandbox::protocol::offer`); `None`: send it through
/// the server.
fn offered_call(
    server: &Arc<Server>,
    registration: &Registration,
    kind: &CallKind,
    call: &[u8],
    stdio: &CallStdio,
) -> Option<Served> {
    let policy = match *lock(registration) {
        Some((generation, id)) if generation == server.generation => id,
        _ => return None,
    };
    let init = {
        let mut offers = lock(&server.offers);
        offers.receive(server.socket.as_fd());
        offers.take(policy, kind)?
    };
    let mut flags = 0;
    let mut fds = vec![stdio.stdout.as_fd(), stdio.stderr.as_fd()];
    if let Some(stdin) = &stdio.stdin {
        flags |= wire::HAS_STDIN;
        fds.push(stdin.as_fd());
    }
    // An init that died meanwhile refuses it: the call goes through the server.
    wire::send_with_body(init.socket.as_fd(), vec![wire::CALL, flags], 1, call, &fds).ok()?;
    Some(Served {
        reported: false,
        pid: init.offer.pid,
        init: init.pidfd,
        socket: init.socket,
        server: Arc::clone(server),
        early: None,
        listener: None,
        limits: Vec::new(),
    })
}

/// Registers the policy when this server does not know it yet, and sends the call; returns
/// toolgate's end of the call's socket.
fn request(
    server: &Server,
    registration: &Registration,
    policy: &[OsString],
    call: &[u8],
    stdio: &CallStdio,
) -> io::Result<OwnedFd> {
    let id = {
        let mut registered = lock(registration);
        match *registered {
            Some((generation, id)) if generation == server.generation => id,
            _ => {
                let id = POLICY_IDS.fetch_add(1, Ordering::Relaxed);
                let head = wire::request_head(wire::POLICY, id, 0);
                let body = words::join(policy);
                wire::send_with_body(
                    server.socket.as_fd(),
                    head,
                    wire::REQUEST_FLAGS_AT,
                    &body,
                    &[],
                )?;
                *registered = Some((server.generation, id));
                id
            }
        }
    };
    let (ours, theirs) = wire::socket_pair()?;
    let mut fds = vec![theirs.as_fd(), stdio.stdout.as_fd(), stdio.stderr.as_fd()];
    let mut flags = 0;
    if let Some(stdin) = &stdio.stdin {
        flags |= wire::HAS_STDIN;
        fds.push(stdin.as_fd());
    }
    let head = wire::request_head(wire::SPAWN, id, flags);
    wire::send_with_body(
        server.socket.as_fd(),
        head,
        wire::REQUEST_FLAGS_AT,
        call,
        &fds,
    )?;
    Ok(ours)
}

/// Whether `fd` becomes readable (or hangs up) within `limit`.
fn wait_readable(fd: BorrowedFd<'_>, limit: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let timeout = limit.as_millis() as libc::c_int;
    loop {
        // SAFETY: poll reads and writes the one pollfd we own.
        let ready = unsafe { libc::poll(&mut poll, 1, timeout) };
        if ready >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return ready > 0;
        }
    }
}

/// Waits for the server's answer to a call, and with `listener` for the init's listener.
/// (The call's init may report the program's exit before the server got to say it started the
/// init: that report is kept for later.)
fn answer(server: Arc<Server>, socket: OwnedFd, listener: bool) -> Result<Served, Refusal> {
    let pid = server.pid();
    let mut early = None;
    let mut started: Option<(libc::pid_t, OwnedFd)> = None;
    let mut received: Option<OwnedFd> = None;
    let mut limits = Vec::new();
    loop {
        if let Some((child, init)) = started.take() {
            if !listener || received.is_some() || early.is_some() {
                let reported = matches!(early, Some(Ending::Status(_) | Ending::Failed(..)));
                return Ok(Served {
                    reported,
                    pid: child,
                    init,
                    socket,
                    server,
                    early,
                    listener: received,
                    limits,
                });
            }
            started = Some((child, init));
        }
        if !wait_readable(socket.as_fd(), ANSWER_TIMEOUT) {
            server.retire();
            return Err(Refusal::Broken(format!(
                "the sandbox server (pid {pid}) did not answer within {} s; it was stopped and is restarted for the next call",
                ANSWER_TIMEOUT.as_secs()
            )));
        }
        let message = wire::recv(socket.as_fd(), false).map_err(|err| {
            Refusal::Broken(format!("reading the sandbox server's answer: {err}"))
        })?;
        let mut reader = Reader::new(&message.bytes);
        match reader.u8() {
            Some(wire::STARTED) => {
                let (Some(child), Some(init)) = (reader.i32(), message.fds.into_iter().next())
                else {
                    return Err(Refusal::Broken(
                        "the sandbox server's answer is incomplete".into(),
                    ));
                };
                started = Some((child, init));
            }
            Some(wire::LISTENER) => received = message.fds.into_iter().next(),
            Some(wire::EXITED) if early.is_none() => {
                let status = reader.i32();
                limits.extend(limit_names(reader.rest()));
                early = Some(status.map_or(Ending::Killed, Ending::Status));
            }
            Some(wire::FAILED) if started.is_none() => return Err(failure(reader)),
            Some(wire::FAILED) => {
                early = Some(match failure(reader) {
                    Refusal::Failed(code, message) => Ending::Failed(code, message),
                    _ => Ending::Killed,
                })
            }
            None if started.is_some() => early = Some(Ending::Killed),
            _ => {
                server.retire();
                return Err(Refusal::Broken(format!(
                    "the sandbox server (pid {pid}) ended before it started the program; it is restarted for the next call"
                )));
            }
        }
    }
}

/// The limit names of an `EXITED` message.
fn limit_names(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|&byte| byte == b',')
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}

fn failure(mut reader: Reader<'_>) -> Refusal {
    let code = reader.i32().unwrap_or(EXIT_SETUP_FAILED);
    Refusal::Failed(code, String::from_utf8_lossy(reader.rest()).into_owned())
}

/// A call started by the server: its init leads the call's process group.
#[derive(Debug)]
pub(crate) struct Served {
    pid: libc::pid_t,
    init: OwnedFd,
    socket: OwnedFd,
    /// Kept so the server outlives its calls even when a newer one took over.
    server: Arc<Server>,
    /// The init's report, when it came before the server's answer.
    early: Option<Ending>,
    /// The egress proxy's listener in the call's network namespace (proxy network only).
    listener: Option<OwnedFd>,
    /// The limits the call ran into (from the init's `EXITED`).
    limits: Vec<String>,
    /// The init said how the call ended: nothing of it runs any more.
    reported: bool,
}

/// How a served call ended, once its init is gone.
#[derive(Debug)]
pub(crate) enum Ending {
    /// The program's wait status.
    Status(i32),
    /// The init was killed before the program's status was reported (toolgate's SIGKILL).
    Killed,
    /// The launcher's own failure after the start.
    Failed(i32, String),
    /// The server died while the program ran (which killed it).
    ServerGone(u32),
}

impl Served {
    /// The init's pid: the call's process group.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// A pidfd of the init, readable once it and everything in its namespace is gone.
    pub fn pidfd(&self) -> io::Result<OwnedFd> {
        self.init.try_clone()
    }

    /// Whether the init has exited.
    pub fn exited(&self) -> bool {
        wire::ready(self.init.as_fd())
    }

    /// A second descriptor of the call's socket, to watch for the init's report: once a
    /// message is readable on it, the program and every other process of the call are gone
    /// (the init reports only then), without waiting for the init's own exit. End of file
    /// without a report (the init was killed) says nothing of the rest: watch the pidfd.
    pub fn report_fd(&self) -> io::Result<OwnedFd> {
        self.socket.try_clone()
    }

    /// Whether the init has said how the call ended (read by [`Served::ending`], or before the
    /// server's answer): nothing of the call runs any more.
    pub fn reported(&self) -> bool {
        self.reported
    }

    /// Waits up to `limit` for the init to exit.
    pub fn wait_exited(&self, limit: Duration) {
        wait_readable(self.init.as_fd(), limit);
    }

    /// The egress proxy's listener, taken (once).
    pub fn take_listener(&mut self) -> Option<OwnedFd> {
        self.listener.take()
    }

    /// The limits the call ran into; complete once [`Served::ending`] was asked.
    pub fn limits(&self) -> &[String] {
        &self.limits
    }

    /// How the call ended; ask once the init has reported or exited.
    pub fn ending(&mut self) -> Ending {
        if let Some(ending) = self.early.take() {
            // Its report came before the server's answer (and is its last message).
            return ending;
        }
        loop {
            let message = match wire::recv(self.socket.as_fd(), false) {
                Ok(message) => message,
                Err(_) => return Ending::Killed,
            };
            if message.bytes.is_empty() {
                return Ending::ServerGone(self.server.pid());
            }
            let mut reader = Reader::new(&message.bytes);
            match reader.u8() {
                Some(wire::LISTENER) => {}
                Some(wire::EXITED) => {
                    self.reported = true;
                    let status = reader.i32();
                    self.limits.extend(limit_names(reader.rest()));
                    return status.map_or(Ending::Killed, Ending::Status);
                }
                Some(wire::FAILED) => {
                    self.reported = true;
                    return match failure(reader) {
                        Refusal::Failed(code, message) => Ending::Failed(code, message),
                        _ => Ending::Killed,
                    };
                }
                _ => return Ending::Killed,
            }
        }
    }
}
