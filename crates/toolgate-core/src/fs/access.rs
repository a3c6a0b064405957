//! Path rules applied to file-tool calls: what a call needs before it runs (for the SDK's
//! per-call `needsApproval`), and what it may touch and show while it runs.
//!
//! A path is judged where it lands (symlinks and `..` resolved, relative to the work directory)
//! and as it is written (lexically normalised); the stricter wins, so neither a symlink named
//! `notes` pointing at `.env` nor a symlink named `.env` pointing elsewhere gets past a rule.
//!
//! How a rule combines with the tool's own approval ([`ToolApproval`]): a matching rule takes
//! the place of the defaults (the toolset's `approval.default` and the tool's documented
//! default), so `src/**: preApproved` pre-approves writes in `src/`; it never goes below the
//! tool's explicit `approval.tools` entry, the worker-level approval or the callers' floor
//! ([`Resolved::path_floor`](crate::approval::Resolved)). A tool that is blocked is not
//! offered, whatever the rules say. Rules of the workers above (handed down to a called
//! worker) only ever make a call stricter. A path no rule matches keeps the tool's decision.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::guards::{BlockedPaths, FileGuards};
use super::rules::{EntryKind, PathRule, PathRules, RuleRef};
use crate::approval::{Decision, Resolved};
use crate::error::{Error, Result};
use crate::limits::MAX_PATCH_OPERATIONS;
use crate::path::PathValidator;

/// The path rules of one file toolset in one work directory, and those handed down by the
/// workers that call it.
#[derive(Debug)]
pub struct PathGate {
    root: PathBuf,
    own: Option<Arc<PathRules>>,
    inherited: Vec<InheritedRules>,
    /// Protected paths and the identities of hidden and protected files (see `fs::guards`).
    guards: Option<Arc<FileGuards>>,
}

/// The rules of a calling worker, with the work directory they are relative to.
#[derive(Debug, Clone)]
pub struct InheritedRules {
    pub root: PathBuf,
    pub rules: Arc<PathRules>,
}

impl InheritedRules {
    /// Compiles a calling worker's `rules` for its work directory `root`; `place` names the list
    /// in messages. `CONFIG_INVALID` names a bad rule.
    pub fn new(root: &Path, rules: &[PathRule], place: &str) -> Result<InheritedRules> {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let rules = Arc::new(PathRules::new(rules, place, ignores_case(&root))?);
        Ok(InheritedRules { root, rules })
    }
}

/// The rules that decide one path: this toolset's and the strictest of the callers'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathVerdict {
    pub own: Option<RuleRef>,
    pub inherited: Option<RuleRef>,
}

impl PathVerdict {
    /// The rule that blocks the path, if one does.
    pub fn blocking(&self) -> Option<&RuleRef> {
        [self.own.as_ref(), self.inherited.as_ref()]
            .into_iter()
            .flatten()
            .find(|rule| rule.approval == Decision::Blocked)
    }
}

impl BlockedPaths for PathGate {
    /// Whether the entry at `absolute` is blocked, for a walk from the work directory that
    /// enters only directories this returned `false` for (see [`PathRules::blocks_in_walk`]).
    fn blocks_in_walk(&self, absolute: &Path, kind: EntryKind) -> bool {
        let own = self.own.as_ref().is_some_and(|rules| {
            absolute
                .strip_prefix(&self.root)
                .is_ok_and(|relative| rules.blocks_in_walk(relative, kind))
        });
        // The callers' rules are relative to their own work directories, above this walk's
        // start: each entry is judged in full.
        own || self.inherited.iter().any(|above| {
            absolute.strip_prefix(&above.root).is_ok_and(|relative| {
                above
                    .rules
                    .decide(relative, kind)
                    .is_some_and(|rule| rule.approval == Decision::Blocked)
            })
        })
    }

    /// Whether a rule of this toolset or of a calling worker is `blocked`.
    fn has_blocking_rules(&self) -> bool {
        self.own.as_ref().is_some_and(|rules| rules.has_blocked())
            || self.inherited.iter().any(|above| above.rules.has_blocked())
    }

