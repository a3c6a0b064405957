//! Saved approvals in a plan: which rule of the project permissions file covers a call of a
//! planned worker's tool, what saving a call would write, and saving it.
//!
//! A saved rule answers a question that would otherwise be asked, and nothing else: the SDK asks
//! here only for a call that needs approval (its tool is `ask`, or its rules said `ask`), after
//! every `blocked` — the tool's, a shell or path rule's, a caller's — has refused what it
//! refuses. So a rule never lifts a block, and the strictest decision still wins.

use std::path::PathBuf;

use serde_json::Value;

use super::plan::{PlannedWorker, WorkerPlan};
use crate::error::{Error, Result};
use crate::fs::config::CodeAgentGroup;
use crate::permissions::{SavedBy, SavedRule, SavedScope, ToolKind};
use crate::run::review::review_input;

/// What answering "save" to a call would write, shown before the person picks it.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveOffer {
    /// The permissions file the rule goes to.
    pub file: PathBuf,
    /// The rule in words (`worker w: shell command exactly: git status`).
    pub rule: String,
}

impl WorkerPlan {
    /// What kind of tool `tool` of worker `index` is, for saving: a command tool, a file tool,
    /// a network request (`network`), or another tool.
    pub fn tool_kind(&self, index: usize, tool: &str) -> Result<ToolKind> {
        let planned = self.worker(index)?;
        Ok(kind_of(planned, tool))
    }

    /// The saved rule that covers a call of `tool` by worker `index`, if any.
    pub fn saved_rule_for(
        &self,
        index: usize,
        tool: &str,
        input: &Value,
        argv: Option<&[String]>,
    ) -> Result<Option<SavedRule>> {
        let planned = self.worker(index)?;
        Ok(self.permissions().and_then(|permissions| {
            permissions.covering(
                &planned.worker.name,
                tool,
                input,
                argv,
                &planned.worker.work_dir,
            )
        }))
    }

    /// What saving this call would write, or `None` when it cannot be saved: its input is too
    /// long to review, or it has no scope to save (a command that does not split).
    pub fn save_offer(
        &self,
        index: usize,
        tool: &str,
        input: &Value,
        argv: Option<&[String]>,
    ) -> Result<Option<SaveOffer>> {
        let Some(permissions) = self.permissions() else {
            return Ok(None);
        };
        let planned = self.worker(index)?;
        Ok(
            scope_to_save(planned, tool, input, argv).map(|scope| SaveOffer {
                file: permissions.path().to_path_buf(),
                rule: format!(
                    "worker {}: {}",
                    crate::run::review::inline(&planned.worker.name, 80),
                    scope.describe(tool)
                ),
            }),
        )
    }

    /// Saves this call's scope as a rule in the project permissions file (see
    /// [`crate::permissions::Permissions::save`]) and returns it with its line and date.
    /// `INVALID_INPUT` for a call that cannot be saved ([`WorkerPlan::save_offer`] is `None`).
    pub fn save_rule(
        &self,
        index: usize,
        tool: &str,
        input: &Value,
        argv: Option<&[String]>,
        by: SavedBy,
    ) -> Result<SavedRule> {
        let permissions = self.permissions().ok_or_else(|| {
            Error::InvalidInput(
                "this plan has no project permissions file to save a rule in".into(),
            )
        })?;
        let planned = self.worker(index)?;
        let scope = scope_to_save(planned, tool, input, argv).ok_or_else(|| {
            Error::InvalidInput(format!(
                "this call of '{}' cannot be saved as a rule: its input is too long to review, or it names no command, path or host to save; approve it once instead",
                crate::run::review::inline(tool, 80)
            ))
        })?;
        permissions.save(&planned.worker.name, tool, scope, by)
    }

