//! The strict reader of the options objects of JavaScript callers. Every options value is
//! deserialized here: an unknown key at any depth, a wrong type or an out-of-range number is an
//! error that names the option in the caller's spelling (`unknown option
//! 'guardrails.deny_commands', expected one of 'denyCommands', 'denyOutput'`). The TypeScript
//! layer passes the caller's object through untouched; keys whose values only JavaScript can
//! use (functions, signals, model objects) are declared as [`JsOnly`].
//!
//! A toolset's configuration is one serde type, in worker-file spelling, next to the toolset
//! (`command::CliExecuteConfig`, `mcp::McpToolsetConfig`, …); this reader takes its keys in
//! JavaScript spelling ([`spelling`]: camelCase, timeouts in milliseconds). The options types of
//! the functions live beside what they configure, and hold such a configuration as a spread
//! ([`SPREAD`]) next to the function's own keys (`workDir`, `sandbox`, …).
//!
//! Construction options are `CONFIG_INVALID`; per-call arguments (`exec`, the file tools) are
//! `INVALID_INPUT`.

mod numbers;
pub mod spelling;
mod value;
mod workdir;

pub use numbers::{format_number, ByteCount, Count, TimeoutMs};
pub use spelling::SPREAD;
pub use value::{parse, JsOnly, OptionValue, Problem, ReadError};
pub use workdir::WorkDir;

#[cfg(test)]
mod tests;
