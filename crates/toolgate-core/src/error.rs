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
}

impl Error {
    /// The stable code JavaScript sees as `err.code`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::PathOutsideRoot { .. } => "PATH_OUTSIDE_ROOT",
            Error::BinaryNotAllowed { .. } => "BINARY_NOT_ALLOWED",
            Error::ShellNotAllowed { .. } => "SHELL_NOT_ALLOWED",
            Error::BinaryNotFound { .. } => "BINARY_NOT_FOUND",
            Error::SpawnFailed { .. } => "SPAWN_FAILED",
            Error::ArgumentRejected(_) => "ARGUMENT_REJECTED",
            Error::CommandBlocked(_) => "COMMAND_BLOCKED",
            Error::GuardrailBlocked(_) => "GUARDRAIL_BLOCKED",
            Error::OutputBlocked(_) => "OUTPUT_BLOCKED",
            Error::Timeout(_) => "TIMEOUT",
            Error::ToolBlocked(_) => "TOOL_BLOCKED",
            Error::InvalidInput(_) => "INVALID_INPUT",
            Error::ToolNotFound(_) => "TOOL_NOT_FOUND",
            Error::ToolFailed(_) => "TOOL_FAILED",
            Error::ConfigInvalid(_) => "CONFIG_INVALID",
            Error::FileNotFound(_) => "FILE_NOT_FOUND",
            Error::Io { .. } => "IO_ERROR",
            Error::SandboxUnavailable(_) => "SANDBOX_UNAVAILABLE",
        }
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
    }
}
