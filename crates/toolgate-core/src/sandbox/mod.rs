//! The kernel sandbox around every process toolgate starts for a tool.
//!
//! A [`SandboxPolicy`] says what a call may reach; [`Sandbox::prepare`] turns it into a
//! [`Sandbox`] once per tool (paths resolved, the launcher found, the kernel probed), and an
//! [`ExecRequest`](crate::exec::ExecRequest) carrying it runs its program through the `toolgate-sandbox` launcher (the
//! crate of that name: launcher, server, Landlock and seccomp), which applies it:
//!
//! - **A view of its own** (a mount namespace built for the call, see the launcher's
//!   `view.rs`): the system runtime, the few `/etc` entries programs need, the program with
//!   the parts of its install it needs and the `read` roots, read-only; the work directory
//!   (read-only with `readonly`) and the `write` roots read-write; `protect` paths read-only and
//!   `hide` paths empty wherever they are; a private, size-limited tmpfs for the call's `HOME`
//!   and `TMPDIR`; the call's own `/proc`; `/dev/null` and a few other device files. Nothing
//!   else exists for the program: no other path can be read, written, stat'ed or watched, and
//!   nothing outside the writable roots can change in any way (`EROFS`).
//! - **Landlock** over the same paths (defense in depth, and the filesystem policy where no
//!   view can be built). Without network, no TCP bind or connect and no abstract unix
//!   sockets; with the proxy network, TCP to the proxy's port only.
//! - **Namespaces**: its own PID namespace (the process tree dies with the call), IPC
//!   namespace (no host SysV IPC), and, unless the network is open, network namespace; its own
//!   session (no controlling terminal); no capabilities.
//! - **Limits** (`SandboxLimits`): processes, memory, the private tmpfs, CPU and file size.
//! - **seccomp** (compiled by the launcher): no ptrace, no foreign-process memory, no keyring, no
//!   mounts or namespaces, no io_uring/bpf/perf/userfaultfd, no TIOCSTI; without `network`
//!   only unix sockets, and no `connect`.
//! - **The process tree** dies with the call (PID namespace with a tiny init, or a subreaper).
//!
//! `enforce` refuses to run where the kernel lacks Landlock or seccomp, or where a promised
//! guarantee needs the view and none can be built (`SANDBOX_UNAVAILABLE`); `best-effort` runs
//! with what exists and says so once.
//!
//! This module decides and asks; the launcher applies. It speaks to the launcher only through
//! `toolgate_sandbox::protocol` (its arguments, exit codes and messages): the launcher's own
//! code is not part of this crate.

mod guard;
mod host_writes;
mod locate;
mod namespaces;
pub(crate) mod paths;
mod probe;
pub mod version_managers;

#[cfg(target_os = "linux")]
pub(crate) mod client;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use guard::GuardSnapshot;
pub use locate::{LAUNCHER_ENV, LAUNCHER_NAME};
pub use namespaces::{probe_launcher, LauncherProbe};
pub use paths::{Grant, GrantKind};
pub use probe::{kernel_support, KernelSupport};
pub use toolgate_sandbox::protocol::{
    EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED, LAUNCHER_MESSAGE_PREFIX,
};

use crate::error::{Error, Result};
use crate::limits::{
    DEFAULT_SANDBOX_CPU_SECONDS, DEFAULT_SANDBOX_FILE_SIZE_MB, DEFAULT_SANDBOX_MEMORY_MB,
    DEFAULT_SANDBOX_PROCESSES, DEFAULT_SANDBOX_TMP_MB,
};
use crate::network::NetworkPolicy;
use guard::Guarded;
pub(crate) use host_writes::{note as note_host_write, private_user_dir};
use paths::Reach;
pub use toolgate_sandbox::protocol::PROXY_PORT;
use toolgate_sandbox::protocol::{
    ARG_BEST_EFFORT, ARG_CALL_DIR, ARG_CWD, ARG_DEVICE, ARG_END, ARG_ENV, ARG_HIDE, ARG_LIMIT,
    ARG_NETWORK, ARG_NETWORK_PROXY, ARG_PARENT, ARG_PROTECT, ARG_PROXY_HANDOFF, ARG_READ,
    ARG_REQUIRE_VIEW, ARG_SECCOMP, ARG_TTY, ARG_WITHOUT, ARG_WRITE,
};

/// The descriptor a one-shot launcher with the proxy network gets its handoff socket as (the
/// first after the standard streams).
pub const HANDOFF_FD: i32 = 3;

