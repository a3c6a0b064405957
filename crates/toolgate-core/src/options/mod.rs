//! Options objects of every public JavaScript function, deserialized here, strictly: an unknown
//! key at any depth, a wrong type or an out-of-range number is an error that names the option
//! (`unknown option 'guardrails.deny_commands', expected one of 'denyCommands', 'denyOutput'`).
//! The TypeScript layer passes the caller's object through untouched; keys whose values only
//! JavaScript can use (functions, signals, model objects) are declared as [`JsOnly`].
//!
//! Construction options are `CONFIG_INVALID`; per-call arguments (`exec`, the file tools) are
//! `INVALID_INPUT`.

mod executables;
mod files;
mod numbers;
mod process;
mod run;
mod toolsets;
mod value;
mod worker;

pub use executables::{ExecutableToolsOptions, RefreshOptions, RunToolOptions};
pub use files::{
    EditOptions, GlobOptions, GrepOptions, PatchOperationOptions, ReadOptions, TreeOptions,
};
pub use numbers::{ByteCount, Count, TimeoutMs};
pub use process::{ExecOptions, Stdin};
pub use run::{AgentSettingsOptions, AuditOptions, ResumeWorkerOptions, RunWorkerOptions};
pub use toolsets::{
    CliExecuteOptions, CodeAgentOptions, CreateCustomToolOptions, FilesystemOptions,
    GuardrailOptions, LoadCustomToolsOptions, ShellOptions, WorkDir,
};
pub use value::{format_number, parse, JsOnly, OptionValue, Problem};
pub use worker::{LoadWorkerOptions, ResolveModelOptions, WorkerToolsOptions};

#[cfg(test)]
mod tests;
