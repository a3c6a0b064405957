//! The kernel sandbox around every process toolgate starts for a tool.
//!
//! A [`SandboxPolicy`] says what a call may reach; [`Sandbox::prepare`] turns it into a
//! [`Sandbox`] once per tool (paths resolved, the launcher found, the kernel probed), and an
//! [`ExecRequest`](crate::exec::ExecRequest) carrying it runs its program through the `toolgate-sandbox` launcher (the
//! crate of that name: launcher, server, Landlock and seccomp), which applies it:
//!
//! - **Landlock**: read-write the work directory (read-only with `readonly`), the call's
//!   private directory and the `write` roots; read and execute the system runtime (`/usr`,
//!   `/bin`, `/sbin`, `/lib*`), the few `/etc` entries programs need, `/proc` (other processes'
//!   memory, environment and files stay closed: Landlock refuses ptrace-style access across the
//!   sandbox boundary), the CPU topology in `/sys`, the program with its install prefix and the
//!   directories on its `PATH`, and the `read` roots; `/dev/null` and a few other device files.
//!   Nothing else. Without `network`, no TCP bind or connect and no abstract unix sockets.
//! - **seccomp** (compiled by the launcher): no ptrace, no foreign-process memory, no keyring, no
//!   mounts or namespaces, no io_uring/bpf/perf/userfaultfd, no TIOCSTI; without `network`
//!   only unix sockets, and no `connect`.
//! - **The process tree** dies with the call (PID namespace with a tiny init, or a subreaper).
//!
//! `enforce` refuses to run where the kernel lacks Landlock or seccomp
//! (`SANDBOX_UNAVAILABLE`); `best-effort` runs with what exists and says so once.
//!
//! This module decides and asks; the launcher applies. It speaks to the launcher only through
//! `toolgate_sandbox::protocol` (its arguments, exit codes and messages): the launcher's own
//! code is not part of this crate.

mod locate;
mod paths;
mod probe;

#[cfg(target_os = "linux")]
pub(crate) mod client;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use locate::{LAUNCHER_ENV, LAUNCHER_NAME};
pub use probe::{kernel_support, KernelSupport};
pub use toolgate_sandbox::protocol::{
    EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED, LAUNCHER_MESSAGE_PREFIX,
};

use crate::error::{Error, Result};
use crate::network::NetworkPolicy;
use paths::Reach;
use toolgate_sandbox::protocol::{
    ARG_BEST_EFFORT, ARG_CWD, ARG_DEVICE, ARG_END, ARG_ENV, ARG_NETWORK, ARG_PARENT, ARG_PROBE,
    ARG_READ, ARG_SECCOMP, ARG_WRITE,
};

/// How strictly a sandbox is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Refuse to run (`SANDBOX_UNAVAILABLE`) where the kernel cannot enforce the policy.
    #[default]
    Enforce,
    /// Run with what the kernel offers; say once what is missing.
    BestEffort,
}