    fn blocking_rule(&self, absolute: &Path, kind: EntryKind) -> Option<String> {
        self.judge(absolute, kind)
            .blocking()
            .map(|rule| rule.describe())
    }
}

impl PathGate {
    /// Compiles `rules` for the work directory `root`; `place` names the list in messages
    /// (`code_agent approval.paths`). Patterns ignore case when the work directory's file system
    /// does. `CONFIG_INVALID` names a bad rule.
    pub fn new(root: &Path, rules: &[PathRule], place: &str) -> Result<PathGate> {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let own = if rules.is_empty() {
            None
        } else {
            Some(Arc::new(PathRules::new(rules, place, ignores_case(&root))?))
        };
        Ok(PathGate {
            root,
            own,
            inherited: Vec::new(),
            guards: None,
        })
    }

    /// Adds what the file tools refuse besides the rules: protected paths, and files that are
    /// the same file as a hidden or protected one.
    pub fn with_guards(mut self, guards: FileGuards) -> PathGate {
        self.guards = (!guards.is_empty()).then(|| Arc::new(guards));
        self
    }

    /// The guards, when there are some.
    pub(crate) fn guards(&self) -> Option<&FileGuards> {
        self.guards.as_deref()
    }

    /// The canonical work directory the rules are relative to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Adds the rules handed down by the calling workers.
    pub fn with_inherited(mut self, inherited: Vec<InheritedRules>) -> PathGate {
        self.inherited = inherited;
        self
    }

    /// Whether no rule applies at all (then calls are decided per tool, as without rules).
    pub fn is_empty(&self) -> bool {
        self.own.is_none() && self.inherited.is_empty() && self.guards.is_none()
    }

    /// The rules deciding `absolute` (a resolved path inside the work directory).
    pub fn judge(&self, absolute: &Path, kind: EntryKind) -> PathVerdict {
        let own = self.own.as_ref().and_then(|rules| {
            let relative = absolute.strip_prefix(&self.root).ok()?;
            rules.decide(relative, kind)
        });
        let inherited = self
            .inherited
            .iter()
            .filter_map(|above| {
                let relative = absolute.strip_prefix(&above.root).ok()?;
                above.rules.decide(relative, kind)
            })
            .max_by_key(|rule| rule.approval);
        PathVerdict { own, inherited }
    }

    /// What protection asks of a call that changes `absolute`: `None` when it is not
    /// protected; `blocked` (by `protected`) when no explicit rule of this toolset names it;
    /// else the rule's decision, at least `ask`. Also returns the protected path and why.
    fn judge_change(
        &self,
        tool: ToolApproval,
        absolute: &Path,
    ) -> Option<(CallDecision, PathBuf, String)> {
        let (path, reason) = self.guards.as_ref()?.protection_of(absolute)?.clone();
        let explicit = self.own.as_ref().and_then(|rules| {
            let relative = absolute.strip_prefix(&self.root).ok()?;
            rules.decide_explicit(relative, kind_of(absolute))
        });
        let decided = match explicit {
            None => CallDecision {
                decision: Decision::Blocked,
                by: DecidedBy::Protected,
                rule: None,
                path: None,
            },
            Some(rule) => {
                let mut decided = tool.decide(&PathVerdict {
                    own: Some(rule),
                    inherited: None,
                });
                decided.decision = decided.decision.max(Decision::Ask);
                decided
            }
        };
        Some((decided, path, reason))
    }

    /// Judges `spelled`, a path a call names that resolved to `absolute`, both where it lands
    /// and as written; the stricter of the two decides.
    fn judge_spelled(
        &self,
        root: &Path,
        tool: ToolApproval,
        spelled: &str,
        absolute: &Path,
    ) -> CallDecision {
        let landed = tool.decide(&self.judge(absolute, kind_of(absolute)));
        let written = lexical(root, spelled)
            .filter(|lexical| lexical != absolute)
            .map(|lexical| tool.decide(&self.judge(&lexical, kind_of(&lexical))));
        match written {
            Some(written) if written.decision > landed.decision => written,
            _ => landed,
        }
    }
}

