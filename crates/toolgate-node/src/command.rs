//! `cli_execute` and the shell toolset: the core's policies held in native classes (built once:
//! binaries resolved, rules and regexes compiled), each command prepared as a killable
//! [`ProcessHandle`].

use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::command::{
    self, CliExecute, CliExecuteConfig, CliExecuteOptions, DecisionSource as CoreSource,
    Explanation, ShellConfig, ShellOptions, ShellToolset,
};
use toolgate_core::descriptions::{cli_execute_description, shell_description};
use toolgate_core::process::Job;

use crate::enums::{CommandLayer, Decision, DecisionSource, Verdict};
use crate::error::{infallible, sync};
use crate::js_value;
use crate::process::ProcessHandle;

/// Whether an allowlisted binary was found when the tool was built.
#[napi(object, object_from_js = false)]
pub struct BinaryAvailability {
    pub name: String,
    pub found: bool,
    /// Where it was found on PATH, or `null`.
    pub path: Option<String>,
    /// The file that path really is (symlinks resolved), or `null`.
    pub real_path: Option<String>,
}

/// The rule that decided a command.
#[napi(object, object_from_js = false)]
pub struct RuleMatch {
    /// Position in the rules list (0-based).
    pub index: u32,
    pub pattern: String,
    pub approval: Decision,
}

/// The layer that refused a command, with the error it raises when run.
#[napi(object, object_from_js = false)]
pub struct Refusal {
    pub layer: CommandLayer,
    #[napi(ts_type = "ErrorCode")]
    pub code: String,
    pub message: String,
}

/// Everything the shell policy decided about one command.
#[napi(object, object_from_js = false)]
pub struct CommandExplanation {
    pub command: String,
    /// The words the command was split into (empty when it could not be split).
    pub argv: Vec<String>,
    /// The program as found on PATH (absolute), or `null`.
    pub program: Option<String>,
    /// `blocked`: a rule, or no rule and no default; `refused`: another layer refused it.
    pub decision: Verdict,
    /// Where the approval came from; `null` when the command could not be split.
    pub source: Option<DecisionSource>,
    /// The rule that matched, or `null`.
    pub rule: Option<RuleMatch>,
    /// The layer that refused the command, or `null` when it would run.
    pub refusal: Option<Refusal>,
}

impl From<Explanation> for CommandExplanation {
    fn from(explanation: Explanation) -> Self {
        let decision = explanation.verdict().into();
        let (source, rule) = match explanation.decision.as_ref().map(|d| &d.source) {
            Some(CoreSource::Rule(rule)) => (
                Some(DecisionSource::Rule),
                Some(RuleMatch {
                    index: u32::try_from(rule.index).unwrap_or(u32::MAX),
                    pattern: rule.pattern.clone(),
                    approval: rule.approval.into(),
                }),
            ),
            Some(CoreSource::Default) => (Some(DecisionSource::Default), None),
            Some(CoreSource::NoDefault) => (Some(DecisionSource::NoDefault), None),
            None => (None, None),
        };
        Self {
            command: explanation.command,
            argv: explanation.argv,
            program: explanation.program.map(|p| p.display().to_string()),
            decision,
            source,
            rule,
            refusal: explanation.refusal.map(|refusal| Refusal {
                layer: refusal.layer.into(),
                code: refusal.error.code().to_owned(),
                message: refusal.error.to_string(),
            }),
        }
    }
}

/// A shell rule in TypeScript spelling.
#[napi(object, object_from_js = false)]
pub struct ShellRule {
    pub pattern: String,
    pub approval: Decision,
}

/// A shell block read from a YAML file, as `shellToolset` options (without `workDir`).
#[napi(object, object_from_js = false)]
pub struct ShellFileOptions {
    pub rules: Vec<ShellRule>,
    pub default: Option<Decision>,
    pub timeout_ms: Option<f64>,
    pub max_output_bytes: Option<f64>,
    pub env_passthrough: Vec<String>,
}

