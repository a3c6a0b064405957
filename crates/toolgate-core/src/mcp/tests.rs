use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::config::check;
use super::*;
use crate::approval::Decision;
use crate::error::Error;
use crate::limits::{DEFAULT_MCP_STARTUP_TIMEOUT, MAX_MCP_TOOLS_PER_SERVER};
use crate::sandbox_config::{SandboxFields, SandboxModeName};
use crate::worker::{plan_worker, LoadOptions, McpReports};

fn yaml(text: &str) -> McpToolsetConfig {
    serde_yaml::from_str(text).unwrap()
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn work() -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(temp.path()).unwrap();
    (temp, path)
}

/// A toolset without a kernel sandbox (the name and approval rules do not start anything).
fn toolset(text: &str) -> McpToolset {
    let (_temp, dir) = work();
    let off = SandboxFields {
        mode: Some(SandboxModeName::Off),
        ..SandboxFields::default()
    };
    let scope = SandboxScope::new(&dir, false, &off, &dir, "sandbox").unwrap();
    McpToolset::from_config(&yaml(text), &scope, "w.yaml: toolsets.mcp").unwrap()
}

fn listed(entries: &[(&str, &[&str])]) -> Vec<ServerTools> {
    entries
        .iter()
        .map(|(server, tools)| ServerTools {
            server: server.to_string(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        })
        .collect()
}

fn config_error(text: &str) -> String {
    match check(&yaml(text), "w.yaml: toolsets.mcp", &no_env) {
        Err(Error::ConfigInvalid(message)) => message,
        Err(other) => panic!("expected CONFIG_INVALID, got {other:?}"),
        Ok(_) => panic!("expected CONFIG_INVALID for {text}"),
    }
}

#[test]
fn servers_are_stdio_or_http_and_say_what_is_wrong() {
    let message = config_error("servers: {}\n");
    assert!(
        message.starts_with("w.yaml: toolsets.mcp: servers is empty"),
        "{message}"
    );
    let message = config_error("servers: { a: { command: x, url: 'http://h/mcp' } }\n");
    assert!(
        message.contains("servers.a has both command and url"),
        "{message}"
    );
    let message = config_error("servers: { a: { args: [x] } }\n");
    assert!(message.contains("neither command nor url"), "{message}");
    let message = config_error("servers: { a: { url: 'http://h/mcp', env: { A: b } } }\n");
    assert!(
        message.contains("args and env are for stdio servers"),
        "{message}"
    );
    let message = config_error("servers: { a: { command: x, headers: { A: b } } }\n");
    assert!(message.contains("headers is for HTTP servers"), "{message}");
    for url in [
        "ftp://h/x",
        "file:///etc/passwd",
        "http://",
        "h:80/mcp",
        "http://a b/",
    ] {
        let message = config_error(&format!("servers: {{ a: {{ url: '{url}' }} }}\n"));
        assert!(message.contains("servers.a.url"), "{url}: {message}");
    }
    let message =
        config_error("servers: { a: { url: 'http://h/', headers: { 'Bad Name': x } } }\n");
    assert!(message.contains("not a header name"), "{message}");
    let message = config_error(
        "servers: { a: { url: 'http://h/', headers: { X: \"a\\r\\nInjected: 1\" } } }\n",
    );
    assert!(message.contains("control character"), "{message}");
    let message = config_error("servers: { a: { command: \"x\\0y\" } }\n");
    assert!(message.contains("NUL"), "{message}");
    let err =
        serde_yaml::from_str::<McpToolsetConfig>("servers: { a: { comand: x } }\n").unwrap_err();
    assert!(err.to_string().contains("unknown field `comand`"), "{err}");
}

#[test]
fn server_names_cannot_blur_the_tool_names() {
    for name in ["my_server", "a.b", "", "ünï", "a b", &"x".repeat(33)] {
        let message = config_error(&format!("servers: {{ '{name}': {{ command: x }} }}\n"));
        assert!(
            message.contains("is not a server name"),
            "{name}: {message}"
        );
    }
    check(
        &yaml(&format!(
            "servers: {{ files-2: {{ command: x }}, {}: {{ command: y }} }}\n",
            "s".repeat(32)
        )),
        "p",
        &no_env,
    )
    .unwrap();
}

#[test]
fn env_cannot_reach_the_private_directories_or_path() {
    for name in ["HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"] {
        let message = config_error(&format!(
            "servers: {{ a: {{ command: x, env: {{ {name}: /tmp }} }} }}\n"
        ));
        assert!(
            message.contains(&format!("{name} cannot be set")),
            "{message}"
        );
    }
    let message = config_error("servers: { a: { command: x, env: { PATH: /home/me/bin } } }\n");
    assert!(message.contains("PATH cannot be set"), "{message}");
    for name in ["1A", "A-B", "A=B", "A B"] {
        let message = config_error(&format!(
            "servers: {{ a: {{ command: x, env: {{ '{name}': v }} }} }}\n"
        ));
        assert!(
            message.contains("is not a variable name"),
            "{name}: {message}"
        );
    }
}

#[test]
fn dollar_braces_expand_from_this_process_and_nothing_else_does() {
    let lookup = |name: &str| match name {
        "TOKEN" => Some("s3cret".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    assert_eq!(expand("Bearer ${TOKEN}", &lookup).unwrap(), "Bearer s3cret");
    assert_eq!(expand("${TOKEN}${TOKEN}", &lookup).unwrap(), "s3crets3cret");
    assert_eq!(
        expand("$TOKEN $ {TOKEN} $$ ${EMPTY}x", &lookup).unwrap(),
        "$TOKEN $ {TOKEN} $$ x"
    );
    // A value that looks like a reference after expansion is not expanded again.
    let nested = |name: &str| (name == "A").then(|| "${TOKEN}".to_string());
    assert_eq!(expand("${A}", &nested).unwrap(), "${TOKEN}");
    let missing = expand("Bearer ${MCP_TOKEN}", &lookup).unwrap_err();
    assert!(
        missing.contains("${MCP_TOKEN} is not set in toolgate's environment"),
        "{missing}"
    );
    for bad in ["${", "${TOKEN", "${}", "${1A}", "${A-B}", "${A:-default}"] {
        assert!(expand(bad, &lookup).is_err(), "{bad}");
    }
    // Where it applies: env and headers values, not command, args or url.
    let config = yaml("servers:\n  a: { command: '${TOKEN}', args: ['${TOKEN}'], env: { T: '${TOKEN}' } }\n  b: { url: 'http://h/${TOKEN}', headers: { Authorization: 'Bearer ${TOKEN}' } }\n");
    let checked = check(&config, "p", &lookup).unwrap();
    assert_eq!(
        checked.servers[0].transport,
        McpTransport::Stdio {
            command: "${TOKEN}".into(),
            args: vec!["${TOKEN}".into()],
            env: vec![("T".into(), "s3cret".into())],
        }
    );
    assert_eq!(
        checked.servers[1].transport,
        McpTransport::Http {
            url: "http://h/${TOKEN}".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
        }
    );
    let message = config_error("servers: { r: { url: 'http://h/', headers: { Authorization: 'Bearer ${NOT_SET_ANYWHERE}' } } }\n");
    assert!(
        message.contains("servers.r.headers.Authorization: ${NOT_SET_ANYWHERE} is not set"),
        "{message}"
    );
}

#[test]
fn whitelist_approval_and_timeouts_are_checked_when_loaded() {
    let message = config_error("servers: { a: { command: x } }\ntools: [read]\n");
    assert!(
        message.contains("tools: 'read' is not 'server.tool'"),
        "{message}"
    );
    let message = config_error("servers: { a: { command: x } }\ntools: [b.read]\n");
    assert!(
        message.contains("names server 'b', which is not configured"),
        "{message}"
    );
    let message =
        config_error("servers: { a: { command: x } }\napproval: { tools: { b.read: ask } }\n");
    assert!(
        message.contains("approval.tools: 'b.read' names server 'b'"),
        "{message}"
    );
    for bad in ["0", "-1", ".inf", ".nan", "86401"] {
        let message = config_error(&format!(
            "servers: {{ a: {{ command: x }} }}\ntimeout: {bad}\n"
        ));
        assert!(message.contains("timeout is"), "{bad}: {message}");
    }
    let checked = check(
        &yaml("servers: { a: { command: x } }\ntimeout: 2.5\n"),
        "p",
        &no_env,
    )
    .unwrap();
    assert_eq!(checked.timeout, std::time::Duration::from_millis(2500));
    assert_eq!(checked.startup_timeout, DEFAULT_MCP_STARTUP_TIMEOUT);
}

#[test]
fn names_are_server_underscore_tool_and_fit_64_characters() {
    assert_eq!(
        exposed_name("files", "read_text_file"),
        "files_read_text_file"
    );
    assert_eq!(exposed_name("gh", "repo.list/all"), "gh_repo_list_all");
    assert_eq!(exposed_name("x", "ünï code"), "x__n__code");
    let long = "t".repeat(128);
    let name = exposed_name("server", &long);
    assert_eq!(name.len(), 64);
    assert!(name.starts_with("server_ttt"));
    assert_eq!(
        name,
        exposed_name("server", &long),
        "stable from run to run"
    );
    let other = exposed_name("server", &format!("{}u", "t".repeat(127)));
    assert_ne!(
        name, other,
        "names cut at the same place keep apart through the hash"
    );
    for (server, tool) in [
        ("s", "a"),
        ("abc", &"-".repeat(200)),
        ("s", "日本語のツール名"),
    ] {
        let name = exposed_name(server, tool);
        assert!(crate::limits::check_tool_name(&name, "").is_ok(), "{name}");
    }
}

#[test]
fn select_applies_the_whitelist_and_refuses_collisions() {
    let all = toolset("servers: { files: { command: x }, web: { command: y } }\n");
    let tools = listed(&[("files", &["read", "write"]), ("web", &["fetch"])]);
    let names: Vec<String> = all
        .select(&tools)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["files_read", "files_write", "web_fetch"]);

    let some = toolset(
        "servers: { files: { command: x }, web: { command: y } }\ntools: [web.fetch, files.read]\n",
    );
    let selected = some.select(&tools).unwrap();
    assert_eq!(
        selected,
        [
            SelectedTool {
                server: "files".into(),
                tool: "read".into(),
                name: "files_read".into()
            },
            SelectedTool {
                server: "web".into(),
                tool: "fetch".into(),
                name: "web_fetch".into()
            },
        ]
    );
    let missing = toolset("servers: { files: { command: x } }\ntools: [files.delete]\n");
    match missing.select(&listed(&[("files", &["read", "write"])])) {
        Err(Error::ConfigInvalid(message)) => assert!(
            message.contains("tools names 'files.delete', but server 'files' has no tool 'delete'; its tools are: read, write"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    // Two tools of one server that differ only in characters a provider refuses.
    let one = toolset("servers: { a: { command: x } }\n");
    for pair in [
        ["b.c", "b_c"],
        ["b c", "b/c"],
        [&"t".repeat(70), &"t".repeat(70).replace("tt", "t.")],
    ] {
        let result = one.select(&listed(&[("a", &[pair[0], pair[1]])]));
        match result {
            Err(Error::ConfigInvalid(message)) => {
                assert!(message.contains("would both be offered as"), "{message}")
            }
            Ok(selected) => assert_ne!(selected[0].name, selected[1].name, "{pair:?}"),
            other => panic!("{other:?}"),
        }
    }
    let message = match one.select(&listed(&[("a", &["b.c", "b_c"])])) {
        Err(Error::ConfigInvalid(message)) => message,
        other => panic!("{other:?}"),
    };
    assert!(message.contains("'a.b.c' and 'a.b_c' would both be offered as 'a_b_c'; leave one out with the `tools` whitelist"), "{message}");
    // The whitelist resolves it.
    let chosen = toolset("servers: { a: { command: x } }\ntools: [a.b_c]\n");
    assert_eq!(
        chosen
            .select(&listed(&[("a", &["b.c", "b_c"])]))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_listing_no_server_may_send_is_a_tool_failure_naming_the_server() {
    let one = toolset("servers: { files: { command: x } }\n");
    let long = "x".repeat(129);
    let many: Vec<String> = (0..=MAX_MCP_TOOLS_PER_SERVER)
        .map(|i| format!("t{i}"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    for tools in [
        &["", "a"][..],
        &["a\nb"],
        &["a", "a"],
        &[long.as_str()],
        &many,
    ] {
        match one.select(&listed(&[("files", tools)])) {
            Err(Error::ToolFailed(message)) => {
                assert!(message.starts_with("MCP server 'files' lists"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
    for reports in [
        listed(&[]),
        listed(&[("files", &["a"]), ("files", &["a"])]),
        listed(&[("files", &["a"]), ("other", &["a"])]),
    ] {
        assert!(
            matches!(one.select(&reports), Err(Error::InvalidInput(_))),
            "{reports:?}"
        );
    }
}

#[test]
fn approval_names_tools_server_dot_tool_or_by_exposed_name_and_defaults_to_ask() {
    let set = toolset(
        "servers: { files: { command: x } }\napproval: { tools: { files.read: preApproved, files_write: blocked } }\n",
    );
    let tools = listed(&[("files", &["read", "write", "stat"])]);
    let decided: BTreeMap<String, Decision> = set
        .decide(&tools)
        .unwrap()
        .into_iter()
        .map(|(tool, resolved)| (tool.name, resolved.decision))
        .collect();
    assert_eq!(decided["files_read"], Decision::PreApproved);
    assert_eq!(decided["files_write"], Decision::Blocked);
    assert_eq!(
        decided["files_stat"],
        Decision::Ask,
        "the default of an MCP tool is ask"
    );

    // Both spellings for one tool: the stricter wins.
    let both = toolset("servers: { f: { command: x } }\napproval: { tools: { f.read: preApproved, f_read: ask } }\n");
    let (approval, _) = both.approval_for(&listed(&[("f", &["read"])])).unwrap();
    assert_eq!(approval.tools["f_read"], Decision::Ask);

    for entry in ["files.nope", "files_nope", "read"] {
        let set = toolset(&format!("servers: {{ files: {{ command: x }} }}\napproval: {{ tools: {{ {entry}: preApproved }} }}\n"));
        match set.decide(&tools) {
            Err(Error::ConfigInvalid(message)) => assert!(
                message.contains(&format!(
                    "approval.tools names '{entry}', which is not a tool of its servers"
                )),
                "{message}"
            ),
            other => panic!("{entry}: {other:?}"),
        }
    }
    let default =
        toolset("servers: { files: { command: x } }\napproval: { default: preApproved }\n");
    assert!(default
        .decide(&tools)
        .unwrap()
        .iter()
        .all(|(_, r)| r.decision == Decision::PreApproved));
}

fn launch_of(dir: &Path, server: &str, sandbox: &str) -> (McpToolset, McpLaunch) {
    let fields: SandboxFields = serde_yaml::from_str(sandbox).unwrap();
    let scope = SandboxScope::new(dir, false, &fields, dir, "sandbox").unwrap();
    let config = yaml(&format!(
        "servers: {{ s: {server}, web: {{ url: 'http://127.0.0.1:1/mcp' }} }}\n"
    ));
    let set = McpToolset::from_config(&config, &scope, "p").unwrap();
    let launch = set.launch("s").unwrap();
    (set, launch)
}

fn env_of(launch: &McpLaunch) -> BTreeMap<String, String> {
    launch
        .env
        .iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

#[test]
fn a_stdio_server_gets_the_reduced_environment_and_a_private_home() {
    let (_temp, dir) = work();
    std::env::set_var("TOOLGATE_MCP_TEST_SECRET", "do-not-leak");
    let (_set, launch) = launch_of(
        &dir,
        "{ command: sh, args: [-c, 'env'], env: { GIVEN: '${TOOLGATE_MCP_TEST_SECRET}', LANG: C.UTF-8 } }",
        "{ mode: off }",
    );
    let env = env_of(&launch);
    assert_eq!(env["GIVEN"], "do-not-leak", "an explicit entry is passed");
    assert_eq!(
        env["LANG"], "C.UTF-8",
        "an explicit entry replaces the inherited one"
    );
    assert!(!env.contains_key("TOOLGATE_MCP_TEST_SECRET"));
    assert!(
        env.keys()
            .all(|k| !k.contains("SECRET") && k != "SHELL" && k != "TERM"),
        "{env:?}"
    );
    let home = PathBuf::from(&env["HOME"]);
    assert!(home.is_dir() && !home.starts_with(&dir));
    assert!(env["TMPDIR"].starts_with(home.parent().unwrap().to_str().unwrap()));
    assert_eq!(launch.cwd, dir);
    assert!(!launch.sandboxed);
    assert!(launch.file.ends_with("sh"));
    drop(launch);
    assert!(!home.exists(), "the private directory goes with the launch");
}

#[test]
fn a_stdio_server_starts_through_the_launcher_under_enforce() {
    let (_temp, dir) = work();
    let scope = SandboxScope::new(&dir, false, &SandboxFields::default(), &dir, "sandbox").unwrap();
    let Ok(sandbox) = scope.build() else {
        eprintln!("skipped: this kernel cannot enforce the sandbox");
        return;
    };
    if !sandbox.sandbox.as_ref().is_some_and(|s| s.confines()) {
        eprintln!("skipped: no launcher");
        return;
    }
    let (_set, launch) = launch_of(&dir, "{ command: cat, args: [a-file] }", "{}");
    assert!(launch.sandboxed);
    assert!(
        launch.file.ends_with("toolgate-sandbox"),
        "{}",
        launch.file.display()
    );
    let args: Vec<String> = launch
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let end = args
        .iter()
        .position(|a| a == "--")
        .expect("the launcher's end of options");
    assert!(args[end + 1].ends_with("/cat"));
    assert_eq!(args[end + 2..], ["a-file"]);
    // The server really runs confined: it can read the work directory and not outside it.
    std::fs::write(dir.join("a-file"), "inside").unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "outside").unwrap();
    let run = |file: &str| {
        let (_set, launch) =
            launch_of(&dir, &format!("{{ command: cat, args: ['{file}'] }}"), "{}");
        std::process::Command::new(&launch.file)
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&launch.cwd)
            .output()
            .unwrap()
    };
    let inside = run("a-file");
    assert_eq!(String::from_utf8_lossy(&inside.stdout), "inside");
    let refused = run(outside.path().to_str().unwrap());
    assert!(!refused.status.success());
    // Outside the view a path does not exist; without a view Landlock refuses it.
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("No such file or directory") || stderr.contains("Permission denied"),
        "{stderr}"
    );
}

#[test]
fn launch_refuses_http_unknown_and_missing_programs() {
    let (_temp, dir) = work();
    let (set, _launch) = launch_of(&dir, "{ command: sh }", "{ mode: off }");
    assert!(matches!(set.launch("web"), Err(Error::InvalidInput(m)) if m.contains("HTTP server")));
    assert!(matches!(set.launch("nope"), Err(Error::InvalidInput(_))));
    let scope = SandboxScope::new(
        &dir,
        false,
        &SandboxFields {
            mode: Some(SandboxModeName::Off),
            ..SandboxFields::default()
        },
        &dir,
        "sandbox",
    )
    .unwrap();
    let set = McpToolset::from_config(
        &yaml("servers: { s: { command: no-such-mcp-server-toolgate } }\n"),
        &scope,
        "p",
    )
    .unwrap();
    assert_eq!(set.launch("s").unwrap_err().code(), "BINARY_NOT_FOUND");
}

#[test]
fn a_worker_file_plans_and_decides_its_mcp_toolset() {
    let (_temp, dir) = work();
    let path = dir.join("w.yaml");
    std::fs::write(
        &path,
        "name: w\nsandbox: { mode: off }\napproval: { tools: { files_write: blocked } }\ntoolsets:\n  filesystem: {}\n  mcp:\n    servers: { files: { command: sh } }\n    approval: { default: preApproved, tools: { files.read: ask } }\n",
    )
    .unwrap();
    let plan = plan_worker(&path, &LoadOptions::default()).unwrap();
    let planned = &plan.workers()[0];
    assert!(planned.mcp.is_some());
    assert_eq!(
        planned.toolset_sandboxes.last().map(|(name, _)| *name),
        Some("mcp")
    );
    let message = plan.decide(&BTreeMap::new()).unwrap_err().to_string();
    assert!(
        message.contains("the MCP servers of toolsets.mcp were not listed"),
        "{message}"
    );
    let reports: McpReports = [(0, listed(&[("files", &["read", "write", "stat"])]))].into();
    let decided = plan.decide_with_mcp(&BTreeMap::new(), &reports).unwrap();
    let of = |name: &str| {
        decided[0]
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .resolved
            .decision
    };
    assert_eq!(of("files_read"), Decision::Ask);
    assert_eq!(of("files_stat"), Decision::PreApproved);
    assert_eq!(
        of("files_write"),
        Decision::Blocked,
        "the worker-level floor applies"
    );
    assert_eq!(of("read_file"), Decision::PreApproved);

    // An MCP tool whose exposed name is another toolset's tool.
    std::fs::write(
        &path,
        "name: w\nsandbox: { mode: off }\ntoolsets:\n  shell: { default: ask }\n  mcp:\n    servers: { a: { command: sh } }\n",
    )
    .unwrap();
    let plan = plan_worker(&path, &LoadOptions::default()).unwrap();
    let reports: McpReports = [(0, listed(&[("a", &["x"])]))].into();
    plan.decide_with_mcp(&BTreeMap::new(), &reports).unwrap();
}

#[test]
fn a_callers_decision_for_an_mcp_tool_binds_that_tool_on_any_server_below() {
    let (_temp, dir) = work();
    let top = dir.join("top.yaml");
    std::fs::write(
        &top,
        "name: top
sandbox: { mode: off }
toolsets:
  mcp:
    servers: { s: { command: sh } }
    approval: { default: preApproved, tools: { s.env: blocked, s.put: ask } }
  workers:
    allowed_workers: [sub]
",
    )
    .unwrap();
    // The same program declared under another name, everything pre-approved; and below it
    // once more (a chain of three).
    std::fs::write(
        dir.join("sub.yaml"),
        "name: sub
description: d
toolsets:
  mcp:
    servers: { t: { command: sh } }
    approval: { default: preApproved }
  workers:
    allowed_workers: [deep]
",
    )
    .unwrap();
    std::fs::write(
        dir.join("deep.yaml"),
        "name: deep
description: d
toolsets:
  mcp:
    servers: { u: { command: sh, args: [-x] } }
    approval: { default: preApproved }
",
    )
    .unwrap();
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let reports: McpReports = [
        (0, listed(&[("s", &["env", "put", "ok"])])),
        (1, listed(&[("t", &["env", "put", "ok"])])),
        (2, listed(&[("u", &["env", "put", "ok"])])),
    ]
    .into();
    let decided = plan.decide_with_mcp(&BTreeMap::new(), &reports).unwrap();
    let of = |worker: usize, name: &str| {
        decided[worker]
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .resolved
            .decision
    };
    for (worker, server) in [(1, "t"), (2, "u")] {
        assert_eq!(
            of(worker, &format!("{server}_env")),
            Decision::Blocked,
            "{server}"
        );
        assert_eq!(
            of(worker, &format!("{server}_put")),
            Decision::Ask,
            "{server}"
        );
        assert_eq!(
            of(worker, &format!("{server}_ok")),
            Decision::PreApproved,
            "{server}"
        );
    }
}

/// Issue 22 §8: the `mcp` toolset's `sandbox` is its own inside its worker file (docs/mcp.md's
/// first example gives the servers the network); a called worker's stays within its caller's.
#[test]
fn the_mcp_sandbox_is_the_toolsets_own_and_a_called_worker_stays_within_its_caller() {
    let (_temp, dir) = work();
    let path = dir.join("w.yaml");
    std::fs::write(
        &path,
        "name: w\ntoolsets:\n  mcp:\n    servers: { a: { command: sh } }\n    sandbox: { network: true, mode: off }\n",
    )
    .unwrap();
    let plan = plan_worker(&path, &LoadOptions::default()).unwrap();
    let planned = &plan.workers()[0];
    let (_, scope) = &planned.toolset_sandboxes[0];
    assert!(scope.network.is_open() && planned.sandbox.network.is_off());
    assert_eq!(scope.mode, crate::sandbox_config::SandboxModeName::Off);
    std::fs::write(
        &path,
        "name: w\ntoolsets:\n  workers: { allowed_workers: [helper] }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("helper.yaml"),
        "name: helper\ntoolsets:\n  mcp:\n    servers: { a: { command: sh } }\n    sandbox: { network: true }\n",
    )
    .unwrap();
    let message = plan_worker(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("helper.yaml: toolsets.mcp: sandbox: network is true where it is false"),
        "{message}"
    );
    std::fs::write(
        &path,
        "name: w\nsandbox: { mode: off }\ntoolsets:\n  mcp:\n    servers: { a: { command: sh, env: { HOME: /root } } }\n",
    )
    .unwrap();
    let message = plan_worker(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("w.yaml: toolsets.mcp: servers.a.env: HOME cannot be set"),
        "{message}"
    );
}
