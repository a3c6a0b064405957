//! The `executables` toolset section of a worker file; in JavaScript spelling
//! ([`crate::options::spelling`]) also the options of `executableTools`
//! ([`super::ExecutableToolsOptions`]).
//!
//! ```yaml
//! executables:
//!   dirs: [./toolgate-tools]        # earlier directories win a name clash
//!   timeout: 30                     # seconds, every tool (JavaScript: timeoutMs)
//!   tool_timeouts: { slow_report: 120 }  # (JavaScript: toolTimeoutsMs)
//!   max_output_bytes: 1048576
//!   env_passthrough: [GITHUB_TOKEN]
//!   approval: { default: ask, tools: { weather: preApproved } }
//! ```
//!
//! Relative `dirs` are resolved by the caller (the worker loader) against the worker file's
//! directory; [`ExecutablesConfig::registry_options`] does it given that directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::ApprovalConfig;

use super::check_tool_name;
use super::discovery::{default_directories, DiscoveryOptions, ToolDirectory};
use super::registry::RegistryOptions;
use super::run::RunOptions;
use crate::error::{Error, Result};
use crate::limits::MAX_TIMEOUT;
use crate::options::{spelling::js_key, ByteCount};
use crate::sandbox_config::SandboxFields;

/// Configuration of the executable tools toolset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutablesConfig {
    /// Tool directories, highest precedence first. Without it: `./toolgate-tools` of the
    /// project, then `~/.toolgate/tools`.
    #[serde(default)]
    pub dirs: Option<Vec<PathBuf>>,
    /// Seconds a tool may run before its process group is killed (default 30).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Per-tool timeouts in seconds, by tool name; they override `timeout`.
    #[serde(default)]
    pub tool_timeouts: BTreeMap<String, f64>,
    /// Cap for each of stdout and stderr in bytes (default 1 MiB, at most 1 GiB).
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    /// Names of environment variables passed to tools besides PATH, LANG, LC_*, TZ, USER and
    /// LOGNAME (HOME and TMPDIR are private to each run).
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// Approval of the tools (default `ask`).
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    /// These tools' kernel sandbox: its keys replace the worker's (an absent key keeps the
    /// worker's value) and may widen them; in a called worker it stays within the caller's.
    /// `description` runs at discovery get no network and a read-only work directory whatever
    /// it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxFields>,
}

impl ExecutablesConfig {
    /// The registry options this configuration describes. Relative `dirs` are resolved
    /// against `config_dir` (the worker file's directory); without `dirs` the defaults are
    /// used (`<work_dir>/toolgate-tools`, then `~/.toolgate/tools`, both optional). Tools run
    /// in `work_dir`. Throws `CONFIG_INVALID` for a zero or huge timeout, a bad tool name in
    /// `tool_timeouts` or a malformed variable name.
    pub fn registry_options(&self, config_dir: &Path, work_dir: &Path) -> Result<RegistryOptions> {
        self.registry_options_spelled(config_dir, work_dir, Spelling::WorkerFile)
    }

    /// [`registry_options`](Self::registry_options), its messages naming keys in `spelling`.
    pub(super) fn registry_options_spelled(
        &self,
        config_dir: &Path,
        work_dir: &Path,
        spelling: Spelling,
    ) -> Result<RegistryOptions> {
        let directories = match &self.dirs {
            Some(dirs) => dirs
                .iter()
                .map(|dir| ToolDirectory::required(config_dir.join(dir)))
                .collect(),
            None => default_directories(work_dir),
        };
        let mut run = RunOptions::new(work_dir);
        if let Some(seconds) = self.timeout {
            run.timeout = timeout("executables.timeout", seconds)?;
        }
        for (name, seconds) in &self.tool_timeouts {
            check_tool_name(name).map_err(|reason| {
                Error::ConfigInvalid(format!(
                    "{}: {reason}",
                    spelling.name("tool_timeouts", name)
                ))
            })?;
            run.tool_timeouts.insert(
                name.clone(),
                timeout(&format!("executables.tool_timeouts.{name}"), *seconds)?,
            );
        }
        if let Some(cap) = self.max_output_bytes {
            run.max_output_bytes = cap.get();
        }
        run.env_passthrough = self.env_passthrough.clone();
        run.check()?;
        Ok(RegistryOptions {
            discovery: DiscoveryOptions::new(directories),
            run,
        })
    }
}

/// Which spelling the configuration was written in, for the messages of checks made after
/// reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spelling {
    WorkerFile,
    JavaScript,
}

impl Spelling {
    /// An entry of a map key as a message names it: `executables.tool_timeouts` in a worker
    /// file, `option 'toolTimeoutsMs.slow'` in JavaScript.
    fn name(self, key: &str, entry: &str) -> String {
        match self {
            Spelling::WorkerFile => format!("executables.{key}"),
            Spelling::JavaScript => format!("option '{}.{entry}'", js_key(key)),
        }
    }
}

