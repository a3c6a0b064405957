//! Scanning: every configured directory is listed (or its listing reused) and each entry
//! classified as a protocol tool, a manifest tool or a problem.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::snapshot::{
    list, reusable_listing, DocstringOutcome, LoadedDocstring, LoadedManifest, ManifestKey,
    ManifestOutcome, Snapshot,
};
use super::ToolDirectory;
use crate::executables::cache::Fingerprint;
use crate::executables::docstring::{DocstringTool, ScriptLanguage};
use crate::executables::manifest::{Manifest, MANIFEST_FILE};
use crate::executables::{schema_text, Diagnostic, DiagnosticKind};

/// One entry of a tool directory, classified.
#[derive(Debug)]
pub(super) enum Found {
    Protocol {
        listed: PathBuf,
        real: PathBuf,
        fingerprint: Fingerprint,
    },
    Manifest {
        path: PathBuf,
        outcome: ManifestOutcome,
    },
    Docstring {
        listed: PathBuf,
        real: PathBuf,
        loaded: LoadedDocstring,
    },
    Problem(Diagnostic),
}

#[derive(Debug)]
pub(super) struct ScannedDirectory {
    pub(super) directory: PathBuf,
    pub(super) real: Option<PathBuf>,
    pub(super) found: Vec<Found>,
}

/// Lists and classifies every directory (blocking file system work).
pub(super) fn scan_all(
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

/// What one directory entry is. `None` when it vanished while we looked.
pub(super) fn classify(path: &Path, previous: &Snapshot, snapshot: &mut Snapshot) -> Option<Found> {
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
    let fingerprint = Fingerprint::of(&meta);
    if ScriptLanguage::of(path).is_some() {
        // A `.py` / `.ts` script may be a docstring tool, executable or not; one without a
        // `Tool:` header falls through to the protocol rules below.
        match docstring_outcome(&real, fingerprint, previous, snapshot) {
            Ok(Some(loaded)) => {
                return Some(Found::Docstring {
                    listed: path.to_path_buf(),
                    real,
                    loaded,
                })
            }
            Ok(None) => {}
            Err(reason) => return Some(Found::Problem(Diagnostic::invalid(path, reason))),
        }
    }
    if meta.permissions().mode() & 0o111 == 0 {
        let docstring = if ScriptLanguage::of(path).is_some() {
            " or a script whose header docstring declares 'Tool:'"
        } else {
            ""
        };
        return Some(Found::Problem(Diagnostic::invalid(
            path,
            format!(
                "not executable; a protocol tool must be executable (chmod +x '{}'){docstring}, other files do not belong in a tool directory",
                path.display()
            ),
        )));
    }
    Some(Found::Protocol {
        listed: path.to_path_buf(),
        real,
        fingerprint,
    })
}

/// The docstring header of the script at `real`, from the previous snapshot when the file is
/// unchanged (reading headers costs a read per script; a refresh with nothing changed costs a
/// `stat`).
fn docstring_outcome(
    real: &Path,
    fingerprint: Fingerprint,
    previous: &Snapshot,
    snapshot: &mut Snapshot,
) -> DocstringOutcome {
    let outcome = match previous.docstrings.get(real) {
        Some((known, outcome)) if *known == fingerprint => outcome.clone(),
        _ => DocstringTool::load(real).map(|tool| {
            tool.map(|tool| LoadedDocstring {
                schema: schema_text(&tool.input_schema()),
                tool: Arc::new(tool),
            })
        }),
    };
    snapshot
        .docstrings
        .insert(real.to_path_buf(), (fingerprint, outcome.clone()));
    outcome
}

pub(super) fn classify_directory(
    path: &Path,
    previous: &Snapshot,
    snapshot: &mut Snapshot,
) -> Found {
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

pub(super) fn entrypoint_fingerprint(tool_dir: &Path, entrypoint: &str) -> Option<Fingerprint> {
    std::fs::metadata(tool_dir.join(entrypoint))
        .ok()
        .map(|meta| Fingerprint::of(&meta))
}

pub(super) fn describe_io(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "it does not exist".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => err.to_string(),
    }
}
