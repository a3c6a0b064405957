//! What this machine offers the sandbox, for `toolgate check --sandbox`.

use std::path::PathBuf;

use crate::error::Result;
use crate::sandbox::{kernel_support, Sandbox, SandboxMode, SandboxPolicy};

/// The kernel features the sandbox uses, and where its launcher is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportReport {
    /// The Landlock ABI version (0: none).
    pub landlock_abi: u32,
    pub seccomp: bool,
    /// Whether the launcher may create user namespaces (`None`: it could not be asked).
    pub user_namespaces: Option<bool>,
    /// Whether the launcher may create a PID namespace (`None`: it could not be asked).
    pub pid_namespace: Option<bool>,
    /// The launcher found, if any.
    pub launcher: Option<PathBuf>,
    /// What `enforce` needs and the kernel lacks (empty: `enforce` works).
    pub missing_for_enforce: Vec<String>,
    /// What a sandbox here does without (launcher included).
    pub degraded: Vec<String>,
    /// Version-manager roots readable because their shims are on `PATH`.
    pub version_managers: Vec<PathBuf>,
}

/// Probes the kernel and the launcher (running the launcher's namespace probe once).
pub fn support_report() -> Result<SupportReport> {
    let support = kernel_support();
    let probe_dir = crate::exec::private_dirs_root();
    let sandbox = Sandbox::prepare(SandboxPolicy {
        mode: SandboxMode::BestEffort,
        ..SandboxPolicy::new(probe_dir)
    })?;
    let probe = sandbox.probe();
    let mut missing: Vec<String> = support
        .missing_for_enforce()
        .into_iter()
        .map(String::from)
        .collect();
    if sandbox.launcher().is_none() {
        missing.push(format!(
            "the launcher '{}' (rebuild it with `npm run build:native`)",
            crate::sandbox::LAUNCHER_NAME
        ));
    }
    Ok(SupportReport {
        landlock_abi: support.landlock_abi,
        seccomp: support.seccomp,
        user_namespaces: probe.as_ref().map(|probe| probe.user_namespaces),
        pid_namespace: probe.as_ref().map(|probe| probe.pid_namespace),
        launcher: sandbox.launcher().map(PathBuf::from),
        missing_for_enforce: missing,
        degraded: sandbox.warnings().to_vec(),
        version_managers: super::version_manager_roots(
            &std::env::var_os("PATH").unwrap_or_default(),
        ),
    })
}
