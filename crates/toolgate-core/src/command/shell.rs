//! The shell toolset: a command string split without a shell, the program found on PATH, and
//! an approval from the rules. Path confinement, environment, caps and timeout are the same
//! engine as `cli_execute`.

use std::path::{Path, PathBuf};

use super::config::{Approval, ShellConfig};
use super::engine::{Engine, ProgramCache};
use super::prepared::PreparedCommand;
use super::rules::{DecisionSource, ProgramKey, RuleDecision, RuleSet};
use super::split::split_command;
use super::{Layer, Refusal};
use crate::error::Error;
use crate::Result;

/// The shell toolset's policy: built once (rules compiled, their programs resolved), then used
/// for every command.
#[derive(Debug)]
pub struct ShellToolset {
    engine: Engine,
    rules: RuleSet,
    programs: ProgramCache,
}

/// Everything decided about one command: how it was split, which program it runs, which rule
/// (or default) gave it its approval, and the layer that refused it, if one did.
#[derive(Debug)]
pub struct Explanation {
    pub command: String,
    pub argv: Vec<String>,
    /// The program as found (absolute path), when it was found.
    pub program: Option<PathBuf>,
    /// The rules' decision; `None` when the command could not be split.
    pub decision: Option<RuleDecision>,
    /// The first layer that refused the command, in the order the checks run.
    pub refusal: Option<Refusal>,
    prepared: Option<PreparedCommand>,
}

/// The overall verdict of an [`Explanation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Runs without asking.
    PreApproved,
    /// Runs after a human approves it.
    Ask,
    /// A rule (or the missing default) blocks it: `COMMAND_BLOCKED`, no prompt.
    Blocked,
    /// Another layer refuses it (syntax, program, shell, arguments, paths).
    Refused,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::PreApproved => "preApproved",
            Verdict::Ask => "ask",
            Verdict::Blocked => "blocked",
            Verdict::Refused => "refused",
        }
    }
}

impl Explanation {
    pub fn verdict(&self) -> Verdict {
        match (&self.refusal, &self.decision) {
            (Some(refusal), _) if refusal.layer == Layer::Rules => Verdict::Blocked,
            (Some(_), _) => Verdict::Refused,
            (None, Some(decision)) if decision.approval == Approval::Ask => Verdict::Ask,
            (None, _) => Verdict::PreApproved,
        }
    }

    /// The command to run, or the refusal.
    pub fn into_prepared(self) -> Result<PreparedCommand> {
        match (self.refusal, self.prepared) {
            (Some(refusal), _) => Err(refusal.error),
            (None, Some(prepared)) => Ok(prepared),
            (None, None) => Err(Error::InvalidInput("the command was not prepared".into())),
        }
    }
}

impl ShellToolset {
    /// Builds the policy for `cwd` (an existing directory: the child's cwd). Calls run
    /// unconfined until [`with_sandbox`](Self::with_sandbox) gives them a sandbox.
    /// `CONFIG_INVALID` for patterns that cannot be split, are empty or would allow a shell,
    /// and for invalid timeouts, caps or passthrough names.
    pub fn new(cwd: &Path, config: &ShellConfig) -> Result<Self> {
        let engine = Engine::new(
            cwd,
            &[],
            &config.env_passthrough,
            config.timeout,
            config.max_output_bytes.map(|cap| cap.0),
        )?;
        let rules = RuleSet::new(&config.rules, config.default, &engine)?;
        Ok(Self {
            engine,
            rules,
            programs: ProgramCache::default(),
        })
    }

    /// Runs every call under `sandbox` (`None`: unconfined, as `sandbox: false` asks).
    pub fn with_sandbox(
        mut self,
        sandbox: Option<std::sync::Arc<crate::sandbox::Sandbox>>,
    ) -> Self {
        self.engine.set_sandbox(sandbox);
        self
    }

    /// The sandbox calls run under.
    pub fn sandbox(&self) -> Option<&std::sync::Arc<crate::sandbox::Sandbox>> {
        self.engine.sandbox()
    }

    /// The canonical work directory.
    pub fn work_dir(&self) -> &Path {
        self.engine.work_dir()
    }

    /// Runs every check on `command`, in order: syntax (splitting), shell/trampoline, rules,
    /// program (found on PATH), arguments, paths. Never fails: refusals are in the result.
    pub fn explain(&self, command: &str) -> Explanation {
        let mut explanation = Explanation {
            command: command.to_string(),
            argv: Vec::new(),
            program: None,
            decision: None,
            refusal: None,
            prepared: None,
        };
        if let Err(refusal) = self.evaluate(command, &mut explanation) {
            explanation.refusal = Some(refusal);
        }
        explanation
    }

    /// Whether a human must approve `command` first: only when every check passes and the
    /// rules say `ask`. A refused or blocked command needs no prompt; it fails when run.
    pub fn needs_approval(&self, command: &str) -> bool {
        self.explain(command).verdict() == Verdict::Ask
    }

    /// The command to run, or the error of the layer that refused it (`COMMAND_BLOCKED` for a
    /// blocked rule or an unmatched command without a default).
    pub fn prepare(&self, command: &str) -> Result<PreparedCommand> {
        self.explain(command).into_prepared()
    }

    fn evaluate(&self, command: &str, out: &mut Explanation) -> std::result::Result<(), Refusal> {
        out.argv = split_command(command).map_err(|error| Refusal::new(Layer::Syntax, error))?;
        let Some((program_text, args)) = out.argv.split_first() else {
            return Err(Refusal::new(
                Layer::Syntax,
                Error::InvalidInput(
                    "the command is empty; give a program and its arguments".into(),
                ),
            ));
        };
        let program = self.programs.resolve(&self.engine, program_text);
        out.program = program.as_ref().ok().map(|program| program.path.clone());
        self.engine
            .check_not_trampoline(program_text, program.as_ref().ok())
            .map_err(|error| Refusal::new(Layer::ShellOrTrampoline, error))?;
        let key = ProgramKey::new(program_text, program.as_ref().ok());
        let decision = self.rules.decide(&key, args);
        let blocked = decision.approval == Approval::Blocked;
        out.decision = Some(decision);
        if blocked {
            return Err(Refusal::new(Layer::Rules, self.blocked(command, out)));
        }
        let program = program.map_err(|error| Refusal::new(Layer::Program, error))?;
        self.engine.check_arguments(&program, args)?;
        out.prepared = Some(PreparedCommand::new(
            self.engine.request(&program.path, args, None),
            None,
        ));
        Ok(())
    }

    fn blocked(&self, command: &str, out: &Explanation) -> Error {
        let source = out.decision.as_ref().map(|decision| &decision.source);
        let why = match source {
            Some(DecisionSource::Rule(rule)) => format!(
                "is blocked by rules[{}] (pattern '{}')",
                rule.index, rule.pattern
            ),
            Some(DecisionSource::Default) => "matches no rule and the default is blocked".into(),
            _ => "matches no rule and no default is set, so it is blocked".into(),
        };
        Error::CommandBlocked(format!(
            "'{command}' {why}; blocked commands never run, so do not retry it. To allow it, add a rule for it"
        ))
    }
}
