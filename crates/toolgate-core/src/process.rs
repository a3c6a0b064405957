//! One result and one killable job for every way toolgate runs a process: `exec`, a checked
//! `cli_execute` / `shell` command, and an executable tool run. The binding exposes a single
//! handle class over [`Job`], and the SDK a single helper that wires an `AbortSignal` to it.
//! `exec()`'s options ([`ExecOptions`]) are read here too.

use std::time::Duration;

use serde_json::Value;

use crate::command::{CommandOutput, PreparedCommand, RunningCommand};
use crate::error::{Error, Result};
use crate::exec::{self, AbortHandle, ExecOutput, ExecRequest, RunningProcess};
use crate::executables::{PreparedRun, StartedRun, ToolOutput};
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
    /// Started by [`Job::start`] (or failed to start: reported by [`Job::run`]).
    Started(Result<Running>),
}

/// A job's process once it has started.
#[derive(Debug)]
enum Running {
    Exec(RunningProcess),
    Command(RunningCommand),
    Tool(StartedRun),
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
    /// the run (without it the call has nobody to ask). `INVALID_INPUT` once it has started.
    pub fn set_network(&mut self, call: NetworkCall) -> Result<()> {
        match &mut self.work {
            Work::Exec(request) => request.network = Some(call),
            Work::Command(command) => command.set_network(call),
            Work::Tool(run) => run.set_network(call),
            Work::Started(_) => {
                return Err(Error::InvalidInput(
                    "the process has already started: attach its network before it starts".into(),
                ))
            }
        }
        Ok(())
    }

    /// Starts the process on the calling thread, which must be inside the Tokio runtime that
    /// [`run`](Self::run) is then awaited on. Whoever waits next finds the program already
    /// running: the hand-over to the waiting task overlaps its start instead of preceding it.
    /// A failure to start is kept for `run` to return. Starting twice starts once.
    pub fn start(&mut self) {
        // The placeholder is seen only if starting panicked (caught at the binding's edge).
        let work = std::mem::replace(
            &mut self.work,
            Work::Started(Err(Error::Internal(
                "a process start was interrupted".into(),
            ))),
        );
        self.work = Work::Started(launch(work, &self.abort));
    }

    /// Starts the process (unless [`start`](Self::start) did) and waits for it. Errors:
    /// `BINARY_NOT_FOUND` / `SPAWN_FAILED` when it cannot start; `OUTPUT_BLOCKED` for a
    /// `cli_execute` output guardrail; for tools `TIMEOUT` and `TOOL_FAILED`.
    pub async fn run(self) -> Result<ProcessResult> {
        match launch(self.work, &self.abort)? {
            Running::Exec(process) => process.wait().await.map(ProcessResult::from),
            Running::Command(command) => command.wait().await.map(ProcessResult::from),
            Running::Tool(run) => run.wait().await.map(ProcessResult::from),
        }
    }
}

/// Starts `work`, or gives back how its earlier start went.
fn launch(work: Work, abort: &AbortHandle) -> Result<Running> {
    match work {
        Work::Exec(request) => exec::spawn_with_abort(request, abort.clone()).map(Running::Exec),
        Work::Command(command) => command.spawn(abort.clone()).map(Running::Command),
        Work::Tool(run) => run.start().map(Running::Tool),
        Work::Started(started) => started,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::error::ErrorCode;

    fn job(program: &str, args: &[&str], cwd: &std::path::Path) -> Job {
        Job::exec(
            ExecRequest::new(program, cwd)
                .args(args.iter().copied())
                .env([("PATH", "/usr/bin:/bin")]),
        )
    }

    #[tokio::test]
    async fn start_runs_the_program_before_anyone_waits() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        let mut job = job("touch", &[marker.to_str().unwrap()], dir.path());
        job.start();
        // Nothing awaits the job yet: the program runs on its own.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !marker.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(marker.exists(), "start() did not start the program");
        job.start(); // a second start starts nothing more
        let result = job.run().await.unwrap();
        assert_eq!(result.exit_code, Some(0));
    }

    #[tokio::test]
    async fn a_started_job_reports_its_output_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut job = job("sh", &["-c", "echo started >> runs; cat runs"], dir.path());
        job.start();
        job.start();
        let result = job.run().await.unwrap();
        assert_eq!(result.stdout, "started\n");
    }

    #[tokio::test]
    async fn a_failure_to_start_is_what_run_returns() {
        let dir = tempfile::tempdir().unwrap();
        let mut job = job("no-such-program-toolgate-test", &[], dir.path());
        job.start();
        let err = job.run().await.unwrap_err();
        assert_eq!(err.error_code(), ErrorCode::BinaryNotFound, "{err}");
    }

    #[tokio::test]
    async fn the_network_is_attached_before_the_start_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut job = job("true", &[], dir.path());
        job.set_network(NetworkCall::alone("", "true")).unwrap();
        job.start();
        let err = job.set_network(NetworkCall::alone("", "true")).unwrap_err();
        assert_eq!(err.error_code(), ErrorCode::InvalidInput, "{err}");
        assert_eq!(job.run().await.unwrap().exit_code, Some(0));
    }
}