/// A handoff socket pair for the one-shot launcher: (ours, the launcher's end, which becomes
/// its [`HANDOFF_FD`]).
pub(crate) fn handoff_socket_pair() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    toolgate_sandbox::protocol::wire::socket_pair().map_err(|err| {
        Error::SandboxUnavailable(format!(
            "the egress proxy's handoff socket could not be made: {err}"
        ))
    })
}

/// How strictly a sandbox is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Refuse to run (`SANDBOX_UNAVAILABLE`) where the kernel cannot enforce the policy.
    #[default]
    Enforce,
    /// Run with what the kernel offers; say once what is missing.
    BestEffort,
}

/// What a sandboxed process may reach of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkMode {
    /// Nothing: no IP sockets, no `connect`, a network namespace of its own.
    #[default]
    Off,
    /// The host's network, unix sockets of host services included.
    On,
    /// Only toolgate's egress proxy: the call's own network namespace with `lo`, a listener on
    /// `127.0.0.1:3128` in it that toolgate serves with the call's
    /// [`CallContext`](crate::network::CallContext) (`ExecRequest::network_call`), and TCP to
    /// that port the only connection allowed.
    Proxy,
}

impl NetworkMode {
    /// `On` for `true`, `Off` for `false`.
    pub fn from_bool(open: bool) -> Self {
        if open {
            NetworkMode::On
        } else {
            NetworkMode::Off
        }
    }
}

/// A call's limits (`sandbox.limits`); `None` is the default of [`crate::limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SandboxLimits {
    /// Processes and threads at once.
    pub processes: Option<u64>,
    /// Memory, in MiB.
    pub memory_mb: Option<u64>,
    /// The private tmpfs (HOME, TMPDIR), in MiB.
    pub tmp_mb: Option<u64>,
    /// CPU seconds per process (no default: unlimited).
    pub cpu_seconds: Option<u64>,
    /// The largest file a process may write, in MiB.
    pub file_size_mb: Option<u64>,
}

impl SandboxLimits {
    /// Each limit's name (as configured and reported) and value in force: the configured
    /// one, else the default; `None` when unlimited.
    pub fn effective(&self) -> [(&'static str, Option<u64>); 5] {
        [
            (
                "processes",
                self.processes.or(Some(DEFAULT_SANDBOX_PROCESSES)),
            ),
            (
                "memoryMb",
                self.memory_mb.or(Some(DEFAULT_SANDBOX_MEMORY_MB)),
            ),
            ("tmpMb", self.tmp_mb.or(Some(DEFAULT_SANDBOX_TMP_MB))),
            (
                "cpuSeconds",
                self.cpu_seconds.or(DEFAULT_SANDBOX_CPU_SECONDS),
            ),
            (
                "fileSizeMb",
                self.file_size_mb.or(Some(DEFAULT_SANDBOX_FILE_SIZE_MB)),
            ),
        ]
    }
}

/// What the processes of a tool may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    pub network: NetworkMode,
    /// With [`NetworkMode::Proxy`]: the host policy the egress proxy judges every connection
    /// by (network by host).
    pub hosts: Option<NetworkPolicy>,
    /// Extra directories or files to read and execute (absolute, or relative to `work_dir`).
    pub read: Vec<PathBuf>,
    /// Extra directories or files to write (absolute, or relative to `work_dir`).
    pub write: Vec<PathBuf>,
    /// The work directory: read-write, or read-only with `readonly`.
    pub work_dir: PathBuf,
    pub readonly: bool,
    /// Paths (files or directories, absolute or relative to `work_dir`) every process sees
    /// read-only, whatever else is writable: protected configuration (worker files, tools
    /// modules, git hooks, …) and read-only path rules. A path may not exist yet: a missing one
    /// may not be created (see `guard.rs`).
    pub protect: Vec<PathBuf>,
    /// Paths processes must not read, write, link or create: what `blocked` path rules match.
    /// An empty read-only node of the same type takes their place.
    pub hide: Vec<PathBuf>,
    pub limits: SandboxLimits,
}

impl SandboxPolicy {
    /// The default policy for `work_dir`: enforced, no network, no extra roots, writable,
    /// nothing protected or hidden, the default limits.
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            mode: SandboxMode::Enforce,
            network: NetworkMode::Off,
            hosts: None,
            read: Vec::new(),
            write: Vec::new(),
            work_dir: work_dir.into(),
            readonly: false,
            protect: Vec::new(),
            hide: Vec::new(),
            limits: SandboxLimits::default(),
        }
    }
}

