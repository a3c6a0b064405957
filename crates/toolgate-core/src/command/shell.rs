//! The shell toolset: a command string split without a shell, the program found on PATH, and
//! an approval from the rules. Path confinement, environment, caps and timeout are the same
//! engine as `cli_execute`.

use std::path::{Path, PathBuf};

use super::callers::{CallerCommands, CallerShell, RunCommand};
use super::config::{Approval, ShellConfig};
use super::engine::{in_command, Engine, ProgramCache};
use super::indirection::{too_deep, MAX_DEPTH, MAX_JUDGED};
use super::prepared::PreparedCommand;
use super::program::Program;
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
    /// The command policies of the workers that call this toolset's worker.
    callers: CallerCommands,
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

/// A calling worker's rules bind the workers it calls.
impl CallerShell for ShellToolset {
    fn rules(&self) -> &RuleSet {
        &self.rules
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
            callers: CallerCommands::default(),
        })
    }

    /// The programs the rules name that a command may run (not `blocked`), found as a call
    /// finds them (their real files): for `toolgate check --sandbox`, which lists what each is
    /// granted. A program the `default` lets run is granted the same way at its call.
    pub fn programs(&self) -> Vec<std::path::PathBuf> {
        let mut programs: Vec<std::path::PathBuf> = Vec::new();
        for name in self.rules.runnable_programs() {
            if let Ok(program) = self.engine.resolve_program(name) {
                if !programs.contains(&program.real) {
                    programs.push(program.real);
                }
            }
        }
        programs
    }

    /// Binds every command to the command policies of the workers that call this toolset's
    /// worker (see [`super::callers`]).
    pub fn with_callers(mut self, callers: CallerCommands) -> Self {
        self.callers = callers;
        self
    }

    /// The command policies of the calling workers this toolset is bound by.
    pub fn callers(&self) -> &CallerCommands {
        &self.callers
    }

    /// Runs every call under `sandbox` (`None`: unconfined, as `sandbox: false` asks).
    pub fn with_sandbox(
        mut self,
        sandbox: Option<std::sync::Arc<crate::sandbox::Sandbox>>,
    ) -> Self {
        self.engine.set_sandbox(sandbox);
        self
    }

    /// Replaces the sandbox calls run under (a worker plan prepares it again once it knows
    /// every protected path of its graph).
    pub fn set_sandbox(&mut self, sandbox: Option<std::sync::Arc<crate::sandbox::Sandbox>>) {
        self.engine.set_sandbox(sandbox);
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
        let argv = out.argv.clone();
        let Some((program_text, args)) = argv.split_first() else {
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
        let found = program.as_ref().ok();
        let mut seen = Seen::default();
        let own = judge(
            &self.rules,
            &self.engine,
            &self.programs,
            &argv,
            found,
            0,
            &mut seen,
        )?;
        let by_callers = self.callers.decide(|rules| {
            judge(
                rules,
                &self.engine,
                &self.programs,
                &argv,
                found,
                0,
                &mut Seen::default(),
            )
        })?;
        let decision = CallerCommands::stricter(own, by_callers);
        let blocked = decision.approval == Approval::Blocked;
        out.decision = Some(decision);
        if blocked {
            return Err(Refusal::new(Layer::Rules, self.blocked(command, out)));
        }
        let program = program.map_err(|error| Refusal::new(Layer::Program, error))?;
        if !self.callers.is_empty() {
            let mut commands = vec![RunCommand {
                argv: &argv,
                program: Some(&program),
                within: None,
            }];
            commands.extend(seen.inner.iter().map(|found| RunCommand {
                argv: &found.argv,
                program: found.program.as_ref(),
                within: Some(&found.within),
            }));
            self.callers
                .check_commands(&commands, seen.unknowable.as_deref())?;
        }
        self.engine.check_arguments(&program, args)?;
        for found in &seen.inner {
            self.engine.check_inner_arguments(
                found.program.as_ref(),
                &found.argv[1..],
                &found.within,
            )?;
        }
        out.prepared = Some(PreparedCommand::new(
            self.engine.request(&program.path, args, None),
            self.callers.output_guardrails(),
        ));
        Ok(())
    }

    fn blocked(&self, command: &str, out: &Explanation) -> Error {
        let Some(decision) = out.decision.as_ref() else {
            return Error::CommandBlocked(format!("'{command}' is blocked"));
        };
        let why = match (&decision.source, &decision.caller) {
            (DecisionSource::Rule(rule), None) => format!(
                "is blocked by rules[{}] (pattern '{}')",
                rule.index, rule.pattern
            ),
            (DecisionSource::Rule(rule), Some(caller)) => format!(
                "is blocked by rules[{}] (pattern '{}') of the shell toolset of {caller}",
                rule.index, rule.pattern
            ),
            (DecisionSource::Default, None) => "matches no rule and the default is blocked".into(),
            (DecisionSource::Default, Some(caller)) => format!(
                "matches no rule of the shell toolset of {caller}, whose default is blocked"
            ),
            (DecisionSource::NoDefault, None) => {
                "matches no rule and no default is set, so it is blocked".into()
            }
            (DecisionSource::NoDefault, Some(caller)) => format!(
                "matches no rule of the shell toolset of {caller}, which has no default, so it is blocked"
            ),
        };
        let fix = match &decision.caller {
            Some(_) => "A calling worker's command rules bind every worker it calls: to allow it, add a rule for it to that worker's shell toolset",
            None => "To allow it, add a rule for it",
        };
        let message = match &decision.via {
            Some(via) if via.contains("may run anything") => {
                let could = match &decision.source {
                    DecisionSource::Rule(rule) => format!(
                        "what rules[{}] (pattern '{}') blocks",
                        rule.index, rule.pattern
                    ),
                    DecisionSource::Default => {
                        "commands no rule allows, and the default is blocked".into()
                    }
                    DecisionSource::NoDefault => {
                        "commands no rule allows, and without a default they are blocked".into()
                    }
                };
                let whose = decision
                    .caller
                    .as_ref()
                    .map(|caller| format!(" (the shell toolset of {caller}, which binds every worker it calls)"))
                    .unwrap_or_default();
                format!(
                    "'{command}' {via}; it could run {could}{whose}, so it is blocked too; blocked commands never run, so do not retry it. Run the commands it would run yourself, one by one, so that the rules judge each"
                )
            }
            Some(via) => format!(
                "'{command}' {via}, which {why}; blocked commands never run, so do not retry it. {fix}"
            ),
            None => format!(
                "'{command}' {why}; blocked commands never run, so do not retry it. {fix}"
            ),
        };
        Error::CommandBlocked(message)
    }
}

