//! The `mcp` toolset's settings as written: one type, [`McpToolsetConfig`], for the worker-file
//! block and (in JavaScript spelling, [`crate::options::spelling`]) the `mcpToolset` options;
//! and the checks that turn them into servers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{McpServer, McpTransport};
use crate::approval::ApprovalConfig;
use crate::error::{Error, Result};
use crate::exec::env::is_reserved;
use crate::limits::{
    DEFAULT_MCP_CALL_TIMEOUT, DEFAULT_MCP_STARTUP_TIMEOUT, MAX_MCP_SERVERS,
    MAX_MCP_SERVER_NAME_LEN, MAX_TIMEOUT,
};
use crate::options::WorkDir;
use crate::sandbox_config::{SandboxFields, SandboxOption};

/// One MCP server: a stdio `command` toolgate starts inside the kernel sandbox, or the `url` of
/// a Streamable HTTP server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// stdio: the program, a name on PATH or a path relative to the work directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments (relative paths are relative to the work directory, its cwd).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: variables set for the server on top of the reduced environment; `${VAR}` in a
    /// value is replaced with toolgate's own VAR (which must be set).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// HTTP: the server's Streamable HTTP endpoint (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP: request headers; `${VAR}` in a value is replaced with toolgate's own VAR.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl McpServerConfig {
    /// The host environment variables this server's values read: `(setting, NAME)` for each
    /// `${NAME}` in an `env` value (`env.KEY`) or a `headers` value (`headers.KEY`). `args`
    /// and `url` are passed as written, so they read none. A worker plan compares these with
    /// what a calling worker passes on.
    pub fn host_variables(&self) -> Vec<(String, String)> {
        let values = self
            .env
            .iter()
            .map(|(key, value)| (format!("env.{key}"), value))
            .chain(
                self.headers
                    .iter()
                    .map(|(key, value)| (format!("headers.{key}"), value)),
            );
        values
            .flat_map(|(setting, value)| {
                referenced_variables(value)
                    .into_iter()
                    .map(move |name| (setting.clone(), name))
            })
            .collect()
    }
}

/// `toolsets.mcp` in a worker file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpToolsetConfig {
    /// The servers by name; a tool `t` of server `s` is offered as `s_t`.
    pub servers: BTreeMap<String, McpServerConfig>,
    /// Only these tools (`server.tool`) are offered (default: every tool of every server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Approval of the tools, named `server.tool` or by their exposed name (default `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalConfig>,
    /// The stdio servers' kernel sandbox: its keys replace the worker's (an absent key keeps the
    /// worker's value) and may widen them (`network: true`, the servers' code in `read`); in a
    /// called worker it stays within the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxFields>,
    /// Seconds a tool call may take (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Seconds a server may take to start and list its tools (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout: Option<f64>,
}

/// `mcpToolset(options)` from TypeScript: the `mcp` block in JavaScript spelling (`servers`,
/// `tools`, `approval`, `timeoutMs`, `startupTimeoutMs`), and where the stdio servers run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct McpToolsetOptions {
    /// The stdio servers' kernel sandbox (default `{ mode: 'enforce', network: false }`).
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
    /// The stdio servers' cwd and only writable place (default: the current directory).
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// Every other key: the `mcp` block.
    #[serde(rename = "...")]
    pub config: McpToolsetConfig,
}

impl McpToolsetOptions {
    /// The options as a worker file's block, the work directory and the sandbox keys.
    pub fn into_config(self) -> Result<(McpToolsetConfig, PathBuf, SandboxFields)> {
        let work_dir = WorkDir::resolve(self.work_dir)?;
        let fields = self
            .sandbox
            .map(SandboxOption::into_fields)
            .unwrap_or_default();
        let config = McpToolsetConfig {
            sandbox: None,
            ..self.config
        };
        Ok((config, work_dir, fields))
    }
}

/// A configuration checked: servers with expanded values, the whitelist split, timeouts.
pub(super) struct Checked {
    pub servers: Vec<McpServer>,
    pub whitelist: Option<Vec<(String, String)>>,
    pub timeout: Duration,
    pub startup_timeout: Duration,
}

