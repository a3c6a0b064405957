//! Executable tools: the registry (discovery, killable runs) and tool scaffolding.

use std::path::Path;
use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::Env;
use napi_derive::napi;
use toolgate_core::executables::{
    self, discovery, scaffold, ExecutableToolsOptions, RefreshOptions, Registry, RunToolOptions,
};
use toolgate_core::process::Job;

use crate::enums::{DiagnosticKind, ToolFormat, ToolLanguage};
use crate::error::{guarded, infallible, sync, Settled};
use crate::js_value;
use crate::process::ProcessHandle;

/// A parameter of a `tool.yaml` tool.
#[napi(object, object_from_js = false)]
pub struct ToolParameter {
    pub name: String,
    /// `string`, `number`, `integer` or `boolean`.
    pub r#type: String,
    pub required: bool,
    pub description: Option<String>,
}

/// A discovered tool.
#[napi(object, object_from_js = false)]
pub struct ExecutableToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON Schema its input must match, as JSON text.
    pub input_schema: String,
    pub format: ToolFormat,
    /// The executable (protocol) or `tool.yaml` (manifest) as found in its directory.
    pub source: String,
    /// The program that runs, symlinks resolved.
    pub program: String,
    /// The tool directory it came from.
    pub directory: String,
    pub version: Option<String>,
    pub usage: Option<String>,
    pub parameters: Option<Vec<ToolParameter>>,
}

impl From<executables::ToolSpec> for ExecutableToolSpec {
    fn from(spec: executables::ToolSpec) -> Self {
        let (version, usage, parameters) = match &spec.manifest {
            Some(manifest) => (
                manifest.version.clone(),
                manifest.usage.clone(),
                Some(
                    manifest
                        .parameters
                        .iter()
                        .map(|p| ToolParameter {
                            name: p.name.clone(),
                            r#type: p.kind.as_str().to_string(),
                            required: p.required,
                            description: p.description.clone(),
                        })
                        .collect(),
                ),
            ),
            None => (None, None, None),
        };
        Self {
            input_schema: spec.input_schema.as_ref().get().to_string(),
            name: spec.name,
            description: spec.description,
            format: spec.format.into(),
            source: spec.source.display().to_string(),
            program: spec.program.display().to_string(),
            directory: spec.directory.display().to_string(),
            version,
            usage,
            parameters,
        }
    }
}

/// Something in a tool directory that is not (or not the) tool.
#[napi(object, object_from_js = false)]
pub struct ExecutableToolDiagnostic {
    pub path: String,
    pub kind: DiagnosticKind,
    pub reason: String,
}

impl From<executables::Diagnostic> for ExecutableToolDiagnostic {
    fn from(diagnostic: executables::Diagnostic) -> Self {
        Self {
            path: diagnostic.path.display().to_string(),
            kind: diagnostic.kind.into(),
            reason: diagnostic.reason,
        }
    }
}

/// What a discovery had to do.
#[napi(object, object_from_js = false)]
pub struct DiscoveryStats {
    /// `description` processes started.
    pub spawned: u32,
    pub from_cache: u32,
    pub from_memory: u32,
    pub listed_directories: u32,
}

/// What a discovery found.
#[napi(object, object_from_js = false)]
pub struct ExecutableToolDiscovery {
    pub tools: Vec<ExecutableToolSpec>,
    pub diagnostics: Vec<ExecutableToolDiagnostic>,
    pub stats: DiscoveryStats,
}

