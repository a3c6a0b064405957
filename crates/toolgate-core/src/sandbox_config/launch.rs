//! `toolgate sandbox -- program args…`: the command line that runs any program under a sandbox.
//! The CLI spawns it (nothing is forked from Node itself: the launcher does the kernel work in
//! its own process) and passes its exit code through. Without `tty` the program has a session
//! of its own and no terminal (the CLI relays its streams through pipes); with `tty` it is
//! given the terminal: it keeps the terminal's session and `/dev/tty`.
//!
//! A network by host works here as for every tool call: the program runs in a network
//! namespace of its own whose only way out is the egress proxy. The launcher's init hands the
//! proxy's listener to toolgate over a socket pair made for the launch ([`OneShotProxy`]),
//! whose launcher end the spawner passes as the launcher's descriptor
//! [`HANDOFF_FD`](crate::sandbox::HANDOFF_FD).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{SandboxOption, SandboxScope, ToolSandbox};
use crate::error::Result;
use crate::exec::{self, env, CallDir};
use crate::network::{
    CallHandle, ConnectionRecord, HostPolicy, NetworkCall, NetworkPolicy, Proxy, ToolCallScope,
};
use crate::options::WorkDir;
use crate::sandbox::NetworkMode;

/// The egress proxy of a program the one-shot launcher starts (`toolgate sandbox`, an MCP
/// stdio server) under a network-by-host sandbox.
#[derive(Debug, Default)]
pub(crate) struct OneShotProxy {
    /// The program's connections, served and recorded.
    pub call: Option<CallHandle>,
    /// The launcher's end of the handoff socket pair: the spawner passes it as the
    /// launcher's descriptor `HANDOFF_FD` (close-on-exec here, so no other child inherits it).
    pub launcher_end: Option<OwnedFd>,
}

impl OneShotProxy {
    /// For `sandbox`, the program's place `call` (who is asked about hosts; `nobody_to_ask`
    /// says why nobody is, when that is the case): a handoff where the program gets a network
    /// namespace of its own, a listener on this host's loopback where it cannot
    /// (`best-effort`), nothing without a network by host. A long-lived program lends its
    /// tool calls to the listener with [`begin_call`](Self::begin_call).
    pub(crate) fn new(
        sandbox: &ToolSandbox,
        call: &NetworkCall,
        nobody_to_ask: Option<&str>,
    ) -> Result<Self> {
        let Some(prepared) = &sandbox.sandbox else {
            return Ok(Self::default());
        };
        if prepared.policy().network != NetworkMode::Proxy {
            return Ok(Self::default());
        }
        let policy = prepared
            .host_policy()
            .cloned()
            .unwrap_or_else(|| NetworkPolicy::new(HostPolicy::default()));
        let mut context = call.context(policy);
        context.nobody_to_ask = nobody_to_ask.map(str::to_string);
        if prepared.proxy_on_host() {
            let call = Proxy::shared()?.listen(context)?;
            return Ok(Self {
                call: Some(call),
                launcher_end: None,
            });
        }
        if !prepared.proxy_in_namespace() {
            return Ok(Self::default());
        }
        Self::handoff(context)
    }

    /// Lends the program's listener tool call `call` until the scope ends (see
    /// [`CallHandle::begin_call`]); `None` without a network by host.
    pub(crate) fn begin_call(&self, call: &NetworkCall) -> Option<ToolCallScope> {
        self.call.as_ref().map(|handle| handle.begin_call(call))
    }

    /// A socket pair for the launcher's handoff and the proxy waiting on our end.
    #[cfg(target_os = "linux")]
    fn handoff(call: crate::network::CallContext) -> Result<Self> {
        let (ours, theirs) = crate::sandbox::handoff_socket_pair()?;
        let call = Proxy::shared()?.serve_handoff(ours, crate::sandbox::PROXY_PORT, call)?;
        Ok(Self {
            call: Some(call),
            launcher_end: Some(theirs),
        })
    }

    /// No kernel sandbox here, so no call runs in a network namespace of its own.
    #[cfg(not(target_os = "linux"))]
    fn handoff(_call: crate::network::CallContext) -> Result<Self> {
        Ok(Self::default())
    }

    /// Sets the proxy variables of `env` to the program's proxy address.
    pub(crate) fn apply(&self, env: &mut Vec<(OsString, OsString)>) {
        if let Some(call) = &self.call {
            env::set_proxy(env, call.local_addr());
        }
    }

    /// The launcher's end of the handoff socket, as a descriptor of this process.
    pub(crate) fn launcher_fd(&self) -> Option<i32> {
        self.launcher_end.as_ref().map(AsRawFd::as_raw_fd)
    }
}

/// Variables the terminal's programs need besides the one child-environment policy.
const TERMINAL_VARIABLES: &[&str] = &["TERM", "COLORTERM", "COLUMNS", "LINES"];

/// `toolgate sandbox` options, as the CLI passes them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LaunchOptions {
    /// The work directory: cwd of the program, writable (default: the current directory).
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// The sandbox (default `{ mode: 'enforce', network: false }`); relative roots resolve
    /// against the work directory.
    #[serde(default)]
    pub sandbox: Option<SandboxOption>,
    /// Give the program the terminal (`--tty`): it may read what is typed there, change the
    /// terminal's modes and use `/dev/tty`; injecting input (`TIOCSTI`) stays refused.
    #[serde(default)]
    pub tty: bool,
}

