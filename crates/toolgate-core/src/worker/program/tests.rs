//! golem-forge program configurations on real folders.

use std::path::{Path, PathBuf};

use crate::worker::test_support::{config_error, dir, load, write, Dir};
use crate::worker::{plan_worker, LoadOptions};

/// A golem-forge program folder with `config` as its `golem-forge.config.yaml`.
fn program(config: &str) -> Dir {
    let program = dir();
    write(&program.path, "golem-forge.config.yaml", config);
    program
}

#[test]
fn the_program_sets_the_sandbox_root_readonly_and_model_of_its_workers() {
    // golem-forge's file_manager example: `sandbox.root: "workspace"`.
    let p = program(
        "# Program config\nmodel: anthropic:claude-haiku-4-5\nsandbox:\n  root: \"workspace\"\n",
    );
    std::fs::create_dir(p.path.join("workspace")).unwrap();
    let main = write(
        &p.path,
        "main.worker",
        "---\nname: file_manager\ntoolsets:\n  filesystem: {}\n---\nManage.\n",
    );
    let worker = load(&main).unwrap();
    assert_eq!(worker.work_dir, p.path.join("workspace"));
    assert_eq!(worker.model.as_deref(), Some("anthropic:claude-haiku-4-5"));
    assert!(!worker.readonly);
    assert_eq!(
        worker.program_config,
        Some(p.path.join("golem-forge.config.yaml"))
    );
    assert!(worker.warnings.is_empty(), "{:?}", worker.warnings);

    // A worker deeper in the program uses the nearest config; its own keys win.
    let nested = write(
        &p.path,
        "workers/reader.worker",
        "---\nname: reader\nmodel: openai:gpt-4o\nsandbox: { root: ../docs }\n---\nRead.\n",
    );
    std::fs::create_dir(p.path.join("docs")).unwrap();
    let worker = load(&nested).unwrap();
    assert_eq!(worker.work_dir, p.path.join("docs"));
    assert_eq!(worker.model.as_deref(), Some("openai:gpt-4o"));

    // `readonly: true` makes every worker of the program read-only.
    let p = program("sandbox: { readonly: true }\n");
    let main = write(
        &p.path,
        "main.worker",
        "---\nname: m\ntoolsets:\n  filesystem: {}\n---\nLook.\n",
    );
    let worker = load(&main).unwrap();
    assert!(worker.readonly);
    assert_eq!(worker.work_dir, p.path);

    // A root that does not exist is named, as a worker's own `sandbox.root` is.
    let p = program("sandbox: { root: nowhere }\n");
    let main = write(&p.path, "main.worker", "---\nname: m\n---\nx\n");
    assert!(config_error(load(&main)).contains("nowhere"));
}

#[test]
fn a_wrong_program_config_is_an_error_naming_the_file_and_the_place() {
    for (config, expected) in [
        ("workerPaths: 3\n", "invalid type"),
        (
            "sandbox:\n  root: .\n  zones: []\n",
            "unknown field `zones`",
        ),
        ("modle: x\n", "unknown field `modle`"),
        (
            "approval: { mode: sometimes }\n",
            "unknown variant `sometimes`",
        ),
        (
            "delegation: { maxDepth: 0 }\n",
            "maxDepth must be at least 1",
        ),
        ("delegation: { maxDepth: -1 }\n", "maxDepth"),
        ("sandbox: [\n", "golem-forge.config.yaml"),
    ] {
        let p = program(config);
        let main = write(&p.path, "app/main.worker", "---\nname: m\n---\nx\n");
        let message = config_error(load(&main));
        assert!(
            message.contains(&p.path.join("golem-forge.config.yaml").display().to_string()),
            "{config}: {message}"
        );
        assert!(message.contains(expected), "{config}: {message}");
    }
    // An empty config is a program with every default.
    let p = program("");
    let main = write(&p.path, "main.worker", "---\nname: m\n---\nx\n");
    assert_eq!(load(&main).unwrap().work_dir, p.path);
}

#[test]
fn approval_modes_are_not_granted_by_the_file_and_say_which_flag_does_it() {
    let p = program("approval:\n  mode: approve_all\n");
    let main = write(&p.path, "main.worker", "---\nname: m\n---\nx\n");
    let warnings = load(&main).unwrap().warnings.join("\n");
    assert!(
        warnings.contains("approve_all' is not acted on"),
        "{warnings}"
    );
    assert!(warnings.contains("--yes"), "{warnings}");

    let p = program("approval: { mode: auto_deny }\n");
    let main = write(&p.path, "main.worker", "---\nname: m\n---\nx\n");
    assert!(load(&main).unwrap().warnings.join("\n").contains("--deny"));

    let p = program("approval: { mode: interactive }\n");
    let main = write(&p.path, "main.worker", "---\nname: m\n---\nx\n");
    assert!(load(&main).unwrap().warnings.is_empty());
}

fn chain(root: &Path, length: usize) -> PathBuf {
    for index in 0..length {
        let calls = if index + 1 < length {
            format!(
                "toolsets:\n  workers:\n    allowed_workers: [w{}]\n",
                index + 1
            )
        } else {
            String::new()
        };
        write(
            root,
            &format!("w{index}.worker"),
            &format!("---\nname: w{index}\n{calls}---\nx\n"),
        );
    }
    root.join("w0.worker")
}

#[test]
fn delegation_max_depth_lowers_the_nesting_limit_and_never_raises_it() {
    // w0 -> w1 -> w2: nested 2 deep.
    let p = program("delegation: { maxDepth: 2 }\n");
    assert!(plan_worker(&chain(&p.path, 3), &LoadOptions::default()).is_ok());
    let p = program("delegation: { maxDepth: 1 }\n");
    let err = plan_worker(&chain(&p.path, 3), &LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(
        err.to_string()
            .contains("more than 1 deep (delegation.maxDepth"),
        "{err}"
    );

    // Above toolgate's limit: the limit stays, and the warning says so.
    let p = program("delegation: { maxDepth: 50 }\n");
    let top = chain(&p.path, 7);
    let warnings = load(&top).unwrap().warnings.join("\n");
    assert!(
        warnings.contains("maxDepth 50 is above toolgate's limit"),
        "{warnings}"
    );
    let err = plan_worker(&top, &LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("more than 5 deep"), "{err}");
}

#[test]
fn a_changed_program_config_stops_the_planned_workers() {
    let p = program("model: a:b\n");
    let main = write(&p.path, "main.worker", "---\nname: m\n---\nx\n");
    let plan = plan_worker(&main, &LoadOptions::default()).unwrap();
    assert!(plan.verify(0).is_ok());
    std::fs::write(
        p.path.join("golem-forge.config.yaml"),
        "model: c:d\nsandbox: { readonly: false }\n",
    )
    .unwrap();
    let err = plan.verify(0).unwrap_err();
    assert!(err.to_string().contains("golem-forge"), "{err}");
}
