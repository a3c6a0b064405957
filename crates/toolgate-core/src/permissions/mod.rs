//! The project permissions file, `toolgate.permissions.yaml`: approvals a person chose to keep.
//!
//! "Always" lasts one run. Answering **save** instead writes the scope shown to the person as a
//! rule in this file, in the folder of the top-level worker file, and every later run of a
//! worker planned from that folder reads it: a call a rule covers runs without asking.
//!
//! A rule only answers a question that would otherwise be asked: it never lifts a `blocked`
//! (a tool, a shell rule, a path rule, a caller's restriction — those are refused before any
//! question), so the strictest decision still wins. What each rule covers:
//!
//! - `command: git status` (the `shell` and `cli_execute` tools): exactly these words;
//!   `prefix: npm run` (written by hand): every command starting with these words;
//! - `path: notes/todo.md` (file tools): calls of that tool on that path, whatever else their
//!   input says; the path as written, relative to the work directory, without `..`;
//! - `input: {…}` (any other tool): exactly this input;
//! - `host: api.example.com:443` (`tool: network`): a network allow entry for that host.
//!
//! The file is read strictly, like a worker file (`CONFIG_INVALID` with `file:line:column`). It
//! is written under a lock on its folder (two processes saving at once both land) and replaced
//! atomically; it is protected configuration: no tool the agent runs may write it.
//!
//! A save never launders content toolgate did not write. A sandboxed process may create the
//! file while it does not exist (the check after the call removes it, unless toolgate wrote
//! it: see [`crate::sandbox::note_host_write`]); had a save merged such a file, its rules would
//! have become toolgate's own write and been kept. So a save merges the file on disk only when
//! it is what this plan read when it was loaded (the same bytes, or still missing), or exactly
//! what toolgate itself last wrote there (the same file — device, inode, change time, size — and
//! bytes; recorded in this process and, for other toolgate processes saving at once, in a
//! directory private to the user that sandboxed processes cannot see, see [`WriteRecords`]).
//! Anything else — a file that appeared, other bytes, a symlink or hard link to another file —
//! fails the save with `CONFIG_INVALID` naming the file, and the file is left as it is.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::command::split_command;
use crate::error::{Error, Result};
use crate::limits::{
    MAX_COMMAND_BYTES, MAX_PERMISSIONS_FILE_BYTES, MAX_REVIEW_BYTES, MAX_SAVED_RULES,
    PERMISSIONS_FILE_NAME, PERMISSIONS_LOCK_WAIT_MS,
};
use crate::network::{Host, Rule as NetworkRule};
use crate::run::always::display_words;
use crate::run::canonical_json;
use crate::run::crypto::sha256_hex;
use crate::run::review::{inline, review_input};

#[cfg(test)]
mod tests;

/// The version of the file layout this core reads and writes.
pub const PERMISSIONS_VERSION: u32 = 1;

/// Longest worker or tool name a rule may give.
const MAX_NAME_CHARS: usize = 256;

/// Who saved a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SavedBy {
    /// `[s]ave` at the terminal prompt (`toolgate run`, `toolgate mcp serve` on a terminal).
    Terminal,
    /// A deferred run's answer (`toolgate resume --answers <id>=save`, `resumeWorker`).
    DeferredAnswer,
    /// An MCP client's user, through elicitation (`toolgate mcp serve`).
    McpElicitation,
    /// An `onApproval` handler in code that answered `'save'`.
    ApprovalHandler,
}

impl SavedBy {
    /// Every source, in documentation order.
    pub const ALL: [SavedBy; 4] = [
        SavedBy::Terminal,
        SavedBy::DeferredAnswer,
        SavedBy::McpElicitation,
        SavedBy::ApprovalHandler,
    ];

    /// The spelling of the file and of JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            SavedBy::Terminal => "terminal",
            SavedBy::DeferredAnswer => "deferred-answer",
            SavedBy::McpElicitation => "mcp-elicitation",
            SavedBy::ApprovalHandler => "approval-handler",
        }
    }

    /// Reads a spelling of [`SavedBy::as_str`].
    pub fn parse(text: &str) -> Result<SavedBy> {
        SavedBy::ALL
            .into_iter()
            .find(|by| by.as_str() == text)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "'{}' is not who saves a rule; use one of {}",
                    inline(text, 40),
                    SavedBy::ALL.map(SavedBy::as_str).join(", ")
                ))
            })
    }
}

