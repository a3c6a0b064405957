//! The file tools: one `FileTools` object per root, one async method per tool. Every method
//! runs its work as a napi `AsyncTask` on libuv's thread pool, so neither the JavaScript thread
//! nor toolgate's I/O runtime is blocked by a search or a large read. An `AbortSignal` stops a
//! walk or search that is running (and one that has not started yet).

use std::sync::Arc;

use napi::bindgen_prelude::{AbortSignal, AsyncTask};
use napi::{Env, Task};
use napi_derive::napi;
use toolgate_core::fs::{self, Cancel};
use toolgate_core::PathValidator;

use crate::error::{to_napi, to_napi_async, Code};

/// Which part of a file `read` returns.
#[napi(object)]
pub struct ReadOptions {
    pub path: String,
    /// First line (or directory entry) to return, from 1 (default 1).
    pub offset: Option<f64>,
    /// Lines to return at most (default 2000); the output is also capped at 50 KiB.
    pub limit: Option<f64>,
    /// Prefix each line with its number (default true).
    pub line_numbers: Option<bool>,
}

#[napi(object)]
pub struct ReadResult {
    /// Path relative to the root (symlinks resolved).
    pub path: String,
    #[napi(ts_type = "'text' | 'directory' | 'binary'")]
    pub kind: String,
    /// Lines, listing or binary note; ends with a `[truncated: ...]` line when cut.
    pub text: String,
    pub truncated: bool,
    /// The offset that continues where this read stopped.
    pub next_offset: Option<f64>,
    /// File size in bytes.
    pub size: f64,
}

impl From<fs::ReadOutput> for ReadResult {
    fn from(out: fs::ReadOutput) -> Self {
        Self {
            path: out.path,
            kind: out.kind.as_str().to_string(),
            text: out.text,
            truncated: out.truncated,
            next_offset: out.next_offset.map(|n| n as f64),
            size: out.size as f64,
        }
    }
}

#[napi(object)]
pub struct WriteResult {
    pub path: String,
    #[napi(ts_type = "'created' | 'updated'")]
    pub action: String,
    pub bytes: f64,
}

impl From<fs::WriteOutput> for WriteResult {
    fn from(out: fs::WriteOutput) -> Self {
        Self {
            path: out.path,
            action: out.action.as_str().to_string(),
            bytes: out.bytes as f64,
        }
    }
}

#[napi(object)]
pub struct EditOptions {
    pub path: String,
    pub old_text: String,
    pub new_text: String,
    pub replace_all: Option<bool>,
}

#[napi(object)]
pub struct EditResult {
    pub path: String,
    pub replacements: f64,
    /// Unified diff with hunk headers and 3 lines of context.
    pub diff: String,
}

impl From<fs::EditOutput> for EditResult {
    fn from(out: fs::EditOutput) -> Self {
        Self {
            path: out.path,
            replacements: out.replacements as f64,
            diff: out.diff,
        }
    }
}

#[napi(object)]
pub struct PatchOperation {
    #[napi(ts_type = "'add' | 'update' | 'delete' | 'move'")]
    pub action: String,
    pub path: String,
    /// Whole new content (`add`, `update`, optional for `move`).
    pub content: Option<String>,
    /// Destination of a `move`.
    pub new_path: Option<String>,
}

impl TryFrom<PatchOperation> for fs::PatchOperation {
    type Error = toolgate_core::Error;

    fn try_from(op: PatchOperation) -> toolgate_core::Result<Self> {
        let action = match op.action.as_str() {
            "add" => fs::PatchAction::Add,
            "update" => fs::PatchAction::Update,
            "delete" => fs::PatchAction::Delete,
            "move" => fs::PatchAction::Move,
            other => {
                return Err(toolgate_core::Error::InvalidInput(format!(
                    "action '{other}' of '{}' is unknown; use add, update, delete or move",
                    op.path
                )))
            }
        };
        Ok(Self {
            action,
            path: op.path,
            content: op.content,
            new_path: op.new_path,
        })
    }
}

#[napi(object)]
pub struct PatchResult {
    /// One line per operation (`added x (1.2 KiB)`, `moved a -> b`, ...).
    pub summary: String,
    /// Paths created, changed or removed, relative to the root.
    pub changed: Vec<String>,
}

impl From<fs::PatchOutput> for PatchResult {
    fn from(out: fs::PatchOutput) -> Self {
        Self {
            summary: out.summary,
            changed: out.changed,
        }
    }
}

#[napi(object)]
pub struct GlobOptions {
    pub pattern: String,
    pub path: Option<String>,
    /// Default 100.
    pub max_results: Option<f64>,
}

