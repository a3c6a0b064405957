//! What the file tools refuse besides what path rules decide by name: protected configuration,
//! and files that are the same file as a hidden or protected one.
//!
//! - **Protected paths** (a worker's configuration, git hooks and config, `sandbox.protect`;
//!   see `sandbox_config::protect`) are read-only for the file tools: a call that would change
//!   one (write, edit, patch, delete, a move to or from it) is `PATH_BLOCKED` with the rule
//!   `protected`, unless an explicit path rule of the toolset names it (not the `**` rule for
//!   everything), and then the call asks (never less than `ask`).
//! - **The same file under another name.** Rules judge names, so a hard link `notes.txt` made
//!   to `.env` would otherwise be read as `notes.txt`. When the tools are prepared, the device
//!   and inode of every file a `blocked` rule matches (inside a blocked directory too) and of
//!   every protected file are taken; a path that is one of those files is refused like the
//!   file itself, and a search or listing leaves it out. Opens are checked again on the opened
//!   descriptor, so a link swapped in after the check is refused too. A file that matches a
//!   rule but is created after the tools were prepared is judged by its name only.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::expand::{expand, TooLarge};
use super::rules::EntryKind;
use crate::error::{Error, Result};

/// Why a file is known by its device and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    /// A file a `blocked` path rule matches; the rule, described.
    Hidden(String),
    /// A protected file; why it is protected.
    Protected(String),
}

/// A file known by identity: where it is and why it is known.
#[derive(Debug, Clone)]
struct Identity {
    path: PathBuf,
    known: Known,
    /// Whether the file under `path` itself is judged by the rules of these tools (their
    /// gate's walk found it): false for a file a calling worker's rules hide, which these
    /// tools' own rules may not name.
    judged_by_name: bool,
}

/// The protected paths and the known identities of one set of file tools.
#[derive(Debug, Default)]
pub struct FileGuards {
    root: PathBuf,
    /// Protected files and directories (absolute, inside the root), with the reason.
    protected: Vec<(PathBuf, String)>,
    identities: HashMap<(u64, u64), Identity>,
    /// The inodes of the hidden files: a walk compares each file's inode (free from the
    /// directory listing) and only then pays a `stat` for the device.
    hidden_inodes: HashSet<u64>,
}

/// What the guards need of the path rules: which paths a `blocked` rule matches. The file
/// tools' gate (`PathGate`, in `access.rs`) answers it; it holds the guards, so they
/// ask through this trait rather than naming it.
pub trait BlockedPaths {
    /// Whether any rule blocks.
    fn has_blocking_rules(&self) -> bool;
    /// Whether a walk below the root should report `absolute` as blocked.
    fn blocks_in_walk(&self, absolute: &Path, kind: EntryKind) -> bool;
    /// The rule that blocks `absolute`, described for a message.
    fn blocking_rule(&self, absolute: &Path, kind: EntryKind) -> Option<String>;
}

