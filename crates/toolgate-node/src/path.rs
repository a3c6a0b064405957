use napi::Env;
use napi_derive::napi;

use crate::error::{infallible, sync};

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
    pub fn new(env: Env, root: String) -> napi::Result<Self> {
        sync(&env, "new PathValidator", || {
            toolgate_core::PathValidator::new(root).map(|inner| Self { inner })
        })
    }

    /// The canonical root.
    #[napi(getter)]
    pub fn root(&self, env: Env) -> napi::Result<String> {
        infallible(&env, "PathValidator.root", || {
            self.inner.root().display().to_string()
        })
    }

    /// Resolves `path` (relative to the root) with every symlink followed and returns the
    /// absolute result. Throws `PATH_OUTSIDE_ROOT` when it lands outside the root, and
    /// `INVALID_INPUT` for an empty path, a NUL byte or a path longer than PATH_MAX.
    #[napi]
    pub fn resolve(&self, env: Env, path: String) -> napi::Result<String> {
        sync(&env, "PathValidator.resolve", || {
            self.inner.resolve(path).map(|p| p.display().to_string())
        })
    }
}
