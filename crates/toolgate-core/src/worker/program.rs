//! golem-forge's program configuration, `golem-forge.config.yaml` (or `.yml`): the nearest one
//! at or above a worker file sets defaults for the workers of that program. Every key of
//! golem-forge's schema is read; an unknown key or a wrong type is `CONFIG_INVALID` naming the
//! file and the place, as golem-forge's own strict schema refuses it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::anchored;
use crate::limits::MAX_WORKER_DEPTH;

/// The file names golem-forge looks for, in its order.
pub(super) const CONFIG_FILE_NAMES: [&str; 2] =
    ["golem-forge.config.yaml", "golem-forge.config.yml"];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProgramConfig {
    model: Option<String>,
    sandbox: Option<ProgramSandbox>,
    approval: Option<ProgramApproval>,
    delegation: Option<ProgramDelegation>,
    worker_paths: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramSandbox {
    /// The sandbox root, relative to the program folder (golem-forge's default: `.`).
    #[serde(default = "current_folder")]
    root: String,
    readonly: Option<bool>,
}

fn current_folder() -> String {
    ".".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgramApproval {
    mode: Option<ApprovalMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ApprovalMode {
    Interactive,
    ApproveAll,
    AutoDeny,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProgramDelegation {
    max_depth: Option<u32>,
}

/// A program configuration found and read.
#[derive(Debug)]
pub(super) struct Program {
    /// The configuration file.
    pub path: PathBuf,
    /// The folder holding it (golem-forge's program root).
    folder: PathBuf,
    config: ProgramConfig,
}

impl Program {
    /// The nearest program configuration at or above `dir`, read and checked.
    pub fn find(dir: &Path) -> Result<Option<Program>, String> {
        let Some(path) = dir.ancestors().find_map(|folder| {
            CONFIG_FILE_NAMES
                .iter()
                .map(|name| folder.join(name))
                .find(|path| path.is_file())
        }) else {
            return Ok(None);
        };
        let text =
            std::fs::read_to_string(&path).map_err(|err| format!("{}: {err}", path.display()))?;
        // An empty file is a program with every default, as in golem-forge.
        let config: ProgramConfig = if text.trim().is_empty() {
            ProgramConfig::default()
        } else {
            crate::yaml::from_str(&text).map_err(|err| {
                let place = err
                    .location()
                    .map(|(line, column)| format!(":{line}:{column}"))
                    .unwrap_or_default();
                format!(
                    "{}{place}: {}; golem-forge.config.yaml accepts model, sandbox {{ root, readonly }}, approval {{ mode }}, delegation {{ maxDepth }} and workerPaths",
                    path.display(),
                    super::clean_serde_message(&err.to_string())
                )
            })?
        };
        if config
            .delegation
            .as_ref()
            .and_then(|d| d.max_depth)
            .is_some_and(|depth| depth == 0)
        {
            return Err(format!(
                "{}: delegation.maxDepth must be at least 1",
                path.display()
            ));
        }
        let folder = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        Ok(Some(Program {
            path,
            folder,
            config,
        }))
    }

    /// The default model of the program's workers.
    pub fn model(&self) -> Option<&str> {
        self.config.model.as_deref()
    }

    /// The sandbox root the program sets, made absolute.
    pub fn sandbox_root(&self) -> Option<PathBuf> {
        self.config
            .sandbox
            .as_ref()
            .map(|sandbox| anchored(&self.folder, &sandbox.root))
    }

    pub fn readonly(&self) -> bool {
        self.config
            .sandbox
            .as_ref()
            .and_then(|sandbox| sandbox.readonly)
            .unwrap_or(false)
    }

    /// How deep the program's workers may call workers, never above toolgate's own limit.
    pub fn max_depth(&self) -> Option<usize> {
        let depth = self.config.delegation.as_ref()?.max_depth?;
        Some((depth as usize).min(MAX_WORKER_DEPTH))
    }

    /// Where golem-forge's registry looks workers up: `workerPaths` relative to the program
    /// folder, by default `workers` and `.workers`.
    pub fn worker_paths(&self) -> Vec<PathBuf> {
        match &self.config.worker_paths {
            Some(paths) => paths
                .iter()
                .map(|path| anchored(&self.folder, path))
                .collect(),
            None => vec![self.folder.join("workers"), self.folder.join(".workers")],
        }
    }

    /// What the program sets that toolgate does not act on, said precisely.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let file = self.path.display();
        match self.config.approval.as_ref().and_then(|a| a.mode) {
            Some(ApprovalMode::ApproveAll) => warnings.push(format!(
                "{file}: approval.mode 'approve_all' is not acted on: a file does not approve its own tool calls here; pass --yes to `toolgate run` to approve every call that asks"
            )),
            Some(ApprovalMode::AutoDeny) => warnings.push(format!(
                "{file}: approval.mode 'auto_deny' is not acted on; pass --deny to `toolgate run` to deny every call that asks"
            )),
            Some(ApprovalMode::Interactive) | None => {}
        }
        if let Some(depth) = self.config.delegation.as_ref().and_then(|d| d.max_depth) {
            if depth as usize > MAX_WORKER_DEPTH {
                warnings.push(format!(
                    "{file}: delegation.maxDepth {depth} is above toolgate's limit; workers nest at most {MAX_WORKER_DEPTH} deep"
                ));
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests;
