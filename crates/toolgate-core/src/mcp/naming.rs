//! Which tools of the servers the model sees, and their names.
//!
//! A tool `t` of server `s` is offered as `s_t`: characters a model provider refuses in a tool
//! name (anything but letters, digits, `_` and `-`) become `_`, and a name longer than
//! [`MAX_TOOL_NAME_LEN`] is cut and ends with `_` and 8 hex digits of a hash of `s.t`, so it
//! stays stable from run to run. Two offered tools that end up with the same name are refused
//! (never one silently replacing the other): leave one out with the `tools` whitelist.

use std::collections::BTreeMap;

use super::McpToolset;
use crate::approval::ApprovalConfig;
use crate::error::{Error, Result};
use crate::limits::MAX_TOOL_NAME_LEN;
use crate::limits::{MAX_MCP_SERVER_TOOL_NAME_LEN, MAX_MCP_TOOLS_PER_SERVER};

/// The tools one server listed (their names as the server spells them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTools {
    pub server: String,
    pub tools: Vec<String>,
}

/// A tool the model is offered: its server, its name on the server and its exposed name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectedTool {
    pub server: String,
    pub tool: String,
    pub name: String,
}

/// The name the model sees for tool `tool` of server `server` (see the module documentation).
pub fn exposed_name(server: &str, tool: &str) -> String {
    let mut name = String::with_capacity(server.len() + 1 + tool.len());
    for c in server
        .chars()
        .chain(std::iter::once('_'))
        .chain(tool.chars())
    {
        name.push(if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        });
    }
    if name.len() <= MAX_TOOL_NAME_LEN {
        return name;
    }
    let suffix = format!(
        "_{:08x}",
        fnv1a(format!("{server}.{tool}").as_bytes()) as u32
    );
    // Only ASCII is left, so any byte index is a character boundary.
    name.truncate(MAX_TOOL_NAME_LEN - suffix.len());
    name.push_str(&suffix);
    name
}

