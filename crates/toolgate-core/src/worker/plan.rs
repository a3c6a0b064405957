//! The plan of a worker: its file and every worker it may call, read once and frozen, with each
//! toolset's policy built (shell rules compiled, `cli_execute` binaries resolved, executable
//! tools discovered, file-tool groups narrowed by `readonly`, every process toolset's kernel
//! sandbox decided and prepared). The SDK builds the AI SDK tools
//! from the plan and never reads a worker file itself; a call into a worker whose files changed
//! since the plan was made is refused ([`WorkerPlan::verify`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{load_worker_stamped, LoadOptions, Worker};
use crate::builtins::http::system_lookup;
use crate::builtins::Builtins;
use crate::command::{CliExecute, ShellToolset};
use crate::error::{Error, Result};
use crate::executables::Registry;
use crate::frozen::FrozenFiles;
use crate::fs::config::{filesystem_tools, CodeAgentGroup};
use crate::limits::{MAX_WORKERS_IN_GRAPH, MAX_WORKER_DEPTH};
use crate::mcp::McpToolset;
use crate::run::fingerprint::{graph_fingerprint, GraphWorker};
use crate::sandbox_config::{SandboxFields, SandboxModeName, SandboxScope, ToolSandbox, Widening};

mod protected;
#[cfg(test)]
mod tests;

pub use protected::{hidden_by, ModuleImports, SandboxGuards};

/// A worker this worker may call: the tool `name` runs the planned worker `worker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegate {
    /// The tool name (the called worker's name).
    pub name: String,
    /// The tool description the caller's model reads.
    pub description: String,
    /// Index of the called worker in the plan.
    pub worker: usize,
}

/// One worker of the graph, with its toolsets' policies built.
#[derive(Debug)]
pub struct PlannedWorker {
    pub worker: Worker,
    /// The worker that calls this one (`None` for the top worker).
    pub parent: Option<usize>,
    /// The names of the workers from the top down to this one.
    pub chain: Vec<String>,
    /// `filesystem` tool names after `read_only` and the sandbox's `readonly`.
    pub filesystem_tools: Option<Vec<&'static str>>,
    /// `code_agent` group after the sandbox's `readonly`.
    pub code_agent_group: Option<CodeAgentGroup>,
    pub shell: Option<Arc<ShellToolset>>,
    pub cli_execute: Option<Arc<CliExecute>>,
    /// Discovered by [`WorkerPlan::discover`], then frozen.
    pub executables: Option<Arc<Registry>>,
    /// Forge's built-in tools (in-process: no kernel sandbox, their own rules instead).
    pub builtins: Option<Arc<Builtins>>,
    pub delegates: Vec<Delegate>,
    /// The `mcp` toolset: its servers, whitelist, approval and the sandbox of its stdio
    /// servers (the SDK connects to the servers and reports their tools to `decide`).
    pub mcp: Option<Arc<McpToolset>>,
    /// The worker-level kernel sandbox: the file's `sandbox` over the defaults, or over its
    /// caller's sandbox for a called worker.
    pub sandbox: SandboxScope,
    /// The sandbox of each process toolset (`shell`, `cli_execute`, `executables`, `mcp`), in
    /// that order: the worker's, narrowed by the toolset's own `sandbox`.
    pub toolset_sandboxes: Vec<(&'static str, SandboxScope)>,
    /// The one best-effort sandbox warning of the process, when preparing this worker's
    /// sandboxes was the first to have one.
    pub sandbox_warning: Option<String>,
    /// This worker's own files (its worker file, its tools module, its executable tools).
    files: Vec<PathBuf>,
}

impl PlannedWorker {
    /// The files that belong to this worker, checked before it is called.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

/// A worker and everything it may call, frozen when it was planned.
#[derive(Debug)]
pub struct WorkerPlan {
    workers: Vec<PlannedWorker>,
    files: FrozenFiles,
    /// What the SDK reported the tools modules import (see `protected`).
    guards: protected::PlanGuards,
}

/// Reads the worker file at `path` and every worker it may call (transitively, each with its
/// caller's sandbox), checks the graph (no cycles, at most [`MAX_WORKER_DEPTH`] deep, at most
/// [`MAX_WORKERS_IN_GRAPH`] workers), builds every toolset's policy and freezes the files read.
/// Executable tools are discovered by [`WorkerPlan::discover`], which runs processes.
pub fn plan_worker(path: &Path, options: &LoadOptions) -> Result<WorkerPlan> {
    let mut plan = WorkerPlan {
        workers: Vec::new(),
        files: FrozenFiles::default(),
        guards: protected::PlanGuards::default(),
    };
    let mut chain = Vec::new();
    plan.add(path, options, None, &mut chain)?;
    // Only now is every file of the graph known: protect it in every sandbox.
    plan.guard()?;
    Ok(plan)
}

impl WorkerPlan {
    /// The workers, the top one first; a worker always comes after the worker that calls it.
    pub fn workers(&self) -> &[PlannedWorker] {
        &self.workers
    }

