//! The `sandbox` settings of tools, toolsets and worker files, and the rule that joins them.
//!
//! Every process toolgate starts for a tool runs under a kernel sandbox ([`crate::sandbox`]);
//! this module decides *which* one. A setting ([`SandboxFields`], or the TypeScript union
//! [`SandboxOption`]: `false | 'enforce' | 'best-effort' | { mode, network, read, write }`)
//! becomes a [`SandboxScope`]: mode, network, read and write roots (canonical), the work
//! directory and `readonly`, all decided. The default is `{ mode: 'enforce', network: false }`.
//! `network` is `true | false | { allow, deny, ask }` ([`NetworkSetting`]); how the levels
//! join is [`ScopeNetwork`]'s.
//!
//! Scopes nest. Inside one worker file a toolset's `sandbox:` is the author's choice for that
//! toolset: its keys replace the worker-level ones and may widen them
//! ([`SandboxScope::with_fields`]). A called worker, and every toolset in it, may only narrow
//! its caller's worker-level sandbox ([`SandboxScope::narrow`], [`SandboxScope::check_within`]):
//! network off, fewer roots, a stricter mode. Widening there is `CONFIG_INVALID`, saying where to
//! widen instead. Any toolset that starts processes (shell, cli_execute, executables, mcp) reads
//! the same [`SandboxFields`] and resolves it the same way.

pub(crate) mod launch;
mod network;
pub mod protect;
mod report;
mod scope;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::network::NetworkSetting;

pub use crate::sandbox::version_managers::version_manager_roots;
pub use launch::{Launch, LaunchOptions};
pub use network::ScopeNetwork;
pub use protect::{GuardKind, GuardReport, GuardedPath, Guards};
pub use report::{grants, program_grants, support_report, SupportReport};
pub(crate) use scope::expand_home;
pub use scope::{prepare_cached, SandboxScope, ToolSandbox, Widening};

/// How strictly the sandbox is required, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxModeName {
    /// Refuse to run (`SANDBOX_UNAVAILABLE`) where the kernel cannot enforce the policy.
    Enforce,
    /// Run with what the kernel offers; one warning says what is missing.
    BestEffort,
    /// No sandbox: programs run unconfined (they still get a private HOME/TMPDIR).
    Off,
}

impl SandboxModeName {
    /// Higher is stricter: `enforce` > `best-effort` > `off`.
    pub fn strictness(self) -> u8 {
        match self {
            SandboxModeName::Enforce => 2,
            SandboxModeName::BestEffort => 1,
            SandboxModeName::Off => 0,
        }
    }

    /// The name as written in options and worker files.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxModeName::Enforce => "enforce",
            SandboxModeName::BestEffort => "best-effort",
            SandboxModeName::Off => "off",
        }
    }
}

/// The keys of a `sandbox` setting; an absent key keeps the default (or, in a worker file, the
/// value of the level above).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxFields {
    /// `enforce` (the default), `best-effort` or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxModeName>,
    /// The network: `false` (the default: none), `true` (every host, and unix sockets of
    /// services outside the sandbox), or `{ allow, deny, ask }`: only the hosts it allows,
    /// through toolgate's egress proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSetting>,
    /// Extra directories or files processes may read and execute (`~/` is your home).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Vec<PathBuf>>,
    /// Extra directories or files processes may write (`~/` is your home).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<Vec<PathBuf>>,
    /// Paths processes may read but never change, on top of what toolgate protects by default
    /// (worker files, tools modules, git hooks and config): gitignore-style patterns relative to
    /// the work directory (`Makefile`, `.npmrc`, `scripts/**`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect: Option<Vec<String>>,
    /// Limits of each call (`processes`, `memory_mb`, `tmp_mb`, `cpu_seconds`,
    /// `file_size_mb`; JavaScript: `memoryMb`, …); an absent one has its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitFields>,
}

