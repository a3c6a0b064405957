//! `file_patch`: several file operations applied as one unit.
//!
//! Every operation is checked before anything is touched (paths, existence, conflicts with the
//! operations before it). Then they are applied in order while a journal records how to undo
//! each step: an updated or deleted file is kept under a hidden hard link / name beside it
//! until the whole patch has succeeded. If any step fails, the journal is played backwards and
//! every file is as it was.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rustix::fs::AtFlags;

use super::access::Access;
use super::anchor::{self, Kind, Target};
use super::lock::WriteLock;
use super::text::{human_size, plural};
use super::write::{check_content_size, remove_created_dirs};
use crate::error::{Error, Result};
use crate::limits::{MAX_PATCH_BYTES, MAX_PATCH_OPERATIONS};
use crate::path::PathValidator;

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchAction {
    /// Create a new file (`content`); the path must be free.
    Add,
    /// Replace an existing file's content (`content`).
    Update,
    /// Remove an existing file.
    Delete,
    /// Rename an existing file to `new_path` (which must be free), optionally with new `content`.
    Move,
}

impl PatchAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PatchAction::Add => "add",
            PatchAction::Update => "update",
            PatchAction::Delete => "delete",
            PatchAction::Move => "move",
        }
    }
}

/// One operation of a patch.
#[derive(Debug, Clone)]
pub struct PatchOperation {
    pub action: PatchAction,
    pub path: String,
    pub content: Option<String>,
    pub new_path: Option<String>,
}

/// The result of a patch: one line per operation.
#[derive(Debug, Clone)]
pub struct PatchOutput {
    pub summary: String,
    /// Paths (relative to the root) that were created, changed or removed.
    pub changed: Vec<String>,
}

/// A checked operation with its resolved paths.
struct Checked<'a> {
    index: usize,
    op: &'a PatchOperation,
    path: PathBuf,
    new_path: Option<PathBuf>,
}

/// Checks every operation, then applies them all or none. Every file the patch names is locked
/// against the other writers of this process (see `lock`) from the checks to the end.
/// With path rules, a patch naming a blocked path anywhere is refused before anything is
/// checked or changed.
pub fn patch<'a>(
    access: impl Into<Access<'a>>,
    operations: &[PatchOperation],
) -> Result<PatchOutput> {
    check_sizes(operations)?;
    let access = access.into();
    let validator = access.validator();
    check_rules(&access, operations)?;
    // Paths that do not resolve are reported by the checks; they need no lock.
    let touched = operations
        .iter()
        .flat_map(|op| std::iter::once(&op.path).chain(op.new_path.as_ref()))
        .filter_map(|path| validator.resolve(path).ok());
    let _lock = WriteLock::acquire(touched);
    let checked = check_all(validator, operations)?;
    let mut journal = Journal::default();
    let mut summary = String::new();
    let mut changed = Vec::new();
    for step in &checked {
        match apply(validator, step, &mut journal) {
            Ok(line) => {
                summary.push_str(&line);
                summary.push('\n');
                changed.push(validator.relative(&step.path).display().to_string());
                if let Some(new_path) = &step.new_path {
                    changed.push(validator.relative(new_path).display().to_string());
                }
            }
            Err(err) => {
                let failures = journal.roll_back();
                return Err(failed(step, err, &failures));
            }
        }
    }
    journal.commit();
    Ok(PatchOutput { summary, changed })
}

/// Refuses the patch when a path rule blocks a path it names (or when one needs more approval
/// than the call had). Paths that do not resolve are left to the checks, which report them.
fn check_rules(access: &Access<'_>, operations: &[PatchOperation]) -> Result<()> {
    for (index, op) in operations.iter().enumerate() {
        for path in std::iter::once(&op.path).chain(op.new_path.as_ref()) {
            if let Err(err @ (Error::PathBlocked(_) | Error::ApprovalDenied(_))) =
                access.target_to_change(path)
            {
                return Err(in_operation(index + 1, op, err));
            }
        }
    }
    Ok(())
}