/// FNV-1a: small, stable across versions and platforms (the name must not change between runs).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl McpToolset {
    /// The tools the model is offered, given what each server listed: every tool, or the
    /// `tools` whitelist (each entry must name a listed tool), in server order then listing
    /// order, with exposed names. `TOOL_FAILED` naming the server for a listing no server may
    /// send (an invalid or repeated tool name, too many tools); `CONFIG_INVALID` for a
    /// whitelist entry naming no tool and for two tools with the same exposed name.
    pub fn select(&self, listed: &[ServerTools]) -> Result<Vec<SelectedTool>> {
        let by_server = self.check_listing(listed)?;
        if let Some(whitelist) = &self.whitelist {
            for (server, tool) in whitelist {
                let offered = &by_server[server.as_str()];
                if !offered.iter().any(|name| name == tool) {
                    return Err(Error::ConfigInvalid(format!(
                        "{}: tools names '{server}.{tool}', but server '{server}' has no tool '{tool}'; its tools are: {}",
                        self.place,
                        list(offered)
                    )));
                }
            }
        }
        let mut selected: Vec<SelectedTool> = Vec::new();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for server in &self.servers {
            for tool in by_server[server.name.as_str()] {
                let wanted = self.whitelist.as_ref().is_none_or(|whitelist| {
                    whitelist
                        .iter()
                        .any(|(s, t)| s == &server.name && t == tool)
                });
                if !wanted {
                    continue;
                }
                let name = exposed_name(&server.name, tool);
                let qualified = format!("{}.{tool}", server.name);
                if let Some(first) = names.insert(name.clone(), qualified.clone()) {
                    return Err(Error::ConfigInvalid(format!(
                        "{}: the tools '{first}' and '{qualified}' would both be offered as '{name}'; leave one out with the `tools` whitelist (server.tool entries), or rename a server",
                        self.place
                    )));
                }
                selected.push(SelectedTool {
                    server: server.name.clone(),
                    tool: tool.clone(),
                    name,
                });
            }
        }
        Ok(selected)
    }

    /// The `approval` block with every entry under the exposed name of the tool it names
    /// (`server.tool` or the exposed name itself; when both name one tool, the stricter
    /// wins), and every name an entry may use (for the name check of a worker's approvals).
    /// An entry naming no listed tool is `CONFIG_INVALID`.
    pub fn approval_for(&self, listed: &[ServerTools]) -> Result<(ApprovalConfig, Vec<String>)> {
        let by_server = self.check_listing(listed)?;
        let mut known: Vec<String> = Vec::new();
        let mut qualified: BTreeMap<String, String> = BTreeMap::new();
        for (server, tools) in &by_server {
            for tool in *tools {
                let name = exposed_name(server, tool);
                qualified.insert(format!("{server}.{tool}"), name.clone());
                known.push(name);
            }
        }
        let mut translated = ApprovalConfig {
            default: self.approval.default,
            tools: BTreeMap::new(),
        };
        for (entry, decision) in &self.approval.tools {
            let name = match qualified.get(entry) {
                Some(name) => name.clone(),
                None if known.contains(entry) => entry.clone(),
                None => {
                    let mut names: Vec<&String> = qualified.keys().collect();
                    names.sort_unstable();
                    return Err(Error::ConfigInvalid(format!(
                        "{}: approval.tools names '{entry}', which is not a tool of its servers; name a tool server.tool, one of: {}",
                        self.place,
                        if names.is_empty() {
                            "(none)".to_string()
                        } else {
                            names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
                        }
                    )));
                }
            };
            let slot = translated.tools.entry(name).or_insert(*decision);
            *slot = (*slot).max(*decision);
        }
        Ok((translated, known))
    }

    /// Each configured server's listed tools, checked: every server reported once, no unknown
    /// server, valid and unique tool names, at most [`MAX_MCP_TOOLS_PER_SERVER`].
    fn check_listing<'a>(
        &self,
        listed: &'a [ServerTools],
    ) -> Result<BTreeMap<&'a str, &'a [String]>> {
        let mut by_server: BTreeMap<&str, &[String]> = BTreeMap::new();
        for report in listed {
            if !self
                .servers
                .iter()
                .any(|server| server.name == report.server)
            {
                return Err(Error::InvalidInput(format!(
                    "{}: a tool list was reported for server '{}', which is not configured",
                    self.place, report.server
                )));
            }
            if by_server.insert(&report.server, &report.tools).is_some() {
                return Err(Error::InvalidInput(format!(
                    "{}: the tools of server '{}' were reported twice",
                    self.place, report.server
                )));
            }
            check_tool_names(&report.server, &report.tools)?;
        }
        if let Some(missing) = self
            .servers
            .iter()
            .find(|server| !by_server.contains_key(server.name.as_str()))
        {
            return Err(Error::InvalidInput(format!(
                "{}: the tools of server '{}' were not reported",
                self.place, missing.name
            )));
        }
        Ok(by_server)
    }
}

/// What a server may list: names of 1 to 128 characters without control characters, each
/// once, at most [`MAX_MCP_TOOLS_PER_SERVER`] tools.
fn check_tool_names(server: &str, tools: &[String]) -> Result<()> {
    let failed = |why: String| Error::ToolFailed(format!("MCP server '{server}' {why}"));
    if tools.len() > MAX_MCP_TOOLS_PER_SERVER {
        return Err(failed(format!(
            "lists {} tools; at most {MAX_MCP_TOOLS_PER_SERVER} are accepted from one server",
            tools.len()
        )));
    }
    let mut seen = std::collections::BTreeSet::new();
    for tool in tools {
        let length = tool.chars().count();
        if length == 0
            || length > MAX_MCP_SERVER_TOOL_NAME_LEN
            || tool.chars().any(char::is_control)
        {
            return Err(failed(format!(
                "lists a tool named '{}', which is not a valid MCP tool name (1 to {MAX_MCP_SERVER_TOOL_NAME_LEN} characters, no control characters)",
                tool.chars().take(200).collect::<String>().escape_debug()
            )));
        }
        if !seen.insert(tool.as_str()) {
            return Err(failed(format!("lists two tools named '{tool}'")));
        }
    }
    Ok(())
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".into();
    }
    let mut sorted: Vec<&str> = names.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.join(", ")
}
