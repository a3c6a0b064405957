//! The kernel sandbox as the CLI and the SDK see it: what this machine supports, the
//! effective policy of a work directory or a worker, and `toolgate sandbox`'s command line.

use std::collections::HashMap;
use std::sync::Mutex;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::sandbox_config::{self, Launch, LaunchOptions, SandboxScope};

use crate::error::{infallible, sync};
use crate::js_value;
use crate::process::RefusedConnection;

/// What this kernel offers the sandbox, and where the launcher is.
#[napi(object, object_from_js = false)]
pub struct SandboxSupport {
    /// The Landlock ABI version (0: no Landlock).
    pub landlock_abi: u32,
    pub seccomp: bool,
    /// Whether unprivileged user namespaces are allowed (`null`: the launcher could not say).
    pub user_namespaces: Option<bool>,
    /// Whether a PID namespace can be created (`null`: the launcher could not say).
    pub pid_namespace: Option<bool>,
    /// Whether each call gets a view of the file system of its own (a mount namespace).
    pub view: Option<bool>,
    /// Why not, when it does not.
    pub view_error: Option<String>,
    /// Whether a call's `/proc` is its own.
    pub fresh_proc: Option<bool>,
    /// Whether calls get a network namespace of their own (no network, proxy network).
    pub network_namespace: Option<bool>,
    /// How limits are enforced here (`cgroup v1 (pids, memory, cpuacct); cpuSeconds per call`,
    /// `rlimits (why); cpuSeconds per process (RLIMIT_CPU)`).
    pub limits: Option<String>,
    /// What differs here because there is no view (empty when there is one).
    pub without_view: Vec<String>,
    /// The `toolgate-sandbox` launcher found, or `null`.
    pub launcher: Option<String>,
    /// What `enforce` needs and is missing here (empty: the default sandbox works).
    pub missing_for_enforce: Vec<String>,
    /// What a sandbox here does without.
    pub degraded: Vec<String>,
    /// Version-manager roots (`~/.pyenv`) readable because their shims are on `PATH`.
    pub version_managers: Vec<String>,
}

/// A path a sandbox grants, how, and why.
#[napi(object, object_from_js = false)]
pub struct SandboxGrant {
    pub path: String,
    /// `read`, `write`, `device`, `protected` or `hidden`.
    pub access: String,
    pub why: String,
}

/// A limit of each call and its value (`null`: unlimited).
#[napi(object, object_from_js = false)]
pub struct SandboxLimit {
    /// `processes`, `memoryMb`, `tmpMb`, `cpuSeconds`, `fileSizeMb`.
    pub name: String,
    pub value: Option<f64>,
}

/// An effective sandbox policy.
#[napi(object, object_from_js = false)]
pub struct SandboxSummary {
    /// `enforce`, `best-effort` or `off`.
    pub mode: String,
    /// Whether processes get the open network (`network: true`).
    pub network: bool,
    /// The network in words: `off`, `open (network: true, every host)`, or `by host through
    /// the egress proxy: allow …; deny …; ask about other hosts`.
    pub network_policy: String,
    /// Extra read/execute roots (besides the system runtime), canonical.
    pub read: Vec<String>,
    /// Extra writable roots, canonical.
    pub write: Vec<String>,
    /// The work directory: writable unless `readonly`.
    pub work_dir: String,
    pub readonly: bool,
    /// Each call's limits.
    pub limits: Vec<SandboxLimit>,
    /// Every path granted, with its reason (empty when the sandbox is off or cannot be
    /// prepared).
    pub grants: Vec<SandboxGrant>,
}

impl SandboxSummary {
    /// The summary of `scope` with what calls of each of `programs` are granted besides.
    pub fn with_programs(scope: &SandboxScope, programs: &[std::path::PathBuf]) -> Self {
        let mut summary = Self::from(scope);
        let extra = sandbox_config::program_grants(scope, programs).unwrap_or_default();
        summary
            .grants
            .extend(extra.into_iter().map(SandboxGrant::from));
        summary
    }
}