/// The approval of one file tool, as the core decided it, for combining with path rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolApproval {
    /// The tool's decision for paths no rule matches.
    pub decision: Decision,
    /// What no rule can go below (see the module documentation).
    pub path_floor: Option<Decision>,
}

impl From<&Resolved> for ToolApproval {
    fn from(resolved: &Resolved) -> Self {
        ToolApproval {
            decision: resolved.decision,
            path_floor: resolved.path_floor,
        }
    }
}

/// What decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// No rule matched: the tool's own approval.
    Tool,
    /// A rule of this toolset.
    Rule,
    /// A rule of this toolset matched, but the tool's floor is stricter.
    Floor,
    /// A rule of a calling worker.
    CallerRule,
    /// The path is protected configuration (see `fs::guards`).
    Protected,
}

impl DecidedBy {
    /// The spelling used in TypeScript and `toolgate check`.
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Tool => "tool",
            DecidedBy::Rule => "rule",
            DecidedBy::Floor => "floor",
            DecidedBy::CallerRule => "caller-rule",
            DecidedBy::Protected => "protected",
        }
    }
}

/// The decision for one call (or one path of it) and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDecision {
    pub decision: Decision,
    pub by: DecidedBy,
    /// The rule that matched (for `Rule`, `Floor` and `CallerRule`).
    pub rule: Option<RuleRef>,
    /// The path that decided, relative to the work directory (`None` when the call names none
    /// that resolves).
    pub path: Option<String>,
}

impl ToolApproval {
    /// The decision for a path with `verdict`.
    pub fn decide(self, verdict: &PathVerdict) -> CallDecision {
        let mut decided = match &verdict.own {
            None => CallDecision {
                decision: self.decision,
                by: DecidedBy::Tool,
                rule: None,
                path: None,
            },
            Some(rule) => {
                let floor = self.path_floor.unwrap_or(Decision::PreApproved);
                CallDecision {
                    decision: rule.approval.max(floor),
                    by: if floor > rule.approval {
                        DecidedBy::Floor
                    } else {
                        DecidedBy::Rule
                    },
                    rule: Some(rule.clone()),
                    path: None,
                }
            }
        };
        if let Some(rule) = &verdict.inherited {
            if rule.approval > decided.decision {
                decided = CallDecision {
                    decision: rule.approval,
                    by: DecidedBy::CallerRule,
                    rule: Some(rule.clone()),
                    path: None,
                };
            }
        }
        decided
    }
}

/// The path rules of one call: the gate, the tool's approval and, when the SDK knows it, the
/// decision the call was approved at (a path whose decision rose since is refused).
#[derive(Debug, Clone)]
pub struct CallGate {
    pub gate: Arc<PathGate>,
    pub tool: ToolApproval,
    pub approved: Option<Decision>,
}

/// What a file operation may touch: the work directory, and the path rules when its toolset
/// has some. A bare [`PathValidator`] converts into an `Access` without rules.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    validator: &'a PathValidator,
    gate: Option<&'a CallGate>,
}

impl<'a> From<&'a PathValidator> for Access<'a> {
    fn from(validator: &'a PathValidator) -> Self {
        Access {
            validator,
            gate: None,
        }
    }
}

impl<'a> Access<'a> {
    /// Access to `validator`'s work directory under `gate`'s rules (none when `None`).
    pub fn new(validator: &'a PathValidator, gate: Option<&'a CallGate>) -> Self {
        Access {
            validator,
            gate: gate.filter(|gate| !gate.gate.is_empty()),
        }
    }

