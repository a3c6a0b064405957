use super::*;
use crate::executables::discovery::{discover, Snapshot};
use crate::executables::test_support::{discovery_options, write_script, Scratch};
use crate::test_support::wait_until_gone;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// A protocol tool named `name` with `schema` whose `run` is the sh code `body`.
fn tool(dir: &Path, name: &str, schema: &str, body: &str) {
    write_script(
        dir,
        name,
        &format!(
            "#!/bin/sh\nif [ \"$1\" = description ]; then\ncat <<'EOF'\n{{\"name\":\"{name}\",\"description\":\"d\",\"input_schema\":{schema}}}\nEOF\nexit 0\nfi\n{body}\n"
        ),
    );
}

const ANY: &str = r#"{"type":"object"}"#;

struct Fixture {
    scratch: Scratch,
    tools: PathBuf,
    work: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let scratch = Scratch::new();
        let tools = scratch.dir("tools");
        let work = scratch.dir("work");
        Self {
            scratch,
            tools,
            work,
        }
    }

    async fn spec(&self, name: &str) -> ToolSpec {
        let options = discovery_options(&[&self.tools], &self.scratch.path().join("cache"));
        let (discovery, _) = discover(&options, Arc::new(Snapshot::default()), false)
            .await
            .unwrap();
        assert!(
            discovery.diagnostics.is_empty(),
            "{:#?}",
            discovery.diagnostics
        );
        discovery
            .tools
            .into_iter()
            .find(|t| t.name == name)
            .expect("the tool is discovered")
    }

    fn options(&self) -> RunOptions {
        RunOptions::new(&self.work)
    }

    async fn run_with(&self, name: &str, input: Value, options: &RunOptions) -> Result<ToolOutput> {
        let spec = self.spec(name).await;
        let schema = InputSchema::compile(&spec.input_schema_value()).unwrap();
        prepare(&spec, &schema, &input, options)?.run().await
    }

    async fn run(&self, name: &str, input: Value) -> Result<ToolOutput> {
        self.run_with(name, input, &self.options()).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_protocol_tool_gets_its_input_on_stdin_and_json_output_is_parsed() {
    let f = Fixture::new();
    tool(
        &f.tools,
        "echo",
        ANY,
        "[ \"$1\" = run ] || exit 9\nprintf '{\"got\": '; cat; printf '}'",
    );
    let output = f
        .run("echo", serde_json::json!({"a": [1, "two"]}))
        .await
        .unwrap();
    assert_eq!(output.result, serde_json::json!({"got": {"a": [1, "two"]}}));
    assert!(output.duration > Duration::ZERO);
    assert!(!output.truncated);
}

#[tokio::test(flavor = "multi_thread")]
async fn text_output_is_the_result_as_a_string() {
    let f = Fixture::new();
    tool(
        &f.tools,
        "text",
        ANY,
        "echo 'plain words'; echo 'to stderr' >&2",
    );
    let output = f.run("text", serde_json::json!({})).await.unwrap();
    assert_eq!(output.result, Value::String("plain words".into()));
    assert_eq!(output.stderr, "to stderr\n");
    let f2 = Fixture::new();
    tool(&f2.tools, "number", ANY, "echo 42");
    assert_eq!(
        f2.run("number", serde_json::json!({}))
            .await
            .unwrap()
            .result,
        serde_json::json!(42)
    );
}

/// The schema check happens before anything runs: the tool would leave a marker file.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_input_is_refused_before_the_tool_runs() {
    let f = Fixture::new();
    let schema = r#"{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":7}},"required":["city"],"additionalProperties":false}"#;
    tool(&f.tools, "weather", schema, "touch ran-marker; echo ok");
    for (input, expected) in [
        (
            serde_json::json!({"days": 3}),
            "\"city\" is a required property",
        ),
        (serde_json::json!({"city": "Oslo", "days": 30}), "at /days:"),
        (serde_json::json!({"city": 5}), "at /city:"),
        (serde_json::json!({"city": "Oslo", "x": 1}), "x"),
        (serde_json::json!("Oslo"), "at / (the input itself)"),
        (
            serde_json::json!({"city": "x".repeat(crate::limits::MAX_STDIN_BYTES)}),
            "larger than",
        ),
    ] {
        let err = f.run("weather", input.clone()).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{input}");
        assert!(err.to_string().contains(expected), "{input}: {err}");
    }
    assert!(
        !f.work.join("ran-marker").exists(),
        "the tool ran despite invalid input"
    );
    f.run("weather", serde_json::json!({"city": "Oslo"}))
        .await
        .unwrap();
    assert!(f.work.join("ran-marker").exists());
}

