//! `loadWorker` and `runWorker` options.

use std::path::PathBuf;

use serde::Deserialize;

use super::{Count, JsOnly};

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

/// `runWorker` options. Only `maxSteps` is data; the rest is for the SDK.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunWorkerOptions {
    #[serde(default)]
    pub model: Option<JsOnly>,
    #[serde(default)]
    pub on_approval: Option<JsOnly>,
    #[serde(default)]
    pub max_steps: Option<Count<1, 100_000>>,
    #[serde(default)]
    pub signal: Option<JsOnly>,
    #[serde(default)]
    pub on_event: Option<JsOnly>,
    #[serde(default)]
    pub messages: Option<JsOnly>,
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
