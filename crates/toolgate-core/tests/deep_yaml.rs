//! Deeply nested YAML in worker files and `tool.yaml` manifests is refused in milliseconds with
//! `CONFIG_INVALID` naming the file, the line and the limit (it used to take seconds to minutes
//! inside the YAML parser before serde_yaml refused it).

use std::time::{Duration, Instant};

use toolgate_core::executables::manifest::Manifest;
use toolgate_core::worker::{load_worker, LoadOptions};

/// Generous: the check takes milliseconds; 50k levels used to take over 30 seconds.
const DID_NOT_HANG: Duration = Duration::from_secs(5);

fn nested(form: &str, depth: usize) -> String {
    match form {
        "flow sequence" => format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
        "flow mapping" => format!("{}x{}", "{a: ".repeat(depth), "}".repeat(depth)),
        "block sequence" => format!("\n  {}x", "- ".repeat(depth)),
        _ => unreachable!(),
    }
}

const FORMS: [&str; 3] = ["flow sequence", "flow mapping", "block sequence"];
const DEPTHS: [usize; 4] = [101, 16_000, 50_000, 1_000_000];

#[test]
fn worker_files_nested_too_deep_are_config_invalid_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    for form in FORMS {
        for depth in DEPTHS {
            let extra = nested(form, depth);
            for (name, text) in [
                (
                    "deep.yaml",
                    format!("model: openai:gpt-4o\ninstructions: hi\nextra: {extra}\n"),
                ),
                (
                    "deep.worker",
                    format!("---\nmodel: openai:gpt-4o\nextra: {extra}\n---\nInstructions.\n"),
                ),
            ] {
                let path = dir.path().join(name);
                std::fs::write(&path, text).unwrap();
                let started = Instant::now();
                let err = load_worker(&path, &LoadOptions::default()).unwrap_err();
                let took = started.elapsed();
                assert!(took < DID_NOT_HANG, "{form} {depth}: {took:?}");
                assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
                let message = err.to_string();
                let line = if form == "block sequence" { 4 } else { 3 };
                let place = format!("{}:{line}:", path.canonicalize().unwrap().display());
                assert!(
                    message.starts_with(&place),
                    "{form} {depth}: {message:.300}"
                );
                assert!(message.contains("more than 100 levels"), "{message:.300}");
            }
        }
    }
}

#[test]
fn manifests_nested_too_deep_are_refused_with_the_line() {
    for form in FORMS {
        for depth in DEPTHS {
            let text = format!(
                "name: deep\ndescription: d\nentrypoint: run.sh\nparameters: {}\n",
                nested(form, depth)
            );
            let started = Instant::now();
            let err = Manifest::parse(&text).unwrap_err();
            assert!(started.elapsed() < DID_NOT_HANG, "{form} {depth}");
            assert!(
                err.starts_with("tool.yaml is not valid: YAML nested more than 100 levels"),
                "{err:.300}"
            );
            assert!(
                err.contains(" at line 4 ") || err.contains(" at line 5 "),
                "{err:.300}"
            );
        }
    }
    // Through the file, as discovery reads it (the manifest size limit applies first).
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("tool.yaml");
    let text = format!(
        "name: deep\ndescription: d\nentrypoint: run.sh\nparameters: {}\n",
        nested("flow mapping", 16_000)
    );
    std::fs::write(&manifest, text).unwrap();
    let err = Manifest::load(&manifest).unwrap_err();
    assert!(err.contains("more than 100 levels"), "{err:.300}");
}

#[test]
fn ordinary_nesting_and_brackets_in_text_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.yaml");
    std::fs::write(
        &path,
        "name: ok\nmodel: openai:gpt-4o\ninstructions: |\n  Use [brackets] and {braces} freely: [[[[[[[[[[\n",
    )
    .unwrap();
    let worker = load_worker(&path, &LoadOptions::default()).unwrap();
    assert!(worker.instructions.contains("[[[[[[[[[["));
}
