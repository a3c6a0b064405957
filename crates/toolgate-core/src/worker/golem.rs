//! golem-forge keys of a worker file that toolgate reads: `sandbox.approval` is mapped onto the
//! file toolsets' approvals, `allow_empty_input` is honoured by the run, `attachment_policy`
//! limits the files a caller attaches (see `attachments`) and an `output_schema_ref` naming a
//! schema file checks the final result; the others are accepted
//! with a warning that says what toolgate does instead.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ToolsetsConfig;
use crate::approval::Decision;
use crate::fs::config::FileApprovalConfig;

/// `sandbox.approval`: whether writes and deletes of the file toolsets need a human.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxApproval {
    /// `write_file` (filesystem) and `file_write`, `file_edit`, `file_patch` (code_agent).
    #[serde(default)]
    pub write: Option<ApprovalSwitch>,
    /// `delete_file` (filesystem).
    #[serde(default)]
    pub delete: Option<ApprovalSwitch>,
}

/// `true` (ask first), `false` (run without asking) or a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ApprovalSwitch {
    Flag(bool),
    Decision(Decision),
}

impl ApprovalSwitch {
    fn decision(self) -> Decision {
        match self {
            ApprovalSwitch::Flag(true) => Decision::Ask,
            ApprovalSwitch::Flag(false) => Decision::PreApproved,
            ApprovalSwitch::Decision(decision) => decision,
        }
    }
}

/// golem-forge's `attachment_policy`: what a caller may attach when it calls this worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachmentPolicy {
    /// Most files one call attaches (default 4, at most 64).
    #[serde(default)]
    pub max_attachments: Option<u64>,
    /// Most bytes the files of one call hold together (default 10 MiB, at most 64 MiB).
    #[serde(default)]
    pub max_total_bytes: Option<u64>,
    /// File name endings accepted (`.pdf`), case-insensitive; empty accepts all not denied.
    #[serde(default)]
    pub allowed_suffixes: Vec<String>,
    /// File name endings refused, case-insensitive; checked before `allowed_suffixes`.
    #[serde(default)]
    pub denied_suffixes: Vec<String>,
}

/// One of golem-forge's `server_side_tools`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSideTool {
    pub name: String,
    #[serde(default)]
    pub config: Option<serde_json::Value>,
}

/// The golem-forge keys of a worker file, read.
#[derive(Debug, Clone, Default)]
pub struct GolemKeys {
    pub server_side_tools: Option<Vec<ServerSideTool>>,
    pub locked: Option<bool>,
    pub max_context_tokens: Option<u64>,
    pub output_schema_ref: Option<String>,
}

/// The tools `sandbox.approval.write` and `.delete` stand for, by toolset.
const WRITE_TOOLS: [(&str, &[&str]); 2] = [
    ("filesystem", &["write_file"]),
    ("code_agent", &["file_write", "file_edit", "file_patch"]),
];
const DELETE_TOOLS: [(&str, &[&str]); 1] = [("filesystem", &["delete_file"])];

/// Maps `sandbox.approval` onto the approval blocks of the file toolsets: an entry the
/// toolset's own block already has wins, so a worker file can still say it precisely.
pub fn apply_sandbox_approval(approval: &SandboxApproval, toolsets: &mut ToolsetsConfig) {
    for (switch, targets) in [
        (approval.write, &WRITE_TOOLS[..]),
        (approval.delete, &DELETE_TOOLS[..]),
    ] {
        let Some(switch) = switch else { continue };
        for (toolset, tools) in targets {
            let block = match *toolset {
                "filesystem" => toolsets.filesystem.as_mut().map(|t| &mut t.approval),
                _ => toolsets.code_agent.as_mut().map(|t| &mut t.approval),
            };
            let Some(block) = block else { continue };
            let config = block.get_or_insert_with(FileApprovalConfig::default);
            for tool in *tools {
                config
                    .tools
                    .entry((*tool).to_string())
                    .or_insert(switch.decision());
            }
        }
    }
}

/// What the keys toolgate does not act on mean here, one warning each.
pub fn warnings(keys: &GolemKeys) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(tools) = &keys.server_side_tools {
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        warnings.push(format!(
            "server_side_tools ({}) are accepted for golem-forge files but not enabled: configure provider-side tools on the AI SDK model instead",
            names.join(", ")
        ));
    }
    if keys.locked == Some(true) {
        warnings.push("locked is accepted for golem-forge files; toolgate never edits worker files, and a worker file that changes after loading is refused anyway".into());
    }
    if let Some(tokens) = keys.max_context_tokens {
        warnings.push(format!(
            "max_context_tokens ({tokens}) is accepted for golem-forge files but not enforced: the conversation is not trimmed; limit the run with max_steps"
        ));
    }
    if let Some(reference) = keys
        .output_schema_ref
        .as_deref()
        .filter(|r| !is_schema_file(r))
    {
        warnings.push(format!(
            "output_schema_ref ('{reference}') names a schema of golem-forge's registry, which toolgate does not have, so the result is not validated; give the path of a JSON Schema file (.json, .yaml, .yml) to have it checked"
        ));
    }
    warnings
}

/// Largest output schema file read.
const MAX_SCHEMA_BYTES: u64 = 1024 * 1024;

/// Whether an `output_schema_ref` is a file path rather than a registry name.
pub fn is_schema_file(reference: &str) -> bool {
    [".json", ".yaml", ".yml"]
        .iter()
        .any(|ext| reference.ends_with(ext))
}

/// Reads and compiles the schema file an `output_schema_ref` names, relative to `dir`. The
/// reason, naming the file, when it is missing, too large, not JSON/YAML or not a schema.
pub fn load_output_schema(
    dir: &std::path::Path,
    reference: &str,
) -> Result<serde_json::Value, String> {
    let path = dir.join(reference);
    let fail = |why: String| format!("output_schema_ref '{}': {why}", path.display());
    let meta = std::fs::metadata(&path).map_err(|err| fail(format!("cannot be read ({err})")))?;
    if meta.len() > MAX_SCHEMA_BYTES {
        return Err(fail(format!("is larger than {MAX_SCHEMA_BYTES} bytes")));
    }
    let text =
        std::fs::read_to_string(&path).map_err(|err| fail(format!("cannot be read ({err})")))?;
    let schema: serde_json::Value = if reference.ends_with(".json") {
        serde_json::from_str(&text).map_err(|err| fail(format!("is not JSON ({err})")))?
    } else {
        crate::yaml::from_str(&text).map_err(|err| fail(format!("is not YAML ({err})")))?
    };
    crate::schema::OutputSchema::compile(&schema).map_err(fail)?;
    Ok(schema)
}
