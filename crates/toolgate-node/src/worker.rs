//! Worker files: the plan of a worker and its whole delegation graph, made off the JavaScript
//! thread and frozen, with every toolset's policy built and every tool's approval decided.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::worker::{
    self, LoadOptions, LoadWorkerOptions, ModuleTools, PlannedWorker, WorkerToolsOptions,
};

use crate::approval::{ResolvedApproval, ToolCandidate};
use crate::builtins::BuiltinTools;
use crate::command::{CliExecutePolicy, ShellPolicy};
use crate::enums::{CodeAgentGroup, ToolCallFormat, ToolsetKind};
use crate::error::{guarded, infallible, sync, Settled};
use crate::executables::ExecutableToolRegistry;
use crate::files::{PathRules, ProtectedPath};
use crate::js_value;
use crate::mcp::{McpToolsetPlan, McpWorkerReport};
use crate::sandbox::SandboxSummary;
use toolgate_core::fs::config::FileApprovalConfig;

/// `loadWorker` options, checked.
#[napi(object, object_from_js = false)]
pub struct CheckedLoadWorkerOptions {
    /// The work directory that replaces the sandbox root, absolute.
    pub work_dir: Option<String>,
    pub readonly: bool,
}

/// Reads `loadWorker` options strictly.
#[napi]
pub fn check_load_worker_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<CheckedLoadWorkerOptions> {
    sync(&env, "loadWorker", || {
        let options: LoadWorkerOptions = js_value::config(&env, options)?;
        let work_dir = options
            .work_dir
            .map(|dir| toolgate_core::options::WorkDir::resolve(Some(dir)))
            .transpose()?;
        Ok(CheckedLoadWorkerOptions {
            work_dir: work_dir.map(|dir| dir.display().to_string()),
            readonly: options.readonly,
        })
    })
}

/// Reads `workerTools` options strictly (the approval block is decided with the tools).
#[napi]
pub fn check_worker_tools_options(
    env: Env,
    options: Option<Unknown<'_>>,
) -> napi::Result<CheckedLoadWorkerOptions> {
    sync(&env, "workerTools", || {
        let options: WorkerToolsOptions = js_value::config(&env, options)?;
        let work_dir = options
            .work_dir
            .map(|dir| toolgate_core::options::WorkDir::resolve(Some(dir)))
            .transpose()?;
        Ok(CheckedLoadWorkerOptions {
            work_dir: work_dir.map(|dir| dir.display().to_string()),
            readonly: options.readonly,
        })
    })
}

/// Reads the worker file at `path` and every worker it may call (each with its caller's
/// sandbox), checks the graph, builds every toolset's policy, discovers the executable tools
/// and freezes every file read. Runs off the JavaScript thread. Rejects with `CONFIG_INVALID`
/// naming the file, line and column.
#[napi(ts_return_type = "Promise<WorkerPlan>")]
pub async fn plan_worker(
    path: String,
    work_dir: Option<String>,
    readonly: Option<bool>,
) -> Settled<WorkerPlan> {
    guarded("planWorker", async move {
        let options = LoadOptions {
            work_dir: work_dir.map(PathBuf::from),
            readonly: readonly.unwrap_or(false),
        };
        let plan = tokio::task::spawn_blocking(move || {
            worker::plan_worker(std::path::Path::new(&path), &options)
        })
        .await
        .map_err(|err| toolgate_core::Error::Internal(format!("planWorker: {err}")))??;
        let mut plan = plan;
        plan.discover().await?;
        Ok(WorkerPlan {
            inner: Arc::new(plan),
        })
    })
    .await
}

/// A tools module a worker names.
#[napi(object, object_from_js = false)]
pub struct PlannedModule {
    /// The module file, absolute.
    pub module: String,
    /// The whitelist, when the worker file gives one.
    pub tools: Option<Vec<String>>,
}

/// A worker another worker may call, as the caller's tool.
#[napi(object, object_from_js = false)]
pub struct PlannedDelegate {
    /// The tool name (the called worker's name).
    pub name: String,
    pub description: String,
    /// Index of the called worker in the plan.
    pub worker: u32,
}

