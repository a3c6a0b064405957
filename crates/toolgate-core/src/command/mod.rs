//! The command policy: what `cli_execute` and the shell toolset may run, and how.
//!
//! Both share one engine ([`engine`]): programs are found once and refused when they are shells
//! or trampolines (by the name asked for, by the real basename, by file identity, and — for the
//! dynamic loader — by ELF headers); arguments are refused for shell syntax, control
//! characters, `file:` URLs and git's command transports, and for what a few programs would
//! make of them ([`programs`]: curl's URL globs and option files); every piece of an argument
//! that could name a file is confined to the work directory (plus read roots), URL-shaped or
//! not; the child gets a reduced environment, cwd = the work directory, a private HOME/TMPDIR
//! per call, the tool's kernel sandbox, an output cap and a timeout that kills its process
//! group. `cli_execute` adds an allowlist and regex guardrails; the shell toolset adds POSIX
//! word splitting without a shell and approval rules that identify programs by file. What a
//! program runs by its own means (`indirection`: git's aliases and configuration, the
//! `exec`/`run` forms of runners, `make`) is judged like a command of its own, by the same rules
//! or the same allowlist. The command policies of the workers that call a worker bind its
//! commands too, strictest wins ([`callers`]).

mod arguments;
pub mod callers;
mod cli_execute;
pub mod config;
mod engine;
mod environment;
mod git;
mod guardrails;
mod indirection;
mod options;
mod paths;
mod prepared;
mod program;
mod programs;
mod rules;
mod runners;
mod runs;
mod shell;
mod split;
mod trampoline;

#[cfg(test)]
mod tests;

pub use callers::{CallerCommands, CallerLayer};
pub use cli_execute::{BinaryAvailability, CliExecute};
pub use config::{Approval, CliExecuteConfig, ShellConfig, ShellRule};
pub use guardrails::REDACTED;
pub use options::{CliExecuteOptions, ShellOptions};
pub use prepared::{CommandOutput, PreparedCommand, RunningCommand};
pub use rules::{DecisionSource, RuleDecision, RuleMatch};
pub use shell::{Explanation, ShellToolset, Verdict};
pub use split::split_command;
pub use trampoline::refusal_reason as shell_or_trampoline_reason;

use crate::error::Error;

/// The check that refused a command, in the order the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// Splitting the command string (shell syntax, quotes).
    Syntax,
    /// The `cli_execute` allowlist.
    Allowlist,
    /// Shells and trampolines.
    ShellOrTrampoline,
    /// Shell rules (`blocked`, or no rule and no default).
    Rules,
    /// Finding the program.
    Program,
    /// Argument text (`$(`, backticks, CR, LF, NUL, `file:` URLs, `ext::`/`fd::`) and what the
    /// program would make of it (curl's URL globs, option files).
    Arguments,
    /// Path confinement.
    Paths,
    /// `cli_execute` `deny_commands`.
    Guardrails,
}

impl Layer {
    /// A short stable name, used by `toolgate check` and `explainCommand`.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Syntax => "syntax",
            Layer::Allowlist => "allowlist",
            Layer::ShellOrTrampoline => "shell-or-trampoline",
            Layer::Rules => "rules",
            Layer::Program => "program",
            Layer::Arguments => "arguments",
            Layer::Paths => "paths",
            Layer::Guardrails => "guardrails",
        }
    }
}

/// A refusal: the error (with its stable code) and the layer that produced it.
#[derive(Debug)]
pub struct Refusal {
    pub layer: Layer,
    pub error: Error,
}

impl Refusal {
    pub fn new(layer: Layer, error: Error) -> Self {
        Self { layer, error }
    }
}
