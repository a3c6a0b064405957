//! `cli_execute` and the shell toolset: the core's policies held in native classes (built once:
//! binaries resolved, rules and regexes compiled), and a handle per command that can be killed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use napi_derive::napi;
use toolgate_core::command::{
    self, config, Approval, CliExecute, CliExecuteConfig, DecisionSource, Explanation,
    PreparedCommand, ShellConfig, ShellRule, ShellToolset,
};
use toolgate_core::exec::AbortHandle;

use crate::error::{to_napi, to_napi_async, Code};

/// Options of `cli_execute` (TypeScript spelling; `timeoutMs` in milliseconds).
#[napi(object)]
pub struct NativeCliExecuteOptions {
    /// The work directory: cwd and HOME of every command; path arguments are confined to it.
    pub work_dir: String,
    /// Bare program names, looked up on PATH once, now.
    pub allowed_binaries: Vec<String>,
    pub env_passthrough: Option<Vec<String>>,
    /// Extra directories path arguments may name: absolute, or relative to `workDir`.
    pub read_roots: Option<Vec<String>>,
    pub timeout_ms: Option<f64>,
    pub max_output_bytes: Option<f64>,
    pub guardrails: Option<NativeGuardrails>,
}

/// Regex guardrails of `cli_execute`.
#[napi(object)]
pub struct NativeGuardrails {
    pub deny_commands: Option<Vec<NativeDenyCommand>>,
    pub deny_output: Option<Vec<NativeDenyOutput>>,
}

#[napi(object)]
pub struct NativeDenyCommand {
    pub pattern: String,
    pub message: Option<String>,
}

#[napi(object)]
pub struct NativeDenyOutput {
    pub pattern: String,
    /// `block` (default) or `redact`.
    pub action: Option<String>,
}

/// Options of the shell toolset (TypeScript spelling).
#[napi(object)]
pub struct NativeShellOptions {
    /// The work directory: cwd and HOME of every command; path arguments are confined to it.
    pub cwd: String,
    pub rules: Option<Vec<NativeShellRule>>,
    /// `preApproved`, `ask` or `blocked`; without it unmatched commands are blocked.
    pub default: Option<String>,
    pub timeout_ms: Option<f64>,
    pub max_output_bytes: Option<f64>,
    pub env_passthrough: Option<Vec<String>>,
}

#[napi(object)]
pub struct NativeShellRule {
    pub pattern: String,
    /// `preApproved`, `ask` or `blocked`.
    pub approval: String,
}

/// A shell block read from a YAML file, in TypeScript spelling (without `cwd`).
#[napi(object)]
pub struct NativeShellConfig {
    pub rules: Vec<NativeShellRule>,
    pub default: Option<String>,
    pub timeout_ms: Option<f64>,
    pub max_output_bytes: Option<f64>,
    pub env_passthrough: Vec<String>,
}

/// Whether an allowlisted binary was found when the tool was built.
#[napi(object)]
pub struct NativeBinaryAvailability {
    pub name: String,
    pub found: bool,
    /// Where it was found on PATH.
    pub path: Option<String>,
    /// The file that path really is (symlinks resolved).
    pub real_path: Option<String>,
}

/// The rule that decided a command.
#[napi(object)]
pub struct NativeRuleMatch {
    /// Position in the rules list (0-based).
    pub index: u32,
    pub pattern: String,
    pub approval: String,
}

/// The layer that refused a command, with the error it raised.
#[napi(object)]
pub struct NativeRefusal {
    /// `syntax`, `shell-or-trampoline`, `rules`, `program`, `arguments` or `paths`.
    pub layer: String,
    pub code: String,
    pub message: String,
}

/// Everything decided about a shell command.
#[napi(object)]
pub struct NativeExplanation {
    pub command: String,
    pub argv: Vec<String>,
    /// The program as found on PATH (absolute), when it was found.
    pub program: Option<String>,
    /// `preApproved`, `ask`, `blocked` (a rule, or no rule and no default) or `refused`.
    pub decision: String,
    /// `rule`, `default` or `no-default`; absent when the command could not be split.
    pub source: Option<String>,
    pub rule: Option<NativeRuleMatch>,
    pub refusal: Option<NativeRefusal>,
}

/// What a command produced. A non-zero exit, a timeout or an abort is data.
#[napi(object)]
pub struct CommandResult {
    pub stdout: String,
    pub stderr: String,
    /// `null` when a signal ended the process.
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
    pub timed_out: bool,
    pub aborted: bool,
    pub duration_ms: f64,
}

impl From<command::CommandOutput> for CommandResult {
    fn from(out: command::CommandOutput) -> Self {
        Self {
            stdout: out.stdout,
            stderr: out.stderr,
            exit_code: out.exit_code,
            signal: out.signal,
            truncated: out.truncated,
            timed_out: out.timed_out,
            aborted: out.aborted,
            duration_ms: out.duration.as_secs_f64() * 1000.0,
        }
    }
}

