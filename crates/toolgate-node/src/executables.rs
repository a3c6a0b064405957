//! Executable custom tools: the registry, killable tool runs, and tool scaffolding.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi_derive::napi;
use serde::Serialize;
use toolgate_core::exec::AbortHandle;
use toolgate_core::executables::{
    self, discovery, scaffold, CacheMode, DiscoveryOptions, PreparedRun, Registry, RegistryOptions,
    RunOptions, ToolDirectory,
};

use crate::error::{invalid_input, to_napi, to_napi_async, Code, NodeError};

/// One tool directory.
#[napi(object)]
pub struct NativeToolDirectory {
    pub path: String,
    /// A missing optional directory is not reported (the defaults are optional).
    pub optional: Option<bool>,
}

/// Where to find tools and how to run them.
#[napi(object)]
pub struct NativeRegistryOptions {
    /// Tool directories, highest precedence first (absolute). Default: `<workDir>/toolgate-tools`
    /// then `~/.toolgate/tools`, both optional.
    pub dirs: Option<Vec<NativeToolDirectory>>,
    /// Where tools run (absolute, existing).
    pub work_dir: String,
    /// Kill a tool's process group after this many milliseconds (default 30000).
    pub timeout_ms: Option<f64>,
    /// Per-tool timeouts in milliseconds, by tool name.
    pub tool_timeouts_ms: Option<HashMap<String, f64>>,
    /// Cap for each of stdout and stderr in bytes (default 1 MiB).
    pub max_output_bytes: Option<f64>,
    /// Variables passed to tools besides PATH, HOME, USER and LANG.
    pub env_passthrough: Option<Vec<String>>,
    /// `use` (default), `refresh` (ask every tool again, then store) or `off`.
    pub cache: Option<String>,
    /// Cache directory (default `$XDG_CACHE_HOME/toolgate` or `~/.cache/toolgate`).
    pub cache_dir: Option<String>,
    /// How many `description` processes may run at once (default 4 per core).
    pub parallelism: Option<u32>,
    /// Time `description` may take, in milliseconds (default 5000).
    pub description_timeout_ms: Option<f64>,
}

/// A parameter of a `tool.yaml` tool (JSON shape).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ParameterJson {
    name: String,
    #[serde(rename = "type")]
    kind: executables::manifest::ParameterType,
    required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// A discovered tool (JSON shape of `ExecutableToolSpec` in ts/src/tools/executables.ts).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecJson {
    name: String,
    description: String,
    #[serde(serialize_with = "schema_text")]
    input_schema: executables::SchemaText,
    format: &'static str,
    source: String,
    program: String,
    directory: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Vec<ParameterJson>>,
}

/// The schema goes out as the JSON text it is kept as.
fn schema_text<S: serde::Serializer>(
    value: &executables::SchemaText,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    value.as_ref().serialize(serializer)
}

impl From<executables::ToolSpec> for SpecJson {
    fn from(spec: executables::ToolSpec) -> Self {
        let (version, usage, parameters) = match spec.manifest {
            Some(manifest) => (
                manifest.version.clone(),
                manifest.usage.clone(),
                Some(
                    manifest
                        .parameters
                        .iter()
                        .map(|p| ParameterJson {
                            name: p.name.clone(),
                            kind: p.kind,
                            required: p.required,
                            description: p.description.clone(),
                        })
                        .collect(),
                ),
            ),
            None => (None, None, None),
        };
        Self {
            name: spec.name,
            description: spec.description,
            input_schema: spec.input_schema,
            format: spec.format.as_str(),
            source: spec.source.display().to_string(),
            program: spec.program.display().to_string(),
            directory: spec.directory.display().to_string(),
            version,
            usage,
            parameters,
        }
    }
}

/// Something in a tool directory that is not (or not the) tool (JSON shape).
#[derive(Serialize)]
struct DiagnosticJson {
    path: String,
    kind: &'static str,
    reason: String,
}