/// Attack: a secret in the parent's environment never reaches a tool; only the one
/// child-environment policy's variables, the passthrough list and toolgate's private HOME,
/// TMPDIR and XDG directories do.
#[tokio::test(flavor = "multi_thread")]
async fn the_environment_is_reduced_to_the_policy_and_the_passthrough_list() {
    let f = Fixture::new();
    std::env::set_var("TOOLGATE_RUN_TEST_SECRET", "hunter2");
    std::env::set_var("TOOLGATE_RUN_TEST_ALLOWED", "visible");
    tool(&f.tools, "env_dump", ANY, "env");
    let mut options = f.options();
    options.env_passthrough = vec!["TOOLGATE_RUN_TEST_ALLOWED".into()];
    let output = f
        .run_with("env_dump", serde_json::json!({}), &options)
        .await
        .unwrap();
    let text = output.result.as_str().unwrap().to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("CARGO_"), "{text}");
    assert!(text.contains("TOOLGATE_RUN_TEST_ALLOWED=visible"), "{text}");
    let names: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| !["PWD", "SHLVL", "_", "OLDPWD"].contains(name))
        .collect();
    for name in &names {
        let allowed = ["PATH", "LANG", "TZ", "USER", "LOGNAME", "HOME", "TMPDIR"].contains(name)
            || name.starts_with("LC_")
            || name.starts_with("XDG_")
            || name.to_ascii_lowercase().ends_with("_proxy")
            || *name == "TOOLGATE_RUN_TEST_ALLOWED";
        assert!(allowed, "unexpected variable {name} in {text}");
    }
    assert!(names.contains(&"PATH"));
}

