//! `cli_execute`: allowlisted binaries run with an argv array, never through a shell.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::callers::{CallerCliExecute, CallerCommands, RunCommand};
use super::config::{Approval, CliExecuteConfig};
use super::engine::{in_command, Engine, ProgramCache};
use super::guardrails::{compile, CommandGuardrails, OutputGuardrails};
use super::indirection::{too_deep, MAX_DEPTH, MAX_JUDGED};
use super::prepared::PreparedCommand;
use super::program::{identity, Program};
use super::rules::{DecisionSource, RuleDecision};
use super::shell::{judge, Seen};
use super::trampoline::refusal_reason;
use super::{Layer, Refusal};
use crate::error::{Error, Result};
use crate::limits::MAX_STDIN_BYTES;

/// Whether an allowlisted binary was found when the tool was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryAvailability {
    /// The name as allowlisted.
    pub name: String,
    /// Where it was found on PATH, or `None`.
    pub path: Option<PathBuf>,
    /// The file that path really is (symlinks resolved).
    pub real_path: Option<PathBuf>,
}

/// The `cli_execute` policy of one tool: built once (binaries resolved, regexes compiled), then
/// used for every call.
#[derive(Debug)]
pub struct CliExecute {
    engine: Engine,
    binaries: Vec<BinaryAvailability>,
    /// Each found binary as resolved when the tool was built; its (device, inode) notices a
    /// swap cheaply.
    programs: Vec<Option<Program>>,
    commands: CommandGuardrails,
    output: Arc<OutputGuardrails>,
    /// The command policies of the workers that call this toolset's worker.
    callers: CallerCommands,
    /// Programs found for the callers' shell rules (a command's inner commands).
    found: ProgramCache,
}

/// A calling worker's allowlist and guardrails bind the workers it calls.
impl CallerCliExecute for CliExecute {
    fn allows(&self, program: &Program) -> bool {
        self.programs.iter().flatten().any(|allowed| {
            (allowed.id.is_some() && allowed.id == program.id) || allowed.real == program.real
        })
    }

    fn available_names(&self) -> Vec<&str> {
        self.available().collect()
    }

    fn command_guardrails(&self) -> &CommandGuardrails {
        &self.commands
    }

    fn output_guardrails(&self) -> &Arc<OutputGuardrails> {
        &self.output
    }
}

impl CliExecute {
    /// The allowed binaries that were found, as a call runs them (their real files): for
    /// `toolgate check --sandbox`, which lists what each is granted.
    pub fn programs(&self) -> Vec<std::path::PathBuf> {
        self.programs
            .iter()
            .flatten()
            .map(|program| program.real.clone())
            .collect()
    }

    /// Builds the policy for `work_dir` (an existing directory: the child's cwd). Calls run
    /// unconfined until [`with_sandbox`](Self::with_sandbox) gives them a sandbox.
    /// `config.read_roots` are taken as given: absolute, or relative to `work_dir`.
    ///
    /// `CONFIG_INVALID` when the allowlist is empty, names a shell or trampoline (also one
    /// reached through a symlink), or names a path; when none of the binaries is found; and for
    /// invalid regexes, timeouts, caps, read roots or passthrough names.
    pub fn new(work_dir: &Path, config: &CliExecuteConfig) -> Result<Self> {
        let engine = Engine::new(
            work_dir,
            &config.read_roots,
            &config.env_passthrough,
            config.timeout,
            config.max_output_bytes.map(|cap| cap.0),
        )?;
        let (commands, output) = compile(&config.guardrails)?;
        if config.allowed_binaries.is_empty() {
            return Err(Error::ConfigInvalid(
                "allowed_binaries is empty; list the programs the model may run, such as [git, jq]"
                    .into(),
            ));
        }
        let mut binaries: Vec<BinaryAvailability> = Vec::new();
        let mut programs = Vec::new();
        for name in &config.allowed_binaries {
            if binaries.iter().any(|known| &known.name == name) {
                continue;
            }
            let (availability, program) = availability_of(&engine, name)?;
            binaries.push(availability);
            programs.push(program);
        }
        if binaries.iter().all(|binary| binary.path.is_none()) {
            let names: Vec<&str> = binaries.iter().map(|binary| binary.name.as_str()).collect();
            return Err(Error::ConfigInvalid(format!(
                "none of allowed_binaries ({}) was found on PATH '{}'; install one or change allowed_binaries",
                names.join(", "),
                engine.search_path()
            )));
        }
        Ok(Self {
            engine,
            binaries,
            programs,
            commands,
            output: Arc::new(output),
            callers: CallerCommands::default(),
            found: ProgramCache::default(),
        })
    }