/// The number of operations and the size of their content, before anything is resolved.
fn check_sizes(operations: &[PatchOperation]) -> Result<()> {
    if operations.is_empty() {
        return Err(Error::InvalidInput(
            "operations is empty; give at least one {action, path} operation".into(),
        ));
    }
    if operations.len() > MAX_PATCH_OPERATIONS {
        return Err(Error::InvalidInput(format!(
            "{} operations in one patch; the limit is {MAX_PATCH_OPERATIONS}. Split the patch",
            operations.len()
        )));
    }
    let mut total = 0usize;
    for (index, op) in operations.iter().enumerate() {
        let bytes = op.content.as_ref().map_or(0, String::len);
        check_content_size(&format!("the content of operation {}", index + 1), bytes)
            .map_err(|err| in_operation(index + 1, op, err))?;
        total = total.saturating_add(bytes);
    }
    if total > MAX_PATCH_BYTES {
        return Err(Error::InvalidInput(format!(
            "the operations' content adds up to {}; one patch writes at most {}. Split the patch",
            human_size(total as u64),
            human_size(MAX_PATCH_BYTES as u64)
        )));
    }
    Ok(())
}

fn check_all<'a>(
    validator: &PathValidator,
    operations: &'a [PatchOperation],
) -> Result<Vec<Checked<'a>>> {
    // What exists after the operations checked so far; paths not in here are as on disk.
    let mut planned: HashMap<PathBuf, bool> = HashMap::new();
    let mut checked = Vec::with_capacity(operations.len());
    for (index, op) in operations.iter().enumerate() {
        let step = check_one(validator, index + 1, op, &mut planned)
            .map_err(|err| in_operation(index + 1, op, err))?;
        checked.push(step);
    }
    Ok(checked)
}

fn check_one<'a>(
    validator: &PathValidator,
    index: usize,
    op: &'a PatchOperation,
    planned: &mut HashMap<PathBuf, bool>,
) -> Result<Checked<'a>> {
    let path = validator.resolve(&op.path)?;
    let shown = validator.relative(&path).display().to_string();
    let needs_content = matches!(op.action, PatchAction::Add | PatchAction::Update);
    if needs_content && op.content.is_none() {
        return Err(Error::InvalidInput(format!(
            "'{}' needs content (the whole new file)",
            op.action.as_str()
        )));
    }
    if op.action == PatchAction::Delete && op.content.is_some() {
        return Err(Error::InvalidInput(
            "'delete' takes no content; leave content out".into(),
        ));
    }
    if op.action != PatchAction::Move && op.new_path.is_some() {
        return Err(Error::InvalidInput(format!(
            "new_path only belongs to 'move', not '{}'",
            op.action.as_str()
        )));
    }
    let mut new_path = None;
    match op.action {
        PatchAction::Add => {
            must_be_free(validator, &path, planned, "add")?;
            planned.insert(path.clone(), true);
        }
        PatchAction::Update | PatchAction::Delete => {
            must_be_file(&path, &shown, planned)?;
            planned.insert(path.clone(), op.action == PatchAction::Update);
        }
        PatchAction::Move => {
            let Some(raw) = &op.new_path else {
                return Err(Error::InvalidInput(
                    "'move' needs new_path, the path to move the file to".into(),
                ));
            };
            let target = validator.resolve(raw)?;
            must_be_file(&path, &shown, planned)?;
            if target == path {
                return Err(Error::InvalidInput(format!(
                    "'move' of '{shown}' onto itself; give a different new_path"
                )));
            }
            planned.insert(path.clone(), false);
            must_be_free(validator, &target, planned, "move target")?;
            planned.insert(target.clone(), true);
            new_path = Some(target);
        }
    }
    Ok(Checked {
        index,
        op,
        path,
        new_path,
    })
}

fn on_disk(path: &Path) -> Kind {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => Kind::File,
        Ok(meta) if meta.is_dir() => Kind::Directory,
        Ok(meta) if meta.file_type().is_symlink() => Kind::Symlink,
        Ok(_) => Kind::Other,
        Err(_) => Kind::Missing,
    }
}

