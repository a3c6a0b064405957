//! Approval decisions for the SDK's standalone functions (`wrapWithDefaultApproval`, the
//! toolset functions). Worker files get theirs from the plan (`worker.rs`); both call
//! the core's one resolve function.

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::approval::{
    self, blocked_error, decide_toolset, known_names, ApprovalConfig, Candidate, Floors, Resolved,
    Toolset,
};
use toolgate_core::executables::{scaffold, CreateCustomToolOptions};
use toolgate_core::fs::config::{
    filesystem_tools, CodeAgentGroup as CoreGroup, FileApprovalConfig,
};
use toolgate_core::fs::{CodeAgentOptions, FilesystemOptions};
use toolgate_core::sandbox::Sandbox;
use toolgate_core::worker::{LoadCustomToolsOptions, ResolveModelOptions};

use crate::enums::{CodeAgentGroup, Decision, OwnApproval, ToolsetKind};
use crate::error::{guarded, infallible, sync, Settled};
use crate::executables::{CreatedTool, NewTool};
use crate::files::{PathRules, ProtectedPath};
use crate::js_value;

/// A tool to decide: its name and its own `needsApproval`.
#[napi(object, object_to_js = false)]
pub struct ToolCandidate {
    pub name: String,
    pub own: OwnApproval,
}

impl From<ToolCandidate> for Candidate {
    fn from(tool: ToolCandidate) -> Self {
        Candidate {
            name: tool.name,
            own: tool.own.into(),
        }
    }
}

/// The effective approval of one tool.
#[napi(object, object_from_js = false)]
#[derive(Clone)]
pub struct ResolvedApproval {
    pub name: String,
    pub decision: Decision,
    /// The tool's own `needsApproval` function decides each call (only with `preApproved`);
    /// for a file tool with path rules, `FileTools.decideCall` decides each call.
    pub dynamic: bool,
    /// What a path rule cannot go below (file tools; see `FileTools.decideCall`).
    pub path_floor: Option<Decision>,
    /// The `TOOL_BLOCKED` message a direct call of a blocked tool throws.
    pub blocked_message: Option<String>,
}

impl ResolvedApproval {
    /// The approval of tool `name`.
    pub fn new(name: String, resolved: Resolved) -> Self {
        let blocked_message = (resolved.decision == approval::Decision::Blocked)
            .then(|| blocked_error(&name).to_string());
        Self {
            decision: resolved.decision.into(),
            dynamic: resolved.dynamic,
            path_floor: resolved.path_floor.map(Into::into),
            blocked_message,
            name,
        }
    }
}

/// Reads an approval block (`{ default?, tools? }`) strictly; `place` names it in errors.
fn approval_config(
    env: &Env,
    value: Option<Unknown<'_>>,
    place: &str,
) -> toolgate_core::Result<ApprovalConfig> {
    js_value::config(env, value).map_err(|err| prefixed(place, err))
}

fn prefixed(place: &str, err: toolgate_core::Error) -> toolgate_core::Error {
    match err {
        toolgate_core::Error::ConfigInvalid(message) => {
            toolgate_core::Error::ConfigInvalid(format!("{place}: {message}"))
        }
        other => other,
    }
}

/// Decides `tools` of one toolset with its approval block: unknown names in the block are
/// refused (`known` lists the accepted names; default: the toolset's tools), then each tool
/// gets its effective decision.
fn decide(
    toolset: Toolset,
    tools: Vec<Candidate>,
    config: &ApprovalConfig,
    known: Vec<String>,
    place: &str,
) -> toolgate_core::Result<Vec<ResolvedApproval>> {
    // A standalone tool may share one approval block with others (`wrapWithDefaultApproval`
    // over a list), so only toolsets check that every entry names one of their tools.
    if toolset != Toolset::Standalone {
        config.check_names(&known, place)?;
    }
    let resolved = decide_toolset(toolset, config, &tools, Floors::default());
    Ok(tools
        .into_iter()
        .zip(resolved)
        .map(|(tool, resolved)| ResolvedApproval::new(tool.name, resolved))
        .collect())
}