/// What kind of tool a call is for, as far as saving it goes (the plan knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// `shell`, `cli_execute`: saved as the command's words.
    Command,
    /// A file tool (`filesystem`, `code_agent`): saved as its path.
    File,
    /// A network approval request (`toolName: 'network'`, input `{ host, port }`): saved as a
    /// network allow entry.
    Network,
    /// Anything else: saved as exactly its input.
    Other,
}

/// What a saved rule covers.
#[derive(Debug, Clone, PartialEq)]
pub enum SavedScope {
    /// Exactly these command words.
    Command(Vec<String>),
    /// Commands starting with these words (written by hand).
    Prefix(Vec<String>),
    /// Calls of a file tool on this path (relative to the work directory, normalised).
    Path(String),
    /// Exactly this input.
    Input(Value),
    /// A network allow entry (`host`, `host:port`, `*.host`, an address or range).
    Host { entry: String, rule: NetworkRule },
}

impl SavedScope {
    /// The scope saving a call would write: `None` when the call cannot be saved (a command
    /// that does not split, a network request without a host and port).
    pub fn for_call(
        kind: ToolKind,
        input: &Value,
        argv: Option<&[String]>,
        work_dir: &Path,
    ) -> Option<SavedScope> {
        match kind {
            ToolKind::Command => argv
                .filter(|words| !words.is_empty())
                .map(|words| SavedScope::Command(words.to_vec())),
            ToolKind::File => Some(
                input_path(input, work_dir)
                    .map(SavedScope::Path)
                    .unwrap_or_else(|| SavedScope::Input(input.clone())),
            ),
            ToolKind::Network => {
                let host = input.get("host")?.as_str()?;
                let port = u16::try_from(input.get("port")?.as_u64()?).ok()?;
                let host = Host::parse(host).ok()?;
                let entry = host.with_port(port);
                let rule = NetworkRule::parse(&entry).ok()?;
                Some(SavedScope::Host { entry, rule })
            }
            ToolKind::Other => Some(SavedScope::Input(input.clone())),
        }
    }

    /// Whether a call with `input` (and, for command tools, the words `argv`) is covered.
    fn covers(&self, input: &Value, argv: Option<&[String]>, work_dir: &Path) -> bool {
        match self {
            SavedScope::Command(words) => argv.is_some_and(|argv| argv == words.as_slice()),
            SavedScope::Prefix(words) => {
                !words.is_empty() && argv.is_some_and(|argv| argv.starts_with(words))
            }
            SavedScope::Path(path) => {
                input_path(input, work_dir).is_some_and(|p| &p == path)
                    && lands_where_named(work_dir, Path::new(path))
            }
            SavedScope::Input(saved) => canonical_json(saved) == canonical_json(input),
            SavedScope::Host { rule, .. } => {
                let host = input.get("host").and_then(Value::as_str);
                let port = input
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|port| u16::try_from(port).ok());
                match (host.map(Host::parse), port) {
                    (Some(Ok(host)), Some(port)) => rule.matches(&host, port),
                    _ => false,
                }
            }
        }
    }

    /// The key and value as the file writes them.
    fn entry_value(&self) -> (&'static str, Value) {
        match self {
            SavedScope::Command(words) => ("command", Value::String(display_words(words))),
            SavedScope::Prefix(words) => ("prefix", Value::String(display_words(words))),
            SavedScope::Path(path) => ("path", Value::String(path.clone())),
            SavedScope::Input(input) => ("input", input.clone()),
            SavedScope::Host { entry, .. } => ("host", Value::String(entry.clone())),
        }
    }

    /// The rule in words, for people (`shell command exactly: git status`).
    pub fn describe(&self, tool: &str) -> String {
        let tool = inline(tool, 80);
        match self {
            SavedScope::Command(words) => {
                format!(
                    "{tool} command exactly: {}",
                    inline(&display_words(words), 300)
                )
            }
            SavedScope::Prefix(words) => format!(
                "{tool} commands starting with: {}",
                inline(&display_words(words), 300)
            ),
            SavedScope::Path(path) => format!(
                "{tool} on the path {}, whatever else its input says",
                inline(path, 300)
            ),
            SavedScope::Input(input) => {
                let review = review_input(input);
                format!(
                    "{tool} with exactly this input ({} bytes, sha256 {}…)",
                    review.input_bytes,
                    &review.input_sha256[..16]
                )
            }
            SavedScope::Host { entry, .. } => {
                format!("network allow entry {}", inline(entry, 300))
            }
        }
    }
}