fn count(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl From<executables::Discovery> for ExecutableToolDiscovery {
    fn from(discovery: executables::Discovery) -> Self {
        Self {
            tools: discovery.tools.into_iter().map(Into::into).collect(),
            diagnostics: discovery.diagnostics.into_iter().map(Into::into).collect(),
            stats: DiscoveryStats {
                spawned: count(discovery.stats.spawned),
                from_cache: count(discovery.stats.from_cache),
                from_memory: count(discovery.stats.from_memory),
                listed_directories: count(discovery.stats.listed_directories),
            },
        }
    }
}

/// The executable tools of a set of directories. `refresh()` discovers (descriptions run
/// concurrently, unchanged tools come from the cache and are never spawned again);
/// `prepareRun()` checks an input and returns a killable run.
#[napi]
pub struct ExecutableToolRegistry {
    inner: Arc<Registry>,
    sandbox_warning: Option<String>,
}

impl ExecutableToolRegistry {
    /// Wraps a registry built elsewhere (a worker plan, which reports its sandbox warnings).
    pub fn shared(inner: Arc<Registry>) -> Self {
        Self {
            inner,
            sandbox_warning: None,
        }
    }
}

#[napi]
impl ExecutableToolRegistry {
    /// Reads `executableTools` options strictly and prepares the kernel sandboxes of runs and
    /// `description` runs. Throws `CONFIG_INVALID` for an unknown option, a bad number or an
    /// unusable value, `SANDBOX_UNAVAILABLE` when `enforce` cannot be met here.
    #[napi(constructor)]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> napi::Result<Self> {
        sync(&env, "new ExecutableToolRegistry", || {
            let options: ExecutableToolsOptions = js_value::config(&env, options)?;
            let (registry_options, sandbox_warning) = options.sandboxed_registry_options()?;
            let registry = Registry::new(registry_options)?;
            let mut registry = Self::shared(Arc::new(registry));
            registry.sandbox_warning = sandbox_warning;
            Ok(registry)
        })
    }

    /// The one best-effort sandbox warning of this process, when building this registry was
    /// the first to have one; `null` otherwise.
    #[napi(getter)]
    pub fn sandbox_warning(&self, env: Env) -> napi::Result<Option<String>> {
        infallible(&env, "ExecutableToolRegistry.sandboxWarning", || {
            self.sandbox_warning.clone()
        })
    }

    /// Discovers the tools again (`{ force: true }` asks every protocol tool for its
    /// description even when it is unchanged). When nothing changed this costs only `stat`
    /// calls. A registry of a loaded worker is frozen and refuses (`CONFIG_INVALID`).
    #[napi(ts_return_type = "Promise<ExecutableToolDiscovery>")]
    pub async fn refresh(&self, force: Option<bool>) -> Settled<ExecutableToolDiscovery> {
        let registry = Arc::clone(&self.inner);
        guarded("ExecutableToolRegistry.refresh", async move {
            registry
                .refresh(force.unwrap_or(false))
                .await
                .map(ExecutableToolDiscovery::from)
        })
        .await
    }

    /// The tools of the last refresh, highest precedence first.
    #[napi]
    pub fn tools(&self, env: Env) -> napi::Result<Vec<ExecutableToolSpec>> {
        infallible(&env, "ExecutableToolRegistry.tools", || {
            self.inner.tools().into_iter().map(Into::into).collect()
        })
    }

    /// The problems found by the last refresh.
    #[napi]
    pub fn diagnostics(&self, env: Env) -> napi::Result<Vec<ExecutableToolDiagnostic>> {
        infallible(&env, "ExecutableToolRegistry.diagnostics", || {
            self.inner
                .diagnostics()
                .into_iter()
                .map(Into::into)
                .collect()
        })
    }

    /// Checks `input` against the tool's schema and prepares the run; `wait()` on the handle
    /// runs it and resolves with the tool's result in `value`. Rejects with `TOOL_NOT_FOUND`,
    /// `INVALID_INPUT` (with JSON pointers) or `CONFIG_INVALID` (also when the tool's file
    /// changed since a worker loaded it). The check runs off the JavaScript thread: the schema
    /// is the tool's (untrusted) and the input the model's.
    #[napi(ts_return_type = "Promise<ProcessHandle>")]
    pub async fn prepare_run(
        &self,
        name: String,
        input: serde_json::Value,
    ) -> Settled<ProcessHandle> {
        let registry = Arc::clone(&self.inner);
        guarded("ExecutableToolRegistry.prepareRun", async move {
            let run = tokio::task::spawn_blocking(move || registry.prepare(&name, &input))
                .await
                .map_err(|err| {
                    toolgate_core::Error::Internal(format!(
                        "ExecutableToolRegistry.prepareRun: {err}"
                    ))
                })??;
            Ok(Job::tool(run).into())
        })
        .await
    }
}

/// Reads `registry.run()` options strictly (`{ signal? }`).
#[napi]
pub fn check_run_tool_options(env: Env, options: Option<Unknown<'_>>) -> napi::Result<()> {
    sync(&env, "run", || {
        js_value::config::<RunToolOptions>(&env, options).map(|_| ())
    })
}

/// Reads `registry.refresh()` options strictly; returns `force`.
#[napi]
pub fn check_refresh_options(env: Env, options: Option<Unknown<'_>>) -> napi::Result<bool> {
    sync(&env, "refresh", || {
        js_value::config::<RefreshOptions>(&env, options).map(|options| options.force)
    })
}

/// The default tool directories for a work directory: `<workDir>/toolgate-tools`, then
/// `~/.toolgate/tools`.
#[napi]
pub fn default_tool_directories(env: Env, work_dir: String) -> napi::Result<Vec<String>> {
    infallible(&env, "defaultToolDirectories", || {
        discovery::default_directories(Path::new(&work_dir))
            .into_iter()
            .map(|dir| dir.path.display().to_string())
            .collect()
    })
}

/// Writes a working example tool into `dir` (created when missing): a protocol tool
/// `<name>.<py|mjs|sh>`, or with `manifest` a `<name>/tool.yaml` with its entrypoint. Returns the
/// path written. Throws `INVALID_INPUT` for a bad name or language (`python`, `node`, `bash`),
/// or when the tool exists.
#[napi]
pub fn scaffold_tool(
    env: Env,
    dir: String,
    name: String,
    language: String,
    manifest: bool,
) -> napi::Result<String> {
    sync(&env, "scaffoldTool", || {
        let language: scaffold::Language = language.parse()?;
        let path = if manifest {
            scaffold::write_manifest_tool(Path::new(&dir), &name, language)
        } else {
            scaffold::write_protocol_tool(
                Path::new(&dir),
                &scaffold::NewTool::example(&name, language),
            )
        };
        path.map(|p| p.display().to_string())
    })
}

/// A protocol tool written by an agent.
#[napi(object, object_to_js = false)]
pub struct NewTool {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    pub language: ToolLanguage,
    /// Python/Node: code defining `run(args)`; bash: the body of the run command.
    pub code: String,
}

/// What `createCustomTool` wrote.
#[napi(object, object_from_js = false)]
pub struct CreatedTool {
    pub name: String,
    pub path: String,
    pub replaced: bool,
}