impl From<toolgate_core::sandbox::Grant> for SandboxGrant {
    fn from(grant: toolgate_core::sandbox::Grant) -> Self {
        SandboxGrant {
            path: grant.path.display().to_string(),
            access: grant.kind.as_str().to_string(),
            why: grant.why,
        }
    }
}

impl From<&SandboxScope> for SandboxSummary {
    fn from(scope: &SandboxScope) -> Self {
        let text = |paths: &[std::path::PathBuf]| {
            paths
                .iter()
                .map(|path| path.display().to_string())
                .collect()
        };
        Self {
            mode: scope.mode.as_str().to_string(),
            network: scope.network.is_open(),
            network_policy: scope.network.describe(),
            read: text(&scope.read),
            write: text(&scope.write),
            work_dir: scope.work_dir.display().to_string(),
            readonly: scope.readonly,
            limits: scope
                .limits
                .effective()
                .into_iter()
                .map(|(name, value)| SandboxLimit {
                    name: name.to_string(),
                    value: value.map(|value| value as f64),
                })
                .collect(),
            grants: sandbox_config::grants(scope)
                .unwrap_or_default()
                .into_iter()
                .map(SandboxGrant::from)
                .collect(),
        }
    }
}

/// Probes the kernel (Landlock ABI, seccomp) and asks the launcher whether it may use user
/// and PID namespaces.
#[napi]
pub fn sandbox_support(env: Env) -> napi::Result<SandboxSupport> {
    sync(&env, "sandboxSupport", || {
        let report = sandbox_config::support_report()?;
        Ok(SandboxSupport {
            landlock_abi: report.landlock_abi,
            seccomp: report.seccomp,
            user_namespaces: report.user_namespaces,
            pid_namespace: report.pid_namespace,
            view: report.view,
            view_error: report.view_error,
            fresh_proc: report.fresh_proc,
            network_namespace: report.network_namespace,
            limits: report.limits,
            without_view: report.without_view,
            launcher: report.launcher.map(|path| path.display().to_string()),
            missing_for_enforce: report.missing_for_enforce,
            degraded: report.degraded,
            version_managers: report
                .version_managers
                .iter()
                .map(|path| path.display().to_string())
                .collect(),
        })
    })
}

/// The effective sandbox of `{ workDir?, sandbox? }` (the options of `toolgate sandbox`).
/// Throws `CONFIG_INVALID` for unknown options or roots that do not exist.
#[napi]
pub fn sandbox_policy(env: Env, options: Option<Unknown<'_>>) -> napi::Result<SandboxSummary> {
    sync(&env, "sandboxPolicy", || {
        let options: LaunchOptions = js_value::config(&env, options)?;
        Ok(SandboxSummary::from(&options.scope()?))
    })
}

/// A program ready to start under a sandbox (`toolgate sandbox`): spawn `file` with `args`,
/// `env` and `cwd` and the terminal's standard streams, then call `finish()`, which removes
/// the private HOME/TMPDIR.
#[napi]
pub struct SandboxLaunch {
    launch: Mutex<Option<Launch>>,
    file: String,
    args: Vec<String>,
    env: HashMap<String, String>,
    cwd: String,
    sandboxed: bool,
    sandbox_warning: Option<String>,
}

