//! Files a worker hands to the worker it calls (golem-forge's attachments): each path is
//! confined to the caller's work directory (and must lie inside the called worker's), refused
//! when a path rule of the caller's file toolsets blocks it, and held to the called worker's
//! `attachment_policy` (or toolgate's default limits) before a byte is sent to its model.

use std::path::Path;

use super::golem::AttachmentPolicy;
use super::{Worker, WorkerPlan};
use crate::error::{Error, Result};
use crate::fs::access::PathGate;
use crate::fs::rules::EntryKind;
use crate::fs::{read_bytes, FileBytes};
use crate::limits::{
    DEFAULT_MAX_ATTACHMENTS, DEFAULT_MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES,
};
use crate::path::PathValidator;

/// One attached file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The path relative to the caller's work directory.
    pub path: String,
    /// The media type, from the file name's suffix (`application/octet-stream` when unknown).
    pub media_type: &'static str,
    pub bytes: Vec<u8>,
}

/// The limits one call's attachments are held to: the called worker's policy, or the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentLimits {
    pub max_attachments: u64,
    pub max_total_bytes: u64,
    /// Lower-cased; empty allows every suffix not denied.
    pub allowed_suffixes: Vec<String>,
    /// Lower-cased.
    pub denied_suffixes: Vec<String>,
}

impl AttachmentLimits {
    /// The limits of a worker with `policy` (`None`: [`DEFAULT_MAX_ATTACHMENTS`] files of at most
    /// [`DEFAULT_MAX_ATTACHMENT_BYTES`] together, any suffix). A number the policy leaves out
    /// takes its default.
    pub fn of(policy: Option<&AttachmentPolicy>) -> Self {
        let lower = |suffixes: &[String]| suffixes.iter().map(|s| s.to_lowercase()).collect();
        Self {
            max_attachments: policy
                .and_then(|p| p.max_attachments)
                .unwrap_or(DEFAULT_MAX_ATTACHMENTS),
            max_total_bytes: policy
                .and_then(|p| p.max_total_bytes)
                .unwrap_or(DEFAULT_MAX_ATTACHMENT_BYTES),
            allowed_suffixes: policy.map_or_else(Vec::new, |p| lower(&p.allowed_suffixes)),
            denied_suffixes: policy.map_or_else(Vec::new, |p| lower(&p.denied_suffixes)),
        }
    }

    /// Which rule refuses the file `name` by its suffix (case-insensitive), if one does.
    fn refuses_suffix(&self, name: &str, worker: &str) -> Option<Error> {
        let lower = name.to_lowercase();
        if let Some(denied) = self.denied_suffixes.iter().find(|s| lower.ends_with(*s)) {
            return Some(Error::InvalidInput(format!(
                "attachment '{name}' is refused: the worker '{worker}' denies files ending in '{denied}' (attachment_policy.denied_suffixes); attach another kind of file"
            )));
        }
        if !self.allowed_suffixes.is_empty()
            && !self.allowed_suffixes.iter().any(|s| lower.ends_with(s))
        {
            return Some(Error::InvalidInput(format!(
                "attachment '{name}' is refused: the worker '{worker}' accepts only files ending in {} (attachment_policy.allowed_suffixes)",
                self.allowed_suffixes.join(", ")
            )));
        }
        None
    }
}

/// Checks a worker file's `attachment_policy`: the reason when a number is above toolgate's
/// ceiling or a suffix is empty.
pub fn check_policy(policy: &AttachmentPolicy) -> std::result::Result<(), String> {
    if policy.max_attachments.is_some_and(|n| n > MAX_ATTACHMENTS) {
        return Err(format!(
            "attachment_policy.max_attachments may be at most {MAX_ATTACHMENTS}"
        ));
    }
    if policy
        .max_total_bytes
        .is_some_and(|n| n > MAX_ATTACHMENT_BYTES)
    {
        return Err(format!(
            "attachment_policy.max_total_bytes may be at most {MAX_ATTACHMENT_BYTES} (the files are held in memory and sent in one message)"
        ));
    }
    let suffixes = policy
        .allowed_suffixes
        .iter()
        .chain(&policy.denied_suffixes);
    if suffixes.into_iter().any(|s| s.is_empty()) {
        return Err("attachment_policy: a suffix may not be empty; write it like '.pdf'".into());
    }
    Ok(())
}

/// Where one call's attachments come from and what they are held to.
#[derive(Debug)]
pub struct AttachmentSource<'a> {
    /// The calling worker's work directory: paths are relative to it.
    pub caller_dir: &'a Path,
    /// The called worker's work directory, which every file must also be inside.
    pub called_dir: &'a Path,
    /// The called worker's name, for messages.
    pub worker: &'a str,
    pub limits: AttachmentLimits,
    /// The path rules of the caller's file toolsets: a file they block is not attached.
    pub gates: Vec<PathGate>,
}

