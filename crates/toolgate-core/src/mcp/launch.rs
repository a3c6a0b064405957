//! Starting a stdio server: the command line that runs it inside the toolset's kernel sandbox.
//! The SDK spawns it (in its own process group) and speaks the protocol over its pipes; the
//! launcher watches toolgate and ends the server's whole process tree if toolgate dies.
//!
//! Each stdio server has a **package cache** of its own that persists between runs
//! (`$XDG_CACHE_HOME/toolgate/mcp/<server>-<hash of its command line>`, else under
//! `~/.cache`): `npx`, `uvx` and pip keep what they downloaded there (`npm_config_cache`,
//! `UV_CACHE_DIR`, `UV_TOOL_DIR`, `UV_PYTHON_INSTALL_DIR`, `PIP_CACHE_DIR`), writable by that
//! server's processes only. A cache outlives a run, so it is a place where something could be
//! left for a later run: it is confined to the server that filled it: no tool process (`shell`,
//! `cli_execute`, executable tools) can write there, another server (or the same name with
//! another command line) gets another cache, so what one server leaves only ever reaches the
//! same server, which runs that code anyway.
//!
//! A network by host (`network: { allow: [...] }`) works for a stdio server as for a tool's
//! process: the server runs in a network namespace of its own whose only way out is the
//! egress proxy, its launcher's init hands the proxy's listener over a socket pair made for the
//! launch (the spawner passes its launcher end as descriptor
//! [`HANDOFF_FD`](crate::sandbox::HANDOFF_FD)).
//!
//! The server starts when its toolset loads, outside any run, so its listener's own context
//! asks nobody: `ask` refuses hosts at start-up, while it lists its tools and between calls.
//! During one of its tool calls ([`McpLaunch::begin_call`], from the call's start to its
//! result) the connections it opens belong to that call: the run's approval handler is asked
//! (naming the tool as the model sees it), `always` goes into the run's allowances, records go
//! to the run and the refusals into the call's result. With several of its calls in progress
//! at once the proxy cannot tell which one a connection is for: nobody is asked (fail closed),
//! and the refusal names every call in progress.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::guard_watch::GuardWatch;
use super::{McpToolset, McpTransport};
use crate::error::{Error, Result};
use crate::exec::{self, env, CallDir};
use crate::executables::cache::default_cache_dir;
use crate::network::{ConnectionRecord, NetworkCall, ToolCallScope};
use crate::sandbox_config::launch::OneShotProxy;

/// A stdio server ready to start: the file to execute, its arguments, its complete
/// environment and its working directory. Its private HOME/TMPDIR exists while this value
/// lives: drop it once the server has exited.
#[derive(Debug)]
pub struct McpLaunch {
    /// The launcher, or the program itself when the sandbox is off.
    pub file: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    /// The work directory.
    pub cwd: PathBuf,
    /// Whether the filesystem policy is in force.
    pub sandboxed: bool,
    /// The server's persistent package cache, when one could be made.
    pub package_cache: Option<PathBuf>,
    /// The server's egress proxy (network by host).
    proxy: OneShotProxy,
    /// The sandbox's guarded paths, checked against their states when the server was launched
    /// after each of its tool calls ([`McpLaunch::repair_guarded`]) and between them.
    guarded: Option<GuardWatch>,
    _call_dir: CallDir,
}

impl McpLaunch {
    /// After a tool call of the server (and when it closes): removes what it created at a
    /// missing protected or hidden path and puts back a replaced protected symlink (the view
    /// cannot mount over a path that does not exist); one message per repair, naming the path.
    /// Between calls a thread repairs the same paths every
    /// [`WATCH_INTERVAL`](super::guard_watch::WATCH_INTERVAL); its messages come with the next
    /// call's.
    pub fn repair_guarded(&self) -> Vec<String> {
        self.guarded
            .as_ref()
            .map(GuardWatch::repair)
            .unwrap_or_default()
    }
}

