//! The protected and hidden paths of a worker plan, and the sandboxes that enforce them.
//!
//! Nothing a worker's processes can write may run on the host later, or configure what does. So
//! every sandbox of the plan protects (read-only for processes, refused by the file tools) the
//! configuration of the whole graph: every worker file, the golem-forge program config (also
//! where one would be found if it existed), every tools module and every local file it imports
//! (reported by the SDK, which imports them: [`WorkerPlan::protect_module_imports`]), every
//! executable-tool directory and each tool's files, MCP server scripts named by path, the git
//! configuration of each work directory and of the repository it is in, the project permissions
//! file beside the top-level worker file, and what `sandbox.protect` adds. Each worker's
//! sandboxes also hide what the `blocked` path rules of its file toolsets, and of the workers
//! calling it, match.
//!
//! The list is complete only when the whole graph has been read (a worker's sandboxes are
//! prepared before the workers it calls are read), so the plan [guards](WorkerPlan::guard) its
//! sandboxes when it is made, again when executable tools are discovered, and again when the
//! SDK reports what the tools modules imported: each process toolset whose kernel lists changed
//! gets its sandbox prepared again. Processes first run after that.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::{PlannedWorker, WorkerPlan};
use crate::approval::Decision;
use crate::error::{Error, Result};
use crate::fs::expand::expand_with_other_names;
use crate::fs::rules::{EntryKind, PathRule, PathRules};
use crate::limits::PERMISSIONS_FILE_NAME;
use crate::mcp::McpTransport;
use crate::sandbox_config::protect::scripts_inside;
use crate::sandbox_config::{GuardReport, Guards, SandboxScope};
use crate::worker::program::CONFIG_FILE_NAMES;

/// What the SDK found a tools module loads: the files it imported (the module itself, and
/// everything below it, packages included).
#[derive(Debug, Clone)]
pub struct ModuleImports {
    /// The worker whose tools module it is.
    pub worker: usize,
    /// Every file the import loaded, absolute.
    pub files: Vec<PathBuf>,
}

/// The guarded paths of one sandbox of a worker, for `toolgate check`.
#[derive(Debug, Clone)]
pub struct SandboxGuards {
    /// `worker` for the worker-level sandbox (and its file tools), else the toolset's name.
    pub sandbox: &'static str,
    pub paths: Vec<GuardReport>,
}

/// The graph-wide part of a plan's guarded paths that is not read from the worker files.
#[derive(Debug, Clone, Default)]
pub(super) struct PlanGuards {
    /// What the tools modules imported, as reported by the SDK.
    imports: Guards,
    /// What the graph's `sandbox.protect` patterns and each worker's `blocked` path rules
    /// matched: found by walks, once per plan (the worker files are frozen, so they do not
    /// change between the times the plan is guarded).
    expanded: Option<(Guards, Vec<Guards>)>,
}

