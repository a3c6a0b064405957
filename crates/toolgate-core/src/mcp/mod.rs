//! The `mcp` toolset: tools of Model Context Protocol servers, named, gated and sandboxed here.
//!
//! The SDK speaks the protocol (the official TypeScript SDK); this module decides everything
//! else, once:
//!
//! - which servers a configuration describes ([`McpServerConfig`]: a stdio `command` or an
//!   HTTP `url`), checked strictly, with `${VAR}` in `env` and `headers` values expanded from
//!   this process's environment when the toolset is built ([`expand`]);
//! - how a stdio server is started ([`McpToolset::launch`]): inside the toolset's kernel
//!   sandbox, in the work directory, with the one child-environment policy, a private
//!   HOME/TMPDIR and the explicit `env` entries;
//! - which of the tools the servers list the model sees and under which names
//!   ([`McpToolset::select`]: the `tools` whitelist, `<server>_<tool>` within 64 characters,
//!   collisions refused);
//! - how the `approval` block, which names tools `server.tool` (or by their exposed name),
//!   applies ([`McpToolset::approval_for`]); the default of every MCP tool is `ask`.

mod config;
mod guard_watch;
mod launch;
mod naming;

#[cfg(test)]
mod tests;

use std::time::Duration;

pub use config::{expand, McpServerConfig, McpToolsetConfig, McpToolsetOptions};
pub use launch::McpLaunch;
pub use naming::{exposed_name, SelectedTool, ServerTools};

use crate::approval::{decide_toolset, ApprovalConfig, Candidate, Floors, Resolved, Toolset};
use crate::error::Result;
use crate::sandbox_config::{SandboxScope, ToolSandbox};

/// How the SDK reaches one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A process started by toolgate, spoken to over its stdin and stdout.
    Stdio {
        /// As written: a name on the child's `PATH`, or a path (relative to the work directory).
        command: String,
        args: Vec<String>,
        /// The explicit `env` entries, expanded.
        env: Vec<(String, String)>,
    },
    /// A server reached with the Streamable HTTP transport.
    Http {
        url: String,
        /// Extra request headers, expanded.
        headers: Vec<(String, String)>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    pub transport: McpTransport,
}

/// An `mcp` toolset with every setting decided: its servers, whitelist, approval, timeouts and
/// the prepared kernel sandbox of its stdio servers.
#[derive(Debug)]
pub struct McpToolset {
    servers: Vec<McpServer>,
    /// `(server, tool)` pairs of the `tools` whitelist, in the order given.
    whitelist: Option<Vec<(String, String)>>,
    approval: ApprovalConfig,
    sandbox: ToolSandbox,
    /// Call timeout.
    pub timeout: Duration,
    /// Start-up (initialize and list) timeout.
    pub startup_timeout: Duration,
    /// Where the toolset was configured, for messages (`/w/worker.yaml: toolsets.mcp`).
    place: String,
}

impl McpToolset {
    /// Builds a toolset from a worker file's `toolsets.mcp` block. `scope` is the toolset's
    /// sandbox (the worker's, narrowed by the block's own `sandbox`); `place` names the block
    /// in messages. Prepares the sandbox (`SANDBOX_UNAVAILABLE` under `enforce` where the
    /// kernel cannot confine processes); `CONFIG_INVALID` for anything malformed.
    pub fn from_config(
        config: &McpToolsetConfig,
        scope: &SandboxScope,
        place: &str,
    ) -> Result<Self> {
        let checked = config::check(config, place, &|name| std::env::var(name).ok())?;
        Ok(McpToolset {
            servers: checked.servers,
            whitelist: checked.whitelist,
            approval: config.approval.clone().unwrap_or_default(),
            sandbox: scope.build()?,
            timeout: checked.timeout,
            startup_timeout: checked.startup_timeout,
            place: place.to_string(),
        })
    }

    /// Builds a toolset from `mcpToolset(options)` (TypeScript): the sandbox option over the
    /// defaults, relative roots against `workDir` (default: the current directory).
    pub fn from_options(options: McpToolsetOptions) -> Result<Self> {
        let (config, work_dir, fields) = options.into_config()?;
        let scope = SandboxScope::new(&work_dir, false, &fields, &work_dir, "mcpToolset: sandbox")?;
        // A server's script named by path is its code: its processes must not change it.
        let mut guards = crate::sandbox_config::Guards::default();
        for server in config.servers.values() {
            let Some(command) = &server.command else {
                continue;
            };
            let env: Vec<(String, String)> = server
                .env
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            for script in crate::sandbox_config::protect::scripts_inside(
                &scope.work_dir,
                command,
                &server.args,
                &env,
            ) {
                guards.protect(&script, "a file an MCP server runs");
            }
        }
        Self::from_config(&config, &scope.with_guards(&guards), "mcpToolset")
    }

    /// The servers, in name order.
    pub fn servers(&self) -> &[McpServer] {
        &self.servers
    }

    /// The program of each stdio server, found as a start would find it (on the child
    /// environment's `PATH`, which a server's `env` cannot set, or relative to the work
    /// directory); servers whose program is not found are left out (starting them reports it).
    pub fn programs(&self) -> Vec<std::path::PathBuf> {
        let child_env = crate::exec::env::child_environment(&[]);
        self.servers
            .iter()
            .filter_map(|server| match &server.transport {
                McpTransport::Stdio { command, .. } => {
                    crate::exec::resolve_program(command.as_ref(), self.work_dir(), &child_env).ok()
                }
                McpTransport::Http { .. } => None,
            })
            .collect()
    }

    /// Replaces the sandbox its stdio servers run in (a worker plan prepares it again once it
    /// knows every protected path of its graph).
    pub fn set_sandbox(&mut self, sandbox: ToolSandbox) {
        self.sandbox = sandbox;
    }

    /// The kernel sandbox its stdio servers run in.
    pub fn sandbox(&self) -> &ToolSandbox {
        &self.sandbox
    }

    /// The work directory: the stdio servers' cwd and only writable place.
    pub fn work_dir(&self) -> &std::path::Path {
        &self.sandbox.scope.work_dir
    }

    /// Where the toolset was configured.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Decides the approval of the selected tools of a toolset built on its own (no worker
    /// floors): its `approval` block, else `ask`.
    pub fn decide(&self, listed: &[ServerTools]) -> Result<Vec<(SelectedTool, Resolved)>> {
        let selected = self.select(listed)?;
        let (approval, _) = self.approval_for(listed)?;
        let candidates: Vec<Candidate> = selected
            .iter()
            .map(|tool| Candidate::plain(tool.name.clone()))
            .collect();
        let resolved = decide_toolset(Toolset::Mcp, &approval, &candidates, Floors::default());
        Ok(selected.into_iter().zip(resolved).collect())
    }
}