/// Attack (issue 10, item 4): dotfiles the model writes into the work directory must not
/// become the configuration of the programs a tool runs. HOME is private and empty.
#[tokio::test(flavor = "multi_thread")]
async fn work_dir_dotfiles_do_not_configure_a_tool() {
    let f = Fixture::new();
    let marker = f.work.join("fsmonitor-ran");
    std::fs::write(
        f.work.join(".gitconfig"),
        format!(
            "[core]\n\tfsmonitor = \"touch {}; false\"\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::write(f.work.join(".curlrc"), "output = /tmp/curlrc-was-read\n").unwrap();
    tool(
        &f.tools,
        "home_probe",
        ANY,
        r#"printf 'home=%s\n' "$HOME"; ls -A "$HOME"; touch "$HOME/written" "$TMPDIR/written" && echo writable; git config --global --get core.fsmonitor || echo no-fsmonitor"#,
    );
    let output = f
        .run_with("home_probe", serde_json::json!({}), &f.options())
        .await
        .unwrap();
    let text = output.result.as_str().unwrap().to_string();
    let home = text
        .lines()
        .find_map(|line| line.strip_prefix("home="))
        .unwrap()
        .to_string();
    assert!(
        !home.is_empty() && !Path::new(&home).starts_with(&f.work),
        "{text}"
    );
    assert!(text.contains("writable"), "{text}");
    assert!(text.contains("no-fsmonitor"), "{text}");
    assert!(
        !text.contains(".gitconfig") && !text.contains(".curlrc"),
        "{text}"
    );
    assert!(
        !Path::new(&home).exists(),
        "the private HOME {home} outlived the run"
    );
    assert!(!marker.exists());
}

#[test]
fn passthrough_of_toolgate_variables_is_refused() {
    for name in ["HOME", "TMPDIR", "XDG_CONFIG_HOME", "A=B"] {
        let mut options = RunOptions::new("/tmp");
        options.env_passthrough = vec![name.into()];
        let err = options.check().unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{name}");
        assert!(
            err.to_string().contains("executables.env_passthrough"),
            "{err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_run_in_the_work_directory() {
    let f = Fixture::new();
    tool(&f.tools, "where", ANY, "pwd");
    let output = f.run("where", serde_json::json!({})).await.unwrap();
    assert_eq!(output.result, Value::String(f.work.display().to_string()));
}

/// Attack: a tool that leaves a grandchild behind and outlives its timeout: the whole group is
/// killed and the call returns within timeout + 1 s.
#[tokio::test(flavor = "multi_thread")]
async fn the_timeout_kills_the_process_group_including_grandchildren() {
    let f = Fixture::new();
    let pid_file = f.scratch.path().join("grandchild.pid");
    tool(
        &f.tools,
        "sleepy",
        ANY,
        &format!("sleep 30 &\necho $! > '{}'\nwait", pid_file.display()),
    );
    let mut options = f.options();
    options.timeout = Duration::from_secs(30);
    options
        .tool_timeouts
        .insert("sleepy".into(), Duration::from_millis(700));
    let started = Instant::now();
    let err = f
        .run_with("sleepy", serde_json::json!({}), &options)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(1700),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.code(), "TIMEOUT");
    assert!(err.to_string().contains("0.7 s"), "{err}");
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_gone(grandchild).await,
        "grandchild {grandchild} survived"
    );
}

/// Attack: an output flood is cut at the cap; the marker names the real limit.
#[tokio::test(flavor = "multi_thread")]
async fn an_output_flood_is_capped_with_a_marker_naming_the_limit() {
    let f = Fixture::new();
    tool(
        &f.tools,
        "flood",
        ANY,
        "yes 'flood flood flood' | head -c 50000000",
    );
    let mut options = f.options();
    options.max_output_bytes = 4096;
    let output = f
        .run_with("flood", serde_json::json!({}), &options)
        .await
        .unwrap();
    assert!(output.truncated);
    let text = output.result.as_str().unwrap();
    assert!(text.starts_with("flood flood flood\n"));
    assert!(
        text.contains("wrote more than 4096 bytes"),
        "{}",
        &text[text.len() - 200..]
    );
    assert!(text.len() < 4096 + 300);
}

#[test]
fn the_default_cap_is_one_mebibyte_and_the_default_timeout_thirty_seconds() {
    let options = RunOptions::new("/");
    assert_eq!(options.max_output_bytes, 1024 * 1024);
    assert_eq!(options.timeout, Duration::from_secs(30));
    assert_eq!(options.timeout_for("anything"), Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_non_zero_exit_is_tool_failed_carrying_stderr() {
    let f = Fixture::new();
    tool(
        &f.tools,
        "fails",
        ANY,
        "echo 'partial' ; echo 'disk quota exceeded' >&2; exit 1",
    );
    let err = f.run("fails", serde_json::json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_FAILED");
    assert!(err.to_string().contains("exit code 1"), "{err}");
    assert!(err.to_string().contains("disk quota exceeded"), "{err}");

    let f = Fixture::new();
    tool(&f.tools, "crashes", ANY, "kill -SEGV $$");
    let err = f.run("crashes", serde_json::json!({})).await.unwrap_err();
    assert!(err.to_string().contains("killed by SIGSEGV"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_object_on_stdout_is_tool_failed_with_its_message() {
    let f = Fixture::new();
    tool(
        &f.tools,
        "says_no",
        ANY,
        "echo '{\"error\": \"city not found: Atlantis\"}'",
    );
    let err = f.run("says_no", serde_json::json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_FAILED");
    assert!(
        err.to_string().contains("city not found: Atlantis"),
        "{err}"
    );

    // `error` that is not a message is ordinary data.
    let f = Fixture::new();
    tool(
        &f.tools,
        "null_error",
        ANY,
        "echo '{\"error\": null, \"value\": 1}'",
    );
    let output = f.run("null_error", serde_json::json!({})).await.unwrap();
    assert_eq!(output.result["value"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_abort_kills_the_process_group() {
    let f = Fixture::new();
    let pid_file = f.scratch.path().join("pid");
    tool(
        &f.tools,
        "forever",
        ANY,
        &format!("sleep 30 &\necho $! > '{}'\nwait", pid_file.display()),
    );
    let spec = f.spec("forever").await;
    let schema = InputSchema::compile(&spec.input_schema_value()).unwrap();
    let run = prepare(&spec, &schema, &serde_json::json!({}), &f.options()).unwrap();
    let abort = run.abort_handle();
    let task = tokio::spawn(run.run());
    for _ in 0..100 {
        if pid_file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    abort.abort();
    let err = task.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("was aborted"), "{err}");
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_until_gone(grandchild).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn manifest_tools_get_flags_in_parameter_order() {
    let f = Fixture::new();
    let dir = f.tools.join("args");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("tool.yaml"),
        "name: args\ndescription: Prints its arguments\nentrypoint: bin/print.sh\nparameters:\n  - { name: first, type: string, required: true }\n  - { name: count, type: integer }\n  - { name: loud, type: boolean }\n",
    )
    .unwrap();
    std::fs::create_dir(dir.join("bin")).unwrap();
    write_script(
        &dir.join("bin"),
        "print.sh",
        "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\n",
    );
    let output = f
        .run(
            "args",
            serde_json::json!({"loud": false, "first": "--count=9 $(id)", "count": 2}),
        )
        .await
        .unwrap();
    assert_eq!(
        output.result,
        Value::String("[--first=--count=9 $(id)]\n[--count=2]\n[--loud=false]".into())
    );
    for (input, expected) in [
        (
            serde_json::json!({"count": 1}),
            "\"first\" is a required property",
        ),
        (serde_json::json!({"first": "a", "other": 1}), "other"),
        (
            serde_json::json!({"first": "a", "count": "2"}),
            "at /count:",
        ),
    ] {
        let err = f.run("args", input.clone()).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{input}");
        assert!(err.to_string().contains(expected), "{input}: {err}");
    }
}

/// Attack: after discovery, the entrypoint is swapped for a symlink to a shell outside the tool
/// directory. The run refuses instead of starting it.
#[tokio::test(flavor = "multi_thread")]
async fn a_manifest_entrypoint_swapped_after_discovery_is_refused() {
    let f = Fixture::new();
    let dir = f.tools.join("swap");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("tool.yaml"),
        "name: swap\ndescription: d\nentrypoint: run.sh\n",
    )
    .unwrap();
    write_script(&dir, "run.sh", "#!/bin/sh\necho fine\n");
    let spec = f.spec("swap").await;
    std::fs::remove_file(dir.join("run.sh")).unwrap();
    std::os::unix::fs::symlink("/bin/sh", dir.join("run.sh")).unwrap();
    let schema = InputSchema::compile(&spec.input_schema_value()).unwrap();
    let err = prepare(&spec, &schema, &serde_json::json!({}), &f.options()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(
        err.to_string().contains("outside the tool directory"),
        "{err}"
    );
}

#[test]
fn run_options_are_checked() {
    let mut options = RunOptions::new("/");
    options.timeout = Duration::ZERO;
    assert_eq!(options.check().unwrap_err().code(), "CONFIG_INVALID");
    let mut options = RunOptions::new("/");
    options.env_passthrough = vec!["BAD NAME".into()];
    assert!(options
        .check()
        .unwrap_err()
        .to_string()
        .contains("BAD NAME"));
    let mut options = RunOptions::new("/");
    options.max_output_bytes = 0;
    assert!(options.check().is_err());
    RunOptions::new("/").check().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_docstring_tool_is_discovered_validated_and_run_by_its_interpreter() {
    let f = Fixture::new();
    // Not executable: a docstring tool is run by its interpreter.
    std::fs::write(
        f.tools.join("word_count.py"),
        "\"\"\"\nTool: word_count\nDescription: Counts words.\nInput:\n  text (string): The text\n  unique (boolean, optional): Distinct words only\nOutput: {\"count\": n}\n\"\"\"\nimport json, os, sys\nargs = json.load(sys.stdin)\nwords = args['text'].split()\nif args.get('unique'):\n    words = set(words)\nprint(json.dumps({'count': len(words), 'cwd': os.getcwd()}))\n",
    )
    .unwrap();
    let spec = f.spec("word_count").await;
    assert_eq!(spec.format, ToolFormat::Docstring);
    assert_eq!(spec.description, "Counts words. Returns: {\"count\": n}");
    assert_eq!(spec.input_schema_value()["required"], json!(["text"]));
    let output = f
        .run("word_count", json!({"text": "a b a", "unique": true}))
        .await
        .unwrap();
    assert_eq!(output.result["count"], 2);
    assert_eq!(output.result["cwd"], f.work.display().to_string());
    for bad in [
        json!({}),
        json!({"text": 1}),
        json!({"text": "a", "extra": 1}),
    ] {
        let err = f.run("word_count", bad.clone()).await.unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::InvalidInput, "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_docstring_headers_are_diagnostics_naming_file_and_line() {
    let f = Fixture::new();
    std::fs::write(
        f.tools.join("broken.py"),
        "\"\"\"\nTool: broken\nDescription: d\nInput:\n  count (amount): how many\n\"\"\"\n",
    )
    .unwrap();
    std::fs::write(f.tools.join("notes.py"), "print('no header')\n").unwrap();
    let options = discovery_options(&[&f.tools], &f.scratch.path().join("cache"));
    let (discovery, _) = discover(&options, Arc::new(Snapshot::default()), false)
        .await
        .unwrap();
    assert!(discovery.tools.is_empty());
    let broken = discovery
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("broken.py"))
        .expect("broken.py is reported");
    assert!(
        broken
            .reason
            .starts_with("line 5: input 'count' has type 'amount'"),
        "{}",
        broken.reason
    );
    let notes = discovery
        .diagnostics
        .iter()
        .find(|d| d.path.ends_with("notes.py"))
        .expect("notes.py is reported");
    assert!(
        notes.reason.contains("declares 'Tool:'"),
        "{}",
        notes.reason
    );
}