    /// The worker at `index`.
    pub fn worker(&self, index: usize) -> Result<&PlannedWorker> {
        self.workers.get(index).ok_or_else(|| {
            Error::InvalidInput(format!(
                "the plan has no worker {index}; it has {}",
                self.workers.len()
            ))
        })
    }

    /// Every frozen file of the graph.
    pub fn frozen_files(&self) -> &FrozenFiles {
        &self.files
    }

    /// Every `deny_output` pattern of the graph, once each: the audit log redacts them (output a
    /// guardrail keeps from the model is kept from the log too).
    pub fn redaction_patterns(&self) -> Vec<String> {
        let mut patterns: Vec<String> = Vec::new();
        for planned in &self.workers {
            if let Some(cli) = &planned.worker.toolsets.cli_execute {
                for entry in &cli.guardrails.deny_output {
                    if !patterns.contains(&entry.pattern) {
                        patterns.push(entry.pattern.clone());
                    }
                }
            }
        }
        patterns
    }

    /// The fingerprint a run state carries (see [`crate::run::fingerprint`]): every file of the
    /// graph and each worker's name, file, work directory and `readonly`. `CONFIG_INVALID` when
    /// a file changed since the plan was made.
    pub fn fingerprint(&self) -> Result<String> {
        let workers = self.workers.iter().map(|planned| GraphWorker {
            name: &planned.worker.name,
            path: &planned.worker.path,
            work_dir: &planned.worker.work_dir,
            readonly: planned.worker.readonly,
        });
        graph_fingerprint(workers, &self.files)
    }

    fn add(
        &mut self,
        path: &Path,
        options: &LoadOptions,
        parent: Option<usize>,
        chain: &mut Vec<PathBuf>,
    ) -> Result<usize> {
        if self.workers.len() >= MAX_WORKERS_IN_GRAPH {
            return Err(Error::ConfigInvalid(format!(
                "the delegation graph below '{}' holds more than {MAX_WORKERS_IN_GRAPH} workers (every call path counts); call fewer workers, or flatten the graph",
                self.workers[0].worker.path.display()
            )));
        }
        let (worker, stamp) = load_worker_stamped(path, options)?;
        let scope = match parent {
            None => worker_scope(&worker)?,
            Some(caller) => called_worker_scope(&self.workers[caller], &worker)?,
        };
        self.files.insert(&worker.path, stamp, "worker file");
        let mut files = vec![worker.path.clone()];
        if let Some(custom) = &worker.toolsets.custom {
            self.files.freeze(&custom.module, "tools module");
            files.push(custom.module.clone());
        }
        if let Some(config) = &worker.program_config {
            self.files.freeze(config, "golem-forge program config");
            files.push(config.clone());
        }
        let names = parent
            .map(|index| self.workers[index].chain.clone())
            .unwrap_or_default();
        let index = self.workers.len();
        let planned = build(worker, parent, names, files, scope)?;
        let children = planned.worker.allowed_worker_paths.clone();
        let sandbox = LoadOptions {
            work_dir: Some(planned.worker.work_dir.clone()),
            readonly: planned.worker.readonly,
        };
        chain.push(planned.worker.path.clone());
        self.workers.push(planned);
        for child in children {
            let depth_limit = self.workers[0].worker.max_depth.unwrap_or(MAX_WORKER_DEPTH);
            check_chain(chain, &child, depth_limit)?;
            let child_index = self.add(&child, &sandbox, Some(index), chain)?;
            let called = &self.workers[child_index].worker;
            let delegate = Delegate {
                name: called.name.clone(),
                description: called.description.clone().unwrap_or_else(|| {
                    format!(
                        "Runs the worker '{}' on a task and returns its answer.",
                        called.name
                    )
                }),
                worker: child_index,
            };
            self.workers[index].delegates.push(delegate);
        }
        chain.pop();
        Ok(index)
    }

    /// Discovers the executable tools of every worker (descriptions run concurrently, the
    /// cache answers for unchanged tools) and freezes them: a tool file that changes later is
    /// refused when it is run, and when its worker is called.
    pub async fn discover(&mut self) -> Result<()> {
        for planned in &mut self.workers {
            let Some(registry) = &planned.executables else {
                continue;
            };
            registry.refresh(false).await?;
            for path in registry.freeze().paths() {
                self.files.freeze(path, "executable tool file");
                planned.files.push(path.to_path_buf());
            }
        }
        // The tools' files are known now: protect them too.
        self.guard()
    }

