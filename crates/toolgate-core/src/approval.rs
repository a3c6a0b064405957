//! The approval model, decided here and only here.
//!
//! Every tool is `preApproved`, `ask` or `blocked` ([`Decision`], ordered by strictness). For
//! one tool, [`resolve`] takes every place a decision can come from — the explicit per-tool
//! entry, the tool's own static `needsApproval`, the toolset's default, the documented default of
//! the tool, the worker-level floor and the caller's floor — and returns the effective decision.
//! The TypeScript layer only attaches the result to the AI SDK tool (`needsApproval`, ai 7's
//! `toolApproval`) and calls a tool's own `needsApproval` function where one exists.
//!
//! The rules:
//! 1. The candidates of the tool's own level are its explicit entry and its own static
//!    `needsApproval` (true → `ask`, false → `preApproved`); only when neither exists does the
//!    toolset default apply, else the documented default of the tool.
//! 2. The worker-level floor and the caller's floor (a delegated run is at least as strict as the
//!    workers above it, tool by tool) join in, and the strictest of everything wins — so `blocked`
//!    wins at every level.
//! 3. A tool whose own `needsApproval` is a function keeps deciding per call while the effective
//!    decision is `preApproved`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What happens when a tool is called: run it, ask a human first, or refuse.
///
/// The order of the variants is their strictness: `PreApproved < Ask < Blocked`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[schemars(rename = "ApprovalDecision")]
pub enum Decision {
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

/// The name the command policy and the worker-file types use for [`Decision`].
pub use Decision as ApprovalDecision;

impl Decision {
    /// The spelling used in configuration files and in TypeScript.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::PreApproved => "preApproved",
            Decision::Ask => "ask",
            Decision::Blocked => "blocked",
        }
    }

    /// The strictest of `decisions`; `preApproved` when there are none.
    pub fn strictest(decisions: impl IntoIterator<Item = Decision>) -> Decision {
        decisions.into_iter().max().unwrap_or(Decision::PreApproved)
    }
}

impl std::str::FromStr for Decision {
    type Err = Error;

    /// Parses the exact spelling (`preApproved`, `ask`, `blocked`).
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "preApproved" => Ok(Decision::PreApproved),
            "ask" => Ok(Decision::Ask),
            "blocked" => Ok(Decision::Blocked),
            other => Err(Error::ConfigInvalid(format!(
                "approval '{other}' is not one of preApproved, ask, blocked"
            ))),
        }
    }
}

/// Approval settings of a toolset or a worker: a default for its tools and per-tool decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Decision for tools that have no entry in `tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Decision>,
    /// Decisions by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, Decision>,
}

/// The name used in worker files for an approval block.
pub type ApprovalConfigYaml = ApprovalConfig;

impl ApprovalConfig {
    /// Refuses per-tool entries that name no tool in `known`: a typo in a `blocked` entry would
    /// otherwise leave the real tool unblocked. `place` names the block in the message.
    pub fn check_names<S: AsRef<str>>(&self, known: &[S], place: &str) -> Result<()> {
        for name in self.tools.keys() {
            if !known.iter().any(|tool| tool.as_ref() == name) {
                let mut list: Vec<&str> = known.iter().map(AsRef::as_ref).collect();
                list.sort_unstable();
                list.dedup();
                let list = if list.is_empty() {
                    "(none)".to_string()
                } else {
                    list.join(", ")
                };
                return Err(Error::ConfigInvalid(format!(
                    "{place}: approval.tools names '{name}', which is not one of its tools; its tools are: {list}"
                )));
            }
        }
        Ok(())
    }

    /// The worker-level floor of one tool: its entry, else the default.
    pub fn floor_for(&self, tool: &str) -> Option<Decision> {
        self.tools.get(tool).copied().or(self.default)
    }
}

/// A tool's own `needsApproval`, as far as it can be known without calling it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OwnApproval {
    /// The tool has none.
    #[default]
    None,
    /// A boolean: `true` is `ask`, `false` is `preApproved`.
    Static(Decision),
    /// A function of the input, called per call while the effective decision is `preApproved`.
    Dynamic,
}