/// One worker of a plan, as read and resolved (absolute paths, instructions in place).
#[napi(object, object_from_js = false)]
pub struct PlannedWorkerInfo {
    pub name: String,
    pub description: Option<String>,
    pub model: Option<String>,
    pub instructions: String,
    pub compatible_models: Vec<String>,
    pub max_steps: Option<u32>,
    /// `xml`: Forge's `<tool>` blocks, through the `xmlToolCalls()` middleware.
    pub tool_call_format: ToolCallFormat,
    /// Whether an empty task is accepted (golem-forge's `allow_empty_input`).
    pub allow_empty_input: bool,
    /// The JSON Schema (as JSON text) the final result must match (`output_schema_ref`).
    pub output_schema: Option<String>,
    /// The canonical worker file.
    pub path: String,
    /// The work directory (sandbox root and restriction), canonical.
    pub work_dir: String,
    pub readonly: bool,
    /// Keys accepted but not acted on, and other things the user should know.
    pub warnings: Vec<String>,
    /// The calling worker's index (`null` for the top worker).
    pub parent: Option<u32>,
    /// Worker names from the top down to this one.
    pub chain: Vec<String>,
    /// `filesystem` tools after `read_only` and the sandbox's `readonly`.
    pub filesystem_tools: Option<Vec<String>>,
    /// `code_agent` group after the sandbox's `readonly`.
    pub code_agent_group: Option<CodeAgentGroup>,
    /// `toolsets.filesystem.approval.paths`, for its `FileTools`.
    pub filesystem_path_rules: Option<PathRules>,
    /// `toolsets.code_agent.approval.paths`, for its `FileTools`.
    pub code_agent_path_rules: Option<PathRules>,
    pub shell: bool,
    pub cli_execute: bool,
    pub executables: bool,
    /// Whether the worker has an `mcp` toolset (see `WorkerPlan.mcpToolset`).
    pub mcp: bool,
    /// Whether the worker has the builtins toolset.
    pub builtins: bool,
    pub custom: Option<PlannedModule>,
    pub delegates: Vec<PlannedDelegate>,
    /// The worker-level kernel sandbox (the caller's, narrowed, for a called worker).
    pub sandbox: SandboxSummary,
    /// The sandbox of each process toolset, after its own narrowing.
    pub toolset_sandboxes: Vec<ToolsetSandbox>,
    /// The one best-effort sandbox warning of the process, when this worker's sandboxes were
    /// the first to have one.
    pub sandbox_warning: Option<String>,
    /// The audit log file its runs append to (`audit.file`), absolute.
    pub audit_file: Option<String>,
}

/// The kernel sandbox of one toolset of a worker.
#[napi(object, object_from_js = false)]
pub struct ToolsetSandbox {
    /// `shell`, `cli_execute`, `executables` or `mcp`.
    pub toolset: String,
    pub sandbox: SandboxSummary,
}

/// The path rules of one file toolset of `worker`, named as in its worker file.
fn file_rules(
    worker: &toolgate_core::worker::Worker,
    toolset: &str,
    approval: impl Fn(&toolgate_core::worker::ToolsetsConfig) -> Option<&FileApprovalConfig>,
) -> Option<PathRules> {
    let approval = approval(&worker.toolsets)?;
    PathRules::from_core(
        &approval.paths,
        &format!(
            "{}: toolsets.{toolset} approval.paths",
            worker.path.display()
        ),
    )
}

fn index_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

