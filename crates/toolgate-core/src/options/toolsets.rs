//! Options of the toolset functions (`cliExecuteTool`, `shellToolset`, `filesystemToolset`,
//! `codeAgentTools`, `createCustomTool`, `loadCustomTools`). One name for the confining
//! directory everywhere: `workDir`. The old `root` (filesystem) and `cwd` (shell) still work for
//! one release, with a deprecation warning.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ByteCount, TimeoutMs};
use crate::approval::{ApprovalConfig, Decision};
use crate::command::config::{DenyCommand, DenyOutput, Guardrails, OutputAction};
use crate::command::{CliExecute, CliExecuteConfig, ShellConfig, ShellRule, ShellToolset};
use crate::error::{Error, Result};
use crate::fs::config::CodeAgentGroup;
use crate::sandbox_config::{SandboxFields, SandboxOption, SandboxScope, ToolSandbox};

/// The confining directory of a toolset, resolved: absolute, and the deprecation warning when
/// an old key named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkDir {
    pub path: PathBuf,
    pub deprecation: Option<String>,
}

impl WorkDir {
    /// `path` made absolute against the current directory; the current directory when absent.
    pub fn resolve(path: Option<PathBuf>) -> Result<PathBuf> {
        let cwd = std::env::current_dir().map_err(|err| {
            Error::ConfigInvalid(format!(
                "the current directory cannot be read ({err}); give workDir explicitly"
            ))
        })?;
        Ok(match path {
            Some(path) => cwd.join(path),
            None => cwd,
        })
    }

    /// `workDir`, or the deprecated `old` key (`root`, `cwd`) of `function`. Both at once is an
    /// error unless they agree.
    fn from_keys(
        work_dir: Option<PathBuf>,
        old: Option<PathBuf>,
        old_key: &str,
        function: &str,
    ) -> Result<WorkDir> {
        let deprecation = old.as_ref().map(|_| {
            format!("{function}({{ {old_key} }}) is deprecated and will be removed in the next release; pass workDir instead")
        });
        let chosen = match (work_dir, old) {
            (Some(work_dir), Some(old)) if work_dir != old => {
                return Err(Error::ConfigInvalid(format!(
                    "options 'workDir' ('{}') and '{old_key}' ('{}') disagree; give only workDir",
                    work_dir.display(),
                    old.display()
                )))
            }
            (Some(work_dir), _) => Some(work_dir),
            (None, old) => old,
        };
        Ok(WorkDir {
            path: WorkDir::resolve(chosen)?,
            deprecation,
        })
    }
}

/// The kernel sandbox of a tool built on its own, from its `sandbox` option (relative roots
/// against the work directory) and `readOnly`: `CONFIG_INVALID` for `readOnly` without a
/// sandbox (only the kernel can keep a program from writing).
pub fn standalone_sandbox(
    work_dir: &Path,
    read_only: bool,
    sandbox: Option<&SandboxFields>,
) -> Result<SandboxScope> {
    let fields = sandbox.cloned().unwrap_or_default();
    let scope = SandboxScope::new(work_dir, read_only, &fields, work_dir, "option 'sandbox'")?;
    if read_only && scope.policy().is_none() {
        return Err(Error::ConfigInvalid(
            "options 'readOnly: true' and 'sandbox: false' contradict each other: only the kernel sandbox can keep programs from writing; remove one".into(),
        ));
    }
    Ok(scope)
}

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
    pub allowed_binaries: Vec<String>,
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    #[serde(default)]
    pub read_roots: Vec<PathBuf>,
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    #[serde(default)]
    pub guardrails: Option<GuardrailOptions>,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
}

/// Regex guardrails in their JavaScript spelling.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GuardrailOptions {
    #[serde(default)]
    pub deny_commands: Vec<DenyCommandOption>,
    #[serde(default)]
    pub deny_output: Vec<DenyOutputOption>,
}

/// One `denyCommands` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyCommandOption {
    pub pattern: String,
    #[serde(default)]
    pub message: Option<String>,
}

/// One `denyOutput` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyOutputOption {
    pub pattern: String,
    #[serde(default)]
    pub action: OutputAction,
}

impl CliExecuteOptions {
    /// Builds the policy with its prepared sandbox (the `readRoots` are readable in it too).
    pub fn build(self) -> Result<(CliExecute, CliExecuteConfig, ToolSandbox)> {
        let read_only = self.read_only;
        let (work_dir, config) = self.into_config()?;
        let policy = CliExecute::new(&work_dir, &config)?;
        let work_dir = policy.work_dir().to_path_buf();
        let tool = standalone_sandbox(&work_dir, read_only, config.sandbox.as_ref())?
            .with_read_roots(&config.read_roots, &work_dir, None)?
            .build()?;
        let policy = policy.with_sandbox(tool.sandbox.clone());
        Ok((policy, config, tool))
    }