impl FileGuards {
    /// The guards of file tools confined to `root` (canonical): `protected` paths (absolute,
    /// each with its reason; those outside `root` are ignored), and the identities of the
    /// protected files and of every file `gate`'s `blocked` rules match below `root` (a walk
    /// of `root`; `CONFIG_INVALID` past [`MAX_GUARD_WALK_ENTRIES`](crate::limits::MAX_GUARD_WALK_ENTRIES)),
    /// and of the `hidden` paths found elsewhere (a calling worker's blocked files, in its own
    /// work directory: the same file under a name below `root` is refused too).
    pub fn new(
        root: &Path,
        protected: &[(PathBuf, String)],
        hidden: &[(PathBuf, String)],
        gate: &impl BlockedPaths,
    ) -> Result<Self> {
        let mut guards = FileGuards {
            root: root.to_path_buf(),
            ..FileGuards::default()
        };
        for (path, reason) in protected {
            if !path.starts_with(root) || guards.protected.iter().any(|(known, _)| known == path) {
                continue;
            }
            guards.protected.push((path.clone(), reason.clone()));
            if let Ok(meta) = path.symlink_metadata() {
                if meta.is_file() {
                    guards.identities.insert(
                        (meta.dev(), meta.ino()),
                        Identity {
                            path: path.clone(),
                            known: Known::Protected(reason.clone()),
                            judged_by_name: true,
                        },
                    );
                }
            }
        }
        for (path, reason) in hidden {
            let files = match path.symlink_metadata() {
                Ok(meta) if meta.is_dir() => files_below(path)
                    .map_err(|err| err.into_error("the hidden paths of the calling workers"))?,
                Ok(_) => vec![path.clone()],
                Err(_) => continue,
            };
            for file in files {
                guards.hide_identity_as(&file, file.clone(), reason, false);
            }
        }
        if gate.has_blocking_rules() {
            let blocked =
                |absolute: &Path, _: &Path, kind: EntryKind| gate.blocks_in_walk(absolute, kind);
            let what = "the blocked path rules of the file tools";
            let found = expand(root, &[&blocked], None).map_err(|err| err.into_error(what))?;
            for matched in found {
                let rule = gate
                    .blocking_rule(
                        matched.link.as_ref().unwrap_or(&matched.path),
                        kind(matched.is_dir),
                    )
                    .unwrap_or_else(|| "a blocked path rule".into());
                // Each file with the name it is blocked by, and the file that name reaches.
                let files: Vec<(PathBuf, PathBuf)> = match (&matched.link, matched.is_dir) {
                    // A blocked name that is a symlink to a file or folder of the work
                    // directory (`.env -> env/production`, `vault -> store`): what it reaches
                    // is the blocked file, which the kernel hides too, under its other name.
                    (Some(link), true) => files_below(&matched.path)
                        .map_err(|err| err.into_error(what))?
                        .into_iter()
                        .map(|file| {
                            let name = file
                                .strip_prefix(&matched.path)
                                .map_or_else(|_| link.clone(), |rest| link.join(rest));
                            (name, file)
                        })
                        .collect(),
                    (Some(link), false) => vec![(link.clone(), matched.path.clone())],
                    (None, true) => files_below(&matched.path)
                        .map_err(|err| err.into_error(what))?
                        .into_iter()
                        .map(|file| (file.clone(), file))
                        .collect(),
                    (None, false) => vec![(matched.path.clone(), matched.path.clone())],
                };
                for (name, file) in files {
                    guards.hide_identity_as(&file, name, &rule, true);
                }
            }
        }
        Ok(guards)
    }

    /// Records the regular file `file` (not following a final symlink) as hidden by `rule`,
    /// under the name `name` it is blocked by; `judged_by_name` when these tools' own rules
    /// judge that name. A file hidden by a caller's rules stays so under every name.
    fn hide_identity_as(&mut self, file: &Path, name: PathBuf, rule: &str, judged_by_name: bool) {
        let Ok(meta) = file.symlink_metadata() else {
            return;
        };
        if !meta.is_file() {
            return;
        }
        self.hidden_inodes.insert(meta.ino());
        let key = (meta.dev(), meta.ino());
        if self
            .identities
            .get(&key)
            .is_some_and(|known| !known.judged_by_name && matches!(known.known, Known::Hidden(_)))
        {
            return; // hidden under every name already
        }
        self.identities.insert(
            key,
            Identity {
                path: name,
                known: Known::Hidden(rule.to_string()),
                judged_by_name,
            },
        );
    }

    /// Whether nothing is guarded.
    pub fn is_empty(&self) -> bool {
        self.protected.is_empty() && self.identities.is_empty()
    }

    /// The protected path `absolute` is, or is inside, with its reason.
    pub(crate) fn protection_of(&self, absolute: &Path) -> Option<&(PathBuf, String)> {
        self.protected
            .iter()
            .find(|(path, _)| absolute.starts_with(path))
    }

