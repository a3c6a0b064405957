//! The fingerprint of the worker a run state belongs to. A state carries it, and a resume with
//! a worker whose fingerprint differs is refused: approvals given for one version of a worker
//! (its instructions, tools, rules, work directory) are never applied to another.
//!
//! - A planned worker (loaded from a file): the content of every file of its delegation graph
//!   (worker files, tools modules, executable tools), and each worker's name, file, work
//!   directory and `readonly`.
//! - A worker built in code: the canonical JSON of the description the SDK gives (name,
//!   instructions, tool names, descriptions and approvals).

use std::path::Path;

use serde_json::Value;

use super::canonical::canonical_json;
use super::crypto::{sha256_hex, Digester};
use crate::error::{Error, Result};
use crate::frozen::FrozenFiles;

/// One worker of a planned delegation graph, as far as its fingerprint goes.
#[derive(Debug, Clone, Copy)]
pub struct GraphWorker<'a> {
    pub name: &'a str,
    /// The worker file.
    pub path: &'a Path,
    pub work_dir: &'a Path,
    pub readonly: bool,
}

/// The fingerprint of a planned graph: its workers (the top one first) and the files it froze
/// (`WorkerPlan::fingerprint` hands them over). Fails with `CONFIG_INVALID` when a file changed
/// since the plan was made (the plan would no longer describe what runs).
pub fn graph_fingerprint<'a>(
    workers: impl IntoIterator<Item = GraphWorker<'a>>,
    files: &FrozenFiles,
) -> Result<String> {
    const WHAT: &str = "taking the worker's fingerprint for its run state";
    files.verify_all(WHAT)?;
    let mut digest = Digester::new();
    digest.field(b"toolgate-plan-v1");
    for worker in workers {
        digest.field(worker.name.as_bytes());
        digest.field(worker.path.as_os_str().as_encoded_bytes());
        digest.field(worker.work_dir.as_os_str().as_encoded_bytes());
        digest.field(&[u8::from(worker.readonly)]);
    }
    for path in files.paths() {
        digest.field(path.as_os_str().as_encoded_bytes());
        match std::fs::read(path) {
            Ok(content) => digest.field(sha256_hex(&content).as_bytes()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => digest.field(b"missing"),
            Err(err) => return Err(Error::io("reading", path, err)),
        }
    }
    // A file rewritten while it was hashed would make the fingerprint describe neither version.
    files.verify_all(WHAT)?;
    Ok(digest.finish())
}

/// The fingerprint of a worker built in code, from the SDK's description of it.
pub fn description_fingerprint(description: &Value) -> String {
    let mut digest = Digester::new();
    digest.field(b"toolgate-worker-description-v1");
    digest.field(canonical_json(description).as_bytes());
    digest.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::{plan_worker, LoadOptions};
    use serde_json::json;

    #[test]
    fn a_changed_worker_file_changes_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\ninstructions: one\n").unwrap();
        let first = plan_worker(&path, &LoadOptions::default())
            .unwrap()
            .fingerprint()
            .unwrap();
        let again = plan_worker(&path, &LoadOptions::default())
            .unwrap()
            .fingerprint()
            .unwrap();
        assert_eq!(first, again);
        std::fs::write(&path, "name: w\ninstructions: two\n").unwrap();
        let changed = plan_worker(&path, &LoadOptions::default())
            .unwrap()
            .fingerprint()
            .unwrap();
        assert_ne!(first, changed);
        // another work directory is another worker
        let other = tempfile::tempdir().unwrap();
        let options = LoadOptions {
            work_dir: Some(other.path().to_path_buf()),
            readonly: false,
        };
        assert_ne!(
            changed,
            plan_worker(&path, &options).unwrap().fingerprint().unwrap()
        );
    }

    #[test]
    fn a_file_changed_after_planning_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\n").unwrap();
        let plan = plan_worker(&path, &LoadOptions::default()).unwrap();
        std::fs::write(&path, "name: w\ninstructions: sneaky\n").unwrap();
        let err = plan.fingerprint().unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("w.yaml"), "{err}");
    }

    #[test]
    fn descriptions_hash_by_meaning() {
        let a = json!({ "name": "w", "tools": [{ "name": "t", "decision": "ask" }] });
        let b = json!({ "tools": [{ "decision": "ask", "name": "t" }], "name": "w" });
        assert_eq!(description_fingerprint(&a), description_fingerprint(&b));
        let c = json!({ "name": "w", "tools": [{ "name": "t", "decision": "preApproved" }] });
        assert_ne!(description_fingerprint(&a), description_fingerprint(&c));
    }
}
