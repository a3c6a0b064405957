//! Name lookup of allowed workers across a project, on real folders (golem-forge's layouts).

use std::path::PathBuf;

use crate::worker::test_support::{config_error, dir, load, write, Dir};

/// A project folder (marked by `package.json`, as golem-forge's repository is).
fn project() -> Dir {
    let project = dir();
    write(&project.path, "package.json", "{}");
    project
}

fn worker_file(name: &str) -> String {
    format!("---\nname: {name}\n---\nDo the {name} thing.\n")
}

/// `examples/orchestrator/main.worker`, allowed to call `allowed`.
fn orchestrator(project: &Dir, allowed: &[&str]) -> PathBuf {
    write(
        &project.path,
        "examples/orchestrator/main.worker",
        &caller(allowed),
    )
}

fn caller(allowed: &[&str]) -> String {
    format!(
        "---\nname: orchestrator\ntoolsets:\n  workers:\n    allowed_workers: [{}]\n---\nRoute.\n",
        allowed.join(", ")
    )
}

#[test]
fn golem_forge_examples_find_a_sibling_example_by_name_nearest_folder_first() {
    let p = project();
    let main = orchestrator(&p, &["greeter", "math"]);
    let math = write(
        &p.path,
        "examples/orchestrator/workers/math.worker",
        &worker_file("math"),
    );
    let greeter = write(
        &p.path,
        "examples/greeter/main.worker",
        &worker_file("greeter"),
    );
    // A farther greeter (at the project root's level) loses to the nearer one.
    write(
        &p.path,
        "experiments/04-worker-parsing/workers/greeter.worker",
        &worker_file("greeter"),
    );
    let worker = load(&main).unwrap();
    assert_eq!(worker.allowed_worker_paths, [greeter, math]);
}

#[test]
fn a_name_is_found_by_file_name_folder_name_or_declared_name_at_any_depth() {
    for (layout, name) in [
        ("examples/a/b/c/greeter.worker", "anything"),
        ("examples/a/greeter/index.worker", "anything"),
        ("examples/a/b/hello.worker", "greeter"),
    ] {
        let p = project();
        let main = orchestrator(&p, &["greeter"]);
        let target = write(&p.path, layout, &worker_file(name));
        let worker = load(&main).unwrap();
        assert_eq!(worker.allowed_worker_paths, [target], "{layout}");
        // The search went through the work directory (the worker's folder): a worker file the
        // agent makes there would be found instead, which the load says.
        assert!(
            worker.warnings.iter().any(|warning| warning
                .contains("allowed worker 'greeter' was found by searching the project")
                && warning.contains("name it by its path")),
            "{layout}: {:?}",
            worker.warnings
        );
    }
}

#[test]
fn two_matches_in_the_nearest_folder_are_an_error_naming_both() {
    let p = project();
    let main = orchestrator(&p, &["greeter"]);
    let one = write(
        &p.path,
        "examples/one/greeter.worker",
        &worker_file("greeter"),
    );
    let two = write(
        &p.path,
        "examples/two/hello.worker",
        &worker_file("greeter"),
    );
    let message = config_error(load(&main));
    assert!(
        message.contains("matches several worker files"),
        "{message}"
    );
    assert!(message.contains(&one.display().to_string()), "{message}");
    assert!(message.contains(&two.display().to_string()), "{message}");
    assert!(message.contains("name one by its path"), "{message}");
}

#[test]
fn hidden_folders_node_modules_yaml_files_and_symlinked_folders_are_not_searched() {
    let p = project();
    let main = orchestrator(&p, &["greeter"]);
    write(
        &p.path,
        "node_modules/pkg/greeter.worker",
        &worker_file("greeter"),
    );
    write(&p.path, ".cache/greeter.worker", &worker_file("greeter"));
    // The recursive search reads `.worker` files only: any YAML file may have a `name:` key.
    write(&p.path, "examples/ci/greeter.yaml", "name: greeter\n");
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "greeter.worker", &worker_file("greeter"));
    std::os::unix::fs::symlink(outside.path(), p.path.join("examples/linked")).unwrap();
    // A symlink loop does not hang the search.
    std::os::unix::fs::symlink(&p.path, p.path.join("examples/loop")).unwrap();
    let message = config_error(load(&main));
    assert!(message.contains("'greeter' was not found"), "{message}");
    assert!(
        message.contains(&format!(
            "under {}",
            p.path.join("examples/orchestrator").display()
        )),
        "{message}"
    );
}

