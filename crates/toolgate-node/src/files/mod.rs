//! The file tools: one `FileTools` object per root, one async method per tool. Arguments are
//! read strictly by the core (`INVALID_INPUT` names the wrong option); an `AbortSignal` stops a
//! walk or search that is running (and one that has not started yet).

mod paths;
mod results;
mod task;

use std::marker::PhantomData;
use std::sync::Arc;

use napi::bindgen_prelude::{AbortSignal, AsyncTask, Unknown};
use napi::Env;
use napi_derive::napi;
use serde::de::DeserializeOwned;
use toolgate_core::fs::access::{decide_call, Access, PathGate};
use toolgate_core::fs::guards::FileGuards;
use toolgate_core::fs::{
    self, Cancel, EditOptions, GlobOptions, GrepOptions, PatchOperationOptions, ReadOptions,
    TreeOptions,
};
use toolgate_core::PathValidator;

use crate::error::{guard, infallible, sync};
use crate::js_value;
pub use paths::*;
pub use results::*;
use task::{FileTask, Work};

/// The file tools confined to one root directory, under the path rules of their toolset when it
/// has some. Every method returns a promise; rejections carry the toolgate `code` and `layer`.
#[napi]
pub struct FileTools {
    validator: Arc<PathValidator>,
    gate: Option<Arc<PathGate>>,
}