impl McpToolset {
    /// The command line of stdio server `server`. Its environment is the one child-environment
    /// policy (`PATH` with absolute entries, `LANG`, `LC_*`, `TZ`, `USER`, `LOGNAME`, the proxy
    /// variables), a private HOME/TMPDIR/XDG_* and the server's explicit `env` entries — never
    /// anything else of toolgate's environment. `BINARY_NOT_FOUND` when the program is not on
    /// that `PATH`; `INVALID_INPUT` for an unknown or HTTP server.
    pub fn launch(&self, server: &str) -> Result<McpLaunch> {
        let found = self
            .servers
            .iter()
            .find(|candidate| candidate.name == server)
            .ok_or_else(|| {
                Error::InvalidInput(format!("{}: there is no server '{server}'", self.place))
            })?;
        let McpTransport::Stdio {
            command,
            args,
            env: explicit,
        } = &found.transport
        else {
            return Err(Error::InvalidInput(format!(
                "{}: server '{server}' is an HTTP server; it is not started by toolgate",
                self.place
            )));
        };
        let mut child_env = env::child_environment(&[]);
        let call_dir = CallDir::create()?;
        call_dir.apply(&mut child_env);
        let package_cache = package_cache(server, self.work_dir(), command, args);
        let mut sandbox = self.sandbox.clone();
        if let Some(cache) = &package_cache {
            for (name, dir) in PACKAGE_CACHE_VARIABLES {
                env::set(&mut child_env, name, cache.join(dir).into_os_string());
            }
            if sandbox.sandbox.is_some() {
                let mut scope = sandbox.scope.clone();
                scope.write.push(cache.clone());
                sandbox = scope.build()?;
            }
        }
        let proxy = OneShotProxy::new(
            &sandbox,
            &NetworkCall::alone("", format!("mcp server {server}")),
            Some(OUTSIDE_CALLS),
        )?;
        proxy.apply(&mut child_env);
        for (name, value) in explicit {
            child_env.retain(|(known, _)| known != name.as_str());
            child_env.push((name.into(), value.into()));
        }
        let cwd = self.work_dir().to_path_buf();
        let program = exec::resolve_program(command.as_ref(), &cwd, &child_env)?;
        let command = sandbox.sandbox.as_ref().and_then(|prepared| {
            let (launcher, launcher_args) =
                prepared.command(&program, call_dir.root(), &child_env, &[])?;
            Some((launcher.to_path_buf(), launcher_args, prepared.confines()))
        });
        let (file, mut all_args, sandboxed) = match command {
            Some(found) => found,
            None => (program, Vec::new(), false),
        };
        all_args.extend(args.iter().map(OsString::from));
        let guarded = self.sandbox.sandbox.as_ref().map(|sandbox| {
            GuardWatch::start(std::sync::Arc::clone(sandbox), sandbox.snapshot_guarded())
        });
        Ok(McpLaunch {
            file,
            args: all_args,
            env: child_env,
            cwd,
            sandboxed,
            package_cache,
            proxy,
            guarded,
            _call_dir: call_dir,
        })
    }
}

impl McpLaunch {
    /// The server's connections through the egress proxy so far, with their decisions.
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.proxy
            .call
            .as_ref()
            .map(crate::network::CallHandle::records)
            .unwrap_or_default()
    }

    /// The descriptor (of this process) to give the launcher as its descriptor
    /// [`HANDOFF_FD`](crate::sandbox::HANDOFF_FD) (`None`: it needs none). Close it with
    /// [`close_handoff`](Self::close_handoff) once the server is spawned.
    pub fn handoff_fd(&self) -> Option<i32> {
        self.proxy.launcher_fd()
    }

    /// Lends the server's egress proxy tool call `call` (its id, the tool as the model sees
    /// it, the run's approval handler, allowances and sink) until the scope is finished or
    /// dropped: connections the server opens meanwhile belong to that call. `None` when the
    /// server has no network by host.
    pub fn begin_call(&self, call: &NetworkCall) -> Option<ToolCallScope> {
        self.proxy.begin_call(call)
    }

    /// The started server's process group (the pid of the process spawned with `file`, which
    /// leads its own group): a server that keeps making protected configuration is stopped
    /// through it.
    pub fn set_process_group(&self, group: i32) {
        if let Some(watch) = &self.guarded {
            watch.set_process_group(group);
        }
    }

    /// Closes this process's copy of the launcher's handoff socket (after spawning it).
    pub fn close_handoff(&mut self) {
        self.proxy.launcher_end = None;
    }
}

/// Why a connection of a server outside its tool calls has nobody to ask.
const OUTSIDE_CALLS: &str = "the MCP server opened it outside any of its tool calls (at start-up, while listing its tools or between calls), where no run's approval handler is there to ask";

/// The variables that send package managers' downloads to the server's cache, and the
/// directory of each inside it.
const PACKAGE_CACHE_VARIABLES: &[(&str, &str)] = &[
    ("npm_config_cache", "npm"),
    ("UV_CACHE_DIR", "uv"),
    ("UV_TOOL_DIR", "uv-tools"),
    ("UV_PYTHON_INSTALL_DIR", "uv-python"),
    ("PIP_CACHE_DIR", "pip"),
];

/// The persistent package cache of server `server` started in `work_dir` as `command args…`
/// (made, mode 0700, when missing): `None` when this user has no cache directory or it cannot
/// be made (the server then downloads into its private HOME, afresh each time). The work
/// directory is part of its name: the cache is writable by the server, so one shared by two
/// projects would carry files (and a poisoned install) from one project's agent to the other.
fn package_cache(server: &str, work_dir: &Path, command: &str, args: &[String]) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let mut hash = Sha256::new();
    let work_dir = std::fs::canonicalize(work_dir).unwrap_or_else(|_| work_dir.to_path_buf());
    hash.update(work_dir.as_os_str().as_bytes());
    hash.update([0]);
    for word in std::iter::once(command).chain(args.iter().map(String::as_str)) {
        hash.update(word.as_bytes());
        hash.update([0]);
    }
    let digest: String = hash.finalize()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let dir = default_cache_dir()?
        .join("mcp")
        .join(format!("{server}-{digest}"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .ok()?;
    // Made by an earlier run under a looser umask, or by hand: only this user.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).ok()?;
    std::fs::canonicalize(&dir).ok()
}