/// Checks `config` (`place` names it in messages); `lookup` reads toolgate's environment for
/// `${VAR}`.
pub(super) fn check(
    config: &McpToolsetConfig,
    place: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Checked> {
    let invalid = |what: String| Error::ConfigInvalid(format!("{place}: {what}"));
    if config.servers.is_empty() {
        return Err(invalid(
            "servers is empty; name at least one server: servers: { files: { command: ..., args: [...] } }".into(),
        ));
    }
    if config.servers.len() > MAX_MCP_SERVERS {
        return Err(invalid(format!(
            "servers has {} entries; at most {MAX_MCP_SERVERS} servers are allowed in one toolset",
            config.servers.len()
        )));
    }
    let servers = config
        .servers
        .iter()
        .map(|(name, server)| check_server(name, server, lookup).map_err(invalid))
        .collect::<Result<Vec<_>>>()?;
    let whitelist = config
        .tools
        .as_ref()
        .map(|entries| {
            entries
                .iter()
                .map(|entry| {
                    split_tool_entry(entry, &config.servers)
                        .map_err(|why| invalid(format!("tools: {why}")))
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?;
    if let Some(approval) = &config.approval {
        for name in approval.tools.keys() {
            if name.contains('.') {
                split_tool_entry(name, &config.servers)
                    .map_err(|why| invalid(format!("approval.tools: {why}")))?;
            }
        }
    }
    Ok(Checked {
        servers,
        whitelist,
        timeout: seconds(config.timeout, DEFAULT_MCP_CALL_TIMEOUT, "timeout").map_err(invalid)?,
        startup_timeout: seconds(
            config.startup_timeout,
            DEFAULT_MCP_STARTUP_TIMEOUT,
            "startup_timeout",
        )
        .map_err(invalid)?,
    })
}

/// Checks a server name: it prefixes the server's tool names, so it uses the characters of a
/// tool name but no `_` (which separates it from the tool) and no `.` (which separates it in
/// `server.tool`).
pub(super) fn check_server_name(name: &str) -> std::result::Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_MCP_SERVER_NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if valid {
        return Ok(());
    }
    Err(format!(
        "servers: '{}' is not a server name; use 1 to {MAX_MCP_SERVER_NAME_LEN} letters, digits and '-' (no '_' or '.': they separate the server from the tool in 'server_tool' and 'server.tool')",
        name.escape_debug()
    ))
}

fn check_server(
    name: &str,
    server: &McpServerConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<McpServer, String> {
    check_server_name(name)?;
    let at = format!("servers.{name}");
    let transport = match (&server.command, &server.url) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{at} has both command and url; give command (a stdio server toolgate starts) or url (an HTTP server), not both"
            ))
        }
        (None, None) => {
            return Err(format!(
                "{at} has neither command nor url; give command: <program> (with args) for a stdio server, or url: http://… for an HTTP server"
            ))
        }
        (Some(command), None) => {
            if !server.headers.is_empty() {
                return Err(format!(
                    "{at}.headers is for HTTP servers (url); a stdio server gets values through env"
                ));
            }
            if command.is_empty() || command.contains('\0') {
                return Err(format!(
                    "{at}.command is empty or contains a NUL byte; give a program name or path"
                ));
            }
            if let Some(arg) = server.args.iter().find(|arg| arg.contains('\0')) {
                return Err(format!(
                    "{at}.args: '{}' contains a NUL byte, which no program can receive",
                    arg.escape_debug()
                ));
            }
            let mut env = Vec::with_capacity(server.env.len());
            for (key, value) in &server.env {
                check_env_name(key).map_err(|why| format!("{at}.env: {why}"))?;
                let value = expand(value, lookup).map_err(|why| format!("{at}.env.{key}: {why}"))?;
                if value.contains('\0') {
                    return Err(format!("{at}.env.{key} contains a NUL byte"));
                }
                env.push((key.clone(), value));
            }
            McpTransport::Stdio {
                command: command.clone(),
                args: server.args.clone(),
                env,
            }
        }
        (None, Some(url)) => {
            if !server.args.is_empty() || !server.env.is_empty() {
                return Err(format!(
                    "{at}: args and env are for stdio servers (command); an HTTP server gets values through headers"
                ));
            }
            check_url(url).map_err(|why| format!("{at}.url: {why}"))?;
            let mut headers = Vec::with_capacity(server.headers.len());
            for (key, value) in &server.headers {
                check_header_name(key).map_err(|why| format!("{at}.headers: {why}"))?;
                let value =
                    expand(value, lookup).map_err(|why| format!("{at}.headers.{key}: {why}"))?;
                if value.chars().any(|c| c.is_control() && c != '\t') {
                    return Err(format!(
                        "{at}.headers.{key} contains a control character (a line break?), which a header cannot hold"
                    ));
                }
                headers.push((key.clone(), value));
            }
            McpTransport::Http {
                url: url.clone(),
                headers,
            }
        }
    };
    Ok(McpServer {
        name: name.to_string(),
        transport,
    })
}

/// Variables a server's `env` may not set: toolgate's private directories, and `PATH`, whose
/// directories the sandbox makes readable (a toolset may only narrow the sandbox).
fn check_env_name(name: &str) -> std::result::Result<(), String> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "'{}' is not a variable name; use letters, digits and '_' (like GITHUB_TOKEN)",
            name.escape_debug()
        ));
    }
    if is_reserved(name) {
        return Err(format!(
            "{name} cannot be set: HOME, TMPDIR and XDG_* point to the server's private, empty directory; remove it"
        ));
    }
    if name == "PATH" {
        return Err(
            "PATH cannot be set: the sandbox makes the directories on PATH readable, and a toolset may only narrow the sandbox; give the command by its absolute path and add its directory to the worker-level sandbox.read".into(),
        );
    }
    Ok(())
}

