//! Worker files: `*.yaml` / `*.yml`, or `*.worker` (YAML front matter between `---` lines, then a
//! Markdown body that becomes the instructions).
//!
//! Parsing is strict: unknown keys, wrong types and bad values are `CONFIG_INVALID` errors that
//! give the file, the line and the column. Relative paths resolve against the worker file's
//! directory. A few keys written for golem-forge are accepted without being acted on; they
//! produce warnings, never silence.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::ApprovalConfig;
use crate::builtins::BuiltinsConfig;
use crate::command::config::{CliExecuteConfig, ShellConfig};
use crate::error::{Error, Result};
use crate::executables::config::ExecutablesConfig;
use crate::frozen::{read_stamped, FileStamp};
use crate::fs::config::{CodeAgentConfig, FilesystemConfig};
use crate::mcp::McpToolsetConfig;
use crate::path::PathValidator;
use crate::sandbox_config::{SandboxFields, SandboxModeName};

pub mod attachments;
mod decide;
pub mod durable;
pub mod golem;
pub mod options;
mod path_check;
mod plan;
mod program;
mod registry;
pub mod report;
mod saved;

pub use decide::{DecidedTool, McpReports, ModuleTools};
pub use options::{
    LoadCustomToolsOptions, LoadWorkerOptions, ResolveModelOptions, WorkerToolsOptions,
};
pub use path_check::{PathCheck, PathRefusal};
pub use plan::{
    hidden_by, plan_worker, Delegate, ModuleImports, PlannedWorker, SandboxGuards, WorkerPlan,
};
pub use report::{PlanReport, PLAN_REPORT_VERSION};
pub use saved::SaveOffer;

/// A worker file as written. Its JSON Schema (`schemas/worker.schema.json`) is generated from
/// this type, so editors validate and complete worker files.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "toolgate worker file")]
pub struct WorkerFile {
    /// The worker's name; it is also the tool name when another worker calls it.
    pub name: String,
    /// What the worker does (shown to a calling worker's model).
    #[serde(default)]
    pub description: Option<String>,
    /// `provider:model`, e.g. `openai:gpt-4o-mini`; `--model` and `TOOLGATE_MODEL` override it.
    #[serde(default)]
    pub model: Option<String>,
    /// The system prompt. In a `.worker` file the Markdown body is the instructions.
    #[serde(default)]
    pub instructions: Option<String>,
    /// `single` (one task, one answer). `chat` is accepted for golem-forge files but runs as
    /// `single`, with a warning.
    #[serde(default)]
    pub mode: Option<WorkerMode>,
    /// Model patterns (`*` matches anything) the worker is written for; another model is refused.
    #[serde(default)]
    pub compatible_models: Vec<String>,
    /// Model steps per run (default 20).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_steps: Option<u32>,
    /// How the model calls tools: `native` (default: the provider's tool calling) or `xml`
    /// (Forge's `<tool>{...}</tool>` blocks in plain text, for models without tool calling).
    #[serde(default)]
    pub tool_call_format: ToolCallFormat,
    /// Approval for every tool of the worker, on top of each toolset's own.
    #[serde(default)]
    pub approval: Option<ApprovalConfig>,
    /// The work directory of the file and command toolsets, and the kernel sandbox of every
    /// process the worker's tools start.
    #[serde(default)]
    pub sandbox: Option<SandboxConfig>,
    /// The toolsets the worker gets.
    #[serde(default)]
    pub toolsets: ToolsetsConfig,
    /// The audit log its runs append to.
    #[serde(default)]
    pub audit: Option<crate::audit::AuditConfig>,
    /// golem-forge: `false` refuses an empty task (default: an empty task is accepted).
    #[serde(default)]
    pub allow_empty_input: Option<bool>,
    /// golem-forge: what a caller may attach when it calls this worker.
    #[serde(default)]
    pub attachment_policy: Option<golem::AttachmentPolicy>,
    /// golem-forge: provider-side tools; accepted, with a warning.
    #[serde(default)]
    pub server_side_tools: Option<Vec<golem::ServerSideTool>>,
    /// golem-forge: accepted (toolgate never edits worker files).
    #[serde(default)]
    pub locked: Option<bool>,
    /// golem-forge: accepted, with a warning (the conversation is not trimmed).
    #[serde(default)]
    pub max_context_tokens: Option<u64>,
    /// golem-forge: a JSON Schema file (`.json`, `.yaml`, `.yml`, relative to this file) the
    /// final `task_completion` result must match; a registry name is accepted with a warning.
    #[serde(default)]
    pub output_schema_ref: Option<String>,
}

