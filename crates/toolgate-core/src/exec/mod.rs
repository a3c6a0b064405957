//! The process executor: the only place in toolgate that starts processes.
//!
//! - No shell: the program is resolved to an absolute path here and started with `posix_spawn`
//!   (std's fast path; no `pre_exec` closure, so a large parent such as Node is never forked).
//! - Exactly the given environment: the child's environment is cleared and filled from the
//!   request; nothing is inherited.
//! - Its own process group, so a timeout or an abort can kill the whole tree: TERM, a short
//!   grace, then KILL to the group. When the direct child exits on its own, whatever it left
//!   running in its group is killed too, so a background grandchild cannot hold the pipes open.
//! - The child's exit is watched through a pidfd, which lets us signal the group *before* the
//!   child is reaped: while the leader is an unreaped zombie its pid (the group id) cannot be
//!   reused, so `killpg` can never hit an unrelated group.
//! - stdout and stderr are drained concurrently; past the cap the rest is read and discarded
//!   (the child never blocks on a full pipe) and `truncated` is set.
//! - stdin is written concurrently with the reads, so a child that never reads its input cannot
//!   deadlock the call.
//! - On request, a private, empty `HOME`/`TMPDIR` for the call ([`ExecRequest::private_dirs`]),
//!   removed when the call ends; and a kernel sandbox ([`ExecRequest::sandbox`]): the program
//!   is then started by the launcher server, a small process of toolgate's own that forks a
//!   sandboxed child per call and hands back its init's pid and pidfd; the call is then waited
//!   for, timed out and killed like a child of this process (see `sandbox/client.rs`). Where no
//!   server can run, the one-shot `toolgate-sandbox` launcher is started instead. Either way no
//!   closure runs in this process between fork and exec.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BufMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::Notify;

use crate::error::{Error, Result};
use crate::network::{CallHandle, ConnectionRecord, HostPolicy, NetworkCall, NetworkPolicy, Proxy};
#[cfg(target_os = "linux")]
use crate::sandbox::client::{CallStdio, Ending as ServedEnding, Refusal, Served};
use crate::sandbox::{
    GuardSnapshot, NetworkMode, Sandbox, EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED,
    LAUNCHER_MESSAGE_PREFIX,
};
pub use call_dir::CallDir;

mod call_dir;
pub mod env;

/// Default per-stream output cap (see [`crate::limits`]).
pub use crate::limits::DEFAULT_MAX_OUTPUT_BYTES;
/// Time between TERM and KILL when a run is stopped.
const TERM_GRACE: Duration = Duration::from_millis(300);
/// How long the pipes may stay open after the process group was killed. Only processes that
/// left the group (setsid) can hold them that long; their output is then abandoned.
const DRAIN_GRACE: Duration = Duration::from_millis(300);
const READ_CHUNK: usize = 64 * 1024;

/// What to run and under which limits.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// An absolute path, a path relative to `cwd` (contains a `/`), or a bare name looked up on
    /// the `PATH` of `env` (or, when `env` has none, the `PATH` of this process).
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The complete environment of the child.
    pub env: Vec<(OsString, OsString)>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
    /// Cap for each of stdout and stderr.
    pub max_output_bytes: usize,
    /// Give the call a private, empty directory (under [`private_dirs_root`], mode 0700,
    /// removed afterwards) and point `HOME`, `TMPDIR` and the XDG base directories into it,
    /// replacing any value in `env`. Off by default, so `env` is otherwise exact.
    pub private_dirs: bool,
    /// Run the program under this kernel sandbox (implies `private_dirs`).
    pub sandbox: Option<Arc<Sandbox>>,
    /// Files the sandboxed program may read besides what the sandbox allows: the script an
    /// interpreter runs (a docstring tool), which lives where the sandbox grants nothing.
    pub readable: Vec<PathBuf>,
    /// The run and tool call the process belongs to, for the egress proxy of a network-by-host
    /// sandbox (who to ask, what the run allowed, where records go). Without it such a call
    /// is one of no run: nobody to ask.
    pub network: Option<NetworkCall>,
}

impl ExecRequest {
    /// A request with no arguments, an empty environment, no stdin, no timeout, the default
    /// output cap, no private directories and no sandbox.
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: None,
            timeout: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            private_dirs: false,
            sandbox: None,
            readable: Vec::new(),
            network: None,
        }
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    pub fn env<I, K, V>(mut self, env: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn max_output_bytes(mut self, cap: usize) -> Self {
        self.max_output_bytes = cap;
        self
    }

    /// Asks for a private `HOME`/`TMPDIR` (see [`ExecRequest::private_dirs`]).
    pub fn private_dirs(mut self) -> Self {
        self.private_dirs = true;
        self
    }

    /// Attaches the process to a run's tool call (see [`ExecRequest::network`]).
    pub fn network_call(mut self, call: NetworkCall) -> Self {
        self.network = Some(call);
        self
    }

    /// Runs the program under `sandbox` (see [`ExecRequest::sandbox`]).
    pub fn sandbox(mut self, sandbox: Arc<Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }
}

/// What a finished run produced. Exit codes, signals, timeouts and aborts are data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// The exit code, or `None` when the process was ended by a signal.
    pub exit_code: Option<i32>,
    /// The terminating signal's name (`SIGKILL`), when there was one.
    pub signal: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub timed_out: bool,
    pub aborted: bool,
    pub duration: Duration,
    /// Whether the program ran with the sandbox's filesystem policy in force.
    pub sandboxed: bool,
    /// The sandbox limits the call ran into (`processes`, `memoryMb`, `tmpMb`, `cpuSeconds`,
    /// `fileSizeMb`, comma-separated), also said at the end of `stderr`.
    pub limit: Option<String>,
    /// The connections its processes made through the egress proxy (network by host), each
    /// with its decision, oldest first.
    pub connections: Vec<ConnectionRecord>,
    /// What toolgate repaired at protected or hidden paths after the call (also at the end of
    /// `stderr`).
    pub protected: Vec<String>,
}