impl WorkerPlan {
    /// Protects what the tools modules of the graph imported (the SDK imports them and reports
    /// every file it loaded), and the SDK's own package when it is installed (`sdk`: its folder;
    /// one below a `node_modules` folder protects that whole folder and the project's `.npmrc`, a
    /// checkout is not protected), and prepares again the sandboxes that must now protect more.
    /// A file of a package protects the outermost `node_modules` folder it is in (a package's
    /// own imports are found there); a lookup that found nothing, the package folder it looked
    /// for. Call it before the plan's tools are handed out: their
    /// sandboxes are replaced. `INVALID_INPUT` for an unknown worker or a relative path.
    pub fn protect_module_imports(
        &mut self,
        reports: &[ModuleImports],
        sdk: Option<&Path>,
    ) -> Result<()> {
        if let Some(folder) = sdk.filter(|sdk| sdk.is_absolute()).and_then(|sdk| {
            package_folder(&sdk.join("package.json")).filter(|folder| folder == sdk)
        }) {
            // Its addon and launcher are in a package beside it, `npx toolgate` runs the
            // `.bin` shim there, and its dependencies (the AI SDK, …) run on the host too.
            if let Some(packages) = packages_folder(&folder) {
                self.guards.imports.protect(
                    &packages,
                    "the packages toolgate runs with (its code, addon, sandbox launcher, `.bin` shim and dependencies run on the host)",
                );
                if let Some(project) = packages.parent() {
                    self.guards.imports.protect(
                        &project.join(".npmrc"),
                        "npm's configuration of the project toolgate is installed in (`node-options` there runs code in `npx toolgate`)",
                    );
                }
            }
        }
        let work_dirs: Vec<PathBuf> = self
            .workers
            .iter()
            .map(|planned| planned.worker.work_dir.clone())
            .collect();
        for report in reports {
            let planned = self.worker(report.worker)?;
            let module = planned
                .worker
                .toolsets
                .custom
                .as_ref()
                .map(|custom| custom.module.clone())
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "worker {} of the plan has no tools module",
                        report.worker
                    ))
                })?;
            if report.files.len() > crate::limits::MAX_MODULE_IMPORTS {
                return Err(Error::InvalidInput(format!(
                    "the tools module '{}' reports {} imports, more than the {} toolgate takes",
                    module.display(),
                    report.files.len(),
                    crate::limits::MAX_MODULE_IMPORTS
                )));
            }
            for file in &report.files {
                if !file.is_absolute() {
                    return Err(Error::InvalidInput(format!(
                        "the tools module import '{}' is not an absolute path",
                        file.display()
                    )));
                }
                // A path that would change what an import loads if it appeared (a nearer
                // package.json or node_modules folder) matters only where a process can make
                // it: in a work directory.
                let missing = file.symlink_metadata().is_err();
                if missing && !work_dirs.iter().any(|dir| file.starts_with(dir)) {
                    continue;
                }
                // A package's own imports are not followed: the whole `node_modules` folder it
                // is in is protected (the packages it imports in turn are found there). A
                // lookup that found nothing protects just the package folder it looked for.
                let packages = if missing {
                    package_folder(file)
                } else {
                    packages_folder(file)
                };
                let (path, reason) = match packages {
                    Some(folder) => (
                        folder,
                        format!(
                            "packages the tools module '{}' imports (and what they import)",
                            module.display()
                        ),
                    ),
                    None => (
                        file.clone(),
                        format!("imported by the tools module '{}'", module.display()),
                    ),
                };
                self.guards.imports.protect(&path, reason);
            }
        }
        self.guard()
    }

    /// The protected and hidden paths of every sandbox of the worker at `index` (its own, which
    /// its file tools share, then each process toolset's), each with its reason and whether the
    /// kernel acts on it there.
    pub fn guarded_paths(&self, index: usize) -> Result<Vec<SandboxGuards>> {
        let planned = self.worker(index)?;
        let mut sandboxes = vec![SandboxGuards {
            sandbox: "worker",
            paths: planned.sandbox.guard_report(),
        }];
        for (toolset, scope) in &planned.toolset_sandboxes {
            sandboxes.push(SandboxGuards {
                sandbox: toolset,
                paths: scope.guard_report(),
            });
        }
        Ok(sandboxes)
    }

    /// The protected paths the file tools of the worker at `index` refuse to change, each with
    /// its reason.
    pub fn file_protection(&self, index: usize) -> Result<Vec<(PathBuf, String)>> {
        let planned = self.worker(index)?;
        Ok(planned
            .sandbox
            .guards
            .protected()
            .iter()
            .filter(|guarded| guarded.path.starts_with(&planned.worker.work_dir))
            .map(|guarded| (guarded.path.clone(), guarded.reason.clone()))
            .collect())
    }

    /// The paths its callers' `blocked` path rules hide (found in their work directories), each
    /// with its reason, for the file tools of the worker at `index`: they refuse those files
    /// under any name, whatever that worker's own rules say. (Its own rules judge its own
    /// toolsets, each by its own list.)
    pub fn file_hidden(&self, index: usize) -> Result<Vec<(PathBuf, String)>> {
        let Some(caller) = self.worker(index)?.parent else {
            return Ok(Vec::new());
        };
        // As the rules found them, before each sandbox keeps those in its view: a caller's
        // blocked file outside a narrower callee's view may be linked into it.
        let hidden = match self.guards.expanded.as_ref() {
            Some((_, hidden)) => hidden.get(caller).cloned().unwrap_or_default(),
            None => self.hidden_for(caller)?,
        };
        Ok(hidden
            .hidden()
            .iter()
            .map(|guarded| (guarded.path.clone(), guarded.reason.clone()))
            .collect())
    }

    /// Computes the guarded paths of the whole graph and gives them to every sandbox of the
    /// plan, preparing again each sandbox whose kernel lists changed.
    pub(super) fn guard(&mut self) -> Result<()> {
        if self.guards.expanded.is_none() {
            let patterns = self.pattern_guards()?;
            let hidden = (0..self.workers.len())
                .map(|index| self.hidden_for(index))
                .collect::<Result<Vec<_>>>()?;
            self.guards.expanded = Some((patterns, hidden));
        }
        let mut graph = self.graph_guards();
        let (patterns, hidden) = self.guards.expanded.clone().unwrap_or_default();
        graph.extend(&patterns);
        for index in 0..self.workers.len() {
            let mut guards = graph.clone();
            if let Some(hidden) = hidden.get(index) {
                guards.extend(hidden);
            }
            let planned = &mut self.workers[index];
            planned.sandbox = planned.sandbox.with_guards(&guards);
            let toolsets = std::mem::take(&mut planned.toolset_sandboxes);
            let mut guarded = Vec::with_capacity(toolsets.len());
            for (toolset, scope) in toolsets {
                let new = scope.with_guards(&guards);
                if new.policy() != scope.policy() {
                    prepare_again(planned, toolset, &new)?;
                }
                guarded.push((toolset, new));
            }
            planned.toolset_sandboxes = guarded;
        }
        Ok(())
    }

    /// What the `sandbox.protect` patterns of every worker file match, protected for the whole
    /// graph.
    fn pattern_guards(&self) -> Result<Guards> {
        let mut guards = Guards::default();
        for planned in &self.workers {
            let worker = &planned.worker;
            if let Some(patterns) = &worker.sandbox.protect {
                let setting = format!("{}: sandbox.protect", worker.path.display());
                guards.extend(&crate::sandbox_config::protect::protect_patterns(
                    &worker.work_dir,
                    patterns,
                    &setting,
                )?);
            }
        }
        Ok(guards)
    }

    /// The files of the graph every sandbox protects (besides the patterns').
    fn graph_guards(&self) -> Guards {
        let mut guards = self.guards.imports.clone();
        let Some(top) = self.workers.first() else {
            return guards;
        };
        if let Some(folder) = top.worker.path.parent() {
            guards.protect(
                &folder.join(PERMISSIONS_FILE_NAME),
                "the project permissions file (saved approval answers)",
            );
        }
        let work_dirs: Vec<PathBuf> = self
            .workers
            .iter()
            .map(|planned| planned.worker.work_dir.clone())
            .collect();
        for planned in &self.workers {
            let worker = &planned.worker;
            let name = &worker.name;
            guards.protect(&worker.path, format!("the worker file of '{name}'"));
            if let Some(given) = &worker.given_path {
                // The symlinks on the way to it by the name it is loaded by.
                guards.protect(given, format!("the worker file of '{name}'"));
            }
            for lookup in &worker.worker_lookups {
                guards.protect(
                    lookup,
                    format!("where a file would take the place of a worker '{name}' calls"),
                );
            }
            protect_program_config(&mut guards, planned, &work_dirs);
            if let Some(custom) = &worker.toolsets.custom {
                guards.protect(&custom.module, format!("the tools module of '{name}'"));
            }
            if let Some(registry) = &planned.executables {
                for directory in &registry.options().discovery.directories {
                    guards.protect(
                        &directory.path,
                        format!("an executable-tool directory of '{name}'"),
                    );
                }
                for tool in registry.tools() {
                    let what = format!("the executable tool '{}' of '{name}'", tool.name);
                    guards.protect(&tool.source, what.clone());
                    guards.protect(&tool.program, what);
                }
            }
            if let Some(mcp) = &planned.mcp {
                let on_the_host = mcp.sandbox().sandbox.is_none();
                for server in mcp.servers() {
                    let McpTransport::Stdio { command, args, env } = &server.transport else {
                        continue;
                    };
                    for script in scripts_inside(&worker.work_dir, command, args, env) {
                        guards.protect(
                            &script,
                            format!("a file the MCP server '{}' of '{name}' runs", server.name),
                        );
                    }
                    if on_the_host && is_node_launcher(command) {
                        for file in NODE_PROJECT_FILES {
                            guards.protect(
                                &worker.work_dir.join(file),
                                format!(
                                    "decides what the MCP server '{}' of '{name}' runs on the host (sandbox off)",
                                    server.name
                                ),
                            );
                        }
                    }
                }
            }
        }
        guards
    }

    /// What the `blocked` path rules of the worker at `index` and of the workers calling it
    /// match, found in their work directories.
    fn hidden_for(&self, index: usize) -> Result<Guards> {
        let mut guards = Guards::default();
        let mut next = Some(index);
        while let Some(at) = next {
            let planned = &self.workers[at];
            let worker = &planned.worker;
            let toolsets = &worker.toolsets;
            let lists = [
                (
                    "filesystem",
                    toolsets
                        .filesystem
                        .as_ref()
                        .and_then(|config| config.approval.as_ref()),
                ),
                (
                    "code_agent",
                    toolsets
                        .code_agent
                        .as_ref()
                        .and_then(|config| config.approval.as_ref()),
                ),
            ];
            for (toolset, approval) in lists {
                let Some(approval) = approval else { continue };
                if !approval
                    .paths
                    .iter()
                    .any(|rule| rule.approval == Decision::Blocked)
                {
                    continue;
                }
                let place = format!(
                    "{}: toolsets.{toolset} approval.paths",
                    worker.path.display()
                );
                guards.extend(&hidden_by(&worker.work_dir, &approval.paths, &place)?);
            }
            next = planned.parent;
        }
        Ok(guards)
    }
}