/// How a worker's model calls tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallFormat {
    /// The provider's own tool calling.
    #[default]
    Native,
    /// `<tool>{"server_name": "local", "tool_name": …, "arguments": {…}}</tool>` in the text.
    Xml,
}

/// How a worker converses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkerMode {
    Single,
    Chat,
}

/// `sandbox`: where the worker's toolsets operate, and what the processes they start may
/// reach (the kernel sandbox: by default the work directory, no network).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// The work directory (default: the worker file's directory).
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Nothing may write or delete in the work directory: file toolsets lose their write
    /// tools, and the kernel sandbox makes it read-only for every process.
    #[serde(default)]
    pub readonly: bool,
    /// `enforce` (default: fail with SANDBOX_UNAVAILABLE where the kernel cannot confine
    /// processes), `best-effort` (run with what the kernel offers, warn once) or `off`.
    #[serde(default)]
    pub mode: Option<SandboxModeName>,
    /// The network of processes: `false` (the default: none), `true` (every host), or
    /// `{ allow, deny, ask }`: only the hosts it allows, through toolgate's egress proxy.
    #[serde(default)]
    pub network: Option<crate::network::NetworkSetting>,
    /// Extra directories or files processes may read and execute: absolute, relative to this
    /// file, or under `~/`.
    #[serde(default)]
    pub read: Option<Vec<PathBuf>>,
    /// Extra directories or files processes may write: absolute, relative to this file, or
    /// under `~/`.
    #[serde(default)]
    pub write: Option<Vec<PathBuf>>,
    /// Paths processes may read but never change, on top of what toolgate protects by default
    /// (worker files, tools modules and what they import, executable tools, git hooks and
    /// config): gitignore-style patterns relative to the work directory.
    #[serde(default)]
    pub protect: Option<Vec<String>>,
    /// Each call's limits: `processes`, `memory_mb`, `tmp_mb`, `cpu_seconds`, `file_size_mb`
    /// (defaults: 512, 4096, 512, none, 1024).
    #[serde(default)]
    pub limits: Option<crate::sandbox_config::LimitFields>,
    /// Narrows the root to a directory inside it (golem-forge: `restrict: /src`).
    #[serde(default)]
    pub restrict: Option<String>,
    /// golem-forge zones: accepted, not acted on (warning).
    #[serde(default)]
    pub zones: Option<serde_json::Value>,
    /// golem-forge path mounts: accepted, not acted on (warning).
    #[serde(default)]
    pub paths: Option<serde_json::Value>,
    /// golem-forge: `{ write, delete }`, each `true` (ask), `false` (preApproved) or a decision,
    /// mapped onto the file toolsets' write and delete tools.
    #[serde(default)]
    pub approval: Option<golem::SandboxApproval>,
}

/// `toolsets`: each key turns on one toolset.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsetsConfig {
    /// `read_file`, `write_file`, `list_files`, `delete_file`, `file_exists`, `file_info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemConfig>,
    /// `file_read`, `file_write`, `file_edit`, `file_patch`, `glob_search`, `grep_search`,
    /// `directory_tree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_agent: Option<CodeAgentConfig>,
    /// `shell`: command strings, no shell, approval rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellConfig>,
    /// `cli_execute`: allowlisted binaries with argv arrays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_execute: Option<CliExecuteConfig>,
    /// Tools from a `tools.ts` (or JS) module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<CustomConfig>,
    /// Executable tools from directories (`custom_tool_<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executables: Option<ExecutablesConfig>,
    /// Other workers, each callable as a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersConfig>,
    /// Tools of MCP servers (`<server>_<tool>`, default approval `ask`); stdio servers run in
    /// the kernel sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpToolsetConfig>,
    /// Forge's built-in tools: `http_request`, `json_parse`, `csv_parse`, `datetime_now`,
    /// `uuid_generate`, `math_calculate`, `file_create`, `web_search`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtins: Option<BuiltinsConfig>,
}

