//! The options of `filesystemToolset` and `codeAgentTools`: the `filesystem` / `code_agent`
//! block of a worker file in JavaScript spelling ([`crate::options::spelling`]), and the
//! directory the tools are confined to, which a worker file takes from its `sandbox` block.

use std::path::PathBuf;

use serde::Deserialize;

use super::config::{CodeAgentConfig, FilesystemConfig};
use crate::error::Result;
use crate::options::WorkDir;

/// `filesystemToolset` options.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FilesystemOptions {
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Deprecated spelling of `workDir`.
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Every other key: the `filesystem` block (`readOnly`, `approval`).
    #[serde(rename = "...")]
    pub config: FilesystemConfig,
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
    /// Every other key: the `code_agent` block (`group`, `approval`).
    #[serde(rename = "...")]
    pub config: CodeAgentConfig,
}