/// What the processes of a tool may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Allow network access (TCP/UDP, and unix sockets of services outside the sandbox).
    pub network: bool,
    /// Network by host: the only way out is toolgate's egress proxy, which judges every
    /// connection by this policy (`network` is then false).
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
    /// modules, git hooks, …) and read-only path rules. A path may not exist yet.
    pub protect: Vec<PathBuf>,
    /// Paths processes must not read, write, link or create: what `blocked` path rules match.
    pub hide: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The default policy for `work_dir`: enforced, no network, no extra roots, writable.
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            mode: SandboxMode::Enforce,
            network: false,
            hosts: None,
            read: Vec::new(),
            write: Vec::new(),
            work_dir: work_dir.into(),
            readonly: false,
            protect: Vec::new(),
            hide: Vec::new(),
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
        let policy = SandboxPolicy {
            work_dir,
            read,
            write,
            ..policy
        };
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
        let proxy_on_host = match &policy.hosts {
            None => false,
            Some(_) if launcher.is_none() => true,
            Some(_) => match network_namespace_support() {
                Ok(()) => false,
                Err(why) => {
                    let message = format!(
                        "network by host needs a network namespace for each call, so that the egress proxy is the only way out, and {why}"
                    );
                    if enforce {
                        return Err(unavailable(&message));
                    }
                    warnings.push(format!(
                        "{message}; programs get the network with the proxy variables set, and one that ignores them connects directly"
                    ));
                    true
                }
            },
        };
        let mut fixed_args: Vec<OsString> = Vec::new();
        if !enforce {
            fixed_args.push(ARG_BEST_EFFORT.into());
        }
        if policy.network || proxy_on_host {
            fixed_args.push(ARG_NETWORK.into());
        }
        // The launcher compiles the filters for the policy's network setting; without seccomp
        // (best-effort only: `enforce` refused above) none are asked for.
        if support.seccomp {
            fixed_args.push(ARG_SECCOMP.into());
        }
        for (flag, paths) in [
            (ARG_READ, &reach.read),
            (ARG_WRITE, &reach.write),
            (ARG_DEVICE, &reach.devices),
        ] {
            for path in paths {
                fixed_args.push(flag.into());
                fixed_args.push(path.clone().into_os_string());
            }
        }
        Ok(Self {
            policy,
            reach,
            support,
            launcher,
            fixed_args,
            proxy_on_host,
            search_path_roots: Mutex::new(None),
            warnings,
            #[cfg(target_os = "linux")]
            registration: Mutex::new(None),
        })
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

    /// Runs the launcher's probe: whether this kernel lets it use user and PID namespaces.
    /// Returns `None` without a launcher or when the probe cannot run.
    pub fn probe_namespaces(&self) -> Option<(bool, bool)> {
        let output = std::process::Command::new(self.launcher.as_ref()?)
            .arg(ARG_PROBE)
            .env_clear()
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let flag = |name: &str| {
            text.split_whitespace()
                .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
                .map(|value| value == "1")
        };
        Some((flag("user_namespaces")?, flag("pid_namespace")?))
    }

    /// The launcher and its arguments (through `--` and `program`) for one call, or `None`
    /// when calls run unconfined: the policy's whole per-call share. `call_dir` becomes
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
        let launcher = self.launcher.as_deref()?;
        let mut args = Vec::with_capacity(self.fixed_args.len() + 32);
        args.push(ARG_PARENT.into());
        args.push(std::process::id().to_string().into());
        args.extend(self.fixed_args.iter().cloned());
        self.push_call_paths(&mut args, program, call_dir, env, readable);
        args.push(ARG_END.into());
        args.push(program.as_os_str().to_owned());
        Some((launcher, args))
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
        self.push_call_paths(
            &mut words,
            call.program,
            call.call_dir,
            call.env,
            call.readable,
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
            stdio,
            call.private_root,
        )
    }

    /// The call's own paths: its private directory (writable), and the program's roots, the
    /// directories on its `PATH` and the call's `readable` files (readable).
    fn push_call_paths(
        &self,
        args: &mut Vec<OsString>,
        program: &Path,
        call_dir: &Path,
        env: &[(OsString, OsString)],
        readable: &[PathBuf],
    ) {
        let search_path = env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value);
        let search_path = self.search_path_roots(search_path);
        let program_roots = self.reach.program_roots(program, &search_path);
        args.push(ARG_WRITE.into());
        args.push(call_dir.as_os_str().to_owned());
        for root in search_path.iter().chain(&program_roots).chain(readable) {
            args.push(ARG_READ.into());
            args.push(root.as_os_str().to_owned());
        }
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

/// Whether a call can get a network namespace of its own whose only way out is a listener
/// handed to the egress proxy; `Err` says why not.
fn network_namespace_support() -> std::result::Result<(), String> {
    Err("the launcher of this build gives a call no network namespace of its own".into())
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