impl From<ShellConfig> for ShellFileOptions {
    fn from(config: ShellConfig) -> Self {
        Self {
            rules: config
                .rules
                .into_iter()
                .map(|rule| ShellRule {
                    pattern: rule.pattern,
                    approval: rule.approval.into(),
                })
                .collect(),
            default: config.default.map(Into::into),
            timeout_ms: config.timeout.map(|seconds| seconds * 1000.0),
            max_output_bytes: config.max_output_bytes.map(|bytes| bytes.0 as f64),
            env_passthrough: config.env_passthrough,
        }
    }
}

/// The `cli_execute` policy of one tool.
#[napi]
pub struct CliExecutePolicy {
    inner: Arc<CliExecute>,
    config: Arc<CliExecuteConfig>,
    sandbox_warning: Option<String>,
}

impl CliExecutePolicy {
    /// Wraps a policy built elsewhere (a worker plan, which reports its sandbox warnings).
    pub fn shared(inner: Arc<CliExecute>, config: Arc<CliExecuteConfig>) -> Self {
        Self {
            inner,
            config,
            sandbox_warning: None,
        }
    }
}

#[napi]
impl CliExecutePolicy {
    /// Reads `cliExecuteTool` options strictly, resolves the allowlisted binaries on PATH,
    /// compiles the guardrails and prepares the kernel sandbox, once. Throws `CONFIG_INVALID`
    /// for an unknown option, a shell or trampoline in the allowlist, an invalid regex, a bad
    /// limit, read root or sandbox root, or when none of the binaries is found;
    /// `SANDBOX_UNAVAILABLE` when `enforce` cannot be met here.
    #[napi(constructor)]
    pub fn new(env: Env, options: Unknown<'_>) -> napi::Result<Self> {
        sync(&env, "new CliExecutePolicy", || {
            let options: CliExecuteOptions = js_value::config(&env, Some(options))?;
            let (inner, config, sandbox) = options.build()?;
            let mut policy = Self::shared(Arc::new(inner), Arc::new(config));
            policy.sandbox_warning = sandbox.warning;
            Ok(policy)
        })
    }

    /// The one best-effort sandbox warning of this process, when building this policy was the
    /// first to have one; `null` otherwise.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "CliExecutePolicy.sandboxWarning", || {
            self.sandbox_warning.clone()
        })
    }

    /// The canonical work directory.
    #[napi(getter)]
    pub fn work_dir(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "CliExecutePolicy.workDir", || {
            self.inner.work_dir().display().to_string()
        })
    }

    /// The description the model reads, written from this policy and its limits.
    #[napi(getter)]
    pub fn description(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "CliExecutePolicy.description", || {
            cli_execute_description(&self.inner, &self.config)
        })
    }

    /// Every allowlisted binary, found or not, in allowlist order.
    #[napi]
    pub fn availability(&self, env: Env) -> napi::Result<Vec<BinaryAvailability>> {
        infallible(&env, "CliExecutePolicy.availability", || {
            self.inner
                .availability()
                .iter()
                .map(|binary| BinaryAvailability {
                    name: binary.name.clone(),
                    found: binary.path.is_some(),
                    path: binary.path.as_ref().map(|p| p.display().to_string()),
                    real_path: binary.real_path.as_ref().map(|p| p.display().to_string()),
                })
                .collect()
        })
    }

    /// Whether a call needs a human's approval because a calling worker's shell rules ask about
    /// it (they bind the workers it calls); `false` for a call that is refused anyway (it fails
    /// when run) and when no calling worker has shell rules.
    #[napi]
    pub fn needs_approval(
        &self,
        env: Env,
        binary: String,
        args: Vec<String>,
    ) -> napi::Result<bool> {
        infallible(&env, "CliExecutePolicy.needsApproval", || {
            self.inner.callers_approval(&binary, &args) == toolgate_core::Decision::Ask
        })
    }

    /// Checks a call (allowlist, availability, shell/trampoline, arguments, paths, guardrails)
    /// and returns a handle to run it. Throws the refusal's code.
    #[napi]
    pub fn prepare(
        &self,
        env: Env,
        binary: String,
        args: Vec<String>,
        stdin: Option<String>,
    ) -> napi::Result<ProcessHandle> {
        sync(&env, "CliExecutePolicy.prepare", || {
            self.inner
                .prepare(&binary, &args, stdin.map(String::into_bytes))
                .map(|command| Job::command(command).into())
        })
    }
}