/// Decides the tools of a toolset from its `approval` option (`{ default?, tools? }`), with
/// the documented defaults of that toolset. `known` lists the names the block may use (default:
/// the names of `tools`, and for executable tools also without their prefix). Throws
/// `CONFIG_INVALID` for an unknown key or a name that is not one of the tools (except for
/// `tool`: a standalone tool's block may name other tools); `place` names the block in the
/// message (default: `<toolset> approval`).
#[napi]
pub fn decide_toolset_approval(
    env: Env,
    toolset: ToolsetKind,
    tools: Vec<ToolCandidate>,
    approval: Option<Unknown<'_>>,
    known: Option<Vec<String>>,
    place: Option<String>,
) -> napi::Result<Vec<ResolvedApproval>> {
    let toolset = Toolset::from(toolset);
    sync(&env, "decideToolsetApproval", || {
        let place = place.unwrap_or_else(|| format!("{} approval", toolset.as_str()));
        let config = approval_config(&env, approval, &place)?;
        let tools: Vec<Candidate> = tools.into_iter().map(Into::into).collect();
        let known = known.unwrap_or_else(|| {
            let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
            known_names(toolset, &names)
        });
        decide(toolset, tools, &config, known, &place)
    })
}

/// Checks an approval block; `place` names it in the `CONFIG_INVALID` message.
#[napi]
pub fn check_approval_config(
    env: Env,
    config: Option<Unknown<'_>>,
    place: String,
) -> napi::Result<()> {
    sync(&env, "checkApprovalConfig", || {
        approval_config(&env, config, &place).map(|_| ())
    })
}

/// `filesystemToolset`: the work directory, the tools offered (after `readOnly`) with their
/// approvals, and deprecation notes.
#[napi(object, object_from_js = false)]
pub struct FileToolsetPlan {
    pub work_dir: String,
    pub tools: Vec<ResolvedApproval>,
    /// `approval.paths`, checked, for `new FileTools(workDir, pathRules)`.
    pub path_rules: Option<PathRules>,
    /// What the tools may not change (the work directory's git hooks and config), for
    /// `new FileTools(workDir, pathRules, [], protectedPaths)`.
    pub protected_paths: Vec<ProtectedPath>,
    pub deprecations: Vec<String>,
}

/// The protected paths of file tools built on their own in `work_dir`.
fn standalone_protection(work_dir: &std::path::Path) -> Vec<ProtectedPath> {
    ProtectedPath::list(toolgate_core::sandbox_config::protect::file_tool_protection(work_dir))
}

/// The per-tool approval block of a file toolset and its checked path rules.
fn file_rules(
    approval: &FileApprovalConfig,
    place: &str,
) -> toolgate_core::Result<(ApprovalConfig, Option<PathRules>)> {
    approval.check_paths(place)?;
    Ok((
        approval.tool_approval(),
        PathRules::from_core(&approval.paths, place),
    ))
}

/// With path rules, the core decides each call of the offered tools.
fn per_call(approval: &FileApprovalConfig, tools: Vec<ResolvedApproval>) -> Vec<ResolvedApproval> {
    let rules = !approval.paths.is_empty();
    tools
        .into_iter()
        .map(|tool| ResolvedApproval {
            dynamic: tool.dynamic || (rules && tool.decision != Decision::Blocked),
            ..tool
        })
        .collect()
}

/// Reads `filesystemToolset` options strictly and decides its tools.
#[napi]
pub fn plan_filesystem_toolset(env: Env, options: Unknown<'_>) -> napi::Result<FileToolsetPlan> {
    sync(&env, "filesystemToolset", || {
        let options: FilesystemOptions = js_value::config(&env, Some(options))?;
        let work_dir = options.work_dir()?;
        let tools = filesystem_tools(options.config.read_only)
            .iter()
            .map(|name| Candidate::plain(*name))
            .collect();
        let file_approval = options.config.approval.unwrap_or_default();
        let (config, path_rules) = file_rules(&file_approval, "filesystem approval.paths")?;
        let known = filesystem_tools(false)
            .iter()
            .map(|n| n.to_string())
            .collect();
        Ok(FileToolsetPlan {
            work_dir: work_dir.path.display().to_string(),
            tools: per_call(
                &file_approval,
                decide(
                    Toolset::Filesystem,
                    tools,
                    &config,
                    known,
                    "filesystem approval",
                )?,
            ),
            path_rules,
            protected_paths: standalone_protection(&work_dir.path),
            deprecations: work_dir.deprecation.into_iter().collect(),
        })
    })
}