impl From<Explanation> for NativeExplanation {
    fn from(explanation: Explanation) -> Self {
        let decision = explanation.verdict().as_str().to_string();
        let (source, rule) = match explanation.decision.as_ref().map(|d| &d.source) {
            Some(DecisionSource::Rule(rule)) => (
                Some("rule"),
                Some(NativeRuleMatch {
                    index: rule.index as u32,
                    pattern: rule.pattern.clone(),
                    approval: rule.approval.as_str().to_string(),
                }),
            ),
            Some(DecisionSource::Default) => (Some("default"), None),
            Some(DecisionSource::NoDefault) => (Some("no-default"), None),
            None => (None, None),
        };
        Self {
            command: explanation.command,
            argv: explanation.argv,
            program: explanation.program.map(|p| p.display().to_string()),
            decision,
            source: source.map(str::to_string),
            rule,
            refusal: explanation.refusal.map(|refusal| NativeRefusal {
                layer: refusal.layer.as_str().to_string(),
                code: refusal.error.code().to_string(),
                message: refusal.error.to_string(),
            }),
        }
    }
}

/// Milliseconds from TypeScript to seconds in the config; bytes to a count.
fn seconds(ms: Option<f64>) -> Option<f64> {
    ms.map(|ms| ms / 1000.0)
}

fn bytes(count: Option<f64>, name: &str) -> napi::Result<Option<u64>, Code> {
    match count {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 1.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
        Some(n) => Err(napi::Error::new(
            Code("CONFIG_INVALID"),
            format!("{name} is {n}; give a whole number of bytes greater than 0"),
        )),
    }
}

impl TryFrom<NativeCliExecuteOptions> for CliExecuteConfig {
    type Error = crate::error::NodeError;

    fn try_from(options: NativeCliExecuteOptions) -> napi::Result<Self, Code> {
        let guardrails = options.guardrails.map_or_else(
            || Ok(config::Guardrails::default()),
            |g| -> napi::Result<_, Code> {
                Ok(config::Guardrails {
                    deny_commands: g
                        .deny_commands
                        .unwrap_or_default()
                        .into_iter()
                        .map(|d| config::DenyCommand {
                            pattern: d.pattern,
                            message: d.message,
                        })
                        .collect(),
                    deny_output: g
                        .deny_output
                        .unwrap_or_default()
                        .into_iter()
                        .map(|d| {
                            Ok(config::DenyOutput {
                                pattern: d.pattern,
                                action: match d.action {
                                    Some(action) => action.parse().map_err(to_napi)?,
                                    None => config::OutputAction::Block,
                                },
                            })
                        })
                        .collect::<napi::Result<_, Code>>()?,
                })
            },
        )?;
        Ok(CliExecuteConfig {
            allowed_binaries: options.allowed_binaries,
            env_passthrough: options.env_passthrough.unwrap_or_default(),
            read_roots: options
                .read_roots
                .unwrap_or_default()
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            timeout: seconds(options.timeout_ms),
            max_output_bytes: bytes(options.max_output_bytes, "maxOutputBytes")?,
            guardrails,
        })
    }
}

impl TryFrom<NativeShellOptions> for ShellConfig {
    type Error = crate::error::NodeError;

    fn try_from(options: NativeShellOptions) -> napi::Result<Self, Code> {
        Ok(ShellConfig {
            rules: options
                .rules
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(index, rule)| {
                    Ok(ShellRule {
                        approval: rule.approval.parse::<Approval>().map_err(|err| {
                            napi::Error::new(
                                Code("CONFIG_INVALID"),
                                format!("rules[{index}]: {err}"),
                            )
                        })?,
                        pattern: rule.pattern,
                    })
                })
                .collect::<napi::Result<_, Code>>()?,
            default: options
                .default
                .map(|d| d.parse::<Approval>())
                .transpose()
                .map_err(to_napi)?,
            timeout: seconds(options.timeout_ms),
            max_output_bytes: bytes(options.max_output_bytes, "maxOutputBytes")?,
            env_passthrough: options.env_passthrough.unwrap_or_default(),
        })
    }
}

impl From<ShellConfig> for NativeShellConfig {
    fn from(config: ShellConfig) -> Self {
        Self {
            rules: config
                .rules
                .into_iter()
                .map(|rule| NativeShellRule {
                    pattern: rule.pattern,
                    approval: rule.approval.as_str().to_string(),
                })
                .collect(),
            default: config.default.map(|d| d.as_str().to_string()),
            timeout_ms: config.timeout.map(|s| s * 1000.0),
            max_output_bytes: config.max_output_bytes.map(|b| b as f64),
            env_passthrough: config.env_passthrough,
        }
    }
}

/// A checked command. `wait()` starts it (on toolgate's I/O runtime) and resolves with its
/// result; `kill()` stops its whole process group, also before it has started.
#[napi]
pub struct CommandHandle {
    abort: AbortHandle,
    command: Mutex<Option<PreparedCommand>>,
}

impl CommandHandle {
    fn new(command: PreparedCommand) -> Self {
        Self {
            abort: AbortHandle::default(),
            command: Mutex::new(Some(command)),
        }
    }
}

#[napi]
impl CommandHandle {
    /// Stops the process group (TERM, a short grace, KILL); `wait()` then resolves with
    /// `aborted: true`.
    #[napi]
    pub fn kill(&self) {
        self.abort.abort();
    }

