use napi_derive::napi;

use crate::error::{to_napi, Code};

/// Confines paths to a root directory, following symlinks.
#[napi]
pub struct PathValidator {
    inner: toolgate_core::PathValidator,
}

#[napi]
impl PathValidator {
    /// Creates a validator for an existing directory `root` (canonicalised once; it may be
    /// reached through symlinks). Throws `CONFIG_INVALID` when it is not a directory.
    #[napi(constructor)]
    pub fn new(root: String) -> napi::Result<Self, Code> {
        toolgate_core::PathValidator::new(root)
            .map(|inner| Self { inner })
            .map_err(to_napi)
    }

    /// The canonical root.
    #[napi(getter)]
    pub fn root(&self) -> String {
        self.inner.root().display().to_string()
    }

    /// Resolves `path` (relative to the root) with every symlink followed and returns the
    /// absolute result. Throws `PATH_OUTSIDE_ROOT` when it lands outside the root, and
    /// `INVALID_INPUT` for an empty path, a NUL byte or a path longer than PATH_MAX.
    #[napi]
    pub fn resolve(&self, path: String) -> napi::Result<String, Code> {
        self.inner
            .resolve(path)
            .map(|p| p.display().to_string())
            .map_err(to_napi)
    }
}
