//! The options of `runWorker`, `streamWorker`, `resumeWorker` and `toAgentSettings`, read by
//! [`crate::options::parse`].

use std::path::PathBuf;

use serde::Deserialize;

use crate::options::{Count, JsOnly};

/// `audit` of a run: the JSON Lines file events are appended to.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuditOptions {
    /// The log file (relative paths resolve against the current directory).
    pub file: PathBuf,
    /// Regular expressions redacted from the log, besides the worker's `deny_output` patterns
    /// and the environment's secrets.
    #[serde(default)]
    pub redact: Vec<String>,
}

/// `runWorker` and `streamWorker` options. `maxSteps`, `stateSecret` and `audit` are data; the
/// rest is for the SDK.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunWorkerOptions {
    #[serde(default)]
    pub model: Option<JsOnly>,
    /// A handler function, or `'defer'` (checked by the SDK: only JavaScript tells a function).
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
    /// Signs the state of a deferred run (`onApproval: 'defer'`).
    #[serde(default)]
    pub state_secret: Option<String>,
    #[serde(default)]
    pub audit: Option<AuditOptions>,
}

/// `resumeWorker` options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResumeWorkerOptions {
    #[serde(default)]
    pub model: Option<JsOnly>,
    /// For requests of the rest of the run: a handler, `'defer'`, or none (fail closed).
    #[serde(default)]
    pub on_approval: Option<JsOnly>,
    #[serde(default)]
    pub signal: Option<JsOnly>,
    #[serde(default)]
    pub on_event: Option<JsOnly>,
    /// The secret the state was signed with.
    pub state_secret: String,
    /// The directory of resumed-state markers (default: a private directory in the system's
    /// temporary directory). Processes on several machines need a shared one.
    #[serde(default)]
    pub state_ledger: Option<PathBuf>,
    #[serde(default)]
    pub audit: Option<AuditOptions>,
}

/// `toAgentSettings` options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentSettingsOptions {
    #[serde(default)]
    pub model: Option<JsOnly>,
    #[serde(default)]
    pub on_approval: Option<JsOnly>,
    #[serde(default)]
    pub on_event: Option<JsOnly>,
    #[serde(default)]
    pub max_steps: Option<Count<1, 100_000>>,
}