impl ExecOutput {
    /// Whether either stream was cut at the cap.
    pub fn truncated(&self) -> bool {
        self.stdout_truncated || self.stderr_truncated
    }

    /// Exit code 0, not stopped.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.aborted
    }
}

/// Stops a running process from any thread; cloning it is cheap.
#[derive(Debug, Clone, Default)]
pub struct AbortHandle {
    notify: Arc<Notify>,
}

impl AbortHandle {
    /// Kills the process group (TERM, grace, KILL). Calling it before the run is awaited, or
    /// more than once, is fine.
    pub fn abort(&self) {
        // notify_one keeps a permit when nobody waits yet, so an early abort is not lost.
        self.notify.notify_one();
    }
}

/// A started process whose result has not been collected yet.
#[derive(Debug)]
pub struct RunningProcess {
    child: Started,
    pipes: Option<Pipes>,
    started: Instant,
    timeout: Option<Duration>,
    max_output_bytes: usize,
    abort: AbortHandle,
    /// Set when the child is the sandbox launcher: its own failures become errors.
    sandboxed: Option<Launched>,
    /// The call's listener on the egress proxy (network by host), served while it runs.
    proxy: Option<CallHandle>,
    /// The sandbox, and its protected and hidden paths before the call (to repair what it
    /// did).
    guarded: Option<(Arc<Sandbox>, GuardSnapshot)>,
    /// Removed when the run is over (declared last: dropped after the child is reaped).
    call_dir: Option<CallDir>,
}

/// The process a run waits for.
#[derive(Debug)]
enum Started {
    /// A child of this process: the program, or the one-shot launcher.
    Child(Child),
    /// The init of a call the launcher server started.
    #[cfg(target_os = "linux")]
    Served(Served),
}

impl Started {
    fn pid(&self) -> libc::pid_t {
        match self {
            Started::Child(child) => child.id() as libc::pid_t,
            #[cfg(target_os = "linux")]
            Started::Served(served) => served.pid(),
        }
    }
}

/// What a sandboxed run needs to report the launcher's own failures.
#[derive(Debug)]
struct Launched {
    program: PathBuf,
    cwd: PathBuf,
    confined: bool,
}

