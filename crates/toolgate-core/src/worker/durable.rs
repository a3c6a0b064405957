//! What a durable run (a run on a workflow engine such as Temporal, continued by whichever
//! worker host is free) pins and what it may repeat.
//!
//! - **Identity.** A run is pinned to the plan it started with: the plan's fingerprint plus a
//!   digest of every file of the graph and each worker's name, file and work directory. Every
//!   later step checks that the host's plan has the same identity; a host whose files differ is
//!   refused with the file named, so a run never continues with different code.
//! - **Repeatable calls.** A call of a tool that only reads (the file tools that read, list and
//!   search) has no effect to repeat, so it may run again after the process running it died. Any
//!   other call may have had an effect, and is never repeated blindly.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fs::config::{filesystem_tools, CodeAgentGroup};
use crate::run::crypto::sha256_hex;
use crate::worker::WorkerPlan;

/// One file of a plan and the version the run started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanFile {
    pub path: String,
    /// What the file is, for messages (`worker file`, `tools module`, …).
    pub role: String,
    /// SHA-256 of the content, `None` for a file that did not exist (creating it is a change).
    pub sha256: Option<String>,
}

/// One worker of a plan, as the identity records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanWorker {
    pub name: String,
    pub path: String,
    pub work_dir: String,
    pub readonly: bool,
}

/// The identity of a plan: what a durable run records when it starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanIdentity {
    /// The plan's fingerprint ([`WorkerPlan::fingerprint`]), the same a deferred run's state carries.
    pub fingerprint: String,
    pub workers: Vec<PlanWorker>,
    pub files: Vec<PlanFile>,
}