/// `toolsets.custom`: a tools module.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomConfig {
    /// Path of the module (`./tools.ts`), relative to the worker file.
    pub module: PathBuf,
    /// Only these exports become tools (default: every tool-shaped export).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalConfig>,
}

/// `toolsets.workers`: workers this worker may call.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkersConfig {
    /// Worker files (relative paths), or bare names looked up next to the worker file and in
    /// its `workers/` directory (`<name>.worker`, `<name>.yaml`, `<name>/index.worker`, …).
    pub allowed_workers: Vec<String>,
    /// More directories where bare names are looked up (golem-forge's `workerPaths`), relative
    /// to this file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_paths: Vec<PathBuf>,
    /// Approval of the worker tools (default `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalConfig>,
}

/// A worker file read, checked and resolved: absolute paths, instructions in place.
#[derive(Debug, Clone, Serialize)]
pub struct Worker {
    pub name: String,
    pub description: Option<String>,
    pub model: Option<String>,
    pub instructions: String,
    pub compatible_models: Vec<String>,
    pub max_steps: Option<u32>,
    pub tool_call_format: ToolCallFormat,
    /// Whether an empty task is accepted (golem-forge's `allow_empty_input`; default true).
    pub allow_empty_input: bool,
    /// The JSON Schema the final result must match (`output_schema_ref` naming a file).
    pub output_schema: Option<serde_json::Value>,
    /// What a caller may attach (golem-forge's `attachment_policy`; `None`: the defaults).
    pub attachment_policy: Option<golem::AttachmentPolicy>,
    pub approval: Option<ApprovalConfig>,
    /// The canonical worker file.
    pub path: PathBuf,
    /// The name it was loaded by (absolute, its symlinks kept): the next run loads it by that
    /// name, so a symlink on the way is configuration too.
    #[serde(skip)]
    pub given_path: Option<PathBuf>,
    /// The work directory: sandbox root (and restriction), canonical.
    pub work_dir: PathBuf,
    pub readonly: bool,
    /// The kernel sandbox keys of the file (`mode`, `network`, `read`, `write`), roots made
    /// absolute; applied over the defaults, or over the caller's sandbox for a called worker.
    pub sandbox: SandboxFields,
    /// Toolset blocks with every relative path made absolute.
    pub toolsets: ToolsetsConfig,
    /// The allowed workers as canonical file paths, in the order given.
    pub allowed_worker_paths: Vec<PathBuf>,
    /// Where a file would be found before a called worker's (its name looked up as
    /// `<name>.worker`, … in an earlier place): protected, since a file made there would take
    /// the called worker's place at the next load.
    #[serde(skip)]
    pub worker_lookups: Vec<PathBuf>,
    /// Keys accepted but not acted on, and other things the user should know.
    pub warnings: Vec<String>,
    /// `audit.file`, absolute.
    pub audit_file: Option<PathBuf>,
    /// How deep workers may nest below this one, when its golem-forge program says (never
    /// above [`crate::limits::MAX_WORKER_DEPTH`]).
    pub max_depth: Option<usize>,
    /// The golem-forge program configuration that set defaults for this worker.
    pub program_config: Option<PathBuf>,
}

/// Options that override what the file says.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Replaces the sandbox root (the CLI's `--work-dir`, or the caller's work directory for a
    /// worker called by another: called workers inherit the caller's sandbox and may only
    /// narrow it with `restrict`).
    pub work_dir: Option<PathBuf>,
    /// Makes the sandbox read-only whatever the file says (inherited from a read-only caller).
    pub readonly: bool,
}