/// Our ends of the child's standard streams, handed to the runtime when the wait starts.
#[derive(Debug)]
struct Pipes {
    stdin: Option<(OwnedFd, Vec<u8>)>,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// Starts `request`. Only a failure to start is an error: `BINARY_NOT_FOUND` when the program
/// cannot be found, `SPAWN_FAILED` for a bad working directory or a file that cannot be executed.
pub fn spawn(request: ExecRequest) -> Result<RunningProcess> {
    spawn_with_abort(request, AbortHandle::default())
}

/// Like [`spawn`], with an abort handle made beforehand, so a caller can hand out a way to stop
/// the process before it has started (an abort that comes first kills it as soon as it runs).
pub fn spawn_with_abort(request: ExecRequest, abort: AbortHandle) -> Result<RunningProcess> {
    let started = Instant::now();
    check_cwd(&request)?;
    let program = resolve_program(&request.program, &request.cwd, &request.env)?;
    // The sandbox's view is built from real paths: a program, working directory or readable
    // file named through `..` or a symlink (`../executable-tools` beside a worker file) is
    // given as the file it is, else the view would lack the directories on the way.
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // A program found through a symlink a sandboxed process may have planted gets no grant of
    // its own (see `Sandbox::program_chosen_by_a_process`): decided from the name it was
    // found by, before that name is resolved.
    let grant_program = request
        .sandbox
        .as_deref()
        .is_none_or(|sandbox| !sandbox.program_chosen_by_a_process(&program));
    let (program, cwd, readable) = if request.sandbox.is_some() {
        let readable = request.readable.iter().map(|path| real(path)).collect();
        (real(&program), real(&request.cwd), readable)
    } else {
        (program, request.cwd.clone(), request.readable.clone())
    };
    let sandbox = request
        .sandbox
        .as_deref()
        .filter(|sandbox| sandbox.launcher().is_some());
    // A sandboxed call's directory is made by its launcher (see `Spawn::sandboxed`).
    let call_dir = if sandbox.is_some() {
        Some(CallDir::reserve()?)
    } else if request.private_dirs || request.sandbox.is_some() {
        Some(CallDir::create()?)
    } else {
        None
    };
    let mut child_env = request.env;
    if let Some(dir) = &call_dir {
        dir.apply(&mut child_env);
    }
    let proxy = host_proxy(
        request.sandbox.as_deref(),
        request.network.as_ref(),
        &program,
    )?;
    if let Some(proxy) = &proxy {
        env::set_proxy(&mut child_env, proxy.local_addr());
    } else if proxy_in_namespace(request.sandbox.as_deref()) {
        let inside =
            std::net::SocketAddr::from(([127, 0, 0, 1], toolgate_sandbox::protocol::PROXY_PORT));
        env::set_proxy(&mut child_env, inside);
    }
    let guarded = request
        .sandbox
        .as_ref()
        .map(|sandbox| (Arc::clone(sandbox), sandbox.snapshot_guarded()));
    let child = Spawn {
        grant_program,
        program: &program,
        args: &request.args,
        cwd: &cwd,
        env: &child_env,
        stdin: request.stdin,
        readable: &readable,
    };
    let (mut child, pipes, handoff) = match (sandbox, &call_dir) {
        (Some(sandbox), Some(dir)) => child.sandboxed(sandbox, dir)?,
        _ => {
            let (child, pipes) = child
                .direct()
                .map_err(|err| spawn_error(&program, &request.cwd, err))?;
            (child, pipes, None)
        }
    };
    let proxy = match sandbox {
        Some(sandbox) if proxy_in_namespace(Some(sandbox)) => Some(serve_proxy(
            &mut child,
            handoff,
            sandbox,
            request.network.as_ref(),
            &program,
        )?),
        _ => proxy,
    };
    Ok(RunningProcess {
        child,
        pipes: Some(pipes),
        started,
        timeout: request.timeout,
        max_output_bytes: request.max_output_bytes,
        abort,
        sandboxed: sandbox.map(|sandbox| Launched {
            program,
            cwd: request.cwd,
            confined: sandbox.confines(),
        }),
        proxy,
        guarded,
        call_dir,
    })
}

/// The call's listener on this host's loopback, for a network-by-host sandbox whose calls get
/// no network namespace of their own (`best-effort` where none can be made, or no launcher).
fn host_proxy(
    sandbox: Option<&Sandbox>,
    call: Option<&NetworkCall>,
    program: &Path,
) -> Result<Option<CallHandle>> {
    let Some(sandbox) = sandbox else {
        return Ok(None);
    };
    let Some(policy) = sandbox.host_policy() else {
        return Ok(None);
    };
    if !sandbox.proxy_on_host() {
        return Ok(None);
    }
    Proxy::shared()?
        .listen(call_or_alone(call, program).context(policy.clone()))
        .map(Some)
}

/// The call a process belongs to; a process of no run (a plain `exec`) has nobody to ask.
fn call_or_alone(call: Option<&NetworkCall>, program: &Path) -> NetworkCall {
    call.cloned().unwrap_or_else(|| {
        let name = program.file_name().unwrap_or(program.as_os_str());
        NetworkCall::alone("", name.to_string_lossy())
    })
}

/// Whether the call runs in a network namespace of its own whose only way out is the proxy's
/// listener its init hands up (network by host with the launcher server).
fn proxy_in_namespace(sandbox: Option<&Sandbox>) -> bool {
    sandbox.is_some_and(|sandbox| {
        sandbox.policy().network == NetworkMode::Proxy && !sandbox.proxy_on_host()
    })
}

/// Serves the proxy listener the call's init handed up (a served call), or the one the
/// one-shot launcher's init hands over `handoff`, judged by the sandbox's host policy for
/// `call` (a sandbox without one refuses every host).
fn serve_proxy(
    child: &mut Started,
    handoff: Option<OwnedFd>,
    sandbox: &Sandbox,
    call: Option<&NetworkCall>,
    program: &Path,
) -> Result<CallHandle> {
    let policy = sandbox
        .host_policy()
        .cloned()
        .unwrap_or_else(|| NetworkPolicy::new(HostPolicy::default()));
    let context = call_or_alone(call, program).context(policy);
    let listener = match child {
        #[cfg(target_os = "linux")]
        Started::Served(served) => served.take_listener(),
        _ => None,
    };
    match (listener, handoff) {
        (Some(listener), _) => {
            Proxy::shared()?.serve(std::net::TcpListener::from(listener), context)
        }
        #[cfg(target_os = "linux")]
        (None, Some(handoff)) => Proxy::shared()?.serve_handoff(
            handoff,
            toolgate_sandbox::protocol::PROXY_PORT,
            context,
        ),
        _ => Err(Error::SandboxUnavailable(format!(
            "'{}' runs with the network through toolgate's proxy; its launcher did not hand over the call's listener",
            program.display()
        ))),
    }
}

/// What to start, resolved.
struct Spawn<'a> {
    program: &'a Path,
    args: &'a [OsString],
    cwd: &'a Path,
    env: &'a [(OsString, OsString)],
    stdin: Option<Vec<u8>>,
    /// Files the sandboxed program may read besides the policy's paths.
    readable: &'a [PathBuf],
    /// Whether the sandboxed program's directory and prefix are granted.
    grant_program: bool,
}

