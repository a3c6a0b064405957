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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::cache::{default_cache_dir, DescriptionCache, Fingerprint};
use super::manifest::{Manifest, MANIFEST_FILE};
use super::protocol::{self, Description, DESCRIPTION_TIMEOUT};
use super::run::tool_environment;
use super::{schema_text, Diagnostic, DiagnosticKind, Discovery, SchemaText, ToolFormat, ToolSpec};
use crate::error::{Error, Result};

/// A directory listing is reused only when the directory's mtime is older than the listing by
/// this much: a file added in the same clock tick as the listing would not change the mtime.
const LISTING_TRUST_MARGIN: Duration = Duration::from_secs(1);

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
    /// The environment of `description` (PATH, HOME, USER, LANG of this process by default).
    pub env: Vec<(OsString, OsString)>,
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

/// What was learnt about one protocol tool, and about one manifest.
type ProtocolOutcome = std::result::Result<Description, String>;
type ManifestOutcome = std::result::Result<LoadedManifest, String>;

/// A checked manifest, its entrypoint's real path and its derived input schema.
#[derive(Debug, Clone)]
struct LoadedManifest {
    manifest: Arc<Manifest>,
    program: PathBuf,
    schema: SchemaText,
}

/// What a registry remembers between refreshes.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    listings: HashMap<PathBuf, Listing>,
    protocol: HashMap<PathBuf, (Fingerprint, ProtocolOutcome)>,
    manifests: HashMap<PathBuf, (ManifestKey, ManifestOutcome)>,
}

#[derive(Debug, Clone)]
struct Listing {
    stamp: Fingerprint,
    modified: SystemTime,
    listed_at: SystemTime,
    names: Arc<[OsString]>,
}

/// A manifest is unchanged when its `tool.yaml` and its entrypoint are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ManifestKey {
    manifest: Fingerprint,
    entrypoint: Option<Fingerprint>,
}

/// One entry of a tool directory, classified.
#[derive(Debug)]
enum Found {
    Protocol {
        listed: PathBuf,
        real: PathBuf,
        fingerprint: Fingerprint,
    },
    Manifest {
        path: PathBuf,
        outcome: ManifestOutcome,
    },
    Problem(Diagnostic),
}

