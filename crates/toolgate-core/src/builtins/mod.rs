//! The `builtins` toolset: Forge's built-in tools that need no program of their own.
//!
//! | tool | does | default approval (decided in [`crate::approval`]) |
//! | --- | --- | --- |
//! | `http_request` | one HTTP request, SSRF-safe ([`http`]) | `ask` |
//! | `web_search` | Tavily or Perplexity ([`search`]) | `ask` |
//! | `file_create` | a file in `.toolgate/files/` ([`files`]) | `ask` |
//! | `json_parse`, `csv_parse` | parse and query data ([`data`]) | `preApproved` |
//! | `datetime_now`, `uuid_generate` | clock and identifiers ([`clock`]) | `preApproved` |
//! | `math_calculate` | a safe expression evaluator ([`math`]) | `preApproved` |
//!
//! They run in-process, not as child processes, so the kernel sandbox does not apply to them:
//! each is confined by its own rules instead (the SSRF policy, the file tools' confinement,
//! size limits on every input).

pub mod clock;
pub mod config;
pub mod data;
pub mod files;
pub mod http;
mod input;
pub mod math;
pub mod search;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub use config::{BuiltinsConfig, BuiltinsOptions, BuiltinsSettings};

use crate::error::{Error, Result};
use http::{HttpClient, Lookup};

/// Every built-in tool, in the order they are offered.
pub const TOOL_NAMES: [&str; 8] = [
    "http_request",
    "json_parse",
    "csv_parse",
    "datetime_now",
    "uuid_generate",
    "math_calculate",
    "file_create",
    "web_search",
];

/// The built-in tools that write into the work directory (left out of read-only workers).
pub const WRITING_TOOLS: [&str; 1] = ["file_create"];

/// A built-in tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinSpec {
    pub name: &'static str,
    pub description: String,
    /// The JSON Schema of its input.
    pub input_schema: Value,
}

/// The built-in tools of one toolset, configured.
#[derive(Debug)]
pub struct Builtins {
    tools: Vec<&'static str>,
    work_dir: PathBuf,
    http: HttpClient,
    settings: BuiltinsSettings,
}

impl Builtins {
    /// The toolset for `work_dir`; names resolve through `lookup` (the system resolver outside
    /// tests). A read-only work directory leaves out the tools that write.
    pub fn new(
        settings: BuiltinsSettings,
        work_dir: &Path,
        readonly: bool,
        lookup: Lookup,
    ) -> Result<Self> {
        let http = HttpClient::new(settings.http.clone(), lookup)?;
        let tools = settings
            .tools
            .iter()
            .copied()
            .filter(|tool| !(readonly && WRITING_TOOLS.contains(tool)))
            .collect();
        Ok(Self {
            tools,
            work_dir: work_dir.to_path_buf(),
            http,
            settings,
        })
    }

    /// The names of the tools offered.
    pub fn names(&self) -> &[&'static str] {
        &self.tools
    }

    /// The tools offered, with descriptions and input schemas.
    pub fn specs(&self) -> Vec<BuiltinSpec> {
        self.tools
            .iter()
            .map(|name| spec(name, &self.settings))
            .collect()
    }

    /// Runs tool `name` with the model's `input`. `TOOL_NOT_FOUND` for a tool this toolset does
    /// not offer; `INVALID_INPUT` for input the tool refuses; the tool's own errors otherwise.
    pub async fn run(&self, name: &str, input: Value) -> Result<Value> {
        let Some(&tool) = self.tools.iter().find(|tool| **tool == name) else {
            return Err(Error::ToolNotFound(format!(
                "built-in tool '{name}' is not offered here; the builtins toolset has: {}",
                self.tools.join(", ")
            )));
        };
        match tool {
            "http_request" => self.http.request(input).await,
            "json_parse" => data::json_parse(input),
            "csv_parse" => data::csv_parse(input),
            "datetime_now" => clock::datetime_now(input),
            "uuid_generate" => clock::uuid_generate(input),
            "math_calculate" => math::math_calculate(input),
            "file_create" => {
                let work_dir = self.work_dir.clone();
                tokio::task::spawn_blocking(move || files::file_create(&work_dir, input))
                    .await
                    .map_err(|err| Error::Internal(format!("file_create: {err}")))?
            }
            "web_search" => {
                let endpoint = search::endpoint(
                    self.settings.web_search_provider,
                    self.settings.web_search_base_url.as_deref(),
                    &|name| std::env::var(name).ok(),
                )?;
                search::web_search(&self.http, &endpoint, input).await
            }
            other => Err(Error::Internal(format!(
                "built-in tool '{other}' has no implementation"
            ))),
        }
    }
}