impl OwnApproval {
    /// The candidate a boolean `needsApproval` contributes.
    pub fn from_flag(needs_approval: bool) -> Self {
        OwnApproval::Static(if needs_approval {
            Decision::Ask
        } else {
            Decision::PreApproved
        })
    }
}

/// Everything that decides one tool's approval.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalInputs {
    /// The tool's entry in its toolset's `approval.tools`.
    pub explicit: Option<Decision>,
    /// The tool's own `needsApproval`.
    pub own: OwnApproval,
    /// The toolset's `approval.default`.
    pub toolset_default: Option<Decision>,
    /// The documented default of the tool (e.g. `preApproved` for `file_read`, `ask` for writes).
    pub documented_default: Decision,
    /// The worker-level `approval` for this tool (its entry, else its default).
    pub worker_floor: Option<Decision>,
    /// The strictest decision the workers above this one gave (see [`CallerFloor`]).
    pub caller_floor: Option<Decision>,
}

impl ApprovalInputs {
    /// Inputs with only the documented default set.
    pub fn new(documented_default: Decision) -> Self {
        Self {
            explicit: None,
            own: OwnApproval::None,
            toolset_default: None,
            documented_default,
            worker_floor: None,
            caller_floor: None,
        }
    }
}

/// Which input of [`resolve`] gave a tool its decision (for `toolgate check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalSource {
    /// The tool's entry in its toolset's `approval.tools`.
    ToolEntry,
    /// The tool's own `needsApproval` (a boolean, or a function deciding each call).
    OwnNeedsApproval,
    /// The toolset's `approval.default`.
    ToolsetDefault,
    /// The documented default of the tool.
    DocumentedDefault,
    /// The worker-level `approval` (its entry for the tool, else its default).
    WorkerFloor,
    /// The decisions of the workers above (a called worker is at least as strict).
    CallerFloor,
}

impl ApprovalSource {
    /// A short stable name (`toolgate check --json`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalSource::ToolEntry => "tool-entry",
            ApprovalSource::OwnNeedsApproval => "own-needs-approval",
            ApprovalSource::ToolsetDefault => "toolset-default",
            ApprovalSource::DocumentedDefault => "documented-default",
            ApprovalSource::WorkerFloor => "worker-floor",
            ApprovalSource::CallerFloor => "caller-floor",
        }
    }

    /// The source in words.
    pub fn describe(self) -> &'static str {
        match self {
            ApprovalSource::ToolEntry => "the toolset's approval.tools entry",
            ApprovalSource::OwnNeedsApproval => "the tool's own needsApproval",
            ApprovalSource::ToolsetDefault => "the toolset's approval.default",
            ApprovalSource::DocumentedDefault => "the tool's documented default",
            ApprovalSource::WorkerFloor => "the worker-level approval",
            ApprovalSource::CallerFloor => "a calling worker's decision",
        }
    }
}

/// The effective approval of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    pub decision: Decision,
    /// What gave it its decision: the first input that reached it, in the order of the rules
    /// (the tool's own level, then the worker-level floor, then the callers').
    pub source: ApprovalSource,
    /// The tool's own `needsApproval` function decides each call (only with `preApproved`); for
    /// a file tool with path rules, the core decides each call.
    pub dynamic: bool,
    /// What a path rule of the tool's toolset cannot go below: the strictest of its explicit
    /// entry, the worker-level floor and the callers' floor (see `fs::access`).
    pub path_floor: Option<Decision>,
}

