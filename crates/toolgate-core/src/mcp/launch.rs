//! Starting a stdio server: the command line that runs it inside the toolset's kernel sandbox.
//! The SDK spawns it (in its own process group) and speaks the protocol over its pipes; the
//! launcher watches toolgate and ends the server's whole process tree if toolgate dies.

use std::ffi::OsString;
use std::path::PathBuf;

use super::{McpToolset, McpTransport};
use crate::error::{Error, Result};
use crate::exec::{self, env, CallDir};

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
    /// The sandbox and its guarded paths' states when the server was launched: a long-lived
    /// server is checked after each of its tool calls ([`McpLaunch::repair_guarded`]).
    guarded: Option<(
        std::sync::Arc<crate::sandbox::Sandbox>,
        crate::sandbox::GuardSnapshot,
    )>,
    _call_dir: CallDir,
}

impl McpLaunch {
    /// After a tool call of the server (and when it closes): removes what it created at a
    /// missing protected or hidden path and puts back a replaced protected symlink (the view
    /// cannot mount over a path that does not exist); one message per repair, naming the path.
    pub fn repair_guarded(&self) -> Vec<String> {
        match &self.guarded {
            Some((sandbox, before)) => sandbox.repair_guarded(before),
            None => Vec::new(),
        }
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
        for (name, value) in explicit {
            child_env.retain(|(known, _)| known != name.as_str());
            child_env.push((name.into(), value.into()));
        }
        let cwd = self.work_dir().to_path_buf();
        let program = exec::resolve_program(command.as_ref(), &cwd, &child_env)?;
        let command = self.sandbox.sandbox.as_ref().and_then(|prepared| {
            let (launcher, launcher_args) =
                prepared.command(&program, call_dir.root(), &child_env, &[])?;
            Some((launcher.to_path_buf(), launcher_args, prepared.confines()))
        });
        let (file, mut all_args, sandboxed) = match command {
            Some(found) => found,
            None => (program, Vec::new(), false),
        };
        all_args.extend(args.iter().map(OsString::from));
        let guarded = self
            .sandbox
            .sandbox
            .as_ref()
            .map(|sandbox| (std::sync::Arc::clone(sandbox), sandbox.snapshot_guarded()));
        Ok(McpLaunch {
            file,
            args: all_args,
            env: child_env,
            cwd,
            sandboxed,
            guarded,
            _call_dir: call_dir,
        })
    }
}
