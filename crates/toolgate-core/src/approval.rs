//! The approval block every toolset accepts in a worker file:
//! `{ default: preApproved|ask|blocked, tools: { <tool_name>: decision } }`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happens when a tool is called: run it, ask a human first, or refuse.
///
/// The order of the variants is their strictness: `PreApproved < Ask < Blocked`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum ApprovalDecision {
    /// Runs without asking.
    #[serde(rename = "preApproved")]
    PreApproved,
    /// A human approves each call first.
    #[serde(rename = "ask")]
    Ask,
    /// Never runs; not offered to the model.
    #[serde(rename = "blocked")]
    Blocked,
}

impl ApprovalDecision {
    /// The spelling used in configuration files and in TypeScript.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::PreApproved => "preApproved",
            ApprovalDecision::Ask => "ask",
            ApprovalDecision::Blocked => "blocked",
        }
    }
}

impl std::str::FromStr for ApprovalDecision {
    type Err = crate::Error;

    /// Parses the exact spelling (`preApproved`, `ask`, `blocked`).
    fn from_str(text: &str) -> crate::Result<Self> {
        match text {
            "preApproved" => Ok(ApprovalDecision::PreApproved),
            "ask" => Ok(ApprovalDecision::Ask),
            "blocked" => Ok(ApprovalDecision::Blocked),
            other => Err(crate::Error::ConfigInvalid(format!(
                "approval '{other}' is not one of preApproved, ask, blocked"
            ))),
        }
    }
}

/// Approval settings of a toolset: a default for its tools and per-tool decisions.
/// The strictest of the candidates wins (see the TypeScript `wrapWithDefaultApproval`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Decision for tools that have no entry in `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<ApprovalDecision>,
    /// Decisions by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ApprovalDecision>,
}

/// The name used in worker files for an approval block.
pub type ApprovalConfigYaml = ApprovalConfig;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_use_the_documented_spelling() {
        let config: ApprovalConfig = serde_json::from_str(
            r#"{"default":"ask","tools":{"file_write":"blocked","grep_search":"preApproved"}}"#,
        )
        .unwrap();
        assert_eq!(config.default, Some(ApprovalDecision::Ask));
        assert_eq!(config.tools["file_write"], ApprovalDecision::Blocked);
        assert_eq!(config.tools["grep_search"], ApprovalDecision::PreApproved);
        assert_eq!(
            serde_json::to_string(&config).unwrap(),
            r#"{"default":"ask","tools":{"file_write":"blocked","grep_search":"preApproved"}}"#
        );
        assert_eq!(
            serde_json::to_string(&ApprovalConfig::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn unknown_keys_and_decisions_are_errors() {
        let err = serde_json::from_str::<ApprovalConfig>(r#"{"defualt":"ask"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `defualt`"), "{err}");
        let err = serde_json::from_str::<ApprovalConfig>(r#"{"default":"maybe"}"#).unwrap_err();
        assert!(err.to_string().contains("preApproved"), "{err}");
    }

    #[test]
    fn the_schema_lists_the_decisions() {
        let schema = serde_json::to_string(&schemars::schema_for!(ApprovalConfig)).unwrap();
        for decision in ["preApproved", "ask", "blocked"] {
            assert!(schema.contains(decision), "{schema}");
        }
        assert!(
            schema.contains("\"additionalProperties\":false"),
            "{schema}"
        );
    }
}