/// A policy made ready to apply: built once per tool, shared by its calls.
#[derive(Debug)]
pub struct Sandbox {
    policy: SandboxPolicy,
    reach: Reach,
    support: KernelSupport,
    /// `None` when a best-effort sandbox has no launcher: calls then run unconfined.
    launcher: Option<PathBuf>,
    /// The launcher arguments every call shares.
    fixed_args: Vec<OsString>,
    /// Network by host without a network namespace (best-effort): the call's proxy listens
    /// on this host's loopback and the program has the network.
    proxy_on_host: bool,
    /// Protected and hidden paths, absolute.
    guarded: Guarded,
    /// The read roots of the last `PATH` seen: a tool's calls share one environment.
    search_path_roots: Mutex<Option<(OsString, Arc<[PathBuf]>)>>,
    warnings: Vec<String>,
    /// Which launcher server knows this policy, under which id.
    #[cfg(target_os = "linux")]
    registration: client::Registration,
}

/// Whether a best-effort warning was already handed out in this process.
static WARNED: AtomicBool = AtomicBool::new(false);

impl Sandbox {
    /// Prepares `policy`: canonicalises the work directory and the roots (each must exist:
    /// `CONFIG_INVALID` otherwise), probes the kernel and finds the launcher. Under `enforce`,
    /// a kernel without Landlock or seccomp, another OS, or a missing launcher is
    /// `SANDBOX_UNAVAILABLE`, saying what is missing and how to opt out.
    pub fn prepare(policy: SandboxPolicy) -> Result<Self> {
        let work_dir = canonical_dir(&policy.work_dir)?;
        let read = canonical_roots("read", &work_dir, &policy.read)?;
        let write = canonical_roots("write", &work_dir, &policy.write)?;
        let mut writable = write.clone();
        if !policy.readonly {
            writable.push(work_dir.clone());
        }
        paths::note_writable(&writable);
        // The work directory also when it is read-only here: another toolset or the file
        // tools may write it.
        let mut untrusted = write.clone();
        untrusted.push(work_dir.clone());
        for (key, roots) in [("read", &policy.read), ("write", &policy.write)] {
            roots_not_through_writable_links(key, &work_dir, roots, &untrusted)?;
        }
        let guarded = Guarded::resolve(&work_dir, &policy.protect, &policy.hide);
        let policy = SandboxPolicy {
            work_dir,
            read,
            write,
            protect: guarded.protect.clone(),
            hide: guarded.hide.clone(),
            ..policy
        };
        check_limits(&policy.limits)?;
        let reach = Reach::new(
            &policy.work_dir,
            policy.readonly,
            &policy.read,
            &policy.write,
        );
        let support = kernel_support();
        let enforce = policy.mode == SandboxMode::Enforce;
        let mut warnings = Vec::new();

        if !cfg!(target_os = "linux") {
            let message = format!(
                "the kernel sandbox exists only on Linux, not on {}",
                std::env::consts::OS
            );
            if enforce {
                return Err(unavailable(&message));
            }
            warnings.push(format!("{message}; programs run without it"));
        }
        let missing = support.missing_for_enforce();
        if enforce && !missing.is_empty() {
            return Err(unavailable(&format!(
                "this kernel lacks {}",
                missing.join(" and ")
            )));
        }
        let degraded = support.degraded_features();
        if !degraded.is_empty() && cfg!(target_os = "linux") {
            warnings.push(format!("the sandbox runs without {}", degraded.join(", ")));
        }
        let launcher = match locate::find_launcher() {
            Ok(found) => Some(found),
            Err(tried) => {
                let message = missing_launcher(&tried);
                if enforce {
                    return Err(unavailable(&message));
                }
                warnings.push(format!("{message}; programs run without a sandbox"));
                None
            }
        };
        // What only the view keeps: protected paths inside a writable root, hidden paths
        // inside a readable one, the proxy network.
        let needs_view = view_needs(&policy, &reach);
        let mut require_view = !needs_view.is_empty();
        let mut view_missing = false;
        if require_view {
            let why_not = match launcher.as_deref().map(probe_launcher) {
                Some(Some(probe)) => probe.view.err().or_else(|| {
                    (policy.network == NetworkMode::Proxy && !probe.network_namespace).then(|| {
                        "unprivileged user namespaces cannot make a network namespace here"
                            .to_string()
                    })
                }),
                Some(None) => Some("the launcher could not be asked".to_string()),
                None => None, // no launcher: reported above
            };
            if let Some(why) = why_not {
                let message = no_view(&needs_view, &why);
                if enforce {
                    return Err(Error::SandboxUnavailable(message));
                }
                warnings.push(message);
                require_view = false;
                view_missing = true;
            }
        }
        // Network by host where the call gets no network namespace of its own (best-effort
        // only: enforce was refused above): the proxy listens on this host's loopback.
        let proxy_on_host =
            policy.network == NetworkMode::Proxy && (launcher.is_none() || view_missing);
        if proxy_on_host {
            let message = "network by host needs a network namespace for each call, so that the egress proxy is the only way out, and none can be made here".to_string();
            if enforce {
                return Err(unavailable(&message));
            }
            // Where the view is missing, its warning already said what is lost.
            let said = if view_missing {
                "network by host"
            } else {
                &message
            };
            warnings.push(format!(
                "{said}: programs get the network with the proxy variables set, and one that ignores them connects directly"
            ));
        }
        let writable = |path: &Path| reach.write.iter().any(|root| path.starts_with(root));
        guarded.make_owned_directories(writable);

        let mut fixed_args: Vec<OsString> = Vec::new();
        if !enforce {
            fixed_args.push(ARG_BEST_EFFORT.into());
        }
        match policy.network {
            NetworkMode::Off => {}
            NetworkMode::On => fixed_args.push(ARG_NETWORK.into()),
            NetworkMode::Proxy if proxy_on_host => fixed_args.push(ARG_NETWORK.into()),
            NetworkMode::Proxy => {
                fixed_args.push(ARG_NETWORK_PROXY.into());
                fixed_args.push(PROXY_PORT.to_string().into());
            }
        }
        // The launcher compiles the filters for the policy's network setting; without seccomp
        // (best-effort only: `enforce` refused above) none are asked for.
        if support.seccomp {
            fixed_args.push(ARG_SECCOMP.into());
        }
        if require_view {
            fixed_args.push(ARG_REQUIRE_VIEW.into());
        }
        for (flag, paths) in [
            (ARG_READ, &reach.read_names),
            (ARG_WRITE, &reach.write),
            (ARG_DEVICE, &reach.devices),
            (ARG_PROTECT, &guarded.protect),
            (ARG_HIDE, &guarded.hide),
        ] {
            for path in paths {
                fixed_args.push(flag.into());
                fixed_args.push(path.clone().into_os_string());
            }
        }
        for (name, value) in policy.limits.effective() {
            if let Some(value) = value {
                fixed_args.push(ARG_LIMIT.into());
                fixed_args.push(format!("{name}={value}").into());
            }
        }
        Ok(Self {
            policy,
            reach,
            support,
            launcher,
            fixed_args,
            proxy_on_host,
            guarded,
            search_path_roots: Mutex::new(None),
            warnings,
            #[cfg(target_os = "linux")]
            registration: Mutex::new(None),
        })
    }

