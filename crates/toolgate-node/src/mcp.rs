//! The `mcp` toolset: its servers and how to start them, and the names and approvals of the
//! tools they list. The SDK speaks the protocol and reports the listings back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::mcp::{self, McpLaunch, McpToolsetOptions, McpTransport, ServerTools};
use toolgate_core::network::{NetworkCall, ToolCallScope};

use crate::approval::ResolvedApproval;
use crate::error::{guarded, infallible, sync, Settled};
use crate::js_value;
use crate::network::NetworkRun;
use crate::process::RefusedConnection;
use crate::sandbox::SandboxSummary;
use crate::sandbox::{close_handoff_of, handoff_fd_of};

/// One configured server.
#[napi(object, object_from_js = false)]
pub struct McpServerInfo {
    pub name: String,
    /// `stdio` (started by toolgate in the sandbox) or `http` (Streamable HTTP).
    pub transport: String,
    /// The HTTP endpoint (`null` for stdio).
    pub url: Option<String>,
    /// HTTP request headers, `${VAR}` expanded.
    pub headers: HashMap<String, String>,
}

/// The tools one server listed, as the SDK reports them.
#[napi(object, object_to_js = false)]
pub struct McpServerReport {
    pub server: String,
    pub tools: Vec<String>,
}

/// What the MCP servers of one worker of a plan listed.
#[napi(object, object_to_js = false)]
pub struct McpWorkerReport {
    /// Index of the worker in the plan.
    pub worker: u32,
    pub servers: Vec<McpServerReport>,
}

/// A tool the model is offered: its server, its name there, and the name the model sees.
#[napi(object, object_from_js = false)]
pub struct McpSelectedTool {
    pub server: String,
    pub tool: String,
    pub name: String,
}

/// A selected tool with its approval (a toolset built on its own).
#[napi(object, object_from_js = false)]
pub struct McpDecidedTool {
    pub server: String,
    pub tool: String,
    pub approval: ResolvedApproval,
}

/// The limits of the toolset.
#[napi(object, object_from_js = false)]
pub struct McpLimits {
    /// Longest message a stdio server may send, in bytes.
    pub max_message_bytes: u32,
    /// Largest tool input, serialized as JSON, in bytes.
    pub max_input_bytes: u32,
    /// Most tools one server may list.
    pub max_tools_per_server: u32,
}

/// The limits of every `mcp` toolset.
#[napi]
pub fn mcp_limits(env: Env) -> napi::Result<McpLimits> {
    let clamp = |value: usize| u32::try_from(value).unwrap_or(u32::MAX);
    infallible(&env, "mcpLimits", || McpLimits {
        max_message_bytes: clamp(toolgate_core::limits::MAX_MCP_MESSAGE_BYTES),
        max_input_bytes: clamp(toolgate_core::limits::MAX_MCP_INPUT_BYTES),
        max_tools_per_server: clamp(toolgate_core::limits::MAX_MCP_TOOLS_PER_SERVER),
    })
}

pub(crate) fn reports(servers: Vec<McpServerReport>) -> Vec<ServerTools> {
    servers
        .into_iter()
        .map(|report| ServerTools {
            server: report.server,
            tools: report.tools,
        })
        .collect()
}

/// An `mcp` toolset with every setting decided (from a worker plan or `mcpToolset` options).
#[napi]
pub struct McpToolsetPlan {
    inner: Arc<mcp::McpToolset>,
}

impl McpToolsetPlan {
    /// Wraps a toolset a worker plan built (the plan reports its sandbox warning).
    pub fn shared(inner: Arc<mcp::McpToolset>) -> Self {
        Self { inner }
    }
}

