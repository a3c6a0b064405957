//! `executableTools` / `ExecutableToolRegistry` options.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::toolsets::standalone_sandbox;
use super::toolsets::WorkDir;
use super::{ByteCount, Count, JsOnly, TimeoutMs};
use crate::approval::ApprovalConfig;
use crate::error::{Error, Result};
use crate::executables::{
    check_tool_name, discovery::default_directories, CacheMode, DiscoveryOptions, RegistryOptions,
    RunOptions, ToolDirectory,
};
use crate::sandbox_config::SandboxOption;

/// Where to find executable tools and how to run them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecutableToolsOptions {
    /// Tool directories, highest precedence first; relative ones start at `workDir`.
    #[serde(default)]
    pub dirs: Option<Vec<PathBuf>>,
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
    #[serde(default)]
    pub tool_timeouts_ms: BTreeMap<String, TimeoutMs>,
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    #[serde(default)]
    pub cache: CacheMode,
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// How many `description` processes may run at once.
    #[serde(default)]
    pub parallelism: Option<Count<1, 1024>>,
    #[serde(default)]
    pub description_timeout_ms: Option<TimeoutMs>,
    /// Receives discovery problems (handled by the SDK).
    #[serde(default)]
    pub on_diagnostics: Option<JsOnly>,
    /// The kernel sandbox of runs (default `{ mode: 'enforce', network: false }`);
    /// `description` runs get no network and a read-only work directory whatever it says.
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
}

impl ExecutableToolsOptions {
    /// The registry options with their sandboxes prepared, and the best-effort warning when
    /// this was the first preparation in the process to have one.
    pub fn sandboxed_registry_options(&self) -> Result<(RegistryOptions, Option<String>)> {
        let options = self.registry_options()?;
        let fields = self.sandbox.clone().map(SandboxOption::into_fields);
        let scope = standalone_sandbox(&options.run.work_dir, false, fields.as_ref())?;
        options.with_sandbox(&scope)
    }

    /// The registry options without sandboxes; `CONFIG_INVALID` for a bad tool name in
    /// `toolTimeoutsMs` or a malformed variable name.
    pub fn registry_options(&self) -> Result<RegistryOptions> {
        let work_dir = WorkDir::resolve(self.work_dir.clone())?;
        let directories = match &self.dirs {
            Some(dirs) => dirs
                .iter()
                .map(|dir| ToolDirectory::required(work_dir.join(dir)))
                .collect(),
            None => default_directories(&work_dir),
        };
        let mut discovery = DiscoveryOptions::new(directories);
        discovery.cache = self.cache;
        discovery.cache_dir = self.cache_dir.as_ref().map(|dir| work_dir.join(dir));
        if let Some(parallelism) = self.parallelism {
            discovery.parallelism = parallelism.get();
        }
        if let Some(timeout) = self.description_timeout_ms {
            discovery.description_timeout = timeout.0;
        }
        let mut run = RunOptions::new(work_dir);
        if let Some(timeout) = self.timeout_ms {
            run.timeout = timeout.0;
        }
        for (name, timeout) in &self.tool_timeouts_ms {
            check_tool_name(name).map_err(|reason| {
                Error::ConfigInvalid(format!("option 'toolTimeoutsMs.{name}': {reason}"))
            })?;
            run.tool_timeouts.insert(name.clone(), timeout.0);
        }
        if let Some(cap) = self.max_output_bytes {
            run.max_output_bytes = usize::try_from(cap.0).unwrap_or(usize::MAX);
        }
        run.env_passthrough = self.env_passthrough.clone();
        run.check()?;
        Ok(RegistryOptions { discovery, run })
    }
}

/// `registry.refresh()` options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshOptions {
    /// Ask every tool for its description again.
    #[serde(default)]
    pub force: bool,
}

/// `registry.run()` options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunToolOptions {
    #[serde(default)]
    pub signal: Option<JsOnly>,
}
