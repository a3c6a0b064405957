//! The egress proxy: one per process, on its own tokio threads (never the JavaScript thread),
//! started on first use and gone with the process.
//!
//! A tool call's listener is registered with [`Proxy::serve`] together with the call's
//! [`CallContext`]; every connection accepted on it belongs to that call. (A sandboxed call
//! binds its listener inside its own network namespace and hands the descriptor up; tests
//! and unsandboxed callers bind one on 127.0.0.1 with [`Proxy::listen`]; a program the one-shot
//! launcher starts hands its listener over a socket of its own, [`Proxy::serve_handoff`].) The
//! first byte of a
//! connection says what it speaks: `0x05` is SOCKS5, a letter is HTTP/1.x (`CONNECT` or an
//! absolute-form request); anything else is refused.

mod connect;
#[cfg(target_os = "linux")]
mod handoff;
mod http;
mod lent;
mod relay;
mod session;
mod socks;

use std::fmt;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::ask::{Asker, RunAllowances};
use super::policy::NetworkPolicy;
use super::record::{ConnectionRecord, Protocol, SharedSink};
use super::resolve::{system_lookup, Lookup};
use crate::error::{Error, Result};
use lent::{LentCall, LentCalls, Owner};
pub use lent::{ToolCallScope, CALL_END_GRACE};
use session::Session;

/// How the proxy resolves, times out and limits. [`Default`] is what the process-wide proxy
/// uses: the system resolver and the `DEFAULT_*` values of [`crate::network`].
#[derive(Clone)]
pub struct ProxyConfig {
    pub lookup: Lookup,
    pub resolve_timeout: Duration,
    pub connect_timeout: Duration,
    pub head_timeout: Duration,
    pub idle_timeout: Duration,
    pub ask_timeout: Duration,
    pub max_connections_per_call: usize,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            lookup: system_lookup(),
            resolve_timeout: super::DEFAULT_RESOLVE_TIMEOUT,
            connect_timeout: super::DEFAULT_CONNECT_TIMEOUT,
            head_timeout: super::DEFAULT_HEAD_TIMEOUT,
            idle_timeout: super::DEFAULT_IDLE_TIMEOUT,
            ask_timeout: super::DEFAULT_ASK_TIMEOUT,
            max_connections_per_call: super::DEFAULT_MAX_CONNECTIONS_PER_CALL,
        }
    }
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("resolve_timeout", &self.resolve_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("head_timeout", &self.head_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("ask_timeout", &self.ask_timeout)
            .field("max_connections_per_call", &self.max_connections_per_call)
            .finish_non_exhaustive()
    }
}

/// Everything the proxy needs to know about the tool call a listener belongs to.
#[derive(Clone)]
pub struct CallContext {
    pub tool_call_id: String,
    /// The tool whose processes connect (what the approval request names).
    pub tool: String,
    pub policy: NetworkPolicy,
    /// The run's approval handler; `None` refuses what `ask` would ask about.
    pub asker: Option<Arc<dyn Asker>>,
    /// What the run allowed with `always`: the same `Arc` for every call of one run.
    pub run: Arc<RunAllowances>,
    /// Where records go as they are made (the run's records, the audit log).
    pub sink: Option<SharedSink>,
    /// Why nobody is asked, when `asker` is `None` for a reason worth telling (the refusal
    /// says it instead of "this call has no approval handler").
    pub nobody_to_ask: Option<String>,
}