/// The normalised `path` of a file tool's input, relative to the work directory: `None` when
/// there is none, it leaves the work directory, or it goes through `..` (which a symlink could
/// send elsewhere: such a call is saved as its exact input instead).
fn input_path(input: &Value, work_dir: &Path) -> Option<String> {
    let given = input.get("path")?.as_str()?;
    normal_path(given, work_dir)
}

/// Whether `relative` (below `work_dir`) names the file a call would reach there: no symlink on
/// the way or at its end. A saved rule for `notes/todo.md` approves writing that file, not
/// what a symlink by that name (made by a process since) leads to.
fn lands_where_named(work_dir: &Path, relative: &Path) -> bool {
    let Ok(real_work_dir) = std::fs::canonicalize(work_dir) else {
        return true; // nothing on disk to lead elsewhere
    };
    // The deepest part of the path that exists (the file itself when it does).
    let mut existing = relative.to_path_buf();
    while !existing.as_os_str().is_empty() && work_dir.join(&existing).symlink_metadata().is_err() {
        existing.pop();
    }
    std::fs::canonicalize(work_dir.join(&existing))
        .is_ok_and(|real| real == real_work_dir.join(&existing))
}

fn normal_path(given: &str, work_dir: &Path) -> Option<String> {
    if given.is_empty() || given.len() > MAX_COMMAND_BYTES {
        return None;
    }
    let path = Path::new(given);
    let relative = if path.is_absolute() {
        path.strip_prefix(work_dir).ok()?
    } else {
        path
    };
    let mut parts: Vec<&str> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    })
}

/// One saved rule, with where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedRule {
    /// The worker it applies to (by name).
    pub worker: String,
    /// The tool it applies to.
    pub tool: String,
    pub scope: SavedScope,
    /// When it was saved (RFC 3339, UTC).
    pub saved: String,
    pub by: SavedBy,
    /// The line of the file where the rule starts (from 1).
    pub line: usize,
}

impl SavedRule {
    /// Whether this rule covers a call of `tool` by `worker`.
    pub fn covers(
        &self,
        worker: &str,
        tool: &str,
        input: &Value,
        argv: Option<&[String]>,
        work_dir: &Path,
    ) -> bool {
        self.worker == worker && self.tool == tool && self.scope.covers(input, argv, work_dir)
    }

    /// The rule in words, with its worker (`worker repo-helper: shell command exactly: …`).
    pub fn describe(&self) -> String {
        format!(
            "worker {}: {}",
            inline(&self.worker, 80),
            self.scope.describe(&self.tool)
        )
    }

    /// The rule as data for the SDK and `toolgate check`: what it covers, where it is written,
    /// when and by whom it was saved.
    pub fn to_json(&self, file: &Path) -> Value {
        let (key, value) = self.scope.entry_value();
        serde_json::json!({
            "worker": self.worker,
            "tool": self.tool,
            "kind": key,
            key: value,
            "rule": self.describe(),
            "saved": self.saved,
            "by": self.by.as_str(),
            "file": file.display().to_string(),
            "line": self.line,
        })
    }
}

/// One entry as written in the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    worker: String,
    tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    saved: String,
    by: SavedBy,
}

/// The whole file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    version: u32,
    #[serde(default)]
    rules: Option<Vec<Entry>>,
}

const HEADER: &str = "# Approvals saved with toolgate's \"save\" answer; every run of a worker in this folder reads\n# them. A rule only answers a question that would be asked: it never lifts a block. Edit or\n# delete entries freely (toolgate/docs/permissions.md). Agents cannot write this file.\n";

