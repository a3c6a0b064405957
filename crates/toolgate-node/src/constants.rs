//! The core's defaults, limits and names, for the SDK (which never restates them).

use napi_derive::napi;
use toolgate_core::executables::CacheMode as CoreCacheMode;
use toolgate_core::limits;

use crate::enums::{CacheMode, Decision, OutputAction, PatchAction};
use crate::error::{error_codes, error_layers, infallible};
use napi::Env;

/// Defaults, limits and names of toolgate.
#[napi(object, object_from_js = false)]
pub struct Constants {
    /// Every error code.
    #[napi(ts_type = "ErrorCode[]")]
    pub error_codes: Vec<String>,
    /// Every error layer.
    #[napi(ts_type = "ErrorLayer[]")]
    pub error_layers: Vec<String>,
    /// The approval decisions, least strict first.
    pub decisions: Vec<Decision>,
    pub cache_modes: Vec<CacheMode>,
    pub patch_actions: Vec<PatchAction>,
    pub output_actions: Vec<OutputAction>,
    /// Default timeout of a `cli_execute` / `shell` command, in milliseconds.
    pub default_command_timeout_ms: f64,
    /// Default timeout of an executable tool run, in milliseconds.
    pub default_executable_timeout_ms: f64,
    /// How long importing a tools module may take by default.
    pub default_import_timeout_ms: f64,
    /// Most files reported as a tools module's imports.
    pub max_module_imports: u32,
    /// Largest source of a native ES module read for its imports, in bytes.
    pub max_module_source_bytes: f64,
    /// Longest timeout anything accepts, in milliseconds.
    pub max_timeout_ms: f64,
    /// Default cap of each of stdout and stderr, in bytes.
    pub default_max_output_bytes: f64,
    /// The prefix of every executable tool's name as the model sees it.
    pub executable_tool_prefix: String,
    /// Longest tool name model providers accept.
    pub max_tool_name_length: u32,
    /// Tools that end a worker's run.
    pub reserved_tool_names: Vec<String>,
    /// How deep workers may call workers.
    pub max_worker_depth: u32,
    /// Model steps of a run when nobody says.
    pub default_max_steps: u32,
    /// The project's executable tool directory, relative to the work directory.
    pub default_tool_directory: String,
    /// Directories no search or walk descends into.
    pub skipped_directories: Vec<String>,
    /// Most lines of grep context on each side of a match.
    pub max_grep_context: u32,
    /// Default lines of a read.
    pub default_read_lines: u32,
    /// Default bytes of a read before it is cut.
    pub default_read_bytes: u32,
    /// Longest line a read shows before it cuts the line.
    pub max_line_bytes: u32,
    /// Default paths of a glob.
    pub default_glob_results: u32,
    /// Default matching lines of a grep.
    pub default_grep_results: u32,
    /// Default depth of a directory tree.
    pub default_tree_depth: u32,
    /// Most paths a glob lists and most matching lines grep shows (`max_results`).
    pub max_search_results: u32,
    /// Deepest `directory_tree` drawing (`max_depth`).
    pub max_tree_depth: u32,
    /// Longest display of a tool input shown for review, in bytes; a longer one may only be
    /// approved once (no "always", no saved rule).
    pub max_review_bytes: u32,
    /// The name of the project permissions file (saved approvals), beside the top worker file.
    pub permissions_file_name: String,
}

fn small(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// Defaults, limits and names of toolgate.
#[napi]
pub fn constants(env: Env) -> napi::Result<Constants> {
    infallible(&env, "constants", collect)
}

fn collect() -> Constants {
    use toolgate_core::approval::Decision as D;
    use toolgate_core::command::config::OutputAction as O;
    use toolgate_core::fs::PatchAction as P;
    Constants {
        error_codes: error_codes(),
        error_layers: error_layers(),
        decisions: [D::PreApproved, D::Ask, D::Blocked]
            .into_iter()
            .map(Into::into)
            .collect(),
        cache_modes: [
            CoreCacheMode::Use,
            CoreCacheMode::Refresh,
            CoreCacheMode::Off,
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        patch_actions: [P::Add, P::Update, P::Delete, P::Move]
            .into_iter()
            .map(Into::into)
            .collect(),
        output_actions: [O::Block, O::Redact].into_iter().map(Into::into).collect(),
        default_command_timeout_ms: limits::DEFAULT_COMMAND_TIMEOUT.as_millis() as f64,
        default_executable_timeout_ms: limits::DEFAULT_EXECUTABLE_TIMEOUT.as_millis() as f64,
        default_import_timeout_ms: limits::DEFAULT_IMPORT_TIMEOUT.as_millis() as f64,
        max_module_imports: limits::MAX_MODULE_IMPORTS as u32,
        max_module_source_bytes: limits::MAX_MODULE_SOURCE_BYTES as f64,
        max_timeout_ms: limits::MAX_TIMEOUT.as_millis() as f64,
        default_max_output_bytes: limits::DEFAULT_MAX_OUTPUT_BYTES as f64,
        executable_tool_prefix: limits::EXECUTABLE_TOOL_PREFIX.into(),
        max_tool_name_length: small(limits::MAX_TOOL_NAME_LEN),
        reserved_tool_names: limits::RESERVED_TOOL_NAMES.map(String::from).to_vec(),
        max_worker_depth: small(limits::MAX_WORKER_DEPTH),
        default_max_steps: limits::DEFAULT_MAX_STEPS,
        default_tool_directory: limits::DEFAULT_TOOL_DIRECTORY.into(),
        skipped_directories: limits::SKIPPED_DIRECTORIES.map(String::from).to_vec(),
        max_grep_context: small(limits::MAX_GREP_CONTEXT),
        default_read_lines: small(limits::DEFAULT_READ_LINES),
        default_read_bytes: small(toolgate_core::limits::DEFAULT_READ_BYTES),
        max_line_bytes: small(toolgate_core::limits::MAX_LINE_BYTES),
        default_glob_results: small(limits::DEFAULT_GLOB_RESULTS),
        default_grep_results: small(limits::DEFAULT_GREP_RESULTS),
        default_tree_depth: small(limits::DEFAULT_TREE_DEPTH),
        max_search_results: small(limits::MAX_SEARCH_RESULTS),
        max_tree_depth: small(limits::MAX_TREE_DEPTH),
        max_review_bytes: small(limits::MAX_REVIEW_BYTES),
        permissions_file_name: limits::PERMISSIONS_FILE_NAME.into(),
    }
}
