//! One killable handle and one result for every process toolgate runs: `exec`, `cli_execute`,
//! `shell` and executable tools.

use std::sync::Mutex;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::exec::AbortHandle;
use toolgate_core::process::{self, ExecOptions, Job};

use crate::error::{guarded, infallible, sync, Settled};
use crate::js_value;
use crate::network::NetworkRun;

/// What a process produced. Exit codes, signals, timeouts and aborts are data, not errors.
#[napi(object, object_from_js = false)]
pub struct ProcessResult {
    /// `null` when a signal ended the process.
    pub exit_code: Option<i32>,
    /// The terminating signal (`SIGKILL`), or `null`.
    pub signal: Option<String>,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    pub timed_out: bool,
    pub aborted: bool,
    pub duration_ms: f64,
    /// An executable tool's result (its stdout parsed as JSON when it is JSON, else the text);
    /// absent for other processes.
    pub value: Option<serde_json::Value>,
    /// Whether it ran with the kernel sandbox's filesystem policy in force.
    pub sandboxed: bool,
    /// The destinations the egress proxy refused (network by host), once each: what the
    /// call's result tells the model. Empty otherwise.
    pub refused_connections: Vec<RefusedConnection>,
    /// The sandbox limits it ran into (`processes`, `memoryMb`, `tmpMb`, `cpuSeconds`,
    /// `fileSizeMb`, comma-separated), or `null`.
    pub limit: Option<String>,
}

/// A destination the egress proxy refused.
#[napi(object, object_from_js = false)]
#[derive(Clone)]
pub struct RefusedConnection {
    pub host: String,
    pub port: u32,
    /// The refusal the program was sent: host, port, reason and how to allow it.
    pub reason: String,
    /// `rule`, `policy`, `address`, `user`, `no-handler`, `deferred`, `request` or `limit`.
    pub decided_by: String,
}

impl From<toolgate_core::network::RefusedConnection> for RefusedConnection {
    fn from(refused: toolgate_core::network::RefusedConnection) -> Self {
        Self {
            host: refused.host,
            port: u32::from(refused.port),
            reason: refused.reason,
            decided_by: serde_json::to_value(refused.decided_by)
                .ok()
                .and_then(|value| value.as_str().map(String::from))
                .unwrap_or_default(),
        }
    }
}

impl From<process::ProcessResult> for ProcessResult {
    fn from(out: process::ProcessResult) -> Self {
        let refused_connections = out
            .refused_connections()
            .into_iter()
            .map(RefusedConnection::from)
            .collect();
        Self {
            refused_connections,
            exit_code: out.exit_code,
            signal: out.signal,
            stdout: out.stdout,
            stderr: out.stderr,
            truncated: out.truncated,
            timed_out: out.timed_out,
            aborted: out.aborted,
            duration_ms: out.duration.as_secs_f64() * 1000.0,
            value: out.value,
            sandboxed: out.sandboxed,
            limit: out.limit,
        }
    }
}

/// A checked process that has not started. `wait()` starts it (on toolgate's I/O runtime, so
/// that many processes start in parallel without blocking JavaScript) and resolves with its
/// result; `kill()` stops its whole process group, also before it has started.
#[napi]
pub struct ProcessHandle {
    abort: AbortHandle,
    job: Mutex<Option<Job>>,
    sandbox_warning: Option<String>,
}

impl From<Job> for ProcessHandle {
    fn from(job: Job) -> Self {
        Self {
            abort: job.abort_handle(),
            job: Mutex::new(Some(job)),
            sandbox_warning: None,
        }
    }
}

#[napi]
impl ProcessHandle {
    /// The one best-effort sandbox warning of this process, when preparing this `exec` was the
    /// first to have one; `null` otherwise.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "ProcessHandle.sandboxWarning", || {
            self.sandbox_warning.clone()
        })
    }

    /// Attaches the process to one tool call of a run (before `wait()`): under a
    /// network-by-host sandbox the egress proxy asks the run's handler about hosts, applies
    /// its `always` answers and records into it. Without it such a call has nobody to ask.
    #[napi]
    pub fn attach_network(
        &self,
        env: Env,
        run: &NetworkRun,
        tool_call_id: String,
        tool: String,
    ) -> napi::Result<()> {
        sync(&env, "ProcessHandle.attachNetwork", || {
            let mut slot = self
                .job
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let job = slot.as_mut().ok_or_else(|| {
                toolgate_core::Error::InvalidInput(
                    "attachNetwork() must come before wait(), which was already called".into(),
                )
            })?;
            job.set_network(run.call(tool_call_id, tool));
            Ok(())
        })
    }

    /// Stops the process group (TERM, a short grace, KILL); `wait()` then resolves with
    /// `aborted: true` (a tool run rejects with `TOOL_FAILED`).
    #[napi]
    pub fn kill(&self, env: Env) -> napi::Result<()> {
        infallible(&env, "ProcessHandle.kill", || self.abort.abort())
    }

    /// Runs the process once. Rejects with `BINARY_NOT_FOUND` or `SPAWN_FAILED` when it cannot
    /// start, `OUTPUT_BLOCKED` when a `deny_output` block pattern matches, and for tools with
    /// `TIMEOUT` or `TOOL_FAILED`.
    #[napi(ts_return_type = "Promise<ProcessResult>")]
    pub async fn wait(&self) -> Settled<ProcessResult> {
        let job = self.job.lock().ok().and_then(|mut slot| slot.take());
        guarded("ProcessHandle.wait", async move {
            let job = job.ok_or_else(|| {
                toolgate_core::Error::InvalidInput(
                    "wait() was already called on this process".into(),
                )
            })?;
            job.run().await.map(ProcessResult::from)
        })
        .await
    }
}

/// Prepares a process for `exec` (no shell, exact environment, own process group; with
/// `sandbox`, under the kernel sandbox with a private HOME/TMPDIR); `wait()` runs it. Throws
/// `INVALID_INPUT` for options that are unknown or out of range, `CONFIG_INVALID` for an
/// unusable sandbox root, `SANDBOX_UNAVAILABLE` when `enforce` cannot be met here.
#[napi]
pub fn prepare_process(env: Env, options: Unknown<'_>) -> napi::Result<ProcessHandle> {
    sync(&env, "prepareProcess", || {
        let options: ExecOptions = js_value::input(&env, Some(options))?;
        let (request, sandbox_warning) = options.into_request()?;
        let mut handle = ProcessHandle::from(Job::exec(request));
        handle.sandbox_warning = sandbox_warning;
        Ok(handle)
    })
}
