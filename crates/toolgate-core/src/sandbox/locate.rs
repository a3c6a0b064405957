//! Finding the launcher binary.
//!
//! In order: the `TOOLGATE_SANDBOX_LAUNCHER` variable (read when a sandbox is prepared); next
//! to the shared library this code was loaded from (the `.node` addon in `native/`), found with
//! `dladdr` on a function of our own; next to the running executable and in its parent
//! directory (cargo puts test binaries in `target/<profile>/deps/`, the launcher in
//! `target/<profile>/`).

use std::path::{Path, PathBuf};

/// The launcher's file name.
pub const LAUNCHER_NAME: &str = "toolgate-sandbox";
/// The variable that names the launcher explicitly.
pub const LAUNCHER_ENV: &str = "TOOLGATE_SANDBOX_LAUNCHER";

/// Where the launcher was found, or every place that was tried.
pub(crate) fn find_launcher() -> Result<PathBuf, Vec<PathBuf>> {
    let explicit = std::env::var_os(LAUNCHER_ENV).filter(|value| !value.is_empty());
    let candidates = candidates(
        explicit.map(PathBuf::from),
        own_library(),
        std::env::current_exe().ok(),
    );
    match candidates.iter().find(|path| is_executable(path)) {
        Some(found) => Ok(found.clone()),
        None => Err(candidates),
    }
}

/// The places to look, in order. An explicit path is the only candidate: a wrong one is an
/// error, never silently replaced by another launcher.
fn candidates(
    explicit: Option<PathBuf>,
    library: Option<PathBuf>,
    executable: Option<PathBuf>,
) -> Vec<PathBuf> {
    if let Some(explicit) = explicit {
        return vec![explicit];
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = library.as_deref().and_then(Path::parent) {
        dirs.push(dir.to_path_buf());
    }
    if let Some(dir) = executable.as_deref().and_then(Path::parent) {
        dirs.push(dir.to_path_buf());
        if let Some(parent) = dir.parent() {
            dirs.push(parent.to_path_buf());
        }
    }
    let mut found: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let candidate = dir.join(LAUNCHER_NAME);
        if !found.contains(&candidate) {
            found.push(candidate);
        }
    }
    found
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The file this code was loaded from: the `.node` addon, or the executable itself when the
/// core is linked into one.
fn own_library() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: dladdr only reads the loader's tables; `info` is a zeroed struct it fills in, and
    // dli_fname (when not null) points at a NUL-terminated string owned by the loader.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let symbol = find_launcher as *const libc::c_void;
        if libc::dladdr(symbol, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_fname).to_bytes();
        let path = Path::new(std::ffi::OsStr::from_bytes(name));
        std::fs::canonicalize(path).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_come_in_order_and_an_explicit_path_stands_alone() {
        let found = candidates(
            None,
            Some("/pkg/native/toolgate.linux-x64-gnu.node".into()),
            Some("/repo/target/debug/deps/toolgate_core-123".into()),
        );
        assert_eq!(
            found,
            [
                PathBuf::from("/pkg/native/toolgate-sandbox"),
                PathBuf::from("/repo/target/debug/deps/toolgate-sandbox"),
                PathBuf::from("/repo/target/debug/toolgate-sandbox"),
            ]
        );
        let found = candidates(
            Some("/custom/launcher".into()),
            Some("/pkg/native/x.node".into()),
            None,
        );
        assert_eq!(found, [PathBuf::from("/custom/launcher")]);
    }

    #[test]
    fn the_library_of_this_code_is_found() {
        // In a test binary the core is linked into the executable itself.
        let library = own_library().unwrap();
        let exe = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(library, exe);
    }
}