fn millis(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[napi]
impl McpToolsetPlan {
    /// Builds the toolset of `mcpToolset(options)`: servers checked, `${VAR}` expanded, the
    /// sandbox prepared. Throws `CONFIG_INVALID` or `SANDBOX_UNAVAILABLE`.
    #[napi(constructor)]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> napi::Result<Self> {
        sync(&env, "mcpToolset", || {
            let options: McpToolsetOptions = js_value::config(&env, options)?;
            Ok(Self {
                inner: Arc::new(mcp::McpToolset::from_options(options)?),
            })
        })
    }

    /// The servers, in name order.
    #[napi]
    pub fn servers(&self, env: Env) -> napi::Result<Vec<McpServerInfo>> {
        infallible(&env, "McpToolsetPlan.servers", || {
            self.inner
                .servers()
                .iter()
                .map(|server| match &server.transport {
                    McpTransport::Stdio { .. } => McpServerInfo {
                        name: server.name.clone(),
                        transport: "stdio".into(),
                        url: None,
                        headers: HashMap::new(),
                    },
                    McpTransport::Http { url, headers } => McpServerInfo {
                        name: server.name.clone(),
                        transport: "http".into(),
                        url: Some(url.clone()),
                        headers: headers.iter().cloned().collect(),
                    },
                })
                .collect()
        })
    }

    /// Milliseconds a tool call may take.
    #[napi(getter)]
    pub fn timeout_ms(&self, env: Env) -> napi::Result<f64> {
        infallible(&env, "McpToolsetPlan.timeoutMs", || {
            millis(self.inner.timeout)
        })
    }

    /// Milliseconds a server may take to start and list its tools.
    #[napi(getter)]
    pub fn startup_timeout_ms(&self, env: Env) -> napi::Result<f64> {
        infallible(&env, "McpToolsetPlan.startupTimeoutMs", || {
            millis(self.inner.startup_timeout)
        })
    }

    /// Where the toolset was configured (for messages).
    #[napi(getter)]
    pub fn place(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "McpToolsetPlan.place", || {
            self.inner.place().to_string()
        })
    }

    /// The kernel sandbox of the stdio servers.
    #[napi(getter)]
    pub fn sandbox(&self, env: Env) -> napi::Result<SandboxSummary> {
        infallible(&env, "McpToolsetPlan.sandbox", || {
            SandboxSummary::from(&self.inner.sandbox().scope)
        })
    }

    /// The one best-effort sandbox warning of the process, when preparing this toolset's
    /// sandbox was the first to have one.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "McpToolsetPlan.sandboxWarning", || {
            self.inner.sandbox().warning.clone()
        })
    }

    /// The command line of stdio server `server`, inside the sandbox. Throws
    /// `BINARY_NOT_FOUND` when the program is not on the child's `PATH`.
    #[napi]
    pub fn launch(&self, env: Env, server: String) -> napi::Result<McpServerLaunch> {
        sync(&env, "McpToolsetPlan.launch", || {
            McpServerLaunch::new(self.inner.launch(&server)?)
        })
    }

    /// The tools the model is offered, given what each server listed (whitelist, names,
    /// collisions). Throws `CONFIG_INVALID` or `TOOL_FAILED` naming the server.
    #[napi]
    pub fn select(
        &self,
        env: Env,
        servers: Vec<McpServerReport>,
    ) -> napi::Result<Vec<McpSelectedTool>> {
        sync(&env, "McpToolsetPlan.select", || {
            Ok(self
                .inner
                .select(&reports(servers))?
                .into_iter()
                .map(|tool| McpSelectedTool {
                    server: tool.server,
                    tool: tool.tool,
                    name: tool.name,
                })
                .collect())
        })
    }

    /// [`select`](McpToolsetPlan::select) with each tool's approval, for a toolset built on its
    /// own (no worker floors).
    #[napi]
    pub fn decide(
        &self,
        env: Env,
        servers: Vec<McpServerReport>,
    ) -> napi::Result<Vec<McpDecidedTool>> {
        sync(&env, "McpToolsetPlan.decide", || {
            Ok(self
                .inner
                .decide(&reports(servers))?
                .into_iter()
                .map(|(tool, resolved)| McpDecidedTool {
                    server: tool.server,
                    tool: tool.tool,
                    approval: ResolvedApproval::new(tool.name, resolved),
                })
                .collect())
        })
    }
}

/// A stdio server ready to start: spawn `file` with `args`, `env` and `cwd` (in a process
/// group of its own), then call `finish()` once it has exited, which removes its private
/// HOME/TMPDIR.
#[napi]
pub struct McpServerLaunch {
    launch: Mutex<Option<McpLaunch>>,
    file: String,
    args: Vec<String>,
    env: HashMap<String, String>,
    cwd: String,
    sandboxed: bool,
    /// What the egress proxy refused, kept when the launch is finished.
    refused: Mutex<Vec<RefusedConnection>>,
}