    /// The same sandbox without the layers named (`view`, `ipc`, `network-namespace`,
    /// `limits`): for benchmarks measuring what each layer costs, never for tools.
    #[doc(hidden)]
    pub fn without_layers(mut self, layers: &[&str]) -> Self {
        for layer in layers {
            self.fixed_args.push(ARG_WITHOUT.into());
            self.fixed_args.push(OsString::from(*layer));
        }
        self
    }

    /// The guarded paths' states before a call (see `guard.rs`); pair with
    /// [`Sandbox::repair_guarded`] after it. Cheap: an `lstat` per protected or hidden path.
    pub fn snapshot_guarded(&self) -> GuardSnapshot {
        self.guarded.snapshot()
    }

    /// Whether the sandbox protects or hides no path (nothing to repair after a call).
    pub fn guarded_paths_are_empty(&self) -> bool {
        self.guarded.is_empty()
    }

    /// After a call (or a long-lived process's request): removes what it created at a missing
    /// protected or hidden path and puts back a replaced protected symlink; one message per
    /// repair, for the call's result.
    pub fn repair_guarded(&self, before: &GuardSnapshot) -> Vec<String> {
        if self.guarded.is_empty() {
            return Vec::new();
        }
        self.guarded.repair(before)
    }

    /// Every path this sandbox grants, with how and why (for `toolgate check --sandbox`);
    /// the directories on a `PATH` of `search_path` included.
    pub fn grants(&self, search_path: Option<&OsString>) -> Vec<Grant> {
        let managers =
            version_managers::version_manager_roots(&std::env::var_os("PATH").unwrap_or_default());
        let mut grants = self.reach.grants(&self.policy, &managers);
        if let Some(search_path) = search_path {
            grants.extend(self.reach.search_path_grants(search_path));
        }
        for path in &self.guarded.protect {
            grants.push(Grant {
                path: path.clone(),
                kind: GrantKind::Protected,
                why: "protected: read-only for every process, also inside a writable root".into(),
            });
        }
        for path in &self.guarded.hide {
            grants.push(Grant {
                path: path.clone(),
                kind: GrantKind::Hidden,
                why: "hidden: an empty read-only node in its place".into(),
            });
        }
        grants
    }