fn exists(path: &Path, planned: &HashMap<PathBuf, bool>) -> bool {
    planned
        .get(path)
        .copied()
        .unwrap_or_else(|| on_disk(path) != Kind::Missing)
}

fn must_be_file(path: &Path, shown: &str, planned: &HashMap<PathBuf, bool>) -> Result<()> {
    match planned.get(path) {
        Some(true) => return Ok(()),
        Some(false) => {
            return Err(Error::FileNotFound(format!(
                "'{shown}' no longer exists at this point: an earlier operation removes or moves it"
            )))
        }
        None => {}
    }
    match on_disk(path) {
        Kind::File => Ok(()),
        Kind::Missing => Err(Error::FileNotFound(format!(
            "'{shown}' does not exist; use 'add' to create it"
        ))),
        _ => Err(Error::InvalidInput(format!(
            "'{shown}' is not a regular file; patches only touch files"
        ))),
    }
}

fn must_be_free(
    validator: &PathValidator,
    path: &Path,
    planned: &HashMap<PathBuf, bool>,
    what: &str,
) -> Result<()> {
    let shown = validator.relative(path).display().to_string();
    if exists(path, planned) {
        return Err(Error::InvalidInput(format!(
            "the {what} '{shown}' already exists; use 'update' to change an existing file, or pick a free path"
        )));
    }
    // The nearest existing ancestor must be a directory, or the file cannot be created.
    for ancestor in path.ancestors().skip(1) {
        if ancestor == validator.root() || !ancestor.starts_with(validator.root()) {
            break;
        }
        match planned.get(ancestor).copied() {
            Some(true) => {
                return Err(Error::InvalidInput(format!(
                    "'{}' is a file, so '{shown}' cannot be created below it",
                    validator.relative(ancestor).display()
                )))
            }
            Some(false) => continue,
            None => {}
        }
        match on_disk(ancestor) {
            Kind::Missing => continue,
            Kind::Directory => break,
            _ => {
                return Err(Error::InvalidInput(format!(
                    "'{}' is not a directory, so '{shown}' cannot be created below it",
                    validator.relative(ancestor).display()
                )))
            }
        }
    }
    Ok(())
}

/// How to undo one applied step.
enum Undo {
    /// A file this patch created.
    RemoveFile(Target),
    /// The original file, kept under a hidden name in the same directory.
    RestoreBackup { target: Target, backup: OsString },
    /// A file this patch moved from `to` to `from`.
    MoveBack { from: Target, to: Target },
    /// Directories this patch created.
    RemoveDirs(Vec<PathBuf>),
}

#[derive(Default)]
struct Journal {
    steps: Vec<Undo>,
}

impl Journal {
    /// Undoes every step, last first. Returns what could not be undone (normally nothing).
    fn roll_back(&mut self) -> Vec<String> {
        let mut failures = Vec::new();
        while let Some(step) = self.steps.pop() {
            let outcome = match &step {
                Undo::RemoveFile(target) => target.unlink().map_err(|e| e.to_string()),
                Undo::RestoreBackup { target, backup } => rustix::fs::renameat(
                    target.parent.fd(),
                    backup,
                    target.parent.fd(),
                    &target.name,
                )
                .map_err(|errno| format!("restoring '{}': {errno}", target.absolute.display())),
                Undo::MoveBack { from, to } => {
                    anchor::rename(&from.parent, &from.name, &to.parent, &to.name, true).map_err(
                        |errno| format!("moving '{}' back: {errno}", from.absolute.display()),
                    )
                }
                Undo::RemoveDirs(dirs) => {
                    remove_created_dirs(dirs);
                    Ok(())
                }
            };
            if let Err(failure) = outcome {
                failures.push(failure);
            }
        }
        failures
    }

    /// The patch succeeded: drop the kept originals.
    fn commit(self) {
        for step in self.steps {
            if let Undo::RestoreBackup { target, backup } = step {
                let _ = rustix::fs::unlinkat(target.parent.fd(), &backup, AtFlags::empty());
            }
        }
    }
}

