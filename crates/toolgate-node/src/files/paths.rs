//! Path rules (`approval.paths`) as JavaScript sees them: the rules a `FileTools` is built
//! with, the approval of the tool making a call, and the decision the core made for a call.

use std::sync::Arc;

use napi_derive::napi;
use toolgate_core::fs::access::{CallDecision, CallGate, InheritedRules, PathGate, ToolApproval};
use toolgate_core::fs::rules::PathRule as CoreRule;

use crate::enums::Decision;

/// One path rule: a gitignore-style pattern relative to the work directory and its decision.
#[napi(object)]
#[derive(Clone)]
pub struct PathRule {
    pub pattern: String,
    pub approval: Decision,
}

impl From<&CoreRule> for PathRule {
    fn from(rule: &CoreRule) -> Self {
        PathRule {
            pattern: rule.pattern.clone(),
            approval: rule.approval.into(),
        }
    }
}

/// The path rules of a file toolset and where they were written (named in messages, e.g.
/// `code_agent approval.paths`).
#[napi(object)]
#[derive(Clone)]
pub struct PathRules {
    pub place: String,
    pub rules: Vec<PathRule>,
}

impl PathRules {
    /// The rules of `rules` as the core reads them, or `None` for an empty list.
    pub fn from_core(rules: &[CoreRule], place: &str) -> Option<PathRules> {
        (!rules.is_empty()).then(|| PathRules {
            place: place.to_string(),
            rules: rules.iter().map(PathRule::from).collect(),
        })
    }

    /// Compiles the rules for the work directory `root` (`CONFIG_INVALID` names a bad rule).
    pub fn gate(&self, root: &std::path::Path) -> toolgate_core::Result<PathGate> {
        PathGate::new(root, &self.core_rules(), &self.place)
    }

    fn core_rules(&self) -> Vec<CoreRule> {
        self.rules
            .iter()
            .map(|rule| CoreRule {
                pattern: rule.pattern.clone(),
                approval: rule.approval.into(),
            })
            .collect()
    }
}

/// A protected path the file tools refuse to change (`PATH_BLOCKED`, rule `protected`), and
/// why it is protected. The core computes them (`WorkerPlan.fileProtection`, the toolset plans).
#[napi(object)]
#[derive(Clone)]
pub struct ProtectedPath {
    /// Absolute.
    pub path: String,
    pub reason: String,
    /// A path hidden from processes (a `blocked` path rule of this worker or a caller), not
    /// protected configuration: the file tools refuse its files under any other name.
    pub hidden: Option<bool>,
}

/// Paths with the reason each is guarded, as the core takes them.
pub type ReasonedPaths = Vec<(std::path::PathBuf, String)>;

impl ProtectedPath {
    /// The core's list as JavaScript sees it.
    pub fn list(paths: impl IntoIterator<Item = (std::path::PathBuf, String)>) -> Vec<Self> {
        paths
            .into_iter()
            .map(|(path, reason)| ProtectedPath {
                path: path.display().to_string(),
                reason,
                hidden: None,
            })
            .collect()
    }

    /// [`ProtectedPath::list`] of hidden paths.
    pub fn hidden_list(paths: impl IntoIterator<Item = (std::path::PathBuf, String)>) -> Vec<Self> {
        let mut list = Self::list(paths);
        for path in &mut list {
            path.hidden = Some(true);
        }
        list
    }

    /// A JavaScript list as the core reads it: (protected, hidden).
    pub fn core(list: &[ProtectedPath]) -> (ReasonedPaths, ReasonedPaths) {
        let (hidden, protected): (Vec<&ProtectedPath>, Vec<&ProtectedPath>) =
            list.iter().partition(|path| path.hidden == Some(true));
        let core = |paths: Vec<&ProtectedPath>| {
            paths
                .into_iter()
                .map(|path| (path.path.clone().into(), path.reason.clone()))
                .collect()
        };
        (core(protected), core(hidden))
    }
}

/// The path rules of a calling worker and the work directory they are relative to.
#[napi(object)]
#[derive(Clone)]
pub struct CallerPathRules {
    pub root: String,
    pub rules: PathRules,
}

impl CallerPathRules {
    /// Compiles the rules for their work directory (`CONFIG_INVALID` names a bad rule).
    pub fn compile(&self) -> toolgate_core::Result<InheritedRules> {
        InheritedRules::new(
            std::path::Path::new(&self.root),
            &self.rules.core_rules(),
            &self.rules.place,
        )
    }
}

/// The tool making a file call, as its toolset decided it: the decision for paths no rule
/// matches, what no rule may go below, and the decision the call was approved at (a path whose
/// decision rose since is refused with `APPROVAL_DENIED`).
#[napi(object, object_to_js = false)]
#[derive(Clone, Copy)]
pub struct FileCall {
    pub decision: Decision,
    pub path_floor: Option<Decision>,
    pub approved: Option<Decision>,
}

impl FileCall {
    pub fn tool(&self) -> ToolApproval {
        ToolApproval {
            decision: self.decision.into(),
            path_floor: self.path_floor.map(Into::into),
        }
    }

    /// The call's gate over `gate`; without a call, the rules still refuse blocked paths.
    pub fn gate(call: Option<FileCall>, gate: &Arc<PathGate>) -> CallGate {
        let tool = call.map(|call| call.tool()).unwrap_or(ToolApproval {
            decision: toolgate_core::Decision::PreApproved,
            path_floor: None,
        });
        CallGate {
            gate: Arc::clone(gate),
            tool,
            approved: call.and_then(|call| call.approved).map(Into::into),
        }
    }
}

/// What a file-tool call needs under the path rules, and why.
#[napi(object, object_from_js = false)]
pub struct PathDecision {
    pub decision: Decision,
    /// `tool` (no rule matched), `rule`, `floor` (a rule matched but the tool's own approval is
    /// stricter) or `caller-rule`.
    pub by: String,
    /// The deciding rule, e.g. `code_agent approval.paths[0] '.env*' (blocked)`.
    pub rule: Option<String>,
    /// The pattern of the deciding rule.
    pub pattern: Option<String>,
    /// The path that decided, relative to the work directory.
    pub path: Option<String>,
}

impl From<CallDecision> for PathDecision {
    fn from(decided: CallDecision) -> Self {
        PathDecision {
            decision: decided.decision.into(),
            by: decided.by.as_str().to_string(),
            rule: decided.rule.as_ref().map(|rule| rule.describe()),
            pattern: decided.rule.map(|rule| rule.pattern),
            path: decided.path,
        }
    }
}