fn check_header_name(name: &str) -> std::result::Result<(), String> {
    const SEPARATORS: &str = "()<>@,;:\\\"/[]?={} \t";
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_graphic() && !SEPARATORS.contains(c));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "'{}' is not a header name; use letters, digits and '-' (like Authorization)",
            name.escape_debug()
        ))
    }
}

fn check_url(url: &str) -> std::result::Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| {
            format!(
                "'{}' is not an http:// or https:// URL; give the server's Streamable HTTP endpoint, like http://127.0.0.1:8931/mcp",
                url.escape_debug()
            )
        })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "'{}' has no host or contains spaces; give a URL like http://127.0.0.1:8931/mcp",
            url.escape_debug()
        ));
    }
    Ok(())
}

/// Replaces every `${NAME}` in `value` with `lookup(NAME)`. Only `${…}` is special (a `$`
/// followed by anything else stays as written); a variable that is not set is an error, so a
/// missing token is never sent as an empty string.
pub fn expand(
    value: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| {
            format!(
                "'${{' without a closing '}}' in '{}'; write ${{NAME}}",
                value.escape_debug()
            )
        })?;
        let name = &after[..end];
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "'${{{}}}' does not name a variable; write ${{NAME}} with letters, digits and '_'",
                name.escape_debug()
            ));
        }
        let replacement = lookup(name).ok_or_else(|| {
            format!("${{{name}}} is not set in toolgate's environment; set {name} before starting toolgate, or write the value")
        })?;
        out.push_str(&replacement);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The names `${NAME}` in `value` reads, found by [`expand`] itself so that no name it would
/// look up is missed; it stops at the first malformed `${`, which [`check`] refuses anyway.
fn referenced_variables(value: &str) -> Vec<String> {
    let names = std::cell::RefCell::new(Vec::new());
    let _ = expand(value, &|name| {
        names.borrow_mut().push(name.to_string());
        Some(String::new())
    });
    names.into_inner()
}

/// `server.tool` split at the first `.`; the server must be configured.
pub(super) fn split_tool_entry(
    entry: &str,
    servers: &BTreeMap<String, McpServerConfig>,
) -> std::result::Result<(String, String), String> {
    let Some((server, tool)) = entry
        .split_once('.')
        .filter(|(s, t)| !s.is_empty() && !t.is_empty())
    else {
        return Err(format!(
            "'{}' is not 'server.tool'; name a tool by its server and its name, like files.read_text_file",
            entry.escape_debug()
        ));
    };
    if !servers.contains_key(server) {
        let names: Vec<&str> = servers.keys().map(String::as_str).collect();
        return Err(format!(
            "'{entry}' names server '{server}', which is not configured; the servers are: {}",
            names.join(", ")
        ));
    }
    Ok((server.to_string(), tool.to_string()))
}

/// A number of seconds from a worker file: above 0, at most a day.
fn seconds(
    value: Option<f64>,
    default: Duration,
    key: &str,
) -> std::result::Result<Duration, String> {
    let Some(value) = value else {
        return Ok(default);
    };
    if value.is_finite() && value > 0.0 && value <= MAX_TIMEOUT.as_secs_f64() {
        return Ok(Duration::from_secs_f64(value));
    }
    Err(format!(
        "{key} is {value}; give a number of seconds above 0 and at most {} (a day), or leave it out for the default of {} s",
        MAX_TIMEOUT.as_secs(),
        default.as_secs()
    ))
}
