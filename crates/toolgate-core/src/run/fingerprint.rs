//! The binding of a run state: what decides the calls of the worker a state was issued by. A
//! state carries it, and a resume with a worker whose binding differs in any part is refused
//! (`STATE_INVALID`, naming the parts): approvals given for one worker (its instructions, tools,
//! rules, work directory, sandbox) are never applied to another (issue 23 §6).
//!
//! A binding is a set of named parts, each the SHA-256 of the canonical JSON of what decides
//! calls in that respect:
//!
//! | part | a worker loaded from a file (its plan) | a worker built in code |
//! | --- | --- | --- |
//! | `workers` | each worker's name, file and caller | the worker's name |
//! | `instructions` | — (in `files`) | its instructions |
//! | `files` | the content of every file of the graph | — |
//! | `tools` | each worker's toolsets and tools | each tool's name, description and settings |
//! | `approvals` | every approval block | each tool's decision |
//! | `work directories` | each worker's work directory and `readonly` | each tool's `workDir`, `readOnly` |
//! | `rules` | shell rules, allowlists (as resolved), guardrails, path rules, the callers' | each tool's `rules` |
//! | `sandbox` | the sandbox of each worker and process toolset | each tool's `sandbox` |
//!
//! A tool built by toolgate carries its binding (its policy's settings, or the plan it was built
//! from); a tool built by hand is bound by its name, description and approval, and by whatever
//! binding its author gives it.
//!
//! The text form is `toolgate-binding-v2 ` followed by the canonical JSON object of part names to
//! digests; [`graph_fingerprint`] and [`description_fingerprint`] make it, and
//! [`differing_parts`] names the parts in which two bindings differ.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::canonical::canonical_json;
use super::crypto::sha256_hex;
use crate::error::{Error, Result};
use crate::frozen::FrozenFiles;

/// What a binding's text starts with.
pub const BINDING_PREFIX: &str = "toolgate-binding-v2 ";

/// The parts of a binding, in the order messages name them.
pub const PARTS: [&str; 9] = [
    "workers",
    "instructions",
    "files",
    "tools",
    "approvals",
    "work directories",
    "rules",
    "sandbox",
    "plan",
];

/// What goes into each part of a binding, before it is digested.
#[derive(Debug, Default, Clone)]
pub struct BindingParts {
    values: BTreeMap<String, Vec<Value>>,
}

impl BindingParts {
    /// Adds `value` to the part `part` (one of [`PARTS`]).
    pub fn add(&mut self, part: &str, value: Value) {
        self.values.entry(part.to_string()).or_default().push(value);
    }

    /// The binding text: each part digested.
    pub fn finish(self) -> String {
        let digests: Map<String, Value> = self
            .values
            .into_iter()
            .map(|(part, values)| {
                let digest = sha256_hex(canonical_json(&Value::Array(values)).as_bytes());
                (part, Value::String(digest))
            })
            .collect();
        format!(
            "{BINDING_PREFIX}{}",
            canonical_json(&Value::Object(digests))
        )
    }
}