/// Reads, parses and resolves a worker file.
pub fn load_worker(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Worker> {
    load_worker_stamped(path.as_ref(), options).map(|(worker, _)| worker)
}

/// Reads, parses and resolves a worker file, and stamps the version that was read (see
/// [`crate::frozen`]).
pub fn load_worker_stamped(given: &Path, options: &LoadOptions) -> Result<(Worker, FileStamp)> {
    let path = std::fs::canonicalize(given).map_err(|err| {
        Error::ConfigInvalid(format!(
            "worker file '{}' cannot be read: {err}",
            given.display()
        ))
    })?;
    let (text, stamp) = read_stamped(&path).map_err(|err| {
        Error::ConfigInvalid(format!(
            "worker file '{}' cannot be read: {err}",
            path.display()
        ))
    })?;
    let given = std::env::current_dir()
        .map(|dir| dir.join(given))
        .unwrap_or_else(|_| given.to_path_buf());
    parse_worker(&text, &path, options).map(|mut worker| {
        worker.given_path = Some(given);
        (worker, stamp)
    })
}

/// Where the worker files' JSON Schema is found in a project that installed toolgate: its
/// package path (`node_modules/toolgate/schemas/…`, and importable by that name). Error messages
/// name it, since `schemas/…` alone is no path in the user's project.
pub const WORKER_SCHEMA_PATH: &str = "toolgate/schemas/worker.schema.json";

/// Parses worker `text` that was read from `path` (an absolute path; its extension selects the
/// format and its directory anchors relative paths).
pub fn parse_worker(text: &str, path: &Path, options: &LoadOptions) -> Result<Worker> {
    let source = path.display().to_string();
    let (yaml, body, line_offset) = split_document(text, path)?;
    let file: WorkerFile = crate::yaml::from_str(yaml).map_err(|err| {
        let place = err
            .location()
            .map(|(line, column)| format!("{}:{column}", line + line_offset))
            .unwrap_or_else(|| "?".into());
        Error::ConfigInvalid(format!(
            "{source}:{place}: {}; see the JSON Schema {WORKER_SCHEMA_PATH} for the accepted shape",
            clean_serde_message(&err.to_string())
        ))
    })?;
    resolve(file, body, path, options)
}

/// Splits a `.worker` file into front matter and body; other files are all YAML. Returns the
/// YAML, the body, and how many lines precede the YAML (for error positions).
fn split_document<'a>(text: &'a str, path: &Path) -> Result<(&'a str, Option<&'a str>, usize)> {
    let is_front_matter_file = path.extension().is_some_and(|ext| ext == "worker");
    if !is_front_matter_file {
        return Ok((text, None, 0));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let after_open = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| {
            Error::ConfigInvalid(format!(
                "{}:1:1: a .worker file starts with a '---' line, then YAML front matter, then '---' and the instructions in Markdown",
                path.display()
            ))
        })?;
    let mut offset = 0;
    for line in after_open.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &after_open[..offset];
            let body = &after_open[offset + line.len()..];
            return Ok((yaml, Some(body), 1));
        }
        offset += line.len();
    }
    Err(Error::ConfigInvalid(format!(
        "{}: the front matter is not closed; add a line with '---' after the YAML",
        path.display()
    )))
}

