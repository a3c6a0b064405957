use std::os::unix::fs::PermissionsExt;
use std::time::SystemTime;

use super::*;
use crate::executables::cache::CACHE_FILE;
use crate::executables::manifest::MANIFEST_FILE;
use crate::executables::test_support::{
    count, discovery_options, protocol_tool, write_script, Scratch, OBJECT_SCHEMA,
};
use crate::executables::{Diagnostic, DiagnosticKind, ToolFormat};

async fn fresh(options: &DiscoveryOptions) -> Discovery {
    discover(options, Arc::new(Snapshot::default()), false)
        .await
        .unwrap()
        .0
}

fn names(discovery: &Discovery) -> Vec<&str> {
    discovery.tools.iter().map(|t| t.name.as_str()).collect()
}

fn diagnostic_for<'a>(discovery: &'a Discovery, path: &Path) -> &'a Diagnostic {
    discovery
        .diagnostics
        .iter()
        .find(|d| d.path == path)
        .unwrap_or_else(|| {
            panic!(
                "no diagnostic for {}: {:#?}",
                path.display(),
                discovery.diagnostics
            )
        })
}

const MANIFEST: &str = "name: greet\ndescription: Greets\nentrypoint: run.sh\nparameters:\n  - { name: who, type: string, required: true }\n";

fn manifest_tool(dir: &Path, folder: &str, yaml: &str) -> PathBuf {
    let tool_dir = dir.join(folder);
    std::fs::create_dir_all(&tool_dir).unwrap();
    std::fs::write(tool_dir.join(MANIFEST_FILE), yaml).unwrap();
    write_script(&tool_dir, "run.sh", "#!/bin/sh\necho \"hello $1\"\n");
    tool_dir.join(MANIFEST_FILE)
}

#[tokio::test(flavor = "multi_thread")]
async fn protocol_executables_and_manifest_directories_are_both_found() {
    let scratch = Scratch::new();
    let kodelet = scratch.dir("kodelet");
    let forge = scratch.dir("forge");
    let counter = scratch.path().join("counter");
    protocol_tool(&kodelet, "echo.sh", "echo", OBJECT_SCHEMA, &counter, "cat");
    let manifest = manifest_tool(&forge, "greet", MANIFEST);
    std::fs::write(kodelet.join(".hidden"), "not a tool").unwrap();

    let discovery = fresh(&discovery_options(
        &[&kodelet, &forge],
        &scratch.path().join("c"),
    ))
    .await;
    assert!(
        discovery.diagnostics.is_empty(),
        "{:#?}",
        discovery.diagnostics
    );
    assert_eq!(names(&discovery), ["echo", "greet"]);
    let echo = &discovery.tools[0];
    assert_eq!(echo.format, ToolFormat::Protocol);
    assert_eq!(echo.source, kodelet.join("echo.sh"));
    assert_eq!(echo.directory, kodelet);
    assert_eq!(echo.input_schema_value()["required"][0], "text");
    let greet = &discovery.tools[1];
    assert_eq!(greet.format, ToolFormat::Manifest);
    assert_eq!(greet.source, manifest);
    assert_eq!(greet.program, forge.join("greet/run.sh"));
    assert_eq!(
        greet.input_schema_value()["properties"]["who"]["type"],
        "string"
    );
    assert_eq!(discovery.stats.spawned, 1);
}

/// Every malformed tool is reported with its path and the reason; the good ones still load.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_tools_are_reported_never_dropped() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(&dir, "good", "good", OBJECT_SCHEMA, &counter, "cat");
    let bad_json = write_script(&dir, "bad_json", "#!/bin/sh\necho '{name: nope'\n");
    let no_name = write_script(
        &dir,
        "no_name",
        "#!/bin/sh\necho '{\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}}'\n",
    );
    let bad_schema = write_script(
        &dir,
        "bad_schema",
        "#!/bin/sh\necho '{\"name\":\"bad_schema\",\"description\":\"d\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"nonsense\"}}}}'\n",
    );
    let hangs = write_script(&dir, "hangs", "#!/bin/sh\nsleep 30 &\nwait\n");
    let exits = write_script(
        &dir,
        "exits",
        "#!/bin/sh\necho 'boom: missing module' >&2\nexit 1\n",
    );
    let plain = dir.join("README.md");
    std::fs::write(&plain, "# notes").unwrap();
    let dir_link = dir.join("linked_dir");
    std::os::unix::fs::symlink(scratch.dir("elsewhere"), &dir_link).unwrap();
    let dangling = dir.join("dangling");
    std::os::unix::fs::symlink(scratch.path().join("nothing-here"), &dangling).unwrap();
    let empty_dir = scratch.dir("tools/helpers");
    let fifo = dir.join("fifo");
    let fifo_c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo_c.as_ptr(), 0o755) }, 0);
    let bad_manifest = manifest_tool(
        &dir,
        "bad_manifest",
        "name: bad\ndescription: d\nentrypoint: ../../bin/sh\n",
    );

    let mut options = discovery_options(&[&dir], &scratch.path().join("c"));
    options.description_timeout = Duration::from_millis(800);
    let started = std::time::Instant::now();
    let discovery = fresh(&options).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    assert_eq!(names(&discovery), ["good"]);
    let expectations: [(&Path, &str); 12] = [
        (&bad_json, "did not print valid JSON"),
        (&no_name, "no \"name\""),
        (&bad_schema, "does not compile"),
        (&hangs, "did not finish within 0.8 s"),
        (&exits, "exit code 1"),
        (&exits, "boom: missing module"),
        (&plain, "not executable"),
        (&dir_link, "symlink to a directory"),
        (&dangling, "target cannot be reached"),
        (&empty_dir, "without tool.yaml"),
        (&fifo, "not a regular file"),
        (&bad_manifest, "contains '..'"),
    ];
    for (path, reason) in expectations {
        let diagnostic = diagnostic_for(&discovery, path);
        assert_eq!(diagnostic.kind, DiagnosticKind::Invalid);
        assert!(
            diagnostic.reason.contains(reason),
            "{}: {}",
            path.display(),
            diagnostic.reason
        );
    }
    assert_eq!(
        discovery.diagnostics.len(),
        11,
        "{:#?}",
        discovery.diagnostics
    );
}