#[derive(Debug)]
struct ScannedDirectory {
    directory: PathBuf,
    real: Option<PathBuf>,
    found: Vec<Found>,
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

/// What is known before any description runs, and what is left to ask.
struct Plan {
    scanned: Vec<ScannedDirectory>,
    snapshot: Snapshot,
    answers: HashMap<PathBuf, ProtocolOutcome>,
    to_describe: Vec<(PathBuf, Fingerprint)>,
    cache: DescriptionCache,
    stats: DiscoveryStats,
}

/// Scans the directories and answers every protocol tool it can from memory, then from the
/// disk cache (blocking file system work).
fn plan(options: &DiscoveryOptions, previous: &Snapshot, force: bool) -> Plan {
    let mut stats = DiscoveryStats::default();
    let (scanned, mut snapshot, listed) = scan_all(&options.directories, previous, force);
    stats.listed_directories = listed;

    let mut answers: HashMap<PathBuf, ProtocolOutcome> = HashMap::new();
    let mut unknown: Vec<(PathBuf, Fingerprint)> = Vec::new();
    let mut asked = HashSet::new();
    for found in scanned.iter().flat_map(|dir| &dir.found) {
        let Found::Protocol {
            real, fingerprint, ..
        } = found
        else {
            continue;
        };
        if !asked.insert(real.clone()) {
            continue; // two symlinks to one program: one answer
        }
        match previous.protocol.get(real) {
            Some((known, outcome)) if !force && known == fingerprint => {
                stats.from_memory += 1;
                answers.insert(real.clone(), outcome.clone());
                snapshot
                    .protocol
                    .insert(real.clone(), (*fingerprint, outcome.clone()));
            }
            _ => unknown.push((real.clone(), *fingerprint)),
        }
    }

    // The disk cache is only opened when memory did not know everything, so a refresh of an
    // unchanged registry neither reads nor writes it.
    let mut cache = DescriptionCache::disabled();
    if !unknown.is_empty() && options.cache != CacheMode::Off {
        if let Some(dir) = options.cache_dir.clone().or_else(default_cache_dir) {
            cache = DescriptionCache::open(&dir);
        }
    }
    let mut to_describe = Vec::new();
    for (real, fingerprint) in unknown {
        let cached = (options.cache == CacheMode::Use && !force)
            .then(|| cache.get(&real, &fingerprint).cloned())
            .flatten();
        match cached {
            Some(description) => {
                stats.from_cache += 1;
                snapshot
                    .protocol
                    .insert(real.clone(), (fingerprint, Ok(description.clone())));
                answers.insert(real, Ok(description));
            }
            None => to_describe.push((real, fingerprint)),
        }
    }
    Plan {
        scanned,
        snapshot,
        answers,
        to_describe,
        cache,
        stats,
    }
}

/// Runs `description` for every tool, at most `options.parallelism` at once.
async fn describe_all(
    tools: Vec<(PathBuf, Fingerprint)>,
    options: &DiscoveryOptions,
) -> Vec<(PathBuf, Fingerprint, ProtocolOutcome)> {
    let permits = Arc::new(tokio::sync::Semaphore::new(options.parallelism));
    let env = Arc::new(options.env.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for (index, (real, fingerprint)) in tools.into_iter().enumerate() {
        let permits = Arc::clone(&permits);
        let env = Arc::clone(&env);
        let timeout = options.description_timeout;
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("never closed");
            let outcome = protocol::describe(&real, &env, timeout)
                .await
                .map_err(|refusal| refusal.reason);
            (index, real, fingerprint, outcome)
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(result) => results.push(result),
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        }
    }
    results.sort_by_key(|(index, ..)| *index);
    results
        .into_iter()
        .map(|(_, real, fingerprint, outcome)| (real, fingerprint, outcome))
        .collect()
}

/// Lists and classifies every directory (blocking file system work).
fn scan_all(
    directories: &[ToolDirectory],
    previous: &Snapshot,
    force: bool,
) -> (Vec<ScannedDirectory>, Snapshot, usize) {
    let mut snapshot = Snapshot::default();
    let mut listed = 0;
    let mut scanned = Vec::new();
    let mut seen_dirs = BTreeSet::new();
    for directory in directories {
        let mut result = ScannedDirectory {
            directory: directory.path.clone(),
            real: None,
            found: Vec::new(),
        };
        let meta = match std::fs::metadata(&directory.path) {
            Ok(meta) if meta.is_dir() => meta,
            Ok(_) => {
                result.found.push(Found::Problem(Diagnostic::invalid(
                    &directory.path,
                    "the configured tool directory is not a directory",
                )));
                scanned.push(result);
                continue;
            }
            Err(err) => {
                if !directory.optional {
                    result.found.push(Found::Problem(Diagnostic {
                        path: directory.path.clone(),
                        kind: DiagnosticKind::MissingDirectory,
                        reason: format!(
                            "the configured tool directory cannot be read ({}); create it or remove it from dirs",
                            describe_io(&err)
                        ),
                    }));
                }
                scanned.push(result);
                continue;
            }
        };
        let real = directory
            .path
            .canonicalize()
            .unwrap_or_else(|_| directory.path.clone());
        if !seen_dirs.insert(real.clone()) {
            continue; // the same directory configured twice
        }
        if std::fs::symlink_metadata(directory.path.join(MANIFEST_FILE)).is_ok() {
            // A common slip: configuring one tool's directory instead of the directory of tools.
            let parent = directory.path.parent().unwrap_or(Path::new("/"));
            result.found.push(Found::Problem(Diagnostic::invalid(
                &directory.path,
                format!(
                    "this directory holds a {MANIFEST_FILE}, so it is one tool's directory, not a directory of tools; configure its parent '{}' instead",
                    parent.display()
                ),
            )));
            scanned.push(result);
            continue;
        }
        result.real = Some(real.clone());
        let names = match reusable_listing(previous.listings.get(&real), &meta, force) {
            Some(listing) => {
                snapshot.listings.insert(real.clone(), listing.clone());
                listing.names
            }
            None => {
                listed += 1;
                match list(&directory.path, &meta) {
                    Ok(listing) => {
                        let names = listing.names.clone();
                        snapshot.listings.insert(real.clone(), listing);
                        names
                    }
                    Err(err) => {
                        result.found.push(Found::Problem(Diagnostic::invalid(
                            &directory.path,
                            format!(
                                "the tool directory cannot be listed ({})",
                                describe_io(&err)
                            ),
                        )));
                        scanned.push(result);
                        continue;
                    }
                }
            }
        };
        for name in names.iter() {
            let path = directory.path.join(name);
            if let Some(found) = classify(&path, previous, &mut snapshot) {
                result.found.push(found);
            }
        }
        scanned.push(result);
    }
    (scanned, snapshot, listed)
}

fn reusable_listing(
    previous: Option<&Listing>,
    meta: &std::fs::Metadata,
    force: bool,
) -> Option<Listing> {
    let previous = previous?;
    let trusted = previous
        .listed_at
        .duration_since(previous.modified)
        .is_ok_and(|age| age >= LISTING_TRUST_MARGIN);
    (!force && trusted && previous.stamp == Fingerprint::of(meta)).then(|| previous.clone())
}

fn list(dir: &Path, meta: &std::fs::Metadata) -> std::io::Result<Listing> {
    let listed_at = SystemTime::now();
    let mut names: Vec<OsString> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.file_name()))
        .filter(|name| !is_hidden(name))
        .collect();
    names.sort();
    Ok(Listing {
        stamp: Fingerprint::of(meta),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        listed_at,
        names: names.into(),
    })
}

