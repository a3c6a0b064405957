//! `loadWorker`, `workerTools` and `resolveModel` options (`runWorker` and friends: `run.rs`).

use std::path::PathBuf;

use serde::Deserialize;

use super::JsOnly;

/// `loadWorker` options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoadWorkerOptions {
    /// Replaces the sandbox root as the work directory (the CLI's `--work-dir`).
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Forces a read-only sandbox.
    #[serde(default)]
    pub readonly: bool,
}

/// `resolveModel` options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveModelOptions {
    /// Base URL for `openai-compatible:` models.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment API keys are read from (the SDK reads it).
    #[serde(default)]
    pub env: Option<JsOnly>,
}

/// `workerTools` options: where the workers run, and the approval of their tools.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkerToolsOptions {
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    #[serde(default)]
    pub readonly: bool,
    #[serde(default)]
    pub approval: Option<crate::approval::ApprovalConfig>,
}
