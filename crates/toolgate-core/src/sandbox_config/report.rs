//! What this machine offers the sandbox, and every grant of a policy with its reason, for
//! `toolgate check --sandbox`.

use std::path::PathBuf;

use super::SandboxScope;
use crate::error::Result;
use crate::sandbox::{kernel_support, Grant, Sandbox, SandboxMode, SandboxPolicy};

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
    /// Whether each call gets a view of its own (a mount namespace); `None`: unknown.
    pub view: Option<bool>,
    /// Why not, when it does not.
    pub view_error: Option<String>,
    /// Whether a call's `/proc` is its own (else the host's is shown).
    pub fresh_proc: Option<bool>,
    /// Whether calls without network (and with the proxy network) get a network namespace.
    pub network_namespace: Option<bool>,
    /// How the limits are enforced, and whether `cpuSeconds` counts the whole call: e.g.
    /// `cgroup v1 (pids, memory, cpuacct); cpuSeconds per call` or `rlimits (why no cgroup);
    /// cpuSeconds per process (RLIMIT_CPU)`.
    pub limits: Option<String>,
    /// What differs here because there is no view (empty when there is one).
    pub without_view: Vec<String>,
    /// The launcher found, if any.
    pub launcher: Option<PathBuf>,
    /// What `enforce` needs and the kernel lacks (empty: `enforce` works).
    pub missing_for_enforce: Vec<String>,
    /// What a sandbox here does without (launcher included).
    pub degraded: Vec<String>,
    /// Version-manager roots readable because their shims are on `PATH`.
    pub version_managers: Vec<PathBuf>,
}

/// What a sandbox gives up where no view can be built (Landlock keeps the rest).
const WITHOUT_VIEW: &[&str] = &[
    "metadata of readable files outside the writable roots (mode, owner, times, extended attributes) is not protected: Landlock does not govern it",
    "protected and hidden paths inside the work directory or a root cannot be kept (enforce refuses such a policy; best-effort runs without them)",
    "the network through the proxy is unavailable (it needs a network namespace)",
    "other host paths can be stat'ed and watched (not read); /proc is the host's; the private HOME/TMPDIR is not size-limited",
];

/// Probes the kernel and the launcher (running the launcher's probe once per process).
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
    let view = probe.as_ref().map(|probe| probe.view.is_ok());
    Ok(SupportReport {
        landlock_abi: support.landlock_abi,
        seccomp: support.seccomp,
        user_namespaces: probe.as_ref().map(|probe| probe.user_namespaces),
        pid_namespace: probe.as_ref().map(|probe| probe.pid_namespace),
        view,
        view_error: probe.as_ref().and_then(|probe| probe.view.clone().err()),
        fresh_proc: probe.as_ref().map(|probe| probe.fresh_proc),
        network_namespace: probe.as_ref().map(|probe| probe.network_namespace),
        limits: probe.as_ref().map(|probe| probe.cgroups.clone()),
        without_view: if view == Some(false) {
            WITHOUT_VIEW.iter().map(|line| line.to_string()).collect()
        } else {
            Vec::new()
        },
        launcher: sandbox.launcher().map(PathBuf::from),
        missing_for_enforce: missing,
        degraded: sandbox.warnings().to_vec(),
        version_managers: super::version_manager_roots(
            &std::env::var_os("PATH").unwrap_or_default(),
        ),
    })
}

/// Every path a scope's processes are granted, with how and why, the directories on this
/// process's `PATH` included (what a tool's child environment gets); empty for mode `off`.
pub fn grants(scope: &SandboxScope) -> Result<Vec<Grant>> {
    let Some(sandbox) = reported(scope)? else {
        return Ok(Vec::new());
    };
    Ok(sandbox.grants(std::env::var_os("PATH").as_ref()))
}

/// The sandbox of `scope` as a report looks at it (best effort: what this kernel lacks does not
/// stop the report); `None` for mode `off`.
fn reported(scope: &SandboxScope) -> Result<Option<Sandbox>> {
    let Some(policy) = scope.policy() else {
        return Ok(None);
    };
    Sandbox::prepare(SandboxPolicy {
        mode: SandboxMode::BestEffort,
        ..policy
    })
    .map(Some)
}

/// What calls of each of `programs` are granted besides [`grants`] (see
/// [`Sandbox::program_grants`]), each path once; empty for mode `off`.
pub fn program_grants(scope: &SandboxScope, programs: &[PathBuf]) -> Result<Vec<Grant>> {
    let Some(sandbox) = reported(scope)? else {
        return Ok(Vec::new());
    };
    let search_path = std::env::var_os("PATH");
    let mut grants: Vec<Grant> = Vec::new();
    for program in programs {
        for grant in sandbox.program_grants(program, search_path.as_ref()) {
            if !grants.iter().any(|known| known.path == grant.path) {
                grants.push(grant);
            }
        }
    }
    Ok(grants)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::GrantKind;

    #[test]
    fn grants_say_why_and_never_give_a_prefix() {
        let work = tempfile::tempdir().unwrap();
        let scope = SandboxScope::new(
            work.path(),
            false,
            &Default::default(),
            work.path(),
            "sandbox",
        )
        .unwrap();
        let grants = grants(&scope).unwrap();
        let real = std::fs::canonicalize(work.path()).unwrap();
        let work_grant = grants.iter().find(|grant| grant.path == real).unwrap();
        assert_eq!(work_grant.kind, GrantKind::Write);
        assert!(work_grant.why.contains("work directory"));
        assert!(grants.iter().any(
            |grant| grant.path == std::path::Path::new("/usr") && grant.why.contains("runtime")
        ));
        assert!(grants
            .iter()
            .all(|grant| grant.path != std::path::Path::new("/")));
        assert!(grants.iter().all(|grant| !grant.why.is_empty()));
    }
}