    /// Binds every call to the command policies of the workers that call this toolset's
    /// worker (see [`super::callers`]).
    pub fn with_callers(mut self, callers: CallerCommands) -> Self {
        self.callers = callers;
        self
    }

    /// The command policies of the calling workers this toolset is bound by.
    pub fn callers(&self) -> &CallerCommands {
        &self.callers
    }

    /// The approval the calling workers' shell rules give a call (`preApproved` when no caller
    /// has shell rules, and for a call that is refused anyway: it fails when run). A call a
    /// caller's rule asks about needs a human's approval first, whatever this toolset's own
    /// approval is.
    pub fn callers_approval(&self, binary: &str, args: &[String]) -> Approval {
        if !self.callers.has_rules() {
            return Approval::PreApproved;
        }
        match self.check_all(binary, args, None) {
            Ok((_, Some(decision))) => decision.approval,
            _ => Approval::PreApproved,
        }
    }

    /// Runs every call under `sandbox` (`None`: unconfined, as `sandbox: false` asks).
    pub fn with_sandbox(mut self, sandbox: Option<Arc<crate::sandbox::Sandbox>>) -> Self {
        self.engine.set_sandbox(sandbox);
        self
    }

    /// Replaces the sandbox calls run under (a worker plan prepares it again once it knows
    /// every protected path of its graph).
    pub fn set_sandbox(&mut self, sandbox: Option<Arc<crate::sandbox::Sandbox>>) {
        self.engine.set_sandbox(sandbox);
    }

    /// The sandbox calls run under.
    pub fn sandbox(&self) -> Option<&Arc<crate::sandbox::Sandbox>> {
        self.engine.sandbox()
    }

    /// Every allowlisted binary, found or not, in allowlist order.
    pub fn availability(&self) -> &[BinaryAvailability] {
        &self.binaries
    }

    /// The names of the binaries that were found: what the model may ask for.
    pub fn available(&self) -> impl Iterator<Item = &str> {
        self.binaries
            .iter()
            .filter(|binary| binary.path.is_some())
            .map(|binary| binary.name.as_str())
    }

    /// The canonical work directory.
    pub fn work_dir(&self) -> &Path {
        self.engine.work_dir()
    }

    /// Checks a call and returns the command to run, or the refusal with the layer that
    /// refused it: `BINARY_NOT_ALLOWED`, `BINARY_NOT_FOUND`, `SHELL_NOT_ALLOWED` (the binary was
    /// replaced by a shell since the tool was built), `ARGUMENT_REJECTED`, `PATH_OUTSIDE_ROOT`,
    /// `GUARDRAIL_BLOCKED`.
    pub fn check(
        &self,
        binary: &str,
        args: &[String],
        stdin: Option<Vec<u8>>,
    ) -> std::result::Result<PreparedCommand, Refusal> {
        self.check_all(binary, args, stdin)
            .map(|(prepared, _)| prepared)
    }

