//! toolgate-core: everything in toolgate that touches the operating system.
//!
//! - [`exec`] starts processes without a shell, with an exact environment, output caps and
//!   timeouts that kill the whole process group.
//! - [`PathValidator`] confines paths to a root, symlinks included.
//! - [`custom`] discovers, caches and runs executable tools (protocol and `tool.yaml`).
//! - [`schema`] compiles JSON Schemas offline and reports violations with JSON pointers.
//!
//! The Node binding (`toolgate-node`) only converts types; every decision is made here.

#![warn(missing_debug_implementations)]

pub mod custom;
pub mod error;
pub mod exec;
mod path;
pub mod schema;

pub use error::{Error, Result};
pub use exec::{AbortHandle, ExecOutput, ExecRequest, RunningProcess};
pub use path::PathValidator;
