//! Every YAML example of the README and `docs/*.md` loads as written (issues 22 §8 and 25 §5).
//!
//! Each ```` ```yaml ```` block is planned by the core (parsed, checked, every toolset's policy
//! and sandbox built) in a scratch project where the files and folders it names exist. What a
//! block is comes from an HTML comment on the line before its fence (invisible when rendered):
//!
//! - no comment: a whole worker file;
//! - `<!-- example: worker-fragment -->`: top-level keys of a worker file (`toolsets:`,
//!   `sandbox:` …), loaded with a `name` added;
//! - `<!-- example: toolsets-fragment -->`: blocks that go under `toolsets:`;
//! - `<!-- example: tool-manifest -->`: an executable tool's `tool.yaml`;
//! - `<!-- example: not-a-file: <why> -->`: not a file of its own (an editor directive);
//! - `<!-- example: pending: <why> -->`: documents what this build does not load yet; the test
//!   fails once it does, so that the marker is removed.

use std::path::{Path, PathBuf};

use serde_yaml::Value;
use toolgate_core::executables::manifest::Manifest;
use toolgate_core::worker::{plan_worker, LoadOptions};

/// The repository root (two levels above this crate).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced YAML block: where it is, what it is, its text.
struct Example {
    place: String,
    kind: String,
    text: String,
}

fn examples() -> Vec<Example> {
    let root = repository();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut index = 0;
        while index < lines.len() {
            let fence = lines[index].trim_start();
            if fence == "```yaml" || fence == "```yml" {
                let start = index;
                let mut end = index + 1;
                while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                    end += 1;
                }
                let marker = lines[..start]
                    .iter()
                    .rev()
                    .find(|line| !line.trim().is_empty())
                    .and_then(|line| {
                        line.trim()
                            .strip_prefix("<!-- example:")?
                            .strip_suffix("-->")
                            .map(|kind| kind.trim().to_string())
                    });
                found.push(Example {
                    place: format!(
                        "{}:{}",
                        file.strip_prefix(&root).unwrap_or(&file).display(),
                        start + 1
                    ),
                    kind: marker.unwrap_or_else(|| "worker".into()),
                    text: lines[start + 1..end].join("\n"),
                });
                index = end;
            }
            index += 1;
        }
    }
    found
}

/// A scratch project: the worker file goes to `project/`, `~` is `home/`.
struct Scratch {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let project = base.join("project");
    let home = base.join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    Scratch {
        _dir: dir,
        project,
        home,
    }
}

impl Scratch {
    fn path(&self, written: &str) -> PathBuf {
        match written.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None if written == "~" => self.home.clone(),
            None => self.project.join(written.trim_start_matches("./")),
        }
    }

    fn folder(&self, written: &str) {
        std::fs::create_dir_all(self.path(written)).unwrap();
    }

    fn file(&self, written: &str, content: &str) {
        let path = self.path(written);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if !path.exists() {
            std::fs::write(path, content).unwrap();
        }
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_sequence)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn get<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |value, key| value.get(*key))
}

/// Creates what the worker file names: tools modules, tool and worker folders, other workers,
/// sandbox roots (`~/` in the scratch home), schema files.
fn create_named_files(worker: &Value, scratch: &Scratch) {
    let toolsets = worker.get("toolsets");
    if let Some(module) = get(worker, &["toolsets", "custom", "module"]).and_then(Value::as_str) {
        scratch.file(module, "export {};\n");
    }
    for dir in strings(get(worker, &["toolsets", "executables", "dirs"])) {
        scratch.folder(&dir);
    }
    for entry in strings(get(worker, &["toolsets", "workers", "allowed_workers"])) {
        let is_path = entry.contains('/')
            || [".worker", ".yaml", ".yml"]
                .iter()
                .any(|e| entry.ends_with(e));
        let stem = Path::new(&entry)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if is_path {
            let text = if entry.ends_with(".worker") {
                format!("---\nname: {stem}\n---\n")
            } else {
                format!("name: {stem}\n")
            };
            scratch.file(&entry, &text);
        } else {
            scratch.file(&format!("{entry}.yaml"), &format!("name: {entry}\n"));
        }
    }
    for dir in strings(get(worker, &["toolsets", "workers", "worker_paths"])) {
        scratch.folder(&dir);
    }
    let mut sandboxes: Vec<&Value> = worker.get("sandbox").into_iter().collect();
    if let Some(blocks) = toolsets.and_then(Value::as_mapping) {
        sandboxes.extend(blocks.values().filter_map(|block| block.get("sandbox")));
        for root in strings(get(worker, &["toolsets", "cli_execute", "read_roots"])) {
            scratch.folder(&root);
        }
    }
    for sandbox in sandboxes {
        for key in ["read", "write"] {
            for root in strings(sandbox.get(key)) {
                scratch.folder(&root);
            }
        }
        if let Some(root) = sandbox.get("root").and_then(Value::as_str) {
            scratch.folder(root);
        }
    }
    if let Some(schema) = worker.get("output_schema_ref").and_then(Value::as_str) {
        scratch.file(schema, "{}\n");
    }
}