impl From<&PlannedWorker> for PlannedWorkerInfo {
    fn from(planned: &PlannedWorker) -> Self {
        let worker = &planned.worker;
        Self {
            name: worker.name.clone(),
            description: worker.description.clone(),
            model: worker.model.clone(),
            instructions: worker.instructions.clone(),
            compatible_models: worker.compatible_models.clone(),
            max_steps: worker.max_steps,
            tool_call_format: worker.tool_call_format.into(),
            allow_empty_input: worker.allow_empty_input,
            output_schema: worker
                .output_schema
                .as_ref()
                .map(|schema| schema.to_string()),
            path: worker.path.display().to_string(),
            work_dir: worker.work_dir.display().to_string(),
            readonly: worker.readonly,
            warnings: worker.warnings.clone(),
            parent: planned.parent.map(index_u32),
            chain: planned.chain.clone(),
            filesystem_tools: planned
                .filesystem_tools
                .as_ref()
                .map(|tools| tools.iter().map(|name| name.to_string()).collect()),
            code_agent_group: planned.code_agent_group.map(Into::into),
            filesystem_path_rules: file_rules(worker, "filesystem", |t| {
                t.filesystem.as_ref().and_then(|c| c.approval.as_ref())
            }),
            code_agent_path_rules: file_rules(worker, "code_agent", |t| {
                t.code_agent.as_ref().and_then(|c| c.approval.as_ref())
            }),
            shell: planned.shell.is_some(),
            cli_execute: planned.cli_execute.is_some(),
            executables: planned.executables.is_some(),
            mcp: planned.mcp.is_some(),
            builtins: planned.builtins.is_some(),
            custom: worker.toolsets.custom.as_ref().map(|custom| PlannedModule {
                module: custom.module.display().to_string(),
                tools: custom.tools.clone(),
            }),
            delegates: planned
                .delegates
                .iter()
                .map(|delegate| PlannedDelegate {
                    name: delegate.name.clone(),
                    description: delegate.description.clone(),
                    worker: index_u32(delegate.worker),
                })
                .collect(),
            sandbox: SandboxSummary::from(&planned.sandbox),
            toolset_sandboxes: planned
                .toolset_sandboxes
                .iter()
                .map(|(toolset, scope)| {
                    // What each of the toolset's programs is granted on top (its directory,
                    // its prefix's runtime parts, its file), for `toolgate check --sandbox`.
                    let programs = match *toolset {
                        "executables" => planned
                            .executables
                            .as_ref()
                            .map(|registry| registry.programs()),
                        "mcp" => planned.mcp.as_ref().map(|mcp| mcp.programs()),
                        "cli_execute" => planned.cli_execute.as_ref().map(|cli| cli.programs()),
                        "shell" => planned.shell.as_ref().map(|shell| shell.programs()),
                        _ => None,
                    };
                    ToolsetSandbox {
                        toolset: toolset.to_string(),
                        sandbox: SandboxSummary::with_programs(
                            scope,
                            &programs.unwrap_or_default(),
                        ),
                    }
                })
                .collect(),
            sandbox_warning: planned.sandbox_warning.clone(),
            audit_file: worker
                .audit_file
                .as_ref()
                .map(|file| file.display().to_string()),
        }
    }
}

/// What the SDK found in one worker's tools module.
#[napi(object, object_to_js = false)]
pub struct ModuleReport {
    /// Index of the worker in the plan.
    pub worker: u32,
    /// Every valid tool name of the module (for approval name checks).
    pub available: Vec<String>,
    /// The tools the worker gets, in order, with their own `needsApproval`.
    pub selected: Vec<ToolCandidate>,
}

/// The files a worker's tools module loaded when the SDK imported it.
#[napi(object, object_to_js = false)]
pub struct ModuleImportReport {
    /// Index of the worker in the plan.
    pub worker: u32,
    /// Every file the import loaded (the module, what it imports, packages included), absolute.
    pub files: Vec<String>,
}

/// One protected or hidden path of a sandbox and why.
#[napi(object, object_from_js = false)]
pub struct GuardedPathInfo {
    pub path: String,
    /// `protected` (read-only for processes, never changed by the file tools) or `hidden`
    /// (processes cannot read, write, link or create it).
    pub kind: String,
    /// Why: `the worker file of 'main'`, `the path rule … '.env*' (blocked)`, …
    pub reason: String,
    pub exists: bool,
    /// Whether the kernel acts on it in this sandbox (a protected path inside a writable
    /// root, a hidden one inside a readable root); elsewhere the sandbox refuses it anyway.
    pub enforced: bool,
}

/// The protected and hidden paths of one sandbox of a worker.
#[napi(object, object_from_js = false)]
pub struct SandboxGuardsInfo {
    /// `worker` (the worker-level sandbox, whose paths its file tools also refuse to change),
    /// or the process toolset: `shell`, `cli_execute`, `executables`, `mcp`.
    pub sandbox: String,
    pub paths: Vec<GuardedPathInfo>,
}

/// One tool of a worker with its toolset and effective approval.
#[napi(object, object_from_js = false)]
pub struct PlannedTool {
    pub toolset: ToolsetKind,
    pub approval: ResolvedApproval,
}

/// A worker and everything it may call, frozen when the plan was made.
#[napi]
pub struct WorkerPlan {
    pub(crate) inner: Arc<worker::WorkerPlan>,
}

impl WorkerPlan {
    fn planned(&self, index: u32) -> toolgate_core::Result<&PlannedWorker> {
        self.inner.worker(index as usize)
    }
}

