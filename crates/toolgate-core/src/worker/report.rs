//! What a planned worker graph may do, as data: `toolgate check worker.yaml` prints it, and
//! `--json` gives it as it is here (the layout is documented in `docs/check.md` and versioned
//! by [`PLAN_REPORT_VERSION`]).
//!
//! For the top worker and every worker it may call: each tool offered with its decision and
//! what decided it, each tool left out and why, the sandbox of the worker and of each process
//! toolset, the path rules (its own and its callers'), its command policies and the effective
//! restrictions of the workers above it, its MCP servers, the workers it may call, and warnings.
//! Nothing is run: the report is made from the plan and the decisions.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::decide::{DecidedTool, McpReports, ModuleTools};
use super::plan::{PlannedWorker, WorkerPlan};
use crate::approval::{ApprovalConfig, ApprovalSource, Decision, OwnApproval, Toolset};
use crate::command::config::{OutputAction, ShellConfig};
use crate::command::CliExecute;
use crate::error::Result;
use crate::fs::config::{filesystem_tools, CodeAgentGroup, FileApprovalConfig};
use crate::fs::rules::PathRule;
use crate::mcp::McpTransport;
use crate::network::NetworkAccess;
use crate::sandbox_config::SandboxScope;

/// The version of the report's layout. It changes only when a field changes meaning or
/// disappears; new fields may appear within a version.
pub const PLAN_REPORT_VERSION: u32 = 1;

/// A worker graph as `toolgate check worker.yaml` reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    pub version: u32,
    /// The top worker file.
    pub file: PathBuf,
    /// The top worker first; a worker comes after the worker that calls it.
    pub workers: Vec<WorkerReport>,
    /// The permissions file the run reads saved rules from (beside the top worker file; it may
    /// not exist yet), `null` where the plan reads none.
    pub permissions_file: Option<PathBuf>,
    /// Every saved rule, with where it comes from: the file and line, when and by whom it was
    /// saved (the layout of `savedRules()` in the SDK).
    pub saved_rules: Vec<serde_json::Value>,
}

/// One worker of the graph.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    /// Its position in `workers`.
    pub index: usize,
    pub name: String,
    pub path: PathBuf,
    /// The index of the worker that calls it (`null` for the top worker).
    pub parent: Option<usize>,
    /// Worker names from the top down to this one.
    pub chain: Vec<String>,
    pub work_dir: PathBuf,
    pub readonly: bool,
    pub model: Option<String>,
    /// The tools the model is offered, in order.
    pub tools: Vec<ToolReport>,
    /// The tools it is not offered, and why.
    pub left_out: Vec<LeftOutReport>,
    /// The worker-level kernel sandbox.
    pub sandbox: SandboxReport,
    /// The sandbox of each process toolset (`shell`, `cli_execute`, `executables`, `mcp`).
    pub toolset_sandboxes: Vec<ToolsetSandboxReport>,
    /// The path rules of its file toolsets, and those of every worker above that apply too.
    pub path_rules: Vec<PathRulesReport>,
    /// Its own command policies.
    pub commands: CommandsReport,
    /// Every worker above it (outermost first) with what it imposes on it: its command rules,
    /// allowlist and guardrails, and its worker-level approval (a floor). Its sandbox bounds
    /// this worker's (already in `sandbox`), its path rules are in `pathRules`, and the floors
    /// its own decisions set show in each tool's `decidedBy` (`caller-floor`).
    pub callers: Vec<CallerReport>,
    pub mcp_servers: Vec<McpServerReport>,
    /// The workers it may call, each a tool.
    pub delegates: Vec<DelegateReport>,
    pub warnings: Vec<String>,
}

/// A tool the model is offered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolReport {
    pub name: String,
    pub toolset: &'static str,
    /// `preApproved` or `ask` (blocked tools are in `leftOut`).
    pub decision: Decision,
    /// What gave it that decision (`tool-entry`, `own-needs-approval`, `toolset-default`,
    /// `documented-default`, `worker-floor`, `caller-floor`).
    pub decided_by: &'static str,
    /// The same in words.
    pub reason: String,
    /// What decides each call on top of `decision`, when something does (shell rules, path
    /// rules, the tool's own function, the calling workers' rules).
    pub per_call: Option<String>,
}

/// A tool the model is not offered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOutReport {
    pub name: String,
    pub toolset: &'static str,
    pub reason: String,
}