/// `sandbox.limits`: each call's limits, whole numbers from 1 (defaults in
/// [`crate::limits`]: 512 processes, 4096 MiB of memory, a 512 MiB private tmpfs, no CPU
/// limit, files up to 1024 MiB).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitFields {
    /// Processes and threads one call may have at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Memory of one call, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Size of a call's private tmpfs (HOME, TMPDIR), in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmp_mb: Option<u64>,
    /// CPU seconds per process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<u64>,
    /// The largest file a process may write, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size_mb: Option<u64>,
}

impl LimitFields {
    /// As the kernel policy's limits.
    pub fn to_limits(self) -> crate::sandbox::SandboxLimits {
        crate::sandbox::SandboxLimits {
            processes: self.processes,
            memory_mb: self.memory_mb,
            tmp_mb: self.tmp_mb,
            cpu_seconds: self.cpu_seconds,
            file_size_mb: self.file_size_mb,
        }
    }
}

impl SandboxFields {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self == &SandboxFields::default()
    }

    /// The roots made absolute with `anchor` (a worker file's directory); `~/` is kept for
    /// the scope to expand.
    pub fn anchored(&self, anchor: &std::path::Path) -> SandboxFields {
        let anchor_all = |roots: &Option<Vec<PathBuf>>| {
            roots.as_ref().map(|roots| {
                roots
                    .iter()
                    .map(|root| {
                        if root.starts_with("~") {
                            root.clone()
                        } else {
                            anchor.join(root).components().collect()
                        }
                    })
                    .collect()
            })
        };
        SandboxFields {
            mode: self.mode,
            network: self.network.clone(),
            read: anchor_all(&self.read),
            write: anchor_all(&self.write),
            limits: self.limits,
            // Patterns are relative to the work directory, not to the file.
            protect: self.protect.clone(),
        }
    }
}

/// The `sandbox` option of a JavaScript caller: `false`, `'enforce'`, `'best-effort'`, or the
/// object form `{ mode, network, read, write, protect }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxOption {
    /// `false`: explicitly unsandboxed.
    Off,
    /// `'enforce'` or `'best-effort'`, everything else default.
    Mode(SandboxModeName),
    /// The object form (boxed: it is much larger than the other forms).
    Fields(Box<SandboxFields>),
}

impl SandboxOption {
    /// The option as keys.
    pub fn into_fields(self) -> SandboxFields {
        match self {
            SandboxOption::Off => SandboxFields {
                mode: Some(SandboxModeName::Off),
                ..SandboxFields::default()
            },
            SandboxOption::Mode(mode) => SandboxFields {
                mode: Some(mode),
                ..SandboxFields::default()
            },
            SandboxOption::Fields(fields) => *fields,
        }
    }
}

/// What the option accepts, for messages.
const OPTION_FORMS: &str =
    "false, 'enforce', 'best-effort' or an object { mode, network, read, write, protect, limits }";

impl<'de> Deserialize<'de> for SandboxOption {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OptionVisitor;
        impl<'de> Visitor<'de> for OptionVisitor {
            type Value = SandboxOption;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(OPTION_FORMS)
            }

            fn visit_bool<E: de::Error>(self, value: bool) -> Result<SandboxOption, E> {
                if value {
                    return Err(E::custom(format!(
                        "is true, which means nothing: the sandbox is on by default. Give {OPTION_FORMS}"
                    )));
                }
                Ok(SandboxOption::Off)
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<SandboxOption, E> {
                match value {
                    "enforce" => Ok(SandboxOption::Mode(SandboxModeName::Enforce)),
                    "best-effort" => Ok(SandboxOption::Mode(SandboxModeName::BestEffort)),
                    other => Err(E::unknown_variant(other, &["enforce", "best-effort"])),
                }
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SandboxOption, A::Error> {
                SandboxFields::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|fields| SandboxOption::Fields(Box::new(fields)))
            }
        }
        deserializer.deserialize_any(OptionVisitor)
    }
}