impl CallContext {
    /// A call with no approval handler, a run of its own and no sink.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool: impl Into<String>,
        policy: NetworkPolicy,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool: tool.into(),
            policy,
            asker: None,
            run: RunAllowances::new(),
            sink: None,
            nobody_to_ask: None,
        }
    }

    /// With the reason nobody is asked (see [`nobody_to_ask`](Self::nobody_to_ask)).
    pub fn with_nobody_to_ask(mut self, why: impl Into<String>) -> Self {
        self.nobody_to_ask = Some(why.into());
        self
    }

    /// With the run's approval handler.
    pub fn with_asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// As one call of a run whose allowances are `run`.
    pub fn with_run(mut self, run: Arc<RunAllowances>) -> Self {
        self.run = run;
        self
    }

    /// With a sink for records.
    pub fn with_sink(mut self, sink: SharedSink) -> Self {
        self.sink = Some(sink);
        self
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("tool", &self.tool)
            .field("policy", &self.policy.to_string())
            .field("asker", &self.asker.is_some())
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

/// The egress proxy.
pub struct Proxy {
    /// Owned by a proxy started with [`Proxy::start`]; the shared one lives as long as the
    /// process.
    runtime: Option<Runtime>,
    handle: Handle,
    config: Arc<ProxyConfig>,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The process-wide proxy, or why it could not start.
static SHARED: OnceLock<std::result::Result<Proxy, String>> = OnceLock::new();

/// How long a one-shot launcher has to hand over its call's listener
/// ([`Proxy::serve_handoff`]) once toolgate has made the handoff socket: the launcher's start,
/// its namespaces and the view come first.
pub const HANDOFF_TIMEOUT: Duration = Duration::from_secs(60);

/// Threads of a proxy's runtime: relaying is cheap; two keep one slow handshake from holding
/// up the rest.
const PROXY_THREADS: usize = 2;

impl Proxy {
    /// A proxy of its own (tests, benchmarks, an embedder with its own resolver). Its threads
    /// stop when it is dropped.
    pub fn start(config: ProxyConfig) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(PROXY_THREADS)
            .thread_name("toolgate-proxy")
            .enable_all()
            .build()
            .map_err(|err| {
                Error::SandboxUnavailable(format!(
                    "the egress proxy cannot start its threads: {err}"
                ))
            })?;
        Ok(Self {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            config: Arc::new(config),
        })
    }

    /// The process-wide proxy, started on first use with the default configuration. Its
    /// threads live until the process ends.
    pub fn shared() -> Result<&'static Proxy> {
        SHARED
            .get_or_init(|| Proxy::start(ProxyConfig::default()).map_err(|err| err.to_string()))
            .as_ref()
            .map_err(|message| Error::SandboxUnavailable(message.clone()))
    }

    /// Serves `listener` for one tool call: every connection accepted on it is judged by the
    /// call's policy and recorded for the call. The listener may come from anywhere (a
    /// descriptor handed up from a sandbox included); it is set non-blocking here. Serving
    /// stops when the returned handle is finished or dropped.
    pub fn serve(&self, listener: StdListener, call: CallContext) -> Result<CallHandle> {
        let local_addr = listener
            .local_addr()
            .map_err(|err| io_error("read the listener's address", err))?;
        listener
            .set_nonblocking(true)
            .map_err(|err| io_error("make the listener non-blocking", err))?;
        let listener = {
            let _entered = self.handle.enter();
            register(listener).map_err(|err| io_error("register the listener", err))?
        };
        Ok(self.start_call(call, local_addr, |state, stopped, done| {
            accept_loop(listener, state, stopped, done)
        }))
    }

    /// Serves, for one call, the listener a one-shot launcher's init hands over `socket`
    /// (toolgate's end of the handoff socket pair; the launcher got the other end with
    /// `--proxy-handoff`): a listening TCP socket on `127.0.0.1:port` in the call's own
    /// network namespace. Exactly one listener is taken, checked, answered with `HANDED_OFF`
    /// and served like [`serve`](Self::serve)'s; anything else (another message, another kind
    /// of socket, the launcher ending first, nothing within [`HANDOFF_TIMEOUT`]) ends the
    /// handoff, and the launcher refuses to start the program. Serving stops when the handle
    /// is finished or dropped.
    #[cfg(target_os = "linux")]
    pub fn serve_handoff(
        &self,
        socket: std::os::fd::OwnedFd,
        port: u16,
        call: CallContext,
    ) -> Result<CallHandle> {
        let socket = {
            let _entered = self.handle.enter();
            handoff::Handoff::new(socket, port)
                .map_err(|err| io_error("watch the listener's handoff socket", err))?
        };
        let local_addr = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
        Ok(
            self.start_call(call, local_addr, |state, mut stopped, done| async move {
                let received = tokio::select! {
                    received = tokio::time::timeout(HANDOFF_TIMEOUT, socket.receive()) => received,
                    _ = stopped.wait_for(|stop| *stop) => {
                        let _ = done.send(true);
                        return;
                    }
                };
                match received.map(|listener| listener.and_then(register)) {
                    Ok(Ok(listener)) => accept_loop(listener, state, stopped, done).await,
                    // The launcher says why on its stderr ("toolgate did not take …"); the call
                    // has no connections.
                    _ => {
                        let _ = done.send(true);
                    }
                }
            }),
        )
    }

    /// The call's state and handle, with `serving` spawned on the proxy's threads.
    fn start_call<F, Fut>(
        &self,
        call: CallContext,
        local_addr: SocketAddr,
        serving: F,
    ) -> CallHandle
    where
        F: FnOnce(Arc<CallState>, watch::Receiver<bool>, watch::Sender<bool>) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let (waiting, waiting_received) = mpsc::unbounded_channel();
        let state = Arc::new(CallState {
            base: Arc::new(call),
            lent: LentCalls::default(),
            listener: OnceLock::new(),
            waiting,
            waiting_received: Mutex::new(Some(waiting_received)),
            config: Arc::clone(&self.config),
            records: Mutex::new(Vec::new()),
            records_dropped: std::sync::atomic::AtomicU64::new(0),
        });
        let (stop, stopped) = watch::channel(false);
        let (done_sender, done) = watch::channel(false);
        self.handle
            .spawn(serving(Arc::clone(&state), stopped, done_sender));
        CallHandle {
            state,
            stop,
            done,
            local_addr,
            handle: self.handle.clone(),
        }
    }

    /// Keeps every thread of the proxy busy for `duration` from when this returns, as a
    /// loaded machine would: connections wait in the listener's queue meanwhile.
    #[cfg(test)]
    pub(crate) fn stall_threads(&self, duration: Duration) {
        let (started, starts) = std::sync::mpsc::channel();
        let until = std::time::Instant::now() + duration;
        for _ in 0..PROXY_THREADS {
            let started = started.clone();
            self.handle.spawn(async move {
                let _ = started.send(());
                // Blocking on purpose: the thread does nothing else until then.
                std::thread::sleep(until.saturating_duration_since(std::time::Instant::now()));
            });
        }
        for _ in 0..PROXY_THREADS {
            starts
                .recv_timeout(Duration::from_secs(5))
                .expect("every proxy thread took a stalling task");
        }
    }

    /// Binds a listener on 127.0.0.1 (a free port) and serves it for the call.
    pub fn listen(&self, call: CallContext) -> Result<CallHandle> {
        let listener = StdListener::bind("127.0.0.1:0")
            .map_err(|err| io_error("bind a listener on 127.0.0.1", err))?;
        self.serve(listener, call)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Safe to drop from async code too: the threads are told to stop, not joined.
            runtime.shutdown_background();
        }
    }
}