impl Spawn<'_> {
    /// Starts the program under `sandbox`: through the launcher server, or where none can run
    /// the one-shot launcher.
    /// With the proxy network, the one-shot launcher also gets the launcher end of a handoff
    /// socket pair as its descriptor 3; ours is returned for the proxy to serve.
    fn sandboxed(
        self,
        sandbox: &Sandbox,
        dir: &CallDir,
    ) -> Result<(Started, Pipes, Option<OwnedFd>)> {
        #[cfg(target_os = "linux")]
        {
            let (stdio, pipes) = call_pipes(self.stdin.is_some())?;
            let call = crate::sandbox::ServedCall {
                program: self.program,
                args: self.args,
                cwd: self.cwd,
                call_dir: dir.root(),
                env: self.env,
                readable: self.readable,
                private_root: Some(dir.process_dir()),
                grant_program: self.grant_program,
            };
            match sandbox.spawn_served(call, stdio) {
                Ok(served) => {
                    let pipes = Pipes {
                        stdin: pipes.stdin.zip(self.stdin),
                        stdout: pipes.stdout,
                        stderr: pipes.stderr,
                    };
                    return Ok((Started::Served(served), pipes, None));
                }
                // The one-shot launcher, below.
                Err(Refusal::Unavailable) => {}
                Err(Refusal::Failed(code, message)) => {
                    let error = launcher_error(code, &message, self.program, self.cwd);
                    return Err(error.unwrap_or(Error::SandboxUnavailable(message)));
                }
                Err(Refusal::Broken(message)) => {
                    return Err(Error::SandboxUnavailable(format!(
                        "'{}' was not started: {message}",
                        self.program.display()
                    )));
                }
            }
        }
        // The launcher server makes the call's directory; the one-shot launcher uses it as
        // made here where the call gets no view of its own.
        dir.make()?;
        let (launcher, launcher_args) = sandbox
            .one_shot_command(
                self.program,
                dir.root(),
                self.env,
                self.readable,
                false,
                self.grant_program,
            )
            .expect("the sandbox has a launcher");
        let mut command = Command::new(launcher);
        command.args(launcher_args).args(self.args);
        let handoff = sandbox
            .proxy_in_namespace()
            .then(|| handoff_pair(&mut command))
            .transpose()?;
        let (started, pipes) = self.start(command).map_err(|err| Error::SandboxUnavailable(format!(
            "the sandbox launcher '{}' could not be started ({err}); rebuild it with `npm run build:native` (or `cargo build -p toolgate-sandbox`), or configure the tool with sandbox: false",
            launcher.display()
        )))?;
        // `command` (dropped with `start`) held the launcher's end: only the launcher has it now.
        Ok((started, pipes, handoff))
    }

    /// Starts the program itself as a child of this process.
    fn direct(self) -> io::Result<(Started, Pipes)> {
        let mut command = Command::new(self.program);
        command.args(self.args);
        self.start(command)
    }

    /// Starts `command` (the program, or the one-shot launcher, with their arguments) as a
    /// child of this process.
    fn start(self, mut command: Command) -> io::Result<(Started, Pipes)> {
        command
            .current_dir(self.cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = command.spawn()?;
        let stdin = child.stdin.take().map(OwnedFd::from).zip(self.stdin);
        let stdout = OwnedFd::from(child.stdout.take().expect("stdout is piped"));
        let stderr = OwnedFd::from(child.stderr.take().expect("stderr is piped"));
        Ok((
            Started::Child(child),
            Pipes {
                stdin,
                stdout,
                stderr,
            },
        ))
    }
}

