//! Running a discovered tool: the input is checked against the tool's schema before anything
//! runs; the tool gets the reduced environment with a private HOME/TMPDIR, the configured work
//! directory, a timeout that kills its whole process group and an output cap; its output
//! becomes a result or an error.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::docstring;
use super::manifest::resolve_entrypoint;
use super::protocol::{ending, stderr_excerpt};
use super::{ToolFormat, ToolSpec};
use crate::error::{Error, Result};
use crate::exec::{self, env, AbortHandle, ExecOutput, ExecRequest, DEFAULT_MAX_OUTPUT_BYTES};
use crate::limits::{DEFAULT_EXECUTABLE_TIMEOUT, MAX_STDIN_BYTES, MAX_TIMEOUT};
use crate::network::{refusal_note, refused_connections, ConnectionRecord, NetworkCall};
use crate::sandbox::Sandbox;
use crate::schema::{clip, InputSchema};

/// How tools run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The working directory of every tool.
    pub work_dir: PathBuf,
    pub timeout: Duration,
    /// Per-tool timeouts by tool name; they override `timeout`.
    pub tool_timeouts: BTreeMap<String, Duration>,
    /// Cap for each of stdout and stderr.
    pub max_output_bytes: usize,
    /// Extra variable names passed from this process's environment.
    pub env_passthrough: Vec<String>,
    /// The kernel sandbox every run goes through; `None` runs unconfined.
    pub sandbox: Option<Arc<Sandbox>>,
}

impl RunOptions {
    /// Defaults: 30 s, 1 MiB, no passthrough, no sandbox (a registry gets its sandbox from
    /// the options that build it).
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            work_dir: work_dir.into(),
            timeout: DEFAULT_EXECUTABLE_TIMEOUT,
            tool_timeouts: BTreeMap::new(),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            env_passthrough: Vec::new(),
            sandbox: None,
        }
    }

    /// The timeout of the tool named `name`.
    pub fn timeout_for(&self, name: &str) -> Duration {
        self.tool_timeouts
            .get(name)
            .copied()
            .unwrap_or(self.timeout)
    }

    /// Throws `CONFIG_INVALID` for zero or huge timeouts, a zero cap or a malformed variable
    /// name in the passthrough list.
    pub fn check(&self) -> Result<()> {
        let timeouts = std::iter::once(("timeout".to_string(), self.timeout)).chain(
            self.tool_timeouts
                .iter()
                .map(|(name, t)| (format!("tool_timeouts.{name}"), *t)),
        );
        for (key, timeout) in timeouts {
            if timeout.is_zero() || timeout > MAX_TIMEOUT {
                return Err(Error::ConfigInvalid(format!(
                    "executables.{key} is {} s; give between 1 ms and {} s",
                    timeout.as_secs_f64(),
                    MAX_TIMEOUT.as_secs()
                )));
            }
        }
        if self.max_output_bytes == 0 {
            return Err(Error::ConfigInvalid(
                "executables.max_output_bytes is 0; give a positive number of bytes".into(),
            ));
        }
        env::check_passthrough("executables.env_passthrough", &self.env_passthrough)
    }
}

/// The environment of a tool, read from this process now: the one child-environment policy
/// ([`crate::exec::env`]) with `passthrough`. `HOME`, `TMPDIR` and the XDG directories are
/// not in it: every run and `description` gets a private, empty one from exec.
pub fn tool_environment(passthrough: &[String]) -> Vec<(OsString, OsString)> {
    env::child_environment(passthrough)
}

/// A tool run that has been checked and is ready to start; [`abort_handle`](Self::abort_handle)
/// stops it from elsewhere, also before it has started.
#[derive(Debug)]
pub struct PreparedRun {
    tool: String,
    request: ExecRequest,
    abort: AbortHandle,
    timeout: Duration,
    max_output_bytes: usize,
}