impl McpServerLaunch {
    fn new(launch: McpLaunch) -> toolgate_core::Result<Self> {
        let text = |value: &std::ffi::OsStr, what: &str| {
            value.to_str().map(str::to_string).ok_or_else(|| {
                toolgate_core::Error::ConfigInvalid(format!(
                    "the MCP server's {what} '{}' is not valid UTF-8, which Node cannot pass on",
                    value.to_string_lossy()
                ))
            })
        };
        Ok(Self {
            file: text(launch.file.as_os_str(), "program path")?,
            args: launch
                .args
                .iter()
                .map(|arg| text(arg, "argument"))
                .collect::<toolgate_core::Result<_>>()?,
            env: launch
                .env
                .iter()
                .map(|(name, value)| Ok((text(name, "variable")?, text(value, "variable")?)))
                .collect::<toolgate_core::Result<_>>()?,
            cwd: text(launch.cwd.as_os_str(), "work directory")?,
            sandboxed: launch.sandboxed,
            launch: Mutex::new(Some(launch)),
            refused: Mutex::default(),
        })
    }
}

#[napi]
impl McpServerLaunch {
    /// The file to execute: the launcher, or the program when the sandbox is off.
    #[napi(getter)]
    pub fn file(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "McpServerLaunch.file", || self.file.clone())
    }

    /// Its arguments (not including `file` itself).
    #[napi(getter)]
    pub fn args(&self, env: Env) -> napi::Result<Vec<String>> {
        infallible(&env, "McpServerLaunch.args", || self.args.clone())
    }

    /// The complete environment of the server.
    #[napi(getter)]
    pub fn env(&self, env: Env) -> napi::Result<HashMap<String, String>> {
        infallible(&env, "McpServerLaunch.env", || self.env.clone())
    }

    /// The working directory (the work directory).
    #[napi(getter)]
    pub fn cwd(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "McpServerLaunch.cwd", || self.cwd.clone())
    }

    /// Whether the filesystem policy is in force.
    #[napi(getter)]
    pub fn sandboxed(&self, env: Env) -> napi::Result<bool> {
        infallible(&env, "McpServerLaunch.sandboxed", || self.sandboxed)
    }

    /// The descriptor to give the launcher as its fd 3 (`stdio: ['pipe', 'pipe', 'pipe',
    /// handoffFd]`): the socket its init hands the egress proxy's listener over (network by
    /// host); `null` when it needs none. Call `closeHandoff()` once the server is spawned.
    #[napi(getter)]
    pub fn handoff_fd(&self, env: Env) -> napi::Result<Option<i32>> {
        infallible(&env, "McpServerLaunch.handoffFd", || {
            handoff_fd_of(&self.launch, McpLaunch::handoff_fd)
        })
    }

    /// The spawned server's pid (it leads its own process group, `detached: true`): a server
    /// that keeps making protected configuration is stopped through it.
    #[napi]
    pub fn set_process_group(&self, env: Env, pid: i32) -> napi::Result<()> {
        infallible(&env, "McpServerLaunch.setProcessGroup", || {
            if let Some(launch) = self.launch.lock().ok().as_ref().and_then(|l| l.as_ref()) {
                launch.set_process_group(pid);
            }
        })
    }

    /// Closes this process's copy of the handoff socket (once the server is spawned, or could
    /// not be).
    #[napi]
    pub fn close_handoff(&self, env: Env) -> napi::Result<()> {
        infallible(&env, "McpServerLaunch.closeHandoff", || {
            close_handoff_of(&self.launch, McpLaunch::close_handoff)
        })
    }

    /// After each tool call of the server: removes what it created at a missing protected or
    /// hidden path (and puts back a replaced protected symlink); one message per repair, for
    /// the call's result. Empty when nothing was touched, or after `finish()`.
    #[napi]
    pub fn check_guarded(&self, env: Env) -> napi::Result<Vec<String>> {
        infallible(&env, "McpServerLaunch.checkGuarded", || {
            self.launch
                .lock()
                .ok()
                .and_then(|launch| launch.as_ref().map(McpLaunch::repair_guarded))
                .unwrap_or_default()
        })
    }

    /// Checks the guarded paths one last time and removes the private HOME/TMPDIR; call it
    /// once the server has exited. Returns the repairs' messages.
    #[napi]
    pub fn finish(&self, env: Env) -> napi::Result<Vec<String>> {
        infallible(&env, "McpServerLaunch.finish", || {
            let Some(launch) = self.launch.lock().ok().and_then(|mut launch| launch.take()) else {
                return Vec::new();
            };
            let refused = refused_of(&launch);
            if let Ok(mut kept) = self.refused.lock() {
                *kept = refused;
            }
            launch.repair_guarded()
        })
    }

    /// The destinations the egress proxy refused the server so far (network by host), once
    /// each: why a server that needed one failed.
    #[napi]
    pub fn refused_connections(&self, env: Env) -> napi::Result<Vec<RefusedConnection>> {
        infallible(&env, "McpServerLaunch.refusedConnections", || {
            match self.launch.lock().ok().as_deref().and_then(Option::as_ref) {
                Some(launch) => refused_of(launch),
                None => self
                    .refused
                    .lock()
                    .map(|kept| kept.clone())
                    .unwrap_or_default(),
            }
        })
    }

    /// Starts tool call `toolCallId` of the server, as tool `tool` (its name as the model sees
    /// it) of run `run`: until the returned scope's `end()`, connections the server opens
    /// through the egress proxy belong to that call (the run's approval handler is asked,
    /// `always` goes into the run, records go to the run, refusals come back from `end()`).
    #[napi]
    pub fn begin_call(
        &self,
        env: Env,
        run: &NetworkRun,
        tool_call_id: String,
        tool: String,
    ) -> napi::Result<McpCallScope> {
        infallible(&env, "McpServerLaunch.beginCall", || {
            self.scope(&run.call(tool_call_id, tool))
        })
    }

    /// [`begin_call`](Self::begin_call) for a tool called outside any run: nobody is asked
    /// (`ask` refuses), but the call's refusals still come back from `end()`.
    #[napi]
    pub fn begin_call_alone(
        &self,
        env: Env,
        tool_call_id: String,
        tool: String,
    ) -> napi::Result<McpCallScope> {
        infallible(&env, "McpServerLaunch.beginCallAlone", || {
            self.scope(&NetworkCall::alone(tool_call_id, tool))
        })
    }

    /// The server's persistent package cache (`npm_config_cache`, `UV_CACHE_DIR`, … point
    /// into it), or `null`.
    #[napi(getter)]
    pub fn package_cache(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "McpServerLaunch.packageCache", || {
            self.launch
                .lock()
                .ok()
                .as_deref()
                .and_then(Option::as_ref)
                .and_then(|launch| launch.package_cache.as_ref())
                .map(|dir| dir.display().to_string())
        })
    }
}