#[napi]
impl SandboxLaunch {
    /// Prepares `program` (a name on `PATH` or a path) with `args` under the sandbox of
    /// `{ workDir?, sandbox? }`. Throws `CONFIG_INVALID`, `SANDBOX_UNAVAILABLE` (under
    /// `enforce`) or `BINARY_NOT_FOUND`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        options: Option<Unknown<'_>>,
        program: String,
        args: Vec<String>,
    ) -> napi::Result<Self> {
        sync(&env, "new SandboxLaunch", || {
            let options: LaunchOptions = js_value::config(&env, options)?;
            let launch = Launch::prepare(options, &program, &args)?;
            let lossy = |text: &std::ffi::OsStr| text.to_string_lossy().into_owned();
            Ok(SandboxLaunch {
                file: launch.file.display().to_string(),
                args: launch.args.iter().map(|arg| lossy(arg)).collect(),
                env: launch
                    .env
                    .iter()
                    .map(|(name, value)| (lossy(name), lossy(value)))
                    .collect(),
                cwd: launch.cwd.display().to_string(),
                sandboxed: launch.sandboxed,
                sandbox_warning: launch.sandbox.warning.clone(),
                launch: Mutex::new(Some(launch)),
            })
        })
    }

    /// The file to execute: the launcher, or the program when it runs unconfined.
    #[napi(getter)]
    pub fn file(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "SandboxLaunch.file", || self.file.clone())
    }

    /// Its arguments (not including `file` itself).
    #[napi(getter)]
    pub fn args(&self, env: Env) -> napi::Result<Vec<String>> {
        infallible(&env, "SandboxLaunch.args", || self.args.clone())
    }

    /// The complete environment of the program.
    #[napi(getter)]
    pub fn env(&self, env: Env) -> napi::Result<HashMap<String, String>> {
        infallible(&env, "SandboxLaunch.env", || self.env.clone())
    }

    /// The working directory (the work directory).
    #[napi(getter)]
    pub fn cwd(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "SandboxLaunch.cwd", || self.cwd.clone())
    }

    /// Whether the filesystem policy is in force.
    #[napi(getter)]
    pub fn sandboxed(&self, env: Env) -> napi::Result<bool> {
        infallible(&env, "SandboxLaunch.sandboxed", || self.sandboxed)
    }

    /// The one best-effort sandbox warning of this process, or `null`.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "SandboxLaunch.sandboxWarning", || {
            self.sandbox_warning.clone()
        })
    }

    /// The descriptor to give the launcher as its fd 3 (`stdio: [..., handoffFd]`): the socket
    /// its init hands the egress proxy's listener over (`--allow-host`/`--deny-host`); `null`
    /// when it needs none. Call `closeHandoff()` once the launcher is spawned.
    #[napi(getter)]
    pub fn handoff_fd(&self, env: Env) -> napi::Result<Option<i32>> {
        infallible(&env, "SandboxLaunch.handoffFd", || {
            handoff_fd_of(&self.launch, Launch::handoff_fd)
        })
    }

    /// Closes this process's copy of the handoff socket (once the launcher is spawned, or
    /// could not be).
    #[napi]
    pub fn close_handoff(&self, env: Env) -> napi::Result<()> {
        infallible(&env, "SandboxLaunch.closeHandoff", || {
            close_handoff_of(&self.launch, Launch::close_handoff)
        })
    }

    /// Removes the private HOME/TMPDIR; call it once the program has ended. Returns the
    /// connections the egress proxy refused (network by host), once per destination.
    #[napi]
    pub fn finish(&self, env: Env) -> napi::Result<Vec<RefusedConnection>> {
        infallible(&env, "SandboxLaunch.finish", || {
            let launch = self.launch.lock().ok().and_then(|mut launch| launch.take());
            let records = launch.map(Launch::finish).unwrap_or_default();
            toolgate_core::network::refused_connections(&records)
                .into_iter()
                .map(RefusedConnection::from)
                .collect()
        })
    }
}

/// The handoff descriptor of the one-shot launch in `slot` (a class's launch, taken once it is
/// done with); `None` when it needs none or is gone.
pub(crate) fn handoff_fd_of<T>(
    slot: &Mutex<Option<T>>,
    fd: impl FnOnce(&T) -> Option<i32>,
) -> Option<i32> {
    slot.lock()
        .ok()
        .as_deref()
        .and_then(Option::as_ref)
        .and_then(fd)
}

/// Closes this process's copy of the handoff socket of the one-shot launch in `slot`, when it
/// is still there.
pub(crate) fn close_handoff_of<T>(slot: &Mutex<Option<T>>, close: impl FnOnce(&mut T)) {
    if let Some(launch) = slot.lock().ok().as_deref_mut().and_then(Option::as_mut) {
        close(launch);
    }
}
