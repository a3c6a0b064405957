//! The kernel sandbox around every process toolgate starts for a tool.
//!
//! A [`SandboxPolicy`] says what a call may reach; [`Sandbox::prepare`] turns it into a
//! [`Sandbox`] once per tool (paths resolved, the seccomp filters compiled, the launcher found,
//! the kernel probed), and an [`ExecRequest`](crate::exec::ExecRequest) carrying it runs its
//! program through the `toolgate-sandbox` launcher, which applies it:
//!
//! - **Landlock**: read-write the work directory (read-only with `readonly`), the call's
//!   private directory and the `write` roots; read and execute the system runtime (`/usr`,
//!   `/bin`, `/sbin`, `/lib*`), the few `/etc` entries programs need, `/proc` (other processes'
//!   memory, environment and files stay closed: Landlock refuses ptrace-style access across the
//!   sandbox boundary), the CPU topology in `/sys`, the program with its install prefix and the
//!   directories on its `PATH`, and the `read` roots; `/dev/null` and a few other device files.
//!   Nothing else. Without `network`, no TCP bind or connect and no abstract unix sockets.
//! - **seccomp** (see `seccomp.rs`): no ptrace, no foreign-process memory, no keyring, no
//!   mounts or namespaces, no io_uring/bpf/perf/userfaultfd, no TIOCSTI; without `network`
//!   only unix sockets, and no `connect`.
//! - **The process tree** dies with the call (PID namespace with a tiny init, or a subreaper).
//!
//! `enforce` refuses to run where the kernel lacks Landlock or seccomp
//! (`SANDBOX_UNAVAILABLE`); `best-effort` runs with what exists and says so once.

mod locate;
mod paths;
mod probe;

#[cfg(target_os = "linux")]
pub(crate) mod client;
#[cfg(target_os = "linux")]
mod confine;
#[cfg(target_os = "linux")]
mod launcher;
#[cfg(target_os = "linux")]
mod opened;
#[cfg(target_os = "linux")]
mod plan;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod server;
#[cfg(target_os = "linux")]
mod tree;
#[cfg(target_os = "linux")]
mod wire;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub use locate::{LAUNCHER_ENV, LAUNCHER_NAME};
pub use probe::{kernel_support, KernelSupport};

#[cfg(target_os = "linux")]
pub use launcher::launcher_main;

use crate::error::{Error, Result};
use paths::Reach;

// The launcher's command line, written by `Sandbox::command` and read by `launcher.rs`.
const ARG_PARENT: &str = "--parent";
const ARG_BEST_EFFORT: &str = "--best-effort";
const ARG_NETWORK: &str = "--network";
const ARG_READ: &str = "--read";
const ARG_WRITE: &str = "--write";
const ARG_DEVICE: &str = "--device";
const ARG_SECCOMP: &str = "--seccomp";
const ARG_PROBE: &str = "--probe";
const ARG_END: &str = "--";
// In the launcher server's requests, and on its own command line.
const ARG_CWD: &str = "--cwd";
const ARG_ENV: &str = "--env";
const ARG_SERVE: &str = "--serve";
const ARG_CLEAN: &str = "--clean";

/// Exit code of the launcher when the sandbox could not be set up (nothing ran).
pub const EXIT_SETUP_FAILED: i32 = 125;
/// Exit code of the launcher when the program could not be executed.
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit code of the launcher when the program was not found.
pub const EXIT_NOT_FOUND: i32 = 127;
/// How every message of the launcher's own starts on stderr.
pub const LAUNCHER_MESSAGE_PREFIX: &str = "toolgate-sandbox: ";

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
    /// Extra directories or files to read and execute (absolute, or relative to `work_dir`).
    pub read: Vec<PathBuf>,
    /// Extra directories or files to write (absolute, or relative to `work_dir`).
    pub write: Vec<PathBuf>,
    /// The work directory: read-write, or read-only with `readonly`.
    pub work_dir: PathBuf,
    pub readonly: bool,
}

impl SandboxPolicy {
    /// The default policy for `work_dir`: enforced, no network, no extra roots, writable.
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            mode: SandboxMode::Enforce,
            network: false,
            read: Vec::new(),
            write: Vec::new(),
            work_dir: work_dir.into(),
            readonly: false,
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
    /// `CONFIG_INVALID` otherwise), probes the kernel, finds the launcher and compiles the
    /// seccomp filters. Under `enforce`, a kernel without Landlock or seccomp, another OS, or a
    /// missing launcher is `SANDBOX_UNAVAILABLE`, saying what is missing and how to opt out.
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
        let filters = compile_filters(policy.network, support.seccomp);
        let filters = match filters {
            Ok(filters) => filters,
            Err(message) if enforce => return Err(unavailable(&message)),
            Err(message) => {
                warnings.push(message);
                Vec::new()
            }
        };
        let mut fixed_args: Vec<OsString> = Vec::new();
        if !enforce {
            fixed_args.push(ARG_BEST_EFFORT.into());
        }
        if policy.network {
            fixed_args.push(ARG_NETWORK.into());
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
        for filter in filters {
            fixed_args.push(ARG_SECCOMP.into());
            fixed_args.push(filter.into());
        }
        Ok(Self {
            policy,
            reach,
            support,
            launcher,
            fixed_args,
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

    /// Starts a call through the launcher server (see `server.rs`); the child's ends of its
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
            &plan::join(&words),
            stdio,
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
        let search_path = self.search_path_roots(crate::exec::env::lookup(env, "PATH"));
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

#[cfg(target_os = "linux")]
fn compile_filters(network: bool, supported: bool) -> std::result::Result<Vec<String>, String> {
    if !supported {
        return Err("seccomp filters are not available on this kernel".into());
    }
    Ok(seccomp::compile(network)?
        .iter()
        .map(|program| seccomp::encode(program))
        .collect())
}

#[cfg(not(target_os = "linux"))]
fn compile_filters(_network: bool, _supported: bool) -> std::result::Result<Vec<String>, String> {
    Err("seccomp exists only on Linux".into())
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
