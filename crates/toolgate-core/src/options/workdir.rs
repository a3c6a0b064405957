//! The `workDir` option every toolset function takes: the directory a tool is confined to.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The confining directory of a toolset, resolved: absolute, and the deprecation warning when
/// an old key named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkDir {
    pub path: PathBuf,
    pub deprecation: Option<String>,
}

impl WorkDir {
    /// `path` made absolute against the current directory; the current directory when absent.
    pub fn resolve(path: Option<PathBuf>) -> Result<PathBuf> {
        let cwd = std::env::current_dir().map_err(|err| {
            Error::ConfigInvalid(format!(
                "the current directory cannot be read ({err}); give workDir explicitly"
            ))
        })?;
        Ok(match path {
            Some(path) => cwd.join(path),
            None => cwd,
        })
    }

    /// `workDir`, or the deprecated `old` key (`root`, `cwd`) of `function`. Both at once is an
    /// error unless they agree.
    pub fn from_keys(
        work_dir: Option<PathBuf>,
        old: Option<PathBuf>,
        old_key: &str,
        function: &str,
    ) -> Result<WorkDir> {
        let deprecation = old.as_ref().map(|_| {
            format!("{function}({{ {old_key} }}) is deprecated and will be removed in the next release; pass workDir instead")
        });
        let chosen = match (work_dir, old) {
            (Some(work_dir), Some(old)) if work_dir != old => {
                return Err(Error::ConfigInvalid(format!(
                    "options 'workDir' ('{}') and '{old_key}' ('{}') disagree; give only workDir",
                    work_dir.display(),
                    old.display()
                )))
            }
            (Some(work_dir), _) => Some(work_dir),
            (None, old) => old,
        };
        Ok(WorkDir {
            path: WorkDir::resolve(chosen)?,
            deprecation,
        })
    }
}