    /// The work directory's validator.
    pub fn validator(&self) -> &'a PathValidator {
        self.validator
    }

    /// Resolves `spelled`, a path the call names, and refuses it when a rule blocks it
    /// (`PATH_BLOCKED`, the same message whether it exists or not) or when its decision is
    /// stricter than what the call was approved at. Returns the resolved path and the
    /// decision the call needs for it.
    pub(crate) fn target(&self, spelled: &str) -> Result<(PathBuf, Decision)> {
        let absolute = self.validator.resolve(spelled)?;
        let Some(gate) = self.gate else {
            return Ok((absolute, Decision::PreApproved));
        };
        let decided = gate
            .gate
            .judge_spelled(self.validator.root(), gate.tool, spelled, &absolute);
        if decided.decision == Decision::Blocked {
            return Err(blocked(spelled, &decided));
        }
        check_approved(gate, spelled, &decided)?;
        if let Some(guards) = gate.gate.guards() {
            guards.check_path(spelled, &absolute, false)?;
        }
        Ok((absolute, decided.decision))
    }

    /// [`target`](Self::target) for a call that changes the path (writes, edits, patches,
    /// deletes): a protected path is refused (`PATH_BLOCKED`, rule `protected`) unless an
    /// explicit rule of the toolset names it, and then needs at least `ask`; so is a file that
    /// is the same file as a protected one.
    pub(crate) fn target_to_change(&self, spelled: &str) -> Result<(PathBuf, Decision)> {
        let (absolute, decision) = self.target(spelled)?;
        let Some(gate) = self.gate else {
            return Ok((absolute, decision));
        };
        let Some(guards) = gate.gate.guards() else {
            return Ok((absolute, decision));
        };
        let mut decision = decision;
        if let Some((decided, path, reason)) = gate.gate.judge_change(gate.tool, &absolute) {
            if decided.by == DecidedBy::Protected {
                return Err(guards.protected_error(spelled, &path, &reason));
            }
            check_approved(gate, spelled, &decided)?;
            decision = decision.max(decided.decision);
        }
        guards.check_path(spelled, &absolute, true)?;
        Ok((absolute, decision))
    }

    /// The guards of the call, when its toolset has some.
    pub(crate) fn guards(&self) -> Option<&'a FileGuards> {
        self.gate.and_then(|gate| gate.gate.guards())
    }

    /// What a walk below a target decided at `level` may show, or `None` without rules.
    pub(crate) fn walk_filter(&self, level: Decision) -> Option<WalkFilter> {
        self.gate.map(|gate| WalkFilter {
            gate: Arc::clone(&gate.gate),
            tool: gate.tool,
            level,
        })
    }
}

/// `APPROVAL_DENIED` when the call was approved at a lower decision than `decided`.
fn check_approved(gate: &CallGate, spelled: &str, decided: &CallDecision) -> Result<()> {
    match gate.approved {
        Some(approved) if decided.decision > approved => Err(Error::ApprovalDenied(format!(
            "'{spelled}' needs '{}' ({}) but the call was approved as '{}': the path changed after the call was approved. Call the tool again",
            decided.decision.as_str(),
            describe(decided),
            approved.as_str()
        ))),
        _ => Ok(()),
    }
}

/// The `PATH_BLOCKED` refusal of `spelled`.
fn blocked(spelled: &str, decided: &CallDecision) -> Error {
    Error::PathBlocked(format!(
        "'{spelled}' is blocked by the path rule {}; file tools may not read, write, list or search it. Change or remove that rule to allow it",
        describe(decided)
    ))
}

fn describe(decided: &CallDecision) -> String {
    match (&decided.rule, decided.by) {
        (Some(rule), DecidedBy::CallerRule) => format!("{} of a calling worker", rule.describe()),
        (Some(rule), DecidedBy::Floor) => {
            format!("{}, raised by the tool's own approval", rule.describe())
        }
        (Some(rule), _) => rule.describe(),
        (None, DecidedBy::Protected) => "protected configuration".into(),
        (None, _) => "of the tool's own approval".into(),
    }
}

/// Decides what entries a walk shows: blocked paths never (nor symlinks leading to one), and a
/// search reads no file whose decision is stricter than the call's.
#[derive(Debug, Clone)]
pub(crate) struct WalkFilter {
    gate: Arc<PathGate>,
    tool: ToolApproval,
    level: Decision,
}