#[test]
fn without_a_project_marker_only_the_worker_folder_is_searched() {
    let p = project();
    std::fs::remove_file(p.path.join("package.json")).unwrap();
    let main = orchestrator(&p, &["greeter"]);
    write(
        &p.path,
        "examples/greeter/main.worker",
        &worker_file("greeter"),
    );
    let message = config_error(load(&main));
    assert!(message.contains("'greeter' was not found"), "{message}");

    let nested = write(
        &p.path,
        "examples/orchestrator/team/greeter.worker",
        &worker_file("greeter"),
    );
    assert_eq!(load(&main).unwrap().allowed_worker_paths, [nested]);
}

#[test]
fn the_programs_worker_paths_or_its_default_folders_are_searched() {
    // golem-forge.config.yaml's workerPaths, relative to the program folder, even outside it.
    for (config, shared) in [
        ("workerPaths: [../shared, .agents]\n", "shared/people"),
        ("workerPaths: ['../shared/']\nmodel: x:y\n", "shared"),
    ] {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let root = base.join("program");
        write(&root, "golem-forge.config.yml", config);
        let main = write(&root, "main.worker", &caller(&["greeter"]));
        let greeter = write(
            &base,
            &format!("{shared}/greeter.worker"),
            &worker_file("greeter"),
        );
        assert_eq!(
            load(&main).unwrap().allowed_worker_paths,
            [greeter],
            "{config}"
        );
    }
    // Without workerPaths: the program's `workers` and hidden `.workers` folders.
    let p = project();
    write(&p.path, "golem-forge.config.yaml", "sandbox: { root: . }\n");
    let main = write(&p.path, "app/main.worker", &caller(&["math"]));
    let math = write(&p.path, ".workers/math.worker", &worker_file("math"));
    assert_eq!(load(&main).unwrap().allowed_worker_paths, [math]);
}

#[test]
fn a_program_folder_is_its_own_project_so_a_sibling_program_is_not_searched() {
    let p = project();
    write(
        &p.path,
        "examples/pdf_analyzer/golem-forge.config.yaml",
        "sandbox:\n  root: \".\"\n",
    );
    let main = write(
        &p.path,
        "examples/pdf_analyzer/main.worker",
        &caller(&["greeter"]),
    );
    write(
        &p.path,
        "examples/greeter/main.worker",
        &worker_file("greeter"),
    );
    let message = config_error(load(&main));
    assert!(message.contains("'greeter' was not found"), "{message}");
}

#[test]
fn a_path_entry_is_never_searched_for() {
    let p = project();
    let main = orchestrator(&p, &["./greeter.worker"]);
    write(
        &p.path,
        "examples/greeter/greeter.worker",
        &worker_file("greeter"),
    );
    let message = config_error(load(&main));
    assert!(
        message.contains("'./greeter.worker' was not found"),
        "{message}"
    );
}

#[test]
fn the_search_is_bounded() {
    let p = project();
    let main = write(&p.path, "app/main.worker", &caller(&["greeter"]));
    let crowd = p.path.join("crowd");
    std::fs::create_dir(&crowd).unwrap();
    for index in 0..crate::limits::MAX_WORKER_SEARCH_ENTRIES + 10 {
        std::fs::File::create(crowd.join(format!("f{index}"))).unwrap();
    }
    write(&p.path, "zzz/greeter.worker", &worker_file("greeter"));
    let message = config_error(load(&main));
    assert!(message.contains("the search stopped after"), "{message}");
}
