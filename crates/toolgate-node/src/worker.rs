use napi_derive::napi;
use toolgate_core::worker::{self, LoadOptions};

use crate::error::{invalid_input, to_napi, Code};

/// Reads, checks and resolves a worker file (and the workers it may call): absolute paths,
/// instructions from the Markdown body, warnings for keys accepted but not acted on. Returns the
/// resolved worker as a plain object with snake_case keys. Throws `CONFIG_INVALID` naming the
/// file, line and column. `work_dir` replaces the sandbox root; `readonly` forces a read-only
/// sandbox (both are how a called worker inherits its caller's sandbox).
#[napi]
pub fn load_worker_spec(
    path: String,
    work_dir: Option<String>,
    readonly: Option<bool>,
) -> napi::Result<serde_json::Value, Code> {
    let options = LoadOptions {
        work_dir: work_dir.map(Into::into),
        readonly: readonly.unwrap_or(false),
    };
    let loaded = worker::load_worker(path, &options).map_err(to_napi)?;
    worker::check_delegation(&loaded).map_err(to_napi)?;
    serde_json::to_value(&loaded).map_err(|err| invalid_input(err.to_string()))
}

/// The JSON Schema of worker files.
#[napi]
pub fn worker_json_schema() -> String {
    worker::worker_json_schema()
}

/// Whether `model` (`provider:model`) matches one of the `compatible_models` patterns (`*`
/// matches any text); an empty list allows every model.
#[napi]
pub fn model_is_compatible(patterns: Vec<String>, model: String) -> bool {
    worker::model_is_compatible(&patterns, &model)
}
