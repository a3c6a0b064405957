//! The one error type of the core. Every variant has a stable code (what JavaScript sees as
//! `err.code`) and a message that says what was refused and what to change.

use std::path::PathBuf;

/// Result alias used throughout the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the core can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path resolved (symlinks followed) to a place outside the allowed root.
    #[error(
        "path '{path}' is outside the allowed root '{root}'{detail}; use a path inside the root"
    )]
    PathOutsideRoot {
        path: String,
        root: PathBuf,
        /// Extra context such as "(through symlink 'a' -> '/etc')"; may be empty.
        detail: String,
    },

    /// A binary is not on the allowlist.
    #[error("binary '{binary}' is not allowed; allowed binaries: {allowed}. Add it to allowed_binaries to permit it")]
    BinaryNotAllowed { binary: String, allowed: String },

    /// A shell or trampoline (a program that runs other programs) was asked for.
    #[error("'{binary}' is refused: {reason}")]
    ShellNotAllowed { binary: String, reason: String },

    /// The program does not exist or is not on PATH.
    #[error("program '{program}' was not found{searched}; install it or give its absolute path")]
    BinaryNotFound { program: String, searched: String },

    /// The process could not be started for another reason (permission, bad cwd, bad exec format).
    #[error("could not start '{program}' in '{cwd}': {reason}")]
    SpawnFailed {
        program: String,
        cwd: String,
        reason: String,
    },

    /// An argument contains something that only makes sense to a shell, or a forbidden URL.
    #[error("{0}")]
    ArgumentRejected(String),

    /// A shell rule blocks the command.
    #[error("{0}")]
    CommandBlocked(String),

    /// A deny_commands guardrail matched.
    #[error("{0}")]
    GuardrailBlocked(String),

    /// A deny_output guardrail with action block matched the output.
    #[error("{0}")]
    OutputBlocked(String),

    /// The operation ran out of time.
    #[error("{0}")]
    Timeout(String),

    /// The tool's approval decision is `blocked`.
    #[error("{0}")]
    ToolBlocked(String),

    /// A call that needed approval was not approved for what it does.
    #[error("{0}")]
    ApprovalDenied(String),

    /// A path rule of a file toolset (`approval.paths`) blocks the path.
    #[error("{0}")]
    PathBlocked(String),

    /// The input does not match what the tool or function accepts.
    #[error("{0}")]
    InvalidInput(String),

    /// A named tool does not exist.
    #[error("{0}")]
    ToolNotFound(String),

    /// A tool ran and reported failure.
    #[error("{0}")]
    ToolFailed(String),

    /// A configuration (worker file, toolset options) is invalid.
    #[error("{0}")]
    ConfigInvalid(String),

    /// A file the caller named does not exist.
    #[error("{0}")]
    FileNotFound(String),

    /// An operating-system error on a file operation, with the path it concerned.
    #[error("{action} '{path}' failed: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The kernel sandbox a tool requires cannot be applied (kernel support or launcher missing).
    #[error("{0}")]
    SandboxUnavailable(String),

    /// A run state handed to `resumeWorker` was changed, replayed, issued for another worker or
    /// with another secret, or is answered with something it never asked.
    #[error("{0}")]
    StateInvalid(String),

    /// A bug: toolgate itself failed (a panic caught at the Node boundary). The host survives;
    /// the message says where, so the bug can be reported.
    #[error("toolgate failed internally ({0}); this is a bug, please report it with the input that caused it")]
    Internal(String),
}

/// The stable code of every error toolgate raises, in Rust or in TypeScript: what JavaScript
/// sees as `err.code`. This is the only list; the Node binding generates its TypeScript union
/// from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    PathOutsideRoot,
    BinaryNotAllowed,
    ShellNotAllowed,
    BinaryNotFound,
    SpawnFailed,
    ArgumentRejected,
    CommandBlocked,
    GuardrailBlocked,
    OutputBlocked,
    Timeout,
    /// A tool whose approval is `blocked` was called.
    ToolBlocked,
    /// A file tool was called on a path its toolset's `approval.paths` blocks.
    PathBlocked,
    /// A human (or the lack of one) refused a call that needed approval.
    ApprovalDenied,
    InvalidInput,
    ToolNotFound,
    ToolFailed,
    ConfigInvalid,
    /// A tools module (`tools.ts`) cannot be loaded or exports something that is not a tool.
    ModuleInvalid,
    FileNotFound,
    IoError,
    /// The kernel sandbox a tool requires is not available here.
    SandboxUnavailable,
    /// A run state was tampered with, replayed, or answered with foreign answers.
    StateInvalid,
    InternalError,
}