    /// Checks that no file of the worker at `index` changed since the plan was made; called
    /// before that worker runs as a delegate. The error names the file.
    pub fn verify(&self, index: usize) -> Result<()> {
        let planned = self.worker(index)?;
        let what = match &planned.chain[..] {
            [.., caller, _] => format!("calling worker '{}' from '{caller}'", planned.worker.name),
            _ => format!("running worker '{}'", planned.worker.name),
        };
        self.files
            .verify_paths(planned.files.iter().map(PathBuf::as_path), &what)
    }
}

/// Refuses a cycle, and a graph deeper than `depth_limit` (toolgate's [`MAX_WORKER_DEPTH`], or
/// less when the top worker's golem-forge program says `delegation.maxDepth`).
fn check_chain(chain: &[PathBuf], child: &Path, depth_limit: usize) -> Result<()> {
    let describe = || {
        chain
            .iter()
            .map(|p| p.display().to_string())
            .chain(std::iter::once(child.display().to_string()))
            .collect::<Vec<_>>()
            .join(" -> ")
    };
    if chain.iter().any(|path| path == child) {
        return Err(Error::ConfigInvalid(format!(
            "workers call each other in a cycle: {}; remove one of the allowed_workers entries",
            describe()
        )));
    }
    if chain.len() > depth_limit {
        let source = if depth_limit < MAX_WORKER_DEPTH {
            " (delegation.maxDepth of the golem-forge program)"
        } else {
            ""
        };
        return Err(Error::ConfigInvalid(format!(
            "workers are nested more than {depth_limit} deep{source}: {}",
            describe()
        )));
    }
    Ok(())
}

/// The sandbox of a top worker: its file's `sandbox` keys over the defaults.
fn worker_scope(worker: &Worker) -> Result<SandboxScope> {
    let setting = format!("{}: sandbox", worker.path.display());
    SandboxScope::new(
        &worker.work_dir,
        worker.readonly,
        &worker.sandbox,
        worker_dir(worker),
        &setting,
    )
}

/// The sandbox of a called worker: its caller's, narrowed by its own file's `sandbox` keys
/// (absent keys inherit), in its own (possibly restricted) work directory.
fn called_worker_scope(caller: &PlannedWorker, worker: &Worker) -> Result<SandboxScope> {
    let setting = format!("{}: sandbox", worker.path.display());
    let above = format!(
        "the sandbox of its caller '{}'",
        caller.worker.path.display()
    );
    let widening = Widening {
        setting: &setting,
        above: &above,
        narrower: "a called worker",
        fix: "widen the calling worker's `sandbox` instead",
    };
    caller
        .sandbox
        .narrow(&worker.sandbox, worker_dir(worker), &widening)?
        .within(&worker.work_dir, worker.readonly)
}

fn worker_dir(worker: &Worker) -> &Path {
    worker.path.parent().unwrap_or(Path::new("/"))
}

/// How a toolset's `sandbox` that widens its worker's is refused.
const TOOLSET_WIDENING: Widening<'static> = Widening {
    setting: "sandbox",
    above: "the worker's sandbox",
    narrower: "a toolset",
    fix: "widen the worker-level `sandbox` instead",
};

/// The worker's sandbox narrowed by a toolset's own `sandbox`.
fn toolset_scope(
    worker: &Worker,
    scope: &SandboxScope,
    own: Option<&SandboxFields>,
) -> Result<SandboxScope> {
    match own {
        Some(fields) => scope.narrow(fields, worker_dir(worker), &TOOLSET_WIDENING),
        None => Ok(scope.clone()),
    }
}

/// Prepares a toolset's sandbox, keeping its best-effort warning; a kernel that cannot
/// enforce it is reported with the worker file.
fn prepare_sandbox(
    worker: &Worker,
    scope: &SandboxScope,
    warnings: &mut Vec<String>,
) -> Result<ToolSandbox> {
    let built = scope.build().map_err(|err| match err {
        Error::SandboxUnavailable(message) => Error::SandboxUnavailable(format!(
            "{}: {message} (in a worker file: sandbox: {{ mode: best-effort }} or mode: off)",
            worker.path.display()
        )),
        other => other,
    })?;
    warnings.extend(built.warning.clone());
    Ok(built)
}

/// Builds the policies of one worker's toolsets.
fn build(
    mut worker: Worker,
    parent: Option<usize>,
    mut chain: Vec<String>,
    files: Vec<PathBuf>,
    scope: SandboxScope,
) -> Result<PlannedWorker> {
    let place = |toolset: &str, err: Error| match err {
        Error::ConfigInvalid(message) => Error::ConfigInvalid(format!(
            "{}: toolsets.{toolset}: {message}",
            worker.path.display()
        )),
        other => other,
    };
    let mut warnings = Vec::new();
    let mut toolset_sandboxes = Vec::new();
    let toolsets = &worker.toolsets;
    let filesystem_tools = toolsets
        .filesystem
        .as_ref()
        .map(|config| filesystem_tools(worker.readonly || config.read_only).to_vec());
    let code_agent_group =
        toolsets
            .code_agent
            .as_ref()
            .map(|config| match (worker.readonly, config.group) {
                (true, CodeAgentGroup::All | CodeAgentGroup::Write) => CodeAgentGroup::Read,
                (_, group) => group,
            });
    let shell = toolsets
        .shell
        .as_ref()
        .map(|config| -> Result<_> {
            let policy = ShellToolset::new(&worker.work_dir, config)?;
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref())?;
            let built = prepare_sandbox(&worker, &scope, &mut warnings)?;
            toolset_sandboxes.push(("shell", scope));
            Ok(Arc::new(policy.with_sandbox(built.sandbox)))
        })
        .transpose()
        .map_err(|err| place("shell", err))?;
    let cli_execute = toolsets
        .cli_execute
        .as_ref()
        .map(|config| -> Result<_> {
            let policy = CliExecute::new(&worker.work_dir, config)?;
            let read_roots = Widening {
                fix: "add it to the worker-level `sandbox.read`",
                ..TOOLSET_WIDENING
            };
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref())?.with_read_roots(
                &config.read_roots,
                worker_dir(&worker),
                Some((&scope, &read_roots)),
            )?;
            let built = prepare_sandbox(&worker, &scope, &mut warnings)?;
            toolset_sandboxes.push(("cli_execute", scope));
            Ok(Arc::new(policy.with_sandbox(built.sandbox)))
        })
        .transpose()
        .map_err(|err| place("cli_execute", err))?;
    let config_dir = worker_dir(&worker);
    let executables = toolsets
        .executables
        .as_ref()
        .map(|config| -> Result<_> {
            let options = config.registry_options(config_dir, &worker.work_dir)?;
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref())?;
            let (options, warning) = options.with_sandbox(&scope).map_err(|err| match err {
                Error::SandboxUnavailable(message) => Error::SandboxUnavailable(format!(
                    "{}: {message} (in a worker file: sandbox: {{ mode: best-effort }} or mode: off)",
                    worker.path.display()
                )),
                other => other,
            })?;
            warnings.extend(warning);
            toolset_sandboxes.push(("executables", scope));
            Registry::new(options).map(Arc::new)
        })
        .transpose()
        .map_err(|err| place("executables", err))?;
    let builtins = toolsets
        .builtins
        .as_ref()
        .map(|config| -> Result<_> {
            let place = format!("{}: toolsets.builtins", worker.path.display());
            let settings = config.settings(&place)?;
            Builtins::new(settings, &worker.work_dir, worker.readonly, system_lookup())
                .map(Arc::new)
        })
        .transpose()?;
    let mcp = toolsets
        .mcp
        .as_ref()
        .map(|config| -> Result<_> {
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref())
                .map_err(|err| place("mcp", err))?;
            let place = format!("{}: toolsets.mcp", worker.path.display());
            let toolset = McpToolset::from_config(config, &scope, &place).map_err(|err| match err {
                Error::SandboxUnavailable(message) => Error::SandboxUnavailable(format!(
                    "{}: {message} (in a worker file: sandbox: {{ mode: best-effort }} or mode: off)",
                    worker.path.display()
                )),
                other => other,
            })?;
            warnings.extend(toolset.sandbox().warning.clone());
            toolset_sandboxes.push(("mcp", scope));
            Ok(Arc::new(toolset))
        })
        .transpose()?;
    let unconfined = toolset_sandboxes
        .iter()
        .filter(|(_, scope)| scope.mode == SandboxModeName::Off)
        .map(|(name, _)| *name)
        .collect::<Vec<_>>();
    if worker.readonly && !unconfined.is_empty() {
        worker.warnings.push(format!(
            "sandbox.readonly keeps the file toolsets from writing, but {} runs programs with sandbox mode 'off', and they can still write; remove mode: off to make the work directory read-only for them",
            unconfined.join(" and ")
        ));
    }
    let sandbox_warning = warnings.into_iter().next();
    chain.push(worker.name.clone());
    Ok(PlannedWorker {
        parent,
        chain,
        filesystem_tools,
        code_agent_group,
        shell,
        cli_execute,
        executables,
        builtins,
        delegates: Vec::new(),
        mcp,
        sandbox: scope,
        toolset_sandboxes,
        sandbox_warning,
        files,
        worker,
    })
}