/// The permissions file of a folder and the rules it holds.
#[derive(Debug)]
pub struct Permissions {
    path: PathBuf,
    /// The file's path with its folder resolved: the key of toolgate's write records.
    key: PathBuf,
    rules: Mutex<Vec<SavedRule>>,
    /// The content this plan vouches for: what it read when loaded, then what it wrote
    /// (`None`: the file did not exist).
    known: Mutex<Option<String>>,
}

impl Permissions {
    /// Reads `<folder>/toolgate.permissions.yaml`; a folder without one has no rules (the file
    /// is made when the first rule is saved). `CONFIG_INVALID` with `file:line:column` for a
    /// file that does not read.
    pub fn load(folder: &Path) -> Result<Permissions> {
        let path = folder.join(PERMISSIONS_FILE_NAME);
        let key = std::fs::canonicalize(folder)
            .map(|folder| folder.join(PERMISSIONS_FILE_NAME))
            .unwrap_or_else(|_| path.clone());
        let found = read_file(&path)?;
        let rules = match &found {
            Some(file) => parse(&file.text, &path)?,
            None => Vec::new(),
        };
        Ok(Permissions {
            path,
            key,
            rules: Mutex::new(rules),
            known: Mutex::new(found.map(|file| file.sha256)),
        })
    }

    /// The file (it may not exist yet).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules read or saved so far.
    pub fn rules(&self) -> Vec<SavedRule> {
        self.rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The first rule covering a call of `tool` by `worker`, if any.
    pub fn covering(
        &self,
        worker: &str,
        tool: &str,
        input: &Value,
        argv: Option<&[String]>,
        work_dir: &Path,
    ) -> Option<SavedRule> {
        self.rules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|rule| rule.covers(worker, tool, input, argv, work_dir))
            .cloned()
    }

    /// Saves a rule: under a lock on the folder, reads the file again (another process may
    /// have saved since), appends the rule, and replaces the file atomically. Returns the rule
    /// as written (its line and date). A file that no longer reads is `CONFIG_INVALID` and is
    /// left as it is.
    pub fn save(
        &self,
        worker: &str,
        tool: &str,
        scope: SavedScope,
        by: SavedBy,
    ) -> Result<SavedRule> {
        let folder = self.path.parent().unwrap_or(Path::new("/"));
        let _lock = FolderLock::acquire(folder)?;
        let found = read_file(&self.path)?;
        // Only content this plan read or toolgate wrote is merged: anything else may have been
        // planted by a process (and would be kept as toolgate's own write once merged).
        if let Some(file) = &found {
            let known = self
                .known
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if known.as_deref() != Some(file.sha256.as_str())
                && !written_by_toolgate(&self.key, file)
            {
                return Err(changed_since_read(&self.path, known.is_some(), file));
            }
        }
        let existing = found.as_ref().map(|file| file.text.as_str());
        let mut rules = match existing {
            Some(text) => parse(text, &self.path)?,
            None => Vec::new(),
        };
        if rules.len() >= MAX_SAVED_RULES {
            return Err(Error::ConfigInvalid(format!(
                "{} holds {MAX_SAVED_RULES} rules, the most toolgate reads; delete rules you no longer need",
                self.path.display()
            )));
        }
        // Another process may have saved the same rule meanwhile: it is not written twice.
        if let Some(known) = rules
            .iter()
            .find(|rule| rule.worker == worker && rule.tool == tool && rule.scope == scope)
        {
            let known = known.clone();
            *self.rules.lock().unwrap_or_else(PoisonError::into_inner) = rules;
            *self.known.lock().unwrap_or_else(PoisonError::into_inner) =
                found.map(|file| file.sha256);
            return Ok(known);
        }
        let entry = Entry::new(worker, tool, &scope, now_rfc3339(), by);
        let text = appended(existing, &entry, &rules, &self.path)?;
        rules = parse(&text, &self.path)?;
        let saved = rules.last().cloned().ok_or_else(|| {
            Error::Internal("the rule just saved is not in the permissions file".into())
        })?;
        write_atomically(&self.path, &self.key, &text)?;
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(sha256_hex(text.as_bytes()));
        *self.rules.lock().unwrap_or_else(PoisonError::into_inner) = rules;
        Ok(saved)
    }
}

