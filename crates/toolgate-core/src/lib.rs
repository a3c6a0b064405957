//! toolgate-core: everything in toolgate that touches the operating system.
//!
//! - [`exec`] starts processes without a shell, with an exact environment, output caps and
//!   timeouts that kill the whole process group.
//! - [`PathValidator`] confines paths to a root, symlinks included.
//! - [`sandbox`] confines every process of a tool with Landlock and seccomp, and ends its
//!   whole process tree with the call (the `toolgate-sandbox` launcher runs its logic).
//! - [`sandbox_config`] decides which sandbox a tool gets: its `sandbox` setting over the
//!   defaults, a toolset's only narrowing its worker's, a called worker's only its caller's.
//! - [`command`] decides what `cli_execute` and the shell toolset may run, and prepares it.
//! - [`fs`] holds the file tools (read, write, edit, patch, glob, grep, tree) built on it.
//! - [`builtins`] holds Forge's built-in tools (HTTP with an SSRF policy, JSON/CSV parsing,
//!   time, UUIDs, arithmetic, file creation, web search).
//! - [`executables`] discovers, caches and runs executable tools (protocol and `tool.yaml`).
//! - [`schema`] compiles JSON Schemas offline and reports violations with JSON pointers.
//! - [`worker`] reads and checks worker files (YAML, or front matter + Markdown) and plans a
//!   worker with its whole delegation graph.
//! - [`permissions`] reads and writes the project permissions file (`toolgate.permissions.yaml`):
//!   approvals a person saved as rules for later runs.
//! - [`approval`] decides every tool's approval; [`limits`] holds every default and limit;
//!   [`options`] reads the options objects of JavaScript callers, strictly.
//!
//! The Node binding (`toolgate-node`) only converts types; every decision is made here.

#![warn(missing_debug_implementations)]

pub mod approval;
pub mod audit;
pub mod builtins;
pub mod command;
pub mod descriptions;
pub mod error;
pub mod exec;
pub mod executables;
pub mod frozen;
pub mod fs;
pub mod limits;
pub mod mcp;
pub mod network;
pub mod options;
mod path;
pub mod permissions;
pub mod process;
pub mod run;
pub mod sandbox;
pub mod sandbox_config;
pub mod schema;
pub mod worker;
pub mod yaml;

#[cfg(test)]
mod test_support;

pub use approval::{ApprovalConfig, ApprovalDecision, Decision};
pub use error::{Error, ErrorCode, ErrorLayer, Result};
pub use exec::{AbortHandle, ExecOutput, ExecRequest, RunningProcess};
pub use path::PathValidator;
pub use sandbox::{Sandbox, SandboxMode, SandboxPolicy};