    /// What a call of `program` is granted besides [`Sandbox::grants`] (its directory, the
    /// runtime parts of its install prefix, its file), with how and why; `search_path` is the
    /// call's `PATH`, whose grants it does not repeat.
    pub fn program_grants(&self, program: &Path, search_path: Option<&OsString>) -> Vec<Grant> {
        let known = self.search_path_roots(search_path);
        self.reach
            .program_grants(program, &known)
            .into_iter()
            .map(|(path, why)| Grant {
                path,
                kind: GrantKind::Read,
                why: format!("for '{}': {why}", program.display()),
            })
            .collect()
    }

    /// The policy, with the work directory and the roots canonical.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The host policy of a network-by-host sandbox: what the egress proxy judges its
    /// calls' connections by.
    pub fn host_policy(&self) -> Option<&NetworkPolicy> {
        self.policy.hosts.as_ref()
    }

    /// Whether a call's proxy listens on this host's loopback (network by host where no
    /// network namespace can be made, under `best-effort`) rather than inside the call's own
    /// network namespace.
    pub fn proxy_on_host(&self) -> bool {
        self.proxy_on_host
    }

    /// The kernel support this sandbox was prepared against.
    pub fn kernel_support(&self) -> KernelSupport {
        self.support
    }

    /// Where the launcher is, when one was found.
    pub fn launcher(&self) -> Option<&Path> {
        self.launcher.as_deref()
    }

    /// Whether calls run with the filesystem policy in force (the `sandboxed` of a result).
    pub fn confines(&self) -> bool {
        self.launcher.is_some() && self.support.landlock_abi > 0
    }

    /// What this (best-effort) sandbox does without; empty when it is complete.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The warnings as one message, the first time any sandbox in this process has one;
    /// `None` afterwards, so a degraded kernel is reported once, not per tool or call.
    pub fn warning_once(&self) -> Option<String> {
        if self.warnings.is_empty() || WARNED.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(format!(
            "toolgate sandbox (best-effort): {}",
            self.warnings.join("; ")
        ))
    }

    /// The launcher's probe (cached per process): what it can build on this machine.
    /// `None` without a launcher or when the probe cannot run.
    pub fn probe(&self) -> Option<LauncherProbe> {
        probe_launcher(self.launcher.as_deref()?)
    }