/// Reads `codeAgentTools` options strictly and decides the tools of the group.
#[napi]
pub fn plan_code_agent_tools(env: Env, options: Unknown<'_>) -> napi::Result<FileToolsetPlan> {
    sync(&env, "codeAgentTools", || {
        let options: CodeAgentOptions = js_value::config(&env, Some(options))?;
        let work_dir = toolgate_core::options::WorkDir::resolve(options.work_dir)?;
        let tools = options
            .config
            .group
            .tools()
            .iter()
            .map(|name| Candidate::plain(*name))
            .collect();
        let file_approval = options.config.approval.unwrap_or_default();
        let (config, path_rules) = file_rules(&file_approval, "code_agent approval.paths")?;
        let known = CoreGroup::All
            .tools()
            .iter()
            .map(|n| n.to_string())
            .collect();
        Ok(FileToolsetPlan {
            work_dir: work_dir.display().to_string(),
            tools: per_call(
                &file_approval,
                decide(
                    Toolset::CodeAgent,
                    tools,
                    &config,
                    known,
                    "code_agent approval",
                )?,
            ),
            path_rules,
            protected_paths: standalone_protection(&work_dir),
            deprecations: Vec::new(),
        })
    })
}

/// The tool names of each code-agent group, in the order they are offered.
#[napi]
pub fn code_agent_group_tools(env: Env, group: CodeAgentGroup) -> napi::Result<Vec<String>> {
    infallible(&env, "codeAgentGroupTools", || group_tools(group))
}

fn group_tools(group: CodeAgentGroup) -> Vec<String> {
    let core = match group {
        CodeAgentGroup::Search => CoreGroup::Search,
        CodeAgentGroup::Read => CoreGroup::Read,
        CodeAgentGroup::Write => CoreGroup::Write,
        CodeAgentGroup::All => CoreGroup::All,
    };
    core.tools().iter().map(|name| name.to_string()).collect()
}

/// The documented default approval of every tool of a toolset.
#[napi]
pub fn documented_approvals(
    env: Env,
    toolset: ToolsetKind,
    tools: Vec<String>,
) -> napi::Result<Vec<ResolvedApproval>> {
    let toolset = Toolset::from(toolset);
    infallible(&env, "documentedApprovals", || {
        tools
            .into_iter()
            .map(|name| {
                let decision = toolset.documented_default(&name);
                ResolvedApproval::new(
                    name,
                    Resolved {
                        decision,
                        source: toolgate_core::approval::ApprovalSource::DocumentedDefault,
                        dynamic: false,
                        path_floor: None,
                    },
                )
            })
            .collect()
    })
}

/// `createCustomTool`: where tools are written, the approval of the tool itself, and the
/// sandbox of each new tool's validation run; `write()` creates a tool.
#[napi]
pub struct CreateCustomToolPlan {
    work_dir: PathBuf,
    dir: PathBuf,
    approval: ResolvedApproval,
    sandbox: Option<Arc<Sandbox>>,
    sandbox_warning: Option<String>,
}