/// serde_yaml appends " at line L column C" itself; the message already leads with the place.
fn clean_serde_message(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

fn resolve(
    file: WorkerFile,
    body: Option<&str>,
    path: &Path,
    options: &LoadOptions,
) -> Result<Worker> {
    let source = path.display().to_string();
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let invalid = |message: String| Error::ConfigInvalid(format!("{source}: {message}"));
    let mut warnings = Vec::new();

    if file.name.trim().is_empty() {
        return Err(invalid("'name' is empty; give the worker a name".into()));
    }
    if !file
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(invalid(format!(
            "name '{}' may only contain letters, digits, '_' and '-' (it becomes a tool name)",
            file.name
        )));
    }
    let body = body.map(str::trim).filter(|text| !text.is_empty());
    let instructions = match (file.instructions, body) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "instructions are given twice, as the 'instructions' key and as the Markdown body; keep one".into(),
            ))
        }
        (Some(text), None) => text,
        (None, Some(text)) => text.to_string(),
        (None, None) => String::new(),
    };
    if file.mode == Some(WorkerMode::Chat) {
        warnings.push(
            "mode 'chat' is not supported; the worker runs single-shot (one task, one answer)"
                .into(),
        );
    }
    if file.max_steps == Some(0) {
        return Err(invalid("max_steps must be at least 1".into()));
    }

    let sandbox = file.sandbox.unwrap_or_default();
    let program = program::Program::find(&dir).map_err(invalid)?;
    if let Some(program) = &program {
        warnings.extend(program.warnings());
    }
    let readonly = sandbox.readonly
        || options.readonly
        || program.as_ref().is_some_and(program::Program::readonly);
    if sandbox.zones.is_some() {
        warnings.push("sandbox.zones is accepted for golem-forge files but not acted on: the file toolsets see the whole work directory".into());
    }
    if sandbox.paths.is_some() {
        warnings.push("sandbox.paths is accepted for golem-forge files but not acted on: the file toolsets see the whole work directory".into());
    }
    let root = match (&options.work_dir, &sandbox.root) {
        (Some(dir_override), _) => dir_override.clone(),
        (None, Some(root)) => dir.join(root),
        (None, None) => program
            .as_ref()
            .and_then(program::Program::sandbox_root)
            .unwrap_or_else(|| dir.clone()),
    };
    let root = PathValidator::new(&root).map_err(|err| invalid(format!("sandbox root: {err}")))?;
    let work_dir = match &sandbox.restrict {
        Some(restrict) => {
            let inside = root
                .resolve(restrict.trim_start_matches('/'))
                .map_err(|err| invalid(format!("sandbox.restrict: {err}")))?;
            if !readonly && !inside.exists() {
                // golem-forge makes the folder on first write; a worker whose notes folder
                // does not exist yet loads the same way here.
                create_restricted_folder(&root, &inside)
                    .map_err(|err| invalid(format!("sandbox.restrict '{restrict}': {err}")))?;
                warnings.push(format!(
                    "sandbox.restrict '{restrict}' did not exist; created '{}'",
                    inside.display()
                ));
            }
            if !inside.is_dir() {
                return Err(invalid(format!(
                    "sandbox.restrict '{restrict}' is not a directory inside '{}'{}",
                    root.root().display(),
                    if inside.exists() {
                        ""
                    } else {
                        " (a read-only worker cannot create it)"
                    }
                )));
            }
            inside
        }
        None => root.root().to_path_buf(),
    };

    let mut toolsets = file.toolsets;
    if let Some(approval) = &sandbox.approval {
        golem::apply_sandbox_approval(approval, &mut toolsets);
    }
    let output_schema = file
        .output_schema_ref
        .as_deref()
        .filter(|reference| golem::is_schema_file(reference))
        .map(|reference| golem::load_output_schema(&dir, reference))
        .transpose()
        .map_err(invalid)?;
    if let Some(policy) = &file.attachment_policy {
        attachments::check_policy(policy).map_err(invalid)?;
    }
    warnings.extend(golem::warnings(&golem::GolemKeys {
        server_side_tools: file.server_side_tools,
        locked: file.locked,
        max_context_tokens: file.max_context_tokens,
        output_schema_ref: file.output_schema_ref,
    }));
    let anchored = |path: &Path| -> PathBuf { anchored(&dir, path) };
    if let Some(custom) = &mut toolsets.custom {
        custom.module = anchored(&custom.module);
    }
    if let Some(executables) = &mut toolsets.executables {
        if let Some(dirs) = &mut executables.dirs {
            for entry in dirs.iter_mut() {
                *entry = anchored(entry);
            }
        }
    }
    if let Some(cli) = &mut toolsets.cli_execute {
        for read_root in cli.read_roots.iter_mut() {
            // `~/` is the user's home, as in every other root of a worker file.
            let expanded = crate::sandbox_config::expand_home(
                read_root,
                &format!("{source}: toolsets.cli_execute"),
                "read_roots",
            )?;
            *read_root = anchored(&expanded);
        }
        cli.sandbox = cli.sandbox.as_ref().map(|fields| fields.anchored(&dir));
    }
    if let Some(shell) = &mut toolsets.shell {
        shell.sandbox = shell.sandbox.as_ref().map(|fields| fields.anchored(&dir));
    }
    if let Some(executables) = &mut toolsets.executables {
        executables.sandbox = executables
            .sandbox
            .as_ref()
            .map(|fields| fields.anchored(&dir));
    }
    if let Some(mcp) = &mut toolsets.mcp {
        mcp.sandbox = mcp.sandbox.as_ref().map(|fields| fields.anchored(&dir));
    }
    let sandbox_fields = SandboxFields {
        mode: sandbox.mode,
        network: sandbox.network.clone(),
        read: sandbox.read.clone(),
        write: sandbox.write.clone(),
        protect: sandbox.protect.clone(),
        limits: sandbox.limits,
    }
    .anchored(&dir);
    // golem-forge's registry paths: the program's `workerPaths`, else its defaults.
    let search_paths = program
        .as_ref()
        .map(program::Program::worker_paths)
        .unwrap_or_default();
    let (allowed_worker_paths, worker_lookups) = match &toolsets.workers {
        Some(workers) => {
            let found = workers
                .allowed_workers
                .iter()
                .map(|entry| {
                    let mut bases = vec![dir.clone(), dir.join("workers")];
                    bases.extend(workers.worker_paths.iter().map(|path| anchored(path)));
                    registry::find_worker(&dir, &bases, &search_paths, entry, &work_dir)
                        .map_err(invalid)
                })
                .collect::<Result<Vec<_>>>()?;
            let mut paths = Vec::new();
            let mut lookups = Vec::new();
            for worker in found {
                paths.push(worker.path);
                lookups.extend(worker.lookups);
                warnings.extend(worker.warning);
            }
            (paths, lookups)
        }
        None => (Vec::new(), Vec::new()),
    };

    Ok(Worker {
        name: file.name,
        description: file.description,
        model: file
            .model
            .or_else(|| program.as_ref().and_then(|p| p.model().map(String::from))),
        instructions,
        compatible_models: file.compatible_models,
        max_steps: file.max_steps,
        tool_call_format: file.tool_call_format,
        allow_empty_input: file.allow_empty_input.unwrap_or(true),
        output_schema,
        attachment_policy: file.attachment_policy,
        approval: file.approval,
        path: path.to_path_buf(),
        given_path: None,
        work_dir,
        readonly,
        sandbox: sandbox_fields,
        toolsets,
        allowed_worker_paths,
        worker_lookups,
        warnings,
        audit_file: file.audit.map(|audit| anchored(&audit.file)),
        max_depth: program.as_ref().and_then(program::Program::max_depth),
        program_config: program.map(|program| program.path),
    })
}