/// A timeout in seconds, checked (a JavaScript caller's milliseconds arrive converted, already
/// inside the limits).
fn timeout(key: &str, seconds: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|duration| !duration.is_zero() && *duration <= MAX_TIMEOUT)
        .ok_or_else(|| {
            Error::ConfigInvalid(format!(
                "{key} is {seconds}; give a number of seconds greater than 0 and at most {}",
                MAX_TIMEOUT.as_secs()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::ApprovalDecision;

    fn parse(yaml: &str) -> std::result::Result<ExecutablesConfig, String> {
        serde_yaml::from_str(yaml).map_err(|err| err.to_string())
    }

    #[test]
    fn a_full_section_parses_and_becomes_registry_options() {
        let config = parse(
            "dirs: [tools, /opt/tools]\ntimeout: 10\ntool_timeouts: { slow: 120 }\nmax_output_bytes: 2048\nenv_passthrough: [GITHUB_TOKEN]\napproval: { default: preApproved, tools: { rm_all: blocked } }\n",
        )
        .unwrap();
        assert_eq!(
            config.approval.as_ref().unwrap().tools["rm_all"],
            ApprovalDecision::Blocked
        );
        assert_eq!(
            config.approval.as_ref().unwrap().default,
            Some(ApprovalDecision::PreApproved)
        );
        let options = config
            .registry_options(Path::new("/etc/workers"), Path::new("/srv/app"))
            .unwrap();
        let dirs: Vec<_> = options
            .discovery
            .directories
            .iter()
            .map(|d| (d.path.clone(), d.optional))
            .collect();
        assert_eq!(
            dirs,
            [
                (PathBuf::from("/etc/workers/tools"), false),
                (PathBuf::from("/opt/tools"), false)
            ]
        );
        assert_eq!(options.run.timeout, Duration::from_secs(10));
        assert_eq!(
            parse("timeout: 0.5")
                .unwrap()
                .registry_options(Path::new("/w"), Path::new("/w"))
                .unwrap()
                .run
                .timeout,
            Duration::from_millis(500)
        );
        assert_eq!(options.run.tool_timeouts["slow"], Duration::from_secs(120));
        assert_eq!(options.run.max_output_bytes, 2048);
        assert_eq!(options.run.env_passthrough, ["GITHUB_TOKEN"]);
        assert_eq!(options.run.work_dir, PathBuf::from("/srv/app"));
    }

    #[test]
    fn without_dirs_the_project_and_global_defaults_apply() {
        let options = parse("{}")
            .unwrap()
            .registry_options(Path::new("/etc/workers"), Path::new("/srv/app"))
            .unwrap();
        let first = &options.discovery.directories[0];
        assert_eq!(first.path, PathBuf::from("/srv/app/toolgate-tools"));
        assert!(first.optional);
        assert_eq!(options.run.timeout, Duration::from_secs(30));
        assert_eq!(options.run.max_output_bytes, 1024 * 1024);
    }

    #[test]
    fn unknown_keys_and_bad_decisions_are_errors_with_a_place() {
        let err = parse("dirs: [a]\ntimeuot: 3\n").unwrap_err();
        assert!(err.contains("unknown field `timeuot`"), "{err}");
        assert!(err.contains("line 2"), "{err}");
        let err = parse("approval: { default: sometimes }\n").unwrap_err();
        assert!(err.contains("sometimes"), "{err}");
        let err = parse("approval: { defualt: ask }\n").unwrap_err();
        assert!(err.contains("unknown field `defualt`"), "{err}");
    }

    #[test]
    fn bad_values_are_config_errors_that_name_the_key() {
        let cases = [
            ("timeout: 0", "executables.timeout"),
            ("timeout: 86401", "executables.timeout"),
            (
                "tool_timeouts: { slow: 0 }",
                "executables.tool_timeouts.slow",
            ),
            ("tool_timeouts: { 'a b': 3 }", "executables.tool_timeouts"),
            ("env_passthrough: ['A=B']", "env_passthrough"),
            ("env_passthrough: ['']", "env_passthrough"),
        ];
        for (yaml, key) in cases {
            let err = parse(yaml)
                .unwrap()
                .registry_options(Path::new("/w"), Path::new("/w"))
                .unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{yaml}");
            assert!(err.to_string().contains(key), "{yaml}: {err}");
        }
        // An output cap follows the one rule for byte counts as it is read.
        for cap in ["0", "1.5", "1073741825"] {
            let err = parse(&format!("max_output_bytes: {cap}")).unwrap_err();
            assert!(err.contains("max_output_bytes"), "{err}");
            assert!(err.contains("from 1 to 1073741824"), "{err}");
        }
    }

    #[test]
    fn the_json_schema_describes_every_key() {
        let schema = serde_json::to_value(schemars::schema_for!(ExecutablesConfig)).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        for key in [
            "dirs",
            "timeout",
            "tool_timeouts",
            "max_output_bytes",
            "env_passthrough",
            "approval",
        ] {
            assert!(properties.contains_key(key), "{key}");
        }
        assert_eq!(schema["additionalProperties"], serde_json::json!(false));
    }
}