/// The shell toolset's policy.
#[napi]
pub struct ShellPolicy {
    inner: Arc<ShellToolset>,
    config: Arc<ShellConfig>,
    deprecations: Vec<String>,
    sandbox_warning: Option<String>,
}

impl ShellPolicy {
    /// Wraps a policy built elsewhere (a worker plan, which reports its sandbox warnings).
    pub fn shared(inner: Arc<ShellToolset>, config: Arc<ShellConfig>) -> Self {
        Self {
            inner,
            config,
            deprecations: Vec::new(),
            sandbox_warning: None,
        }
    }
}

#[napi]
impl ShellPolicy {
    /// Reads `shellToolset` options strictly, compiles the rules (each pattern's program
    /// resolved once) and prepares the kernel sandbox. Throws `CONFIG_INVALID` for an unknown
    /// option, a pattern that cannot be split, is empty or would allow a shell, a bad limit or
    /// sandbox root; `SANDBOX_UNAVAILABLE` when `enforce` cannot be met here.
    #[napi(constructor)]
    pub fn new(env: Env, options: Unknown<'_>) -> napi::Result<Self> {
        sync(&env, "new ShellPolicy", || {
            let options: ShellOptions = js_value::config(&env, Some(options))?;
            let (inner, config, work_dir, sandbox) = options.build()?;
            let mut policy = Self::shared(Arc::new(inner), Arc::new(config));
            policy.deprecations.extend(work_dir.deprecation);
            policy.sandbox_warning = sandbox.warning;
            Ok(policy)
        })
    }

    /// The one best-effort sandbox warning of this process, when building this policy was the
    /// first to have one; `null` otherwise.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "ShellPolicy.sandboxWarning", || {
            self.sandbox_warning.clone()
        })
    }

    /// The canonical work directory.
    #[napi(getter)]
    pub fn work_dir(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "ShellPolicy.workDir", || {
            self.inner.work_dir().display().to_string()
        })
    }

    /// The description the model reads, written from the rules and limits.
    #[napi(getter)]
    pub fn description(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "ShellPolicy.description", || {
            shell_description(&self.inner, &self.config)
        })
    }

    /// Deprecated options that were used (`cwd`), each with what to use instead.
    #[napi(getter)]
    pub fn deprecations(&self, env: Env) -> napi::Result<Vec<String>> {
        infallible(&env, "ShellPolicy.deprecations", || {
            self.deprecations.clone()
        })
    }

    /// True only when every check passes and the rules say `ask`.
    #[napi]
    pub fn needs_approval(&self, env: Env, command: String) -> napi::Result<bool> {
        sync(&env, "ShellPolicy.needsApproval", || {
            Ok(self.inner.needs_approval(&command))
        })
    }

    /// The decision, the matched rule and, for refusals, the layer that refused.
    #[napi]
    pub fn explain(&self, env: Env, command: String) -> napi::Result<CommandExplanation> {
        sync(&env, "ShellPolicy.explain", || {
            Ok(self.inner.explain(&command).into())
        })
    }

    /// Checks `command` and returns a handle to run it. Throws `COMMAND_BLOCKED` for a blocked
    /// command, else the code of the layer that refused it.
    #[napi]
    pub fn prepare(&self, env: Env, command: String) -> napi::Result<ProcessHandle> {
        sync(&env, "ShellPolicy.prepare", || {
            self.inner
                .prepare(&command)
                .map(|command| Job::command(command).into())
        })
    }
}

/// Splits a command string into argv with POSIX quoting and no expansion. Throws
/// `ARGUMENT_REJECTED` for pipes, redirections, lists, substitutions and newlines.
#[napi]
pub fn split_command(env: Env, command: String) -> napi::Result<Vec<String>> {
    sync(&env, "splitCommand", || command::split_command(&command))
}

/// Reads a YAML shell block (or a worker file's `toolsets.shell`) as `shellToolset` options.
/// Throws `CONFIG_INVALID` with the file, line and column for unknown keys and bad values,
/// `FILE_NOT_FOUND` when the file does not exist.
#[napi]
pub fn read_shell_config(env: Env, path: String) -> napi::Result<ShellFileOptions> {
    sync(&env, "readShellConfig", || {
        ShellConfig::from_file(path.as_ref()).map(ShellFileOptions::from)
    })
}
