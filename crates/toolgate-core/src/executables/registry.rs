//! The registry: the discovered tools of a set of directories, kept current by
//! [`Registry::refresh`] (only `stat` calls when nothing changed), and the way to run them by
//! name.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::frozen::FrozenFiles;

use serde_json::Value;

use super::discovery::{discover, DiscoveryOptions, Snapshot};
use super::run::{prepare, PreparedRun, RunOptions};
use super::{Diagnostic, Discovery, ToolSpec};
use crate::error::{Error, Result};
use crate::sandbox_config::SandboxScope;
use crate::schema::InputSchema;

/// Where to look for tools and how to run them.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    pub discovery: DiscoveryOptions,
    pub run: RunOptions,
}

impl RegistryOptions {
    /// Prepares the kernel sandboxes of `scope`: runs get it as it is, `description` runs at
    /// discovery its [discovery form](SandboxScope::for_discovery). Returns the best-effort
    /// warning when this was the first preparation in the process to have one.
    pub fn with_sandbox(mut self, scope: &SandboxScope) -> Result<(Self, Option<String>)> {
        let run = scope.build()?;
        let describe = scope.for_discovery().build()?;
        self.run.sandbox = run.sandbox;
        self.discovery.sandbox = describe.sandbox;
        Ok((self, run.warning.or(describe.warning)))
    }
}

/// One tool of the registry, with its schema compiled on first use.
#[derive(Debug)]
pub struct RegisteredTool {
    pub spec: ToolSpec,
    schema: OnceLock<std::result::Result<InputSchema, String>>,
}

impl RegisteredTool {
    fn new(spec: ToolSpec) -> Self {
        Self {
            spec,
            schema: OnceLock::new(),
        }
    }

    /// The compiled input schema. Descriptions were checked when they were learnt, so this
    /// only fails for a cache entry written by an older toolgate with looser checks.
    pub fn schema(&self) -> Result<&InputSchema> {
        self.schema
            .get_or_init(|| InputSchema::compile(&self.spec.input_schema_value()))
            .as_ref()
            .map_err(|reason| {
                Error::ConfigInvalid(format!(
                    "tool '{}' ({}): {reason}",
                    self.spec.name,
                    self.spec.source.display()
                ))
            })
    }
}

#[derive(Debug, Default)]
struct State {
    snapshot: Arc<Snapshot>,
    tools: BTreeMap<String, Arc<RegisteredTool>>,
    order: Vec<String>,
    diagnostics: Vec<Diagnostic>,
}

/// The tools of the configured directories. Cheap to share: refreshing swaps the state, so
/// lookups never wait for a discovery.
#[derive(Debug)]
pub struct Registry {
    options: RegistryOptions,
    state: Mutex<Arc<State>>,
    /// Set by [`freeze`](Self::freeze): the tool files as discovered, checked before each run.
    frozen: OnceLock<FrozenFiles>,
}

impl Registry {
    /// An empty registry; call [`refresh`](Self::refresh) to discover. Throws `CONFIG_INVALID`
    /// for unusable options.
    pub fn new(options: RegistryOptions) -> Result<Self> {
        options.discovery.check()?;
        options.run.check()?;
        Ok(Self {
            options,
            state: Mutex::new(Arc::new(State::default())),
            frozen: OnceLock::new(),
        })
    }

    /// Replaces the sandboxes of runs and of `description` at discovery (a worker plan
    /// prepares them again once it knows every protected path of its graph).
    pub fn set_sandboxes(
        &mut self,
        run: Option<Arc<crate::sandbox::Sandbox>>,
        discovery: Option<Arc<crate::sandbox::Sandbox>>,
    ) {
        self.options.run.sandbox = run;
        self.options.discovery.sandbox = discovery;
    }