/// What one directory entry is. `None` when it vanished while we looked.
fn classify(path: &Path, previous: &Snapshot, snapshot: &mut Snapshot) -> Option<Found> {
    let link = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            return Some(Found::Problem(Diagnostic::invalid(
                path,
                format!("cannot be read ({})", describe_io(&err)),
            )))
        }
    };
    let is_symlink = link.file_type().is_symlink();
    let meta = if is_symlink {
        match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) => {
                return Some(Found::Problem(Diagnostic::invalid(
                    path,
                    format!(
                        "a symlink whose target cannot be reached ({}); fix or remove the link",
                        describe_io(&err)
                    ),
                )))
            }
        }
    } else {
        link
    };
    if meta.is_dir() {
        if is_symlink {
            return Some(Found::Problem(Diagnostic::invalid(
                path,
                "a symlink to a directory; symlinked directories are not followed, put the tool directory itself here",
            )));
        }
        return Some(classify_directory(path, previous, snapshot));
    }
    if !meta.is_file() {
        return Some(Found::Problem(Diagnostic::invalid(
            path,
            "not a regular file (a FIFO, socket or device); a protocol tool is an executable file",
        )));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Some(Found::Problem(Diagnostic::invalid(
            path,
            format!(
                "not executable; a protocol tool must be executable (chmod +x '{}'), other files do not belong in a tool directory",
                path.display()
            ),
        )));
    }
    let real = if is_symlink {
        match path.canonicalize() {
            Ok(real) => real,
            Err(err) => {
                return Some(Found::Problem(Diagnostic::invalid(
                    path,
                    format!("the symlink cannot be resolved ({})", describe_io(&err)),
                )))
            }
        }
    } else {
        path.to_path_buf()
    };
    Some(Found::Protocol {
        listed: path.to_path_buf(),
        real,
        fingerprint: Fingerprint::of(&meta),
    })
}