#[napi]
impl WorkerPlan {
    /// The workers, the top one first; a worker comes after the worker that calls it.
    #[napi]
    pub fn workers(&self, env: Env) -> napi::Result<Vec<PlannedWorkerInfo>> {
        infallible(&env, "WorkerPlan.workers", || {
            self.inner
                .workers()
                .iter()
                .map(PlannedWorkerInfo::from)
                .collect()
        })
    }

    /// The built shell policy of worker `index`, or `null`.
    #[napi]
    pub fn shell_policy(&self, env: Env, index: u32) -> napi::Result<Option<ShellPolicy>> {
        sync(&env, "WorkerPlan.shellPolicy", || {
            let planned = self.planned(index)?;
            Ok(match (&planned.shell, &planned.worker.toolsets.shell) {
                (Some(policy), Some(config)) => Some(ShellPolicy::shared(
                    Arc::clone(policy),
                    Arc::new(config.clone()),
                )),
                _ => None,
            })
        })
    }

    /// The built `cli_execute` policy of worker `index`, or `null`.
    #[napi]
    pub fn cli_execute_policy(
        &self,
        env: Env,
        index: u32,
    ) -> napi::Result<Option<CliExecutePolicy>> {
        sync(&env, "WorkerPlan.cliExecutePolicy", || {
            let planned = self.planned(index)?;
            Ok(
                match (&planned.cli_execute, &planned.worker.toolsets.cli_execute) {
                    (Some(policy), Some(config)) => Some(CliExecutePolicy::shared(
                        Arc::clone(policy),
                        Arc::new(config.clone()),
                    )),
                    _ => None,
                },
            )
        })
    }

    /// The discovered, frozen executable tools of worker `index`, or `null`.
    #[napi]
    pub fn executable_registry(
        &self,
        env: Env,
        index: u32,
    ) -> napi::Result<Option<ExecutableToolRegistry>> {
        sync(&env, "WorkerPlan.executableRegistry", || {
            let planned = self.planned(index)?;
            Ok(planned
                .executables
                .as_ref()
                .map(|registry| ExecutableToolRegistry::shared(Arc::clone(registry))))
        })
    }

    /// The built-in tools of worker `index`, or `null`.
    #[napi]
    pub fn builtin_tools(&self, env: Env, index: u32) -> napi::Result<Option<BuiltinTools>> {
        sync(&env, "WorkerPlan.builtinTools", || {
            let planned = self.planned(index)?;
            Ok(planned
                .builtins
                .as_ref()
                .map(|tools| BuiltinTools::shared(Arc::clone(tools))))
        })
    }

    /// The `mcp` toolset of worker `index`, or `null`.
    #[napi]
    pub fn mcp_toolset(&self, env: Env, index: u32) -> napi::Result<Option<McpToolsetPlan>> {
        sync(&env, "WorkerPlan.mcpToolset", || {
            let planned = self.planned(index)?;
            Ok(planned
                .mcp
                .as_ref()
                .map(|toolset| McpToolsetPlan::shared(Arc::clone(toolset))))
        })
    }

    /// Decides every tool of every worker, top-down: each toolset's approval, the worker-level
    /// floor, and the decisions of the workers above (a called worker is at least as strict as
    /// its callers, tool by tool). `modules` reports what the SDK found in each tools module,
    /// `mcp` what the MCP servers of each worker's `mcp` toolset listed. Throws
    /// `CONFIG_INVALID` for an approval entry naming no tool, a reserved or a duplicate tool
    /// name.
    #[napi]
    pub fn decide(
        &self,
        env: Env,
        modules: Vec<ModuleReport>,
        mcp: Option<Vec<McpWorkerReport>>,
    ) -> napi::Result<Vec<Vec<PlannedTool>>> {
        sync(&env, "WorkerPlan.decide", || {
            let (modules, mcp) = reports(modules, mcp);
            let decided = self.inner.decide_with_mcp(&modules, &mcp)?;
            Ok(decided
                .into_iter()
                .map(|tools| {
                    tools
                        .into_iter()
                        .map(|tool| PlannedTool {
                            toolset: tool.toolset.into(),
                            approval: ResolvedApproval::new(tool.name, tool.resolved),
                        })
                        .collect()
                })
                .collect())
        })
    }