impl ErrorCode {
    /// Every code, in documentation order.
    pub const ALL: [ErrorCode; 23] = [
        ErrorCode::PathOutsideRoot,
        ErrorCode::BinaryNotAllowed,
        ErrorCode::ShellNotAllowed,
        ErrorCode::BinaryNotFound,
        ErrorCode::SpawnFailed,
        ErrorCode::ArgumentRejected,
        ErrorCode::CommandBlocked,
        ErrorCode::GuardrailBlocked,
        ErrorCode::OutputBlocked,
        ErrorCode::Timeout,
        ErrorCode::ToolBlocked,
        ErrorCode::PathBlocked,
        ErrorCode::ApprovalDenied,
        ErrorCode::InvalidInput,
        ErrorCode::ToolNotFound,
        ErrorCode::ToolFailed,
        ErrorCode::ConfigInvalid,
        ErrorCode::ModuleInvalid,
        ErrorCode::FileNotFound,
        ErrorCode::IoError,
        ErrorCode::SandboxUnavailable,
        ErrorCode::StateInvalid,
        ErrorCode::InternalError,
    ];

    /// The spelling JavaScript sees (`PATH_OUTSIDE_ROOT`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::PathOutsideRoot => "PATH_OUTSIDE_ROOT",
            ErrorCode::BinaryNotAllowed => "BINARY_NOT_ALLOWED",
            ErrorCode::ShellNotAllowed => "SHELL_NOT_ALLOWED",
            ErrorCode::BinaryNotFound => "BINARY_NOT_FOUND",
            ErrorCode::SpawnFailed => "SPAWN_FAILED",
            ErrorCode::ArgumentRejected => "ARGUMENT_REJECTED",
            ErrorCode::CommandBlocked => "COMMAND_BLOCKED",
            ErrorCode::GuardrailBlocked => "GUARDRAIL_BLOCKED",
            ErrorCode::OutputBlocked => "OUTPUT_BLOCKED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::ToolBlocked => "TOOL_BLOCKED",
            ErrorCode::PathBlocked => "PATH_BLOCKED",
            ErrorCode::ApprovalDenied => "APPROVAL_DENIED",
            ErrorCode::InvalidInput => "INVALID_INPUT",
            ErrorCode::ToolNotFound => "TOOL_NOT_FOUND",
            ErrorCode::ToolFailed => "TOOL_FAILED",
            ErrorCode::ConfigInvalid => "CONFIG_INVALID",
            ErrorCode::ModuleInvalid => "MODULE_INVALID",
            ErrorCode::FileNotFound => "FILE_NOT_FOUND",
            ErrorCode::IoError => "IO_ERROR",
            ErrorCode::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            ErrorCode::StateInvalid => "STATE_INVALID",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part of toolgate that raised an error, so that a caller can tell a refused
/// configuration from a refused call, a process failure or a bug without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorLayer {
    /// Options, worker files, toolset configuration.
    Config,
    /// The approval model (a blocked tool, a denied call).
    Approval,
    /// Input given to a tool or a function.
    Input,
    /// Path confinement.
    Paths,
    /// The command policy of `cli_execute` and `shell` (allowlist, rules, arguments, guardrails).
    Command,
    /// Starting and running processes.
    Process,
    /// The file tools.
    Files,
    /// Tools: executable tools, tools modules, tool lookup.
    Tools,
    /// The kernel sandbox around processes.
    Sandbox,
    /// A bug in toolgate.
    Internal,
}

impl ErrorLayer {
    /// Every layer.
    pub const ALL: [ErrorLayer; 10] = [
        ErrorLayer::Config,
        ErrorLayer::Approval,
        ErrorLayer::Input,
        ErrorLayer::Paths,
        ErrorLayer::Command,
        ErrorLayer::Process,
        ErrorLayer::Files,
        ErrorLayer::Tools,
        ErrorLayer::Sandbox,
        ErrorLayer::Internal,
    ];

    /// The spelling JavaScript sees (`config`, `paths`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorLayer::Config => "config",
            ErrorLayer::Approval => "approval",
            ErrorLayer::Input => "input",
            ErrorLayer::Paths => "paths",
            ErrorLayer::Command => "command",
            ErrorLayer::Process => "process",
            ErrorLayer::Files => "files",
            ErrorLayer::Tools => "tools",
            ErrorLayer::Sandbox => "sandbox",
            ErrorLayer::Internal => "internal",
        }
    }
}

