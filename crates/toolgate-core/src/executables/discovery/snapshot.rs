//! What a registry remembers between refreshes, so that a refresh when nothing changed costs
//! only `stat` calls, and the directory listings it reuses.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::is_hidden;
use crate::executables::cache::Fingerprint;
use crate::executables::docstring::DocstringTool;
use crate::executables::manifest::Manifest;
use crate::executables::protocol::Description;
use crate::executables::SchemaText;

/// A directory listing is reused only when the directory's mtime is older than the listing by
/// this much: a file added in the same clock tick as the listing would not change the mtime.
pub(super) const LISTING_TRUST_MARGIN: Duration = Duration::from_secs(1);

/// What was learnt about one protocol tool, and about one manifest.
pub(super) type ProtocolOutcome = std::result::Result<Description, String>;
pub(super) type ManifestOutcome = std::result::Result<LoadedManifest, String>;
/// What the header of a `.py` / `.ts` script declared: a docstring tool, none, or a problem.
pub(super) type DocstringOutcome = std::result::Result<Option<LoadedDocstring>, String>;

/// A checked docstring header and its input schema.
#[derive(Debug, Clone)]
pub(super) struct LoadedDocstring {
    pub(super) tool: Arc<DocstringTool>,
    pub(super) schema: SchemaText,
}

/// A checked manifest, its entrypoint's real path and its derived input schema.
#[derive(Debug, Clone)]
pub(super) struct LoadedManifest {
    pub(super) manifest: Arc<Manifest>,
    pub(super) program: PathBuf,
    pub(super) schema: SchemaText,
}

/// What a registry remembers between refreshes.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(super) listings: HashMap<PathBuf, Listing>,
    pub(super) protocol: HashMap<PathBuf, (Fingerprint, ProtocolOutcome)>,
    pub(super) manifests: HashMap<PathBuf, (ManifestKey, ManifestOutcome)>,
    /// Scripts read for a docstring header, by real path.
    pub(super) docstrings: HashMap<PathBuf, (Fingerprint, DocstringOutcome)>,
}

#[derive(Debug, Clone)]
pub(super) struct Listing {
    pub(super) stamp: Fingerprint,
    pub(super) modified: SystemTime,
    pub(super) listed_at: SystemTime,
    pub(super) names: Arc<[OsString]>,
}

/// A manifest is unchanged when its `tool.yaml` and its entrypoint are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ManifestKey {
    pub(super) manifest: Fingerprint,
    pub(super) entrypoint: Option<Fingerprint>,
}

pub(super) fn reusable_listing(
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

pub(super) fn list(dir: &Path, meta: &std::fs::Metadata) -> std::io::Result<Listing> {
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