#[test]
fn the_description_timeout_is_five_seconds_by_default() {
    assert_eq!(
        DiscoveryOptions::new(Vec::new()).description_timeout,
        Duration::from_secs(5)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_directory_overrides_the_global_one_and_the_clash_is_reported() {
    let scratch = Scratch::new();
    let project = scratch.dir("project/toolgate-tools");
    let global = scratch.dir("home/.toolgate/tools");
    let counter = scratch.path().join("counter");
    protocol_tool(
        &project,
        "weather",
        "weather",
        OBJECT_SCHEMA,
        &counter,
        "echo project",
    );
    protocol_tool(
        &global,
        "weather",
        "weather",
        OBJECT_SCHEMA,
        &counter,
        "echo global",
    );
    protocol_tool(
        &global,
        "only_global",
        "only_global",
        OBJECT_SCHEMA,
        &counter,
        "cat",
    );

    let discovery = fresh(&discovery_options(
        &[&project, &global],
        &scratch.path().join("c"),
    ))
    .await;
    assert_eq!(names(&discovery), ["weather", "only_global"]);
    assert_eq!(discovery.tools[0].source, project.join("weather"));
    let shadowed = diagnostic_for(&discovery, &global.join("weather"));
    assert_eq!(shadowed.kind, DiagnosticKind::Shadowed);
    assert!(shadowed
        .reason
        .contains(&project.join("weather").display().to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tools_with_one_name_in_one_directory_are_an_error() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(&dir, "a_first", "same", OBJECT_SCHEMA, &counter, "cat");
    protocol_tool(&dir, "b_second", "same", OBJECT_SCHEMA, &counter, "cat");
    let discovery = fresh(&discovery_options(&[&dir], &scratch.path().join("c"))).await;
    assert_eq!(discovery.tools[0].source, dir.join("a_first"));
    let duplicate = diagnostic_for(&discovery, &dir.join("b_second"));
    assert_eq!(duplicate.kind, DiagnosticKind::Invalid);
    assert!(
        duplicate.reason.contains("same directory"),
        "{}",
        duplicate.reason
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_directories_are_reported_unless_optional() {
    let scratch = Scratch::new();
    let mut options = discovery_options(&[&scratch.path().join("nope")], &scratch.path().join("c"));
    options
        .directories
        .push(ToolDirectory::optional(scratch.path().join("also-nope")));
    let discovery = fresh(&options).await;
    assert_eq!(discovery.diagnostics.len(), 1);
    assert_eq!(
        discovery.diagnostics[0].kind,
        DiagnosticKind::MissingDirectory
    );
    assert!(discovery.diagnostics[0].reason.contains("does not exist"));
}

/// The cache's promise: an unchanged tool is never spawned again for discovery, also by a new
/// process (a fresh snapshot); a changed one is asked again.
#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_tool_is_never_spawned_again() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    for name in ["one", "two", "three"] {
        protocol_tool(&dir, name, name, OBJECT_SCHEMA, &counter, "cat");
    }
    let options = discovery_options(&[&dir], &scratch.path().join("cache"));
    let first = fresh(&options).await;
    assert_eq!(count(&counter), 3);
    assert_eq!(first.stats.spawned, 3);
    assert!(scratch.path().join("cache").join(CACHE_FILE).is_file());

    let second = fresh(&options).await;
    assert_eq!(
        count(&counter),
        3,
        "the second discovery spawned a description"
    );
    assert_eq!(second.stats.spawned, 0);
    assert_eq!(second.stats.from_cache, 3);
    assert_eq!(names(&second), names(&first));

    // Edit one tool: only it is asked again.
    protocol_tool(&dir, "two", "two", OBJECT_SCHEMA, &counter, "echo changed");
    let third = fresh(&options).await;
    assert_eq!(count(&counter), 4);
    assert_eq!(third.stats.spawned, 1);

    // A refresh asks everyone; no cache neither reads nor writes.
    let mut refresh = options.clone();
    refresh.cache = CacheMode::Refresh;
    fresh(&refresh).await;
    assert_eq!(count(&counter), 7);
    let mut off = discovery_options(&[&dir], &scratch.path().join("cache-off"));
    off.cache = CacheMode::Off;
    fresh(&off).await;
    assert_eq!(count(&counter), 10);
    assert!(!scratch.path().join("cache-off").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_cache_is_ignored_and_rebuilt() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(&dir, "one", "one", OBJECT_SCHEMA, &counter, "cat");
    let cache_dir = scratch.dir("cache");
    std::fs::write(
        cache_dir.join(CACHE_FILE),
        "{\"version\":1,\"entries\":{\"x\":",
    )
    .unwrap();
    let options = discovery_options(&[&dir], &cache_dir);
    let discovery = fresh(&options).await;
    assert_eq!(names(&discovery), ["one"]);
    assert_eq!(count(&counter), 1);
    let rebuilt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache_dir.join(CACHE_FILE)).unwrap()).unwrap();
    assert!(rebuilt["entries"][dir.join("one").to_str().unwrap()].is_object());
    fresh(&options).await;
    assert_eq!(count(&counter), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn broken_tools_are_not_cached_so_a_fix_elsewhere_is_seen() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let flag = scratch.path().join("dependency-installed");
    write_script(
        &dir,
        "needs_dep",
        &format!(
            "#!/bin/sh\n[ -e '{}' ] || {{ echo 'dependency missing' >&2; exit 1; }}\necho '{{\"name\":\"needs_dep\",\"description\":\"d\",\"input_schema\":{{\"type\":\"object\"}}}}'\n",
            flag.display()
        ),
    );
    let options = discovery_options(&[&dir], &scratch.path().join("cache"));
    assert!(fresh(&options).await.tools.is_empty());
    std::fs::write(&flag, "").unwrap();
    assert_eq!(names(&fresh(&options).await), ["needs_dep"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinked_tools_run_from_their_real_path_and_are_described_once() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let store = scratch.dir("store");
    let counter = scratch.path().join("counter");
    let real = protocol_tool(
        &store,
        "real_tool",
        "linked",
        OBJECT_SCHEMA,
        &counter,
        "cat",
    );
    std::os::unix::fs::symlink(&real, dir.join("a_link")).unwrap();
    std::os::unix::fs::symlink(&real, dir.join("b_link")).unwrap();
    let discovery = fresh(&discovery_options(&[&dir], &scratch.path().join("c"))).await;
    assert_eq!(count(&counter), 1);
    assert_eq!(names(&discovery), ["linked"]);
    assert_eq!(discovery.tools[0].program, real);
    assert_eq!(discovery.tools[0].source, dir.join("a_link"));
    // The second link names the same tool: reported as a duplicate, not dropped.
    assert!(diagnostic_for(&discovery, &dir.join("b_link"))
        .reason
        .contains("same directory"));
}

/// Cold discovery runs descriptions at once, but never more than `parallelism`.
#[tokio::test(flavor = "multi_thread")]
async fn descriptions_run_concurrently_with_bounded_parallelism() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let log = scratch.path().join("log");
    for index in 0..8 {
        write_script(
            &dir,
            &format!("t{index}"),
            &format!(
                "#!/bin/sh\necho start >> '{log}'\nsleep 0.4\necho end >> '{log}'\necho '{{\"name\":\"t{index}\",\"description\":\"d\",\"input_schema\":{{\"type\":\"object\"}}}}'\n",
                log = log.display()
            ),
        );
    }
    let mut options = discovery_options(&[&dir], &scratch.path().join("c"));
    options.parallelism = 3;
    let started = std::time::Instant::now();
    let discovery = fresh(&options).await;
    let elapsed = started.elapsed();
    assert_eq!(discovery.tools.len(), 8);
    let mut running = 0i32;
    let mut peak = 0;
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        running += if line == "start" { 1 } else { -1 };
        peak = peak.max(running);
    }
    assert!(peak >= 2, "descriptions did not overlap (peak {peak})");
    assert!(
        peak <= 3,
        "more than 3 descriptions ran at once (peak {peak})"
    );
    // 8 tools of 0.4 s in batches of at most 3 take at least 3 rounds.
    assert!(elapsed >= Duration::from_millis(1150), "{elapsed:?}");
}

/// A refresh of an unchanged registry uses only `stat`: no process, no cache file, and no
/// directory listing once the listing is older than the directory's last change.
#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_when_nothing_changed_spawns_nothing_and_skips_the_cache() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let counter = scratch.path().join("counter");
    protocol_tool(&dir, "one", "one", OBJECT_SCHEMA, &counter, "cat");
    manifest_tool(&dir, "greet", MANIFEST);
    // Make the directory's last change old, as it is for tools installed earlier.
    let past = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::open(&dir)
        .unwrap()
        .set_modified(past)
        .unwrap();

    let cache_dir = scratch.path().join("cache");
    let options = discovery_options(&[&dir], &cache_dir);
    let (first, snapshot) = discover(&options, Arc::new(Snapshot::default()), false)
        .await
        .unwrap();
    assert_eq!(first.stats.listed_directories, 1);
    std::fs::remove_dir_all(&cache_dir).unwrap();

    let (second, snapshot) = discover(&options, Arc::new(snapshot), false).await.unwrap();
    assert_eq!(count(&counter), 1);
    assert_eq!(second.stats.spawned, 0);
    assert_eq!(second.stats.from_memory, 1);
    assert_eq!(second.stats.listed_directories, 0);
    assert!(!cache_dir.exists(), "the refresh touched the cache");
    assert_eq!(names(&second), ["greet", "one"]);

    // A new tool changes the directory, so it is listed and the newcomer described.
    protocol_tool(&dir, "two", "two", OBJECT_SCHEMA, &counter, "cat");
    let (third, _) = discover(&options, Arc::new(snapshot), false).await.unwrap();
    assert_eq!(third.stats.listed_directories, 1);
    assert_eq!(third.stats.spawned, 1);
    assert_eq!(names(&third), ["greet", "one", "two"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_is_reloaded_when_its_entrypoint_changes() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let yaml = manifest_tool(&dir, "greet", MANIFEST);
    let options = discovery_options(&[&dir], &scratch.path().join("c"));
    let (first, snapshot) = discover(&options, Arc::new(Snapshot::default()), false)
        .await
        .unwrap();
    assert_eq!(names(&first), ["greet"]);
    let entrypoint = dir.join("greet/run.sh");
    std::fs::set_permissions(&entrypoint, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (second, _) = discover(&options, Arc::new(snapshot), false).await.unwrap();
    assert!(second.tools.is_empty());
    assert!(diagnostic_for(&second, &yaml).reason.contains("chmod +x"));
}

#[tokio::test(flavor = "multi_thread")]
async fn configuring_one_tool_directory_instead_of_its_parent_is_explained() {
    let scratch = Scratch::new();
    let dir = scratch.dir("tools");
    let yaml = manifest_tool(&dir, "greet", MANIFEST);
    let tool_dir = yaml.parent().unwrap();
    let discovery = fresh(&discovery_options(&[tool_dir], &scratch.path().join("c"))).await;
    assert!(discovery.tools.is_empty());
    assert_eq!(
        discovery.diagnostics.len(),
        1,
        "{:#?}",
        discovery.diagnostics
    );
    assert!(discovery.diagnostics[0]
        .reason
        .contains(&format!("configure its parent '{}'", dir.display())));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_docstring_tool_is_not_read_again_and_a_changed_one_is() {
    let scratch = Scratch::new();
    let tools = scratch.dir("tools");
    let path = tools.join("greet.py");
    std::fs::write(
        &path,
        "\"\"\"\nTool: greet\nDescription: Greets.\nInput: none\n\"\"\"\nprint('hi')\n",
    )
    .unwrap();
    let options = discovery_options(&[&tools], &scratch.path().join("cache"));
    let (first, snapshot) = discover(&options, Arc::new(Snapshot::default()), false)
        .await
        .unwrap();
    assert_eq!(first.tools[0].description, "Greets.");
    assert_eq!(first.stats.spawned, 0);
    // Same size and mtime: the remembered header is used, the file is not parsed again.
    let remembered = snapshot.docstrings.get(&path).cloned().expect("remembered");
    let (second, snapshot) = discover(&options, Arc::new(snapshot), false).await.unwrap();
    assert_eq!(second.tools, first.tools);
    assert!(Arc::ptr_eq(
        &remembered.1.as_ref().unwrap().as_ref().unwrap().tool,
        &snapshot.docstrings[&path]
            .1
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap()
            .tool
    ));
    std::fs::write(
        &path,
        "\"\"\"\nTool: greet\nDescription: Greets politely.\nInput: none\n\"\"\"\nprint('hello')\n",
    )
    .unwrap();
    let (third, _) = discover(&options, Arc::new(snapshot), true).await.unwrap();
    assert_eq!(third.tools[0].description, "Greets politely.");
}