/// `path` relative to `dir`. Joined paths drop their `.` components, so that messages name
/// files as people write them.
fn anchored(dir: &Path, path: impl AsRef<Path>) -> PathBuf {
    dir.join(path).components().collect()
}

/// Creates `folder` (already resolved inside `root`) and checks again that what now exists is
/// inside the root: a symlink raced in on the way would be caught here.
fn create_restricted_folder(
    root: &PathValidator,
    folder: &Path,
) -> std::result::Result<(), String> {
    std::fs::create_dir_all(folder)
        .map_err(|err| format!("cannot create '{}': {err}", folder.display()))?;
    let again = root.resolve(folder).map_err(|err| err.to_string())?;
    if again != folder {
        return Err(format!("'{}' moved while it was created", folder.display()));
    }
    Ok(())
}

/// Whether `model` (`provider:model`) matches one of `patterns` (`*` matches any text). An empty
/// list allows every model.
pub fn model_is_compatible(patterns: &[String], model: &str) -> bool {
    patterns.is_empty()
        || patterns
            .iter()
            .any(|pattern| wildcard_match(pattern, model))
}

fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split yields at least one part");
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(index) => remaining = &remaining[index + part.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last)
}

/// The JSON Schema of worker files, generated from [`WorkerFile`].
pub fn worker_json_schema() -> String {
    let schema = schemars::schema_for!(WorkerFile);
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serialises");
    text.push('\n');
    text
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
