//! The approval of every tool of a planned worker graph, decided top-down: each worker's tools
//! get their toolset's approval, the worker-level floor and the floor of the workers above it,
//! so that a called worker is at least as strict as its callers, tool by tool, all the way down.

use std::collections::{BTreeMap, BTreeSet};

use super::plan::{PlannedWorker, WorkerPlan};
use crate::approval::{
    decide_toolset, known_names, ApprovalConfig, CallerFloor, Candidate, Floors, OwnApproval,
    Resolved, Toolset,
};
use crate::error::{Error, Result};
use crate::fs::config::{filesystem_tools, CodeAgentGroup, FileApprovalConfig};
use crate::limits::{EXECUTABLE_TOOL_PREFIX, RESERVED_TOOL_NAMES};
use crate::mcp::ServerTools;

/// What the SDK found in a worker's tools module (only JavaScript can load it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleTools {
    /// Every valid tool name of the module, whitelisted or not (for approval name checks).
    pub available: Vec<String>,
    /// The tools the worker gets, in order, with their own `needsApproval`.
    pub selected: Vec<Candidate>,
}

/// What the SDK's MCP clients found on the servers of each worker's `mcp` toolset, by worker
/// index (only JavaScript speaks the protocol).
pub type McpReports = BTreeMap<usize, Vec<ServerTools>>;

/// One tool of a worker with its effective approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecidedTool {
    pub name: String,
    pub toolset: Toolset,
    pub resolved: Resolved,
}

impl WorkerPlan {
    /// Decides every tool of every worker. `modules` holds what the SDK found in the tools
    /// module of each worker that has one, by worker index. Errors (`CONFIG_INVALID`, naming
    /// the worker file): an approval entry naming no tool, a reserved or duplicate tool name, a
    /// missing module report.
    pub fn decide(&self, modules: &BTreeMap<usize, ModuleTools>) -> Result<Vec<Vec<DecidedTool>>> {
        self.decide_with_mcp(modules, &McpReports::new())
    }

    /// [`WorkerPlan::decide`] with the tools the MCP servers of each worker's `mcp` toolset
    /// listed; a worker with an `mcp` toolset and no report is `CONFIG_INVALID`.
    pub fn decide_with_mcp(
        &self,
        modules: &BTreeMap<usize, ModuleTools>,
        mcp: &McpReports,
    ) -> Result<Vec<Vec<DecidedTool>>> {
        self.decide_all(modules, mcp, true)
    }

    /// [`WorkerPlan::decide_with_mcp`]; with `mcp_required` false, the `mcp` toolset of a
    /// worker without a report offers no tools (`toolgate check` when a server could not be
    /// listed).
    pub(super) fn decide_all(
        &self,
        modules: &BTreeMap<usize, ModuleTools>,
        mcp: &McpReports,
        mcp_required: bool,
    ) -> Result<Vec<Vec<DecidedTool>>> {
        let mut decided: Vec<Vec<DecidedTool>> = Vec::with_capacity(self.workers().len());
        let mut floors: Vec<CallerFloor> = Vec::with_capacity(self.workers().len());
        for (index, planned) in self.workers().iter().enumerate() {
            let floor = match planned.parent {
                Some(parent) => floors[parent]
                    .handed_down(
                        decided[parent]
                            .iter()
                            .map(|tool| (tool.name.clone(), tool.resolved.decision)),
                        self.workers()[parent]
                            .worker
                            .approval
                            .as_ref()
                            .and_then(|approval| approval.default),
                    )
                    .with_mcp_tools(mcp_decisions(
                        &self.workers()[parent],
                        mcp.get(&parent),
                        &decided[parent],
                    )),
                None => CallerFloor::default(),
            };
            let tools = decide_worker(
                planned,
                modules.get(&index),
                mcp.get(&index),
                mcp_required,
                &floor,
            )?;
            decided.push(tools);
            floors.push(floor);
        }
        Ok(decided)
    }
}

