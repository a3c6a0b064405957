//! What the launcher can build on this machine, from its `--probe`: user and PID
//! namespaces, the view (a mount namespace of the call's own), a new `/proc`, network
//! namespaces, and how limits are enforced. Asked once per launcher and process (it starts
//! the launcher, which tries each in a child).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use toolgate_sandbox::protocol::{probe as keys, ARG_PROBE};

/// The launcher's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LauncherProbe {
    pub user_namespaces: bool,
    pub pid_namespace: bool,
    /// A view can be built (`Err`: why not).
    pub view: Result<(), String>,
    pub fresh_proc: bool,
    pub network_namespace: bool,
    /// How limits are enforced, and whether `cpuSeconds` counts the whole call: e.g.
    /// `cgroup v1 (pids, memory, cpuacct); cpuSeconds per call` or `rlimits (why no cgroup);
    /// cpuSeconds per process (RLIMIT_CPU)`.
    pub cgroups: String,
}

impl LauncherProbe {
    /// Reads the `key=value` lines of `--probe`.
    pub fn parse(text: &str) -> Option<Self> {
        let values: HashMap<&str, &str> = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .collect();
        let flag = |key: &str| values.get(key).map(|value| *value == "1");
        Some(Self {
            user_namespaces: flag(keys::USER_NAMESPACES)?,
            pid_namespace: flag(keys::PID_NAMESPACE)?,
            view: match flag(keys::VIEW) {
                Some(true) => Ok(()),
                _ => Err(values
                    .get("view_error")
                    .map_or("the launcher cannot build it here", |why| why)
                    .to_string()),
            },
            fresh_proc: flag(keys::FRESH_PROC).unwrap_or(false),
            network_namespace: flag(keys::NETWORK_NAMESPACE).unwrap_or(false),
            cgroups: values
                .get(keys::CGROUPS)
                .map_or_else(String::new, |text| text.to_string()),
        })
    }
}

/// Runs `launcher --probe` once per launcher (cached for the process); `None` when it cannot
/// run or does not answer in this form.
pub fn probe_launcher(launcher: &Path) -> Option<LauncherProbe> {
    static CACHE: Mutex<Vec<(PathBuf, Option<LauncherProbe>)>> = Mutex::new(Vec::new());
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, known)) = cache.iter().find(|(path, _)| path == launcher) {
        return known.clone();
    }
    let answer = std::process::Command::new(launcher)
        .arg(ARG_PROBE)
        .env_clear()
        .current_dir("/")
        .output()
        .ok()
        .and_then(|output| LauncherProbe::parse(&String::from_utf8_lossy(&output.stdout)));
    cache.push((launcher.to_path_buf(), answer.clone()));
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_answers_are_read_and_partial_ones_refused() {
        let probe = LauncherProbe::parse(
            "user_namespaces=1\npid_namespace=1\nview=0\nview_error=a mount namespace cannot be made: EPERM\nfresh_proc=0\nnetwork_namespace=1\ncgroups=rlimits (no cgroup v2)\n",
        )
        .unwrap();
        assert!(probe.user_namespaces && probe.network_namespace && !probe.fresh_proc);
        assert_eq!(
            probe.view,
            Err("a mount namespace cannot be made: EPERM".to_string())
        );
        assert_eq!(probe.cgroups, "rlimits (no cgroup v2)");
        assert!(LauncherProbe::parse("user_namespaces=1 pid_namespace=1").is_none());
    }
}