/// An effective kernel sandbox.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxReport {
    /// `enforce`, `best-effort` or `off`.
    pub mode: &'static str,
    pub network: NetworkReport,
    pub work_dir: PathBuf,
    pub readonly: bool,
    /// Extra read/execute roots (besides the system runtime).
    pub read: Vec<PathBuf>,
    /// Extra writable roots (besides a private HOME/TMPDIR per call).
    pub write: Vec<PathBuf>,
    /// The paths kept read-only for processes and never changed by the file tools (issue 22
    /// §2: the graph's configuration, git hooks and config, the permissions file, `protect`
    /// patterns); always computed by this build (`Option` keeps the JSON layout of version 1).
    pub protected_paths: Option<Vec<PathBuf>>,
}

/// What processes may reach on the network.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkReport {
    /// `off`, `open` or `hosts` (through the egress proxy, by host).
    pub access: &'static str,
    pub description: String,
}

/// The sandbox of one process toolset.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsetSandboxReport {
    pub toolset: &'static str,
    pub sandbox: SandboxReport,
}

/// The path rules of one file toolset.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathRulesReport {
    /// `filesystem` or `code_agent`.
    pub toolset: &'static str,
    /// The worker whose rules they are (this worker's name, or a caller's).
    pub worker: String,
    /// Whether a worker above wrote them (they apply to this worker's file tools too).
    pub inherited: bool,
    /// The work directory the patterns are relative to.
    pub work_dir: PathBuf,
    pub rules: Vec<PathRule>,
}

/// The command policies of a worker.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandsReport {
    pub shell: Option<ShellRulesReport>,
    pub cli_execute: Option<CliExecuteReport>,
}

/// A `shell` toolset's rules.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellRulesReport {
    pub rules: Vec<ShellRuleReport>,
    /// The decision of a command no rule matches (`null`: blocked).
    pub default: Option<Decision>,
}

/// One shell rule.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellRuleReport {
    pub pattern: String,
    pub approval: Decision,
}

/// A `cli_execute` toolset's allowlist and guardrails.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CliExecuteReport {
    pub allowed_binaries: Vec<BinaryReport>,
    pub deny_commands: Vec<String>,
    pub deny_output: Vec<DenyOutputReport>,
}

/// One allowlisted binary.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BinaryReport {
    pub name: String,
    /// Where it was found on PATH (`null`: not found, not offered).
    pub path: Option<PathBuf>,
}

/// One `deny_output` guardrail.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DenyOutputReport {
    pub pattern: String,
    /// `block` or `redact`.
    pub action: &'static str,
}

/// What one worker above imposes on the commands and files of this one.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallerReport {
    pub worker: String,
    pub path: PathBuf,
    /// Its shell rules: they decide this worker's shell and cli_execute commands too.
    pub shell: Option<ShellRulesReport>,
    /// Its allowlist and guardrails: they bind this worker's commands too.
    pub cli_execute: Option<CliExecuteReport>,
    /// Its worker-level approval: a floor for this worker's tools.
    pub approval: Option<ApprovalConfig>,
}

/// One MCP server of the `mcp` toolset (variable values and header values are not shown).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerReport {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub url: Option<String>,
    /// The names of the variables (stdio) or headers (http) it is given.
    pub given: Vec<String>,
    /// The tools it listed, as it names them (`null` when it was not asked).
    pub listed: Option<Vec<String>>,
}

/// A worker this worker may call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegateReport {
    /// The tool name.
    pub name: String,
    /// The called worker's index in `workers`.
    pub worker: usize,
    pub path: PathBuf,
}

impl WorkerPlan {
    /// The report of this plan: every tool decided as [`WorkerPlan::decide_with_mcp`] decides
    /// it (with what the SDK found in the tools modules and on the MCP servers), and the
    /// policies the plan built. A worker whose MCP servers were not listed (`mcp` has no report
    /// for it) is reported without their tools, with a warning. Errors are those of deciding.
    pub fn report(
        &self,
        modules: &BTreeMap<usize, ModuleTools>,
        mcp: &McpReports,
    ) -> Result<PlanReport> {
        let decided = self.decide_all(modules, mcp, false)?;
        let workers = self
            .workers()
            .iter()
            .enumerate()
            .map(|(index, planned)| {
                let tools = decided.get(index).map(Vec::as_slice).unwrap_or_default();
                self.worker_report(index, planned, tools, modules.get(&index), mcp.get(&index))
            })
            .collect();
        Ok(PlanReport {
            version: PLAN_REPORT_VERSION,
            file: self.workers()[0].worker.path.clone(),
            workers,
            permissions_file: self
                .permissions()
                .map(|permissions| permissions.path().to_path_buf()),
            saved_rules: self.saved_rules(),
        })
    }

