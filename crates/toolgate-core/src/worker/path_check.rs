//! `toolgate check --path P worker.yaml`: how each file tool of a worker would decide a call on
//! one path, in the order the tools themselves check it: the work-directory confinement first
//! (`PATH_OUTSIDE_ROOT`), then the protected paths (`PATH_BLOCKED`, rule `protected`), then the
//! path rules — the worker's own and those of every worker above it.

use serde::Serialize;
use serde_json::{json, Value};

use super::decide::DecidedTool;
use super::plan::{PlannedWorker, WorkerPlan};
use crate::approval::{Decision, Toolset};
use crate::error::Result;
use crate::fs::access::{decide_call, InheritedRules, PathGate, ToolApproval};
use crate::fs::config::FileApprovalConfig;
use crate::fs::guards::FileGuards;
use crate::path::PathValidator;

/// One file tool's decision for the path.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathCheck {
    /// `filesystem` or `code_agent`.
    pub toolset: &'static str,
    pub tool: String,
    /// What a call on the path gets; `blocked` when a check before the rules refuses it.
    pub decision: Decision,
    /// What decided: `outside-root` (the work-directory confinement), `protected` (a tool that
    /// would change protected configuration), `rule`,
    /// `floor` (a rule matched, the tool's own approval is stricter), `caller-rule`, or `tool`
    /// (no rule matched: the tool's own approval).
    pub by: &'static str,
    /// The rule that decided, in words (`code_agent approval.paths[0] '.env*' (blocked)`), for
    /// `rule`, `floor` and `caller-rule`; `protected` for a protected path.
    pub rule: Option<String>,
    /// The pattern of the deciding rule.
    pub pattern: Option<String>,
    /// The path as judged, relative to the work directory (`null` when it is outside).
    pub path: Option<String>,
    /// The refusal a call gets before any rule is consulted: its code and message.
    pub refusal: Option<PathRefusal>,
}

/// A refusal of the path itself.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathRefusal {
    pub code: &'static str,
    pub message: String,
}

impl WorkerPlan {
    /// How every file tool of the worker at `index` would decide a call naming `path` (relative
    /// to its work directory, or absolute), given the decisions [`WorkerPlan::decide`] made for
    /// that worker (`decided`). Nothing is read or written.
    pub fn check_path(
        &self,
        index: usize,
        path: &str,
        decided: &[DecidedTool],
    ) -> Result<Vec<PathCheck>> {
        let planned = self.worker(index)?;
        let validator = PathValidator::new(&planned.worker.work_dir)?;
        let refusal = validator.resolve(path).err();
        let protected = self.file_protection(index)?;
        let hidden = self.file_hidden(index)?;
        let inherited = self.inherited_rules(planned)?;
        let mut checks = Vec::new();
        for (toolset, name, approval) in [
            (
                Toolset::Filesystem,
                "filesystem",
                planned
                    .worker
                    .toolsets
                    .filesystem
                    .as_ref()
                    .map(|c| c.approval.clone().unwrap_or_default()),
            ),
            (
                Toolset::CodeAgent,
                "code_agent",
                planned
                    .worker
                    .toolsets
                    .code_agent
                    .as_ref()
                    .map(|c| c.approval.clone().unwrap_or_default()),
            ),
        ] {
            let Some(approval) = approval else {
                continue;
            };
            let tools: Vec<&DecidedTool> = decided
                .iter()
                .filter(|tool| tool.toolset == toolset)
                .collect();
            if tools.is_empty() {
                continue;
            }
            let gate = gate(planned, name, &approval, &inherited, &protected, &hidden)?;
            for tool in tools {
                checks.push(match &refusal {
                    Some(err) => PathCheck {
                        toolset: name,
                        tool: tool.name.clone(),
                        decision: Decision::Blocked,
                        by: "outside-root",
                        rule: None,
                        pattern: None,
                        path: None,
                        refusal: Some(PathRefusal {
                            code: err.code(),
                            message: err.to_string(),
                        }),
                    },
                    None => {
                        let decided = decide_call(
                            &gate,
                            &validator,
                            ToolApproval::from(&tool.resolved),
                            &tool.name,
                            &input_naming(&tool.name, path),
                        )?;
                        let by = decided.by.as_str();
                        // A protected path the tool would change: refused before the rules,
                        // with the refusal the call itself gets.
                        let refusal = (by == "protected")
                            .then(|| protected_refusal(&gate, &validator, path))
                            .flatten();
                        PathCheck {
                            toolset: name,
                            tool: tool.name.clone(),
                            decision: decided.decision,
                            by,
                            rule: match by {
                                "protected" => Some("protected".to_string()),
                                _ => decided.rule.as_ref().map(|rule| rule.describe()),
                            },
                            pattern: decided.rule.map(|rule| rule.pattern),
                            path: decided.path,
                            refusal,
                        }
                    }
                });
            }
        }
        Ok(checks)
    }

    /// The path rules of every worker above `planned`, with their work directories.
    fn inherited_rules(&self, planned: &PlannedWorker) -> Result<Vec<InheritedRules>> {
        let mut rules = Vec::new();
        let mut parent = planned.parent;
        while let Some(index) = parent {
            let caller = &self.workers()[index];
            for (name, approval) in [
                (
                    "filesystem",
                    caller
                        .worker
                        .toolsets
                        .filesystem
                        .as_ref()
                        .and_then(|c| c.approval.as_ref()),
                ),
                (
                    "code_agent",
                    caller
                        .worker
                        .toolsets
                        .code_agent
                        .as_ref()
                        .and_then(|c| c.approval.as_ref()),
                ),
            ] {
                if let Some(approval) = approval.filter(|a| !a.paths.is_empty()) {
                    rules.push(InheritedRules::new(
                        &caller.worker.work_dir,
                        &approval.paths,
                        &place(caller, name),
                    )?);
                }
            }
            parent = caller.parent;
        }
        Ok(rules)
    }
}

/// The `PATH_BLOCKED` refusal a call changing the protected `path` gets (issue 22 §2).
fn protected_refusal(
    gate: &PathGate,
    validator: &PathValidator,
    path: &str,
) -> Option<PathRefusal> {
    let absolute = validator.resolve(path).ok()?;
    let guards = gate.guards()?;
    let (protected, reason) = guards.protection_of(&absolute)?;
    let err = guards.protected_error(path, protected, reason);
    Some(PathRefusal {
        code: err.code(),
        message: err.to_string(),
    })
}

fn place(planned: &PlannedWorker, toolset: &str) -> String {
    format!(
        "{}: toolsets.{toolset} approval.paths",
        planned.worker.path.display()
    )
}

fn gate(
    planned: &PlannedWorker,
    toolset: &str,
    approval: &FileApprovalConfig,
    inherited: &[InheritedRules],
    protected: &[(std::path::PathBuf, String)],
    hidden: &[(std::path::PathBuf, String)],
) -> Result<PathGate> {
    let gate = PathGate::new(
        &planned.worker.work_dir,
        &approval.paths,
        &place(planned, toolset),
    )?
    .with_inherited(inherited.to_vec());
    // The same protected paths and identities the file tools are built with.
    let guards = FileGuards::new(&planned.worker.work_dir, protected, hidden, &gate)?;
    Ok(gate.with_guards(guards))
}

/// The model input of a call of `tool` naming `path`.
fn input_naming(tool: &str, path: &str) -> Value {
    match tool {
        "file_patch" => {
            json!({ "operations": [{ "action": "update", "path": path, "content": "" }] })
        }
        "glob_search" | "list_files" => json!({ "pattern": "*", "path": path }),
        _ => json!({ "path": path }),
    }
}
