use std::collections::BTreeMap;

use super::test_support::{config_error, dir, load, write};
use super::*;
use crate::approval::Decision;

#[test]
fn a_yaml_worker_resolves_paths_against_its_directory() {
    let d = dir();
    std::fs::create_dir(d.path.join("tools")).unwrap();
    let path = write(
        &d.path,
        "worker.yaml",
        "name: helper\nmodel: openai:gpt-4o-mini\ninstructions: |\n  Be brief.\nmax_steps: 7\n\
         toolsets:\n  custom:\n    module: ./tools.ts\n    tools: [add]\n  executables:\n    dirs: [./tools]\n\
         \x20 cli_execute:\n    allowed_binaries: [git]\n    read_roots: [./docs]\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(worker.name, "helper");
    assert_eq!(worker.model.as_deref(), Some("openai:gpt-4o-mini"));
    assert_eq!(worker.instructions, "Be brief.\n");
    assert_eq!(worker.max_steps, Some(7));
    assert_eq!(worker.work_dir, d.path);
    assert_eq!(worker.path, path);
    let toolsets = &worker.toolsets;
    assert_eq!(
        toolsets.custom.as_ref().unwrap().module,
        d.path.join("./tools.ts")
    );
    assert_eq!(
        toolsets
            .executables
            .as_ref()
            .unwrap()
            .dirs
            .as_ref()
            .unwrap()[0],
        d.path.join("./tools")
    );
    assert_eq!(
        toolsets.cli_execute.as_ref().unwrap().read_roots[0],
        d.path.join("./docs")
    );
    assert!(worker.warnings.is_empty());
}

#[test]
fn a_worker_file_takes_its_instructions_from_the_markdown_body() {
    let d = dir();
    let path = write(
        &d.path,
        "notes.worker",
        "---\nname: note_taker\ndescription: Saves notes\ntoolsets:\n  filesystem: {}\n---\n\nYou keep notes.\n\n- one per line\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(worker.instructions, "You keep notes.\n\n- one per line");
    assert_eq!(worker.description.as_deref(), Some("Saves notes"));
    assert!(worker.toolsets.filesystem.is_some());
}

#[test]
fn unknown_keys_name_the_file_line_and_column_and_the_expected_keys() {
    let d = dir();
    let path = write(
        &d.path,
        "w.yaml",
        "name: w\ntoolsets:\n  shell:\n    rulez: []\n",
    );
    let message = config_error(load(&path));
    assert!(
        message.contains(&format!("{}:4:5", path.display())),
        "{message}"
    );
    assert!(message.contains("unknown field `rulez`"), "{message}");
    assert!(message.contains("rules"), "{message}");

    let path = write(&d.path, "w2.yaml", "name: w\ncolour: blue\n");
    let message = config_error(load(&path));
    assert!(message.contains(":2:1"), "{message}");
    assert!(message.contains("expected one of"), "{message}");
}

#[test]
fn positions_in_worker_files_count_the_opening_line() {
    let d = dir();
    let path = write(
        &d.path,
        "w.worker",
        "---\nname: w\nmax_steps: many\n---\nbody\n",
    );
    let message = config_error(load(&path));
    assert!(
        message.contains(&format!("{}:3:", path.display())),
        "{message}"
    );
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn malformed_documents_say_how_to_fix_them() {
    let d = dir();
    let message = config_error(load(&write(&d.path, "a.worker", "name: w\n")));
    assert!(message.contains("starts with a '---' line"), "{message}");
    let message = config_error(load(&write(&d.path, "b.worker", "---\nname: w\n")));
    assert!(message.contains("not closed"), "{message}");
    let message = config_error(load(&write(&d.path, "c.yaml", "name: [unclosed\n")));
    assert!(message.contains("c.yaml:"), "{message}");
    let message = config_error(load(&write(&d.path, "d.yaml", "description: no name\n")));
    assert!(message.contains("missing field `name`"), "{message}");
    let message = config_error(load(&write(
        &d.path,
        "e.worker",
        "---\nname: w\ninstructions: hi\n---\nalso hi\n",
    )));
    assert!(message.contains("given twice"), "{message}");
    let message = config_error(load(&write(&d.path, "f.yaml", "name: 'has space'\n")));
    assert!(message.contains("letters, digits"), "{message}");
    let message = config_error(load(&d.path.join("missing.yaml")));
    assert!(message.contains("missing.yaml"), "{message}");
    let message = config_error(load(&write(
        &d.path,
        "g.yaml",
        "name: w\napproval: { default: sometimes }\n",
    )));
    assert!(message.contains("sometimes"), "{message}");
}

#[test]
fn golem_forge_files_load_and_unsupported_keys_warn() {
    let d = dir();
    write(
        &d.path,
        "workers/greeter.worker",
        "---\nname: greeter\n---\nSay hello.\n",
    );
    let path = write(
        &d.path,
        "index.worker",
        "---\nname: orchestrator\ndescription: Delegates\nmode: chat\ncompatible_models: [\"anthropic:claude-*\"]\n\
         sandbox:\n  zones:\n    - name: scratch\n      mode: rw\ntoolsets:\n  filesystem: {}\n  workers:\n    allowed_workers:\n      - greeter\n---\nYou orchestrate.\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(
        worker.allowed_worker_paths,
        vec![d.path.join("workers/greeter.worker")]
    );
    assert_eq!(
        worker.compatible_models,
        vec!["anthropic:claude-*".to_string()]
    );
    assert_eq!(worker.warnings.len(), 2, "{:?}", worker.warnings);
    assert!(worker.warnings.iter().any(|w| w.contains("sandbox.zones")));
    assert!(worker.warnings.iter().any(|w| w.contains("chat")));
}

#[test]
fn allowed_workers_are_found_by_path_or_name_or_reported() {
    let d = dir();
    write(&d.path, "helpers/a.yaml", "name: a\n");
    write(&d.path, "b/index.worker", "---\nname: b\n---\n");
    let path = write(
        &d.path,
        "main.yaml",
        "name: main\ntoolsets:\n  workers:\n    allowed_workers: [helpers/a.yaml, b]\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(
        worker.allowed_worker_paths,
        vec![d.path.join("helpers/a.yaml"), d.path.join("b/index.worker")]
    );
    let path = write(
        &d.path,
        "bad.yaml",
        "name: bad\ntoolsets:\n  workers:\n    allowed_workers: [ghost]\n",
    );
    let message = config_error(load(&path));
    assert!(message.contains("'ghost' was not found"), "{message}");
    assert!(message.contains("ghost.worker"), "{message}");
}

#[test]
fn the_sandbox_sets_the_work_directory_and_cannot_escape_it() {
    let d = dir();
    std::fs::create_dir_all(d.path.join("project/src")).unwrap();
    let path = write(
        &d.path,
        "w.yaml",
        "name: w\nsandbox: { root: ./project, restrict: /src, readonly: true }\ntoolsets:\n  shell: {}\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(worker.work_dir, d.path.join("project/src"));
    assert!(worker.readonly);
    assert!(
        worker.warnings.is_empty(),
        "the kernel sandbox makes the work directory read-only for programs too: {:?}",
        worker.warnings
    );

    let path = write(
        &d.path,
        "x.yaml",
        "name: x\nsandbox: { root: ./project, restrict: ../.. }\n",
    );
    let message = config_error(load(&path));
    assert!(
        message.contains("PATH_OUTSIDE_ROOT") || message.contains("outside"),
        "{message}"
    );

    let path = write(&d.path, "y.yaml", "name: y\nsandbox: { root: ./nowhere }\n");
    assert!(config_error(load(&path)).contains("nowhere"));

    let elsewhere = d.path.join("project");
    let worker = load_worker(
        write(&d.path, "z.yaml", "name: z\n"),
        &LoadOptions {
            work_dir: Some(elsewhere.clone()),
            readonly: true,
        },
    )
    .unwrap();
    assert_eq!(worker.work_dir, elsewhere);
    assert!(
        worker.readonly,
        "a read-only caller makes the called worker read-only"
    );
}

#[test]
fn compatible_models_use_star_patterns() {
    let patterns = vec![
        "anthropic:claude-sonnet-4-*".to_string(),
        "openai:gpt-4o*".to_string(),
    ];
    assert!(model_is_compatible(
        &patterns,
        "anthropic:claude-sonnet-4-5"
    ));
    assert!(model_is_compatible(&patterns, "openai:gpt-4o"));
    assert!(model_is_compatible(&patterns, "openai:gpt-4o-mini"));
    assert!(!model_is_compatible(&patterns, "openai:gpt-3.5-turbo"));
    assert!(!model_is_compatible(
        &patterns,
        "xanthropic:claude-sonnet-4-5"
    ));
    assert!(model_is_compatible(&[], "anything:at-all"));
    assert!(model_is_compatible(&["*".to_string()], "a:b"));
    assert!(model_is_compatible(&["a:*-x-*".to_string()], "a:1-x-2"));
    assert!(!model_is_compatible(&["a:*-x-*".to_string()], "a:1-y-2"));
}

#[test]
fn the_published_schema_is_up_to_date() {
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/worker.schema.json");
    let text = std::fs::read_to_string(&published).unwrap_or_default();
    assert!(
        text == worker_json_schema(),
        "schemas/worker.schema.json is stale; regenerate it with `cargo run -p toolgate-core --example worker_schema > schemas/worker.schema.json`"
    );
}

#[test]
fn a_malformed_file_names_the_schema_by_its_package_path() {
    // A user's project has no schemas/ folder: the message names the schema as the package
    // ships it (package.json exports `./schemas/*`), which is where it is in node_modules.
    let d = dir();
    let path = write(&d.path, "worker.yaml", "name: w\nmax_steps: many\n");
    let message = config_error(load(&path));
    assert!(
        message.contains("worker.yaml:2:")
            && message.contains(
                "see the JSON Schema toolgate/schemas/worker.schema.json for the accepted shape"
            ),
        "{message}"
    );
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let relative = WORKER_SCHEMA_PATH.strip_prefix("toolgate/").unwrap();
    assert!(
        package.join(relative).is_file(),
        "{relative} is not in the package"
    );
    let manifest = std::fs::read_to_string(package.join("package.json")).unwrap();
    assert!(
        manifest.contains(r#""./schemas/*": "./schemas/*""#),
        "package.json does not export ./schemas/*"
    );
}

#[test]
fn delegation_cycles_and_depth_are_refused_with_the_chain() {
    let d = dir();
    write(
        &d.path,
        "a.yaml",
        "name: a\ntoolsets:\n  workers:\n    allowed_workers: [b]\n",
    );
    write(
        &d.path,
        "b.yaml",
        "name: b\ntoolsets:\n  workers:\n    allowed_workers: [a]\n",
    );
    let plan = |path: &Path| plan_worker(path, &LoadOptions::default());
    let message = plan(&d.path.join("a.yaml")).unwrap_err().to_string();
    assert!(message.contains("cycle"), "{message}");
    assert!(
        message.contains("a.yaml -> ") && message.contains("b.yaml -> "),
        "{message}"
    );

    for level in 0..7 {
        let next = if level < 6 {
            format!(
                "toolsets:\n  workers:\n    allowed_workers: [l{}]\n",
                level + 1
            )
        } else {
            String::new()
        };
        write(
            &d.path,
            &format!("l{level}.yaml"),
            &format!("name: l{level}\n{next}"),
        );
    }
    let message = plan(&d.path.join("l0.yaml")).unwrap_err().to_string();
    assert!(message.contains("more than 5 deep"), "{message}");
    plan(&d.path.join("l1.yaml")).unwrap();
}

/// The front matter (or whole YAML) of a worker file as JSON, for schema validation.
fn worker_yaml_as_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let (yaml, _, _) = split_document(&text, path).unwrap();
    serde_yaml::from_str(yaml).unwrap()
}

fn example_worker_files() -> Vec<PathBuf> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut found = Vec::new();
    let mut pending = vec![examples];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                pending.push(path);
            } else if name.ends_with(".worker") || name == "worker.yaml" {
                found.push(std::fs::canonicalize(path).unwrap());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn the_schema_and_the_parser_agree_on_the_examples_and_on_mistakes() {
    let schema =
        crate::schema::InputSchema::compile(&serde_json::from_str(&worker_json_schema()).unwrap())
            .unwrap();
    let examples = example_worker_files();
    assert!(examples.len() >= 3, "examples found: {examples:?}");
    for path in &examples {
        load(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let violations = schema.violations(&worker_yaml_as_json(path));
        assert!(violations.is_empty(), "{}: {violations:?}", path.display());
    }

    let d = dir();
    for (name, text) in [
        ("unknown-key.yaml", "name: w\ncolour: blue\n"),
        ("bad-type.yaml", "name: w\nmax_steps: many\n"),
        (
            "bad-decision.yaml",
            "name: w\napproval: { default: sometimes }\n",
        ),
        (
            "bad-toolset.yaml",
            "name: w\ntoolsets:\n  shell:\n    rulez: []\n",
        ),
        ("no-name.yaml", "description: nameless\n"),
    ] {
        let path = write(&d.path, name, text);
        config_error(load(&path));
        assert!(
            !schema.violations(&worker_yaml_as_json(&path)).is_empty(),
            "the schema accepts {name}, which the parser refuses"
        );
    }
}

#[test]
fn tool_call_format_is_native_by_default_or_xml() {
    let d = dir();
    let plain = write(&d.path, "plain.yaml", "name: plain\n");
    assert_eq!(
        load(&plain).unwrap().tool_call_format,
        ToolCallFormat::Native
    );
    let xml = write(&d.path, "xml.yaml", "name: xml\ntool_call_format: xml\n");
    assert_eq!(load(&xml).unwrap().tool_call_format, ToolCallFormat::Xml);
    let bad = write(&d.path, "bad.yaml", "name: bad\ntool_call_format: json\n");
    let message = config_error(load(&bad));
    assert!(message.contains("bad.yaml:2"), "{message}");
    assert!(
        message.contains("native") && message.contains("xml"),
        "{message}"
    );
}

#[test]
fn golem_forge_keys_load_with_sandbox_approval_mapped_and_warnings() {
    let d = dir();
    let path = write(
        &d.path,
        "main.worker",
        "---\nname: main\nallow_empty_input: false\nlocked: true\nmax_context_tokens: 8000\noutput_schema_ref: Summary\nattachment_policy:\n  max_attachments: 2\n  max_total_bytes: 1000\n  allowed_suffixes: [.pdf]\n  denied_suffixes: []\nserver_side_tools:\n  - { name: web_search, config: { max_uses: 3 } }\nsandbox:\n  approval: { write: false, delete: blocked }\ntoolsets:\n  filesystem: { approval: { tools: { write_file: ask } } }\n  code_agent: { group: all }\n---\nDo things.\n",
    );
    let worker = load(&path).unwrap();
    assert!(!worker.allow_empty_input);
    let fs = worker.toolsets.filesystem.as_ref().unwrap();
    let fs_tools = &fs.approval.as_ref().unwrap().tools;
    // The toolset's own entry wins over sandbox.approval.
    assert_eq!(fs_tools["write_file"], Decision::Ask);
    assert_eq!(fs_tools["delete_file"], Decision::Blocked);
    let code = &worker.toolsets.code_agent.as_ref().unwrap().approval;
    for tool in ["file_write", "file_edit", "file_patch"] {
        assert_eq!(
            code.as_ref().unwrap().tools[tool],
            Decision::PreApproved,
            "{tool}"
        );
    }
    assert_eq!(
        worker.attachment_policy.as_ref().unwrap().max_attachments,
        Some(2)
    );
    let warnings = worker.warnings.join("\n");
    assert!(!warnings.contains("attachment_policy"), "{warnings}");
    for expected in [
        "server_side_tools (web_search)",
        "locked is accepted",
        "max_context_tokens (8000)",
        "output_schema_ref ('Summary')",
    ] {
        assert!(warnings.contains(expected), "{expected}: {warnings}");
    }
    let default = write(&d.path, "plain.yaml", "name: plain\n");
    assert!(load(&default).unwrap().allow_empty_input);
    let bad = write(
        &d.path,
        "bad.yaml",
        "name: bad\nsandbox: { approval: { write: maybe } }\n",
    );
    assert!(config_error(load(&bad)).contains("bad.yaml"));
    let huge = write(
        &d.path,
        "huge.yaml",
        "name: huge\nattachment_policy: { max_total_bytes: 1000000000000 }\n",
    );
    let message = config_error(load(&huge));
    assert!(
        message.contains("huge.yaml") && message.contains("max_total_bytes"),
        "{message}"
    );
    let empty = write(
        &d.path,
        "empty.yaml",
        "name: empty\nattachment_policy: { denied_suffixes: [''] }\n",
    );
    assert!(config_error(load(&empty)).contains("may not be empty"));
}

#[test]
fn a_missing_restrict_folder_is_created_as_golem_forge_does_but_never_outside_the_root() {
    let d = dir();
    std::fs::create_dir_all(d.path.join("project")).unwrap();
    // golem-forge's note_taker: `restrict: /notes` before any note was written.
    let path = write(
        &d.path,
        "project/note_taker.worker",
        "---\nname: note_taker\ntoolsets:\n  filesystem: {}\nsandbox:\n  restrict: /notes\n---\nTake notes.\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(worker.work_dir, d.path.join("project/notes"));
    assert!(d.path.join("project/notes").is_dir());
    assert!(
        worker
            .warnings
            .iter()
            .any(|w| w.contains("did not exist; created")),
        "{:?}",
        worker.warnings
    );
    // Loading again finds it and says nothing more.
    assert!(load(&path).unwrap().warnings.is_empty());

    // Nested folders are made too.
    let nested = write(
        &d.path,
        "project/deep.yaml",
        "name: deep\nsandbox: { restrict: /a/b/c }\n",
    );
    assert_eq!(
        load(&nested).unwrap().work_dir,
        d.path.join("project/a/b/c")
    );

    // A read-only worker cannot create it.
    let readonly = write(
        &d.path,
        "project/ro.yaml",
        "name: ro\nsandbox: { restrict: /archive, readonly: true }\n",
    );
    let message = config_error(load(&readonly));
    assert!(
        message.contains("a read-only worker cannot create it"),
        "{message}"
    );
    assert!(!d.path.join("project/archive").exists());

    // Through a symlink, up the tree, or through a dangling symlink: refused, nothing created.
    let outside = d.path.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, d.path.join("project/out")).unwrap();
    std::os::unix::fs::symlink(outside.join("gone"), d.path.join("project/dangling")).unwrap();
    for restrict in [
        "/out/notes",
        "../outside/notes",
        "/dangling",
        "/dangling/x",
        "/notes/../../outside/n",
    ] {
        let escape = write(
            &d.path,
            "project/escape.yaml",
            &format!("name: escape\nsandbox: {{ restrict: '{restrict}' }}\n"),
        );
        let message = config_error(load(&escape));
        assert!(
            message.contains("PATH_OUTSIDE_ROOT") || message.contains("outside"),
            "{restrict}: {message}"
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "{restrict} created something outside"
        );
    }

    // A file where the folder should be stays an error.
    write(&d.path, "project/file", "x");
    let file = write(
        &d.path,
        "project/f.yaml",
        "name: f\nsandbox: { restrict: /file }\n",
    );
    assert!(config_error(load(&file)).contains("is not a directory"));
}

#[test]
fn workers_are_found_by_declared_name_and_in_worker_paths() {
    let d = dir();
    write(
        &d.path,
        "app/main.worker",
        "---\nname: main\ntoolsets:\n  workers:\n    allowed_workers: [pdf_analyzer, greeter]\n    worker_paths: [../shared]\n---\nRoute.\n",
    );
    let analyzer = write(
        &d.path,
        "app/analyzer.worker",
        "---\nname: pdf_analyzer\n---\nAnalyze.\n",
    );
    let greeter = write(
        &d.path,
        "shared/hello/index.worker",
        "---\nname: greeter\n---\nGreet.\n",
    );
    write(&d.path, "app/broken.worker", "not front matter");
    let worker = load(&d.path.join("app/main.worker")).unwrap();
    assert_eq!(worker.allowed_worker_paths, [analyzer, greeter]);

    write(&d.path, "app/workers/copy.yaml", "name: pdf_analyzer\n");
    let message = config_error(load(&d.path.join("app/main.worker")));
    assert!(
        message.contains("'pdf_analyzer' is declared by several files"),
        "{message}"
    );
    let lonely = write(
        &d.path,
        "lonely.yaml",
        "name: lonely\ntoolsets:\n  workers:\n    allowed_workers: [nobody]\n",
    );
    let message = config_error(load(&lonely));
    assert!(message.contains("declaring name 'nobody'"), "{message}");
}

#[test]
fn output_schema_ref_names_a_schema_file_or_warns_for_a_registry_name() {
    let d = dir();
    write(
        &d.path,
        "schemas/summary.json",
        r#"{"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}"#,
    );
    let path = write(
        &d.path,
        "w.yaml",
        "name: w\noutput_schema_ref: schemas/summary.json\n",
    );
    let worker = load(&path).unwrap();
    assert_eq!(
        worker.output_schema.as_ref().unwrap()["required"][0],
        "title"
    );
    assert!(worker.warnings.is_empty(), "{:?}", worker.warnings);
    let schema =
        crate::schema::OutputSchema::compile(worker.output_schema.as_ref().unwrap()).unwrap();
    assert_eq!(schema.problem(r#"{"title": "ok"}"#), None);
    assert!(schema.problem(r#"{"name": 1}"#).unwrap().contains("title"));
    assert!(schema.problem("plain text").is_some());

    let named = write(
        &d.path,
        "named.yaml",
        "name: n\noutput_schema_ref: Summary\n",
    );
    let worker = load(&named).unwrap();
    assert!(worker.output_schema.is_none());
    assert!(worker.warnings[0].contains("output_schema_ref ('Summary')"));

    for (file, text, expected) in [
        (
            "missing.yaml",
            "name: m\noutput_schema_ref: nope.json\n",
            "cannot be read",
        ),
        (
            "notjson.yaml",
            "name: m\noutput_schema_ref: bad.json\n",
            "is not JSON",
        ),
        (
            "notschema.yaml",
            "name: m\noutput_schema_ref: odd.yaml\n",
            "does not compile",
        ),
    ] {
        write(&d.path, "bad.json", "{oops");
        write(&d.path, "odd.yaml", "type: 12\n");
        let message = config_error(load(&write(&d.path, file, text)));
        assert!(message.contains(expected), "{file}: {message}");
        assert!(message.contains("output_schema_ref"), "{message}");
    }
}

#[test]
fn file_toolset_path_rules_are_read_checked_and_make_their_tools_decided_per_call() {
    let d = dir();
    let path = write(
        &d.path,
        "w.yaml",
        "name: w\napproval:\n  tools: { file_write: ask }\ntoolsets:\n  code_agent:\n    approval:\n      tools: { file_patch: blocked }\n      paths:\n        - { pattern: \".env*\", approval: blocked }\n        - { pattern: \"src/**\", approval: preApproved }\n  filesystem: {}\n",
    );
    let worker = load(&path).unwrap();
    let rules = &worker
        .toolsets
        .code_agent
        .as_ref()
        .unwrap()
        .approval
        .as_ref()
        .unwrap()
        .paths;
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].approval, crate::Decision::Blocked);
    let plan = plan_worker(&path, &LoadOptions::default()).unwrap();
    let decided = plan.decide(&BTreeMap::new()).unwrap();
    let tool = |name: &str| {
        decided[0]
            .iter()
            .find(|tool| tool.name == name)
            .unwrap()
            .resolved
    };
    // Offered tools of the toolset with rules are decided per call; a blocked one stays blocked.
    assert!(tool("file_read").dynamic && tool("file_write").dynamic);
    assert!(!tool("file_patch").dynamic);
    // The worker-level entry is the floor a rule cannot go below.
    assert_eq!(tool("file_write").path_floor, Some(crate::Decision::Ask));
    // The other file toolset has no rules of its own.
    assert!(!tool("read_file").dynamic);

    for (pattern, said) in [
        ("!.env", "negation"),
        ("a/../b", "'..'"),
        ("[x", "not a valid glob"),
    ] {
        let bad = write(
            &d.path,
            "bad.yaml",
            &format!("name: bad\ntoolsets:\n  filesystem:\n    approval:\n      paths: [{{ pattern: \"{pattern}\", approval: ask }}]\n"),
        );
        let plan = plan_worker(&bad, &LoadOptions::default()).unwrap();
        let err = plan.decide(&BTreeMap::new()).unwrap_err();
        let message = err.to_string();
        assert_eq!(err.code(), "CONFIG_INVALID", "{message}");
        assert!(
            message.contains("bad.yaml: toolsets.filesystem approval.paths[0]")
                && message.contains(said),
            "{pattern}: {message}"
        );
    }
    let unknown = write(
        &d.path,
        "unknown.yaml",
        "name: u\ntoolsets:\n  filesystem:\n    approval:\n      paths: [{ pattern: x, approval: ask, why: no }]\n",
    );
    assert!(config_error(load(&unknown)).contains("why"));
    // Path rules belong to file toolsets only.
    let shell = write(
        &d.path,
        "elsewhere.yaml",
        "name: e\napproval:\n  paths: [{ pattern: x, approval: ask }]\n",
    );
    assert!(config_error(load(&shell)).contains("paths"));
}