/// A handoff socket pair for the one-shot launcher `command` (see `Sandbox::command`): the
/// launcher's end becomes its descriptor `HANDOFF_FD` (it moves into `command`, closed in this
/// process when `command` is dropped); ours is returned.
fn handoff_pair(command: &mut Command) -> Result<OwnedFd> {
    let (ours, theirs) = crate::sandbox::handoff_socket_pair()?;
    let target = crate::sandbox::HANDOFF_FD;
    // SAFETY: only dup2 (or fcntl) runs in the forked child before exec; the closure owns `theirs`, so
    // the descriptor stays open until `command` is dropped (after the spawn).
    unsafe {
        command.pre_exec(move || {
            let raw = std::os::fd::AsRawFd::as_raw_fd(&theirs);
            // dup2 onto itself keeps close-on-exec: clear it instead.
            let moved = if raw == target {
                libc::fcntl(raw, libc::F_SETFD, 0)
            } else {
                libc::dup2(raw, target)
            };
            if moved < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(ours)
}

/// Pipes for a served call: the child's ends (for the server) and ours.
#[cfg(target_os = "linux")]
fn call_pipes(with_stdin: bool) -> Result<(CallStdio, OurEnds)> {
    let pipe = || -> Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two new fds into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(Error::io(
                "creating a pipe for",
                "child process",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: both fds are new and owned by nobody else.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    };
    let (stdout, child_stdout) = pipe()?;
    let (stderr, child_stderr) = pipe()?;
    let (child_stdin, stdin) = if with_stdin {
        let (read, write) = pipe()?;
        (Some(read), Some(write))
    } else {
        (None, None)
    };
    Ok((
        CallStdio {
            stdin: child_stdin,
            stdout: child_stdout,
            stderr: child_stderr,
        },
        OurEnds {
            stdin,
            stdout,
            stderr,
        },
    ))
}

/// Our ends of a served call's pipes.
#[cfg(target_os = "linux")]
struct OurEnds {
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// Where the private directories of [`ExecRequest::private_dirs`] are made (in a directory of
/// this process's own): `$TMPDIR` when set; else `/tmp`, or `/dev/shm` when `/tmp` is on a
/// disk and `/dev/shm` is a tmpfs of at least 1 GiB that allows executing. Decided on first
/// use.
pub fn private_dirs_root() -> &'static Path {
    call_dir::temp_root()
}

/// Starts `request` and waits for it. Must be called inside a Tokio runtime with I/O and time
/// enabled.
pub async fn run(request: ExecRequest) -> Result<ExecOutput> {
    spawn(request)?.wait().await
}

/// Why the wait for the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Aborted,
}

impl RunningProcess {
    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.pid() as u32
    }

    /// A handle that stops this process from elsewhere.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// Waits for the process to end, enforcing the timeout and reacting to aborts, and collects
    /// its output. Must be called inside a Tokio runtime with I/O and time enabled.
    ///
    /// Everything happens in this one task (pipes, exit, timer, abort), so a short-lived
    /// process costs no wake-ups of other runtime threads.
    pub async fn wait(mut self) -> Result<ExecOutput> {
        let pid = self.child.pid();
        let pipes = self.pipes.take().expect("a process is waited for once");
        let mut io = Io::new(pipes, self.max_output_bytes)?;
        let mut exit = match &self.child {
            Started::Child(_) => ExitWatch::new(pid)?,
            #[cfg(target_os = "linux")]
            Started::Served(served) => {
                let pidfd = served.pidfd().map_err(|err| reap_error(pid, err))?;
                let mut watch = ExitWatch::with_pidfd(pid, pidfd)?;
                if served.reported() {
                    watch.exited = true;
                } else {
                    let report = served.report_fd().map_err(|err| reap_error(pid, err))?;
                    watch.watch_report(report)?;
                }
                watch
            }
        };
        // Timeouts are capped at a day, so the sum fits; `checked_add` keeps that a non-panic.
        let deadline = self
            .timeout
            .and_then(|t| self.started.checked_add(t))
            .map(tokio::time::Instant::from_std);
        let abort = Arc::clone(&self.abort.notify);

        let ending = io
            .pump_until(async {
                tokio::select! {
                    result = exit.wait() => result.map(|()| Ending::Exited),
                    () = sleep_until_optional(deadline) => Ok(Ending::TimedOut),
                    () = abort.notified() => Ok(Ending::Aborted),
                }
            })
            .await
            .map_err(|err| reap_error(pid, err))?;

        if ending != Ending::Exited {
            signal_group(pid, libc::SIGTERM);
            let _ = io
                .pump_until(tokio::time::timeout(TERM_GRACE, exit.wait()))
                .await;
        }
        // The leader is a zombie or still running, so the group id is still ours: sweep the group.
        signal_group(pid, libc::SIGKILL);
        if !exit.exited {
            io.pump_until(exit.wait())
                .await
                .map_err(|err| reap_error(pid, err))?;
        }
        let status = self.status()?;
        io.close_stdin();
        io.drain_until(tokio::time::Instant::now() + DRAIN_GRACE)
            .await;

        let (exit_code, signal) = describe_status(status);
        if let Some(launched) = &self.sandboxed {
            if let Some(error) = launcher_failure(launched, exit_code, &io.stderr.buffer) {
                return Err(error);
            }
        }
        let connections = match self.proxy.take() {
            Some(proxy) => proxy.finish().await,
            None => Vec::new(),
        };
        let guarded = self.guarded.take();
        let protected = match &guarded {
            Some((sandbox, before)) => sandbox.repair_guarded(before),
            None => Vec::new(),
        };
        drop(self.call_dir.take());
        let mut limits = self.limits_hit();
        limits.extend(take_limit_report(&mut io.stderr.buffer));
        if let Some((sandbox, _)) = &guarded {
            if !limits.iter().any(|name| name == "tmpMb")
                && ran_out_of_private_space(
                    sandbox,
                    exit_code,
                    &io.stdout.buffer,
                    &io.stderr.buffer,
                )
            {
                limits.push("tmpMb".into());
            }
        }
        limits.dedup();
        let limit = (!limits.is_empty()).then(|| limits.join(","));
        let mut stderr = io.stderr.buffer;
        if let Some(limit) = &limit {
            let sandbox = guarded.as_ref().map(|(sandbox, _)| sandbox.as_ref());
            push_line(&mut stderr, &limit_notice(limit, sandbox));
        }
        for message in &protected {
            push_line(&mut stderr, message);
        }
        Ok(ExecOutput {
            exit_code,
            signal,
            stdout_truncated: io.stdout.truncated,
            stderr_truncated: io.stderr.truncated,
            stdout: io.stdout.buffer,
            stderr,
            timed_out: ending == Ending::TimedOut,
            aborted: ending == Ending::Aborted,
            duration: self.started.elapsed(),
            sandboxed: self
                .sandboxed
                .as_ref()
                .is_some_and(|launched| launched.confined),
            limit,
            connections,
            protected,
        })
    }

    /// The limits a served call reported.
    fn limits_hit(&self) -> Vec<String> {
        match &self.child {
            #[cfg(target_os = "linux")]
            Started::Served(served) => served.limits().to_vec(),
            _ => Vec::new(),
        }
    }
}

impl RunningProcess {
    /// The exit status, once the process has exited (the one-shot launcher mirrors the
    /// program's; a served call's init reports it).
    fn status(&mut self) -> Result<ExitStatus> {
        let pid = self.child.pid();
        match &mut self.child {
            Started::Child(child) => child.wait().map_err(|err| reap_error(pid, err)),
            #[cfg(target_os = "linux")]
            Started::Served(served) => match served.ending() {
                ServedEnding::Status(status) => Ok(ExitStatus::from_raw(status)),
                // Only SIGKILL ends an init that blocks every signal (and is PID 1).
                ServedEnding::Killed => Ok(ExitStatus::from_raw(libc::SIGKILL)),
                ServedEnding::Failed(code, message) => {
                    let launched = self.sandboxed.as_ref().expect("served calls are sandboxed");
                    let error = launcher_error(code, &message, &launched.program, &launched.cwd);
                    Err(error.unwrap_or(Error::SandboxUnavailable(message)))
                }
                ServedEnding::ServerGone(server) => {
                    let launched = self.sandboxed.as_ref().expect("served calls are sandboxed");
                    Err(Error::SandboxUnavailable(format!(
                        "the sandbox server (pid {server}) ended while '{}' ran, which ended the program too; it is restarted for the next call",
                        launched.program.display()
                    )))
                }
            },
        }
    }
}

/// Takes the one-shot launcher's limit report (its last line of stderr) off the end of
/// `stderr`; the names it gave.
fn take_limit_report(stderr: &mut Vec<u8>) -> Vec<String> {
    let text = stderr.strip_suffix(b"\n").unwrap_or(stderr);
    let start = text
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1);
    let Some(names) = text[start..]
        .strip_prefix(LAUNCHER_MESSAGE_PREFIX.as_bytes())
        .and_then(|rest| rest.strip_prefix(toolgate_sandbox::protocol::LIMIT_REPORT.as_bytes()))
    else {
        return Vec::new();
    };
    let names: Vec<String> = String::from_utf8_lossy(names)
        .split(',')
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect();
    stderr.truncate(start);
    names
}

/// Whether a call that failed ran out of room in its private tmpfs (`tmpMb`) although the
/// tmpfs is not full now: the program freed what it wrote, or a last write that did not fit
/// failed (`fallocate` of more than is left). The kernel keeps no count of a tmpfs's `ENOSPC`,
/// so this reads the program's own report of it ("No space left on device", which every C
/// library and runtime prints for `ENOSPC`) where every other place the call may write — the
/// work directory and the `write` roots — still has room: the tmpfs is then the one place that
/// can have been full.
fn ran_out_of_private_space(
    sandbox: &Sandbox,
    exit_code: Option<i32>,
    stdout: &[u8],
    stderr: &[u8],
) -> bool {
    const ENOSPC_TEXT: &[u8] = b"no space left on device";
    /// Room a writable root must have for its file system not to be the one that was full.
    const ROOM: u64 = 16 << 20;
    let has_tmp_limit = sandbox
        .limits()
        .iter()
        .any(|(name, value)| *name == "tmpMb" && value.is_some());
    let reported = |bytes: &[u8]| {
        bytes
            .windows(ENOSPC_TEXT.len())
            .any(|window| window.eq_ignore_ascii_case(ENOSPC_TEXT))
    };
    let policy = sandbox.policy();
    has_tmp_limit
        && exit_code != Some(0)
        && (reported(stderr) || reported(stdout))
        && std::iter::once(&policy.work_dir)
            .chain(&policy.write)
            .all(|root| {
                rustix::fs::statvfs(root.as_path())
                    .is_ok_and(|stat| stat.f_bavail.saturating_mul(stat.f_frsize) >= ROOM)
            })
}

/// What the model reads at the end of stderr when the call ran into a limit.
fn limit_notice(names: &str, sandbox: Option<&Sandbox>) -> String {
    let values = sandbox.map(Sandbox::limits);
    let described: Vec<String> = names
        .split(',')
        .map(|name| {
            let value = values
                .as_ref()
                .and_then(|values| values.iter().find(|(known, _)| *known == name))
                .and_then(|(_, value)| *value);
            match value {
                Some(value) => format!("{name} ({value})"),
                None => name.to_string(),
            }
        })
        .collect();
    format!(
        "toolgate: the call ran into its sandbox limit: {}; raise sandbox.limits.{} if the work needs more",
        described.join(", "),
        names.split(',').next().unwrap_or(names)
    )
}

/// Appends `line` to `buffer` on a line of its own.
fn push_line(buffer: &mut Vec<u8>, line: &str) {
    if buffer.last().is_some_and(|&byte| byte != b'\n') {
        buffer.push(b'\n');
    }
    buffer.extend_from_slice(line.as_bytes());
    buffer.push(b'\n');
}

/// The launcher's own failure (its exit codes with its message on stderr) as an error: the
/// program never ran, so this is not the program's result.
fn launcher_failure(launched: &Launched, exit_code: Option<i32>, stderr: &[u8]) -> Option<Error> {
    let message = stderr.strip_prefix(LAUNCHER_MESSAGE_PREFIX.as_bytes())?;
    let message = String::from_utf8_lossy(message);
    launcher_error(
        exit_code?,
        message.trim_end(),
        &launched.program,
        &launched.cwd,
    )
}

/// The error for one of the launcher's own exit codes, `None` for any other code.
fn launcher_error(code: i32, message: &str, program: &Path, cwd: &Path) -> Option<Error> {
    match code {
        EXIT_SETUP_FAILED => Some(Error::SandboxUnavailable(format!(
            "the sandbox could not be set up for '{}': {message}",
            program.display()
        ))),
        EXIT_CANNOT_EXECUTE => Some(Error::SpawnFailed {
            program: program.display().to_string(),
            cwd: cwd.display().to_string(),
            reason: format!("in the sandbox: {message}"),
        }),
        EXIT_NOT_FOUND => Some(Error::BinaryNotFound {
            program: program.display().to_string(),
            searched: format!(" (in the sandbox: {message})"),
        }),
        _ => None,
    }
}

impl Drop for RunningProcess {
    /// A run that is dropped without being awaited must not leave its processes behind.
    fn drop(&mut self) {
        match &mut self.child {
            Started::Child(child) => {
                if let Ok(None) = child.try_wait() {
                    signal_group(child.id() as libc::pid_t, libc::SIGKILL);
                    let _ = child.wait();
                }
            }
            // The init is not reaped before its socket closes (after this), so its group id
            // is still ours. Killing the init ends its namespace; waiting for that keeps the
            // call's directory in place until nothing can write to it any more.
            #[cfg(target_os = "linux")]
            Started::Served(served) => {
                if !served.reported() && !served.exited() {
                    signal_group(served.pid(), libc::SIGKILL);
                    served.wait_exited(SERVED_DROP_WAIT);
                }
            }
        }
    }
}

/// How long dropping a served run waits for its processes to be gone.
#[cfg(target_os = "linux")]
const SERVED_DROP_WAIT: Duration = Duration::from_secs(2);

async fn sleep_until_optional(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: killpg has no memory-safety preconditions; ESRCH (group gone) is expected.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// The child's pipes, pumped from the waiting task: stdin is written and both outputs are
/// read whenever they are ready.
struct Io {
    stdout: Capture,
    stderr: Capture,
    stdin: Option<Feed>,
}

impl Io {
    fn new(pipes: Pipes, cap: usize) -> Result<Self> {
        Ok(Self {
            stdout: Capture::new(pipes.stdout, cap)?,
            stderr: Capture::new(pipes.stderr, cap)?,
            stdin: pipes
                .stdin
                .map(|(fd, bytes)| Feed::new(fd, bytes))
                .transpose()?,
        })
    }

    fn idle(&self) -> bool {
        self.stdout.done && self.stderr.done && self.stdin.is_none()
    }

    /// Moves data on whichever pipe is ready first.
    async fn step(&mut self) {
        tokio::select! {
            () = self.stdout.read_some(), if !self.stdout.done => {}
            () = self.stderr.read_some(), if !self.stderr.done => {}
            finished = feed_some(&mut self.stdin), if self.stdin.is_some() => {
                if finished {
                    self.stdin = None; // closes the pipe: the child sees end of input
                }
            }
        }
    }

    /// Keeps the pipes moving until `stop` completes.
    async fn pump_until<F: std::future::Future>(&mut self, stop: F) -> F::Output {
        tokio::pin!(stop);
        loop {
            if self.idle() {
                return stop.await;
            }
            tokio::select! {
                biased;
                output = &mut stop => return output,
                () = self.step() => {}
            }
        }
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Reads the outputs to their end, or until `deadline` when something outside the process
    /// group still holds them open.
    async fn drain_until(&mut self, deadline: tokio::time::Instant) {
        while !self.idle() {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return,
                () = self.step() => {}
            }
        }
    }
}

/// One output stream, kept up to a cap; what comes after the cap is read and discarded.
struct Capture {
    receiver: pipe::Receiver,
    buffer: Vec<u8>,
    cap: usize,
    truncated: bool,
    done: bool,
    discard: Vec<u8>,
}

impl Capture {
    fn new(fd: OwnedFd, cap: usize) -> Result<Self> {
        let receiver = pipe::Receiver::from_owned_fd(fd)
            .map_err(|err| Error::io("reading the output of", "child process", err))?;
        Ok(Self {
            receiver,
            buffer: Vec::new(),
            cap,
            truncated: false,
            done: false,
            discard: Vec::new(),
        })
    }

    /// Reads once. Cancel-safe: nothing is recorded unless the read completed.
    async fn read_some(&mut self) {
        let room = self.cap - self.buffer.len();
        let result = if room > 0 {
            self.buffer.reserve(room.min(READ_CHUNK));
            let mut limited = (&mut self.buffer).limit(room);
            self.receiver.read_buf(&mut limited).await
        } else {
            if self.discard.is_empty() {
                self.discard = vec![0; READ_CHUNK];
            }
            match self.receiver.read(&mut self.discard).await {
                Ok(n) if n > 0 => {
                    self.truncated = true;
                    Ok(n)
                }
                other => other,
            }
        };
        match result {
            Ok(0) => self.done = true,
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.done = true,
        }
    }
}

/// Input for the child, written as the pipe accepts it.
struct Feed {
    sender: pipe::Sender,
    bytes: Vec<u8>,
    written: usize,
}

impl Feed {
    fn new(fd: OwnedFd, bytes: Vec<u8>) -> Result<Self> {
        let sender = pipe::Sender::from_owned_fd(fd)
            .map_err(|err| Error::io("writing the input of", "child process", err))?;
        Ok(Self {
            sender,
            bytes,
            written: 0,
        })
    }
}

/// Writes once; returns true when the input is complete or the child stopped reading (EPIPE is
/// the child's business, not an error). Cancel-safe.
async fn feed_some(feed: &mut Option<Feed>) -> bool {
    let Some(feed) = feed else { return true };
    if feed.written == feed.bytes.len() {
        return true;
    }
    match feed.sender.write(&feed.bytes[feed.written..]).await {
        Ok(n) => {
            feed.written += n;
            feed.written == feed.bytes.len()
        }
        Err(err) if err.kind() == io::ErrorKind::Interrupted => false,
        Err(_) => true,
    }
}

/// Waits for the child to exit without reaping it.
struct ExitWatch {
    pid: libc::pid_t,
    pidfd: Option<tokio::io::unix::AsyncFd<OwnedFd>>,
    /// A served call's socket: the init's report on it ends the call before the init's own
    /// exit (see [`Served::report_fd`]).
    report: Option<tokio::io::unix::AsyncFd<OwnedFd>>,
    exited: bool,
}

impl ExitWatch {
    /// Watches a child of this process.
    fn new(pid: libc::pid_t) -> Result<Self> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if raw < 0 {
            // Kernels before 5.3: fall back to a blocking waitid on the blocking pool.
            return Ok(Self {
                pid,
                pidfd: None,
                report: None,
                exited: false,
            });
        }
        // SAFETY: the syscall returned a fresh fd that nobody else owns.
        Self::with_pidfd(pid, unsafe { OwnedFd::from_raw_fd(raw as i32) })
    }

    /// Watches `pid` through a pidfd of it (it need not be our child).
    fn with_pidfd(pid: libc::pid_t, pidfd: OwnedFd) -> Result<Self> {
        // SAFETY: the AsyncFd owns the OwnedFd, so the fd stays open and the same for the
        // AsyncFd's whole life.
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
        };
        Ok(Self {
            pid,
            pidfd: Some(registered.map_err(|err| reap_error(pid, err.into_parts().1))?),
            report: None,
            exited: false,
        })
    }

    /// Also ends the wait when the served call's init reports on `socket`.
    #[cfg(target_os = "linux")]
    fn watch_report(&mut self, socket: OwnedFd) -> Result<()> {
        // SAFETY: as in `with_pidfd`: the AsyncFd owns the socket for its whole life.
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(socket, tokio::io::Interest::READABLE)
        };
        let pid = self.pid;
        self.report = Some(registered.map_err(|err| reap_error(pid, err.into_parts().1))?);
        Ok(())
    }

    async fn wait(&mut self) -> io::Result<()> {
        if self.exited {
            return Ok(());
        }
        if let (Some(report), Some(pidfd)) = (&self.report, &self.pidfd) {
            tokio::select! {
                reported = wait_for_report(report) => {
                    if reported? {
                        self.exited = true;
                        return Ok(());
                    }
                    // End of file without a report: only the init's exit says the rest is gone.
                    self.report = None;
                }
                gone = pidfd.readable() => {
                    drop(gone?);
                    self.exited = true;
                    return Ok(());
                }
            }
        }
        match &self.pidfd {
            Some(pidfd) => {
                let guard = pidfd.readable().await?;
                drop(guard);
            }
            None => {
                let pid = self.pid;
                tokio::task::spawn_blocking(move || wait_without_reaping(pid))
                    .await
                    .map_err(io::Error::other)??;
            }
        }
        self.exited = true;
        Ok(())
    }
}

