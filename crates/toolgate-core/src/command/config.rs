//! The `cli_execute` and `shell` configuration, as serde types: the blocks of a worker file, and
//! (in JavaScript spelling, [`crate::options::spelling`]) the options of `cliExecuteTool` and
//! `shellToolset` ([`super::CliExecuteOptions`], [`super::ShellOptions`]).
//!
//! These are the configuration *shapes* only: unknown keys are errors, and every field is
//! checked for meaning (regexes compile, timeouts are positive, …) when a
//! [`CliExecute`](super::CliExecute) or [`ShellToolset`](super::ShellToolset) is built from them.
//! `timeout` is in seconds here; JavaScript writes `timeoutMs`.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::options::ByteCount;
use crate::sandbox_config::SandboxFields;

/// The approval decision of the shell rules: the one shared by every toolset.
pub use crate::approval::ApprovalDecision as Approval;

impl std::str::FromStr for OutputAction {
    type Err = Error;

    /// Parses `block` or `redact`.
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "block" => Ok(OutputAction::Block),
            "redact" => Ok(OutputAction::Redact),
            other => Err(Error::ConfigInvalid(format!(
                "deny_output action '{other}' is not one of block, redact"
            ))),
        }
    }
}

/// The `cli_execute` block: run allowlisted binaries with argv arrays, never through a shell.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CliExecuteConfig {
    /// Bare program names looked up on PATH once, when the tool is built. Shells and
    /// trampolines (`bash`, `env`, `xargs`, `sudo`, …) are refused.
    pub allowed_binaries: Vec<String>,
    /// Names of environment variables passed to the child when they are set (besides PATH,
    /// LANG, LC_*, TZ, USER, LOGNAME and the proxy variables; HOME and TMPDIR are private to
    /// each call).
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// Directories outside the work directory that path arguments may name. Taken as given by
    /// the Rust constructor: absolute, or relative to the work directory.
    #[serde(default)]
    pub read_roots: Vec<PathBuf>,
    /// Seconds before the whole process group is killed (default 120).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Cap for each of stdout and stderr, in bytes (default 1 MiB, at most 1 GiB).
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    /// Regexes that refuse command lines or block/redact output.
    #[serde(default)]
    pub guardrails: Guardrails,
    /// This toolset's kernel sandbox: its keys replace the worker's (an absent key keeps the
    /// worker's value) and may widen them; in a called worker it stays within the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxFields>,
}

/// Regex guardrails of `cli_execute`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Guardrails {
    /// Matched against `binary + " " + args.join(" ")`; a match refuses the call.
    #[serde(default)]
    pub deny_commands: Vec<DenyCommand>,
    /// Matched against stdout and stderr after the run.
    #[serde(default)]
    pub deny_output: Vec<DenyOutput>,
}

/// One `deny_commands` entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyCommand {
    /// A regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// What the model is told when the pattern matches.
    #[serde(default)]
    pub message: Option<String>,
}

/// One `deny_output` entry.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyOutput {
    /// A regular expression (Rust `regex` syntax), matched against the raw output bytes.
    pub pattern: String,
    /// `block` (the default) fails the call with `OUTPUT_BLOCKED`; `redact` replaces each match
    /// with `[REDACTED]`.
    #[serde(default)]
    pub action: OutputAction,
}

/// What a `deny_output` match does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputAction {
    /// Fail the call with `OUTPUT_BLOCKED`; the output is not returned.
    #[default]
    Block,
    /// Replace every match with `[REDACTED]`.
    Redact,
}

/// The `shell` block: command strings split without a shell, gated by rules.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellConfig {
    /// Token-prefix rules; the longest matching pattern wins, equal lengths resolve to the
    /// strictest approval.
    #[serde(default)]
    pub rules: Vec<ShellRule>,
    /// The approval of a command no rule matches; without it such commands are blocked.
    #[serde(default)]
    pub default: Option<Approval>,
    /// Seconds before the whole process group is killed (default 120).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Cap for each of stdout and stderr, in bytes (default 1 MiB, at most 1 GiB).
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    /// Names of environment variables passed to the child when they are set.
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// This toolset's kernel sandbox: its keys replace the worker's (an absent key keeps the
    /// worker's value) and may widen them; in a called worker it stays within the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxFields>,
}