/// What a successful run returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// stdout parsed as JSON when it is JSON, else the text (with a truncation marker when it
    /// was cut).
    pub result: Value,
    pub duration: Duration,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    /// What the tool wrote to stderr (it does not go to the model).
    pub stderr: String,
    /// Whether it ran with the sandbox's filesystem policy in force.
    pub sandboxed: bool,
    /// Its connections through the egress proxy (network by host).
    pub connections: Vec<ConnectionRecord>,
    /// The sandbox limits it ran into although it succeeded (`processes`, `memoryMb`, …,
    /// comma-separated): its result may be incomplete. (A tool that failed names them in its
    /// `TOOL_FAILED` message, from the end of its stderr.)
    pub limit: Option<String>,
}

/// Refuses an input larger than [`MAX_STDIN_BYTES`] as JSON (what a protocol tool reads on
/// stdin) before the schema looks at it, without building the text.
fn check_input_size(tool: &str, input: &Value) -> Result<()> {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            if self.0 > MAX_STDIN_BYTES {
                return Err(std::io::Error::other("too large"));
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    if serde_json::to_writer(&mut counter, input).is_err() {
        return Err(Error::InvalidInput(format!(
            "the input for tool '{tool}' is larger than {MAX_STDIN_BYTES} bytes as JSON; pass large data in a file and give its path"
        )));
    }
    Ok(())
}

/// Checks `input` against the tool's schema and builds the run: protocol tools get `run` and
/// the JSON on stdin; docstring tools run under their interpreter (found on the tool's PATH)
/// with the JSON on stdin; manifest tools get `--name=value` flags (entrypoint checked again, since
/// files change). Errors: `INVALID_INPUT` (with JSON pointers), `CONFIG_INVALID` for a manifest
/// entrypoint that is no longer acceptable.
pub fn prepare(
    spec: &ToolSpec,
    schema: &InputSchema,
    input: &Value,
    options: &RunOptions,
) -> Result<PreparedRun> {
    check_input_size(&spec.name, input)?;
    schema.check(&spec.name, input)?;
    env::check_passthrough("executables.env_passthrough", &options.env_passthrough)?;
    let env = tool_environment(&options.env_passthrough);
    let request = match spec.format {
        ToolFormat::Protocol => {
            let stdin = serde_json::to_vec(input).map_err(|err| {
                Error::InvalidInput(format!("the input cannot be encoded: {err}"))
            })?;
            ExecRequest::new(spec.program.as_os_str(), &options.work_dir)
                .args(["run"])
                .stdin(stdin)
        }
        ToolFormat::Manifest => {
            let manifest = spec.manifest.as_ref().ok_or_else(|| {
                Error::ConfigInvalid(format!("tool '{}' has no manifest", spec.name))
            })?;
            let arguments = manifest.arguments(input)?;
            let tool_dir = spec.source.parent().unwrap_or(Path::new("/"));
            let program = resolve_entrypoint(tool_dir, &manifest.entrypoint).map_err(|reason| {
                Error::ConfigInvalid(format!(
                    "tool '{}' ({}): {reason}",
                    spec.name,
                    spec.source.display()
                ))
            })?;
            ExecRequest::new(program.as_os_str(), &options.work_dir).args(arguments)
        }
        ToolFormat::Docstring => {
            let docstring = spec.docstring.as_ref().ok_or_else(|| {
                Error::ConfigInvalid(format!("tool '{}' has no docstring header", spec.name))
            })?;
            let interpreter =
                docstring::interpreter(docstring.language, &spec.name, &options.work_dir, &env)?;
            let stdin = serde_json::to_vec(input).map_err(|err| {
                Error::InvalidInput(format!("the input cannot be encoded: {err}"))
            })?;
            ExecRequest {
                readable: docstring::readable_roots(
                    docstring.language,
                    &interpreter,
                    &spec.program,
                ),
                ..ExecRequest::new(interpreter.as_os_str(), &options.work_dir)
                    .args([spec.program.as_os_str()])
                    .stdin(stdin)
            }
        }
    };
    let timeout = options.timeout_for(&spec.name);
    Ok(PreparedRun {
        tool: spec.name.clone(),
        request: ExecRequest {
            sandbox: options.sandbox.clone(),
            ..request
                .env(env)
                .private_dirs()
                .timeout(timeout)
                .max_output_bytes(options.max_output_bytes)
        },
        abort: AbortHandle::default(),
        timeout,
        max_output_bytes: options.max_output_bytes,
    })
}

impl PreparedRun {
    /// A handle that kills the run's process group.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// The request that will be executed (for inspection and tests).
    pub fn request(&self) -> &ExecRequest {
        &self.request
    }

    /// Attaches the run to a run's tool call, for the egress proxy.
    pub fn set_network(&mut self, call: NetworkCall) {
        self.request.network = Some(call);
    }

    /// Runs the tool through the executor and interprets its output. A failure names the
    /// connections the egress proxy refused, so that the model can ask for the right host.
    pub async fn run(self) -> Result<ToolOutput> {
        let mut output = exec::spawn_with_abort(self.request, self.abort)?
            .wait()
            .await?;
        let connections = std::mem::take(&mut output.connections);
        match interpret(&self.tool, output, self.timeout, self.max_output_bytes) {
            Ok(out) => Ok(ToolOutput { connections, ..out }),
            Err(err) => Err(match refusal_note(&refused_connections(&connections)) {
                Some(note) => with_refusals(err, &note),
                None => err,
            }),
        }
    }
}

/// A failed run's error with the proxy's refusals added: they are often why it failed.
fn with_refusals(err: Error, note: &str) -> Error {
    match err {
        Error::ToolFailed(message) => Error::ToolFailed(format!("{message}; {note}")),
        Error::Timeout(message) => Error::Timeout(format!("{message}; {note}")),
        other => other,
    }
}

/// Turns a finished run into a result: `TIMEOUT`, `TOOL_FAILED` (non-zero exit with stderr,
/// `{"error": "..."}` on stdout, or an abort), else the result.
pub fn interpret(
    tool: &str,
    output: ExecOutput,
    timeout: Duration,
    max_output_bytes: usize,
) -> Result<ToolOutput> {
    if output.timed_out {
        return Err(Error::Timeout(format!(
            "tool '{tool}' did not finish within {} s; its process group was killed. If it needs longer, raise its timeout (executables.tool_timeouts.{tool} or executables.timeout)",
            timeout.as_secs_f64()
        )));
    }
    if output.aborted {
        return Err(Error::ToolFailed(format!(
            "tool '{tool}' was aborted; its process group was killed"
        )));
    }
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.success() {
        let detail = stderr_excerpt(&output.stderr);
        let detail = if detail.is_empty() {
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stdout = stdout.trim();
            if stdout.is_empty() {
                " and wrote nothing to stderr".to_string()
            } else {
                format!("; stderr was empty, stdout: {}", clip(stdout))
            }
        } else {
            detail
        };
        return Err(Error::ToolFailed(format!(
            "tool '{tool}' failed ({}){detail}",
            ending(&output)
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let result = if output.stdout_truncated {
        Value::String(format!(
            "{text}\n[output truncated: tool '{tool}' wrote more than {max_output_bytes} bytes to stdout (the max_output_bytes limit); the rest was discarded]"
        ))
    } else {
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Object(object)) => {
                if let Some(Value::String(message)) = object.get("error") {
                    return Err(Error::ToolFailed(format!(
                        "tool '{tool}' reported an error{}",
                        stderr_excerpt(message.as_bytes())
                    )));
                }
                Value::Object(object)
            }
            Ok(value) => value,
            Err(_) => Value::String(text.trim_end_matches(['\n', '\r']).to_string()),
        }
    };
    Ok(ToolOutput {
        result,
        duration: output.duration,
        truncated: output.truncated(),
        stderr,
        sandboxed: output.sandboxed,
        connections: Vec::new(),
        limit: output.limit,
    })
}

#[cfg(test)]
mod tests;
