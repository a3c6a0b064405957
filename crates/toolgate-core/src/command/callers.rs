//! What the workers above a worker forbid, applied to that worker's commands (issue 23 §1).
//!
//! A worker's command toolsets are restrictions on what runs below it too. The `shell` and
//! `cli_execute` commands of a called worker are judged by its own policy and, strictest wins,
//! by the command policy of every worker on its call chain, at every depth:
//!
//! - **Shell rules.** A calling worker's `shell` decides every command of the workers below it
//!   as it would decide it for itself: its rules, its default, and no default meaning
//!   `blocked`, with the commands a command runs by its own means judged too. `blocked` refuses
//!   the command (`COMMAND_BLOCKED`, naming that worker and its rule), `ask` makes it ask,
//!   `preApproved` adds nothing (the called worker's own decision stands).
//! - **Allowlists.** With a `cli_execute` toolset, a calling worker's `allowed_binaries` are
//!   the only programs that may run below it (by file, like its own calls): every program of a
//!   command, and of the commands it runs, must be on every such list, and a command that may
//!   run something toolgate cannot see (`make`) is refused (`BINARY_NOT_ALLOWED`,
//!   `COMMAND_BLOCKED`).
//! - **Guardrails.** A calling worker's `deny_commands` refuse the command lines below it
//!   (`GUARDRAIL_BLOCKED`), matched against the line as written and with the program's
//!   basename; its `deny_output` blocks or redacts their output.
//!
//! A calling worker without a `shell` or `cli_execute` toolset adds nothing: delegating to a
//! worker that runs commands is then the author's grant. Each toolset's restriction holds on its
//! own, so a caller with both a `shell` and a `cli_execute` toolset binds its callees by both.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::engine::in_command;
use super::guardrails::{CommandGuardrails, OutputGuardrails};
use super::program::Program;
use super::rules::{RuleDecision, RuleSet};
use super::{Layer, Refusal};
use crate::error::Error;

/// The command policies of the workers that call a worker, the outermost first.
#[derive(Debug, Clone, Default)]
pub struct CallerCommands {
    layers: Vec<Arc<CallerLayer>>,
}

/// The command policy of one calling worker.
#[derive(Debug)]
pub struct CallerLayer {
    /// The calling worker's name.
    pub worker: String,
    /// Its worker file.
    pub file: PathBuf,
    shell: Option<Arc<dyn CallerShell>>,
    cli_execute: Option<Arc<dyn CallerCliExecute>>,
}

impl CallerLayer {
    /// The worker in words: `the calling worker 'top' (/w/top.yaml)`.
    pub fn describe(&self) -> String {
        format!(
            "the calling worker '{}' ({})",
            self.worker,
            self.file.display()
        )
    }

    /// Whether its `shell` rules bind the workers below it.
    pub fn binds_shell(&self) -> bool {
        self.shell.is_some()
    }

    /// Whether its `cli_execute` allowlist and guardrails bind the workers below it.
    pub fn binds_cli_execute(&self) -> bool {
        self.cli_execute.is_some()
    }
}

/// What the callers need of a calling worker's `shell` toolset: its rules. The toolsets
/// implement these traits (they judge their own commands with [`CallerCommands`], so this
/// module names none of them).
pub(crate) trait CallerShell: std::fmt::Debug + Send + Sync {
    fn rules(&self) -> &RuleSet;
}

/// What the callers need of a calling worker's `cli_execute` toolset.
pub(crate) trait CallerCliExecute: std::fmt::Debug + Send + Sync {
    /// Whether `program` is on its allowlist, by file.
    fn allows(&self, program: &Program) -> bool;
    /// The allowed programs that were found, for messages.
    fn available_names(&self) -> Vec<&str>;
    fn command_guardrails(&self) -> &CommandGuardrails;
    fn output_guardrails(&self) -> &Arc<OutputGuardrails>;
}

/// One command a checked command runs (itself or one it runs by its own means), for the
/// callers' allowlists and guardrails.
pub(crate) struct RunCommand<'a> {
    pub argv: &'a [String],
    pub program: Option<&'a Program>,
    /// Which command it is, for messages (`None`: the command itself).
    pub within: Option<&'a str>,
}

impl CallerCommands {
    /// These callers joined by `worker` (its file `file`), the next worker down the chain, with
    /// its command toolsets. A worker with neither adds no layer.
    pub(crate) fn handed_down(
        &self,
        worker: &str,
        file: &Path,
        shell: Option<Arc<dyn CallerShell>>,
        cli_execute: Option<Arc<dyn CallerCliExecute>>,
    ) -> CallerCommands {
        let mut next = self.clone();
        if shell.is_some() || cli_execute.is_some() {
            next.layers.push(Arc::new(CallerLayer {
                worker: worker.to_string(),
                file: file.to_path_buf(),
                shell,
                cli_execute,
            }));
        }
        next
    }