/// The identity of `plan`. Fails with `CONFIG_INVALID` naming the file when a file of the graph
/// changed since the plan was made.
pub fn plan_identity(plan: &WorkerPlan) -> Result<PlanIdentity> {
    let fingerprint = plan.fingerprint()?;
    let frozen = plan.frozen_files();
    let mut files = Vec::new();
    for path in frozen.paths() {
        let sha256 = match std::fs::read(path) {
            Ok(content) => Some(sha256_hex(&content)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(Error::io("reading", path, err)),
        };
        files.push(PlanFile {
            path: path.display().to_string(),
            role: frozen.role(path).unwrap_or("file").to_string(),
            sha256,
        });
    }
    // The digests must describe the version the fingerprint describes.
    frozen.verify_all("taking the worker's identity for a durable run")?;
    let workers = plan
        .workers()
        .iter()
        .map(|planned| PlanWorker {
            name: planned.worker.name.clone(),
            path: planned.worker.path.display().to_string(),
            work_dir: planned.worker.work_dir.display().to_string(),
            readonly: planned.worker.readonly,
        })
        .collect();
    Ok(PlanIdentity {
        fingerprint,
        workers,
        files,
    })
}

fn short(digest: Option<&str>) -> String {
    digest.map_or_else(
        || "missing".to_string(),
        |d| format!("sha256 {}", &d[..d.len().min(12)]),
    )
}

/// Checks that `plan` (this host's) has the identity `expected` the run `run` started with.
/// `CONFIG_INVALID` names the first difference: a file whose content differs, is missing or is
/// new, or a worker planned with another file, work directory or `readonly`.
pub fn check_plan_identity(plan: &WorkerPlan, expected: &PlanIdentity, run: &str) -> Result<()> {
    let here = plan_identity(plan)?;
    if here == *expected {
        return Ok(());
    }
    let refused = |what: String| {
        Error::ConfigInvalid(format!(
            "{what}; this worker host refuses to continue run '{run}', because a run never continues with different code. Give every worker host the same worker files (or start a new run)"
        ))
    };
    for file in &expected.files {
        match here.files.iter().find(|mine| mine.path == file.path) {
            None => {
                return Err(refused(format!(
                    "{} '{}' of the run's worker is not part of the worker this host plans",
                    file.role, file.path
                )))
            }
            Some(mine) if mine.sha256 != file.sha256 => {
                return Err(refused(format!(
                    "{} '{}' differs from the version the run started with ({} on this host, {} when the run started)",
                    file.role,
                    file.path,
                    short(mine.sha256.as_deref()),
                    short(file.sha256.as_deref())
                )))
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = here
        .files
        .iter()
        .find(|mine| !expected.files.iter().any(|file| file.path == mine.path))
    {
        return Err(refused(format!(
            "{} '{}' is part of the worker this host plans but was not when the run started",
            extra.role, extra.path
        )));
    }
    if here.workers != expected.workers {
        let describe = |workers: &[PlanWorker]| {
            workers
                .iter()
                .map(|w| {
                    format!(
                        "{} ({}, work directory {}{})",
                        w.name,
                        w.path,
                        w.work_dir,
                        if w.readonly { ", readonly" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Err(refused(format!(
            "the workers planned on this host differ from the run's: {} here, {} when the run started",
            describe(&here.workers),
            describe(&expected.workers)
        )));
    }
    Err(refused(format!(
        "the worker's fingerprint differs from the run's ({} on this host, {} when the run started)",
        here.fingerprint, expected.fingerprint
    )))
}

/// The tools of the plan's top worker whose calls only read (the file tools that read, list and
/// search): a call of one may run again after the process running it died. Every other tool's
/// call may have had an effect.
pub fn read_only_tools(plan: &WorkerPlan) -> Result<Vec<&'static str>> {
    let top = plan.worker(0)?;
    let reads_files = filesystem_tools(true);
    let reads_code = CodeAgentGroup::Read.tools();
    let mut tools: Vec<&'static str> = Vec::new();
    if let Some(offered) = &top.filesystem_tools {
        tools.extend(offered.iter().filter(|name| reads_files.contains(name)));
    }
    if let Some(group) = top.code_agent_group {
        tools.extend(
            group
                .tools()
                .iter()
                .filter(|name| reads_code.contains(name)),
        );
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::{plan_worker, LoadOptions};

    fn plan(path: &std::path::Path) -> WorkerPlan {
        plan_worker(path, &LoadOptions::default()).unwrap()
    }

    #[test]
    fn the_same_files_give_the_same_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\ninstructions: one\n").unwrap();
        let first = plan_identity(&plan(&path)).unwrap();
        assert_eq!(first.files.len(), 1);
        assert_eq!(first.files[0].role, "worker file");
        assert_eq!(first.workers[0].name, "w");
        check_plan_identity(&plan(&path), &first, "run-1").unwrap();
        // it travels as JSON and comes back the same
        let text = serde_json::to_string(&first).unwrap();
        assert_eq!(serde_json::from_str::<PlanIdentity>(&text).unwrap(), first);
    }

    #[test]
    fn a_host_with_another_version_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\ninstructions: one\n").unwrap();
        let started = plan_identity(&plan(&path)).unwrap();
        std::fs::write(&path, "name: w\ninstructions: two\n").unwrap();
        let err = check_plan_identity(&plan(&path), &started, "run-7").unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        let message = err.to_string();
        assert!(message.contains("worker file"), "{message}");
        assert!(message.contains("w.yaml"), "{message}");
        assert!(message.contains("run-7"), "{message}");
        assert!(
            message.contains("differs from the version the run started with"),
            "{message}"
        );
    }

    #[test]
    fn a_file_changed_after_planning_is_refused_before_any_comparison() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\n").unwrap();
        let planned = plan(&path);
        let started = plan_identity(&planned).unwrap();
        std::fs::write(&path, "name: w\ninstructions: sneaky\n").unwrap();
        let err = check_plan_identity(&planned, &started, "run").unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("w.yaml"), "{err}");
    }

    #[test]
    fn another_work_directory_is_another_worker() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\n").unwrap();
        let started = plan_identity(&plan(&path)).unwrap();
        let other = tempfile::tempdir().unwrap();
        let options = LoadOptions {
            work_dir: Some(other.path().to_path_buf()),
            readonly: false,
        };
        let err = check_plan_identity(&plan_worker(&path, &options).unwrap(), &started, "run")
            .unwrap_err();
        assert!(err.to_string().contains("work directory"), "{err}");
    }

    #[test]
    fn a_tools_module_that_differs_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        let module = dir.path().join("tools.ts");
        std::fs::write(&module, "export const a = 1;\n").unwrap();
        std::fs::write(
            &path,
            "name: w\ntoolsets:\n  custom:\n    module: ./tools.ts\n    tools: [a]\n",
        )
        .unwrap();
        let started = plan_identity(&plan(&path)).unwrap();
        std::fs::write(&module, "export const a = 2;\n").unwrap();
        let err = check_plan_identity(&plan(&path), &started, "run").unwrap_err();
        assert!(err.to_string().contains("tools.ts"), "{err}");
        assert!(!err.to_string().contains("w.yaml"), "{err}");
    }

    #[test]
    fn only_the_file_tools_that_read_are_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(
            &path,
            "name: w\ntoolsets:\n  filesystem: {}\n  code_agent: {}\n  shell: { default: ask }\n",
        )
        .unwrap();
        let tools = read_only_tools(&plan(&path)).unwrap();
        for name in [
            "read_file",
            "list_files",
            "file_info",
            "grep_search",
            "file_read",
        ] {
            assert!(tools.contains(&name), "{name} in {tools:?}");
        }
        for name in [
            "write_file",
            "delete_file",
            "file_write",
            "file_edit",
            "file_patch",
            "shell",
        ] {
            assert!(!tools.contains(&name), "{name} in {tools:?}");
        }
        std::fs::write(&path, "name: w\ntoolsets:\n  shell: { default: ask }\n").unwrap();
        assert!(read_only_tools(&plan(&path)).unwrap().is_empty());
    }
}
