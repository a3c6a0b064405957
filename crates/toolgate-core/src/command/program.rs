//! A program as the command engine found it: the path it starts from, the file it really is and
//! that file's identity. Kept apart from the engine so the per-program checks can name it.

use std::path::{Path, PathBuf};

pub(crate) use super::trampoline::FileId;

/// A program found for a name: the path it is started from, the file that path really is
/// (every symlink resolved), whose basename the shell and trampoline check looks at, and that
/// file's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    pub path: PathBuf,
    pub real: PathBuf,
    /// (device, inode) of the file.
    pub id: Option<FileId>,
    /// Whether the file is a dynamic loader by its ELF headers, whatever its name.
    pub loader: bool,
}

/// The (device, inode) of the file `path` leads to, symlinks followed.
pub(crate) fn identity(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// Where programs keep their helpers and dashed forms (`/usr/lib/git-core/git`).
pub(crate) fn core_dirs(name: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    for prefix in ["/usr", "/usr/local", ""] {
        for lib in ["lib", "libexec"] {
            dirs.push(format!("{prefix}/{lib}/{name}-core"));
            dirs.push(format!("{prefix}/{lib}/{name}"));
        }
    }
    dirs
}
