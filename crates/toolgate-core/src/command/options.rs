//! The options of `cliExecuteTool` and `shellToolset`: the `cli_execute` / `shell` block of a
//! worker file in JavaScript spelling (`allowedBinaries`, `timeoutMs`, …; see
//! [`crate::options::spelling`]), and where the tool runs (`workDir`, `sandbox`, `readOnly`),
//! which a worker file says in its `sandbox` block instead.

use std::path::PathBuf;

use serde::Deserialize;

use super::{CliExecute, CliExecuteConfig, ShellConfig, ShellToolset};
use crate::approval::ApprovalConfig;
use crate::error::Result;
use crate::options::WorkDir;
use crate::sandbox_config::{SandboxOption, SandboxScope, ToolSandbox};

/// `cliExecuteTool` options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CliExecuteOptions {
    /// cwd of every command; path arguments are confined to it (default: the current
    /// directory).
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// The kernel sandbox (default `{ mode: 'enforce', network: false }`).
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
    /// Programs may not write in the work directory either.
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    /// Every other key: the `cli_execute` block (`allowedBinaries`, `envPassthrough`,
    /// `readRoots`, `timeoutMs`, `maxOutputBytes`, `guardrails`).
    #[serde(rename = "...")]
    pub config: CliExecuteConfig,
}

impl CliExecuteOptions {
    /// Builds the policy with its prepared sandbox (the `readRoots` are readable in it too).
    pub fn build(self) -> Result<(CliExecute, CliExecuteConfig, ToolSandbox)> {
        let read_only = self.read_only;
        let (work_dir, config) = self.into_config()?;
        let policy = CliExecute::new(&work_dir, &config)?;
        let work_dir = policy.work_dir().to_path_buf();
        let tool = SandboxScope::standalone(&work_dir, read_only, config.sandbox.as_ref())?
            .with_read_roots(&config.read_roots, &work_dir, None)?
            .build()?;
        let policy = policy.with_sandbox(tool.sandbox.clone());
        Ok((policy, config, tool))
    }

    /// The work directory and the `cli_execute` configuration, its `sandbox` the one of the
    /// options.
    pub fn into_config(self) -> Result<(PathBuf, CliExecuteConfig)> {
        let work_dir = WorkDir::resolve(self.work_dir)?;
        let config = CliExecuteConfig {
            sandbox: self.sandbox.map(SandboxOption::into_fields),
            ..self.config
        };
        Ok((work_dir, config))
    }
}

/// `shellToolset` (and `explainCommand`) options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShellOptions {
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Deprecated spelling of `workDir`.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The kernel sandbox (default `{ mode: 'enforce', network: false }`).
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
    /// Programs may not write in the work directory either.
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    /// Every other key: the `shell` block (`rules`, `default`, `timeoutMs`, `maxOutputBytes`,
    /// `envPassthrough`).
    #[serde(rename = "...")]
    pub config: ShellConfig,
}

impl ShellOptions {
    /// Builds the policy with its prepared sandbox.
    pub fn build(self) -> Result<(ShellToolset, ShellConfig, WorkDir, ToolSandbox)> {
        let read_only = self.read_only;
        let (work_dir, config) = self.into_config()?;
        let policy = ShellToolset::new(&work_dir.path, &config)?;
        let tool = SandboxScope::standalone(policy.work_dir(), read_only, config.sandbox.as_ref())?
            .build()?;
        let policy = policy.with_sandbox(tool.sandbox.clone());
        Ok((policy, config, work_dir, tool))
    }

    /// The work directory and the shell configuration, its `sandbox` the one of the options.
    pub fn into_config(self) -> Result<(WorkDir, ShellConfig)> {
        let work_dir = WorkDir::from_keys(self.work_dir, self.cwd, "cwd", "shellToolset")?;
        let config = ShellConfig {
            sandbox: self.sandbox.map(SandboxOption::into_fields),
            ..self.config
        };
        Ok((work_dir, config))
    }
}