fn io_error(action: &str, err: std::io::Error) -> Error {
    Error::SandboxUnavailable(format!("the egress proxy could not {action}: {err}"))
}

/// One call's listener being served: its address, its records, and the way to stop it.
pub struct CallHandle {
    state: Arc<CallState>,
    stop: watch::Sender<bool>,
    done: watch::Receiver<bool>,
    local_addr: SocketAddr,
    handle: Handle,
}

impl fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandle")
            .field("local_addr", &self.local_addr)
            .field("call", &self.state.base)
            .finish_non_exhaustive()
    }
}

impl CallHandle {
    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The proxy as a URL for `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`
    /// (`http://127.0.0.1:PORT`); SOCKS5 clients use the same port (`socks5h://`).
    pub fn proxy_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// The records of the call so far (a connection is recorded when it closes; a refusal at
    /// once), oldest first, at most [`MAX_RECORDS_PER_CALL`](super::MAX_RECORDS_PER_CALL).
    pub fn records(&self) -> Vec<ConnectionRecord> {
        lock(&self.state.records).clone()
    }

    /// The refused connections so far: what the call's result tells the model.
    pub fn refused(&self) -> Vec<ConnectionRecord> {
        self.records()
            .into_iter()
            .filter(ConnectionRecord::refused)
            .collect()
    }