    /// Protects what the tools modules imported (the SDK reports every file each import
    /// loaded), and the SDK's own package folder `sdkRoot` when it is an installation (below
    /// `node_modules`), in every sandbox of the graph, preparing again the sandboxes that now
    /// protect more. Call it before taking the plan's tools. Throws `INVALID_INPUT` for an
    /// unknown worker or a relative path, `SANDBOX_UNAVAILABLE` where the kernel cannot protect
    /// them.
    #[napi]
    pub fn protect_module_imports(
        &mut self,
        env: Env,
        reports: Vec<ModuleImportReport>,
        sdk_root: Option<String>,
    ) -> napi::Result<()> {
        sync(&env, "WorkerPlan.protectModuleImports", || {
            let reports: Vec<worker::ModuleImports> = reports
                .into_iter()
                .map(|report| worker::ModuleImports {
                    worker: report.worker as usize,
                    files: report.files.into_iter().map(PathBuf::from).collect(),
                })
                .collect();
            let plan = Arc::get_mut(&mut self.inner).ok_or_else(|| {
                toolgate_core::Error::Internal(
                    "WorkerPlan.protectModuleImports: the plan is in use by another call; report the imports right after importing the modules".into(),
                )
            })?;
            plan.protect_module_imports(&reports, sdk_root.as_deref().map(std::path::Path::new))
        })
    }

    /// The protected paths the file tools of worker `index` refuse to change, with the reason
    /// for each, then the paths its callers' `blocked` rules hide (marked `hidden`: the file tools
    /// refuse their files under any other name), for `new FileTools(…, protectedPaths)`.
    #[napi]
    pub fn file_protection(&self, env: Env, index: u32) -> napi::Result<Vec<ProtectedPath>> {
        sync(&env, "WorkerPlan.fileProtection", || {
            let index = index as usize;
            let mut list = ProtectedPath::list(self.inner.file_protection(index)?);
            list.extend(ProtectedPath::hidden_list(self.inner.file_hidden(index)?));
            Ok(list)
        })
    }

    /// The protected and hidden paths of every sandbox of worker `index` (the worker's own,
    /// then each process toolset's), each with its reason, for `toolgate check`.
    #[napi]
    pub fn guarded_paths(&self, env: Env, index: u32) -> napi::Result<Vec<SandboxGuardsInfo>> {
        sync(&env, "WorkerPlan.guardedPaths", || {
            Ok(self
                .inner
                .guarded_paths(index as usize)?
                .into_iter()
                .map(|sandbox| SandboxGuardsInfo {
                    sandbox: sandbox.sandbox.to_string(),
                    paths: sandbox
                        .paths
                        .into_iter()
                        .map(|line| GuardedPathInfo {
                            path: line.path.display().to_string(),
                            kind: line.kind.as_str().to_string(),
                            reason: line.reason,
                            exists: line.exists,
                            enforced: line.enforced,
                        })
                        .collect(),
                })
                .collect())
        })
    }

    /// What the graph may do, as the JSON text of `toolgate check worker.yaml --json` (layout:
    /// `docs/check.md`): every worker with its tools and their decisions (decided as `decide`
    /// does, from the same reports), the tools left out, sandboxes, path rules, command
    /// policies, the callers' restrictions, MCP servers, delegates and warnings.
    #[napi]
    pub fn report(
        &self,
        env: Env,
        modules: Vec<ModuleReport>,
        mcp: Option<Vec<McpWorkerReport>>,
    ) -> napi::Result<String> {
        sync(&env, "WorkerPlan.report", || {
            let (modules, mcp) = reports(modules, mcp);
            let report = self.inner.report(&modules, &mcp)?;
            serde_json::to_string(&report)
                .map_err(|err| toolgate_core::Error::Internal(format!("WorkerPlan.report: {err}")))
        })
    }

    /// How each file tool of worker `index` would decide a call naming `path`: the
    /// work-directory confinement first (`outside-root`), then the protected paths, then the
    /// path rules (its own and its callers'), as JSON text (a list of checks).
    #[napi]
    pub fn check_path(
        &self,
        env: Env,
        index: u32,
        path: String,
        modules: Vec<ModuleReport>,
        mcp: Option<Vec<McpWorkerReport>>,
    ) -> napi::Result<String> {
        sync(&env, "WorkerPlan.checkPath", || {
            let (modules, mcp) = reports(modules, mcp);
            let decided = self.inner.decide_with_mcp(&modules, &mcp)?;
            let tools = decided
                .get(index as usize)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let checks = self.inner.check_path(index as usize, &path, tools)?;
            serde_json::to_string(&checks).map_err(|err| {
                toolgate_core::Error::Internal(format!("WorkerPlan.checkPath: {err}"))
            })
        })
    }