fn classify_directory(path: &Path, previous: &Snapshot, snapshot: &mut Snapshot) -> Found {
    let manifest_path = path.join(MANIFEST_FILE);
    let manifest_meta = match std::fs::metadata(&manifest_path) {
        Ok(meta) => meta,
        Err(_) => {
            return Found::Problem(Diagnostic::invalid(
                path,
                format!(
                    "a directory without {MANIFEST_FILE} is not a tool; add {MANIFEST_FILE} or move the directory out of the tool directory"
                ),
            ))
        }
    };
    let manifest_fingerprint = Fingerprint::of(&manifest_meta);
    if let Some((key, outcome)) = previous.manifests.get(&manifest_path) {
        let entrypoint = outcome
            .as_ref()
            .ok()
            .and_then(|loaded| entrypoint_fingerprint(path, &loaded.manifest.entrypoint));
        let current = ManifestKey {
            manifest: manifest_fingerprint,
            entrypoint,
        };
        if *key == current {
            snapshot
                .manifests
                .insert(manifest_path.clone(), (current, outcome.clone()));
            return Found::Manifest {
                path: manifest_path,
                outcome: outcome.clone(),
            };
        }
    }
    let outcome = Manifest::load(&manifest_path).map(|(manifest, program)| LoadedManifest {
        schema: schema_text(&manifest.input_schema()),
        manifest: Arc::new(manifest),
        program,
    });
    let entrypoint = outcome
        .as_ref()
        .ok()
        .and_then(|loaded| entrypoint_fingerprint(path, &loaded.manifest.entrypoint));
    snapshot.manifests.insert(
        manifest_path.clone(),
        (
            ManifestKey {
                manifest: manifest_fingerprint,
                entrypoint,
            },
            outcome.clone(),
        ),
    );
    Found::Manifest {
        path: manifest_path,
        outcome,
    }
}

fn entrypoint_fingerprint(tool_dir: &Path, entrypoint: &str) -> Option<Fingerprint> {
    std::fs::metadata(tool_dir.join(entrypoint))
        .ok()
        .map(|meta| Fingerprint::of(&meta))
}

/// Builds the tool list in precedence order and reports clashes.
fn assemble(
    scanned: Vec<ScannedDirectory>,
    answers: &HashMap<PathBuf, ProtocolOutcome>,
) -> Discovery {
    let mut discovery = Discovery::default();
    // name → (directory index, source) of the tool that holds the name.
    let mut holders: BTreeMap<String, (usize, PathBuf)> = BTreeMap::new();
    for (index, dir) in scanned.into_iter().enumerate() {
        for found in dir.found {
            let spec = match found {
                Found::Problem(diagnostic) => {
                    discovery.diagnostics.push(diagnostic);
                    continue;
                }
                Found::Protocol { listed, real, .. } => match answers.get(&real) {
                    Some(Ok(description)) => ToolSpec {
                        name: description.name.clone(),
                        description: description.description.clone(),
                        input_schema: Arc::clone(&description.input_schema),
                        format: ToolFormat::Protocol,
                        source: listed,
                        program: real,
                        directory: dir.directory.clone(),
                        manifest: None,
                    },
                    Some(Err(reason)) => {
                        discovery
                            .diagnostics
                            .push(Diagnostic::invalid(listed, reason));
                        continue;
                    }
                    None => continue,
                },
                Found::Manifest { path, outcome } => match outcome {
                    Ok(loaded) => ToolSpec {
                        name: loaded.manifest.name.clone(),
                        description: loaded.manifest.description.clone(),
                        input_schema: loaded.schema,
                        format: ToolFormat::Manifest,
                        source: path,
                        program: loaded.program,
                        directory: dir.directory.clone(),
                        manifest: Some(loaded.manifest),
                    },
                    Err(reason) => {
                        discovery
                            .diagnostics
                            .push(Diagnostic::invalid(path, reason));
                        continue;
                    }
                },
            };
            match holders.get(&spec.name) {
                Some((holder_dir, holder)) if *holder_dir == index => {
                    discovery.diagnostics.push(Diagnostic::invalid(
                        &spec.source,
                        format!(
                            "tool '{}' is also defined by '{}' in the same directory; rename one of them",
                            spec.name,
                            holder.display()
                        ),
                    ));
                }
                Some((_, holder)) => {
                    discovery.diagnostics.push(Diagnostic {
                        path: spec.source.clone(),
                        kind: DiagnosticKind::Shadowed,
                        reason: format!(
                            "tool '{}' is overridden by '{}' from a directory that takes precedence",
                            spec.name,
                            holder.display()
                        ),
                    });
                }
                None => {
                    holders.insert(spec.name.clone(), (index, spec.source.clone()));
                    discovery.tools.push(spec);
                }
            }
        }
    }
    discovery
}

fn describe_io(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "it does not exist".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => err.to_string(),
    }
}

/// Whether `name` (a directory entry) is hidden and therefore skipped.
pub fn is_hidden(name: &OsStr) -> bool {
    name.as_bytes().starts_with(b".")
}

#[cfg(test)]
mod tests;