/// What a worker decided for each tool of its `mcp` toolset, by the tool's name on its server.
fn mcp_decisions(
    planned: &PlannedWorker,
    listed: Option<&Vec<ServerTools>>,
    decided: &[DecidedTool],
) -> Vec<(String, crate::approval::Decision)> {
    let (Some(toolset), Some(listed)) = (planned.mcp.as_ref(), listed) else {
        return Vec::new();
    };
    let Ok(selected) = toolset.select(listed) else {
        return Vec::new();
    };
    selected
        .into_iter()
        .filter_map(|tool| {
            decided
                .iter()
                .find(|known| known.toolset == Toolset::Mcp && known.name == tool.name)
                .map(|known| (tool.tool, known.resolved.decision))
        })
        .collect()
}

fn decide_worker(
    planned: &PlannedWorker,
    module: Option<&ModuleTools>,
    mcp: Option<&Vec<ServerTools>>,
    mcp_required: bool,
    floor: &CallerFloor,
) -> Result<Vec<DecidedTool>> {
    let worker = &planned.worker;
    let source = worker.path.display().to_string();
    let no_approval = ApprovalConfig::default();
    let mut tools = Vec::new();
    let mut add_with = |caller: &CallerFloor,
                        toolset: Toolset,
                        config: Option<&ApprovalConfig>,
                        candidates: Vec<Candidate>,
                        known: Vec<String>|
     -> Result<()> {
        let floors = Floors {
            worker: worker.approval.as_ref(),
            caller: Some(caller),
        };
        let config = config.unwrap_or(&no_approval);
        config.check_names(&known, &format!("{source}: toolsets.{}", toolset.as_str()))?;
        let resolved = decide_toolset(toolset, config, &candidates, floors);
        tools.extend(
            candidates
                .into_iter()
                .zip(resolved)
                .map(|(candidate, resolved)| DecidedTool {
                    name: candidate.name,
                    toolset,
                    resolved,
                }),
        );
        Ok(())
    };
    let mut add =
        |toolset: Toolset,
         config: Option<&ApprovalConfig>,
         candidates: Vec<Candidate>,
         known: Vec<String>| add_with(floor, toolset, config, candidates, known);
    let toolsets = &worker.toolsets;
    let mut path_rules = Vec::new();
    if let (Some(config), Some(names)) = (&toolsets.filesystem, &planned.filesystem_tools) {
        let file_approval = config.approval.clone().unwrap_or_default();
        file_approval.check_paths(&format!("{source}: toolsets.filesystem approval.paths"))?;
        let approval = file_approval.tool_approval();
        add(
            Toolset::Filesystem,
            Some(&approval),
            names.iter().map(|name| Candidate::plain(*name)).collect(),
            strings(filesystem_tools(false)),
        )?;
        path_rules.push((Toolset::Filesystem, file_approval));
    }
    if let (Some(config), Some(group)) = (&toolsets.code_agent, planned.code_agent_group) {
        let file_approval = config.approval.clone().unwrap_or_default();
        file_approval.check_paths(&format!("{source}: toolsets.code_agent approval.paths"))?;
        let approval = file_approval.tool_approval();
        add(
            Toolset::CodeAgent,
            Some(&approval),
            group
                .tools()
                .iter()
                .map(|name| Candidate::plain(*name))
                .collect(),
            strings(CodeAgentGroup::All.tools()),
        )?;
        path_rules.push((Toolset::CodeAgent, file_approval));
    }
    if toolsets.shell.is_some() {
        // The rules decide each command: the tool's own `needsApproval` is a function. A worker
        // file's shell block has no approval of its own; the worker-level approval applies.
        let shell = Candidate {
            name: "shell".into(),
            own: OwnApproval::Dynamic,
        };
        add(Toolset::Shell, None, vec![shell], vec!["shell".into()])?;
    }
    if toolsets.cli_execute.is_some() {
        add(
            Toolset::CliExecute,
            None,
            vec![Candidate::plain("cli_execute")],
            vec!["cli_execute".into()],
        )?;
    }
    if let Some(config) = &toolsets.custom {
        let module = module.ok_or_else(|| {
            Error::ConfigInvalid(format!(
                "{source}: the tools module '{}' was not loaded before the approvals were decided",
                config.module.display()
            ))
        })?;
        add(
            Toolset::ToolsModule,
            config.approval.as_ref(),
            module.selected.clone(),
            module.available.clone(),
        )?;
    }
    if let (Some(config), Some(registry)) = (&toolsets.executables, &planned.executables) {
        let names: Vec<String> = registry
            .tools()
            .into_iter()
            .map(|spec| format!("{EXECUTABLE_TOOL_PREFIX}{}", spec.name))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        add(
            Toolset::Executables,
            config.approval.as_ref(),
            names.iter().map(Candidate::plain).collect(),
            known_names(Toolset::Executables, &refs),
        )?;
    }
    if let (Some(config), Some(builtins)) = (&toolsets.builtins, &planned.builtins) {
        add(
            Toolset::Builtins,
            config.approval.as_ref(),
            builtins
                .names()
                .iter()
                .map(|name| Candidate::plain(*name))
                .collect(),
            strings(&crate::builtins::TOOL_NAMES),
        )?;
    }
    if let Some(config) = &toolsets.workers {
        let names: Vec<String> = planned.delegates.iter().map(|d| d.name.clone()).collect();
        add(
            Toolset::Workers,
            config.approval.as_ref(),
            names.iter().map(Candidate::plain).collect(),
            names.clone(),
        )?;
    }
    if let Some(toolset) = planned
        .mcp
        .as_ref()
        .filter(|_| mcp.is_some() || mcp_required)
    {
        let listed = mcp.ok_or_else(|| {
            Error::ConfigInvalid(format!(
                "{source}: the MCP servers of toolsets.mcp were not listed before the approvals were decided"
            ))
        })?;
        let selected = toolset.select(listed)?;
        let (approval, known) = toolset.approval_for(listed)?;
        let caller = floor.for_mcp_tools(
            selected
                .iter()
                .map(|tool| (tool.name.as_str(), tool.tool.as_str())),
        );
        add_with(
            &caller,
            Toolset::Mcp,
            Some(&approval),
            selected
                .into_iter()
                .map(|tool| Candidate::plain(tool.name))
                .collect(),
            known,
        )?;
    }
    for (toolset, approval) in &path_rules {
        mark_per_call(&mut tools, *toolset, approval);
    }
    if planned.callers.has_rules() {
        // A calling worker's shell rules may ask about a command this worker's `cli_execute`
        // runs without asking: the policy decides each call (`CliExecute::callers_approval`).
        for tool in tools
            .iter_mut()
            .filter(|tool| tool.toolset == Toolset::CliExecute)
        {
            tool.resolved.dynamic =
                tool.resolved.decision == crate::approval::Decision::PreApproved;
        }
    }
    check_names(&source, worker.approval.as_ref(), &tools)?;
    Ok(tools)
}