    /// The limits in force, each with its value (`None`: unlimited).
    pub fn limits(&self) -> [(&'static str, Option<u64>); 5] {
        self.policy.limits.effective()
    }

    /// Whether a call's program runs in a network namespace of its own whose only way out is
    /// the egress proxy's listener, which its init hands to toolgate (network by host where
    /// the kernel allows it). A one-shot launch of such a sandbox gets the handoff socket as
    /// its descriptor [`HANDOFF_FD`] (see [`Sandbox::command`]).
    pub fn proxy_in_namespace(&self) -> bool {
        self.policy.network == NetworkMode::Proxy && !self.proxy_on_host && self.launcher.is_some()
    }

    /// The launcher and its arguments (through `--` and `program`) for one call, or `None`
    /// when calls run unconfined: the policy's whole per-call share. With the proxy in the
    /// call's namespace ([`Sandbox::proxy_in_namespace`]), whoever spawns the launcher gives it
    /// the launcher's end of a handoff socket pair as descriptor [`HANDOFF_FD`] (and serves the
    /// other end with `Proxy::serve_handoff`). `call_dir` becomes
    /// writable; `env` is the child's environment, whose `PATH` directories become readable;
    /// `readable` lists further files the call may read (the script an interpreter runs).
    /// (This starts the one-shot launcher, as `toolgate sandbox` does; `exec` runs its calls
    /// through the launcher server.)
    pub fn command(
        &self,
        program: &Path,
        call_dir: &Path,
        env: &[(OsString, OsString)],
        readable: &[PathBuf],
    ) -> Option<(&Path, Vec<OsString>)> {
        self.command_with(program, call_dir, env, readable, false)
    }

    /// [`Sandbox::command`] for `toolgate sandbox`: with `tty`, the program keeps the
    /// terminal's session and `/dev/tty` (it may read what is typed there and change the
    /// terminal's modes; `TIOCSTI` stays refused); without it, it has a session of its own and
    /// no terminal.
    pub fn command_with(
        &self,
        program: &Path,
        call_dir: &Path,
        env: &[(OsString, OsString)],
        readable: &[PathBuf],
        tty: bool,
    ) -> Option<(&Path, Vec<OsString>)> {
        let grant_program = !self.program_chosen_by_a_process(program);
        self.one_shot_command(program, call_dir, env, readable, tty, grant_program)
    }

    /// Whether `program`, as found, is inside or reached through a symlink inside a directory
    /// a sandboxed process may have written (see `Reach::chosen_by_a_process`): its directory
    /// and prefix are then granted nothing (a planted `WORK/bin/python3 -> /srv/app/python3`
    /// must not make `/srv/app` readable); it runs only where it is readable anyway.
    pub(crate) fn program_chosen_by_a_process(&self, program: &Path) -> bool {
        self.reach.chosen_by_a_process(program)
    }

    /// [`Sandbox::command_with`], with whether the program's own directory is granted decided
    /// by the caller (from the name the program was found by).
    pub(crate) fn one_shot_command(
        &self,
        program: &Path,
        call_dir: &Path,
        env: &[(OsString, OsString)],
        readable: &[PathBuf],
        tty: bool,
        grant_program: bool,
    ) -> Option<(&Path, Vec<OsString>)> {
        let launcher = self.launcher.as_deref()?;
        let mut args = Vec::with_capacity(self.fixed_args.len() + 32);
        args.push(ARG_PARENT.into());
        args.push(std::process::id().to_string().into());
        args.extend(self.fixed_args.iter().cloned());
        if tty {
            args.push(ARG_TTY.into());
            args.push(ARG_DEVICE.into());
            args.push("/dev/tty".into());
        }
        if self.proxy_in_namespace() {
            args.push(ARG_PROXY_HANDOFF.into());
            args.push(HANDOFF_FD.to_string().into());
        }
        self.push_call_paths(&mut args, program, call_dir, env, readable, grant_program);
        args.push(ARG_END.into());
        args.push(program.as_os_str().to_owned());
        Some((launcher, args))
    }

    /// The host pids of the inits the launcher server offered for this sandbox's next calls
    /// (each set up for one kind of call, see `toolgate_sandbox::protocol::offer`): a call
    /// sent straight to one runs with that pid as [`crate::exec::RunningProcess::pid`]. For
    /// tests and diagnostics.
    #[cfg(target_os = "linux")]
    #[doc(hidden)]
    pub fn offered_inits(&self) -> Vec<u32> {
        client::offered_inits(&self.registration)
    }

    /// Starts a call through the launcher server (see `client.rs`); the child's ends of its
    /// standard streams are in `stdio`.
    #[cfg(target_os = "linux")]
    pub(crate) fn spawn_served(
        &self,
        call: ServedCall<'_>,
        stdio: client::CallStdio,
    ) -> std::result::Result<client::Served, client::Refusal> {
        let launcher = self
            .launcher
            .as_deref()
            .ok_or(client::Refusal::Unavailable)?;
        let mut words: Vec<OsString> = Vec::with_capacity(call.env.len() * 2 + 32);
        let kind = self.push_call_paths(
            &mut words,
            call.program,
            call.call_dir,
            call.env,
            call.readable,
            call.grant_program,
        );
        words.push(ARG_CWD.into());
        words.push(call.cwd.as_os_str().to_owned());
        for (key, value) in call.env {
            let mut var = key.clone();
            var.push("=");
            var.push(value);
            words.push(ARG_ENV.into());
            words.push(var);
        }
        words.push(ARG_END.into());
        words.push(call.program.as_os_str().to_owned());
        words.extend(call.args.iter().cloned());
        if words
            .iter()
            .any(|word| word.as_encoded_bytes().contains(&0))
        {
            return Err(client::Refusal::Failed(
                EXIT_CANNOT_EXECUTE,
                "an argument or an environment variable contains a NUL byte".into(),
            ));
        }
        client::spawn(
            launcher,
            &self.registration,
            &self.fixed_args,
            &toolgate_sandbox::protocol::words::join(&words),
            &kind,
            stdio,
            call.private_root,
            self.policy.network == NetworkMode::Proxy,
        )
    }

    /// The call's own paths: its private directory (writable), and the program's roots, the
    /// directories on its `PATH` and the call's `readable` files (readable). Returns the
    /// call's kind (what the launcher server makes inits ahead for).
    fn push_call_paths(
        &self,
        args: &mut Vec<OsString>,
        program: &Path,
        call_dir: &Path,
        env: &[(OsString, OsString)],
        readable: &[PathBuf],
        grant_program: bool,
    ) -> toolgate_sandbox::protocol::kind::CallKind {
        let search_path = env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value);
        let search_path = self.search_path_roots(search_path);
        let program_roots = if grant_program {
            self.reach.program_roots(program, &search_path)
        } else {
            Vec::new()
        };
        args.push(ARG_CALL_DIR.into());
        args.push(call_dir.as_os_str().to_owned());
        let reads: Vec<&Path> = search_path
            .iter()
            .chain(&program_roots)
            .chain(readable)
            .map(PathBuf::as_path)
            .collect();
        for root in &reads {
            args.push(ARG_READ.into());
            args.push(root.as_os_str().to_owned());
        }
        toolgate_sandbox::protocol::kind::CallKind::new(&reads, Some(call_dir.as_os_str()))
    }
}

