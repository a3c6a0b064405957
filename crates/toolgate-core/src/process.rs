//! One result and one killable job for every way toolgate runs a process: `exec`, a checked
//! `cli_execute` / `shell` command, and an executable tool run. The binding exposes a single
//! handle class over [`Job`], and the SDK a single helper that wires an `AbortSignal` to it.
//! `exec()`'s options ([`ExecOptions`]) are read here too.

use std::time::Duration;

use serde_json::Value;

use crate::command::{CommandOutput, PreparedCommand};
use crate::error::Result;
use crate::exec::{self, AbortHandle, ExecOutput, ExecRequest};
use crate::executables::{PreparedRun, ToolOutput};
use crate::network::{refused_connections, ConnectionRecord, NetworkCall, RefusedConnection};

mod options;

pub use options::{ExecOptions, Stdin};

/// What a process produced. A non-zero exit, a timeout or an abort is data, not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessResult {
    /// `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    pub timed_out: bool,
    pub aborted: bool,
    pub duration: Duration,
    /// An executable tool's result: its stdout parsed as JSON when it is JSON, else the text.
    /// Set only for tool runs, whose stdout is consumed by it.
    pub value: Option<Value>,
    /// Whether the process ran with the kernel sandbox's filesystem policy in force.
    pub sandboxed: bool,
    /// The sandbox limits the process ran into (`processes`, `memoryMb`, …), comma-separated.
    pub limit: Option<String>,
    /// Its connections through the egress proxy (network by host), each with its decision.
    pub connections: Vec<ConnectionRecord>,
}

impl ProcessResult {
    /// The refused destinations, once each: what the call's result tells the model.
    pub fn refused_connections(&self) -> Vec<RefusedConnection> {
        refused_connections(&self.connections)
    }
}

impl From<ExecOutput> for ProcessResult {
    fn from(out: ExecOutput) -> Self {
        Self {
            truncated: out.truncated(),
            exit_code: out.exit_code,
            signal: out.signal,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            timed_out: out.timed_out,
            aborted: out.aborted,
            duration: out.duration,
            value: None,
            sandboxed: out.sandboxed,
            connections: out.connections,
            limit: out.limit,
        }
    }
}

impl From<CommandOutput> for ProcessResult {
    fn from(out: CommandOutput) -> Self {
        Self {
            exit_code: out.exit_code,
            signal: out.signal,
            stdout: out.stdout,
            stderr: out.stderr,
            truncated: out.truncated,
            timed_out: out.timed_out,
            aborted: out.aborted,
            duration: out.duration,
            value: None,
            sandboxed: out.sandboxed,
            connections: out.connections,
            limit: out.limit,
        }
    }
}

impl From<ToolOutput> for ProcessResult {
    /// A tool run that succeeded (a failing tool is an error, see [`crate::executables::run`]).
    fn from(out: ToolOutput) -> Self {
        Self {
            exit_code: Some(0),
            signal: None,
            stdout: String::new(),
            stderr: out.stderr,
            truncated: out.truncated,
            timed_out: false,
            aborted: false,
            duration: out.duration,
            value: Some(out.result),
            sandboxed: out.sandboxed,
            connections: out.connections,
            limit: out.limit,
        }
    }
}

/// Something checked and ready to run.
#[derive(Debug)]
enum Work {
    Exec(ExecRequest),
    Command(PreparedCommand),
    Tool(PreparedRun),
}

/// A process that has been checked and not started yet. [`abort_handle`](Self::abort_handle)
/// stops it — also before it starts, in which case it never does.
#[derive(Debug)]
pub struct Job {
    work: Work,
    abort: AbortHandle,
}

impl Job {
    /// A process for `exec`.
    pub fn exec(request: ExecRequest) -> Self {
        Self {
            work: Work::Exec(request),
            abort: AbortHandle::default(),
        }
    }

    /// A checked `cli_execute` or `shell` command.
    pub fn command(command: PreparedCommand) -> Self {
        Self {
            work: Work::Command(command),
            abort: AbortHandle::default(),
        }
    }

    /// A checked executable tool run.
    pub fn tool(run: PreparedRun) -> Self {
        Self {
            abort: run.abort_handle(),
            work: Work::Tool(run),
        }
    }

    /// A handle that kills the whole process group.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// Attaches the process to a run's tool call: the egress proxy of a network-by-host
    /// sandbox asks the run's handler, applies the run's `always` answers and records into
    /// the run (without it the call has nobody to ask).
    pub fn set_network(&mut self, call: NetworkCall) {
        match &mut self.work {
            Work::Exec(request) => request.network = Some(call),
            Work::Command(command) => command.set_network(call),
            Work::Tool(run) => run.set_network(call),
        }
    }

    /// Starts the process and waits for it. Errors: `BINARY_NOT_FOUND` / `SPAWN_FAILED` when it
    /// cannot start; `OUTPUT_BLOCKED` for a `cli_execute` output guardrail; for tools `TIMEOUT`
    /// and `TOOL_FAILED`.
    pub async fn run(self) -> Result<ProcessResult> {
        match self.work {
            Work::Exec(request) => exec::spawn_with_abort(request, self.abort)?
                .wait()
                .await
                .map(ProcessResult::from),
            Work::Command(command) => command
                .spawn(self.abort)?
                .wait()
                .await
                .map(ProcessResult::from),
            Work::Tool(run) => run.run().await.map(ProcessResult::from),
        }
    }
}
