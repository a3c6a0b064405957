use super::*;
use crate::executables::test_support::{
    count, discovery_options, protocol_tool, Scratch, OBJECT_SCHEMA,
};
use crate::executables::RunOptions;
use serde_json::json;

fn registry(scratch: &Scratch, dirs: &[&std::path::Path]) -> Registry {
    Registry::new(RegistryOptions {
        discovery: discovery_options(dirs, &scratch.path().join("cache")),
        run: RunOptions::new(scratch.dir("work")),
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_runs_its_tools_by_name() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(
        &dir,
        "upper",
        "upper",
        OBJECT_SCHEMA,
        &counter,
        "    tr a-z A-Z",
    );
    let registry = registry(&scratch, &[&dir]);
    assert!(registry.tools().is_empty());
    let discovery = registry.refresh(false).await.unwrap();
    assert_eq!(discovery.tools.len(), 1);
    assert_eq!(registry.tools()[0].name, "upper");
    let output = registry
        .prepare("upper", &json!({"text": "shout"}))
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(output.result, json!({"TEXT": "SHOUT"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_are_tool_not_found_naming_the_known_ones() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(&dir, "known", "known", OBJECT_SCHEMA, &counter, "cat");
    let registry = registry(&scratch, &[&dir]);
    let err = registry
        .prepare("known", &json!({"text": "x"}))
        .unwrap_err();
    assert!(
        err.to_string().contains("no tools were discovered"),
        "{err}"
    );
    registry.refresh(false).await.unwrap();
    let err = registry
        .prepare("custom_tool_known", &json!({}))
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_NOT_FOUND");
    assert!(err.to_string().contains("known tools: known"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn refreshing_keeps_what_was_learnt_and_picks_up_changes() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(&dir, "one", "one", OBJECT_SCHEMA, &counter, "cat");
    let registry = registry(&scratch, &[&dir]);
    registry.refresh(false).await.unwrap();
    let again = registry.refresh(false).await.unwrap();
    assert_eq!(again.stats.spawned, 0);
    assert_eq!(again.stats.from_memory, 1);
    assert_eq!(count(&counter), 1);

    std::fs::remove_file(dir.join("one")).unwrap();
    protocol_tool(&dir, "two", "two", OBJECT_SCHEMA, &counter, "cat");
    registry.refresh(false).await.unwrap();
    let names: Vec<String> = registry.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["two"]);
    assert_eq!(
        registry.prepare("one", &json!({})).unwrap_err().code(),
        "TOOL_NOT_FOUND"
    );

    let forced = registry.refresh(true).await.unwrap();
    assert_eq!(forced.stats.spawned, 1);
}

#[test]
fn bad_options_are_refused_when_the_registry_is_made() {
    let scratch = Scratch::new();
    let mut run = RunOptions::new(scratch.path());
    run.timeout = std::time::Duration::ZERO;
    let err = Registry::new(RegistryOptions {
        discovery: discovery_options(&[], &scratch.path().join("cache")),
        run,
    })
    .unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
}