/// One shell rule: `git push` matches `git push origin main` but not `git pushx`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellRule {
    /// Words, split like a command (POSIX quoting, no expansion).
    pub pattern: String,
    /// What a command matching this rule gets.
    pub approval: Approval,
}

/// A worker file seen only for its `toolsets.shell` block; the worker loader checks the rest.
#[derive(Deserialize)]
struct WorkerShellView {
    toolsets: ToolsetsShellView,
}

#[derive(Deserialize)]
struct ToolsetsShellView {
    shell: Option<ShellConfig>,
}

impl ShellConfig {
    /// Parses a YAML rules document. `source` names it in error messages (a file path).
    ///
    /// Two shapes are accepted: the `shell` block itself (`rules`, `default`, …), or a worker
    /// file, whose `toolsets.shell` block is used. Unknown keys in the block are errors that give
    /// the line and column.
    pub fn from_yaml(text: &str, source: &str) -> Result<Self> {
        let probe: serde_yaml::Value =
            crate::yaml::from_str(text).map_err(|err| yaml_error(source, &err))?;
        let is_worker = probe
            .as_mapping()
            .is_some_and(|map| map.contains_key("toolsets"));
        if !is_worker {
            if probe.is_null() {
                return Err(Error::ConfigInvalid(format!(
                    "{source}: the file is empty; write a shell block such as\n  default: ask\n  rules:\n    - {{ pattern: \"git status\", approval: preApproved }}"
                )));
            }
            return crate::yaml::from_str(text).map_err(|err| yaml_error(source, &err));
        }
        let view: WorkerShellView =
            crate::yaml::from_str(text).map_err(|err| yaml_error(source, &err))?;
        view.toolsets.shell.ok_or_else(|| {
            Error::ConfigInvalid(format!(
                "{source}: this worker file has no toolsets.shell block; add one with rules and a default"
            ))
        })
    }

    /// Reads and parses a YAML rules file (see [`from_yaml`](Self::from_yaml)).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|err| Error::io("reading", path, err))?;
        Self::from_yaml(&text, &path.display().to_string())
    }
}

impl CliExecuteConfig {
    /// Parses a YAML `cli_execute` block. `source` names it in error messages.
    pub fn from_yaml(text: &str, source: &str) -> Result<Self> {
        crate::yaml::from_str(text).map_err(|err| yaml_error(source, &err))
    }
}