/// What the `blocked` rules of `rules` (relative to `work_dir`; `place` names the list) match
/// below `work_dir`.
pub fn hidden_by(work_dir: &Path, rules: &[PathRule], place: &str) -> Result<Guards> {
    let mut guards = Guards::default();
    let compiled = PathRules::new(rules, place, false)?;
    let blocked =
        |_: &Path, relative: &Path, kind: EntryKind| compiled.blocks_in_walk(relative, kind);
    let found = expand_with_other_names(work_dir, &[&blocked], None)
        .map_err(|stopped| stopped.into_error(&format!("{place}: the blocked path rules")))?;
    for matched in found {
        let relative = matched.path.strip_prefix(work_dir).unwrap_or(&matched.path);
        let kind = if matched.is_dir {
            EntryKind::Dir
        } else {
            EntryKind::File
        };
        let reason = compiled
            .decide(relative, kind)
            .map(|rule| format!("the path rule {}", rule.describe()))
            .unwrap_or_else(|| format!("a blocked path rule of {place}"));
        guards.hide(&matched.path, reason);
    }
    // A blocked rule naming one path (`/.env`, `.env.local`, `/secrets/`) that does not exist
    // yet: a process must not create it either (what it makes there is removed after the
    // call). A pattern names no path to watch until something matches it.
    for rule in rules
        .iter()
        .filter(|rule| rule.approval == Decision::Blocked)
    {
        let Some(literal) = literal_path(&rule.pattern) else {
            continue;
        };
        let path = work_dir.join(literal);
        if path.symlink_metadata().is_err() {
            guards.hide(&path, format!("the path rule '{}' (blocked)", rule.pattern));
        }
    }
    Ok(guards)
}