/// A program ready to start under a sandbox: the file to execute, its arguments, environment
/// and working directory. Its private HOME/TMPDIR exists while this value lives.
#[derive(Debug)]
pub struct Launch {
    /// The launcher (or the program itself when the sandbox is off or unavailable under
    /// `best-effort`).
    pub file: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    /// Whether the filesystem policy is in force.
    pub sandboxed: bool,
    /// The sandbox it runs under.
    pub sandbox: ToolSandbox,
    /// The program's egress proxy (network by host).
    proxy: OneShotProxy,
    /// Removed when the launch is dropped (after the program ended).
    _call_dir: CallDir,
}

impl LaunchOptions {
    /// The sandbox these options describe (relative roots against the work directory).
    pub fn scope(&self) -> Result<SandboxScope> {
        let work_dir = WorkDir::resolve(self.work_dir.clone())?;
        let fields = self
            .sandbox
            .clone()
            .map(SandboxOption::into_fields)
            .unwrap_or_default();
        SandboxScope::new(&work_dir, false, &fields, &work_dir, "sandbox")
    }
}

impl Launch {
    /// Prepares `program` (a name on the child's `PATH`, or a path) with `args` under the
    /// sandbox of `options`. `CONFIG_INVALID` for unusable roots or work directory,
    /// `SANDBOX_UNAVAILABLE` where `enforce` cannot be met, `BINARY_NOT_FOUND` for a missing
    /// program.
    pub fn prepare(options: LaunchOptions, program: &str, args: &[String]) -> Result<Self> {
        let scope = options.scope()?;
        let sandbox = scope.build()?;
        let passthrough: Vec<String> = TERMINAL_VARIABLES.iter().map(|s| s.to_string()).collect();
        let mut child_env = env::child_environment(&passthrough);
        let call_dir = CallDir::create()?;
        call_dir.apply(&mut child_env);
        // A terminal program has no run: nobody is asked about hosts, `ask` refuses them.
        let proxy = OneShotProxy::new(&sandbox, &NetworkCall::alone("sandbox", program), None)?;
        proxy.apply(&mut child_env);
        let cwd = scope.work_dir.clone();
        let resolved = exec::resolve_program(program.as_ref(), &cwd, &child_env)?;
        let command = sandbox.sandbox.as_ref().and_then(|prepared| {
            let (launcher, launcher_args) =
                prepared.command_with(&resolved, call_dir.root(), &child_env, &[], options.tty)?;
            Some((launcher.to_path_buf(), launcher_args, prepared.confines()))
        });
        let (file, mut all_args, sandboxed) = match command {
            Some(found) => found,
            None => (resolved, Vec::new(), false),
        };
        all_args.extend(args.iter().map(OsString::from));
        Ok(Launch {
            file,
            args: all_args,
            env: child_env,
            cwd,
            sandboxed,
            sandbox,
            proxy,
            _call_dir: call_dir,
        })
    }

    /// Ends the launch once the program has ended: its connections through the egress proxy
    /// are closed and returned with their decisions, and the private directory is removed.
    /// Blocks until the proxy has let go of them (call it off any async runtime's threads).
    pub fn finish(mut self) -> Vec<ConnectionRecord> {
        self.proxy.launcher_end = None;
        self.proxy
            .call
            .take()
            .map(CallHandle::finish_blocking)
            .unwrap_or_default()
    }

    /// The descriptor (of this process) to give the launcher as its descriptor
    /// [`HANDOFF_FD`](crate::sandbox::HANDOFF_FD) (`None`: it needs none). Close it with
    /// [`close_handoff`](Self::close_handoff) once the launcher is spawned.
    pub fn handoff_fd(&self) -> Option<i32> {
        self.proxy.launcher_fd()
    }

    /// Closes this process's copy of the launcher's handoff socket (after spawning it): if the
    /// launcher then ends before handing over its listener, the proxy sees the end at once.
    pub fn close_handoff(&mut self) {
        self.proxy.launcher_end = None;
    }

    /// The private directory's `HOME`, for messages and tests.
    pub fn home(&self) -> Option<&Path> {
        self.env
            .iter()
            .find(|(name, _)| name == "HOME")
            .map(|(_, value)| Path::new(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_runs_the_program_through_the_launcher_and_cleans_up() {
        let work = tempfile::tempdir().unwrap();
        let options = LaunchOptions {
            work_dir: Some(work.path().to_path_buf()),
            sandbox: Some(SandboxOption::Mode(
                super::super::SandboxModeName::BestEffort,
            )),
            tty: false,
        };
        let launch = Launch::prepare(options, "true", &["x".into()]).unwrap();
        assert_eq!(launch.args.last().unwrap(), "x");
        let home = launch.home().unwrap().to_path_buf();
        assert!(home.is_dir());
        assert!(!home.starts_with(work.path()));
        if launch.sandboxed {
            assert!(launch.args.iter().any(|arg| arg == "--"));
            assert!(!launch.args.iter().any(|arg| arg == "--tty"));
        }
        drop(launch);
        assert!(!home.exists(), "the private directory is removed");

        let off = LaunchOptions {
            work_dir: Some(work.path().to_path_buf()),
            sandbox: Some(SandboxOption::Off),
            tty: false,
        };
        let launch = Launch::prepare(off, "true", &[]).unwrap();
        assert!(!launch.sandboxed);
        assert!(launch.file.ends_with("true"));
        let err = Launch::prepare(
            LaunchOptions {
                work_dir: Some(work.path().to_path_buf()),
                sandbox: Some(SandboxOption::Off),
                tty: false,
            },
            "no-such-program-toolgate",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.code(), "BINARY_NOT_FOUND");
    }
}
