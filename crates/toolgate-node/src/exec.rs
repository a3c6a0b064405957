use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use toolgate_core::exec::{self, ExecRequest};

use crate::error::{invalid_input, to_napi_async, Code};

/// What to run. `command` is an absolute path, a path relative to `cwd`, or a name looked up on
/// `env.PATH` (or this process's PATH when `env` has none). No shell is ever involved.
#[napi(object)]
pub struct NativeExecOptions {
    pub command: String,
    pub args: Option<Vec<String>>,
    /// Working directory; must exist.
    pub cwd: String,
    /// The complete environment of the child; nothing is inherited.
    pub env: Option<HashMap<String, String>>,
    pub stdin: Option<Either<String, Buffer>>,
    /// Kill the process group after this many milliseconds.
    pub timeout_ms: Option<f64>,
    /// Cap for each of stdout and stderr, in bytes (default 1 MiB).
    pub max_output_bytes: Option<f64>,
}

/// The outcome of a run. Exit codes, signals, timeouts and aborts are data, not errors.
#[napi(object)]
pub struct ExecResult {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    pub timed_out: bool,
    pub aborted: bool,
    pub duration_ms: f64,
}

impl From<exec::ExecOutput> for ExecResult {
    fn from(out: exec::ExecOutput) -> Self {
        Self {
            truncated: out.truncated(),
            exit_code: out.exit_code,
            signal: out.signal,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            timed_out: out.timed_out,
            aborted: out.aborted,
            duration_ms: out.duration.as_secs_f64() * 1000.0,
        }
    }
}

impl TryFrom<NativeExecOptions> for ExecRequest {
    type Error = crate::error::NodeError;

    fn try_from(options: NativeExecOptions) -> napi::Result<Self, Code> {
        let mut request = ExecRequest::new(options.command, options.cwd)
            .args(options.args.unwrap_or_default())
            .env(options.env.unwrap_or_default());
        if let Some(stdin) = options.stdin {
            request = request.stdin(match stdin {
                Either::A(text) => text.into_bytes(),
                Either::B(bytes) => bytes.to_vec(),
            });
        }
        if let Some(ms) = options.timeout_ms {
            request = request.timeout(Duration::from_secs_f64(
                non_negative("timeoutMs", ms)? / 1000.0,
            ));
        }
        if let Some(cap) = options.max_output_bytes {
            request = request.max_output_bytes(non_negative("maxOutputBytes", cap)? as usize);
        }
        Ok(request)
    }
}

fn non_negative(name: &str, value: f64) -> napi::Result<f64, Code> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(invalid_input(format!(
            "{name} must be a finite number >= 0, got {value}"
        )))
    }
}

/// A process to run. `wait()` starts it (on toolgate's I/O thread, so that many processes start
/// in parallel without blocking JavaScript) and resolves with its result; `kill()` stops the
/// whole process group, also before it has started.
#[napi]
pub struct ProcessHandle {
    abort: exec::AbortHandle,
    request: Mutex<Option<ExecRequest>>,
}

#[napi]
impl ProcessHandle {
    /// Stops the process group (TERM, a short grace, KILL); `wait()` then resolves with
    /// `aborted: true`.
    #[napi]
    pub fn kill(&self) {
        self.abort.abort();
    }

    /// Starts the process, waits for it to end and returns its result. Can be called once.
    /// Rejects with `BINARY_NOT_FOUND` or `SPAWN_FAILED` when the process cannot be started.
    #[napi]
    pub async fn wait(&self) -> napi::Result<ExecResult> {
        let request = self.request.lock().ok().and_then(|mut slot| slot.take());
        let request = request.ok_or_else(|| {
            napi::Error::from_reason("INVALID_INPUT: wait() was already called on this process")
        })?;
        let running = exec::spawn_with_abort(request, self.abort.clone()).map_err(to_napi_async)?;
        running
            .wait()
            .await
            .map(ExecResult::from)
            .map_err(to_napi_async)
    }
}

/// Prepares a process (no shell, exact environment, own process group); `wait()` runs it.
/// Throws `INVALID_INPUT` for options that cannot be converted.
#[napi]
pub fn prepare_process(options: NativeExecOptions) -> napi::Result<ProcessHandle, Code> {
    Ok(ProcessHandle {
        abort: exec::AbortHandle::default(),
        request: Mutex::new(Some(ExecRequest::try_from(options)?)),
    })
}