/// The text of the worker file an example stands for.
fn worker_text(example: &Example) -> Option<String> {
    let indented = |text: &str| {
        text.lines()
            .map(|line| format!("  {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let kind = example.kind.as_str();
    let kind = kind
        .strip_prefix("pending:")
        .map_or(kind, |_| "worker-fragment");
    match kind {
        "worker" => Some(example.text.clone()),
        "worker-fragment" => Some(format!("name: docs-example\n{}\n", example.text)),
        "toolsets-fragment" => Some(format!(
            "name: docs-example\ntoolsets:\n{}\n",
            indented(&example.text)
        )),
        _ => None,
    }
}

/// Plans one example in a fresh scratch project; the error, if it does not load.
fn load(example: &Example) -> Result<(), String> {
    if example.kind == "tool-manifest" {
        return Manifest::parse(&example.text)
            .map(|_| ())
            .map_err(|err| err.to_string());
    }
    if example.kind == "permissions" {
        let scratch = scratch();
        std::fs::write(
            scratch
                .project
                .join(toolgate_core::limits::PERMISSIONS_FILE_NAME),
            &example.text,
        )
        .unwrap();
        return toolgate_core::permissions::Permissions::load(&scratch.project)
            .map(|_| ())
            .map_err(|err| format!("{}: {err}", err.code()));
    }
    let Some(text) = worker_text(example) else {
        return Ok(());
    };
    let scratch = scratch();
    let parsed: Value = serde_yaml::from_str(&text).map_err(|err| format!("not YAML: {err}"))?;
    create_named_files(&parsed, &scratch);
    let file = scratch.project.join("worker.yaml");
    std::fs::write(&file, &text).unwrap();
    // `~/` is the scratch home: the examples' home roots exist there, not in the tester's.
    std::env::set_var("HOME", &scratch.home);
    plan_worker(&file, &LoadOptions::default())
        .map(|_| ())
        .map_err(|err| format!("{}: {err}", err.code()))
}

#[test]
fn every_yaml_example_of_the_docs_loads_as_written() {
    // Variables the examples name (`${MCP_TOKEN}`): a worker refuses to load with one unset.
    for example in examples() {
        for part in example.text.split("${").skip(1) {
            if let Some(name) = part.split('}').next() {
                if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty() {
                    std::env::set_var(name, "docs-example-value");
                }
            }
        }
    }
    let examples = examples();
    assert!(
        examples.len() >= 10,
        "found only {} YAML examples",
        examples.len()
    );
    let known = [
        "worker",
        "worker-fragment",
        "toolsets-fragment",
        "tool-manifest",
        "permissions",
    ];
    let mut failures = Vec::new();
    let mut loaded = 0;
    for example in &examples {
        let kind = example.kind.as_str();
        let pending = kind.starts_with("pending:");
        if !known.contains(&kind) && !pending && !kind.starts_with("not-a-file:") {
            failures.push(format!(
                "{}: unknown marker '{kind}' (worker, worker-fragment, toolsets-fragment, tool-manifest, permissions, not-a-file: why, pending: why)",
                example.place
            ));
            continue;
        }
        match (load(example), pending) {
            (Ok(()), false) => loaded += 1,
            (Err(err), false) => failures.push(format!(
                "{} ({kind}) does not load: {err}\n  (if it is not a whole worker file, mark it: <!-- example: worker-fragment --> or another kind, see this test)",
                example.place
            )),
            (Ok(()), true) => failures.push(format!(
                "{} loads now: remove its '<!-- example: {kind} -->' marker",
                example.place
            )),
            (Err(_), true) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(loaded >= 10, "only {loaded} examples were loaded");
}
