//! The configuration of the builtins toolset: one type, [`BuiltinsConfig`], for
//! `toolsets.builtins` in a worker file and (in JavaScript spelling,
//! [`crate::options::spelling`]) the options of `builtinsToolset()` ([`BuiltinsOptions`]),
//! checked into [`BuiltinsSettings`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::http::{AllowList, HttpPolicy};
use super::search::Provider;
use super::TOOL_NAMES;
use crate::approval::ApprovalConfig;
use crate::error::{Error, Result};

/// `toolsets.builtins`: Forge's built-in tools.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuiltinsConfig {
    /// Only these tools (default: all of `http_request`, `json_parse`, `csv_parse`,
    /// `datetime_now`, `uuid_generate`, `math_calculate`, `file_create`, `web_search`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Approval (defaults: `ask` for `http_request`, `web_search`, `file_create`;
    /// `preApproved` for the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalConfig>,
    /// `http_request`'s network policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpConfig>,
    /// `web_search`'s provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_search: Option<WebSearchConfig>,
}

/// `builtins.http`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Host names, addresses or CIDR ranges that may be reached although they are internal
    /// (loopback, private, link-local, …). Everything else internal is refused.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Seconds for a whole request, redirects included (default 30, at most 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.001, max = 300))]
    pub timeout: Option<f64>,
    /// Bytes of a response body kept (default 1 MiB, at most 16 MiB); the rest is cut and marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_bytes: Option<u64>,
}

/// `builtins.web_search`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchConfig {
    /// `tavily` or `perplexity` (default: `WEB_SEARCH_PROVIDER`, else the first key set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    /// The provider's base URL (a proxy, or a local server in tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// `builtinsToolset()` options: the `builtins` block in JavaScript spelling (`tools`,
/// `approval`, `http: { allow, timeoutMs, maxResponseBytes }`, `webSearch: { provider,
/// baseUrl }`), and the directory `file_create` writes in.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BuiltinsOptions {
    /// Where `file_create` writes (default: the current directory).
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Every other key: the `builtins` block.
    #[serde(rename = "...")]
    pub config: BuiltinsConfig,
}

/// The checked configuration.
#[derive(Debug, Clone)]
pub struct BuiltinsSettings {
    /// The tools offered, in [`TOOL_NAMES`] order.
    pub tools: Vec<&'static str>,
    pub http: HttpPolicy,
    pub web_search_provider: Option<Provider>,
    pub web_search_base_url: Option<String>,
}

impl Default for BuiltinsSettings {
    fn default() -> Self {
        Self {
            tools: TOOL_NAMES.to_vec(),
            http: HttpPolicy::default(),
            web_search_provider: None,
            web_search_base_url: None,
        }
    }
}

impl BuiltinsConfig {
    /// Checks the block; `place` names it in errors (`worker.yaml: toolsets.builtins`).
    pub fn settings(&self, place: &str) -> Result<BuiltinsSettings> {
        let http = self.http.clone().unwrap_or_default();
        let search = self.web_search.clone().unwrap_or_default();
        let invalid = |message: String| Error::ConfigInvalid(format!("{place}: {message}"));
        let timeout = http
            .timeout
            .map(|seconds| {
                Duration::try_from_secs_f64(seconds)
                    .map_err(|_| invalid(format!("the http timeout is {seconds}; give seconds")))
            })
            .transpose()?;
        settings(
            invalid,
            self.tools.as_deref(),
            &http.allow,
            timeout,
            http.max_response_bytes,
            search.provider,
            search.base_url,
        )
    }
}

impl BuiltinsOptions {
    /// Checks the options (`CONFIG_INVALID` naming the option).
    pub fn settings(&self) -> Result<BuiltinsSettings> {
        self.config.settings("builtinsToolset")
    }
}

fn settings(
    invalid: impl Fn(String) -> Error,
    tools: Option<&[String]>,
    allow: &[String],
    timeout: Option<Duration>,
    max_response_bytes: Option<u64>,
    provider: Option<Provider>,
    base_url: Option<String>,
) -> Result<BuiltinsSettings> {
    let tools = match tools {
        None => TOOL_NAMES.to_vec(),
        Some(names) => {
            for name in names {
                if !TOOL_NAMES.contains(&name.as_str()) {
                    return Err(invalid(format!(
                        "tools names '{name}', which is not a built-in tool; the built-in tools are {}",
                        TOOL_NAMES.join(", ")
                    )));
                }
            }
            TOOL_NAMES
                .iter()
                .copied()
                .filter(|tool| names.iter().any(|name| name == tool))
                .collect()
        }
    };
    let timeout = match timeout {
        None => crate::limits::DEFAULT_HTTP_TIMEOUT,
        Some(value) if value.is_zero() || value > crate::limits::MAX_HTTP_TIMEOUT => {
            return Err(invalid(format!(
                "the http timeout must be between 1 ms and {} s",
                crate::limits::MAX_HTTP_TIMEOUT.as_secs()
            )))
        }
        Some(value) => value,
    };
    let max_response_bytes = match max_response_bytes {
        None => crate::limits::DEFAULT_HTTP_RESPONSE_BYTES,
        Some(0) => return Err(invalid("max_response_bytes must be at least 1".into())),
        Some(n) if n > crate::limits::MAX_HTTP_RESPONSE_BYTES as u64 => {
            return Err(invalid(format!(
                "max_response_bytes is {n}; at most {} bytes are kept",
                crate::limits::MAX_HTTP_RESPONSE_BYTES
            )))
        }
        Some(n) => n as usize,
    };
    let allow = AllowList::parse(allow).map_err(|err| invalid(err.to_string()))?;
    if let Some(url) = &base_url {
        url::Url::parse(url)
            .map_err(|err| invalid(format!("web_search base URL '{url}' is not a URL: {err}")))?;
    }
    Ok(BuiltinsSettings {
        tools,
        http: HttpPolicy {
            allow: Arc::new(allow),
            timeout,
            max_response_bytes,
        },
        web_search_provider: provider,
        web_search_base_url: base_url,
    })
}