/// The refusal to save into a permissions file that is not what toolgate read or wrote.
fn changed_since_read(path: &Path, existed: bool, file: &FoundFile) -> Error {
    let what = if file.symlink {
        "is now a symlink to a file toolgate did not read or write"
    } else if file.identity.links > 1 {
        "is now a file with other names as well (a hard link) holding content toolgate did not read or write"
    } else if existed {
        "now holds content toolgate did not read or write"
    } else {
        "did not exist when this run read its rules, and appeared since, not written by toolgate"
    };
    Error::ConfigInvalid(format!(
        "{} {what}: toolgate does not save a rule into it, since a process of the agent could have planted it and its rules would become approvals. The file is left as it is and this rule was not saved (the call was approved once). Review the file: if you did not write it, delete it; if you did, the next run reads it as yours and can save again",
        path.display()
    ))
}

impl Entry {
    fn new(worker: &str, tool: &str, scope: &SavedScope, saved: String, by: SavedBy) -> Entry {
        let mut entry = Entry {
            worker: worker.into(),
            tool: tool.into(),
            command: None,
            prefix: None,
            path: None,
            input: None,
            host: None,
            saved,
            by,
        };
        match scope.entry_value() {
            ("command", Value::String(text)) => entry.command = Some(text),
            ("prefix", Value::String(text)) => entry.prefix = Some(text),
            ("path", Value::String(text)) => entry.path = Some(text),
            ("host", Value::String(text)) => entry.host = Some(text),
            (_, value) => entry.input = Some(value),
        }
        entry
    }
}

/// The new text of the file with `entry` appended: below the existing text when that reads
/// back as the old rules plus the new one (comments and layout kept), else the whole file
/// written anew.
fn appended(
    existing: Option<&str>,
    entry: &Entry,
    old: &[SavedRule],
    path: &Path,
) -> Result<String> {
    let item = serde_yaml::to_string(&[entry])
        .map_err(|err| Error::Internal(format!("a saved rule cannot be written as YAML: {err}")))?;
    let item: String = item.lines().map(|line| format!("  {line}\n")).collect();
    if let Some(text) = existing {
        let mut kept = text.to_string();
        if !kept.is_empty() && !kept.ends_with('\n') {
            kept.push('\n');
        }
        kept.push_str(&item);
        if let Ok(rules) = parse(&kept, path) {
            let same_old = rules.len() == old.len() + 1
                && rules.iter().zip(old).all(|(new, old)| {
                    new.scope == old.scope && new.worker == old.worker && new.tool == old.tool
                });
            if same_old {
                return Ok(kept);
            }
        }
    }
    // A new file, or one whose layout does not take an appended item (flow style, `rules`
    // before other keys): written anew from the rules (its comments are not kept).
    let mut text = format!("{HEADER}version: {PERMISSIONS_VERSION}\nrules:\n");
    for rule in old {
        let again = Entry::new(
            &rule.worker,
            &rule.tool,
            &rule.scope,
            rule.saved.clone(),
            rule.by,
        );
        let yaml = serde_yaml::to_string(&[again]).map_err(|err| {
            Error::Internal(format!("a saved rule cannot be written as YAML: {err}"))
        })?;
        text.extend(yaml.lines().map(|line| format!("  {line}\n")));
    }
    text.push_str(&item);
    Ok(text)
}

/// A permissions file as read: its text, the hash of its bytes, and which file it was.
#[derive(Debug)]
struct FoundFile {
    text: String,
    sha256: String,
    identity: Identity,
    /// The path itself is a symlink (the file read is its target).
    symlink: bool,
}

/// Which file a path names, and its state: device, inode, change time (which no process can
/// set), size; and how many names it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
    size: u64,
    links: u64,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
            size: meta.size(),
            links: meta.nlink(),
        }
    }

    /// The same file in the same state (the number of names aside).
    fn same(&self, other: &Identity) -> bool {
        (self.dev, self.ino, self.ctime, self.ctime_nsec, self.size)
            == (
                other.dev,
                other.ino,
                other.ctime,
                other.ctime_nsec,
                other.size,
            )
    }
}

