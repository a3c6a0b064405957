//! A command that passed every check, ready to run, and what its run produced after the output
//! guardrails.

use std::sync::Arc;
use std::time::Duration;

use super::guardrails::OutputGuardrails;
use crate::error::Result;
use crate::exec::{self, AbortHandle, ExecRequest, RunningProcess};
use crate::network::{ConnectionRecord, NetworkCall};

/// How much more than the cap is captured when output guardrails exist, so that a secret
/// straddling the cap is still seen whole by them before the output is cut to the cap.
const GUARDRAIL_MARGIN: usize = 64 * 1024;

/// A checked command. Nothing has started yet; [`spawn`](Self::spawn) starts it.
#[derive(Debug)]
pub struct PreparedCommand {
    request: ExecRequest,
    /// The output guardrails: the tool's own and those of the workers that call its worker.
    output: Vec<Arc<OutputGuardrails>>,
    /// The cap the caller sees (the request may capture a margin more for the guardrails).
    cap: usize,
}

impl PreparedCommand {
    pub(crate) fn new(mut request: ExecRequest, output: Vec<Arc<OutputGuardrails>>) -> Self {
        let output: Vec<_> = output
            .into_iter()
            .filter(|guardrails| !guardrails.is_empty())
            .collect();
        let cap = request.max_output_bytes;
        if !output.is_empty() {
            request.max_output_bytes = cap.saturating_add(GUARDRAIL_MARGIN);
        }
        Self {
            request,
            output,
            cap,
        }
    }

    /// What will be run: the absolute program, argv, cwd, the exact environment and limits.
    pub fn request(&self) -> &ExecRequest {
        &self.request
    }

    /// Attaches the command to a run's tool call, for the egress proxy.
    pub fn set_network(&mut self, call: NetworkCall) {
        self.request.network = Some(call);
    }

    /// Starts the command; `abort` stops its whole process group, also before it has started.
    pub fn spawn(self, abort: AbortHandle) -> Result<RunningCommand> {
        Ok(RunningCommand {
            process: exec::spawn_with_abort(self.request, abort)?,
            output: self.output,
            cap: self.cap,
        })
    }

    /// Starts the command and waits for it. Needs a Tokio runtime with I/O and time enabled.
    pub async fn run(self) -> Result<CommandOutput> {
        self.spawn(AbortHandle::default())?.wait().await
    }
}

/// A started command.
#[derive(Debug)]
pub struct RunningCommand {
    process: RunningProcess,
    output: Vec<Arc<OutputGuardrails>>,
    cap: usize,
}

impl RunningCommand {
    /// The process id (also the process group id).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Waits for the end and applies the output guardrails: `OUTPUT_BLOCKED` when a block
    /// pattern matches, else the output with redactions. A non-zero exit, a timeout or an abort
    /// is data in the result.
    pub async fn wait(self) -> Result<CommandOutput> {
        let out = self.process.wait().await?;
        let mut truncated = out.truncated();
        let (mut stdout, mut stderr) = match self.output.as_slice() {
            [] => (out.stdout, out.stderr),
            [guardrails] => guardrails.apply(out.stdout, out.stderr)?,
            several => OutputGuardrails::apply_all(several, out.stdout, out.stderr)?,
        };
        for stream in [&mut stdout, &mut stderr] {
            if stream.len() > self.cap {
                stream.truncate(self.cap);
                truncated = true;
            }
        }
        Ok(CommandOutput {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            exit_code: out.exit_code,
            signal: out.signal,
            truncated,
            timed_out: out.timed_out,
            aborted: out.aborted,
            duration: out.duration,
            sandboxed: out.sandboxed,
            connections: out.connections,
            limit: out.limit,
        })
    }
}

/// What a command produced. Invalid UTF-8 is replaced with U+FFFD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    pub stdout: String,
    pub stderr: String,
    /// `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    pub timed_out: bool,
    pub aborted: bool,
    pub duration: Duration,
    /// Whether it ran with the sandbox's filesystem policy in force.
    pub sandboxed: bool,
    /// Its connections through the egress proxy (network by host).
    pub connections: Vec<ConnectionRecord>,
    /// The sandbox limits it ran into (also said at the end of `stderr`).
    pub limit: Option<String>,
}