/// One call for the launcher server.
#[cfg(target_os = "linux")]
pub(crate) struct ServedCall<'a> {
    pub program: &'a Path,
    pub args: &'a [OsString],
    pub cwd: &'a Path,
    pub call_dir: &'a Path,
    pub env: &'a [(OsString, OsString)],
    /// Files the call may read besides the policy's paths (`ExecRequest::readable`).
    pub readable: &'a [PathBuf],
    /// The directory holding this process's call directories: the launcher server removes it
    /// when toolgate is killed (given when the server starts).
    pub private_root: Option<&'a Path>,
    /// Whether the program's directory and prefix are granted (see
    /// [`Sandbox::program_chosen_by_a_process`]).
    pub grant_program: bool,
}

#[cfg(target_os = "linux")]
impl Drop for Sandbox {
    /// The launcher server forgets the policy.
    fn drop(&mut self) {
        client::forget(&self.registration);
    }
}

impl Sandbox {
    fn search_path_roots(&self, search_path: Option<&OsString>) -> Arc<[PathBuf]> {
        let Some(search_path) = search_path else {
            return Arc::from(Vec::new());
        };
        let mut cache = self
            .search_path_roots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((known, roots)) = cache.as_ref() {
            if known == search_path {
                return Arc::clone(roots);
            }
        }
        let roots: Arc<[PathBuf]> = Arc::from(self.reach.search_path_roots(search_path));
        *cache = Some((search_path.clone(), Arc::clone(&roots)));
        roots
    }
}

fn unavailable(what: &str) -> Error {
    Error::SandboxUnavailable(format!(
        "the sandbox cannot be enforced: {what}. To run anyway, configure the tool with sandbox: 'best-effort' (uses what the kernel offers) or sandbox: false (no sandbox)"
    ))
}

fn missing_launcher(tried: &[PathBuf]) -> String {
    let tried: Vec<String> = tried.iter().map(|p| format!("'{}'", p.display())).collect();
    format!(
        "the sandbox launcher '{LAUNCHER_NAME}' was not found (looked for {}); rebuild it with `npm run build:native` (or `cargo build -p toolgate-sandbox`), or set {LAUNCHER_ENV} to its path",
        tried.join(", ")
    )
}

/// The paths (and the network) only a view of its own can keep as promised, in words.
fn view_needs(policy: &SandboxPolicy, reach: &Reach) -> Vec<String> {
    let mut needs = Vec::new();
    let writable = |path: &Path| reach.write.iter().any(|root| path.starts_with(root));
    let readable = |path: &Path| writable(path) || reach.covers(path);
    for path in &policy.protect {
        if writable(path) {
            needs.push(format!("the protected path '{}'", path.display()));
        }
    }
    for path in &policy.hide {
        if readable(path) {
            needs.push(format!("the hidden path '{}'", path.display()));
        }
    }
    if policy.network == NetworkMode::Proxy {
        needs.push("the network by host (through the egress proxy)".into());
    }
    needs
}

