//! What the file tools resolve with, converted from the core's outputs.

use napi_derive::napi;
use toolgate_core::fs;

use crate::enums::{EntryType, ReadKind, WriteAction};

#[napi(object, object_from_js = false)]
pub struct ReadResult {
    /// Path relative to the root (symlinks resolved).
    pub path: String,
    pub kind: ReadKind,
    /// Lines, listing or binary note; ends with a `[truncated: ...]` line when cut.
    pub text: String,
    pub truncated: bool,
    /// The offset that continues where this read stopped.
    pub next_offset: Option<f64>,
    /// File size in bytes.
    pub size: f64,
    /// The file's last line has no line break (only set on the read that reaches the end):
    /// writing `text` back as read keeps it that way.
    pub no_final_newline: bool,
}

impl From<fs::ReadOutput> for ReadResult {
    fn from(out: fs::ReadOutput) -> Self {
        Self {
            path: out.path,
            kind: out.kind.into(),
            text: out.text,
            truncated: out.truncated,
            next_offset: out.next_offset.map(|n| n as f64),
            size: out.size as f64,
            no_final_newline: out.missing_final_newline,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct WriteResult {
    pub path: String,
    pub action: WriteAction,
    pub bytes: f64,
}

impl From<fs::WriteOutput> for WriteResult {
    fn from(out: fs::WriteOutput) -> Self {
        Self {
            path: out.path,
            action: out.action.into(),
            bytes: out.bytes as f64,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct EditResult {
    pub path: String,
    pub replacements: f64,
    /// Unified diff with hunk headers and 3 lines of context.
    pub diff: String,
}

impl From<fs::EditOutput> for EditResult {
    fn from(out: fs::EditOutput) -> Self {
        Self {
            path: out.path,
            replacements: out.replacements as f64,
            diff: out.diff,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct PatchResult {
    /// One line per operation (`added x (1.2 KiB)`, `moved a -> b`, ...).
    pub summary: String,
    /// Paths created, changed or removed, relative to the root.
    pub changed: Vec<String>,
}

impl From<fs::PatchOutput> for PatchResult {
    fn from(out: fs::PatchOutput) -> Self {
        Self {
            summary: out.summary,
            changed: out.changed,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct GlobResult {
    pub text: String,
    /// Paths relative to the root, newest first.
    pub files: Vec<String>,
    /// Matches in all (shown or not).
    pub total: f64,
    pub truncated: bool,
}

impl From<fs::GlobOutput> for GlobResult {
    fn from(out: fs::GlobOutput) -> Self {
        Self {
            text: out.text,
            files: out.files,
            total: out.total as f64,
            truncated: out.truncated,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct GrepResult {
    pub text: String,
    pub total_matches: f64,
    pub files_with_matches: f64,
    pub truncated: bool,
}

impl From<fs::GrepOutput> for GrepResult {
    fn from(out: fs::GrepOutput) -> Self {
        Self {
            text: out.text,
            total_matches: out.total_matches as f64,
            files_with_matches: out.files_with_matches as f64,
            truncated: out.truncated,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct TreeResult {
    pub text: String,
    pub directories: f64,
    pub files: f64,
    pub truncated: bool,
}

impl From<fs::TreeOutput> for TreeResult {
    fn from(out: fs::TreeOutput) -> Self {
        Self {
            text: out.text,
            directories: out.directories as f64,
            files: out.files as f64,
            truncated: out.truncated,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct ExistsResult {
    pub exists: bool,
    /// Set when something exists.
    pub r#type: Option<EntryType>,
}

impl From<Option<fs::EntryType>> for ExistsResult {
    fn from(kind: Option<fs::EntryType>) -> Self {
        Self {
            exists: kind.is_some(),
            r#type: kind.map(Into::into),
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct FileInfoResult {
    pub path: String,
    pub r#type: EntryType,
    pub size: f64,
    /// Milliseconds since the Unix epoch.
    pub modified_ms: Option<f64>,
    pub created_ms: Option<f64>,
    pub accessed_ms: Option<f64>,
    /// Permission bits, e.g. 0o644 (420).
    pub mode: u32,
    pub readonly: bool,
}

impl From<fs::FileInfo> for FileInfoResult {
    fn from(info: fs::FileInfo) -> Self {
        Self {
            path: info.path,
            r#type: info.entry_type.into(),
            size: info.size as f64,
            modified_ms: info.modified_ms,
            created_ms: info.created_ms,
            accessed_ms: info.accessed_ms,
            mode: info.mode,
            readonly: info.readonly,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct DeleteResult {
    pub path: String,
    pub bytes: f64,
}

impl From<fs::DeleteOutput> for DeleteResult {
    fn from(out: fs::DeleteOutput) -> Self {
        Self {
            path: out.path,
            bytes: out.bytes as f64,
        }
    }
}