/// The one path below the work directory a path rule's pattern names when it has no wildcard
/// (`/.env`, `.env.local`, `/config/.env`, `/secrets/`): leading `/` and `./` and a trailing `/`
/// taken off; `None` for a pattern with a wildcard or an escape, or one that is not a plain
/// relative path.
fn literal_path(pattern: &str) -> Option<PathBuf> {
    let trimmed = pattern.trim_start_matches('/');
    let trimmed = trimmed
        .strip_prefix("./")
        .unwrap_or(trimmed)
        .trim_end_matches('/');
    if trimmed.is_empty() || trimmed.contains(['*', '?', '[', ']', '{', '}', '\\', '!']) {
        return None;
    }
    let path = PathBuf::from(trimmed);
    path.components()
        .all(|part| matches!(part, Component::Normal(_)))
        .then_some(path)
}

/// Protects the program config of a worker, and the names golem-forge would find in the
/// folders between the worker file and the program (or the file system root) that lie in a work
/// directory of the graph: a config planted there would set the next run's defaults.
fn protect_program_config(guards: &mut Guards, planned: &PlannedWorker, work_dirs: &[PathBuf]) {
    let worker = &planned.worker;
    if let Some(config) = &worker.program_config {
        guards.protect(
            config,
            format!("the golem-forge program config of '{}'", worker.name),
        );
    }
    let Some(folder) = worker.path.parent() else {
        return;
    };
    let stop = worker
        .program_config
        .as_ref()
        .and_then(|config| config.parent());
    // Every folder up to the config's own, that one included: a second name beside the
    // config (`.yaml` beside `.yml`) may be the one the next load reads first.
    for dir in folder.ancestors() {
        if work_dirs.iter().any(|work_dir| dir.starts_with(work_dir)) {
            for name in CONFIG_FILE_NAMES {
                guards.protect(
                    &dir.join(name),
                    "where a golem-forge program config would be found",
                );
            }
        }
        if Some(dir) == stop {
            break;
        }
    }
}