/// A command another command runs, for the argument checks and the callers' allowlists.
pub(crate) struct InnerCommand {
    pub argv: Vec<String>,
    pub program: Option<Program>,
    /// Which command it is, for messages.
    pub within: String,
}

/// What judging a command saw besides its decision.
#[derive(Default)]
pub(crate) struct Seen {
    /// How many commands were judged (bounded by [`MAX_JUDGED`]).
    judged: usize,
    /// The commands it runs.
    pub inner: Vec<InnerCommand>,
    /// Why it may also run something toolgate cannot see, if it may.
    pub unknowable: Option<String>,
}

/// The decision `rules` make for `argv` (its program as found, when it was): its own rule,
/// made stricter by every command it runs — judged the same way, recursively — and, when it
/// may run something toolgate cannot see, by the strictest rule of all. What it runs is
/// collected in `seen`. The rules are a toolset's own, or a calling worker's.
pub(crate) fn judge(
    rules: &RuleSet,
    engine: &Engine,
    programs: &ProgramCache,
    argv: &[String],
    program: Option<&Program>,
    depth: usize,
    seen: &mut Seen,
) -> std::result::Result<RuleDecision, Refusal> {
    let Some((text, args)) = argv.split_first() else {
        return Err(Refusal::new(
            Layer::Syntax,
            Error::InvalidInput("a command runs an empty command".into()),
        ));
    };
    let mut decision = rules.decide(&ProgramKey::new(text, program), args);
    let runs = engine.runs(text, program, args)?;
    let shown = argv.join(" ");
    if let Some(why) = runs.unknowable {
        let mut strictest = rules.strictest();
        strictest.via = Some(format!("may run anything: {why}"));
        decision = stricter(decision, strictest);
        if seen.unknowable.is_none() {
            seen.unknowable = Some(why);
        }
    }
    for found in runs.commands {
        seen.judged += 1;
        if depth + 1 >= MAX_DEPTH || seen.judged > MAX_JUDGED {
            return Err(too_deep(argv));
        }
        let Some(inner_text) = found.argv.first() else {
            continue;
        };
        let inner_shown = found.argv.join(" ");
        let within = format!("'{inner_shown}', which '{shown}' runs");
        let inner_program = programs.resolve(engine, inner_text).ok();
        engine
            .check_not_trampoline(inner_text, inner_program.as_ref())
            .map_err(|error| Refusal::new(Layer::ShellOrTrampoline, in_command(error, &within)))?;
        let mut inner_decision = judge(
            rules,
            engine,
            programs,
            &found.argv,
            inner_program.as_ref(),
            depth + 1,
            seen,
        )?;
        inner_decision.via = Some(match inner_decision.via.take() {
            Some(deeper) => format!("runs '{inner_shown}' ({}), which {deeper}", found.via),
            None => format!("runs '{inner_shown}' ({})", found.via),
        });
        seen.inner.push(InnerCommand {
            argv: found.argv,
            program: inner_program,
            within,
        });
        decision = stricter(decision, inner_decision);
    }
    Ok(decision)
}

/// The stricter of two decisions (the first of equals).
fn stricter(current: RuleDecision, other: RuleDecision) -> RuleDecision {
    if other.approval > current.approval {
        other
    } else {
        current
    }
}