    /// Checks that no file of worker `index` (its worker file, tools module, executable tools)
    /// changed since the plan was made. Throws `CONFIG_INVALID` naming the file.
    #[napi]
    pub fn verify(&self, env: Env, index: u32) -> napi::Result<()> {
        sync(&env, "WorkerPlan.verify", || {
            self.inner.verify(index as usize)
        })
    }

    /// Reads the files a caller attaches to a call of worker `index` (paths relative to the
    /// caller's work directory), off the JavaScript thread. Rejects with `INVALID_INPUT` naming
    /// the `attachment_policy` limit, `PATH_OUTSIDE_ROOT`, `PATH_BLOCKED` or `FILE_NOT_FOUND`.
    #[napi(ts_return_type = "Promise<WorkerAttachment[]>")]
    pub async fn read_attachments(
        &self,
        index: u32,
        paths: Vec<String>,
    ) -> Settled<Vec<WorkerAttachment>> {
        let plan = Arc::clone(&self.inner);
        guarded("WorkerPlan.readAttachments", async move {
            let read =
                tokio::task::spawn_blocking(move || plan.read_attachments(index as usize, &paths))
                    .await
                    .map_err(|err| {
                        toolgate_core::Error::Internal(format!("WorkerPlan.readAttachments: {err}"))
                    })??;
            Ok(read
                .into_iter()
                .map(|attachment| WorkerAttachment {
                    path: attachment.path,
                    media_type: attachment.media_type.to_string(),
                    data: attachment.bytes.into(),
                })
                .collect())
        })
        .await
    }
}

/// What the SDK found in the tools modules and on the MCP servers, as the core reads it.
fn reports(
    modules: Vec<ModuleReport>,
    mcp: Option<Vec<McpWorkerReport>>,
) -> (BTreeMap<usize, ModuleTools>, worker::McpReports) {
    let modules = modules
        .into_iter()
        .map(|report| {
            (
                report.worker as usize,
                ModuleTools {
                    available: report.available,
                    selected: report.selected.into_iter().map(Into::into).collect(),
                },
            )
        })
        .collect();
    let mcp = mcp
        .unwrap_or_default()
        .into_iter()
        .map(|report| (report.worker as usize, crate::mcp::reports(report.servers)))
        .collect();
    (modules, mcp)
}

/// A file attached to a worker call, read.
#[napi(object, object_from_js = false)]
pub struct WorkerAttachment {
    /// The path relative to the caller's work directory.
    pub path: String,
    /// The media type, from the suffix (`application/octet-stream` when unknown).
    pub media_type: String,
    pub data: napi::bindgen_prelude::Buffer,
}

/// Checks a worker's final result (text; JSON text is checked as the value it denotes) against
/// its output schema (JSON text). `null` when it matches, else what is wrong, by JSON pointer.
/// Throws `CONFIG_INVALID` when the schema does not compile.
#[napi]
pub fn check_worker_result(
    env: Env,
    schema: String,
    result: String,
) -> napi::Result<Option<String>> {
    sync(&env, "checkWorkerResult", || {
        let schema: serde_json::Value = serde_json::from_str(&schema).map_err(|err| {
            toolgate_core::Error::ConfigInvalid(format!("the output schema is not JSON: {err}"))
        })?;
        let compiled = toolgate_core::schema::OutputSchema::compile(&schema)
            .map_err(toolgate_core::Error::ConfigInvalid)?;
        Ok(compiled.problem(&result))
    })
}

/// The JSON Schema of worker files.
#[napi]
pub fn worker_json_schema(env: Env) -> napi::Result<String> {
    infallible(&env, "workerJsonSchema", worker::worker_json_schema)
}

/// Whether `model` (`provider:model`) matches one of the `compatible_models` patterns (`*`
/// matches any text); an empty list allows every model.
#[napi]
pub fn model_is_compatible(env: Env, patterns: Vec<String>, model: String) -> napi::Result<bool> {
    infallible(&env, "modelIsCompatible", || {
        worker::model_is_compatible(&patterns, &model)
    })
}