/// Reads the file, or `None` when it does not exist. Larger than the limit, not a regular file
/// (a FIFO is not waited on), or not text: `CONFIG_INVALID`.
fn read_file(path: &Path) -> Result<Option<FoundFile>> {
    let cannot = |err: std::io::Error| {
        Error::ConfigInvalid(format!("{}: cannot be read: {err}", path.display()))
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(cannot(err)),
    };
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(Error::ConfigInvalid(format!(
            "{}: is not a regular file; delete it (toolgate writes the file when a rule is saved)",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    (&file)
        .take(MAX_PERMISSIONS_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() > MAX_PERMISSIONS_FILE_BYTES {
        return Err(Error::ConfigInvalid(format!(
            "{}: larger than {MAX_PERMISSIONS_FILE_BYTES} bytes; delete rules you no longer need",
            path.display()
        )));
    }
    // The identity after reading: a change while reading shows as another change time.
    let identity = Identity::of(&file.metadata().map_err(cannot)?);
    let symlink = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    let sha256 = sha256_hex(&bytes);
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::ConfigInvalid(format!("{}: is not UTF-8 text", path.display())))?;
    Ok(Some(FoundFile {
        text,
        sha256,
        identity,
        symlink,
    }))
}

/// What toolgate last wrote at a permissions file: the file and the hash of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    identity: Identity,
    sha256: String,
}

impl Written {
    fn matches(&self, file: &FoundFile) -> bool {
        self.identity.same(&file.identity) && self.sha256 == file.sha256
    }
}

/// What this process last wrote at each permissions file (by its resolved path).
fn written_here() -> &'static Mutex<HashMap<PathBuf, Written>> {
    static WRITTEN: OnceLock<Mutex<HashMap<PathBuf, Written>>> = OnceLock::new();
    WRITTEN.get_or_init(Default::default)
}

/// Whether `file` is exactly what toolgate — this process or another — last wrote at `key`.
fn written_by_toolgate(key: &Path, file: &FoundFile) -> bool {
    let here = written_here()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(key)
        .is_some_and(|written| written.matches(file));
    here || WriteRecords::open().is_some_and(|records| {
        records
            .read(key)
            .is_some_and(|written| written.matches(file))
    })
}

/// Notes what toolgate just wrote at `key`, for this process and for others.
fn note_written(key: &Path, written: Written) {
    if let Some(records) = WriteRecords::open() {
        records.write(key, &written);
    }
    written_here()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key.to_path_buf(), written);
}

/// What each toolgate process last wrote at each permissions file, so that another toolgate
/// process saving in the same folder meanwhile merges it (two processes saving at once both
/// land): a directory private to the user in the system's temporary directory
/// (`$TMPDIR/toolgate-permissions-<uid>`, mode 0700), one small file per permissions file,
/// written under the folder's lock. Sandboxed processes do not see the host's temporary
/// directory (they get a private one), so they cannot vouch for a file they planted. When the
/// directory cannot be used, only this process's own writes are recognised: another process's
/// save then fails with the changed-file error instead of merging.
struct WriteRecords {
    dir: PathBuf,
}

impl WriteRecords {
    fn open() -> Option<WriteRecords> {
        crate::sandbox::private_user_dir("toolgate-permissions").map(|dir| WriteRecords { dir })
    }

    fn file(&self, key: &Path) -> PathBuf {
        let hash = sha256_hex(key.as_os_str().as_encoded_bytes());
        self.dir.join(&hash[..40])
    }