impl WalkFilter {
    /// Whether the entry at `absolute` (as the walk found it, not followed) is blocked.
    pub fn is_blocked(&self, absolute: &Path, is_dir: bool, is_symlink: bool) -> bool {
        let kind = match (is_symlink, is_dir) {
            (true, _) => EntryKind::Unknown,
            (false, true) => EntryKind::Dir,
            (false, false) => EntryKind::File,
        };
        self.gate.judge(absolute, kind).blocking().is_some()
    }

    /// Whether the regular file at `absolute` with inode `ino` (as the walk found it) is the
    /// same file as a hidden one under another name.
    pub fn hides_file(&self, absolute: &Path, ino: u64) -> bool {
        self.gate
            .guards()
            .is_some_and(|guards| guards.hides_file(absolute, ino))
    }

    /// Whether the open file `file`, found at `absolute`, is the same file as a hidden one
    /// under another name.
    pub fn hides_open(&self, absolute: &Path, file: &std::fs::File) -> bool {
        let Some(guards) = self.gate.guards() else {
            return false;
        };
        file.metadata()
            .is_ok_and(|meta| guards.check_identity("", absolute, &meta, false).is_err())
    }

    /// Whether the resolved target of a symlink is blocked, or is the same file as a hidden one.
    pub fn target_blocked(&self, target: &Path) -> bool {
        self.gate
            .judge(target, kind_of(target))
            .blocking()
            .is_some()
            || self
                .gate
                .guards()
                .is_some_and(|guards| guards.check_path("", target, false).is_err())
    }

    /// The rule that keeps a search from reading the file at `absolute` without approval, when
    /// its decision is stricter than the call's.
    pub fn held_back(&self, absolute: &Path) -> Option<CallDecision> {
        let decided = self
            .tool
            .decide(&self.gate.judge(absolute, EntryKind::File));
        (decided.decision > self.level).then_some(decided)
    }
}

/// Files a search left out because they need approval: how many, and the rules.
#[derive(Debug, Default)]
pub(crate) struct HeldBack {
    pub count: usize,
    pub rules: Vec<String>,
}

impl HeldBack {
    pub fn add(&mut self, decided: &CallDecision) {
        self.count += 1;
        let rule = decided
            .rule
            .as_ref()
            .map(|rule| format!("'{}'", rule.pattern))
            .unwrap_or_else(|| "the tool's approval".into());
        if !self.rules.contains(&rule) && self.rules.len() < 5 {
            self.rules.push(rule);
        }
    }

    /// The line that says so, for the end of the output; `None` when nothing was held back.
    pub fn note(&self) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "[{} not searched: {} approval (path rules {}); search one by naming it as path, which asks for approval]",
                super::text::plural(self.count as u64, "file was", "files were"),
                if self.count == 1 { "it needs" } else { "they need" },
                self.rules.join(", ")
            )
        })
    }
}

/// The paths a call of file tool `tool` with model input `input` names, as written. `None`
/// for a tool that is not a file tool.
pub fn call_paths(tool: &str, input: &Value) -> Option<Vec<String>> {
    let field =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let path_or_root = || vec![field(input, "path").unwrap_or_else(|| ".".into())];
    Some(match tool {
        "read_file" | "file_read" | "write_file" | "file_write" | "file_edit" | "delete_file"
        | "file_exists" | "file_info" => field(input, "path").into_iter().collect(),
        "grep_search" | "directory_tree" => path_or_root(),
        "glob_search" | "list_files" => {
            let mut paths = path_or_root();
            if let Some(prefix) =
                field(input, "pattern").and_then(|p| super::pattern::literal_prefix(&p))
            {
                let base = paths[0].trim_end_matches('/').to_string();
                paths.push(format!("{base}/{}", prefix.display()));
            }
            paths
        }
        "file_patch" => input
            .get("operations")
            .and_then(Value::as_array)
            .map(|operations| {
                // A longer patch is refused before it touches anything; judging more would
                // only cost time.
                operations
                    .iter()
                    .take(MAX_PATCH_OPERATIONS)
                    .flat_map(|op| {
                        [
                            field(op, "path"),
                            field(op, "new_path"),
                            field(op, "newPath"),
                        ]
                    })
                    .flatten()
                    .collect()
            })
            .unwrap_or_default(),
        _ => return None,
    })
}

