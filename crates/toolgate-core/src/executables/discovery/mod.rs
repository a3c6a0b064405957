//! Discovery: which tools the configured directories hold.
//!
//! Every directory is scanned in order (earlier directories take precedence on a name clash,
//! and the clash is reported). An entry is
//! - a protocol tool when it is a regular executable file, symlinks resolved;
//! - a manifest tool when it is a directory holding `tool.yaml`;
//! - otherwise a diagnostic that says why it is not a tool (hidden entries, whose names start
//!   with a dot, are skipped).
//!
//! Protocol tools are asked for their description concurrently, at most
//! [`DiscoveryOptions::parallelism`] at a time, each through the executor with a 5 s timeout,
//! `cwd` = the tool's directory and a minimal environment. What was learnt is kept twice: in
//! the [`Snapshot`] a registry holds (so a refresh when nothing changed costs only `stat`
//! calls) and in the on-disk [`DescriptionCache`] (so a new process does not spawn unchanged
//! tools either).

//!
//! The work is split by step: [`scan`] lists and classifies the directories, [`snapshot`] keeps
//! what was learnt between refreshes, [`describe`] answers each protocol tool (memory, cache or
//! a `description` run) and [`assemble`] builds the tool list in precedence order.

mod assemble;
mod describe;
mod scan;
mod snapshot;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::protocol::DESCRIPTION_TIMEOUT;
use super::run::tool_environment;
use super::Discovery;
use crate::error::{Error, Result};

use assemble::assemble;
use describe::{describe_all, plan};
pub use snapshot::Snapshot;

/// One configured tool directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDirectory {
    pub path: PathBuf,
    /// A missing optional directory is normal (the defaults); a missing required one is
    /// reported.
    pub optional: bool,
}

impl ToolDirectory {
    /// A directory the user configured: reported when missing.
    pub fn required(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            optional: false,
        }
    }

    /// A default directory: silently absent when missing.
    pub fn optional(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            optional: true,
        }
    }
}

/// The default directories: the project's `<work_dir>/toolgate-tools`, then the global
/// `~/.toolgate/tools` (when HOME is set), both optional.
pub fn default_directories(work_dir: &Path) -> Vec<ToolDirectory> {
    let mut directories = vec![ToolDirectory::optional(
        work_dir.join(crate::limits::DEFAULT_TOOL_DIRECTORY),
    )];
    if let Some(home) = std::env::var_os("HOME").filter(|home| Path::new(home).is_absolute()) {
        directories.push(ToolDirectory::optional(
            Path::new(&home).join(crate::limits::GLOBAL_TOOL_DIRECTORY),
        ));
    }
    directories
}

/// Whether descriptions are read from and written to the on-disk cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Read and write (the default).
    #[default]
    Use,
    /// Ask every tool again, then write what was learnt (`toolgate tools validate`).
    Refresh,
    /// Neither read nor write.
    Off,
}

/// How to discover.
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// Highest precedence first.
    pub directories: Vec<ToolDirectory>,
    pub cache: CacheMode,
    /// Where the cache lives; `None` is `$XDG_CACHE_HOME/toolgate` or `~/.cache/toolgate`.
    pub cache_dir: Option<PathBuf>,
    /// How many `description` processes may run at once.
    pub parallelism: usize,
    pub description_timeout: Duration,
    /// The environment of `description`: by default the one child-environment policy applied
    /// to this process's environment (no passthrough); HOME and TMPDIR are private per run.
    pub env: Vec<(OsString, OsString)>,
    /// The kernel sandbox of `description` runs (see
    /// [`SandboxScope::for_discovery`](crate::sandbox_config::SandboxScope::for_discovery));
    /// `None` runs them unconfined.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

impl DiscoveryOptions {
    /// Options for `directories` with the defaults: the cache in use, a parallelism of four
    /// per core (descriptions mostly wait for an interpreter to start), a 5 s timeout.
    pub fn new(directories: Vec<ToolDirectory>) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            directories,
            cache: CacheMode::Use,
            cache_dir: None,
            parallelism: (cores * 4).clamp(4, 64),
            description_timeout: DESCRIPTION_TIMEOUT,
            env: tool_environment(&[]),
            sandbox: None,
        }
    }

    /// Throws `CONFIG_INVALID` for a parallelism of 0 or a zero timeout.
    pub fn check(&self) -> Result<()> {
        if self.parallelism == 0 {
            return Err(Error::ConfigInvalid(
                "discovery parallelism is 0; give at least 1".into(),
            ));
        }
        if self.description_timeout.is_zero() {
            return Err(Error::ConfigInvalid(
                "the description timeout is 0; give a positive duration".into(),
            ));
        }
        Ok(())
    }
}

/// What a discovery did, for tests, benchmarks and `--json` output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiscoveryStats {
    /// `description` processes started.
    pub spawned: usize,
    /// Protocol tools answered from the on-disk cache.
    pub from_cache: usize,
    /// Protocol tools answered from the previous snapshot in memory.
    pub from_memory: usize,
    /// Directories that were read (the others reused their previous listing).
    pub listed_directories: usize,
}

/// Discovers the tools of `options.directories`. `previous` is what the last discovery of the
/// same registry learnt (its answers are reused for unchanged files); `force` asks every
/// protocol tool again. Returns the discovery and the snapshot to keep.
///
/// All file system work before the descriptions (listing, `stat`, reading the cache) happens in
/// one blocking task, and the cache is written only when it changed, so a discovery that spawns
/// nothing hands work between threads only once.
pub async fn discover(
    options: &DiscoveryOptions,
    previous: Arc<Snapshot>,
    force: bool,
) -> Result<(Discovery, Snapshot)> {
    options.check()?;
    let plan_options = options.clone();
    let mut plan = tokio::task::spawn_blocking(move || plan(&plan_options, &previous, force))
        .await
        .map_err(|err| Error::ToolFailed(format!("tool discovery failed: {err}")))?;

    plan.stats.spawned = plan.to_describe.len();
    let to_describe = std::mem::take(&mut plan.to_describe);
    for (real, fingerprint, outcome) in describe_all(to_describe, options).await {
        if let Ok(description) = &outcome {
            plan.cache.put(&real, fingerprint, description.clone());
        }
        plan.snapshot
            .protocol
            .insert(real.clone(), (fingerprint, outcome.clone()));
        plan.answers.insert(real, outcome);
    }
    if plan.cache.file().is_some() {
        let scanned_dirs: Vec<PathBuf> =
            plan.scanned.iter().filter_map(|d| d.real.clone()).collect();
        let good: HashSet<PathBuf> = plan
            .answers
            .iter()
            .filter(|(_, outcome)| outcome.is_ok())
            .map(|(path, _)| path.clone())
            .collect();
        plan.cache.forget_unseen(&scanned_dirs, &good);
        if plan.cache.has_changes() {
            let mut cache = std::mem::take(&mut plan.cache);
            // A cache that cannot be written only costs time next run.
            let _ = tokio::task::spawn_blocking(move || cache.save()).await;
        }
    }

    let mut discovery = assemble(plan.scanned, &plan.answers);
    discovery.stats = plan.stats;
    Ok((discovery, plan.snapshot))
}

/// Whether `name` (a directory entry) is hidden and therefore skipped.
pub fn is_hidden(name: &OsStr) -> bool {
    name.as_bytes().starts_with(b".")
}

#[cfg(test)]
mod tests;