impl From<executables::Diagnostic> for DiagnosticJson {
    fn from(diagnostic: executables::Diagnostic) -> Self {
        Self {
            path: diagnostic.path.display().to_string(),
            kind: diagnostic.kind.as_str(),
            reason: diagnostic.reason,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatsJson {
    spawned: usize,
    from_cache: usize,
    from_memory: usize,
    listed_directories: usize,
}

#[derive(Serialize)]
struct DiscoveryJson {
    tools: Vec<SpecJson>,
    diagnostics: Vec<DiagnosticJson>,
    stats: StatsJson,
}

/// Serialises for JavaScript. Tool lists travel as one JSON string: building hundreds of nested
/// schema objects through napi calls costs milliseconds, `JSON.parse` a fraction of that.
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

fn discovery_json(discovery: executables::Discovery) -> String {
    to_json(&DiscoveryJson {
        tools: discovery.tools.into_iter().map(Into::into).collect(),
        diagnostics: discovery.diagnostics.into_iter().map(Into::into).collect(),
        stats: StatsJson {
            spawned: discovery.stats.spawned,
            from_cache: discovery.stats.from_cache,
            from_memory: discovery.stats.from_memory,
            listed_directories: discovery.stats.listed_directories,
        },
    })
}

fn milliseconds(name: &str, value: f64) -> napi::Result<Duration, Code> {
    if value.is_finite() && value > 0.0 && value <= 86_400_000.0 {
        Ok(Duration::from_secs_f64(value / 1000.0))
    } else {
        Err(invalid_input(format!(
            "{name} must be a number of milliseconds between 1 and 86400000, got {value}"
        )))
    }
}

impl TryFrom<NativeRegistryOptions> for RegistryOptions {
    type Error = NodeError;

    fn try_from(options: NativeRegistryOptions) -> napi::Result<Self, Code> {
        let work_dir = PathBuf::from(&options.work_dir);
        let directories = match options.dirs {
            Some(dirs) => dirs
                .into_iter()
                .map(|dir| ToolDirectory {
                    path: work_dir.join(dir.path),
                    optional: dir.optional.unwrap_or(false),
                })
                .collect(),
            None => discovery::default_directories(&work_dir),
        };
        let mut discovery = DiscoveryOptions::new(directories);
        discovery.cache = match options.cache.as_deref() {
            None | Some("use") => CacheMode::Use,
            Some("refresh") => CacheMode::Refresh,
            Some("off") => CacheMode::Off,
            Some(other) => {
                return Err(invalid_input(format!(
                    "cache must be 'use', 'refresh' or 'off', got '{other}'"
                )))
            }
        };
        discovery.cache_dir = options.cache_dir.map(PathBuf::from);
        if let Some(parallelism) = options.parallelism {
            discovery.parallelism = parallelism as usize;
        }
        if let Some(ms) = options.description_timeout_ms {
            discovery.description_timeout = milliseconds("descriptionTimeoutMs", ms)?;
        }
        let mut run = RunOptions::new(work_dir);
        if let Some(ms) = options.timeout_ms {
            run.timeout = milliseconds("timeoutMs", ms)?;
        }
        for (name, ms) in options.tool_timeouts_ms.unwrap_or_default() {
            let timeout = milliseconds(&format!("toolTimeoutsMs.{name}"), ms)?;
            run.tool_timeouts.insert(name, timeout);
        }
        if let Some(cap) = options.max_output_bytes {
            if !(cap.is_finite() && cap >= 1.0) {
                return Err(invalid_input(format!(
                    "maxOutputBytes must be a positive number of bytes, got {cap}"
                )));
            }
            run.max_output_bytes = cap as usize;
        }
        run.env_passthrough = options.env_passthrough.unwrap_or_default();
        Ok(RegistryOptions { discovery, run })
    }
}

/// The executable tools of a set of directories. `refresh()` discovers (descriptions run
/// concurrently, unchanged tools come from the cache and are never spawned again);
/// `prepareRun()` checks an input and returns a killable run.
#[napi]
pub struct ExecutableToolRegistry {
    inner: Arc<Registry>,
}

#[napi]
impl ExecutableToolRegistry {
    /// Throws `CONFIG_INVALID` or `INVALID_INPUT` for unusable options.
    #[napi(constructor)]
    pub fn new(options: NativeRegistryOptions) -> napi::Result<Self, Code> {
        let options = RegistryOptions::try_from(options)?;
        Registry::new(options)
            .map(|registry| Self {
                inner: Arc::new(registry),
            })
            .map_err(to_napi)
    }

    /// Discovers the tools again; `force` asks every protocol tool for its description even
    /// when it is unchanged. When nothing changed this costs only `stat` calls. Resolves with
    /// the discovery as JSON: `{ tools: ExecutableToolSpec[], diagnostics: [{ path, kind,
    /// reason }], stats: { spawned, fromCache, fromMemory, listedDirectories } }`.
    #[napi]
    pub async fn refresh(&self, force: Option<bool>) -> napi::Result<String> {
        let registry = Arc::clone(&self.inner);
        registry
            .refresh(force.unwrap_or(false))
            .await
            .map(discovery_json)
            .map_err(to_napi_async)
    }

    /// The tools of the last refresh, highest precedence first, as a JSON array.
    #[napi]
    pub fn tools_json(&self) -> String {
        let tools: Vec<SpecJson> = self.inner.tools().into_iter().map(Into::into).collect();
        to_json(&tools)
    }

    /// The problems found by the last refresh, as a JSON array.
    #[napi]
    pub fn diagnostics_json(&self) -> String {
        let diagnostics: Vec<DiagnosticJson> = self
            .inner
            .diagnostics()
            .into_iter()
            .map(Into::into)
            .collect();
        to_json(&diagnostics)
    }

    /// Checks `input` against the tool's schema and prepares the run; `wait()` on the handle
    /// runs it. Throws `TOOL_NOT_FOUND`, `INVALID_INPUT` (with JSON pointers) or
    /// `CONFIG_INVALID`.
    #[napi]
    pub fn prepare_run(
        &self,
        name: String,
        input: serde_json::Value,
    ) -> napi::Result<ToolRunHandle, Code> {
        let run = self.inner.prepare(&name, &input).map_err(to_napi)?;
        Ok(ToolRunHandle {
            abort: run.abort_handle(),
            run: Mutex::new(Some(run)),
        })
    }
}

/// What a tool returned.
#[napi(object)]
pub struct NativeToolResult {
    /// stdout parsed as JSON when it is JSON, else the text.
    pub result: serde_json::Value,
    pub duration_ms: f64,
    /// Whether stdout or stderr was cut at the cap (the result then ends with a marker).
    pub truncated: bool,
    pub stderr: String,
}

/// A tool run. `wait()` starts it and resolves with its result; `kill()` stops its whole
/// process group, also before it has started.
#[napi]
pub struct ToolRunHandle {
    abort: AbortHandle,
    run: Mutex<Option<PreparedRun>>,
}

#[napi]
impl ToolRunHandle {
    /// Kills the tool's process group; `wait()` then rejects with `TOOL_FAILED` (aborted).
    #[napi]
    pub fn kill(&self) {
        self.abort.abort();
    }

    /// Runs the tool. Rejects with `TIMEOUT`, `TOOL_FAILED` (non-zero exit with its stderr,
    /// `{"error": ...}` on stdout, or killed), `BINARY_NOT_FOUND` or `SPAWN_FAILED`.
    #[napi]
    pub async fn wait(&self) -> napi::Result<NativeToolResult> {
        let run = self.run.lock().ok().and_then(|mut slot| slot.take());
        let run = run.ok_or_else(|| {
            napi::Error::from_reason("INVALID_INPUT: wait() was already called on this run")
        })?;
        let output = run.run().await.map_err(to_napi_async)?;
        Ok(NativeToolResult {
            result: output.result,
            duration_ms: output.duration.as_secs_f64() * 1000.0,
            truncated: output.truncated,
            stderr: output.stderr,
        })
    }
}

/// The default tool directories for a work directory.
#[napi]
pub fn default_tool_directories(work_dir: String) -> Vec<NativeToolDirectory> {
    discovery::default_directories(Path::new(&work_dir))
        .into_iter()
        .map(|dir| NativeToolDirectory {
            path: dir.path.display().to_string(),
            optional: Some(dir.optional),
        })
        .collect()
}

/// Writes a working example tool into `dir` (created when missing): a protocol tool
/// `<name>.<py|mjs|sh>`, or with `manifest` a `<name>/tool.yaml` with its entrypoint. Returns the
/// path written. Throws `INVALID_INPUT` for a bad name or language, or when the tool exists.
#[napi]
pub fn scaffold_tool(
    dir: String,
    name: String,
    language: String,
    manifest: bool,
) -> napi::Result<String, Code> {
    let language: scaffold::Language = language.parse().map_err(to_napi)?;
    let path = if manifest {
        scaffold::write_manifest_tool(Path::new(&dir), &name, language)
    } else {
        scaffold::write_protocol_tool(
            Path::new(&dir),
            &scaffold::NewTool::example(&name, language),
        )
    };
    path.map(|p| p.display().to_string()).map_err(to_napi)
}

/// A protocol tool written by an agent.
#[napi(object)]
pub struct NativeNewTool {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    /// `python`, `node` or `bash`.
    pub language: String,
    /// Python/Node: code defining `run(args)`; bash: the body of the run command.
    pub code: String,
}

/// What `createCustomTool` wrote.
#[napi(object)]
pub struct NativeCreatedTool {
    pub name: String,
    pub path: String,
    pub replaced: bool,
}

/// Writes an agent's protocol tool into `dir` (relative to `workDir`; confined to it when it
/// lies inside) and keeps it only when it answers `description` correctly. Rejects with
/// `INVALID_INPUT` (the reason, e.g. the tool's syntax error; nothing is kept) or
/// `PATH_OUTSIDE_ROOT`.
#[napi]
pub async fn create_custom_tool(
    work_dir: String,
    dir: String,
    tool: NativeNewTool,
    replace: Option<bool>,
) -> napi::Result<NativeCreatedTool> {
    let language: scaffold::Language = tool.language.parse().map_err(to_napi_async)?;
    let new_tool = scaffold::NewTool {
        name: tool.name,
        description: tool.description,
        input_schema: tool.input_schema,
        language,
        code: Some(tool.code),
    };
    let created = scaffold::create_protocol_tool(
        Path::new(&work_dir),
        Path::new(&dir),
        &new_tool,
        replace.unwrap_or(false),
    )
    .await
    .map_err(to_napi_async)?;
    Ok(NativeCreatedTool {
        name: created.name,
        path: created.path.display().to_string(),
        replaced: created.replaced,
    })
}