/// Reads the files `paths` names for one call. `INVALID_INPUT` naming the limit when there are
/// too many, together too large, or a suffix is refused; `PATH_OUTSIDE_ROOT` for a path (or
/// symlink) leading out of either work directory; `PATH_BLOCKED` for a path a rule blocks.
pub fn read_attachments(
    source: &AttachmentSource<'_>,
    paths: &[String],
) -> Result<Vec<Attachment>> {
    let limits = &source.limits;
    let worker = source.worker;
    if paths.len() as u64 > limits.max_attachments {
        return Err(Error::InvalidInput(format!(
            "{} attachments given, but the worker '{worker}' accepts at most {} (attachment_policy.max_attachments); attach fewer files",
            paths.len(),
            limits.max_attachments
        )));
    }
    let caller = PathValidator::new(source.caller_dir)?;
    let called = PathValidator::new(source.called_dir)?;
    let mut attachments = Vec::with_capacity(paths.len());
    let mut total: u64 = 0;
    for path in paths {
        let absolute = caller.resolve(path)?;
        if !absolute.starts_with(called.root()) {
            return Err(called.outside(path));
        }
        let name = absolute
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(refusal) = limits.refuses_suffix(&name, worker) {
            return Err(refusal);
        }
        if let Some(rule) = source
            .gates
            .iter()
            .find_map(|gate| gate.judge(&absolute, EntryKind::File).blocking().cloned())
        {
            return Err(Error::PathBlocked(format!(
                "attachment '{path}' is blocked by the path rule {}; a worker may not attach a file its file tools may not read",
                rule.describe()
            )));
        }
        let room = limits.max_total_bytes - total;
        match read_bytes(&caller, path, room)? {
            FileBytes::Whole { relative, bytes } => {
                total += bytes.len() as u64;
                attachments.push(Attachment {
                    path: relative.display().to_string(),
                    media_type: media_type(&name),
                    bytes,
                });
            }
            FileBytes::TooLarge { relative } => {
                return Err(Error::InvalidInput(format!(
                    "attachments are larger than the {} bytes the worker '{worker}' accepts together (attachment_policy.max_total_bytes), reached at '{}'; attach fewer or smaller files",
                    limits.max_total_bytes,
                    relative.display()
                )));
            }
        }
    }
    Ok(attachments)
}

impl WorkerPlan {
    /// Reads the files a caller attaches to a call of worker `index`: paths are relative to the
    /// caller's work directory (the top worker's own when it has no caller: the host calls it
    /// through `workerTools`), held to worker `index`'s `attachment_policy` and to the path
    /// rules of the caller's file toolsets. See [`read_attachments`].
    pub fn read_attachments(&self, index: usize, paths: &[String]) -> Result<Vec<Attachment>> {
        let called = &self.worker(index)?.worker;
        let caller = match self.worker(index)?.parent {
            Some(parent) => &self.worker(parent)?.worker,
            None => called,
        };
        let source = AttachmentSource {
            caller_dir: &caller.work_dir,
            called_dir: &called.work_dir,
            worker: &called.name,
            limits: AttachmentLimits::of(called.attachment_policy.as_ref()),
            gates: file_rule_gates(caller)?,
        };
        read_attachments(&source, paths)
    }
}

/// The path rules of `worker`'s file toolsets, compiled for its work directory.
fn file_rule_gates(worker: &Worker) -> Result<Vec<PathGate>> {
    let toolsets = &worker.toolsets;
    let lists = [
        (
            "filesystem approval.paths",
            toolsets
                .filesystem
                .as_ref()
                .and_then(|t| t.approval.as_ref()),
        ),
        (
            "code_agent approval.paths",
            toolsets
                .code_agent
                .as_ref()
                .and_then(|t| t.approval.as_ref()),
        ),
    ];
    lists
        .into_iter()
        .filter_map(|(place, approval)| Some((place, approval?)))
        .filter(|(_, approval)| !approval.paths.is_empty())
        .map(|(place, approval)| {
            let place = format!("{}: toolsets.{place}", worker.path.display());
            PathGate::new(&worker.work_dir, &approval.paths, &place)
        })
        .collect()
}

/// The media type of a file named `name`, by its suffix (case-insensitive).
pub fn media_type(name: &str) -> &'static str {
    let lower = name.to_lowercase();
    let suffix = lower.rsplit_once('.').map_or("", |(_, suffix)| suffix);
    match suffix {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests;
