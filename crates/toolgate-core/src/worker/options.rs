//! The options of `loadWorker`, `workerTools`, `resolveModel` and `loadCustomTools`
//! (`runWorker` and friends: [`crate::run::options`]), read by [`crate::options::parse`].

use std::path::PathBuf;

use serde::Deserialize;

use crate::approval::ApprovalConfig;
use crate::options::{JsOnly, TimeoutMs};

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
    pub approval: Option<ApprovalConfig>,
}

/// `loadCustomTools` options (a worker file's `custom` block names the module and the same
/// `tools` and `approval`).
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