/// One tool call of a stdio server in progress (`McpServerLaunch.beginCall`): call `end()` once
/// its result is in.
#[napi]
pub struct McpCallScope {
    scope: Mutex<Option<ToolCallScope>>,
}

#[napi]
impl McpCallScope {
    /// Ends the call: later connections are no longer its. Resolves, once the connections it
    /// opened are recorded (at most a short grace), with the destinations refused to it, once
    /// each (for its result). A second `end()` resolves with nothing.
    #[napi(ts_return_type = "Promise<RefusedConnection[]>")]
    pub async fn end(&self) -> Settled<Vec<RefusedConnection>> {
        let scope = self.scope.lock().ok().and_then(|mut scope| scope.take());
        guarded("McpCallScope.end", async move {
            Ok(match scope {
                Some(scope) => toolgate_core::network::refused_connections(&scope.finish().await)
                    .into_iter()
                    .map(RefusedConnection::from)
                    .collect(),
                None => Vec::new(),
            })
        })
        .await
    }
}

impl McpServerLaunch {
    fn scope(&self, call: &NetworkCall) -> McpCallScope {
        let scope = self
            .launch
            .lock()
            .ok()
            .as_deref()
            .and_then(Option::as_ref)
            .and_then(|launch| launch.begin_call(call));
        McpCallScope {
            scope: Mutex::new(scope),
        }
    }
}

fn refused_of(launch: &McpLaunch) -> Vec<RefusedConnection> {
    toolgate_core::network::refused_connections(&launch.connections())
        .into_iter()
        .map(RefusedConnection::from)
        .collect()
}