fn apply(validator: &PathValidator, step: &Checked, journal: &mut Journal) -> Result<String> {
    let shown = validator.relative(&step.path).display().to_string();
    let content = step.op.content.as_deref().map(str::as_bytes);
    match step.op.action {
        PatchAction::Add => {
            let target = open_creating(validator, &step.path, journal)?;
            let bytes = content.unwrap_or_default();
            target.write_atomic(bytes, None, true)?;
            journal.steps.push(Undo::RemoveFile(target));
            Ok(format!(
                "added {shown} ({})",
                human_size(bytes.len() as u64)
            ))
        }
        PatchAction::Update => {
            let target = Target::at(validator, step.path.clone(), false, &mut Vec::new())?;
            let mode = target.stat()?.st_mode & 0o7777;
            keep_original(&target, journal, true)?;
            let bytes = content.unwrap_or_default();
            target.write_atomic(bytes, Some(mode), false)?;
            Ok(format!(
                "updated {shown} ({})",
                human_size(bytes.len() as u64)
            ))
        }
        PatchAction::Delete => {
            let target = Target::at(validator, step.path.clone(), false, &mut Vec::new())?;
            keep_original(&target, journal, false)?;
            Ok(format!("deleted {shown}"))
        }
        PatchAction::Move => {
            let source = Target::at(validator, step.path.clone(), false, &mut Vec::new())?;
            let new_path = step.new_path.clone().unwrap_or_default();
            let moved_to = validator.relative(&new_path).display().to_string();
            let target = open_creating(validator, &new_path, journal)?;
            if let Some(bytes) = content {
                let mode = source.stat()?.st_mode & 0o7777;
                target.write_atomic(bytes, Some(mode), true)?;
                journal.steps.push(Undo::RemoveFile(target));
                keep_original(&source, journal, false)?;
                Ok(format!(
                    "moved {shown} -> {moved_to} with new content ({})",
                    human_size(bytes.len() as u64)
                ))
            } else {
                anchor::rename(
                    &source.parent,
                    &source.name,
                    &target.parent,
                    &target.name,
                    true,
                )
                .map_err(|errno| anchor::rename_error(&target.absolute, errno))?;
                journal.steps.push(Undo::MoveBack {
                    from: target,
                    to: source,
                });
                Ok(format!("moved {shown} -> {moved_to}"))
            }
        }
    }
}

fn open_creating(validator: &PathValidator, path: &Path, journal: &mut Journal) -> Result<Target> {
    let mut created = Vec::new();
    let target = Target::at(validator, path.to_path_buf(), true, &mut created);
    if !created.is_empty() {
        journal.steps.push(Undo::RemoveDirs(created));
    }
    target
}

/// Keeps the original file under a hidden name: a hard link when the file is about to be
/// replaced (`link`), a rename when it is about to disappear.
fn keep_original(target: &Target, journal: &mut Journal, link: bool) -> Result<()> {
    let backup = target.hidden_name("orig");
    let dir = target.parent.fd();
    let outcome = if link {
        rustix::fs::linkat(&dir, &target.name, &dir, &backup, AtFlags::empty())
    } else {
        rustix::fs::renameat(&dir, &target.name, &dir, &backup)
    };
    outcome
        .map_err(|errno| anchor::io_error("keeping the original of", &target.absolute, errno))?;
    let target = target.try_clone()?;
    journal.steps.push(Undo::RestoreBackup { target, backup });
    Ok(())
}

