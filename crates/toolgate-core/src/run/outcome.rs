//! How a call the model made is recorded: the decision actually taken and who took it. A call
//! that reached a tool and was refused there by policy is not "preApproved": a command a shell
//! rule blocks is `blocked` (decided by the rule), a path outside the work directory is
//! `refused` (decided by policy), input that fails the tool's schema is `invalid-input`.

use serde::Serialize;

use crate::error::ErrorCode;

/// The decision recorded for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallDecision {
    /// Ran without asking (its approval is `preApproved`, or its rule said so).
    #[serde(rename = "preApproved")]
    PreApproved,
    /// A person approved it.
    Approved,
    /// An earlier "always" answer covered it.
    Always,
    /// A person (or the lack of one) refused it.
    Denied,
    /// Its approval, or a rule, is `blocked`.
    Blocked,
    /// A policy refused it when it ran: a path, a program, an argument, a guardrail.
    Refused,
    /// The model named a tool that does not exist (or is not offered).
    UnknownTool,
    /// The input does not match the tool's schema.
    InvalidInput,
}

impl CallDecision {
    /// Every decision, in documentation order.
    pub const ALL: [CallDecision; 8] = [
        CallDecision::PreApproved,
        CallDecision::Approved,
        CallDecision::Always,
        CallDecision::Denied,
        CallDecision::Blocked,
        CallDecision::Refused,
        CallDecision::UnknownTool,
        CallDecision::InvalidInput,
    ];

    /// The spelling JavaScript sees.
    pub fn as_str(self) -> &'static str {
        match self {
            CallDecision::PreApproved => "preApproved",
            CallDecision::Approved => "approved",
            CallDecision::Always => "always",
            CallDecision::Denied => "denied",
            CallDecision::Blocked => "blocked",
            CallDecision::Refused => "refused",
            CallDecision::UnknownTool => "unknown-tool",
            CallDecision::InvalidInput => "invalid-input",
        }
    }
}

/// Who made the decision recorded for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// The approval configuration (a toolset or worker `approval` block, a default).
    Config,
    /// A per-call rule: a shell rule, a `deny_commands` guardrail, a tool's own `needsApproval`.
    Rule,
    /// The person who answered the approval request.
    User,
    /// A command-line flag that answers every request without asking (`--yes`, `--deny`); the
    /// record names it (`flag`). A flag is not a person.
    Flag,
    /// A rule saved in the project permissions file (`toolgate.permissions.yaml`) from an
    /// earlier answer.
    Saved,
    /// An earlier "always" answer.
    Always,
    /// Nobody could be asked, so the request was denied (fail closed).
    NoHandler,
    /// A policy of the tool: path confinement, allowlist, argument checks, output guardrails,
    /// the sandbox.
    Policy,
    /// The tool's input schema, or the list of tools the model was offered.
    Schema,
}

impl DecidedBy {
    /// Every source, in documentation order.
    pub const ALL: [DecidedBy; 9] = [
        DecidedBy::Config,
        DecidedBy::Rule,
        DecidedBy::User,
        DecidedBy::Flag,
        DecidedBy::Saved,
        DecidedBy::Always,
        DecidedBy::NoHandler,
        DecidedBy::Policy,
        DecidedBy::Schema,
    ];

    /// The spelling JavaScript sees.
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Config => "config",
            DecidedBy::Rule => "rule",
            DecidedBy::User => "user",
            DecidedBy::Flag => "flag",
            DecidedBy::Saved => "saved",
            DecidedBy::Always => "always",
            DecidedBy::NoHandler => "no-handler",
            DecidedBy::Policy => "policy",
            DecidedBy::Schema => "schema",
        }
    }
}

/// What an error a tool raised says about the call: it was refused, and by whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub decision: CallDecision,
    pub decided_by: DecidedBy,
}

/// The refusal an error code stands for, or `None` when the tool ran and failed (a timeout, a
/// non-zero exit, an I/O error): then the call keeps the decision that let it run.
pub fn refusal_of(code: ErrorCode) -> Option<Refusal> {
    let (decision, decided_by) = match code {
        ErrorCode::CommandBlocked | ErrorCode::PathBlocked => {
            (CallDecision::Blocked, DecidedBy::Rule)
        }
        ErrorCode::ToolBlocked => (CallDecision::Blocked, DecidedBy::Config),
        ErrorCode::GuardrailBlocked => (CallDecision::Refused, DecidedBy::Rule),
        ErrorCode::PathOutsideRoot
        | ErrorCode::BinaryNotAllowed
        | ErrorCode::ShellNotAllowed
        | ErrorCode::ArgumentRejected
        | ErrorCode::OutputBlocked
        | ErrorCode::SandboxUnavailable => (CallDecision::Refused, DecidedBy::Policy),
        ErrorCode::ApprovalDenied => (CallDecision::Denied, DecidedBy::User),
        ErrorCode::InvalidInput => (CallDecision::InvalidInput, DecidedBy::Schema),
        ErrorCode::ToolNotFound => (CallDecision::UnknownTool, DecidedBy::Schema),
        ErrorCode::BinaryNotFound
        | ErrorCode::SpawnFailed
        | ErrorCode::Timeout
        | ErrorCode::ToolFailed
        | ErrorCode::ConfigInvalid
        | ErrorCode::ModuleInvalid
        | ErrorCode::FileNotFound
        | ErrorCode::IoError
        | ErrorCode::StateInvalid
        | ErrorCode::InternalError => return None,
    };
    Some(Refusal {
        decision,
        decided_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_not_recorded_as_runs() {
        let blocked = refusal_of(ErrorCode::CommandBlocked).unwrap();
        assert_eq!(blocked.decision, CallDecision::Blocked);
        assert_eq!(blocked.decided_by, DecidedBy::Rule);
        let path_rule = refusal_of(ErrorCode::PathBlocked).unwrap();
        assert_eq!(path_rule.decision, CallDecision::Blocked);
        assert_eq!(path_rule.decided_by, DecidedBy::Rule);
        for code in [
            ErrorCode::PathOutsideRoot,
            ErrorCode::BinaryNotAllowed,
            ErrorCode::ShellNotAllowed,
            ErrorCode::ArgumentRejected,
            ErrorCode::GuardrailBlocked,
            ErrorCode::OutputBlocked,
        ] {
            assert_eq!(
                refusal_of(code).unwrap().decision,
                CallDecision::Refused,
                "{code}"
            );
        }
        assert_eq!(
            refusal_of(ErrorCode::InvalidInput).unwrap().decision,
            CallDecision::InvalidInput
        );
        for code in [
            ErrorCode::Timeout,
            ErrorCode::ToolFailed,
            ErrorCode::IoError,
        ] {
            assert!(refusal_of(code).is_none(), "{code}");
        }
    }

    #[test]
    fn spellings_are_distinct() {
        let decisions: std::collections::HashSet<_> =
            CallDecision::ALL.iter().map(|d| d.as_str()).collect();
        assert_eq!(decisions.len(), CallDecision::ALL.len());
        let sources: std::collections::HashSet<_> =
            DecidedBy::ALL.iter().map(|d| d.as_str()).collect();
        assert_eq!(sources.len(), DecidedBy::ALL.len());
        assert_eq!(
            serde_json::to_string(&CallDecision::PreApproved).unwrap(),
            "\"preApproved\""
        );
        assert_eq!(
            serde_json::to_string(&CallDecision::UnknownTool).unwrap(),
            "\"unknown-tool\""
        );
    }
}