/// The one resolve function: the effective decision of a tool (see the module documentation).
pub fn resolve(inputs: &ApprovalInputs) -> Resolved {
    let own_static = match inputs.own {
        OwnApproval::Static(decision) => Some(decision),
        OwnApproval::None | OwnApproval::Dynamic => None,
    };
    let (own_level, mut source) = if inputs.explicit.is_none() && inputs.own == OwnApproval::None {
        match inputs.toolset_default {
            Some(default) => (default, ApprovalSource::ToolsetDefault),
            None => (inputs.documented_default, ApprovalSource::DocumentedDefault),
        }
    } else {
        let level = Decision::strictest(inputs.explicit.into_iter().chain(own_static));
        let source = match inputs.explicit {
            Some(explicit) if explicit == level => ApprovalSource::ToolEntry,
            _ => ApprovalSource::OwnNeedsApproval,
        };
        (level, source)
    };
    let mut decision = own_level;
    for (floor, floor_source) in [
        (inputs.worker_floor, ApprovalSource::WorkerFloor),
        (inputs.caller_floor, ApprovalSource::CallerFloor),
    ] {
        if let Some(floor) = floor.filter(|floor| *floor > decision) {
            decision = floor;
            source = floor_source;
        }
    }
    Resolved {
        decision,
        source,
        dynamic: inputs.own == OwnApproval::Dynamic && decision == Decision::PreApproved,
        path_floor: [inputs.explicit, inputs.worker_floor, inputs.caller_floor]
            .into_iter()
            .flatten()
            .max(),
    }
}

/// The message of `TOOL_BLOCKED`, raised when a blocked tool is called directly.
pub fn blocked_error(tool: &str) -> Error {
    Error::ToolBlocked(format!(
        "tool '{tool}' is blocked by its approval configuration; change its approval to 'ask' or 'preApproved' to allow it"
    ))
}

/// The toolsets whose tools get a documented default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Toolset {
    Filesystem,
    CodeAgent,
    Shell,
    CliExecute,
    /// Tools of a `tools.ts` module (`loadCustomTools`, the `custom` worker key).
    ToolsModule,
    Executables,
    Workers,
    CreateCustomTool,
    /// Tools of MCP servers (the `mcp` worker key, `mcpToolset`).
    Mcp,
    /// Forge's built-in tools (`builtins`).
    Builtins,
    /// A tool gated on its own with `wrapWithDefaultApproval`.
    Standalone,
}

impl Toolset {
    /// The name used in worker files and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Toolset::Filesystem => "filesystem",
            Toolset::CodeAgent => "code_agent",
            Toolset::Shell => "shell",
            Toolset::CliExecute => "cli_execute",
            Toolset::ToolsModule => "custom",
            Toolset::Executables => "executables",
            Toolset::Workers => "workers",
            Toolset::CreateCustomTool => "create_custom_tool",
            Toolset::Mcp => "mcp",
            Toolset::Builtins => "builtins",
            Toolset::Standalone => "tool",
        }
    }

    /// The documented default of `tool` in this toolset: reads and searches of the file
    /// toolsets and the built-in tools that neither reach the network nor write files run
    /// without asking; everything else asks (a tool added later asks until it is listed here).
    pub fn documented_default(self, tool: &str) -> Decision {
        let runs_without_asking = match self {
            Toolset::Filesystem | Toolset::CodeAgent => FILE_READS.contains(&tool),
            Toolset::Builtins => PURE_BUILTINS.contains(&tool),
            _ => false,
        };
        if runs_without_asking {
            Decision::PreApproved
        } else {
            Decision::Ask
        }
    }
}

/// The tools of the file toolsets that only read or search.
const FILE_READS: &[&str] = &[
    "read_file",
    "list_files",
    "file_exists",
    "file_info",
    "grep_search",
    "glob_search",
    "directory_tree",
    "file_read",
];

/// The built-in tools that are pure functions: no network, no files written.
const PURE_BUILTINS: &[&str] = &[
    "json_parse",
    "csv_parse",
    "datetime_now",
    "uuid_generate",
    "math_calculate",
];

/// One tool a toolset offers, with its own `needsApproval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The name the model sees.
    pub name: String,
    pub own: OwnApproval,
}

impl Candidate {
    /// A tool without its own `needsApproval`.
    pub fn plain(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            own: OwnApproval::None,
        }
    }
}

/// Floors that apply on top of a toolset's own approval.
#[derive(Debug, Clone, Copy, Default)]
pub struct Floors<'a> {
    /// The worker-level `approval`.
    pub worker: Option<&'a ApprovalConfig>,
    /// What the calling workers decided.
    pub caller: Option<&'a CallerFloor>,
}