/// Reads `createCustomTool` options strictly, decides its approval (default `ask`) and
/// prepares the sandbox its validation runs use.
#[napi]
pub fn plan_create_custom_tool(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<CreateCustomToolPlan> {
    sync(&env, "createCustomTool", || {
        let options: CreateCustomToolOptions = js_value::config(&env, options)?;
        let (work_dir, dir) = options.directories()?;
        let sandbox = options.validation_sandbox(&work_dir)?;
        let config = options.approval.clone().unwrap_or_default();
        let name = "create_custom_tool".to_string();
        let mut decided = decide(
            Toolset::CreateCustomTool,
            vec![Candidate::plain(name.clone())],
            &config,
            vec![name],
            "create_custom_tool approval",
        )?;
        Ok(CreateCustomToolPlan {
            work_dir,
            dir,
            approval: decided.remove(0),
            sandbox: sandbox.sandbox,
            sandbox_warning: sandbox.warning,
        })
    })
}

#[napi]
impl CreateCustomToolPlan {
    /// The project directory.
    #[napi(getter)]
    pub fn work_dir(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "CreateCustomToolPlan.workDir", || {
            self.work_dir.display().to_string()
        })
    }

    /// Where new tools are written.
    #[napi(getter)]
    pub fn dir(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "CreateCustomToolPlan.dir", || {
            self.dir.display().to_string()
        })
    }

    /// The approval of `create_custom_tool`.
    #[napi(getter)]
    pub fn approval(&self, env: Env) -> napi::Result<ResolvedApproval> {
        infallible(&env, "CreateCustomToolPlan.approval", || {
            self.approval.clone()
        })
    }

    /// The one best-effort sandbox warning of this process, when this plan was the first to
    /// have one; `null` otherwise.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "CreateCustomToolPlan.sandboxWarning", || {
            self.sandbox_warning.clone()
        })
    }

    /// Writes an agent's protocol tool into the tool directory (confined to the work
    /// directory when it lies inside) and keeps it only when its `description`, run in the
    /// sandbox, answers correctly. Rejects with `INVALID_INPUT` (the reason, e.g. the tool's
    /// syntax error; nothing is kept) or `PATH_OUTSIDE_ROOT`.
    #[napi(ts_return_type = "Promise<CreatedTool>")]
    pub async fn write(&self, tool: NewTool, replace: Option<bool>) -> Settled<CreatedTool> {
        let work_dir = self.work_dir.clone();
        let dir = self.dir.clone();
        let sandbox = self.sandbox.clone();
        guarded("CreateCustomToolPlan.write", async move {
            let new_tool = scaffold::NewTool {
                name: tool.name,
                description: tool.description,
                input_schema: tool.input_schema,
                language: tool.language.into(),
                code: Some(tool.code),
            };
            let created = scaffold::create_protocol_tool(
                &work_dir,
                &dir,
                &new_tool,
                replace.unwrap_or(false),
                sandbox.as_ref(),
            )
            .await?;
            Ok(CreatedTool {
                name: created.name,
                path: created.path.display().to_string(),
                replaced: created.replaced,
            })
        })
        .await
    }
}

/// `loadCustomTools` options, checked.
#[napi(object, object_from_js = false)]
pub struct CheckedLoadCustomToolsOptions {
    /// The whitelist without repeats, in order.
    pub tools: Option<Vec<String>>,
    pub base_dir: Option<String>,
    /// Milliseconds importing the module may take (the core's default when not given).
    pub import_timeout_ms: f64,
}

/// Reads `loadCustomTools` options strictly (the approval block is decided with the tools).
#[napi]
pub fn check_load_custom_tools_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<CheckedLoadCustomToolsOptions> {
    sync(&env, "loadCustomTools", || {
        let options: LoadCustomToolsOptions = js_value::config(&env, options)?;
        let tools = options.tools.map(|tools| {
            let mut seen = std::collections::BTreeSet::new();
            tools
                .into_iter()
                .filter(|name| seen.insert(name.clone()))
                .collect()
        });
        Ok(CheckedLoadCustomToolsOptions {
            tools,
            base_dir: options.base_dir.map(|dir| dir.display().to_string()),
            import_timeout_ms: options
                .import_timeout_ms
                .map_or(toolgate_core::limits::DEFAULT_IMPORT_TIMEOUT, |timeout| {
                    timeout.0
                })
                .as_millis() as f64,
        })
    })
}

/// Reads `resolveModel` options strictly; returns the base URL, if given.
#[napi]
pub fn check_resolve_model_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<Option<String>> {
    sync(&env, "resolveModel", || {
        js_value::config::<ResolveModelOptions>(&env, options).map(|options| options.base_url)
    })
}

/// Checks a tool name as the model sees it (`^[a-zA-Z0-9_-]+$`, at most 64 characters);
/// returns the reason it is not acceptable, or `null`.
#[napi]
pub fn tool_name_problem(env: Env, name: String) -> napi::Result<Option<String>> {
    infallible(&env, "toolNameProblem", || {
        toolgate_core::limits::check_tool_name(&name, "").err()
    })
}
