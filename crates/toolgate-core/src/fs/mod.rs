//! The file tools: read, write, edit, patch, glob, grep, tree, and the small operations of the
//! filesystem toolset (exists, info, delete).
//!
//! Every path goes through the [`PathValidator`](crate::PathValidator); targets are then
//! reached by walking from the root with `O_NOFOLLOW` (see `anchor`), so a symlink swapped in
//! after validation is not followed. Every output is capped (2000 lines / 50 KiB by default)
//! and ends with an explicit `[...]` marker when something was left out. Model-supplied
//! patterns, counts and sizes are bounded by [`crate::limits`] before any library sees them.
//! Writers of one file take turns (`lock`), `file_edit` notices other programs' changes made
//! while it worked, and temporary files of dead writers are swept (`temp`).

pub mod access;
mod anchor;
mod arguments;
mod bytes;
pub mod config;
mod edit;
pub mod expand;
mod glob;
mod grep;
pub mod guards;
mod info;
mod lock;
mod options;
mod patch;
mod pattern;
mod read;
pub mod rules;
mod special;
mod temp;
mod text;
mod tree;
mod walk;
mod write;

pub use arguments::{
    EditOptions, GlobOptions, GrepOptions, PatchOperationOptions, ReadOptions, TreeOptions,
};
pub use bytes::{read_bytes, FileBytes};
pub use edit::{edit, EditOutput, EditRequest};
pub use glob::{glob, GlobOutput, GlobRequest};
pub use grep::{grep, GrepOutput, GrepRequest};
pub use info::{delete, exists, info, DeleteOutput, EntryType, FileInfo};
pub use options::{CodeAgentOptions, FilesystemOptions};
pub use patch::{patch, PatchAction, PatchOperation, PatchOutput};
pub use read::{read, ReadKind, ReadOutput, ReadRequest};
pub(crate) use special::read_small_regular as read_small_regular_file;
pub use tree::{tree, TreeOutput, TreeRequest};
pub use walk::Cancel;
pub use write::{write, WriteAction, WriteOutput};

#[cfg(test)]
mod tests;