/// The binding of a planned graph: the parts its plan describes (`WorkerPlan::fingerprint`
/// hands them over) and the content of every file it froze, in `files`. Fails with
/// `CONFIG_INVALID` when a file changed since the plan was made (the plan would no longer
/// describe what runs).
pub fn graph_fingerprint(mut parts: BindingParts, files: &FrozenFiles) -> Result<String> {
    const WHAT: &str = "taking the worker's fingerprint for its run state";
    files.verify_all(WHAT)?;
    for path in files.paths() {
        let content = match std::fs::read(path) {
            Ok(content) => Value::String(sha256_hex(&content)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Value::Null,
            Err(err) => return Err(Error::io("reading", path, err)),
        };
        parts.add("files", Value::Array(vec![path_value(path), content]));
    }
    // A file rewritten while it was hashed would make the binding describe neither version.
    files.verify_all(WHAT)?;
    Ok(parts.finish())
}

/// A path as a JSON value (lossless for UTF-8 paths; others by their bytes).
pub fn path_value(path: &Path) -> Value {
    match path.to_str() {
        Some(text) => Value::String(text.to_string()),
        None => Value::String(sha256_hex(path.as_os_str().as_encoded_bytes())),
    }
}

/// The binding of a worker as the SDK describes it: `{ name, instructions, plan?, tools: [{
/// name, description, approval, binding? }] }`, where a tool's `binding` is what toolgate built
/// it with — `{ workDir?, readOnly?, rules?, sandbox?, settings?, plan? }` (a plan's own binding
/// text, for the tools of a planned worker) — and `plan` the binding of the plan the worker was
/// loaded from. Other keys of a tool's binding count as `tools`.
pub fn description_fingerprint(description: &Value) -> String {
    let mut parts = BindingParts::default();
    parts.add(
        "workers",
        description.get("name").cloned().unwrap_or(Value::Null),
    );
    parts.add(
        "instructions",
        description
            .get("instructions")
            .cloned()
            .unwrap_or(Value::Null),
    );
    if let Some(plan) = description.get("plan").filter(|plan| !plan.is_null()) {
        add_plan(&mut parts, &Value::Null, plan);
    }
    let tools = description
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for tool in &tools {
        let name = tool.get("name").cloned().unwrap_or(Value::Null);
        let tagged = |value: Value| Value::Array(vec![name.clone(), value]);
        parts.add(
            "tools",
            tagged(tool.get("description").cloned().unwrap_or(Value::Null)),
        );
        parts.add(
            "approvals",
            tagged(tool.get("approval").cloned().unwrap_or(Value::Null)),
        );
        let Some(binding) = tool.get("binding").and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in binding {
            let part = match key.as_str() {
                "workDir" | "readOnly" => "work directories",
                "rules" => "rules",
                "sandbox" => "sandbox",
                "plan" => {
                    add_plan(&mut parts, &name, value);
                    continue;
                }
                _ => "tools",
            };
            parts.add(
                part,
                tagged(Value::Array(vec![
                    Value::String(key.clone()),
                    value.clone(),
                ])),
            );
        }
    }
    parts.finish()
}

/// A plan's binding inside a description: each of its parts joins the part of the same name
/// (so that a difference is named as precisely as for the plan itself); text that is not a
/// binding joins `plan`.
fn add_plan(parts: &mut BindingParts, tool: &Value, plan: &Value) {
    match plan.as_str().and_then(parse) {
        Some(digests) => {
            for (part, digest) in digests {
                parts.add(
                    &part,
                    Value::Array(vec![tool.clone(), Value::String(digest)]),
                );
            }
        }
        None => parts.add("plan", Value::Array(vec![tool.clone(), plan.clone()])),
    }
}

/// The parts in which two bindings differ, in the order of [`PARTS`] (other names after); empty
/// when either is not a binding this toolgate writes (then only "they differ" can be said).
pub fn differing_parts(issued: &str, here: &str) -> Vec<String> {
    let (Some(issued), Some(here)) = (parse(issued), parse(here)) else {
        return Vec::new();
    };
    let mut names: Vec<&String> = issued.keys().chain(here.keys()).collect();
    names.sort_by_key(|name| {
        (
            PARTS
                .iter()
                .position(|part| part == name)
                .unwrap_or(PARTS.len()),
            name.to_string(),
        )
    });
    names.dedup();
    names
        .into_iter()
        .filter(|name| issued.get(*name) != here.get(*name))
        .cloned()
        .collect()
}

fn parse(text: &str) -> Option<BTreeMap<String, String>> {
    let json = text.strip_prefix(BINDING_PREFIX)?;
    serde_json::from_str(json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::{plan_worker, LoadOptions};
    use serde_json::json;

    fn plan_binding(path: &Path, options: &LoadOptions) -> String {
        plan_worker(path, options).unwrap().binding().unwrap()
    }

    #[test]
    fn a_changed_worker_file_or_work_directory_changes_the_binding_and_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\ninstructions: one\n").unwrap();
        let first = plan_binding(&path, &LoadOptions::default());
        assert_eq!(first, plan_binding(&path, &LoadOptions::default()));
        assert!(first.starts_with(BINDING_PREFIX), "{first}");
        std::fs::write(&path, "name: w\ninstructions: two\n").unwrap();
        let changed = plan_binding(&path, &LoadOptions::default());
        assert_eq!(differing_parts(&first, &changed), ["files"]);
        // another work directory is another worker
        let other = tempfile::tempdir().unwrap();
        let options = LoadOptions {
            work_dir: Some(other.path().to_path_buf()),
            readonly: false,
        };
        let moved = plan_binding(&path, &options);
        assert_eq!(
            differing_parts(&changed, &moved),
            ["work directories", "sandbox"]
        );
        let readonly = LoadOptions {
            work_dir: None,
            readonly: true,
        };
        assert!(differing_parts(&changed, &plan_binding(&path, &readonly))
            .contains(&"work directories".to_string()));
    }

    #[test]
    fn a_plan_inside_a_description_names_its_own_parts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\n").unwrap();
        let other = tempfile::tempdir().unwrap();
        let here = plan_binding(&path, &LoadOptions::default());
        let there = plan_binding(
            &path,
            &LoadOptions {
                work_dir: Some(other.path().to_path_buf()),
                readonly: false,
            },
        );
        let described = |plan: &str| {
            description_fingerprint(&json!({
                "name": "w",
                "tools": [{ "name": "t", "approval": "ask", "binding": { "plan": plan, "worker": 0 } }],
            }))
        };
        assert_eq!(
            differing_parts(&described(&here), &described(&there)),
            ["work directories", "sandbox"]
        );
        assert_eq!(
            differing_parts(&described("not a binding"), &described("another")),
            ["plan"]
        );
    }

    #[test]
    fn a_file_changed_after_planning_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.yaml");
        std::fs::write(&path, "name: w\n").unwrap();
        let plan = plan_worker(&path, &LoadOptions::default()).unwrap();
        std::fs::write(&path, "name: w\ninstructions: sneaky\n").unwrap();
        let err = plan.binding().unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("w.yaml"), "{err}");
    }

    #[test]
    fn descriptions_bind_by_meaning_and_name_the_part_that_differs() {
        let a = json!({ "name": "w", "tools": [{ "name": "t", "approval": "ask" }] });
        let b = json!({ "tools": [{ "approval": "ask", "name": "t" }], "name": "w" });
        assert_eq!(description_fingerprint(&a), description_fingerprint(&b));
        let c = json!({ "name": "w", "tools": [{ "name": "t", "approval": "preApproved" }] });
        assert_eq!(
            differing_parts(&description_fingerprint(&a), &description_fingerprint(&c)),
            ["approvals"]
        );
        let with = |binding: Value| {
            description_fingerprint(&json!({
                "name": "w",
                "tools": [{ "name": "t", "approval": "ask", "binding": binding }],
            }))
        };
        let base = with(json!({ "workDir": "/a", "rules": { "default": "ask" }, "sandbox": null }));
        for (binding, part) in [
            (
                json!({ "workDir": "/b", "rules": { "default": "ask" }, "sandbox": null }),
                "work directories",
            ),
            (
                json!({ "workDir": "/a", "rules": { "default": "preApproved" }, "sandbox": null }),
                "rules",
            ),
            (
                json!({ "workDir": "/a", "rules": { "default": "ask" }, "sandbox": false }),
                "sandbox",
            ),
            (
                json!({ "workDir": "/a", "rules": { "default": "ask" }, "sandbox": null, "settings": 1 }),
                "tools",
            ),
        ] {
            assert_eq!(differing_parts(&base, &with(binding)), [part]);
        }
        assert!(differing_parts("f1", &base).is_empty());
    }
}