    fn read(&self, key: &Path) -> Option<Written> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(self.file(key))
            .ok()?;
        let mut text = String::new();
        file.take(4096).read_to_string(&mut text).ok()?;
        let mut fields = text.split_whitespace();
        let mut number = || fields.next()?.parse::<i128>().ok();
        let (dev, ino, ctime, ctime_nsec, size) =
            (number()?, number()?, number()?, number()?, number()?);
        let sha256 = text.split_whitespace().nth(5)?.to_string();
        (sha256.len() == 64).then_some(())?;
        Some(Written {
            identity: Identity {
                dev: u64::try_from(dev).ok()?,
                ino: u64::try_from(ino).ok()?,
                ctime: i64::try_from(ctime).ok()?,
                ctime_nsec: i64::try_from(ctime_nsec).ok()?,
                size: u64::try_from(size).ok()?,
                links: 1,
            },
            sha256,
        })
    }

    fn write(&self, key: &Path, written: &Written) {
        let id = &written.identity;
        let text = format!(
            "{} {} {} {} {} {}\n",
            id.dev, id.ino, id.ctime, id.ctime_nsec, id.size, written.sha256
        );
        let target = self.file(key);
        let Ok(suffix) = crate::run::crypto::random_hex(6) else {
            return;
        };
        let temporary = self.dir.join(format!(".{suffix}.tmp"));
        let done = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .and_then(|()| std::fs::rename(&temporary, &target));
        if done.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

/// Reads the text of a permissions file strictly.
pub fn parse(text: &str, path: &Path) -> Result<Vec<SavedRule>> {
    let source = path.display();
    let model: FileModel = crate::yaml::from_str(text).map_err(|err| {
        let place = err
            .location()
            .map(|(line, column)| format!("{line}:{column}"))
            .unwrap_or_else(|| "1:1".into());
        let message = err.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.as_str(), |index| &message[..index]);
        Error::ConfigInvalid(format!(
            "{source}:{place}: {message}; see toolgate/docs/permissions.md for the accepted shape"
        ))
    })?;
    if model.version != PERMISSIONS_VERSION {
        return Err(Error::ConfigInvalid(format!(
            "{source}:1:1: version {} is not one this toolgate reads; write 'version: {PERMISSIONS_VERSION}'",
            model.version
        )));
    }
    let entries = model.rules.unwrap_or_default();
    if entries.len() > MAX_SAVED_RULES {
        return Err(Error::ConfigInvalid(format!(
            "{source}: holds {} rules, more than the {MAX_SAVED_RULES} toolgate reads; delete rules you no longer need",
            entries.len()
        )));
    }
    let places = crate::yaml::top_sequence_item_places(text);
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let (line, column) = places.get(index).copied().unwrap_or((1, 1));
            entry.check().map(|(scope, saved)| SavedRule {
                worker: entry.worker.clone(),
                tool: entry.tool.clone(),
                scope,
                saved,
                by: entry.by,
                line,
            })
            .map_err(|problem| {
                Error::ConfigInvalid(format!(
                    "{source}:{line}:{column}: rules[{index}]: {problem}; see toolgate/docs/permissions.md"
                ))
            })
        })
        .collect()
}

impl Entry {
    /// The entry's scope and date, or what is wrong with it.
    fn check(&self) -> std::result::Result<(SavedScope, String), String> {
        for (key, value) in [("worker", &self.worker), ("tool", &self.tool)] {
            if value.trim().is_empty() {
                return Err(format!("'{key}' is empty"));
            }
            if value.chars().count() > MAX_NAME_CHARS || value.chars().any(|c| c.is_control()) {
                return Err(format!(
                    "'{key}' is longer than {MAX_NAME_CHARS} characters or holds control characters"
                ));
            }
        }
        let given: Vec<&str> = [
            ("command", self.command.is_some()),
            ("prefix", self.prefix.is_some()),
            ("path", self.path.is_some()),
            ("input", self.input.is_some()),
            ("host", self.host.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, present)| present.then_some(key))
        .collect();
        if given.len() != 1 {
            return Err(format!(
                "a rule gives exactly one of command, prefix, path, input, host; this one gives {}",
                if given.is_empty() {
                    "none".to_string()
                } else {
                    given.join(" and ")
                }
            ));
        }
        let words = |text: &str, key: &str| -> std::result::Result<Vec<String>, String> {
            if text.len() > MAX_COMMAND_BYTES {
                return Err(format!("'{key}' is longer than {MAX_COMMAND_BYTES} bytes"));
            }
            let words = split_command(text)
                .map_err(|err| format!("'{key}' does not split into words: {err}"))?;
            if words.is_empty() {
                return Err(format!(
                    "'{key}' is empty; give the program and its arguments"
                ));
            }
            Ok(words)
        };
        let scope = if let Some(text) = &self.command {
            SavedScope::Command(words(text, "command")?)
        } else if let Some(text) = &self.prefix {
            SavedScope::Prefix(words(text, "prefix")?)
        } else if let Some(text) = &self.path {
            // Relative to the work directory, as written; `..` and absolute paths are refused.
            let normal = normal_path(text, Path::new("/nonexistent-work-dir"))
                .filter(|_| !Path::new(text).is_absolute())
                .ok_or_else(|| {
                    format!(
                        "'path' {} must be relative to the work directory, without '..'",
                        inline(text, 100)
                    )
                })?;
            SavedScope::Path(normal)
        } else if let Some(input) = &self.input {
            if canonical_json(input).len() > MAX_REVIEW_BYTES {
                return Err(format!("'input' is longer than {MAX_REVIEW_BYTES} bytes"));
            }
            SavedScope::Input(input.clone())
        } else {
            let entry = self.host.clone().unwrap_or_default();
            let rule = NetworkRule::parse(&entry)
                .map_err(|err| format!("'host' {}: {err}", inline(&entry, 100)))?;
            SavedScope::Host { entry, rule }
        };
        let saved = self
            .saved
            .parse::<jiff::Timestamp>()
            .map_err(|err| {
                format!(
                    "'saved' {} is not a date and time like 2026-01-31T09:30:00Z: {err}",
                    inline(&self.saved, 60)
                )
            })?
            .to_string();
        Ok((scope, saved))
    }
}