fn spec(name: &'static str, settings: &BuiltinsSettings) -> BuiltinSpec {
    let (description, input_schema) = match name {
        "http_request" => (
            format!(
                "Make an HTTP request (GET, POST, PUT, PATCH, DELETE, HEAD) and get the status, headers and body. Requests to internal networks (loopback, private, link-local, metadata addresses) are refused unless configured. Bodies longer than {} bytes are cut and marked; the request times out after {} ms.",
                settings.http.max_response_bytes,
                settings.http.timeout.as_millis()
            ),
            json!({
                "type": "object",
                "properties": {
                    "url": { "type": "string", "description": "Absolute http:// or https:// URL" },
                    "method": { "type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"], "description": "Default GET" },
                    "headers": { "type": "object", "additionalProperties": { "type": "string" }, "description": "Request headers" },
                    "body": { "type": "string", "description": "Request body (POST, PUT, PATCH, DELETE)" },
                    "timeout_ms": { "type": "integer", "minimum": 1, "description": "Shorter timeout for this request" }
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        ),
        "json_parse" => (
            "Parse JSON text and optionally query it with an RFC 9535 JSONPath expression ('$.items[0].name', '$..id', '$.items[?@.price < 10]').".into(),
            json!({
                "type": "object",
                "properties": {
                    "data": { "type": "string", "description": "The JSON text" },
                    "path": { "type": "string", "description": "RFC 9535 JSONPath expression; without it the parsed document is returned" }
                },
                "required": ["data"],
                "additionalProperties": false
            }),
        ),
        "csv_parse" => (
            format!("Parse CSV text into rows: objects keyed by the header row, or arrays without one. At most {} rows by default.", crate::limits::DEFAULT_CSV_ROWS),
            json!({
                "type": "object",
                "properties": {
                    "data": { "type": "string", "description": "The CSV text" },
                    "delimiter": { "type": "string", "description": "One character, default ','; '\\t' for tabs" },
                    "quote": { "type": "string", "description": "Quote character, default '\"'" },
                    "has_header": { "type": "boolean", "description": "Whether the first row names the columns (default true)" },
                    "max_rows": { "type": "integer", "minimum": 1, "maximum": crate::limits::MAX_CSV_ROWS, "description": "Rows to return" }
                },
                "required": ["data"],
                "additionalProperties": false
            }),
        ),
        "datetime_now" => (
            "Get the current date and time in a time zone (IANA name, default UTC), as ISO 8601 and optionally in a strftime format.".into(),
            json!({
                "type": "object",
                "properties": {
                    "timezone": { "type": "string", "description": "IANA time zone, e.g. 'Europe/Berlin' (default 'UTC')" },
                    "format": { "type": "string", "description": "strftime format, e.g. '%Y-%m-%d %H:%M'" }
                },
                "additionalProperties": false
            }),
        ),
        "uuid_generate" => (
            "Generate UUIDs: version 4 (random, default) or 7 (time-ordered).".into(),
            json!({
                "type": "object",
                "properties": {
                    "version": { "type": "string", "enum": ["v4", "v7"], "description": "Default 'v4'" },
                    "count": { "type": "integer", "minimum": 1, "maximum": crate::limits::MAX_UUIDS, "description": "How many (default 1)" }
                },
                "additionalProperties": false
            }),
        ),
        "math_calculate" => (
            "Evaluate a mathematical expression: + - * / % ^, comparisons, math::sqrt(x), math::sin(x), math::ln(x), min(a, b), max(a, b), floor(x), round(x), constants pi and e. No variables or assignments.".into(),
            json!({
                "type": "object",
                "properties": {
                    "expression": { "type": "string", "description": "e.g. '(2 + 3) * math::sqrt(16)'" }
                },
                "required": ["expression"],
                "additionalProperties": false
            }),
        ),
        "file_create" => (
            format!(
                "Create a downloadable text file in {}/ of the work directory (replaced if it exists). Allowed extensions: {}.",
                files::FILES_DIR,
                files::EXTENSIONS.iter().map(|(ext, _)| *ext).collect::<Vec<_>>().join(", ")
            ),
            json!({
                "type": "object",
                "properties": {
                    "filename": { "type": "string", "description": "A plain file name with an allowed extension, e.g. 'report.md'" },
                    "content": { "type": "string", "description": "The whole file content" }
                },
                "required": ["filename", "content"],
                "additionalProperties": false
            }),
        ),
        _ => (
            "Search the web for quick lookups and recent information; returns an answer and result links.".into(),
            json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "The search query" },
                    "max_results": { "type": "integer", "minimum": 1, "maximum": crate::limits::MAX_SEARCH_RESULTS_PER_CALL, "description": "Results to return (default 5)" }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        ),
    };
    BuiltinSpec {
        name,
        description,
        input_schema,
    }
}

#[cfg(test)]
mod tests;
