//! Worker-file configuration of the two file toolsets. The root (work directory) is not set
//! here: it comes from the worker's sandbox.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::approval::{ApprovalConfig, Decision, Resolved};
use crate::error::Result;
use crate::fs::rules::{PathRule, PathRules};

/// `approval` of a file toolset: the approval block every toolset has, plus path rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileApprovalConfig {
    /// Decision for tools that have no entry in `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Decision>,
    /// Decisions by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, Decision>,
    /// Path rules: gitignore-style patterns relative to the work directory, each with the
    /// decision for file-tool calls on matching paths (see `fs::rules`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathRule>,
}

impl FileApprovalConfig {
    /// The per-tool part, decided like every other toolset's approval block.
    pub fn tool_approval(&self) -> ApprovalConfig {
        ApprovalConfig {
            default: self.default,
            tools: self.tools.clone(),
        }
    }

    /// Checks the path rules; `place` names the list (`code_agent approval.paths`) in the
    /// `CONFIG_INVALID` message.
    pub fn check_paths(&self, place: &str) -> Result<()> {
        if !self.paths.is_empty() {
            PathRules::new(&self.paths, place, false)?;
        }
        Ok(())
    }

    /// A tool of this toolset as decided per tool, adjusted for the path rules: with rules,
    /// every tool that is offered is decided per call by the core (see `fs::access`).
    pub fn per_call(&self, resolved: Resolved) -> Resolved {
        Resolved {
            dynamic: resolved.dynamic
                || (!self.paths.is_empty() && resolved.decision != Decision::Blocked),
            ..resolved
        }
    }
}

/// Which code-agent tools a worker gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CodeAgentGroup {
    /// `grep_search`, `glob_search`, `directory_tree`.
    Search,
    /// The search tools and `file_read`.
    Read,
    /// `file_write`, `file_edit`, `file_patch`.
    Write,
    /// Every tool.
    #[default]
    All,
}

impl CodeAgentGroup {
    /// The tool names of the group, in the order they are offered.
    pub fn tools(self) -> &'static [&'static str] {
        const SEARCH: &[&str] = &["grep_search", "glob_search", "directory_tree"];
        const READ: &[&str] = &["grep_search", "glob_search", "directory_tree", "file_read"];
        const WRITE: &[&str] = &["file_write", "file_edit", "file_patch"];
        const ALL: &[&str] = &[
            "grep_search",
            "glob_search",
            "directory_tree",
            "file_read",
            "file_write",
            "file_edit",
            "file_patch",
        ];
        match self {
            CodeAgentGroup::Search => SEARCH,
            CodeAgentGroup::Read => READ,
            CodeAgentGroup::Write => WRITE,
            CodeAgentGroup::All => ALL,
        }
    }
}

/// `toolsets.code_agent` in a worker file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeAgentConfig {
    /// Which tools to offer (default `all`).
    #[serde(default)]
    pub group: CodeAgentGroup,
    /// Approval on top of the defaults (search and read tools `preApproved`, write tools `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<FileApprovalConfig>,
}

/// `toolsets.filesystem` in a worker file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesystemConfig {
    /// Leave out `write_file` and `delete_file` (default false).
    #[serde(default)]
    pub read_only: bool,
    /// Approval on top of the defaults (reads `preApproved`, write and delete `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<FileApprovalConfig>,
}

/// The tool names of the filesystem toolset, in the order they are offered.
pub fn filesystem_tools(read_only: bool) -> &'static [&'static str] {
    if read_only {
        &["read_file", "list_files", "file_exists", "file_info"]
    } else {
        &[
            "read_file",
            "list_files",
            "file_exists",
            "file_info",
            "write_file",
            "delete_file",
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::ApprovalDecision;

    #[test]
    fn code_agent_defaults_to_all_and_reads_groups_and_approval() {
        let config: CodeAgentConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config.group, CodeAgentGroup::All);
        assert_eq!(config.group.tools().len(), 7);
        let config: CodeAgentConfig = serde_json::from_str(
            r#"{"group":"read","approval":{"default":"ask","tools":{"file_read":"blocked"}}}"#,
        )
        .unwrap();
        assert_eq!(
            config.group.tools(),
            ["grep_search", "glob_search", "directory_tree", "file_read"]
        );
        let approval = config.approval.unwrap();
        assert_eq!(approval.tools["file_read"], ApprovalDecision::Blocked);
        assert_eq!(CodeAgentGroup::Search.tools().len(), 3);
        assert_eq!(
            CodeAgentGroup::Write.tools(),
            ["file_write", "file_edit", "file_patch"]
        );
    }

    #[test]
    fn unknown_keys_and_groups_are_errors() {
        let err = serde_json::from_str::<CodeAgentConfig>(r#"{"grup":"read"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `grup`"), "{err}");
        let err = serde_json::from_str::<CodeAgentConfig>(r#"{"group":"everything"}"#).unwrap_err();
        assert!(err.to_string().contains("search"), "{err}");
        let err = serde_json::from_str::<FilesystemConfig>(r#"{"readonly":true}"#).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `readonly`"),
            "{err}"
        );
        // The root comes from the sandbox, never from this block.
        let err = serde_json::from_str::<FilesystemConfig>(r#"{"root":"/"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `root`"), "{err}");
    }

    #[test]
    fn filesystem_read_only_drops_write_and_delete() {
        let config: FilesystemConfig = serde_json::from_str(r#"{"read_only":true}"#).unwrap();
        assert!(config.read_only);
        assert_eq!(filesystem_tools(true).len(), 4);
        assert!(filesystem_tools(false).contains(&"delete_file"));
        let schema = serde_json::to_value(schemars::schema_for!(FilesystemConfig)).unwrap();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["read_only"]["type"], "boolean");
    }
}