    fn worker_report(
        &self,
        index: usize,
        planned: &PlannedWorker,
        decided: &[DecidedTool],
        module: Option<&ModuleTools>,
        mcp: Option<&Vec<crate::mcp::ServerTools>>,
    ) -> WorkerReport {
        let worker = &planned.worker;
        let mut left_out = Vec::new();
        let mut tools = Vec::new();
        for tool in decided {
            if tool.resolved.decision == Decision::Blocked {
                left_out.push(LeftOutReport {
                    name: tool.name.clone(),
                    toolset: tool.toolset.as_str(),
                    reason: format!("blocked by {}", tool.resolved.source.describe()),
                });
                continue;
            }
            // The shell tool has no fixed decision of its own: its rules decide each command.
            let by_rules = tool.toolset == Toolset::Shell
                && tool.resolved.source == ApprovalSource::OwnNeedsApproval;
            tools.push(ToolReport {
                name: tool.name.clone(),
                toolset: tool.toolset.as_str(),
                decision: tool.resolved.decision,
                decided_by: if by_rules {
                    "shell-rules"
                } else {
                    tool.resolved.source.as_str()
                },
                reason: if by_rules {
                    "its shell rules".to_string()
                } else {
                    tool.resolved.source.describe().to_string()
                },
                per_call: per_call(planned, tool, module),
            });
        }
        left_out.extend(left_out_by_configuration(planned, module, mcp));
        let mut warnings = worker.warnings.clone();
        warnings.extend(planned.sandbox_warning.clone());
        if planned.mcp.is_some() && mcp.is_none() {
            warnings.push(
                "the MCP servers of toolsets.mcp were not listed, so their tools are not shown"
                    .into(),
            );
        }
        WorkerReport {
            index,
            name: worker.name.clone(),
            path: worker.path.clone(),
            parent: planned.parent,
            chain: planned.chain.clone(),
            work_dir: worker.work_dir.clone(),
            readonly: worker.readonly,
            model: worker.model.clone(),
            tools,
            left_out,
            sandbox: sandbox_report(&planned.sandbox),
            toolset_sandboxes: planned
                .toolset_sandboxes
                .iter()
                .map(|(toolset, scope)| ToolsetSandboxReport {
                    toolset,
                    sandbox: sandbox_report(scope),
                })
                .collect(),
            path_rules: self.path_rules_report(planned),
            commands: CommandsReport {
                shell: worker.toolsets.shell.as_ref().map(shell_report),
                cli_execute: planned
                    .cli_execute
                    .as_deref()
                    .map(|cli| cli_report(cli, worker)),
            },
            callers: self.callers_report(planned),
            mcp_servers: mcp_report(planned, mcp),
            delegates: planned
                .delegates
                .iter()
                .map(|delegate| DelegateReport {
                    name: delegate.name.clone(),
                    worker: delegate.worker,
                    path: self.workers()[delegate.worker].worker.path.clone(),
                })
                .collect(),
            warnings,
        }
    }

    /// The path rules of `planned`'s file toolsets, then those of every worker above it.
    fn path_rules_report(&self, planned: &PlannedWorker) -> Vec<PathRulesReport> {
        let mut reports = own_path_rules(planned, false);
        let mut parent = planned.parent;
        while let Some(index) = parent {
            let caller = &self.workers()[index];
            reports.extend(own_path_rules(caller, true));
            parent = caller.parent;
        }
        reports
    }

    /// Every worker above `planned`, outermost first, with what it imposes on it.
    fn callers_report(&self, planned: &PlannedWorker) -> Vec<CallerReport> {
        let mut callers = Vec::new();
        let mut parent = planned.parent;
        while let Some(index) = parent {
            let caller = &self.workers()[index];
            let layer = planned
                .callers
                .layers()
                .find(|layer| layer.file == caller.worker.path);
            callers.push(CallerReport {
                worker: caller.worker.name.clone(),
                path: caller.worker.path.clone(),
                shell: layer
                    .filter(|layer| layer.binds_shell())
                    .and(caller.worker.toolsets.shell.as_ref())
                    .map(shell_report),
                cli_execute: layer
                    .filter(|layer| layer.binds_cli_execute())
                    .and(caller.cli_execute.as_ref())
                    .map(|cli| cli_report(cli, &caller.worker)),
                approval: caller.worker.approval.clone(),
            });
            parent = caller.parent;
        }
        callers.reverse();
        callers
    }
}