/// What decides the code a Node launcher (`npx pkg`, `npm run x`, `node .`) runs in its
/// working directory: the packages found there, the scripts and `imports` of `package.json`,
/// npm's `node-options`.
const NODE_PROJECT_FILES: &[&str] = &["node_modules", "package.json", ".npmrc"];

/// Whether `command` is a Node launcher that resolves code from its working directory.
fn is_node_launcher(command: &str) -> bool {
    let name = Path::new(command)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(command);
    matches!(
        name,
        "node" | "npx" | "npm" | "pnpm" | "pnpx" | "yarn" | "bun" | "bunx" | "corepack" | "deno"
    )
}

/// The outermost `node_modules` folder on the way to `path` (the one Node finds a package's
/// own dependencies in, nested ones included), or `None` outside any.
fn packages_folder(path: &Path) -> Option<PathBuf> {
    let components: Vec<Component<'_>> = path.components().collect();
    let at = components
        .iter()
        .position(|component| component.as_os_str() == "node_modules")?;
    Some(components[..=at].iter().collect())
}

/// The package folder (`…/node_modules/pkg`, `…/node_modules/@scope/pkg`) a file belongs to,
/// or `None` for a file outside any `node_modules` folder.
fn package_folder(file: &Path) -> Option<PathBuf> {
    let components: Vec<Component<'_>> = file.components().collect();
    let at = components
        .iter()
        .rposition(|component| component.as_os_str() == "node_modules")?;
    let name = components.get(at + 1)?;
    let length = if name.as_os_str().to_string_lossy().starts_with('@') {
        at + 3
    } else {
        at + 2
    };
    (length <= components.len()).then(|| components[..length].iter().collect())
}

/// Prepares the sandbox of `toolset` of `planned` again, from `scope`.
fn prepare_again(planned: &mut PlannedWorker, toolset: &str, scope: &SandboxScope) -> Result<()> {
    let path = planned.worker.path.clone();
    let place = |err: Error| match err {
        Error::SandboxUnavailable(message) => Error::SandboxUnavailable(format!(
            "{}: {message} (in a worker file: sandbox: {{ mode: best-effort }} or mode: off)",
            path.display()
        )),
        other => other,
    };
    let handed_out = || {
        Error::Internal(format!(
            "the {toolset} tools of '{}' were handed out before their protected paths were known; report the tools modules' imports before building the tools",
            path.display()
        ))
    };
    // The command toolsets of a worker that calls others are shared with the caller layers of
    // the workers it calls, which judge commands by their rules and never run with their
    // sandbox: such a toolset is built again from its configuration with the new sandbox.
    let callers = planned.callers.clone();
    let work_dir = planned.worker.work_dir.clone();
    match toolset {
        "shell" => {
            let built = scope.build().map_err(place)?;
            let config = planned.worker.toolsets.shell.clone();
            if let Some(shell) = planned.shell.as_mut() {
                match Arc::get_mut(shell) {
                    Some(own) => own.set_sandbox(built.sandbox),
                    None => {
                        let config = config.ok_or_else(handed_out)?;
                        *shell = Arc::new(
                            crate::command::ShellToolset::new(&work_dir, &config)?
                                .with_callers(callers)
                                .with_sandbox(built.sandbox),
                        );
                    }
                }
            }
        }
        "cli_execute" => {
            let built = scope.build().map_err(place)?;
            let config = planned.worker.toolsets.cli_execute.clone();
            if let Some(cli) = planned.cli_execute.as_mut() {
                match Arc::get_mut(cli) {
                    Some(own) => own.set_sandbox(built.sandbox),
                    None => {
                        let config = config.ok_or_else(handed_out)?;
                        *cli = Arc::new(
                            crate::command::CliExecute::new(&work_dir, &config)?
                                .with_callers(callers)
                                .with_sandbox(built.sandbox),
                        );
                    }
                }
            }
        }
        "executables" => {
            let run = scope.build().map_err(place)?;
            let describe = scope.for_discovery().build().map_err(place)?;
            if let Some(registry) = planned.executables.as_mut() {
                Arc::get_mut(registry)
                    .ok_or_else(handed_out)?
                    .set_sandboxes(run.sandbox, describe.sandbox);
            }
        }
        "mcp" => {
            let built = scope.build().map_err(place)?;
            if let Some(mcp) = planned.mcp.as_mut() {
                Arc::get_mut(mcp).ok_or_else(handed_out)?.set_sandbox(built);
            }
        }
        other => {
            return Err(Error::Internal(format!(
                "no sandbox to prepare for toolset '{other}'"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
