//! Name lookup of allowed workers across a project, on real folders (golem-forge's layouts).

use std::path::{Path, PathBuf};

use crate::worker::{load_worker, LoadOptions, Worker};

struct Project {
    _temp: tempfile::TempDir,
    root: PathBuf,
}

/// A project folder (marked by `package.json`, as golem-forge's repository is).
fn project() -> Project {
    let temp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(temp.path()).unwrap();
    std::fs::write(root.join("package.json"), "{}").unwrap();
    Project { _temp: temp, root }
}

fn write(root: &Path, name: &str, text: &str) -> PathBuf {
    let path = root.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn worker_file(name: &str) -> String {
    format!("---\nname: {name}\n---\nDo the {name} thing.\n")
}

fn caller(allowed: &[&str]) -> String {
    format!(
        "---\nname: orchestrator\ntoolsets:\n  workers:\n    allowed_workers: [{}]\n---\nRoute.\n",
        allowed.join(", ")
    )
}

fn load(path: &Path) -> crate::error::Result<Worker> {
    load_worker(path, &LoadOptions::default())
}

fn error(path: &Path) -> String {
    match load(path) {
        Err(err) => {
            assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
            err.to_string()
        }
        Ok(worker) => panic!(
            "expected CONFIG_INVALID, got {:?}",
            worker.allowed_worker_paths
        ),
    }
}

#[test]
fn golem_forge_examples_find_a_sibling_example_by_name_nearest_folder_first() {
    let p = project();
    let main = write(
        &p.root,
        "examples/orchestrator/main.worker",
        &caller(&["greeter", "math"]),
    );
    let math = write(
        &p.root,
        "examples/orchestrator/workers/math.worker",
        &worker_file("math"),
    );
    let greeter = write(
        &p.root,
        "examples/greeter/main.worker",
        &worker_file("greeter"),
    );
    // A farther greeter (at the project root's level) loses to the nearer one.
    write(
        &p.root,
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
        let main = write(
            &p.root,
            "examples/orchestrator/main.worker",
            &caller(&["greeter"]),
        );
        let target = write(&p.root, layout, &worker_file(name));
        let worker = load(&main).unwrap();
        assert_eq!(worker.allowed_worker_paths, [target], "{layout}");
    }
}

#[test]
fn two_matches_in_the_nearest_folder_are_an_error_naming_both() {
    let p = project();
    let main = write(
        &p.root,
        "examples/orchestrator/main.worker",
        &caller(&["greeter"]),
    );
    let one = write(
        &p.root,
        "examples/one/greeter.worker",
        &worker_file("greeter"),
    );
    let two = write(
        &p.root,
        "examples/two/hello.worker",
        &worker_file("greeter"),
    );
    let message = error(&main);
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
    let main = write(
        &p.root,
        "examples/orchestrator/main.worker",
        &caller(&["greeter"]),
    );
    write(
        &p.root,
        "node_modules/pkg/greeter.worker",
        &worker_file("greeter"),
    );
    write(&p.root, ".cache/greeter.worker", &worker_file("greeter"));
    // The recursive search reads `.worker` files only: any YAML file may have a `name:` key.
    write(&p.root, "examples/ci/greeter.yaml", "name: greeter\n");
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "greeter.worker", &worker_file("greeter"));
    std::os::unix::fs::symlink(outside.path(), p.root.join("examples/linked")).unwrap();
    // A symlink loop does not hang the search.
    std::os::unix::fs::symlink(&p.root, p.root.join("examples/loop")).unwrap();
    let message = error(&main);
    assert!(message.contains("'greeter' was not found"), "{message}");
    assert!(
        message.contains(&format!(
            "under {}",
            p.root.join("examples/orchestrator").display()
        )),
        "{message}"
    );
}

#[test]
fn without_a_project_marker_only_the_worker_folder_is_searched() {
    let p = project();
    std::fs::remove_file(p.root.join("package.json")).unwrap();
    let main = write(
        &p.root,
        "examples/orchestrator/main.worker",
        &caller(&["greeter"]),
    );
    write(
        &p.root,
        "examples/greeter/main.worker",
        &worker_file("greeter"),
    );
    let message = error(&main);
    assert!(message.contains("'greeter' was not found"), "{message}");

    let nested = write(
        &p.root,
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
    write(&p.root, "golem-forge.config.yaml", "sandbox: { root: . }\n");
    let main = write(&p.root, "app/main.worker", &caller(&["math"]));
    let math = write(&p.root, ".workers/math.worker", &worker_file("math"));
    assert_eq!(load(&main).unwrap().allowed_worker_paths, [math]);
}

#[test]
fn a_program_folder_is_its_own_project_so_a_sibling_program_is_not_searched() {
    let p = project();
    write(
        &p.root,
        "examples/pdf_analyzer/golem-forge.config.yaml",
        "sandbox:\n  root: \".\"\n",
    );
    let main = write(
        &p.root,
        "examples/pdf_analyzer/main.worker",
        &caller(&["greeter"]),
    );
    write(
        &p.root,
        "examples/greeter/main.worker",
        &worker_file("greeter"),
    );
    let message = error(&main);
    assert!(message.contains("'greeter' was not found"), "{message}");
}

#[test]
fn a_path_entry_is_never_searched_for() {
    let p = project();
    let main = write(
        &p.root,
        "examples/orchestrator/main.worker",
        &caller(&["./greeter.worker"]),
    );
    write(
        &p.root,
        "examples/greeter/greeter.worker",
        &worker_file("greeter"),
    );
    let message = error(&main);
    assert!(
        message.contains("'./greeter.worker' was not found"),
        "{message}"
    );
}

#[test]
fn the_search_is_bounded() {
    let p = project();
    let main = write(&p.root, "app/main.worker", &caller(&["greeter"]));
    let crowd = p.root.join("crowd");
    std::fs::create_dir(&crowd).unwrap();
    for index in 0..crate::limits::MAX_WORKER_SEARCH_ENTRIES + 10 {
        std::fs::File::create(crowd.join(format!("f{index}"))).unwrap();
    }
    write(&p.root, "zzz/greeter.worker", &worker_file("greeter"));
    let message = error(&main);
    assert!(message.contains("the search stopped after"), "{message}");
}
