//! Executable custom tools: programs in tool directories that an agent may call.
//!
//! Three formats are understood:
//! - the executable protocol ([`protocol`]): `<tool> description` prints
//!   `{name, description, input_schema}` and `<tool> run` reads the JSON input on stdin;
//! - `<dir>/<name>/tool.yaml` manifests ([`manifest`]) whose parameters become `--name=value`
//!   flags of an entrypoint;
//! - Forge's docstring tools ([`docstring`]): `.py` / `.ts` scripts whose header docstring
//!   declares `Tool:`, `Description:`, `Input:` and `Output:`, run by their interpreter with the
//!   JSON input on stdin.
//!
//! [`discovery`] scans the configured directories (earlier directories win a name clash) and
//! describes protocol tools concurrently through the executor; [`cache`] remembers descriptions
//! keyed by (path, size, mtime, inode) so an unchanged tool is never spawned again for
//! discovery; [`registry`] keeps the result and refreshes it with `stat` calls only when
//! nothing changed; [`run`] validates an input against the tool's schema and runs the tool with
//! a reduced environment, a timeout and an output cap; [`scaffold`] writes new tools.

pub mod cache;
pub mod config;
pub mod discovery;
pub mod docstring;
pub mod manifest;
mod options;
pub mod protocol;
pub mod registry;
pub mod run;
pub mod scaffold;

#[cfg(test)]
pub(crate) mod test_support;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

pub use config::ExecutablesConfig;
pub use discovery::{CacheMode, DiscoveryOptions, DiscoveryStats, ToolDirectory};
pub use options::{
    CreateCustomToolOptions, ExecutableToolsOptions, RefreshOptions, RunToolOptions,
};
pub use registry::{Registry, RegistryOptions};
pub use run::{PreparedRun, RunOptions, ToolOutput};

pub use crate::limits::{
    EXECUTABLE_TOOL_PREFIX as LLM_NAME_PREFIX, MAX_EXECUTABLE_NAME_LEN as MAX_TOOL_NAME_LEN,
};

/// Checks an executable tool name: `^[a-zA-Z0-9_-]+$`, and short enough that the model-facing
/// `custom_tool_<name>` fits what model providers accept. Returns the reason when it is not
/// acceptable.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    crate::limits::check_tool_name(name, LLM_NAME_PREFIX)
}

/// Which of the three formats a tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolFormat {
    /// An executable answering `description` and `run`.
    Protocol,
    /// A `tool.yaml` manifest with an entrypoint.
    Manifest,
    /// A Python or TypeScript script with a Forge docstring header.
    Docstring,
}

impl ToolFormat {
    /// `protocol`, `manifest` or `docstring`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFormat::Protocol => "protocol",
            ToolFormat::Manifest => "manifest",
            ToolFormat::Docstring => "docstring",
        }
    }
}

/// Everything known about one discovered tool.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON Schema its input must match (for manifests: derived from `parameters`), as
    /// JSON text; [`ToolSpec::input_schema_value`] parses it.
    pub input_schema: SchemaText,
    pub format: ToolFormat,
    /// Where it was found: the executable (protocol) or the `tool.yaml` (manifest), as listed
    /// in its directory.
    pub source: PathBuf,
    /// The program that runs, symlinks resolved.
    pub program: PathBuf,
    /// The configured tool directory it came from.
    pub directory: PathBuf,
    /// Manifest details; `None` for other tools.
    pub manifest: Option<Arc<manifest::Manifest>>,
    /// The docstring header; `None` for other tools.
    pub docstring: Option<Arc<docstring::DocstringTool>>,
}

impl PartialEq for ToolSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && (Arc::ptr_eq(&self.input_schema, &other.input_schema)
                || self.input_schema.get() == other.input_schema.get())
            && self.format == other.format
            && self.source == other.source
            && self.program == other.program
            && self.directory == other.directory
            && self.manifest == other.manifest
            && self.docstring == other.docstring
    }
}

impl ToolSpec {
    /// The input schema as a JSON value.
    pub fn input_schema_value(&self) -> Value {
        schema_value(&self.input_schema)
    }
}

/// A tool's input schema kept as JSON text and shared: listing, caching and refreshing hundreds
/// of tools neither parses nor copies schemas. It is parsed where a value is needed (to compile
/// it before a run).
pub type SchemaText = Arc<RawValue>;

/// The schema text of a JSON value.
pub fn schema_text(value: &Value) -> SchemaText {
    serde_json::value::to_raw_value(value)
        .map(Arc::from)
        .expect("a JSON value serialises")
}

/// The JSON value of a schema text (which is valid JSON by construction).
pub fn schema_value(text: &RawValue) -> Value {
    serde_json::from_str(text.get()).unwrap_or(Value::Null)
}

/// Serde for [`SchemaText`] fields (serde's own `Arc` support needs its `rc` feature).
pub(crate) mod shared_schema {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::value::RawValue;

    pub fn serialize<S: Serializer>(
        value: &Arc<RawValue>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.as_ref().serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Arc<RawValue>, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Arc::from)
    }
}

/// What kind of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// Not a usable tool; it is left out.
    Invalid,
    /// A valid tool hidden by another of the same name in a directory that takes precedence.
    Shadowed,
    /// A configured directory that does not exist.
    MissingDirectory,
}

impl DiagnosticKind {
    /// `invalid`, `shadowed` or `missing_directory`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticKind::Invalid => "invalid",
            DiagnosticKind::Shadowed => "shadowed",
            DiagnosticKind::MissingDirectory => "missing_directory",
        }
    }
}

/// Why something in a tool directory is not (or not the) tool: never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub path: PathBuf,
    pub kind: DiagnosticKind,
    pub reason: String,
}

impl Diagnostic {
    pub(crate) fn invalid(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            kind: DiagnosticKind::Invalid,
            reason: reason.into(),
        }
    }
}

/// The result of a discovery: the usable tools (by precedence, then by name) and every problem.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub tools: Vec<ToolSpec>,
    pub diagnostics: Vec<Diagnostic>,
    /// What the discovery had to do (spawns, cache hits, directory listings).
    pub stats: DiscoveryStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_pattern_and_the_provider_limit() {
        for good in [
            "a",
            "weather",
            "get-time_2",
            "A_B-c",
            &"x".repeat(MAX_TOOL_NAME_LEN),
        ] {
            assert!(check_tool_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a b",
            "../x",
            "a/b",
            "na\u{e9}me",
            "x;y",
            "a\nb",
            "a.b",
            &"x".repeat(MAX_TOOL_NAME_LEN + 1),
        ] {
            assert!(check_tool_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_tool_name("a b")
            .unwrap_err()
            .contains("^[a-zA-Z0-9_-]+$"));
    }
}