    /// Whether no calling worker restricts commands.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layers, the outermost caller first.
    pub fn layers(&self) -> impl Iterator<Item = &CallerLayer> {
        self.layers.iter().map(AsRef::as_ref)
    }

    /// Whether a calling worker has shell rules (then a command may need approval because of
    /// them).
    pub fn has_rules(&self) -> bool {
        self.layers.iter().any(|layer| layer.shell.is_some())
    }

    /// The strictest decision the callers' shell rules make about a command, `judge` deciding it
    /// by one rule set (the command's own judging, with the callers' rules in place of its
    /// toolset's). The first of equally strict callers is named in the decision. `None` when no
    /// caller has shell rules.
    pub(crate) fn decide(
        &self,
        mut judge: impl FnMut(&RuleSet) -> Result<RuleDecision, Refusal>,
    ) -> Result<Option<RuleDecision>, Refusal> {
        let mut strictest: Option<RuleDecision> = None;
        for layer in &self.layers {
            let Some(shell) = &layer.shell else {
                continue;
            };
            let mut decision = judge(shell.rules())?;
            if strictest
                .as_ref()
                .is_some_and(|known| known.approval >= decision.approval)
            {
                continue;
            }
            decision.caller = Some(layer.describe());
            strictest = Some(decision);
        }
        Ok(strictest)
    }

    /// Refuses `commands` (a command and those it runs) unless every program is on the
    /// `allowed_binaries` of every caller that has a `cli_execute` toolset, and refuses any of
    /// them a caller's `deny_commands` matches. `unknowable` says why the command may run
    /// something toolgate cannot see, if it may: no allowlist can be checked then.
    pub(crate) fn check_commands(
        &self,
        commands: &[RunCommand<'_>],
        unknowable: Option<&str>,
    ) -> Result<(), Refusal> {
        for layer in &self.layers {
            let Some(cli) = &layer.cli_execute else {
                continue;
            };
            if let (Some(why), Some(first)) = (unknowable, commands.first()) {
                return Err(Refusal::new(
                    Layer::Allowlist,
                    Error::CommandBlocked(format!(
                        "'{}' may run anything: {why}; {} allows only its allowed_binaries ({}), which bind every worker it calls, so it is refused. Run the programs it would run directly",
                        first.argv.join(" "),
                        layer.describe(),
                        cli.available_names().join(", ")
                    )),
                ));
            }
            for command in commands {
                let allowed = command.program.is_some_and(|program| cli.allows(program));
                if !allowed {
                    let binary = command.argv.first().cloned().unwrap_or_default();
                    let error = Error::BinaryNotAllowed {
                        binary,
                        allowed: format!(
                            "{} (the allowed_binaries of {}, which bind every worker it calls)",
                            cli.available_names().join(", "),
                            layer.describe()
                        ),
                    };
                    return Err(Refusal::new(Layer::Allowlist, within(error, command)));
                }
            }
        }
        for layer in &self.layers {
            let Some(cli) = &layer.cli_execute else {
                continue;
            };
            for command in commands {
                let Some((binary, args)) = command.argv.split_first() else {
                    continue;
                };
                for spelled in spellings(binary, command.program) {
                    if let Err(Error::GuardrailBlocked(message)) =
                        cli.command_guardrails().check(&spelled, args)
                    {
                        let error = Error::GuardrailBlocked(format!(
                            "{message} (a deny_commands guardrail of {}, which binds every worker it calls)",
                            layer.describe()
                        ));
                        return Err(Refusal::new(Layer::Guardrails, within(error, command)));
                    }
                }
            }
        }
        Ok(())
    }

    /// The callers' `deny_output` guardrails, the outermost first.
    pub(crate) fn output_guardrails(&self) -> Vec<Arc<OutputGuardrails>> {
        self.layers
            .iter()
            .filter_map(|layer| layer.cli_execute.as_ref())
            .map(|cli| Arc::clone(cli.output_guardrails()))
            .collect()
    }

    /// The decision to keep: `caller` (the callers' rules) when it is stricter than `own`.
    pub(crate) fn stricter(own: RuleDecision, caller: Option<RuleDecision>) -> RuleDecision {
        match caller {
            Some(caller) if caller.approval > own.approval => caller,
            _ => own,
        }
    }
}

/// The program of a command as a guardrail may see it: as written, by its basename, and by the
/// basename of the file it is (`/usr/bin/rm` and a link to it are `rm`).
fn spellings(written: &str, program: Option<&Program>) -> Vec<String> {
    let mut forms = vec![written.to_string()];
    let base = |path: &Path| {
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
    };
    for form in [
        base(Path::new(written)),
        program.and_then(|p| base(&p.real)),
    ]
    .into_iter()
    .flatten()
    {
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

fn within(error: Error, command: &RunCommand<'_>) -> Error {
    match command.within {
        Some(within) => in_command(error, within),
        None => error,
    }
}