    /// [`check`](Self::check), with the decision of the calling workers' shell rules.
    fn check_all(
        &self,
        binary: &str,
        args: &[String],
        stdin: Option<Vec<u8>>,
    ) -> std::result::Result<(PreparedCommand, Option<RuleDecision>), Refusal> {
        if let Some(bytes) = stdin.as_ref().filter(|bytes| bytes.len() > MAX_STDIN_BYTES) {
            return Err(Refusal::new(
                Layer::Arguments,
                Error::InvalidInput(format!(
                    "stdin is {} bytes; the limit is {MAX_STDIN_BYTES} bytes. Write the data to a file in the work directory and pass its path",
                    bytes.len()
                )),
            ));
        }
        let position = self
            .binaries
            .iter()
            .position(|entry| entry.name == binary)
            .ok_or_else(|| Refusal::new(Layer::Allowlist, self.not_allowed(binary)))?;
        let found = self.programs[position].as_ref().ok_or_else(|| {
            Refusal::new(
                Layer::Program,
                Error::BinaryNotFound {
                    program: binary.to_string(),
                    searched: format!(
                        " on PATH '{}' when the tool was built",
                        self.engine.search_path()
                    ),
                },
            )
        })?;
        // The file behind the path may have been replaced since construction (a symlink
        // re-pointed at a shell): when it is no longer the same file, judge it again.
        let swapped;
        let program = if identity(&found.path) == found.id {
            found
        } else {
            swapped = self.engine.resolve_program_at(&found.path).map_err(|_| {
                Refusal::new(
                    Layer::Program,
                    Error::BinaryNotFound {
                        program: binary.to_string(),
                        searched: format!(
                            " ('{}' is gone since the tool was built)",
                            found.path.display()
                        ),
                    },
                )
            })?;
            self.engine
                .check_not_trampoline(binary, Some(&swapped))
                .map_err(|error| Refusal::new(Layer::ShellOrTrampoline, error))?;
            &swapped
        };
        let mut inner = Vec::new();
        let mut argv = vec![binary.to_string()];
        argv.extend(args.iter().cloned());
        self.check_runs(&argv, program, 0, &mut 0, &mut inner)?;
        self.engine.check_arguments(program, args)?;
        for (argv, program, within) in &inner {
            self.engine
                .check_inner_arguments(Some(program), &argv[1..], within)?;
        }
        self.commands
            .check(binary, args)
            .map_err(|error| Refusal::new(Layer::Guardrails, error))?;
        for (argv, _, within) in &inner {
            self.commands
                .check(&argv[0], &argv[1..])
                .map_err(|error| Refusal::new(Layer::Guardrails, in_command(error, within)))?;
        }
        let decision = self.check_callers(&argv, program, &inner)?;
        let mut output = vec![Arc::clone(&self.output)];
        output.extend(self.callers.output_guardrails());
        Ok((
            PreparedCommand::new(self.engine.request(&program.path, args, stdin), output),
            decision,
        ))
    }

    /// What the calling workers make of a call that passed this toolset's own checks: their
    /// shell rules (`blocked` refuses it; the decision is returned), their allowlists and
    /// their `deny_commands`, over the call and every command it runs.
    fn check_callers(
        &self,
        argv: &[String],
        program: &Program,
        inner: &[(Vec<String>, Program, String)],
    ) -> std::result::Result<Option<RuleDecision>, Refusal> {
        if self.callers.is_empty() {
            return Ok(None);
        }
        let decision = self.callers.decide(|rules| {
            judge(
                rules,
                &self.engine,
                &self.found,
                argv,
                Some(program),
                0,
                &mut Seen::default(),
            )
        })?;
        if let Some(decision) = decision
            .as_ref()
            .filter(|d| d.approval == Approval::Blocked)
        {
            return Err(Refusal::new(
                Layer::Rules,
                blocked_by_caller(&argv.join(" "), decision),
            ));
        }
        let mut commands = vec![RunCommand {
            argv,
            program: Some(program),
            within: None,
        }];
        commands.extend(inner.iter().map(|(argv, program, within)| RunCommand {
            argv,
            program: Some(program),
            within: Some(within),
        }));
        self.callers.check_commands(&commands, None)?;
        Ok(decision)
    }

    /// Refuses what `argv` (run as `program`) would run besides itself unless it is on the
    /// allowlist too, judged the same way; and refuses it outright when it may run something
    /// toolgate cannot see (`make`, `npm run`), since that could be any program. The commands
    /// it runs are collected in `inner` (with the allowlisted program each is) for the
    /// argument checks and the guardrails.
    fn check_runs(
        &self,
        argv: &[String],
        program: &Program,
        depth: usize,
        judged: &mut usize,
        inner: &mut Vec<(Vec<String>, Program, String)>,
    ) -> std::result::Result<(), Refusal> {
        // An inner command a runner names may be empty (`npx --` with nothing after it).
        let Some((text, args)) = argv.split_first() else {
            return Err(Refusal::new(
                Layer::Arguments,
                Error::InvalidInput(
                    "a program that runs another names none here: give the command it should run"
                        .into(),
                ),
            ));
        };
        let runs = self.engine.runs(text, Some(program), args)?;
        let shown = argv.join(" ");
        if let Some(why) = runs.unknowable {
            return Err(Refusal::new(
                Layer::Allowlist,
                Error::CommandBlocked(format!(
                    "'{shown}' may run anything: {why}; it could run programs that are not on allowed_binaries, so it is refused. Call the programs it would run directly (allowlisted)"
                )),
            ));
        }
        for found in runs.commands {
            *judged += 1;
            if depth + 1 >= MAX_DEPTH || *judged > MAX_JUDGED {
                return Err(too_deep(argv));
            }
            let Some(inner_text) = found.argv.first() else {
                continue;
            };
            let within = format!("'{}', which '{shown}' runs", found.argv.join(" "));
            let inner_program = self.allowlisted(inner_text).ok_or_else(|| {
                Refusal::new(
                    Layer::Allowlist,
                    Error::BinaryNotAllowed {
                        binary: inner_text.clone(),
                        allowed: format!(
                            "{} ('{shown}' would run it: {})",
                            self.available().collect::<Vec<_>>().join(", "),
                            found.via
                        ),
                    },
                )
            })?;
            self.engine
                .check_not_trampoline(inner_text, Some(&inner_program))
                .map_err(|error| {
                    Refusal::new(Layer::ShellOrTrampoline, in_command(error, &within))
                })?;
            self.check_runs(&found.argv, &inner_program, depth + 1, judged, inner)?;
            inner.push((found.argv, inner_program, within));
        }
        Ok(())
    }