#[napi(object)]
pub struct GlobResult {
    pub text: String,
    /// Paths relative to the root, newest first.
    pub files: Vec<String>,
    /// Matches in all (shown or not).
    pub total: f64,
    pub truncated: bool,
}

impl From<fs::GlobOutput> for GlobResult {
    fn from(out: fs::GlobOutput) -> Self {
        Self {
            text: out.text,
            files: out.files,
            total: out.total as f64,
            truncated: out.truncated,
        }
    }
}

#[napi(object)]
pub struct GrepOptions {
    pub pattern: String,
    pub path: Option<String>,
    pub include: Option<Vec<String>>,
    pub exclude: Option<Vec<String>>,
    /// Context lines on each side (default 0).
    pub context: Option<f64>,
    /// Default 50.
    pub max_results: Option<f64>,
    pub ignore_case: Option<bool>,
}

#[napi(object)]
pub struct GrepResult {
    pub text: String,
    pub total_matches: f64,
    pub files_with_matches: f64,
    pub truncated: bool,
}

impl From<fs::GrepOutput> for GrepResult {
    fn from(out: fs::GrepOutput) -> Self {
        Self {
            text: out.text,
            total_matches: out.total_matches as f64,
            files_with_matches: out.files_with_matches as f64,
            truncated: out.truncated,
        }
    }
}

#[napi(object)]
pub struct TreeOptions {
    pub path: Option<String>,
    /// Default 3.
    pub max_depth: Option<f64>,
}

#[napi(object)]
pub struct TreeResult {
    pub text: String,
    pub directories: f64,
    pub files: f64,
    pub truncated: bool,
}

impl From<fs::TreeOutput> for TreeResult {
    fn from(out: fs::TreeOutput) -> Self {
        Self {
            text: out.text,
            directories: out.directories as f64,
            files: out.files as f64,
            truncated: out.truncated,
        }
    }
}

#[napi(object)]
pub struct ExistsResult {
    pub exists: bool,
    /// Set when something exists.
    #[napi(ts_type = "'file' | 'directory' | 'symlink' | 'other'")]
    pub r#type: Option<String>,
}

impl From<Option<fs::EntryType>> for ExistsResult {
    fn from(kind: Option<fs::EntryType>) -> Self {
        Self {
            exists: kind.is_some(),
            r#type: kind.map(|kind| kind.as_str().to_string()),
        }
    }
}

#[napi(object)]
pub struct FileInfoResult {
    pub path: String,
    #[napi(ts_type = "'file' | 'directory' | 'symlink' | 'other'")]
    pub r#type: String,
    pub size: f64,
    /// Milliseconds since the Unix epoch.
    pub modified_ms: Option<f64>,
    pub created_ms: Option<f64>,
    pub accessed_ms: Option<f64>,
    /// Permission bits, e.g. 0o644 (420).
    pub mode: u32,
    pub readonly: bool,
}

impl From<fs::FileInfo> for FileInfoResult {
    fn from(info: fs::FileInfo) -> Self {
        Self {
            path: info.path,
            r#type: info.entry_type.as_str().to_string(),
            size: info.size as f64,
            modified_ms: info.modified_ms,
            created_ms: info.created_ms,
            accessed_ms: info.accessed_ms,
            mode: info.mode,
            readonly: info.readonly,
        }
    }
}

#[napi(object)]
pub struct DeleteResult {
    pub path: String,
    pub bytes: f64,
}

impl From<fs::DeleteOutput> for DeleteResult {
    fn from(out: fs::DeleteOutput) -> Self {
        Self {
            path: out.path,
            bytes: out.bytes as f64,
        }
    }
}

/// A whole number >= `min` from a JavaScript number, or `default` when absent.
fn count(name: &str, value: Option<f64>, default: u64, min: u64) -> toolgate_core::Result<u64> {
    match value {
        None => Ok(default),
        Some(v) if v.is_finite() && v.fract() == 0.0 && v >= min as f64 && v <= 9e15 => {
            Ok(v as u64)
        }
        Some(v) => Err(toolgate_core::Error::InvalidInput(format!(
            "{name} must be a whole number >= {min}, got {v}"
        ))),
    }
}