/// The explicit entry of `tool` in `config`. Executable tools may be named with or without
/// their `custom_tool_` prefix; with both, the strictest wins.
fn explicit_entry(toolset: Toolset, config: &ApprovalConfig, tool: &str) -> Option<Decision> {
    let bare = match toolset {
        Toolset::Executables => tool.strip_prefix(crate::limits::EXECUTABLE_TOOL_PREFIX),
        _ => None,
    };
    [Some(tool), bare]
        .into_iter()
        .flatten()
        .filter_map(|name| config.tools.get(name).copied())
        .max()
}

/// Decides every tool of one toolset with [`resolve`]. The caller checks the names in
/// `config` first ([`ApprovalConfig::check_names`]).
pub fn decide_toolset(
    toolset: Toolset,
    config: &ApprovalConfig,
    tools: &[Candidate],
    floors: Floors<'_>,
) -> Vec<Resolved> {
    tools
        .iter()
        .map(|tool| {
            resolve(&ApprovalInputs {
                explicit: explicit_entry(toolset, config, &tool.name),
                own: tool.own,
                toolset_default: config.default,
                documented_default: toolset.documented_default(&tool.name),
                worker_floor: floors
                    .worker
                    .and_then(|worker| worker.floor_for(&tool.name)),
                caller_floor: floors.caller.and_then(|caller| caller.for_tool(&tool.name)),
            })
        })
        .collect()
}

/// The names an approval block of `toolset` may use for `tools`: the tool names, and for
/// executable tools also the names without the prefix.
pub fn known_names(toolset: Toolset, tools: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|name| name.to_string()).collect();
    if toolset == Toolset::Executables {
        names.extend(tools.iter().filter_map(|name| {
            name.strip_prefix(crate::limits::EXECUTABLE_TOOL_PREFIX)
                .map(str::to_string)
        }));
    }
    names
}

/// What the workers above a delegated worker decided, tool by tool: a called worker is at
/// least as strict as every worker on its call chain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallerFloor {
    /// The strictest effective decision a caller gave a tool of this name.
    pub tools: BTreeMap<String, Decision>,
    /// The strictest worker-level `approval.default` of the callers.
    pub default: Option<Decision>,
    /// The strictest decision a caller gave an MCP tool, by its name on its server: a called
    /// worker may declare the same server under another name (`t` for the caller's `s`), so its
    /// tool `t_env` is bound by what the callers decided for `env` on any server.
    pub mcp_tools: BTreeMap<String, Decision>,
}

impl CallerFloor {
    /// The floor for one tool of the called worker.
    pub fn for_tool(&self, tool: &str) -> Option<Decision> {
        [self.tools.get(tool).copied(), self.default]
            .into_iter()
            .flatten()
            .max()
    }

    /// The floor a worker hands to the workers it calls: its own floor, joined by its own
    /// effective decisions and its worker-level default.
    pub fn handed_down(
        &self,
        decided: impl IntoIterator<Item = (String, Decision)>,
        worker_default: Option<Decision>,
    ) -> CallerFloor {
        let mut next = self.clone();
        for (tool, decision) in decided {
            let entry = next.tools.entry(tool).or_insert(decision);
            *entry = (*entry).max(decision);
        }
        next.default = next.default.max(worker_default);
        next
    }

    /// This floor joined by a caller's decisions for its MCP tools, each by its name on its
    /// server.
    pub fn with_mcp_tools(mut self, decided: impl IntoIterator<Item = (String, Decision)>) -> Self {
        for (tool, decision) in decided {
            let entry = self.mcp_tools.entry(tool).or_insert(decision);
            *entry = (*entry).max(decision);
        }
        self
    }

    /// The floor for the MCP tools `selected` (each exposed name with its name on its server):
    /// what the callers decided for that exposed name, and for that tool name on any server.
    pub fn for_mcp_tools<'a>(
        &self,
        selected: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let mut floor = self.clone();
        for (name, tool) in selected {
            if let Some(&decision) = self.mcp_tools.get(tool) {
                let entry = floor.tools.entry(name.to_string()).or_insert(decision);
                *entry = (*entry).max(decision);
            }
        }
        floor
    }
}

#[cfg(test)]
mod tests;