fn yaml_error(source: &str, err: &crate::yaml::YamlError) -> Error {
    Error::ConfigInvalid(format!("{source}: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeply_nested_rules_files_are_refused_before_parsing() {
        let deep = format!("rules: {}{}\n", "[".repeat(20_000), "]".repeat(20_000));
        let err = ShellConfig::from_yaml(&deep, "rules.yaml").unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("nested more than"), "{err}");
    }

    #[test]
    fn a_shell_block_parses_with_camel_case_approvals() {
        let config = ShellConfig::from_yaml(
            "default: ask\nrules:\n  - { pattern: \"git status\", approval: preApproved }\n  - { pattern: git push, approval: blocked }\ntimeout: 30\nmax_output_bytes: 1000\nenv_passthrough: [GITHUB_TOKEN]\n",
            "rules.yaml",
        )
        .unwrap();
        assert_eq!(config.default, Some(Approval::Ask));
        assert_eq!(config.rules.len(), 2);
        assert_eq!(config.rules[0].approval, Approval::PreApproved);
        assert_eq!(config.rules[1].pattern, "git push");
        assert_eq!(config.timeout, Some(30.0));
        assert_eq!(config.max_output_bytes, Some(ByteCount(1000)));
        assert_eq!(config.env_passthrough, vec!["GITHUB_TOKEN".to_string()]);
    }

    #[test]
    fn unknown_keys_are_errors_with_file_line_and_column() {
        let err = ShellConfig::from_yaml(
            "default: ask\nrules:\n  - pattern: ls\n    aproval: ask\n",
            "rules.yaml",
        )
        .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        let message = err.to_string();
        assert!(message.contains("rules.yaml"), "{message}");
        assert!(message.contains("aproval"), "{message}");
        assert!(message.contains("line 4"), "{message}");

        let err = CliExecuteConfig::from_yaml("allowed_binaries: [git]\ntimeot: 3\n", "w.yaml")
            .unwrap_err();
        assert!(err.to_string().contains("timeot"), "{err}");
        let err = CliExecuteConfig::from_yaml(
            "allowed_binaries: [git]\nguardrails: { deny_output: [{ pattern: x, action: hide }] }\n",
            "w.yaml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("hide"), "{err}");
    }

    #[test]
    fn approvals_and_actions_parse_from_their_exact_spelling() {
        assert_eq!(
            "preApproved".parse::<Approval>().unwrap(),
            Approval::PreApproved
        );
        assert_eq!("blocked".parse::<Approval>().unwrap(), Approval::Blocked);
        assert_eq!(
            "Ask".parse::<Approval>().unwrap_err().code(),
            "CONFIG_INVALID"
        );
        assert_eq!(
            "redact".parse::<OutputAction>().unwrap(),
            OutputAction::Redact
        );
        assert!("hide".parse::<OutputAction>().is_err());
    }

    #[test]
    fn approvals_are_spelled_exactly() {
        let err = ShellConfig::from_yaml("default: preapproved\n", "r.yaml").unwrap_err();
        assert!(err.to_string().contains("preApproved"), "{err}");
    }

    #[test]
    fn a_cli_execute_block_parses_with_defaults() {
        let config = CliExecuteConfig::from_yaml(
            "allowed_binaries: [git, jq]\ntimeout: 60\nguardrails:\n  deny_commands: [{ pattern: 'push.*--force', message: no force pushes }]\n  deny_output: [{ pattern: 'sk-[A-Za-z0-9]{20,}', action: redact }, { pattern: PRIVATE KEY }]\n",
            "w.yaml",
        )
        .unwrap();
        assert_eq!(config.allowed_binaries, ["git", "jq"]);
        assert_eq!(config.timeout, Some(60.0));
        assert!(config.read_roots.is_empty());
        assert_eq!(
            config.guardrails.deny_output[0].action,
            OutputAction::Redact
        );
        assert_eq!(config.guardrails.deny_output[1].action, OutputAction::Block);
        assert_eq!(
            config.guardrails.deny_commands[0].message.as_deref(),
            Some("no force pushes")
        );
        let err = CliExecuteConfig::from_yaml("timeout: 3\n", "w.yaml").unwrap_err();
        assert!(err.to_string().contains("allowed_binaries"), "{err}");
    }

    #[test]
    fn a_worker_file_gives_its_shell_block() {
        let worker = "name: w\nmodel: x\ntoolsets:\n  code_agent: { group: read }\n  shell:\n    default: blocked\n    rules: [{ pattern: ls, approval: preApproved }]\n";
        let config = ShellConfig::from_yaml(worker, "w.yaml").unwrap();
        assert_eq!(config.default, Some(Approval::Blocked));
        let err = ShellConfig::from_yaml("toolsets:\n  custom: {}\n", "w.yaml").unwrap_err();
        assert!(err.to_string().contains("no toolsets.shell"), "{err}");
        let err = ShellConfig::from_yaml(
            "toolsets:\n  shell:\n    rules: []\n    defualt: ask\n",
            "w.yaml",
        )
        .unwrap_err();
        assert!(err.to_string().contains("defualt"), "{err}");
        assert!(err.to_string().contains("line 4"), "{err}");
    }

    #[test]
    fn an_empty_file_says_what_to_write() {
        let err = ShellConfig::from_yaml("", "r.yaml").unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
    }

    #[test]
    fn the_blocks_have_a_json_schema() {
        let schema = schemars::schema_for!(CliExecuteConfig);
        let text = serde_json::to_string(&schema).unwrap();
        assert!(text.contains("allowed_binaries"));
        assert!(text.contains("additionalProperties"));
        let schema = serde_json::to_string(&schemars::schema_for!(ShellConfig)).unwrap();
        assert!(schema.contains("preApproved"));
    }
}