    /// Records that did not fit in [`records`](Self::records) (they still reached the sink).
    pub fn records_dropped(&self) -> u64 {
        self.state
            .records_dropped
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether serving has ended by itself (a handoff that failed), without `finish`.
    #[cfg(test)]
    pub(crate) fn ended(&self) -> bool {
        *self.done.borrow()
    }

    /// Stops serving: the listener closes, open connections are cut (each recorded with the
    /// bytes it moved), and the call's records are returned.
    pub async fn finish(self) -> Vec<ConnectionRecord> {
        let _ = self.stop.send(true);
        let mut done = self.done.clone();
        let _ = done.wait_for(|finished| *finished).await;
        self.records()
    }

    /// [`finish`](Self::finish) for callers outside async code (it blocks until the call's
    /// connections are closed; never call it on an async runtime's thread).
    pub fn finish_blocking(self) -> Vec<ConnectionRecord> {
        let _ = self.stop.send(true);
        let mut done = self.done.clone();
        let _ = self.handle.block_on(done.wait_for(|finished| *finished));
        self.records()
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// What every connection of one listener shares.
pub(crate) struct CallState {
    /// The listener's own context.
    base: Arc<CallContext>,
    /// Tool calls lent to it (a long-lived program's listener): see [`lent`].
    lent: LentCalls,
    /// The listener, once served (a handed-off one arrives after the call starts); the accept
    /// loop holds it, and it closes when the loop ends.
    listener: OnceLock<Weak<StdListener>>,
    /// Connections accepted where a lent call began or ended, their owners decided, for the
    /// accept loop to serve (it takes the receiving end when it starts).
    waiting: mpsc::UnboundedSender<Accepted>,
    waiting_received: Mutex<Option<mpsc::UnboundedReceiver<Accepted>>>,
    pub(crate) config: Arc<ProxyConfig>,
    records: Mutex<Vec<ConnectionRecord>>,
    records_dropped: std::sync::atomic::AtomicU64,
}

/// An accepted connection and whose it is.
type Accepted = (std::net::TcpStream, Owner);

impl CallState {
    /// Accepts every connection waiting on the listener, each owned by `calls` (the lent calls
    /// of this moment, locked by the caller), and the error that stopped it early, if any. A
    /// connection's owner is thus decided by when it was made, not by when the accept loop
    /// got to it: at a lent call's start or end the ones made before it are taken first.
    fn accept_waiting(&self, calls: &[Arc<LentCall>]) -> (Vec<Accepted>, Option<std::io::Error>) {
        let mut accepted = Vec::new();
        let Some(listener) = self.listener.get().and_then(Weak::upgrade) else {
            return (accepted, None);
        };
        loop {
            match listener.accept() {
                Ok((stream, _)) => accepted.push((stream, lent::owner(&self.base, calls))),
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                    return (accepted, None)
                }
                // Reset before it was accepted, or a signal: the next one.
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(err) => return (accepted, Some(err)),
            }
        }
    }

    /// Before the lent calls change from `calls`: the connections made until now are theirs,
    /// handed to the accept loop. (Out of descriptors, the rest wait for the loop.)
    fn settle_waiting(&self, calls: &[Arc<LentCall>]) {
        for accepted in self.accept_waiting(calls).0 {
            let _ = self.waiting.send(accepted);
        }
    }

    /// Records a connection of `owner`: to its context's sink, the listener's records and
    /// the lent calls it belongs to.
    fn push(&self, owner: &Owner, record: ConnectionRecord) {
        if let Some(sink) = &owner.context.sink {
            sink.record(&record);
        }
        for call in &owner.calls {
            call.record(&record);
        }
        let mut records = lock(&self.records);
        if records.len() < super::MAX_RECORDS_PER_CALL {
            records.push(record);
        } else {
            self.records_dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `listener` (non-blocking) watched by the current runtime, shared with the call's state.
fn register(listener: StdListener) -> std::io::Result<AsyncFd<Arc<StdListener>>> {
    // SAFETY: the listener is only ever shared through this `Arc` (the call's state keeps a
    // weak reference, upgraded only for a moment), so its descriptor stays open and the same
    // at least until the `AsyncFd` drops.
    unsafe { AsyncFd::register(Arc::new(listener)) }.map_err(|err| err.into_parts().1)
}

async fn accept_loop(
    listener: AsyncFd<Arc<StdListener>>,
    state: Arc<CallState>,
    mut stop: watch::Receiver<bool>,
    done: watch::Sender<bool>,
) {
    let _ = state.listener.set(Arc::downgrade(listener.get_ref()));
    let Some(mut waiting) = lock(&state.waiting_received).take() else {
        let _ = done.send(true);
        return;
    };
    let limit = state.config.max_connections_per_call.max(1);
    let permits = Arc::new(Semaphore::new(limit));
    let mut connections = JoinSet::new();
    let admit = |(stream, owner): Accepted, connections: &mut JoinSet<()>| {
        let permit = Arc::clone(&permits).try_acquire_owned().ok();
        // Over the limit a connection is still answered (with a refusal that names its
        // host), but only so many at once; past that it is closed.
        if permit.is_none() && connections.len() >= 2 * limit {
            return;
        }
        let stream = stream
            .set_nonblocking(true)
            .and_then(|()| TcpStream::from_std(stream));
        if let Ok(stream) = stream {
            connections.spawn(serve_connection(stream, Arc::clone(&state), owner, permit));
        }
    };
    loop {
        tokio::select! {
            biased;
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            Some(accepted) = waiting.recv() => admit(accepted, &mut connections),
            ready = listener.readable() => {
                let Ok(mut ready) = ready else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                // Whose each connection is, is decided with the lent calls locked, so that a
                // call beginning or ending meanwhile cannot take one made before it.
                let (accepted, failed) = state.accept_waiting(&lock(&state.lent.calls));
                for accepted in accepted {
                    admit(accepted, &mut connections);
                }
                match failed {
                    None => ready.clear_ready(),
                    // Out of descriptors: try again shortly.
                    Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            },
        }
    }
    drop(listener);
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    let _ = done.send(true);
}

async fn serve_connection(
    mut stream: TcpStream,
    state: Arc<CallState>,
    owner: Owner,
    permit: Option<OwnedSemaphorePermit>,
) {
    let _ = stream.set_nodelay(true);
    let head_timeout = state.config.head_timeout;
    let mut session = Session::new(state, owner, permit);
    let mut buf = Vec::with_capacity(8 * 1024);
    let first = tokio::time::timeout(head_timeout, stream.read_buf(&mut buf)).await;
    if !matches!(first, Ok(Ok(n)) if n > 0) {
        // Closed or silent before saying anything: nothing was asked, nothing decided.
        return;
    }
    match buf[0] {
        0x05 => socks::serve(stream, buf, &mut session).await,
        byte if byte.is_ascii_alphabetic() => http::serve(stream, buf, &mut session).await,
        byte => {
            session.protocol = Protocol::Unknown;
            let what = match byte {
                0x16 => "the client spoke TLS to the proxy; give it the proxy as an http:// URL (HTTPS_PROXY=http://…), not https://".to_string(),
                0x04 => "SOCKS4 is not offered; use SOCKS5 (socks5h://)".to_string(),
                other => format!("the first byte 0x{other:02x} starts neither an HTTP request nor a SOCKS5 handshake"),
            };
            let refusal = session.bad_request(what);
            http::respond(&mut stream, &refusal).await;
        }
    }
}