/// Why a policy cannot be kept without a view, and what to do.
fn no_view(needs: &[String], why: &str) -> String {
    format!(
        "the sandbox cannot keep {} as promised: that needs a mount namespace of the call's own, which this machine does not allow ({why}; on Ubuntu 24.04 and later, AppArmor restricts unprivileged user namespaces: see docs/sandbox.md). Fix it by keeping configuration outside the work directory (or setting sandbox.root to a subfolder that holds none), or allow user namespaces for the launcher; sandbox: 'best-effort' runs without this protection (and says so)",
        needs.join(", ")
    )
}

/// Each limit within its bounds.
fn check_limits(limits: &SandboxLimits) -> Result<()> {
    for (name, value) in [
        ("processes", limits.processes),
        ("memoryMb", limits.memory_mb),
        ("tmpMb", limits.tmp_mb),
        ("cpuSeconds", limits.cpu_seconds),
        ("fileSizeMb", limits.file_size_mb),
    ] {
        if let Some(value) = value {
            if value == 0 || value > crate::limits::MAX_SANDBOX_LIMIT {
                return Err(Error::ConfigInvalid(format!(
                    "sandbox.limits.{name} is {value}; give a whole number from 1 to {}",
                    crate::limits::MAX_SANDBOX_LIMIT
                )));
            }
        }
    }
    Ok(())
}

fn canonical_dir(path: &Path) -> Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(real) if real.is_dir() => Ok(real),
        Ok(_) => Err(Error::ConfigInvalid(format!(
            "sandbox work directory '{}' is not a directory; give an existing directory",
            path.display()
        ))),
        Err(err) => Err(Error::ConfigInvalid(format!(
            "sandbox work directory '{}' cannot be used ({err}); give an existing directory",
            path.display()
        ))),
    }
}

fn canonical_roots(key: &str, work_dir: &Path, roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    roots
        .iter()
        .map(|root| {
            std::fs::canonicalize(work_dir.join(root)).map_err(|err| {
                Error::ConfigInvalid(format!(
                    "sandbox.{key} entry '{}' cannot be used ({err}); give an existing path, absolute or relative to the work directory",
                    root.display()
                ))
            })
        })
        .collect()
}

/// Refuses a configured root whose name leads through a symlink inside a writable root: a
/// sandboxed process can point that symlink anywhere (`./out -> ~/.ssh`), and the next sandbox
/// prepared would grant whatever it points to.
fn roots_not_through_writable_links(
    key: &str,
    work_dir: &Path,
    roots: &[PathBuf],
    writable: &[PathBuf],
) -> Result<()> {
    for root in roots {
        if let Some(link) = paths::link_inside_writable(&work_dir.join(root), writable) {
            return Err(Error::ConfigInvalid(format!(
                "sandbox.{key} entry '{}' leads through the symlink '{}', which is inside a directory sandboxed processes may write: one could point it anywhere, so toolgate does not follow it. Give the real path it stands for",
                root.display(),
                link.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_must_exist_and_are_resolved_against_the_work_dir() {
        let work = tempfile::tempdir().unwrap();
        std::fs::create_dir(work.path().join("data")).unwrap();
        let mut policy = SandboxPolicy::new(work.path());
        policy.mode = SandboxMode::BestEffort;
        policy.read = vec!["data".into()];
        let sandbox = Sandbox::prepare(policy.clone()).unwrap();
        let real = std::fs::canonicalize(work.path()).unwrap();
        assert_eq!(sandbox.policy().work_dir, real);
        assert_eq!(sandbox.policy().read, [real.join("data")]);

        policy.write = vec!["missing".into()];
        let err = Sandbox::prepare(policy.clone()).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(
            err.to_string().contains("sandbox.write entry 'missing'"),
            "{err}"
        );

        let err = Sandbox::prepare(SandboxPolicy::new(work.path().join("nope"))).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
    }

    #[test]
    fn unavailable_errors_say_how_to_opt_out() {
        let err = unavailable("this kernel lacks Landlock");
        assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
        let text = err.to_string();
        assert!(text.contains("Landlock"), "{text}");
        assert!(
            text.contains("sandbox: 'best-effort'") && text.contains("sandbox: false"),
            "{text}"
        );
        let text = missing_launcher(&[PathBuf::from("/x/toolgate-sandbox")]);
        assert!(
            text.contains("/x/toolgate-sandbox") && text.contains("npm run build:native"),
            "{text}"
        );
        assert!(text.contains(LAUNCHER_ENV), "{text}");
    }
}