/// Now, to the second, as RFC 3339 in UTC (`2026-01-31T09:30:00Z`).
fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// Replaces `path` with `text`: a temporary file in the same folder, flushed, renamed over it;
/// then notes the file as toolgate's own write (for the check after a call running meanwhile,
/// and for the next save, of this process or another, under `key`).
fn write_atomically(path: &Path, key: &Path, text: &str) -> Result<()> {
    let folder = path.parent().unwrap_or(Path::new("/"));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| PERMISSIONS_FILE_NAME.into());
    let temporary = folder.join(format!(
        ".{name}.{}.tmp",
        crate::run::crypto::random_hex(6)?
    ));
    let io = |source: std::io::Error| Error::Io {
        action: "writing the permissions file",
        path: path.to_path_buf(),
        source,
    };
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        let ours = file.metadata().map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)?;
        // A call running meanwhile sees a protected path appear; it is toolgate's own write.
        crate::sandbox::note_host_write(path);
        // The identity after the rename (which changes the change time), if the path still
        // names the file just written.
        if let Ok(now) = std::fs::symlink_metadata(path) {
            if now.is_file() && (now.dev(), now.ino()) == (ours.dev(), ours.ino()) {
                note_written(
                    key,
                    Written {
                        identity: Identity::of(&now),
                        sha256: sha256_hex(text.as_bytes()),
                    },
                );
            }
        }
        if let Ok(dir) = File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// An exclusive `flock` on a folder, held until dropped. Each acquisition opens the folder
/// anew, so two threads of one process exclude each other like two processes do.
struct FolderLock {
    _folder: File,
}

impl FolderLock {
    fn acquire(folder: &Path) -> Result<FolderLock> {
        use rustix::fs::{flock, FlockOperation};
        let file = File::open(folder).map_err(|source| Error::Io {
            action: "opening the folder to save a rule in",
            path: folder.to_path_buf(),
            source,
        })?;
        let deadline = Instant::now() + Duration::from_millis(PERMISSIONS_LOCK_WAIT_MS);
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(FolderLock { _folder: file }),
                Err(err)
                    if err == rustix::io::Errno::WOULDBLOCK || err == rustix::io::Errno::INTR =>
                {
                    if Instant::now() >= deadline {
                        return Err(Error::ToolFailed(format!(
                            "another process kept {} locked for {PERMISSIONS_LOCK_WAIT_MS} ms while saving a rule; try again",
                            folder.display()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(err) => {
                    return Err(Error::Io {
                        action: "locking the folder to save a rule in",
                        path: folder.to_path_buf(),
                        source: std::io::Error::from(err),
                    })
                }
            }
        }
    }
}