/// Tools of a file toolset with path rules are decided per call (see `fs::access`).
fn mark_per_call(tools: &mut [DecidedTool], toolset: Toolset, approval: &FileApprovalConfig) {
    for tool in tools.iter_mut().filter(|tool| tool.toolset == toolset) {
        tool.resolved = approval.per_call(tool.resolved);
    }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

/// Reserved and duplicate names, and worker-level approval entries naming no tool.
fn check_names(
    source: &str,
    worker_approval: Option<&ApprovalConfig>,
    tools: &[DecidedTool],
) -> Result<()> {
    let mut seen = BTreeSet::new();
    for tool in tools {
        if RESERVED_TOOL_NAMES.contains(&tool.name.as_str()) {
            return Err(Error::ConfigInvalid(format!(
                "{source}: '{}' is a reserved tool name (it ends the run); rename that tool",
                tool.name
            )));
        }
        // The egress proxy's approval requests go by this name: a tool of it would be judged
        // by the answers and saved rules about network hosts.
        if tool.name == crate::run::always::NETWORK_TOOL {
            return Err(Error::ConfigInvalid(format!(
                "{source}: '{}' is a reserved tool name (the egress proxy asks about hosts by it); rename that tool",
                tool.name
            )));
        }
        if !seen.insert(tool.name.as_str()) {
            return Err(Error::ConfigInvalid(format!(
                "{source}: two tools are named '{}'; rename one or leave one toolset out",
                tool.name
            )));
        }
    }
    if let Some(approval) = worker_approval {
        let names: Vec<&str> = seen.into_iter().collect();
        approval.check_names(&names, &format!("{source}: the worker-level approval"))?;
    }
    Ok(())
}