    /// Every saved rule of the plan as data, with where it comes from (file, line, date, who
    /// saved it): what `toolgate check` prints.
    pub fn saved_rules(&self) -> Vec<Value> {
        self.permissions()
            .map(|permissions| {
                permissions
                    .rules()
                    .iter()
                    .map(|rule| rule.to_json(permissions.path()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The scope saving a call writes: `None` when its input is too long to review or it has
/// nothing to save.
fn scope_to_save(
    planned: &PlannedWorker,
    tool: &str,
    input: &Value,
    argv: Option<&[String]>,
) -> Option<SavedScope> {
    if !review_input(input).reviewable {
        return None;
    }
    SavedScope::for_call(
        kind_of(planned, tool),
        input,
        argv,
        &planned.worker.work_dir,
    )
}

fn kind_of(planned: &PlannedWorker, tool: &str) -> ToolKind {
    if tool == "network" {
        return ToolKind::Network;
    }
    if (tool == "shell" && planned.shell.is_some())
        || (tool == "cli_execute" && planned.cli_execute.is_some())
    {
        return ToolKind::Command;
    }
    let filesystem = planned
        .filesystem_tools
        .as_ref()
        .is_some_and(|names| names.contains(&tool));
    let code_agent = planned
        .code_agent_group
        .is_some_and(|group: CodeAgentGroup| group.tools().contains(&tool));
    if filesystem || code_agent {
        return ToolKind::File;
    }
    ToolKind::Other
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::command::split_command;
    use crate::limits::PERMISSIONS_FILE_NAME;
    use crate::worker::test_support::{dir, write};
    use crate::worker::{plan_worker, LoadOptions};

    const TOP: &str = "name: top\ntoolsets:\n  shell: { default: ask }\n  code_agent: {}\n  workers:\n    allowed_workers: [helper]\n";
    const HELPER: &str = "name: helper\ntoolsets:\n  shell: { default: ask }\n";

    #[test]
    fn saved_rules_are_read_beside_the_top_worker_and_cover_their_worker_only() {
        let temp = dir();
        let top = write(&temp.path, "top.yaml", TOP);
        write(&temp.path, "helper.yaml", HELPER);
        let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
        assert_eq!(plan.tool_kind(0, "shell").unwrap(), ToolKind::Command);
        assert_eq!(plan.tool_kind(0, "file_write").unwrap(), ToolKind::File);
        assert_eq!(plan.tool_kind(0, "lookup").unwrap(), ToolKind::Other);
        assert_eq!(plan.tool_kind(1, "file_write").unwrap(), ToolKind::Other);
        assert_eq!(plan.tool_kind(0, "network").unwrap(), ToolKind::Network);
        let argv = split_command("git push").unwrap();
        let input = json!({ "command": "git push" });
        assert!(plan
            .saved_rule_for(0, "shell", &input, Some(&argv))
            .unwrap()
            .is_none());
        let offer = plan
            .save_offer(0, "shell", &input, Some(&argv))
            .unwrap()
            .unwrap();
        assert_eq!(offer.file, temp.path.join(PERMISSIONS_FILE_NAME));
        assert_eq!(offer.rule, "worker top: shell command exactly: git push");
        let saved = plan
            .save_rule(0, "shell", &input, Some(&argv), SavedBy::Terminal)
            .unwrap();
        assert_eq!(saved.describe(), offer.rule);
        // covered from now on in this plan, for this worker only
        assert!(plan
            .saved_rule_for(0, "shell", &input, Some(&argv))
            .unwrap()
            .is_some());
        assert!(plan
            .saved_rule_for(1, "shell", &input, Some(&argv))
            .unwrap()
            .is_none());
        // and in the next plan
        let next = plan_worker(&top, &LoadOptions::default()).unwrap();
        let found = next
            .saved_rule_for(0, "shell", &input, Some(&argv))
            .unwrap()
            .unwrap();
        assert_eq!(found.line, saved.line);
        let listed = next.saved_rules();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0]["kind"], "command");
        assert_eq!(listed[0]["command"], "git push");
        assert_eq!(listed[0]["by"], "terminal");
        assert_eq!(listed[0]["line"], saved.line);
        assert_eq!(
            listed[0]["file"],
            temp.path.join(PERMISSIONS_FILE_NAME).display().to_string()
        );
        // file tools save their path
        let offer = plan
            .save_offer(
                0,
                "file_write",
                &json!({ "path": "./notes/a.txt", "content": "x" }),
                None,
            )
            .unwrap()
            .unwrap();
        assert!(
            offer.rule.contains("file_write on the path notes/a.txt"),
            "{}",
            offer.rule
        );
    }

    #[test]
    fn inputs_too_long_to_review_cannot_be_saved() {
        let temp = dir();
        let top = write(&temp.path, "top.yaml", TOP);
        write(&temp.path, "helper.yaml", HELPER);
        let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
        let long = json!({ "path": "a", "content": "ab".repeat(crate::limits::MAX_REVIEW_BYTES) });
        assert!(plan
            .save_offer(0, "file_write", &long, None)
            .unwrap()
            .is_none());
        let err = plan
            .save_rule(0, "file_write", &long, None, SavedBy::Terminal)
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(!temp.path.join(PERMISSIONS_FILE_NAME).exists());
    }

    #[test]
    fn a_malformed_permissions_file_stops_planning_with_its_place() {
        let temp = dir();
        let top = write(&temp.path, "top.yaml", TOP);
        write(&temp.path, "helper.yaml", HELPER);
        write(
            &temp.path,
            PERMISSIONS_FILE_NAME,
            "version: 1\nrules:\n  - worker: top\n    tool: shell\n    comand: ls\n",
        );
        let err = plan_worker(&top, &LoadOptions::default()).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        let message = err.to_string();
        assert!(
            message.contains(&format!("{PERMISSIONS_FILE_NAME}:5:5: ")),
            "{message}"
        );
        assert!(message.contains("unknown field `comand`"), "{message}");
    }
}