/// The decision a call of file tool `tool` with model input `input` needs: the strictest over
/// the paths it names (a patch touching `.env` among others is blocked). Paths that do not
/// resolve inside the work directory are left to the call, which fails on them. Never fails
/// for a file tool: it is asked before every call.
pub fn decide_call(
    gate: &PathGate,
    validator: &PathValidator,
    approval: ToolApproval,
    tool: &str,
    input: &Value,
) -> Result<CallDecision> {
    let paths = call_paths(tool, input).ok_or_else(|| {
        Error::InvalidInput(format!(
            "'{tool}' is not a file tool; path rules decide read_file, list_files, file_exists, file_info, write_file, delete_file, grep_search, glob_search, directory_tree, file_read, file_write, file_edit and file_patch"
        ))
    })?;
    let mut decided = CallDecision {
        decision: approval.decision,
        by: DecidedBy::Tool,
        rule: None,
        path: None,
    };
    let changes = changes_files(tool);
    for spelled in paths {
        let Ok(absolute) = validator.resolve(&spelled) else {
            continue;
        };
        let mut here = gate.judge_spelled(validator.root(), approval, &spelled, &absolute);
        if changes {
            if let Some((protected, _, _)) = gate.judge_change(approval, &absolute) {
                if protected.decision > here.decision {
                    here = protected;
                }
            }
        }
        here.path = Some(validator.relative(&absolute).display().to_string());
        if decided.path.is_none() || here.decision > decided.decision {
            decided = here;
        }
    }
    Ok(decided)
}

/// Whether file tool `tool` changes the files it names (protected paths refuse it).
fn changes_files(tool: &str) -> bool {
    matches!(
        tool,
        "write_file" | "file_write" | "file_edit" | "file_patch" | "delete_file"
    )
}

/// What is at `absolute`, not following a final symlink; `Unknown` when nothing is.
fn kind_of(absolute: &Path) -> EntryKind {
    match std::fs::symlink_metadata(absolute) {
        Ok(meta) if meta.is_dir() => EntryKind::Dir,
        Ok(meta) if meta.is_file() => EntryKind::File,
        _ => EntryKind::Unknown,
    }
}

/// `spelled` normalised without touching the file system (`./a/../.env` is `<root>/.env`), or
/// `None` when it leaves the work directory that way.
fn lexical(root: &Path, spelled: &str) -> Option<PathBuf> {
    let path = Path::new(spelled);
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut normal = root.to_path_buf();
    let depth = root.components().count();
    for component in relative.components() {
        match component {
            Component::Normal(name) => normal.push(name),
            Component::ParentDir => {
                if normal.components().count() <= depth {
                    return None;
                }
                normal.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(normal)
}

/// Whether the file system of `root` ignores case: a name inside it (or its own name) with
/// its letters' case swapped leads to the same file.
fn ignores_case(root: &Path) -> bool {
    let same =
        |a: &Path, b: &Path| match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
    let swapped = |name: &str| -> Option<String> {
        name.chars().any(|c| c.is_ascii_alphabetic()).then(|| {
            name.chars()
                .map(|c| {
                    if c.is_ascii_uppercase() {
                        c.to_ascii_lowercase()
                    } else {
                        c.to_ascii_uppercase()
                    }
                })
                .collect()
        })
    };
    let inside = std::fs::read_dir(root).ok().and_then(|entries| {
        entries
            .filter_map(|entry| entry.ok())
            .find_map(|entry| Some((entry.path(), swapped(entry.file_name().to_str()?)?)))
    });
    if let Some((path, other)) = inside {
        return same(&path, &root.join(other));
    }
    match (
        root.parent(),
        root.file_name().and_then(|n| n.to_str()).and_then(swapped),
    ) {
        (Some(parent), Some(other)) => same(root, &parent.join(other)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