/// What decides each call of `tool` on top of its decision, in words.
fn per_call(
    planned: &PlannedWorker,
    tool: &DecidedTool,
    module: Option<&ModuleTools>,
) -> Option<String> {
    let callers = planned.callers.has_rules();
    match tool.toolset {
        Toolset::Shell => Some(if callers {
            "each command, by the shell rules and those of the calling workers (strictest wins)"
                .into()
        } else {
            "each command, by the shell rules".into()
        }),
        Toolset::CliExecute if tool.resolved.dynamic => {
            Some("each call, by the shell rules of the calling workers".into())
        }
        Toolset::Filesystem | Toolset::CodeAgent if tool.resolved.dynamic => {
            Some("each call, by the path rules".into())
        }
        Toolset::ToolsModule if tool.resolved.dynamic => {
            let own = module
                .and_then(|module| module.selected.iter().find(|c| c.name == tool.name))
                .map(|candidate| candidate.own);
            (own == Some(OwnApproval::Dynamic))
                .then(|| "each call, by the tool's own needsApproval function".into())
        }
        _ => None,
    }
}

/// Tools a toolset has but the worker is not offered, by its configuration.
fn left_out_by_configuration(
    planned: &PlannedWorker,
    module: Option<&ModuleTools>,
    mcp: Option<&Vec<crate::mcp::ServerTools>>,
) -> Vec<LeftOutReport> {
    let worker = &planned.worker;
    let mut left_out = Vec::new();
    let mut add = |name: String, toolset: Toolset, reason: String| {
        left_out.push(LeftOutReport {
            name,
            toolset: toolset.as_str(),
            reason,
        })
    };
    if let (Some(config), Some(offered)) = (&worker.toolsets.filesystem, &planned.filesystem_tools)
    {
        let why = if worker.readonly && !config.read_only {
            "sandbox.readonly: nothing may write in the work directory"
        } else {
            "read_only: true"
        };
        for name in filesystem_tools(false) {
            if !offered.contains(name) {
                add(name.to_string(), Toolset::Filesystem, why.into());
            }
        }
    }
    if let (Some(config), Some(group)) = (&worker.toolsets.code_agent, planned.code_agent_group) {
        for name in CodeAgentGroup::All.tools() {
            if group.tools().contains(name) {
                continue;
            }
            let narrowed = config.group != group && config.group.tools().contains(name);
            let why = if narrowed {
                "sandbox.readonly narrows the group to 'read'".to_string()
            } else {
                format!("not in group '{}'", group_name(config.group))
            };
            add(name.to_string(), Toolset::CodeAgent, why);
        }
    }
    if let Some(module) = module {
        for name in &module.available {
            if !module.selected.iter().any(|tool| &tool.name == name) {
                add(
                    name.clone(),
                    Toolset::ToolsModule,
                    "not in toolsets.custom.tools".into(),
                );
            }
        }
    }
    if let (Some(toolset), Some(listed)) = (&planned.mcp, mcp) {
        let selected = toolset.select(listed).unwrap_or_default();
        for server in listed {
            for tool in &server.tools {
                let offered = selected
                    .iter()
                    .any(|s| s.server == server.server && &s.tool == tool);
                if !offered {
                    add(
                        format!("{}.{tool}", server.server),
                        Toolset::Mcp,
                        "not in toolsets.mcp.tools".into(),
                    );
                }
            }
        }
    }
    if let Some(registry) = &planned.executables {
        for diagnostic in registry.diagnostics() {
            add(
                diagnostic.path.display().to_string(),
                Toolset::Executables,
                format!("{}: {}", diagnostic.kind.as_str(), diagnostic.reason),
            );
        }
    }
    if let Some(cli) = &planned.cli_execute {
        for binary in cli.availability() {
            if binary.path.is_none() {
                add(
                    format!("cli_execute: {}", binary.name),
                    Toolset::CliExecute,
                    "allowed_binaries entry not found on PATH (the model is not offered it)".into(),
                );
            }
        }
    }
    left_out
}