impl FileTools {
    /// A task whose arguments are `args` read as `A`; `work` turns them into the core call.
    fn task<A, T, R>(
        &self,
        env: &Env,
        place: &'static str,
        args: Option<Unknown<'_>>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
        work: impl FnOnce(A, Access<'_>, &Cancel) -> toolgate_core::Result<T> + Send + 'static,
    ) -> AsyncTask<FileTask<T, R>>
    where
        A: DeserializeOwned + Send + 'static,
        T: Send + 'static,
        R: From<T> + napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName,
    {
        let parsed = guard(place, || js_value::input::<A>(env, args));
        self.start(place, parsed, signal, call, work)
    }

    fn start<A, T, R>(
        &self,
        place: &'static str,
        parsed: toolgate_core::Result<A>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
        work: impl FnOnce(A, Access<'_>, &Cancel) -> toolgate_core::Result<T> + Send + 'static,
    ) -> AsyncTask<FileTask<T, R>>
    where
        A: Send + 'static,
        T: Send + 'static,
        R: From<T> + napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName,
    {
        let cancel = Cancel::default();
        if let Some(signal) = &signal {
            let flag = cancel.clone();
            signal.on_abort(move || flag.cancel());
        }
        let work = parsed.map(|args| -> Work<T> {
            Box::new(move |access: Access<'_>, cancel: &Cancel| work(args, access, cancel))
        });
        AsyncTask::with_optional_signal(
            FileTask {
                place,
                validator: Arc::clone(&self.validator),
                call: self.gate.as_ref().map(|gate| FileCall::gate(call, gate)),
                cancel,
                work: Some(work),
                _result: PhantomData,
            },
            signal,
        )
    }
}

#[napi]
impl FileTools {
    /// Confines every operation to `root`, an existing directory (canonicalised once), under
    /// `pathRules` when given: a blocked path is refused with `PATH_BLOCKED` and never listed or
    /// searched, nor is another name of a file it matches (a hard link). `callerRules` are the
    /// path rules of the workers that call this one, each with their work directory; they only
    /// ever make a call stricter. `protectedPaths` (from the core: a worker plan's
    /// `fileProtection`, a toolset plan's `protectedPaths`) are never changed (`PATH_BLOCKED`,
    /// rule `protected`) unless a path rule names them, and then a change asks. Throws
    /// `CONFIG_INVALID` when `root` is not a directory or a rule is invalid.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        root: String,
        path_rules: Option<PathRules>,
        caller_rules: Option<Vec<CallerPathRules>>,
        protected_paths: Option<Vec<ProtectedPath>>,
    ) -> napi::Result<Self> {
        sync(&env, "new FileTools", || {
            let validator = PathValidator::new(root)?;
            let own = path_rules.unwrap_or(PathRules {
                place: "approval.paths".into(),
                rules: Vec::new(),
            });
            let inherited = caller_rules
                .unwrap_or_default()
                .iter()
                .map(CallerPathRules::compile)
                .collect::<toolgate_core::Result<Vec<_>>>()?;
            let gate = own.gate(validator.root())?.with_inherited(inherited);
            let (protected, hidden) = ProtectedPath::core(&protected_paths.unwrap_or_default());
            let guards = FileGuards::new(validator.root(), &protected, &hidden, &gate)?;
            let gate = gate.with_guards(guards);
            Ok(Self {
                validator: Arc::new(validator),
                gate: (!gate.is_empty()).then(|| Arc::new(gate)),
            })
        })
    }

    /// What a call of file tool `tool` with the model's `input` needs under the path rules: the
    /// strictest decision over the paths it names, starting from the tool's own `approval`.
    /// Without rules, the tool's decision. `INVALID_INPUT` when `tool` is not a file tool.
    #[napi]
    pub fn decide_call(
        &self,
        env: Env,
        tool: String,
        input: Unknown<'_>,
        approval: FileCall,
    ) -> napi::Result<PathDecision> {
        sync(&env, "FileTools.decideCall", || {
            let input: serde_json::Value = js_value::input(&env, Some(input))?;
            let decided = match &self.gate {
                Some(gate) => decide_call(gate, &self.validator, approval.tool(), &tool, &input)?,
                None => toolgate_core::fs::access::CallDecision {
                    decision: approval.decision.into(),
                    by: toolgate_core::fs::access::DecidedBy::Tool,
                    rule: None,
                    path: None,
                },
            };
            Ok(decided.into())
        })
    }

    /// The canonical root.
    #[napi(getter)]
    pub fn root(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "FileTools.root", || {
            self.validator.root().display().to_string()
        })
    }

    /// Reads lines `offset`.. of a text file (streamed: memory stays bounded whatever the file
    /// size), lists a directory, or describes a binary file. Rejects with `FILE_NOT_FOUND`,
    /// `PATH_OUTSIDE_ROOT` or `INVALID_INPUT` (an offset past the end).
    #[napi(ts_return_type = "Promise<ReadResult>")]
    pub fn read(
        &self,
        env: Env,
        options: Unknown<'_>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::ReadOutput, ReadResult>> {
        self.task(
            &env,
            "FileTools.read",
            Some(options),
            signal,
            call,
            |options: ReadOptions, v, _| fs::read(v, &options.into()),
        )
    }

    /// Writes a whole file atomically (temporary file + rename), creating parent directories.
    #[napi(ts_return_type = "Promise<WriteResult>")]
    pub fn write(
        &self,
        path: String,
        content: String,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::WriteOutput, WriteResult>> {
        self.start(
            "FileTools.write",
            Ok((path, content)),
            signal,
            call,
            |(path, content): (String, String), v, _| fs::write(v, &path, content.as_bytes()),
        )
    }

    /// Replaces `oldText` (which must match exactly once unless `replaceAll`) and returns a
    /// unified diff. Rejects with `INVALID_INPUT` saying how many matches there were.
    #[napi(ts_return_type = "Promise<EditResult>")]
    pub fn edit(
        &self,
        env: Env,
        options: Unknown<'_>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::EditOutput, EditResult>> {
        self.task(
            &env,
            "FileTools.edit",
            Some(options),
            signal,
            call,
            |options: EditOptions, v, _| fs::edit(v, &options.into()),
        )
    }

    /// Checks every operation, then applies all of them or none (a failure restores every file).
    #[napi(ts_return_type = "Promise<PatchResult>")]
    pub fn patch(
        &self,
        env: Env,
        operations: Unknown<'_>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::PatchOutput, PatchResult>> {
        self.task(
            &env,
            "FileTools.patch",
            Some(operations),
            signal,
            call,
            |operations: Vec<PatchOperationOptions>, v, _| {
                let operations: Vec<fs::PatchOperation> =
                    operations.into_iter().map(Into::into).collect();
                fs::patch(v, &operations)
            },
        )
    }

    /// Files matching a glob, newest first; .gitignore and the usual build directories are skipped.
    #[napi(ts_return_type = "Promise<GlobResult>")]
    pub fn glob(
        &self,
        env: Env,
        options: Unknown<'_>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::GlobOutput, GlobResult>> {
        self.task(
            &env,
            "FileTools.glob",
            Some(options),
            signal,
            call,
            |options: GlobOptions, v, cancel| fs::glob(v, &options.into(), cancel),
        )
    }

    /// Regex search with ripgrep's crates: `path:line:text` lines, `path-line-text` context.
    #[napi(ts_return_type = "Promise<GrepResult>")]
    pub fn grep(
        &self,
        env: Env,
        options: Unknown<'_>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::GrepOutput, GrepResult>> {
        self.task(
            &env,
            "FileTools.grep",
            Some(options),
            signal,
            call,
            |options: GrepOptions, v, cancel| fs::grep(v, &options.into(), cancel),
        )
    }

    /// Draws the directory tree with sizes from 1 KiB up.
    #[napi(ts_return_type = "Promise<TreeResult>")]
    pub fn tree(
        &self,
        env: Env,
        options: Option<Unknown<'_>>,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::TreeOutput, TreeResult>> {
        self.task(
            &env,
            "FileTools.tree",
            options,
            signal,
            call,
            |options: TreeOptions, v, cancel| fs::tree(v, &options.into(), cancel),
        )
    }

    /// Whether something exists at `path` (and its type). Outside the root: `PATH_OUTSIDE_ROOT`.
    #[napi(ts_return_type = "Promise<ExistsResult>")]
    pub fn exists(
        &self,
        path: String,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<Option<fs::EntryType>, ExistsResult>> {
        self.start(
            "FileTools.exists",
            Ok(path),
            signal,
            call,
            |path: String, v, _| fs::exists(v, &path),
        )
    }

    /// Type, size, times and permission bits of `path`.
    #[napi(ts_return_type = "Promise<FileInfoResult>")]
    pub fn info(
        &self,
        path: String,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::FileInfo, FileInfoResult>> {
        self.start(
            "FileTools.info",
            Ok(path),
            signal,
            call,
            |path: String, v, _| fs::info(v, &path),
        )
    }

    /// Deletes a file (a symlink itself, never its target); directories are refused.
    #[napi(ts_return_type = "Promise<DeleteResult>")]
    pub fn delete(
        &self,
        path: String,
        signal: Option<AbortSignal>,
        call: Option<FileCall>,
    ) -> AsyncTask<FileTask<fs::DeleteOutput, DeleteResult>> {
        self.start(
            "FileTools.delete",
            Ok(path),
            signal,
            call,
            |path: String, v, _| fs::delete(v, &path),
        )
    }
}