    /// The allowlisted program `text` names: an allowlisted name that was found, or a path that
    /// is the same file as one.
    fn allowlisted(&self, text: &str) -> Option<Program> {
        if let Some(position) = self.binaries.iter().position(|entry| entry.name == text) {
            return self.programs[position].clone();
        }
        let resolved = self.engine.resolve_program(text).ok()?;
        let id = resolved.id?;
        self.programs
            .iter()
            .flatten()
            .any(|allowed| allowed.id == Some(id))
            .then_some(resolved)
    }

    /// [`check`](Self::check) for callers that only need the error.
    pub fn prepare(
        &self,
        binary: &str,
        args: &[String],
        stdin: Option<Vec<u8>>,
    ) -> Result<PreparedCommand> {
        self.check(binary, args, stdin)
            .map_err(|refusal| refusal.error)
    }

    fn not_allowed(&self, binary: &str) -> Error {
        let allowed: Vec<&str> = self.available().collect();
        let mut allowed = allowed.join(", ");
        if let Some(reason) = refusal_reason(binary) {
            allowed.push_str(&format!(" ('{binary}' never will be: {reason})"));
        }
        Error::BinaryNotAllowed {
            binary: binary.to_string(),
            allowed,
        }
    }
}

/// Resolves one allowlisted name, refusing shells and trampolines under any name.
fn availability_of(engine: &Engine, name: &str) -> Result<(BinaryAvailability, Option<Program>)> {
    if name.is_empty() || name.contains('/') || name.contains('\0') {
        return Err(Error::ConfigInvalid(format!(
            "allowed_binaries entry '{}' is not a program name; give bare names such as 'git' (they are looked up on PATH)",
            name.escape_debug()
        )));
    }
    let program = engine.resolve_program(name).ok();
    engine
        .check_not_trampoline(name, program.as_ref())
        .map_err(|err| {
            Error::ConfigInvalid(format!(
                "allowed_binaries cannot contain '{name}': {}; remove it",
                match &err {
                    Error::ShellNotAllowed { reason, .. } => reason.clone(),
                    other => other.to_string(),
                }
            ))
        })?;
    let availability = BinaryAvailability {
        name: name.to_string(),
        path: program.as_ref().map(|program| program.path.clone()),
        real_path: program.as_ref().map(|program| program.real.clone()),
    };
    Ok((availability, program))
}

/// `COMMAND_BLOCKED` for a call a calling worker's shell rules block.
fn blocked_by_caller(command: &str, decision: &RuleDecision) -> Error {
    let caller = decision.caller.as_deref().unwrap_or("a calling worker");
    let why = match &decision.source {
        DecisionSource::Rule(rule) => format!(
            "is blocked by rules[{}] (pattern '{}') of the shell toolset of {caller}",
            rule.index, rule.pattern
        ),
        DecisionSource::Default => {
            format!("matches no rule of the shell toolset of {caller}, whose default is blocked")
        }
        DecisionSource::NoDefault => format!(
            "matches no rule of the shell toolset of {caller}, which has no default, so it is blocked"
        ),
    };
    let via = decision
        .via
        .as_ref()
        .map(|via| format!(" ({via})"))
        .unwrap_or_default();
    Error::CommandBlocked(format!(
        "'{command}'{via} {why}; a calling worker's command rules bind every worker it calls, and blocked commands never run, so do not retry it. To allow it, add a rule for it to that worker's shell toolset"
    ))
}