/// Declares a task: the input it carries, the core call it makes on the thread pool, and the
/// JavaScript value it resolves to.
macro_rules! file_task {
    ($(#[$doc:meta])* $task:ident, $input:ty, $output:ty, $js:ty, |$validator:ident, $request:ident, $cancel:ident| $body:block) => {
        $(#[$doc])*
        pub struct $task {
            validator: Arc<PathValidator>,
            input: Option<$input>,
            cancel: Cancel,
        }

        #[napi]
        impl Task for $task {
            type Output = $output;
            type JsValue = $js;

            fn compute(&mut self) -> napi::Result<Self::Output> {
                let $validator: &PathValidator = &self.validator;
                let $cancel: &Cancel = &self.cancel;
                let $request = self
                    .input
                    .take()
                    .ok_or_else(|| napi::Error::from_reason("TOOL_FAILED: task ran twice"))?;
                let run = || $body;
                let result = run();
                result.map_err(to_napi_async)
            }

            fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
                Ok(output.into())
            }
        }
    };
}

file_task!(
    ReadTask,
    ReadOptions,
    fs::ReadOutput,
    ReadResult,
    |v, options, _cancel| {
        let request = fs::ReadRequest {
            offset: count("offset", options.offset, 1, 1)?,
            limit: count("limit", options.limit, fs::DEFAULT_MAX_LINES as u64, 1)?,
            line_numbers: options.line_numbers.unwrap_or(true),
            path: options.path,
        };
        fs::read(v, &request)
    }
);

file_task!(
    WriteTask,
    (String, String),
    fs::WriteOutput,
    WriteResult,
    |v, input, _cancel| { fs::write(v, &input.0, input.1.as_bytes()) }
);

file_task!(
    EditTask,
    EditOptions,
    fs::EditOutput,
    EditResult,
    |v, options, _cancel| {
        let request = fs::EditRequest {
            path: options.path,
            old_text: options.old_text,
            new_text: options.new_text,
            replace_all: options.replace_all.unwrap_or(false),
        };
        fs::edit(v, &request)
    }
);

file_task!(
    PatchTask,
    Vec<PatchOperation>,
    fs::PatchOutput,
    PatchResult,
    |v, operations, _cancel| {
        let operations = operations
            .into_iter()
            .map(fs::PatchOperation::try_from)
            .collect::<toolgate_core::Result<Vec<_>>>()?;
        fs::patch(v, &operations)
    }
);

file_task!(
    GlobTask,
    GlobOptions,
    fs::GlobOutput,
    GlobResult,
    |v, options, cancel| {
        let request = fs::GlobRequest {
            max_results: count("maxResults", options.max_results, 100, 1)? as usize,
            pattern: options.pattern,
            path: options.path,
        };
        fs::glob(v, &request, cancel)
    }
);

file_task!(
    GrepTask,
    GrepOptions,
    fs::GrepOutput,
    GrepResult,
    |v, options, cancel| {
        let request = fs::GrepRequest {
            context: count("context", options.context, 0, 0)? as usize,
            max_results: count("maxResults", options.max_results, 50, 1)? as usize,
            ignore_case: options.ignore_case.unwrap_or(false),
            include: options.include.unwrap_or_default(),
            exclude: options.exclude.unwrap_or_default(),
            pattern: options.pattern,
            path: options.path,
        };
        fs::grep(v, &request, cancel)
    }
);

file_task!(
    TreeTask,
    TreeOptions,
    fs::TreeOutput,
    TreeResult,
    |v, options, cancel| {
        let request = fs::TreeRequest {
            max_depth: count("maxDepth", options.max_depth, 3, 1)? as usize,
            path: options.path,
        };
        fs::tree(v, &request, cancel)
    }
);

file_task!(
    ExistsTask,
    String,
    Option<fs::EntryType>,
    ExistsResult,
    |v, path, _cancel| { fs::exists(v, &path) }
);

file_task!(
    InfoTask,
    String,
    fs::FileInfo,
    FileInfoResult,
    |v, path, _cancel| { fs::info(v, &path) }
);

file_task!(
    DeleteTask,
    String,
    fs::DeleteOutput,
    DeleteResult,
    |v, path, _cancel| { fs::delete(v, &path) }
);

/// The file tools confined to one root directory. Every method returns a promise; rejections
/// carry the toolgate code as `CODE: message` (the SDK turns them into `ToolgateError`s).
#[napi]
pub struct FileTools {
    validator: Arc<PathValidator>,
}

impl FileTools {
    /// The validator, the input and a cancel flag that the signal (if any) raises.
    fn parts<T>(
        &self,
        input: T,
        signal: Option<&AbortSignal>,
    ) -> (Arc<PathValidator>, Option<T>, Cancel) {
        let cancel = Cancel::default();
        if let Some(signal) = signal {
            let flag = cancel.clone();
            signal.on_abort(move || flag.cancel());
        }
        (self.validator.clone(), Some(input), cancel)
    }
}

#[napi]
impl FileTools {
    /// Confines every operation to `root`, an existing directory (canonicalised once).
    /// Throws `CONFIG_INVALID` when it is not a directory.
    #[napi(constructor)]
    pub fn new(root: String) -> napi::Result<Self, Code> {
        PathValidator::new(root)
            .map(|validator| Self {
                validator: Arc::new(validator),
            })
            .map_err(to_napi)
    }

    /// The canonical root.
    #[napi(getter)]
    pub fn root(&self) -> String {
        self.validator.root().display().to_string()
    }

    /// Reads lines `offset`.. of a text file (streamed: memory stays bounded whatever the file size),
    /// lists a directory, or describes a binary file. Rejects with `FILE_NOT_FOUND`,
    /// `PATH_OUTSIDE_ROOT` or `INVALID_INPUT` (an offset past the end).
    #[napi]
    pub fn read(&self, options: ReadOptions, signal: Option<AbortSignal>) -> AsyncTask<ReadTask> {
        let (validator, input, cancel) = self.parts(options, signal.as_ref());
        AsyncTask::with_optional_signal(
            ReadTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Writes a whole file atomically (temporary file + rename), creating parent directories.
    #[napi]
    pub fn write(
        &self,
        path: String,
        content: String,
        signal: Option<AbortSignal>,
    ) -> AsyncTask<WriteTask> {
        let (validator, input, cancel) = self.parts((path, content), signal.as_ref());
        AsyncTask::with_optional_signal(
            WriteTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Replaces `oldText` (which must match exactly once unless `replaceAll`) and returns a
    /// unified diff. Rejects with `INVALID_INPUT` saying how many matches there were.
    #[napi]
    pub fn edit(&self, options: EditOptions, signal: Option<AbortSignal>) -> AsyncTask<EditTask> {
        let (validator, input, cancel) = self.parts(options, signal.as_ref());
        AsyncTask::with_optional_signal(
            EditTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Checks every operation, then applies all of them or none (a failure restores every file).
    #[napi]
    pub fn patch(
        &self,
        operations: Vec<PatchOperation>,
        signal: Option<AbortSignal>,
    ) -> AsyncTask<PatchTask> {
        let (validator, input, cancel) = self.parts(operations, signal.as_ref());
        AsyncTask::with_optional_signal(
            PatchTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Files matching a glob, newest first; .gitignore and the usual build directories are skipped.
    #[napi]
    pub fn glob(&self, options: GlobOptions, signal: Option<AbortSignal>) -> AsyncTask<GlobTask> {
        let (validator, input, cancel) = self.parts(options, signal.as_ref());
        AsyncTask::with_optional_signal(
            GlobTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Regex search with ripgrep's crates: `path:line:text` lines, `path-line-text` context.
    #[napi]
    pub fn grep(&self, options: GrepOptions, signal: Option<AbortSignal>) -> AsyncTask<GrepTask> {
        let (validator, input, cancel) = self.parts(options, signal.as_ref());
        AsyncTask::with_optional_signal(
            GrepTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Draws the directory tree with sizes from 1 KiB up.
    #[napi]
    pub fn tree(&self, options: TreeOptions, signal: Option<AbortSignal>) -> AsyncTask<TreeTask> {
        let (validator, input, cancel) = self.parts(options, signal.as_ref());
        AsyncTask::with_optional_signal(
            TreeTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Whether something exists at `path` (and its type). Outside the root: `PATH_OUTSIDE_ROOT`.
    #[napi]
    pub fn exists(&self, path: String, signal: Option<AbortSignal>) -> AsyncTask<ExistsTask> {
        let (validator, input, cancel) = self.parts(path, signal.as_ref());
        AsyncTask::with_optional_signal(
            ExistsTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Type, size, times and permission bits of `path`.
    #[napi]
    pub fn info(&self, path: String, signal: Option<AbortSignal>) -> AsyncTask<InfoTask> {
        let (validator, input, cancel) = self.parts(path, signal.as_ref());
        AsyncTask::with_optional_signal(
            InfoTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }

    /// Deletes a file (a symlink itself, never its target); directories are refused.
    #[napi]
    pub fn delete(&self, path: String, signal: Option<AbortSignal>) -> AsyncTask<DeleteTask> {
        let (validator, input, cancel) = self.parts(path, signal.as_ref());
        AsyncTask::with_optional_signal(
            DeleteTask {
                validator,
                input,
                cancel,
            },
            signal,
        )
    }
}
