//! The builtins toolset (Forge's built-in tools): checked options, the tools' descriptions and
//! schemas, and runs. The tools run in the core; this file only forwards.

use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::builtins::{self, http::system_lookup, BuiltinsOptions};
use toolgate_core::options::WorkDir;

use crate::error::{guarded, infallible, sync, Settled};
use crate::js_value;

/// A built-in tool as the model sees it.
#[napi(object, object_from_js = false)]
pub struct BuiltinToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its input, as JSON text.
    pub input_schema: String,
}

/// The configured built-in tools of one toolset (standalone or a worker's).
#[napi]
pub struct BuiltinTools {
    inner: Arc<builtins::Builtins>,
}

impl BuiltinTools {
    /// Wraps a toolset built elsewhere (a worker plan's).
    pub fn shared(inner: Arc<builtins::Builtins>) -> Self {
        Self { inner }
    }
}

#[napi]
impl BuiltinTools {
    /// Reads `builtinsToolset` options strictly (`CONFIG_INVALID` naming the option: an unknown
    /// key or tool, a bad timeout, size or allow entry). The approval block is decided
    /// separately, against every built-in tool name.
    #[napi(constructor)]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> napi::Result<Self> {
        sync(&env, "builtinsToolset", || {
            let options: BuiltinsOptions = js_value::config(&env, options)?;
            let settings = options.settings()?;
            let work_dir = WorkDir::resolve(options.work_dir.clone())?;
            let tools = builtins::Builtins::new(settings, &work_dir, false, system_lookup())?;
            Ok(Self::shared(Arc::new(tools)))
        })
    }

    /// The tools offered, in order, with descriptions and input schemas.
    #[napi]
    pub fn specs(&self, env: Env) -> napi::Result<Vec<BuiltinToolSpec>> {
        infallible(&env, "BuiltinTools.specs", || {
            self.inner
                .specs()
                .into_iter()
                .map(|spec| BuiltinToolSpec {
                    name: spec.name.to_string(),
                    description: spec.description,
                    input_schema: spec.input_schema.to_string(),
                })
                .collect()
        })
    }

    /// Runs tool `name` with `input`. Rejects with `TOOL_NOT_FOUND`, `INVALID_INPUT`,
    /// `ARGUMENT_REJECTED` (an address the SSRF policy refuses, a bad scheme), `TIMEOUT`,
    /// `CONFIG_INVALID` (a missing search key) or `TOOL_FAILED`.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub async fn run(&self, name: String, input: serde_json::Value) -> Settled<serde_json::Value> {
        let tools = Arc::clone(&self.inner);
        guarded(
            "BuiltinTools.run",
            async move { tools.run(&name, input).await },
        )
        .await
    }
}

/// Every built-in tool name, in the order they are offered.
#[napi]
pub fn builtin_tool_names(env: Env) -> napi::Result<Vec<String>> {
    infallible(&env, "builtinToolNames", || {
        builtins::TOOL_NAMES
            .iter()
            .map(|name| name.to_string())
            .collect()
    })
}
