//! The plan of a worker: its file and every worker it may call, read once and frozen, with each
//! toolset's policy built (shell rules compiled, `cli_execute` binaries resolved, executable
//! tools discovered, file-tool groups narrowed by `readonly`, every process toolset's kernel
//! sandbox decided and prepared). The SDK builds the AI SDK tools
//! from the plan and never reads a worker file itself; a call into a worker whose files changed
//! since the plan was made is refused ([`WorkerPlan::verify`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use super::{load_worker_stamped, LoadOptions, Worker};
use crate::builtins::http::system_lookup;
use crate::builtins::Builtins;
use crate::command::callers::{CallerCliExecute, CallerShell};
use crate::command::{CallerCommands, CliExecute, ShellToolset};
use crate::error::{Error, Result};
use crate::executables::Registry;
use crate::frozen::FrozenFiles;
use crate::fs::config::{filesystem_tools, CodeAgentGroup};
use crate::limits::{MAX_WORKERS_IN_GRAPH, MAX_WORKER_DEPTH};
use crate::mcp::McpToolset;
use crate::permissions::Permissions;
use crate::run::crypto::sha256_hex;
use crate::run::fingerprint::{graph_fingerprint, path_value, BindingParts};
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
    /// The command policies of the workers above this one, which bind its `shell` and
    /// `cli_execute` commands too (see [`crate::command::callers`]).
    pub callers: CallerCommands,
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
    /// Saved approvals: the project permissions file of the top worker's folder (see
    /// `worker/saved.rs`). Not frozen: saving a rule during a run changes it.
    permissions: Option<Permissions>,
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
        permissions: None,
    };
    let mut chain = Vec::new();
    plan.add(path, options, None, &mut chain)?;
    // Saved approvals (`toolgate.permissions.yaml` beside the top worker file), read strictly.
    let folder = plan.workers[0]
        .worker
        .path
        .parent()
        .unwrap_or(Path::new("/"));
    plan.permissions = Some(Permissions::load(folder)?);
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

    /// The project permissions file of the plan and the rules saved in it.
    pub fn permissions(&self) -> Option<&Permissions> {
        self.permissions.as_ref()
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

    /// The binding a run state carries (see [`crate::run::fingerprint`]): every policy that
    /// decides a call of the graph — each worker's name, file, work directory, tools,
    /// approvals, rules (as resolved: allowlisted programs by their real file), sandboxes and
    /// callers — and the content of every file. `CONFIG_INVALID` when a file changed since the
    /// plan was made.
    pub fn binding(&self) -> Result<String> {
        let mut parts = BindingParts::default();
        for planned in &self.workers {
            let worker = &planned.worker;
            parts.add(
                "workers",
                json!({
                    "name": worker.name,
                    "path": path_value(&worker.path),
                    "parent": planned.parent,
                }),
            );
            parts.add(
                "work directories",
                json!({ "workDir": path_value(&worker.work_dir), "readonly": worker.readonly }),
            );
            parts.add("tools", tools_binding(planned));
            parts.add("approvals", approvals_binding(worker));
            parts.add("rules", rules_binding(planned));
            parts.add(
                "sandbox",
                json!({
                    "worker": scope_binding(&planned.sandbox),
                    "toolsets": planned
                        .toolset_sandboxes
                        .iter()
                        .map(|(name, scope)| json!([name, scope_binding(scope)]))
                        .collect::<Vec<_>>(),
                }),
            );
        }
        graph_fingerprint(parts, &self.files)
    }

    /// The identity of the plan in one digest (a durable run pins it): the SHA-256 of its
    /// [`binding`](Self::binding).
    pub fn fingerprint(&self) -> Result<String> {
        Ok(sha256_hex(self.binding()?.as_bytes()))
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
        // Saved approvals and records name a worker by its name: two files of one graph with
        // the same name would answer for each other.
        if let Some(other) = self
            .workers
            .iter()
            .find(|known| known.worker.name == worker.name && known.worker.path != worker.path)
        {
            return Err(Error::ConfigInvalid(format!(
                "{}: name '{}' is already the name of '{}' in this worker graph; saved approvals (toolgate.permissions.yaml) and audit records name a worker by its name, so one worker would be answered by the other's. Give each worker file a name of its own",
                worker.path.display(),
                worker.name,
                other.worker.path.display()
            )));
        }
        let scope = match parent {
            None => worker_scope(&worker)?,
            Some(caller) => {
                // Before anything of the called worker is built (its MCP values expanded).
                check_env_narrows(&self.workers[caller].worker, &worker)?;
                check_search_endpoint_narrows(&self.workers[caller].worker, &worker)?;
                check_internal_reach_narrows(&self.workers[caller].worker, &worker)?;
                called_worker_scope(&self.workers[caller], &worker)?
            }
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
        let caller = parent.map(|index| {
            let caller = &self.workers[index];
            CallerSandbox {
                scope: caller.sandbox.clone(),
                above: format!(
                    "the sandbox of its caller '{}'",
                    caller.worker.path.display()
                ),
            }
        });
        let callers = parent
            .map(|index| {
                let caller = &self.workers[index];
                caller.callers.handed_down(
                    &caller.worker.name,
                    &caller.worker.path,
                    caller
                        .shell
                        .clone()
                        .map(|shell| shell as Arc<dyn CallerShell>),
                    caller
                        .cli_execute
                        .clone()
                        .map(|cli| cli as Arc<dyn CallerCliExecute>),
                )
            })
            .unwrap_or_default();
        let planned = build(
            worker,
            parent,
            names,
            files,
            scope,
            caller.as_ref(),
            callers,
        )?;
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

/// One host environment variable a worker hands to a process or server one of its toolsets
/// starts.
#[derive(Debug)]
struct HostVariable {
    name: String,
    /// Where the worker file names it (`toolsets.shell.env_passthrough`,
    /// `toolsets.mcp.servers.gh.env.TOKEN`).
    setting: String,
}

/// What a worker passes on of the host's environment: the names in the `env_passthrough` of its
/// `shell`, `cli_execute` and `executables` toolsets, and every `${NAME}` in its MCP servers'
/// `env` and `headers` values. Everything else a process gets (PATH, LANG, …) is the one fixed
/// policy of `exec::env`, the same for every worker.
fn host_variables(worker: &Worker) -> Vec<HostVariable> {
    let toolsets = &worker.toolsets;
    let lists = [
        ("shell", toolsets.shell.as_ref().map(|c| &c.env_passthrough)),
        (
            "cli_execute",
            toolsets.cli_execute.as_ref().map(|c| &c.env_passthrough),
        ),
        (
            "executables",
            toolsets.executables.as_ref().map(|c| &c.env_passthrough),
        ),
    ];
    let mut found = Vec::new();
    for (toolset, names) in lists {
        for name in names.into_iter().flatten() {
            found.push(HostVariable {
                name: name.clone(),
                setting: format!("toolsets.{toolset}.env_passthrough"),
            });
        }
    }
    for (server, config) in toolsets.mcp.iter().flat_map(|mcp| &mcp.servers) {
        for (setting, name) in config.host_variables() {
            found.push(HostVariable {
                name,
                setting: format!("toolsets.mcp.servers.{server}.{setting}"),
            });
        }
    }
    found
}

/// A called worker may pass on only host variables its caller passes on, so that delegating
/// cannot hand a secret to processes below that the caller's own never get. Checked against
/// the direct caller, itself checked against its caller: each level narrows again.
fn check_env_narrows(caller: &Worker, worker: &Worker) -> Result<()> {
    let passed = host_variables(caller);
    let Some(extra) = host_variables(worker)
        .into_iter()
        .find(|used| !passed.iter().any(|known| known.name == used.name))
    else {
        return Ok(());
    };
    let mut names: Vec<String> = passed.into_iter().map(|known| known.name).collect();
    names.sort_unstable();
    names.dedup();
    let names = list_or_none(&names);
    let name = &extra.name;
    Err(Error::ConfigInvalid(format!(
        "{}: {}: the host environment variable {name} is not passed on by the calling worker '{}' (it passes on: {names}); a called worker may only pass on the host variables its caller passes on: add {name} to an env_passthrough of the caller's shell, cli_execute or executables toolset (or use ${{{name}}} in its mcp servers), or drop {name} from the called worker",
        worker.path.display(),
        extra.setting,
        caller.path.display(),
    )))
}

/// `web_search` sends the host's provider key (`TAVILY_API_KEY`, `PERPLEXITY_API_KEY`) to its
/// `base_url`: a called worker may only name the base URL its caller's `web_search` uses, so
/// that delegating cannot send the key to a server of the called worker file's choosing.
fn check_search_endpoint_narrows(caller: &Worker, worker: &Worker) -> Result<()> {
    let base_url = |worker: &Worker| {
        worker
            .toolsets
            .builtins
            .as_ref()
            .and_then(|builtins| builtins.web_search.as_ref())
            .and_then(|search| search.base_url.clone())
    };
    let Some(wanted) = base_url(worker) else {
        return Ok(());
    };
    let caller_uses = caller
        .toolsets
        .builtins
        .as_ref()
        .is_some_and(|builtins| builtins.web_search.is_some())
        .then(|| base_url(caller))
        .flatten();
    if caller_uses.as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    Err(Error::ConfigInvalid(format!(
        "{}: toolsets.builtins.web_search.base_url: '{wanted}' is not the base URL of the calling worker '{}''s web_search ({}); web_search sends the host's provider key there, and a called worker may only use its caller's: use the same base_url in both, or drop it from the called worker",
        worker.path.display(),
        caller.path.display(),
        caller_uses.as_deref().unwrap_or("none"),
    )))
}

/// A called worker reaches no internal address its caller does not: each entry of its
/// `builtins.http.allow` (hosts `http_request` may reach although they are internal) must be
/// one of its caller's, and an MCP server it connects to by URL on an internal host (loopback,
/// private, link-local, `localhost`) must be one its caller connects to (same origin). Else a
/// called worker file could reach a loopback service its caller, whose sandbox has no network,
/// never reaches.
fn check_internal_reach_narrows(caller: &Worker, worker: &Worker) -> Result<()> {
    let allowed = |worker: &Worker| -> Vec<String> {
        worker
            .toolsets
            .builtins
            .as_ref()
            .and_then(|builtins| builtins.http.as_ref())
            .map(|http| http.allow.clone())
            .unwrap_or_default()
    };
    let caller_allows = allowed(caller);
    if let Some(extra) = allowed(worker)
        .into_iter()
        .find(|entry| !caller_allows.contains(entry))
    {
        return Err(Error::ConfigInvalid(format!(
            "{}: toolsets.builtins.http.allow: '{extra}' is not in the calling worker '{}''s builtins.http.allow ({}); a called worker may only reach the internal hosts its caller reaches: allow it in the caller too, or drop it",
            worker.path.display(),
            caller.path.display(),
            list_or_none(&caller_allows),
        )));
    }
    let origins = |worker: &Worker| -> Vec<(String, String)> {
        worker
            .toolsets
            .mcp
            .iter()
            .flat_map(|mcp| &mcp.servers)
            .filter_map(|(name, server)| {
                let url = url::Url::parse(server.url.as_deref()?).ok()?;
                Some((name.clone(), url.origin().ascii_serialization()))
            })
            .collect()
    };
    let caller_origins: Vec<String> = origins(caller).into_iter().map(|(_, o)| o).collect();
    for (name, origin) in origins(worker) {
        let internal = url::Url::parse(&origin)
            .ok()
            .and_then(|url| url.host().map(|host| is_internal_host(&host)))
            .unwrap_or(true);
        if internal && !caller_origins.contains(&origin) {
            return Err(Error::ConfigInvalid(format!(
                "{}: toolsets.mcp.servers.{name}.url: {origin} is an internal address its calling worker '{}' does not connect to ({}); a called worker may only reach the internal hosts its caller reaches: connect to it in the caller too, or drop it",
                worker.path.display(),
                caller.path.display(),
                list_or_none(&caller_origins),
            )));
        }
    }
    Ok(())
}

/// Whether `host` is an address [`refusal_reason`](crate::network::address::refusal_reason)
/// refuses (the one SSRF decision), or `localhost` (a name is otherwise taken as public: the
/// egress policy resolves it when it connects).
fn is_internal_host(host: &url::Host<&str>) -> bool {
    use std::net::IpAddr;
    match host {
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        url::Host::Ipv4(ip) => crate::network::address::refusal_reason(IpAddr::V4(*ip)).is_some(),
        url::Host::Ipv6(ip) => crate::network::address::refusal_reason(IpAddr::V6(*ip)).is_some(),
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The sandbox of a toolset: the worker's, with the keys of the toolset's own `sandbox` in
/// their place. Inside one worker file that is the author's choice and may widen the worker's
/// (issue 22 §8); in a called worker the result must still lie inside the caller's worker-level
/// sandbox (`caller`), else `CONFIG_INVALID`.
fn toolset_scope(
    worker: &Worker,
    scope: &SandboxScope,
    own: Option<&SandboxFields>,
    caller: Option<&CallerSandbox>,
) -> Result<SandboxScope> {
    let Some(fields) = own else {
        return Ok(scope.clone());
    };
    let adjusted = scope.with_fields(fields, worker_dir(worker), "sandbox")?;
    if let Some(caller) = caller {
        adjusted.check_within(&caller.scope, &caller.widening("sandbox"))?;
    }
    Ok(adjusted)
}

/// The worker-level sandbox of the worker that calls a worker, which bounds every toolset of
/// the called worker.
struct CallerSandbox {
    scope: SandboxScope,
    above: String,
}

impl CallerSandbox {
    fn widening<'a>(&'a self, setting: &'a str) -> Widening<'a> {
        Widening {
            setting,
            above: &self.above,
            narrower: "a called worker (and every toolset in it)",
            fix: "widen the calling worker's `sandbox` instead",
        }
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
    caller: Option<&CallerSandbox>,
    callers: CallerCommands,
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
            let policy = ShellToolset::new(&worker.work_dir, config)?.with_callers(callers.clone());
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref(), caller)?;
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
            let policy = CliExecute::new(&worker.work_dir, config)?.with_callers(callers.clone());
            let read_roots = caller.map(|caller| caller.widening("sandbox"));
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref(), caller)?
                .with_read_roots(
                    &config.read_roots,
                    worker_dir(&worker),
                    caller
                        .zip(read_roots.as_ref())
                        .map(|(caller, widening)| (&caller.scope, widening)),
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
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref(), caller)?;
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
            let scope = toolset_scope(&worker, &scope, config.sandbox.as_ref(), caller)
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
        callers,
        files,
        worker,
    })
}

/// A sandbox scope as a binding part sees it.
fn scope_binding(scope: &SandboxScope) -> Value {
    json!({
        "mode": scope.mode.as_str(),
        "network": match scope.network.access() {
            crate::network::NetworkAccess::Off => json!(false),
            crate::network::NetworkAccess::Open => json!(true),
            crate::network::NetworkAccess::Hosts(policy) => json!(policy.to_string()),
        },
        "read": scope.read.iter().map(|p| path_value(p)).collect::<Vec<_>>(),
        "write": scope.write.iter().map(|p| path_value(p)).collect::<Vec<_>>(),
        "workDir": path_value(&scope.work_dir),
        "readonly": scope.readonly,
    })
}

/// Keys of a toolset block that belong to other parts of a binding than `tools`.
const NOT_TOOLS: [&str; 7] = [
    "approval",
    "rules",
    "default",
    "sandbox",
    "guardrails",
    "allowed_binaries",
    "read_roots",
];

/// The tools of a worker: its toolset blocks (but for approvals, rules and sandboxes), the
/// file tools it is offered, its executable tools as discovered and the workers it calls.
fn tools_binding(planned: &PlannedWorker) -> Value {
    let mut toolsets = serde_json::to_value(&planned.worker.toolsets).unwrap_or(Value::Null);
    if let Some(blocks) = toolsets.as_object_mut() {
        for block in blocks.values_mut() {
            if let Some(keys) = block.as_object_mut() {
                keys.retain(|key, _| !NOT_TOOLS.contains(&key.as_str()));
            }
        }
    }
    let executables = planned.executables.as_ref().map(|registry| {
        registry
            .tools()
            .into_iter()
            .map(|spec| json!([spec.name, spec.description]))
            .collect::<Vec<_>>()
    });
    json!({
        "toolsets": toolsets,
        "filesystem": planned.filesystem_tools,
        "codeAgent": planned.code_agent_group,
        "executables": executables,
        "delegates": planned.delegates.iter().map(|d| json!([d.name, d.worker])).collect::<Vec<_>>(),
    })
}

/// Every approval block of a worker: the worker-level one and each toolset's.
fn approvals_binding(worker: &Worker) -> Value {
    let toolsets = serde_json::to_value(&worker.toolsets).unwrap_or(Value::Null);
    let blocks: serde_json::Map<String, Value> = toolsets
        .as_object()
        .map(|blocks| {
            blocks
                .iter()
                .map(|(name, block)| {
                    (
                        name.clone(),
                        block.get("approval").cloned().unwrap_or(Value::Null),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    json!({ "worker": worker.approval, "toolsets": blocks })
}

/// The rules of a worker: shell rules, the allowlist as resolved (each program by its real
/// file), guardrails, read roots, path rules, and the workers above whose command policies bind
/// it.
fn rules_binding(planned: &PlannedWorker) -> Value {
    let toolsets = &planned.worker.toolsets;
    let shell = toolsets
        .shell
        .as_ref()
        .map(|config| json!({ "rules": config.rules, "default": config.default }));
    let cli = toolsets.cli_execute.as_ref().map(|config| {
        let resolved = planned.cli_execute.as_ref().map(|cli| {
            cli.availability()
                .iter()
                .map(|binary| json!([binary.name, binary.real_path.as_deref().map(path_value)]))
                .collect::<Vec<_>>()
        });
        json!({
            "binaries": resolved,
            "guardrails": config.guardrails,
            "readRoots": config.read_roots.iter().map(|p| path_value(p)).collect::<Vec<_>>(),
        })
    });
    let paths = |approval: Option<&crate::fs::config::FileApprovalConfig>| {
        approval.map(|approval| approval.paths.clone())
    };
    json!({
        "shell": shell,
        "cliExecute": cli,
        "filesystemPaths": paths(toolsets.filesystem.as_ref().and_then(|c| c.approval.as_ref())),
        "codeAgentPaths": paths(toolsets.code_agent.as_ref().and_then(|c| c.approval.as_ref())),
        "callers": planned
            .callers
            .layers()
            .map(|layer| path_value(&layer.file))
            .collect::<Vec<_>>(),
    })
}
