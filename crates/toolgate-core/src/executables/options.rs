//! The options of `executableTools` / `ExecutableToolRegistry`: the `executables` block of a
//! worker file in JavaScript spelling (`timeoutMs`, `toolTimeoutsMs`, …; see
//! [`crate::options::spelling`]), and what only a caller in code sets (the work directory, the
//! sandbox, the description cache, discovery's parallelism). Also `createCustomTool`'s options.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::config::Spelling;
use super::{CacheMode, ExecutablesConfig, RegistryOptions};
use crate::approval::ApprovalConfig;
use crate::error::Result;
use crate::options::{Count, JsOnly, TimeoutMs, WorkDir};
use crate::sandbox_config::{SandboxOption, SandboxScope, ToolSandbox};

/// Where to find executable tools and how to run them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecutableToolsOptions {
    /// The tools' cwd and only writable place; relative `dirs` start here (default: the
    /// current directory).
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
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
    /// Every other key: the `executables` block (`dirs`, `timeoutMs`, `toolTimeoutsMs`,
    /// `maxOutputBytes`, `envPassthrough`, `approval`).
    #[serde(rename = "...")]
    pub config: ExecutablesConfig,
}

impl ExecutableToolsOptions {
    /// The registry options with their sandboxes prepared, and the best-effort warning when
    /// this was the first preparation in the process to have one.
    pub fn sandboxed_registry_options(&self) -> Result<(RegistryOptions, Option<String>)> {
        let options = self.registry_options()?;
        let fields = self.sandbox.clone().map(SandboxOption::into_fields);
        let scope = SandboxScope::standalone(&options.run.work_dir, false, fields.as_ref())?;
        // The tool directories are the toolset's code: its processes must not change them.
        let mut guards = crate::sandbox_config::Guards::default();
        for directory in &options.discovery.directories {
            guards.protect(&directory.path, "an executable-tool directory");
        }
        options.with_sandbox(&scope.with_guards(&guards))
    }

    /// The registry options without sandboxes; `CONFIG_INVALID` for a bad tool name in
    /// `toolTimeoutsMs` or a malformed variable name.
    pub fn registry_options(&self) -> Result<RegistryOptions> {
        let work_dir = WorkDir::resolve(self.work_dir.clone())?;
        let mut options =
            self.config
                .registry_options_spelled(&work_dir, &work_dir, Spelling::JavaScript)?;
        let discovery = &mut options.discovery;
        discovery.cache = self.cache;
        discovery.cache_dir = self.cache_dir.as_ref().map(|dir| work_dir.join(dir));
        if let Some(parallelism) = self.parallelism {
            discovery.parallelism = parallelism.get();
        }
        if let Some(timeout) = self.description_timeout_ms {
            discovery.description_timeout = timeout.0;
        }
        Ok(options)
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

/// `createCustomTool` options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateCustomToolOptions {
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Where new tools go (default `<workDir>/toolgate-tools`), relative to `workDir`.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    /// The kernel sandbox of the validation run (default `{ mode: 'enforce', network: false }`;
    /// the run gets no network and a read-only work directory whatever this says).
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
}

impl CreateCustomToolOptions {
    /// The work directory and the tool directory, both absolute.
    pub fn directories(&self) -> Result<(PathBuf, PathBuf)> {
        let work_dir = WorkDir::resolve(self.work_dir.clone())?;
        let dir = work_dir.join(
            self.dir
                .as_deref()
                .unwrap_or(Path::new(crate::limits::DEFAULT_TOOL_DIRECTORY)),
        );
        Ok((work_dir, dir))
    }

    /// The prepared sandbox of the validation run (`description` of the new tool).
    pub fn validation_sandbox(&self, work_dir: &Path) -> Result<ToolSandbox> {
        let fields = self.sandbox.clone().map(SandboxOption::into_fields);
        SandboxScope::standalone(work_dir, false, fields.as_ref())?
            .for_discovery()
            .build()
    }
}