/// Puts the operation's number and action in front of an error, keeping its code.
fn in_operation(index: usize, op: &PatchOperation, err: Error) -> Error {
    let context = format!("operation {index} ({} '{}')", op.action.as_str(), op.path);
    match err {
        Error::PathOutsideRoot { path, root, detail } => Error::PathOutsideRoot {
            path,
            root,
            detail: format!("{detail} in {context}; nothing was changed"),
        },
        Error::InvalidInput(message) => {
            Error::InvalidInput(format!("{context}: {message}; nothing was changed"))
        }
        Error::FileNotFound(message) => {
            Error::FileNotFound(format!("{context}: {message}; nothing was changed"))
        }
        Error::PathBlocked(message) => {
            Error::PathBlocked(format!("{context}: {message}; nothing was changed"))
        }
        Error::ApprovalDenied(message) => {
            Error::ApprovalDenied(format!("{context}: {message}; nothing was changed"))
        }
        other => other,
    }
}

fn failed(step: &Checked, err: Error, rollback_failures: &[String]) -> Error {
    let undone = if step.index > 1 {
        format!("operations 1-{} were undone", step.index - 1)
    } else {
        "nothing had been applied".to_string()
    };
    let outcome = if rollback_failures.is_empty() {
        format!("{undone}; every file is as it was")
    } else {
        format!(
            "{undone}, except: {} ({})",
            rollback_failures.join("; "),
            plural(rollback_failures.len() as u64, "failure", "failures")
        )
    };
    let context = format!(
        "operation {} ({} '{}') failed",
        step.index,
        step.op.action.as_str(),
        step.op.path
    );
    match err {
        Error::Io {
            action,
            path,
            source,
        } => Error::Io {
            action,
            path,
            source: std::io::Error::new(source.kind(), format!("{source}; {context}; {outcome}")),
        },
        Error::PathOutsideRoot { path, root, detail } => Error::PathOutsideRoot {
            path,
            root,
            detail: format!("{detail}; {context}; {outcome}"),
        },
        Error::InvalidInput(message) => {
            Error::InvalidInput(format!("{context}: {message}; {outcome}"))
        }
        Error::FileNotFound(message) => {
            Error::FileNotFound(format!("{context}: {message}; {outcome}"))
        }
        other => Error::ToolFailed(format!("{context}: {other}; {outcome}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn op(
        action: PatchAction,
        path: &str,
        content: Option<&str>,
        new_path: Option<&str>,
    ) -> PatchOperation {
        PatchOperation {
            action,
            path: path.into(),
            content: content.map(Into::into),
            new_path: new_path.map(Into::into),
        }
    }

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "A").unwrap();
        std::fs::write(dir.path().join("b.txt"), "B").unwrap();
        std::fs::write(dir.path().join("c.txt"), "C").unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    /// Every file below the root with its content, hidden ones included.
    fn snapshot(root: &Path) -> Vec<(String, String)> {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                if entry.file_type().unwrap().is_dir() {
                    files.push((format!("{rel}/"), String::new()));
                    stack.push(path);
                } else {
                    files.push((rel, std::fs::read_to_string(&path).unwrap_or_default()));
                }
            }
        }
        files.sort();
        files
    }

    #[test]
    fn all_four_actions_apply_in_order() {
        let (dir, v) = setup();
        let out = patch(
            &v,
            &[
                op(PatchAction::Add, "new/dir/n.txt", Some("N"), None),
                op(PatchAction::Update, "a.txt", Some("A2"), None),
                op(PatchAction::Delete, "b.txt", None, None),
                op(PatchAction::Move, "c.txt", None, Some("moved/c.txt")),
                op(PatchAction::Add, "b.txt", Some("B again"), None),
                op(PatchAction::Move, "moved/c.txt", Some("C2"), Some("c2.txt")),
            ],
        )
        .unwrap();
        assert_eq!(out.summary.lines().count(), 6, "{}", out.summary);
        assert!(
            out.summary.contains("moved c.txt -> moved/c.txt"),
            "{}",
            out.summary
        );
        let files = snapshot(dir.path());
        let expect: Vec<(String, String)> = [
            ("a.txt", "A2"),
            ("b.txt", "B again"),
            ("c2.txt", "C2"),
            ("moved/", ""),
            ("new/", ""),
            ("new/dir/", ""),
            ("new/dir/n.txt", "N"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(files, expect);
    }

    #[test]
    fn a_bad_third_operation_is_caught_before_anything_changes() {
        let (dir, v) = setup();
        let before = snapshot(dir.path());
        let cases = [
            (
                op(PatchAction::Update, "missing.txt", Some("x"), None),
                "FILE_NOT_FOUND",
            ),
            (
                op(PatchAction::Add, "../escape.txt", Some("x"), None),
                "PATH_OUTSIDE_ROOT",
            ),
            (
                op(PatchAction::Add, "c.txt", Some("x"), None),
                "INVALID_INPUT",
            ),
            (
                op(PatchAction::Move, "a.txt", None, Some("c.txt")),
                "INVALID_INPUT",
            ),
            (
                op(PatchAction::Delete, "b.txt", None, None),
                "FILE_NOT_FOUND",
            ),
            (
                op(PatchAction::Add, "a.txt/child", Some("x"), None),
                "INVALID_INPUT",
            ),
            (
                op(PatchAction::Update, "c.txt", None, None),
                "INVALID_INPUT",
            ),
        ];
        for (third, code) in cases {
            let ops = [
                op(PatchAction::Update, "a.txt", Some("changed"), None),
                op(PatchAction::Delete, "b.txt", None, None),
                third,
            ];
            let err = patch(&v, &ops).unwrap_err();
            assert_eq!(err.code(), code, "{err}");
            assert!(err.to_string().contains("operation 3"), "{err}");
            assert!(err.to_string().contains("nothing was changed"), "{err}");
            assert_eq!(snapshot(dir.path()), before);
        }
    }

    #[test]
    fn a_failure_while_applying_rolls_every_step_back() {
        let (dir, v) = setup();
        let before = snapshot(dir.path());
        // Passes the checks (the path is inside the root and free) but the kernel refuses a
        // name longer than NAME_MAX when the third step runs.
        let too_long = format!("deep/{}", "x".repeat(300));
        let ops = [
            op(PatchAction::Update, "a.txt", Some("changed"), None),
            op(PatchAction::Delete, "b.txt", None, None),
            op(PatchAction::Move, "c.txt", None, Some("sub/c.txt")),
            op(PatchAction::Add, &too_long, Some("x"), None),
        ];
        let err = patch(&v, &ops).unwrap_err();
        assert_eq!(err.code(), "IO_ERROR", "{err}");
        let message = err.to_string();
        assert!(message.contains("operation 4"), "{message}");
        assert!(
            message.contains("operations 1-3 were undone; every file is as it was"),
            "{message}"
        );
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn symlinks_pointing_outside_are_refused_as_sources_and_targets() {
        let (dir, v) = setup();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        symlink(outside.path().join("new"), dir.path().join("dangling")).unwrap();
        symlink(outside.path(), dir.path().join("outdir")).unwrap();
        for bad in [
            op(PatchAction::Update, "leak", Some("x"), None),
            op(PatchAction::Delete, "leak", None, None),
            op(PatchAction::Add, "dangling", Some("x"), None),
            op(PatchAction::Add, "outdir/new", Some("x"), None),
            op(PatchAction::Move, "a.txt", None, Some("dangling")),
            op(PatchAction::Move, "a.txt", None, Some("/tmp/escaped")),
        ] {
            let err = patch(&v, &[bad]).unwrap_err();
            assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{err}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert!(!outside.path().join("new").exists());
        assert!(dir.path().join("a.txt").exists());
    }

    #[test]
    fn empty_patches_and_stray_fields_are_invalid() {
        let (_dir, v) = setup();
        assert_eq!(patch(&v, &[]).unwrap_err().code(), "INVALID_INPUT");
        let stray = op(PatchAction::Update, "a.txt", Some("x"), Some("b.txt"));
        assert_eq!(patch(&v, &[stray]).unwrap_err().code(), "INVALID_INPUT");
        let no_target = op(PatchAction::Move, "a.txt", None, None);
        assert_eq!(patch(&v, &[no_target]).unwrap_err().code(), "INVALID_INPUT");
    }
}