fn group_name(group: CodeAgentGroup) -> &'static str {
    match group {
        CodeAgentGroup::Search => "search",
        CodeAgentGroup::Read => "read",
        CodeAgentGroup::Write => "write",
        CodeAgentGroup::All => "all",
    }
}

/// A scope as the report shows it.
pub fn sandbox_report(scope: &SandboxScope) -> SandboxReport {
    let access = scope.network.access();
    SandboxReport {
        mode: scope.mode.as_str(),
        network: NetworkReport {
            access: match access {
                NetworkAccess::Off => "off",
                NetworkAccess::Open => "open",
                NetworkAccess::Hosts(_) => "hosts",
            },
            description: access.describe(),
        },
        work_dir: scope.work_dir.clone(),
        readonly: scope.readonly,
        read: scope.read.clone(),
        write: scope.write.clone(),
        protected_paths: Some(
            scope
                .guards
                .protected()
                .iter()
                .map(|guarded| guarded.path.clone())
                .collect(),
        ),
    }
}

fn own_path_rules(planned: &PlannedWorker, inherited: bool) -> Vec<PathRulesReport> {
    let worker = &planned.worker;
    let lists: [(&'static str, Option<&FileApprovalConfig>); 2] = [
        (
            "filesystem",
            worker
                .toolsets
                .filesystem
                .as_ref()
                .and_then(|c| c.approval.as_ref()),
        ),
        (
            "code_agent",
            worker
                .toolsets
                .code_agent
                .as_ref()
                .and_then(|c| c.approval.as_ref()),
        ),
    ];
    lists
        .into_iter()
        .filter_map(|(toolset, approval)| {
            let approval = approval.filter(|approval| !approval.paths.is_empty())?;
            Some(PathRulesReport {
                toolset,
                worker: worker.name.clone(),
                inherited,
                work_dir: worker.work_dir.clone(),
                rules: approval.paths.clone(),
            })
        })
        .collect()
}

fn shell_report(config: &ShellConfig) -> ShellRulesReport {
    ShellRulesReport {
        rules: config
            .rules
            .iter()
            .map(|rule| ShellRuleReport {
                pattern: rule.pattern.clone(),
                approval: rule.approval,
            })
            .collect(),
        default: config.default,
    }
}

fn cli_report(cli: &CliExecute, worker: &super::Worker) -> CliExecuteReport {
    let guardrails = worker
        .toolsets
        .cli_execute
        .as_ref()
        .map(|config| config.guardrails.clone())
        .unwrap_or_default();
    CliExecuteReport {
        allowed_binaries: cli
            .availability()
            .iter()
            .map(|binary| BinaryReport {
                name: binary.name.clone(),
                path: binary.path.clone(),
            })
            .collect(),
        deny_commands: guardrails
            .deny_commands
            .iter()
            .map(|entry| entry.pattern.clone())
            .collect(),
        deny_output: guardrails
            .deny_output
            .iter()
            .map(|entry| DenyOutputReport {
                pattern: entry.pattern.clone(),
                action: match entry.action {
                    OutputAction::Block => "block",
                    OutputAction::Redact => "redact",
                },
            })
            .collect(),
    }
}

fn mcp_report(
    planned: &PlannedWorker,
    listed: Option<&Vec<crate::mcp::ServerTools>>,
) -> Vec<McpServerReport> {
    let Some(toolset) = &planned.mcp else {
        return Vec::new();
    };
    toolset
        .servers()
        .iter()
        .map(|server| {
            let listed = listed.and_then(|listed| {
                listed
                    .iter()
                    .find(|tools| tools.server == server.name)
                    .map(|tools| tools.tools.clone())
            });
            match &server.transport {
                McpTransport::Stdio { command, args, env } => McpServerReport {
                    name: server.name.clone(),
                    transport: "stdio",
                    command: Some(command.clone()),
                    args: args.clone(),
                    url: None,
                    given: env.iter().map(|(name, _)| name.clone()).collect(),
                    listed,
                },
                McpTransport::Http { url, headers } => McpServerReport {
                    name: server.name.clone(),
                    transport: "http",
                    command: None,
                    args: Vec::new(),
                    url: Some(url.clone()),
                    given: headers.iter().map(|(name, _)| name.clone()).collect(),
                    listed,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