    /// The work directory and the `cli_execute` configuration.
    pub fn into_config(self) -> Result<(PathBuf, CliExecuteConfig)> {
        let work_dir = WorkDir::resolve(self.work_dir)?;
        let guardrails = self.guardrails.unwrap_or_default();
        let config = CliExecuteConfig {
            allowed_binaries: self.allowed_binaries,
            env_passthrough: self.env_passthrough,
            read_roots: self.read_roots,
            timeout: self.timeout_ms.map(|timeout| timeout.0.as_secs_f64()),
            max_output_bytes: self.max_output_bytes.map(|cap| cap.0),
            guardrails: Guardrails {
                deny_commands: guardrails
                    .deny_commands
                    .into_iter()
                    .map(|entry| DenyCommand {
                        pattern: entry.pattern,
                        message: entry.message,
                    })
                    .collect(),
                deny_output: guardrails
                    .deny_output
                    .into_iter()
                    .map(|entry| DenyOutput {
                        pattern: entry.pattern,
                        action: entry.action,
                    })
                    .collect(),
            },
            sandbox: self.sandbox.map(SandboxOption::into_fields),
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
    pub rules: Vec<ShellRule>,
    #[serde(default)]
    pub default: Option<Decision>,
    #[serde(default)]
    pub timeout_ms: Option<TimeoutMs>,
    #[serde(default)]
    pub max_output_bytes: Option<ByteCount>,
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
}

impl ShellOptions {
    /// Builds the policy with its prepared sandbox.
    pub fn build(self) -> Result<(ShellToolset, ShellConfig, WorkDir, ToolSandbox)> {
        let read_only = self.read_only;
        let (work_dir, config) = self.into_config()?;
        let policy = ShellToolset::new(&work_dir.path, &config)?;
        let tool =
            standalone_sandbox(policy.work_dir(), read_only, config.sandbox.as_ref())?.build()?;
        let policy = policy.with_sandbox(tool.sandbox.clone());
        Ok((policy, config, work_dir, tool))
    }

    /// The work directory and the shell configuration.
    pub fn into_config(self) -> Result<(WorkDir, ShellConfig)> {
        let work_dir = WorkDir::from_keys(self.work_dir, self.cwd, "cwd", "shellToolset")?;
        let config = ShellConfig {
            rules: self.rules,
            default: self.default,
            timeout: self.timeout_ms.map(|timeout| timeout.0.as_secs_f64()),
            max_output_bytes: self.max_output_bytes.map(|cap| cap.0),
            env_passthrough: self.env_passthrough,
            sandbox: self.sandbox.map(SandboxOption::into_fields),
        };
        Ok((work_dir, config))
    }
}

/// `filesystemToolset` options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FilesystemOptions {
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Deprecated spelling of `workDir`.
    #[serde(default)]
    pub root: Option<PathBuf>,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub approval: Option<crate::fs::config::FileApprovalConfig>,
}

impl FilesystemOptions {
    /// The work directory (`workDir`, or the deprecated `root`).
    pub fn work_dir(&self) -> Result<WorkDir> {
        WorkDir::from_keys(
            self.work_dir.clone(),
            self.root.clone(),
            "root",
            "filesystemToolset",
        )
    }
}

/// `codeAgentTools` options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CodeAgentOptions {
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    #[serde(default)]
    pub group: CodeAgentGroup,
    #[serde(default)]
    pub approval: Option<crate::fs::config::FileApprovalConfig>,
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
        standalone_sandbox(work_dir, false, fields.as_ref())?
            .for_discovery()
            .build()
    }
}

/// `loadCustomTools` options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoadCustomToolsOptions {
    /// Whitelist of tool names, in this order.
    #[serde(default, deserialize_with = "tool_names")]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    /// Directory a relative module path is resolved against (default: the current directory).
    #[serde(default)]
    pub base_dir: Option<PathBuf>,
    /// Milliseconds importing the module may take (default
    /// [`DEFAULT_IMPORT_TIMEOUT`](crate::limits::DEFAULT_IMPORT_TIMEOUT)).
    #[serde(default)]
    pub import_timeout_ms: Option<TimeoutMs>,
}

/// A whitelist: a list of tool names (the error says so when it is something else).
fn tool_names<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Vec<String>>, D::Error> {
    struct Names;
    impl<'de> serde::de::Visitor<'de> for Names {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of tool names")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut items: A,
        ) -> std::result::Result<Vec<String>, A::Error> {
            let mut names = Vec::new();
            while let Some(name) = items.next_element::<String>()? {
                names.push(name);
            }
            Ok(names)
        }
    }
    deserializer.deserialize_seq(Names).map(Some)
}