impl ErrorCode {
    /// The layer an error with this code comes from.
    pub fn layer(self) -> ErrorLayer {
        match self {
            ErrorCode::ConfigInvalid => ErrorLayer::Config,
            ErrorCode::ToolBlocked
            | ErrorCode::PathBlocked
            | ErrorCode::ApprovalDenied
            | ErrorCode::StateInvalid => ErrorLayer::Approval,
            ErrorCode::InvalidInput => ErrorLayer::Input,
            ErrorCode::PathOutsideRoot => ErrorLayer::Paths,
            ErrorCode::BinaryNotAllowed
            | ErrorCode::ShellNotAllowed
            | ErrorCode::ArgumentRejected
            | ErrorCode::CommandBlocked
            | ErrorCode::GuardrailBlocked
            | ErrorCode::OutputBlocked => ErrorLayer::Command,
            ErrorCode::BinaryNotFound | ErrorCode::SpawnFailed | ErrorCode::Timeout => {
                ErrorLayer::Process
            }
            ErrorCode::FileNotFound | ErrorCode::IoError => ErrorLayer::Files,
            ErrorCode::ToolNotFound | ErrorCode::ToolFailed | ErrorCode::ModuleInvalid => {
                ErrorLayer::Tools
            }
            ErrorCode::SandboxUnavailable => ErrorLayer::Sandbox,
            ErrorCode::InternalError => ErrorLayer::Internal,
        }
    }
}

impl Error {
    /// The stable code JavaScript sees as `err.code` (spelled as in [`ErrorCode::as_str`]).
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The stable code as an enum.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Error::PathOutsideRoot { .. } => ErrorCode::PathOutsideRoot,
            Error::BinaryNotAllowed { .. } => ErrorCode::BinaryNotAllowed,
            Error::ShellNotAllowed { .. } => ErrorCode::ShellNotAllowed,
            Error::BinaryNotFound { .. } => ErrorCode::BinaryNotFound,
            Error::SpawnFailed { .. } => ErrorCode::SpawnFailed,
            Error::ArgumentRejected(_) => ErrorCode::ArgumentRejected,
            Error::CommandBlocked(_) => ErrorCode::CommandBlocked,
            Error::GuardrailBlocked(_) => ErrorCode::GuardrailBlocked,
            Error::OutputBlocked(_) => ErrorCode::OutputBlocked,
            Error::Timeout(_) => ErrorCode::Timeout,
            Error::ToolBlocked(_) => ErrorCode::ToolBlocked,
            Error::PathBlocked(_) => ErrorCode::PathBlocked,
            Error::ApprovalDenied(_) => ErrorCode::ApprovalDenied,
            Error::InvalidInput(_) => ErrorCode::InvalidInput,
            Error::ToolNotFound(_) => ErrorCode::ToolNotFound,
            Error::ToolFailed(_) => ErrorCode::ToolFailed,
            Error::ConfigInvalid(_) => ErrorCode::ConfigInvalid,
            Error::FileNotFound(_) => ErrorCode::FileNotFound,
            Error::Io { .. } => ErrorCode::IoError,
            Error::SandboxUnavailable(_) => ErrorCode::SandboxUnavailable,
            Error::StateInvalid(_) => ErrorCode::StateInvalid,
            Error::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The part of toolgate that raised the error.
    pub fn layer(&self) -> ErrorLayer {
        self.error_code().layer()
    }

    /// Wraps an I/O error with the action and path it concerned; a missing file becomes
    /// `FILE_NOT_FOUND` so callers can tell "not there" from "could not".
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::NotFound {
            return Error::FileNotFound(format!(
                "{action} '{}' failed: no such file or directory",
                path.display()
            ));
        }
        Error::Io {
            action,
            path,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_messages_say_what_to_change() {
        let err = Error::PathOutsideRoot {
            path: "../x".into(),
            root: "/work".into(),
            detail: String::new(),
        };
        assert_eq!(err.code(), "PATH_OUTSIDE_ROOT");
        assert!(err.to_string().contains("use a path inside the root"));

        let err = Error::io(
            "reading",
            "/nope",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(err.code(), "FILE_NOT_FOUND");
        assert!(err.to_string().contains("/nope"));

        let err = Error::io(
            "reading",
            "/root/x",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(err.code(), "IO_ERROR");
        assert_eq!(err.layer(), ErrorLayer::Files);
    }

    #[test]
    fn every_code_is_listed_once_with_a_distinct_spelling() {
        let spellings: std::collections::HashSet<&str> =
            ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(spellings.len(), ErrorCode::ALL.len());
        for code in [
            "APPROVAL_DENIED",
            "MODULE_INVALID",
            "TOOL_BLOCKED",
            "INTERNAL_ERROR",
        ] {
            assert!(spellings.contains(code), "{code}");
        }
        assert_eq!(ErrorCode::ToolBlocked.layer(), ErrorLayer::Approval);
        assert_eq!(
            Error::Internal("x".into()).error_code(),
            ErrorCode::InternalError
        );
    }
}