/// Waits until a message or the end of file is readable on a served call's socket, without
/// taking it: `true` for a message (the init's report), `false` for the end of file.
#[cfg(target_os = "linux")]
async fn wait_for_report(socket: &tokio::io::unix::AsyncFd<OwnedFd>) -> io::Result<bool> {
    loop {
        let mut guard = socket.readable().await?;
        let mut byte = 0u8;
        // SAFETY: recv peeks at most one byte into the byte we own.
        let peeked = unsafe {
            libc::recv(
                std::os::fd::AsRawFd::as_raw_fd(socket.get_ref()),
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if peeked >= 0 {
            return Ok(peeked > 0);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::WouldBlock && err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
        guard.clear_ready();
    }
}

fn wait_without_reaping(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: waitid writes into the zeroed siginfo we own.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn reap_error(pid: libc::pid_t, err: io::Error) -> Error {
    Error::Io {
        action: "waiting for process",
        path: PathBuf::from(format!("pid {pid}")),
        source: err,
    }
}

fn describe_status(status: ExitStatus) -> (Option<i32>, Option<String>) {
    match (status.code(), status.signal()) {
        (Some(code), _) => (Some(code), None),
        (None, Some(signal)) => (None, Some(signal_name(signal))),
        (None, None) => (None, None),
    }
}

/// The conventional name of a signal number (`9` → `SIGKILL`).
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_string()
}

fn check_cwd(request: &ExecRequest) -> Result<()> {
    match std::fs::metadata(&request.cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::SpawnFailed {
            program: request.program.to_string_lossy().into_owned(),
            cwd: request.cwd.display().to_string(),
            reason: "the working directory is not a directory".into(),
        }),
        Err(err) => Err(Error::SpawnFailed {
            program: request.program.to_string_lossy().into_owned(),
            cwd: request.cwd.display().to_string(),
            reason: format!(
                "the working directory cannot be used ({err}); give an existing directory"
            ),
        }),
    }
}

/// Finds the program the way `execvp` would, but here and now, so the child is always started
/// from an absolute path and a missing program is reported with what was searched.
pub fn resolve_program(
    program: &OsStr,
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> Result<PathBuf> {
    let text = program.to_string_lossy();
    if program.is_empty() || program.as_bytes().contains(&0) {
        return Err(Error::BinaryNotFound {
            program: text.replace('\0', "\\0"),
            searched: " (the name is empty or contains a NUL byte)".into(),
        });
    }
    if program.as_bytes().contains(&b'/') {
        let path = cwd.join(program);
        return if path.exists() {
            Ok(path)
        } else {
            Err(Error::BinaryNotFound {
                program: text.into_owned(),
                searched: format!(" (looked for '{}')", path.display()),
            })
        };
    }
    let path_var = env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    for dir in std::env::split_paths(&path_var) {
        let dir = if dir.as_os_str().is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let candidate = dir.join(program);
        if is_executable_file(&candidate) {
            return Ok(candidate);
        }
    }
    Err(Error::BinaryNotFound {
        program: text.into_owned(),
        searched: format!(" on PATH '{}'", path_var.to_string_lossy()),
    })
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn spawn_error(program: &Path, cwd: &Path, err: io::Error) -> Error {
    let reason = match err.raw_os_error() {
        Some(libc::ENOENT) => {
            return Error::BinaryNotFound {
                program: program.display().to_string(),
                searched: format!(" (started from '{}')", cwd.display()),
            }
        }
        Some(libc::EACCES) => "permission denied; is the file executable (chmod +x)?".to_string(),
        Some(libc::ENOEXEC) => "the file is not in an executable format".to_string(),
        Some(libc::EISDIR) => "it is a directory".to_string(),
        _ => err.to_string(),
    };
    Error::SpawnFailed {
        program: program.display().to_string(),
        cwd: cwd.display().to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests;