    /// The programs of the configured directories as they are on disk now, found without
    /// running any (for `toolgate check --sandbox`, which lists what each is granted): every
    /// file directly in a directory, and each tool directory's `tool.yaml` entrypoint.
    pub fn programs(&self) -> Vec<PathBuf> {
        let mut programs = Vec::new();
        for dir in &self.options.discovery.directories {
            let Ok(entries) = std::fs::read_dir(&dir.path) else {
                continue;
            };
            let mut entries: Vec<PathBuf> = entries
                .flatten()
                .filter(|entry| !super::discovery::is_hidden(&entry.file_name()))
                .map(|entry| entry.path())
                .collect();
            entries.sort();
            for path in entries {
                if path.is_dir() {
                    let manifest = path.join(super::manifest::MANIFEST_FILE);
                    if let Ok((_, entrypoint)) = super::manifest::Manifest::load(&manifest) {
                        programs.push(entrypoint);
                    }
                } else if path.is_file() {
                    programs.push(path);
                }
            }
        }
        programs
    }

    /// The options the registry was made with.
    pub fn options(&self) -> &RegistryOptions {
        &self.options
    }

    fn state(&self) -> Arc<State> {
        Arc::clone(&self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Discovers again. Unchanged files keep what was learnt about them (no process is
    /// started and the cache file is not touched); `force` asks every protocol tool again.
    pub async fn refresh(&self, force: bool) -> Result<Discovery> {
        if self.is_frozen() {
            return Err(Error::ConfigInvalid(
                "these executable tools belong to a loaded worker and are frozen; load the worker again to discover new or changed tools".into(),
            ));
        }
        let previous = Arc::clone(&self.state().snapshot);
        let (discovery, snapshot) = discover(&self.options.discovery, previous, force).await?;
        let old = self.state();
        let mut tools = BTreeMap::new();
        let mut order = Vec::new();
        for spec in &discovery.tools {
            // Keep the compiled schema of a tool that did not change.
            let tool = match old.tools.get(&spec.name) {
                Some(existing) if existing.spec == *spec => Arc::clone(existing),
                _ => Arc::new(RegisteredTool::new(spec.clone())),
            };
            order.push(spec.name.clone());
            tools.insert(spec.name.clone(), tool);
        }
        let state = State {
            snapshot: Arc::new(snapshot),
            tools,
            order,
            diagnostics: discovery.diagnostics.clone(),
        };
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(state);
        Ok(discovery)
    }

    /// The tools of the last refresh, in precedence order.
    pub fn tools(&self) -> Vec<ToolSpec> {
        let state = self.state();
        state
            .order
            .iter()
            .filter_map(|name| state.tools.get(name))
            .map(|tool| tool.spec.clone())
            .collect()
    }

    /// The problems found by the last refresh.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.state().diagnostics.clone()
    }

    /// The tool named `name` (without the `custom_tool_` prefix).
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.state().tools.get(name).cloned()
    }

    /// Checks `input` against the tool's schema and prepares its run. Errors:
    /// `TOOL_NOT_FOUND`, `INVALID_INPUT` with JSON pointers, `CONFIG_INVALID`.
    pub fn prepare(&self, name: &str, input: &Value) -> Result<PreparedRun> {
        let tool = self.get(name).ok_or_else(|| {
            let state = self.state();
            let known = if state.order.is_empty() {
                "no tools were discovered".to_string()
            } else {
                format!("known tools: {}", state.order.join(", "))
            };
            Error::ToolNotFound(format!(
                "no executable tool is named '{name}' ({known}); run `toolgate tools list` to see them"
            ))
        })?;
        if let Some(frozen) = self.frozen.get() {
            frozen.verify_paths(
                [tool.spec.source.as_path(), tool.spec.program.as_path()],
                &format!("running '{}{name}'", crate::limits::EXECUTABLE_TOOL_PREFIX),
            )?;
        }
        prepare(&tool.spec, tool.schema()?, input, &self.options.run)
    }

    /// Freezes the tools of the last refresh: from now on a tool whose file (its executable, or
    /// its `tool.yaml` and entrypoint) changed is refused instead of run, and the tools are not
    /// discovered again. Returns the frozen files. Used for the workers of a delegation graph,
    /// whose files the model may be able to write.
    pub fn freeze(&self) -> &FrozenFiles {
        self.frozen.get_or_init(|| {
            let mut files = FrozenFiles::default();
            for spec in self.tools() {
                files.freeze(&spec.source, "executable tool file");
                files.freeze(&spec.program, "executable tool program");
            }
            files
        })
    }

    /// Whether [`freeze`](Self::freeze) was called.
    pub fn is_frozen(&self) -> bool {
        self.frozen.get().is_some()
    }
}

#[cfg(test)]
mod tests;