    /// Runs the command once and resolves with its result. Rejects with `OUTPUT_BLOCKED` when a
    /// deny_output block pattern matches, `SPAWN_FAILED` when it cannot start.
    #[napi]
    pub async fn wait(&self) -> napi::Result<CommandResult> {
        let command = self.command.lock().ok().and_then(|mut slot| slot.take());
        let command = command.ok_or_else(|| {
            napi::Error::from_reason("INVALID_INPUT: wait() was already called on this command")
        })?;
        let running = command.spawn(self.abort.clone()).map_err(to_napi_async)?;
        running
            .wait()
            .await
            .map(CommandResult::from)
            .map_err(to_napi_async)
    }
}

/// The `cli_execute` policy of one tool.
#[napi]
pub struct CliExecutePolicy {
    inner: Arc<CliExecute>,
}

#[napi]
impl CliExecutePolicy {
    /// Resolves the allowlisted binaries on PATH and compiles the guardrails, once. Throws
    /// `CONFIG_INVALID` for a shell or trampoline in the allowlist, an invalid regex, a bad
    /// limit or read root, or when none of the binaries is found.
    #[napi(constructor)]
    pub fn new(options: NativeCliExecuteOptions) -> napi::Result<Self, Code> {
        let work_dir = PathBuf::from(&options.work_dir);
        let config = CliExecuteConfig::try_from(options)?;
        CliExecute::new(&work_dir, &config)
            .map(|inner| Self {
                inner: Arc::new(inner),
            })
            .map_err(to_napi)
    }

    /// The canonical work directory.
    #[napi(getter)]
    pub fn work_dir(&self) -> String {
        self.inner.work_dir().display().to_string()
    }

    /// Every allowlisted binary, found or not, in allowlist order.
    #[napi]
    pub fn availability(&self) -> Vec<NativeBinaryAvailability> {
        self.inner
            .availability()
            .iter()
            .map(|binary| NativeBinaryAvailability {
                name: binary.name.clone(),
                found: binary.path.is_some(),
                path: binary.path.as_ref().map(|p| p.display().to_string()),
                real_path: binary.real_path.as_ref().map(|p| p.display().to_string()),
            })
            .collect()
    }

    /// Checks a call (allowlist, availability, shell/trampoline, arguments, paths, guardrails)
    /// and returns a handle to run it. Throws the refusal's code.
    #[napi]
    pub fn prepare(
        &self,
        binary: String,
        args: Vec<String>,
        stdin: Option<String>,
    ) -> napi::Result<CommandHandle, Code> {
        self.inner
            .prepare(&binary, &args, stdin.map(String::into_bytes))
            .map(CommandHandle::new)
            .map_err(to_napi)
    }
}

/// The shell toolset's policy.
#[napi]
pub struct ShellPolicy {
    inner: ShellToolset,
}

#[napi]
impl ShellPolicy {
    /// Compiles the rules (each pattern's program resolved once). Throws `CONFIG_INVALID` for
    /// a pattern that cannot be split, is empty or would allow a shell, or a bad limit.
    #[napi(constructor)]
    pub fn new(options: NativeShellOptions) -> napi::Result<Self, Code> {
        let cwd = PathBuf::from(&options.cwd);
        let config = ShellConfig::try_from(options)?;
        ShellToolset::new(&cwd, &config)
            .map(|inner| Self { inner })
            .map_err(to_napi)
    }

    /// The canonical work directory.
    #[napi(getter)]
    pub fn work_dir(&self) -> String {
        self.inner.work_dir().display().to_string()
    }

    /// True only when every check passes and the rules say `ask`.
    #[napi]
    pub fn needs_approval(&self, command: String) -> bool {
        self.inner.needs_approval(&command)
    }

    /// The decision, the matched rule and, for refusals, the layer that refused.
    #[napi]
    pub fn explain(&self, command: String) -> NativeExplanation {
        self.inner.explain(&command).into()
    }

    /// Checks `command` and returns a handle to run it. Throws `COMMAND_BLOCKED` for a blocked
    /// command, else the code of the layer that refused it.
    #[napi]
    pub fn prepare(&self, command: String) -> napi::Result<CommandHandle, Code> {
        self.inner
            .prepare(&command)
            .map(CommandHandle::new)
            .map_err(to_napi)
    }
}

/// Splits a command string into argv with POSIX quoting and no expansion. Throws
/// `ARGUMENT_REJECTED` for pipes, redirections, lists, substitutions and newlines.
#[napi]
pub fn split_command(command: String) -> napi::Result<Vec<String>, Code> {
    command::split_command(&command).map_err(to_napi)
}

/// Reads a YAML shell block (or a worker file's `toolsets.shell`). Throws `CONFIG_INVALID`
/// with the file, line and column for unknown keys and bad values, `FILE_NOT_FOUND` when the
/// file does not exist.
#[napi]
pub fn read_shell_config(path: String) -> napi::Result<NativeShellConfig, Code> {
    ShellConfig::from_file(path.as_ref())
        .map(NativeShellConfig::from)
        .map_err(to_napi)
}