    /// `PATH_BLOCKED` when the regular file at `absolute` (not following a final symlink) is
    /// the same file as a hidden one, other than itself; for a call that changes it
    /// (`change`), also when it is the same file as a protected one.
    pub(crate) fn check_path(&self, spelled: &str, absolute: &Path, change: bool) -> Result<()> {
        match absolute.symlink_metadata() {
            Ok(meta) if meta.is_file() => self.check_identity(spelled, absolute, &meta, change),
            _ => Ok(()),
        }
    }

    /// [`check_path`](Self::check_path) for a file already open (`meta` of its descriptor).
    pub(crate) fn check_identity(
        &self,
        spelled: &str,
        absolute: &Path,
        meta: &std::fs::Metadata,
        change: bool,
    ) -> Result<()> {
        let Some(identity) = self.identities.get(&(meta.dev(), meta.ino())) else {
            return Ok(());
        };
        if identity.path == absolute && identity.judged_by_name {
            return Ok(()); // the file itself: judged by its name
        }
        let other = self.shown(&identity.path);
        match &identity.known {
            Known::Hidden(rule) if identity.path == absolute => Err(Error::PathBlocked(format!(
                "'{spelled}' is hidden by the path rule {rule} of a worker that calls this one: file tools may not read, write, list or search it under any name"
            ))),
            Known::Hidden(rule) => Err(Error::PathBlocked(format!(
                "'{spelled}' is the same file as '{other}' (a hard link to it, or the file that name is a symlink to), which the path rule {rule} blocks; file tools may not read, write, list or search it under any name. Remove the link, or change that rule"
            ))),
            Known::Protected(reason) if change => Err(Error::PathBlocked(format!(
                "'{spelled}' is the same file as '{other}' (a hard link to it), which is protected configuration ({reason}; rule protected): file tools may not change it under any name"
            ))),
            Known::Protected(_) => Ok(()),
        }
    }

    /// Whether a walk must leave out the regular file `absolute` with inode `ino`: it is the
    /// same file as a hidden one. Only a known inode costs a `stat`.
    pub(crate) fn hides_file(&self, absolute: &Path, ino: u64) -> bool {
        if !self.hidden_inodes.contains(&ino) {
            return false;
        }
        absolute.symlink_metadata().is_ok_and(|meta| {
            self.identities
                .get(&(meta.dev(), meta.ino()))
                .is_some_and(|identity| {
                    matches!(identity.known, Known::Hidden(_))
                        && (identity.path != absolute || !identity.judged_by_name)
                })
        })
    }

    /// The `PATH_BLOCKED` refusal of changing the protected `absolute` (spelled `spelled`).
    pub(crate) fn protected_error(&self, spelled: &str, path: &Path, reason: &str) -> Error {
        let shown = self.shown(path);
        let pattern = format!("/{shown}");
        Error::PathBlocked(format!(
            "'{spelled}' is protected configuration ({reason}; rule protected): the file tools may not change it, and sandboxed processes see it read-only, so nothing the agent writes runs when the worker is loaded next. To let the agent change it with approval, name it in a path rule of the toolset's approval.paths, e.g. {{ pattern: '{pattern}', approval: ask }}; such a call always asks"
        ))
    }

    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

fn kind(is_dir: bool) -> EntryKind {
    if is_dir {
        EntryKind::Dir
    } else {
        EntryKind::File
    }
}

/// The regular files below `dir` (a blocked directory), for their identities.
fn files_below(dir: &Path) -> std::result::Result<Vec<PathBuf>, TooLarge> {
    let file = |_: &Path, _: &Path, kind: EntryKind| kind == EntryKind::File;
    Ok(expand(dir, &[&file], None)?
        .into_iter()
        .map(|matched| matched.path)
        .collect())
}

#[cfg(test)]
mod tests;
