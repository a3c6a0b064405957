//! Host environment variables through a worker graph: a called worker (every toolset in it)
//! may pass on only the variables its caller passes on, at every depth; the top worker is
//! unaffected.

use std::path::{Path, PathBuf};

use crate::worker::plan::*;
use crate::worker::test_support::{dir, write};

/// Set for the MCP `${…}` expansions of the plans that are accepted; read by no other test.
const SET: &str = "TOOLGATE_PLAN_ENV_TEST_SET";

fn plan_error(path: &Path) -> String {
    let err = plan_worker(path, &LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
    err.to_string()
}

fn plans(path: &Path) -> usize {
    std::env::set_var(SET, "value");
    plan_worker(path, &LoadOptions::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .workers()
        .len()
}

/// A worker file named `name` with `toolsets` (YAML lines, indented two spaces) that calls
/// `calls`.
fn worker(d: &Path, name: &str, toolsets: &[&str], calls: &[&str]) -> PathBuf {
    let mut text = format!("name: {name}\n");
    if name == "top" {
        text.push_str("sandbox: { mode: best-effort }\n");
    }
    text.push_str("toolsets:\n");
    for toolset in toolsets {
        text.push_str(&format!("  {toolset}\n"));
    }
    if !calls.is_empty() {
        text.push_str(&format!(
            "  workers: {{ allowed_workers: [{}] }}\n",
            calls.join(", ")
        ));
    }
    write(d, &format!("{name}.yaml"), &text)
}

/// A toolset line of each kind that passes on `name`.
fn passing(name: &str) -> [(String, String); 5] {
    [
        (
            format!("shell: {{ default: ask, env_passthrough: [{name}] }}"),
            "toolsets.shell.env_passthrough".into(),
        ),
        (
            format!("cli_execute: {{ allowed_binaries: [ls], env_passthrough: [{name}] }}"),
            "toolsets.cli_execute.env_passthrough".into(),
        ),
        (
            format!("executables: {{ dirs: [./tools], env_passthrough: [{name}] }}"),
            "toolsets.executables.env_passthrough".into(),
        ),
        (
            format!(
                "mcp: {{ servers: {{ files: {{ command: node, args: [x.js], env: {{ LEAK: '${{{name}}}' }} }} }} }}"
            ),
            "toolsets.mcp.servers.files.env.LEAK".into(),
        ),
        (
            format!(
                "mcp: {{ servers: {{ web: {{ url: 'https://mcp.example.com/mcp', headers: {{ Authorization: 'Bearer ${{{name}}}' }} }} }} }}"
            ),
            "toolsets.mcp.servers.web.headers.Authorization".into(),
        ),
    ]
}

/// The security tester's report: a caller whose shell passes nothing calls a worker whose shell
/// and MCP server ask for a host secret.
#[test]
fn a_called_worker_cannot_pass_on_a_variable_its_caller_does_not() {
    let temp = dir();
    let d = temp.path.clone();
    let top = worker(&d, "top", &["shell: { default: ask }"], &["./sub.yaml"]);
    for (toolset, setting) in passing("CXSECRET") {
        worker(&d, "sub", &[&toolset], &[]);
        let message = plan_error(&top);
        assert!(
            message.contains(&format!("{}: {setting}:", d.join("sub.yaml").display())),
            "{message}"
        );
        assert!(
            message.contains("host environment variable CXSECRET"),
            "{message}"
        );
        assert!(
            message.contains(&format!("calling worker '{}'", top.display())),
            "{message}"
        );
        assert!(message.contains("(it passes on: none)"), "{message}");
        assert!(
            message.contains("add CXSECRET to an env_passthrough of the caller"),
            "{message}"
        );
        assert!(
            message.contains("or drop CXSECRET from the called worker"),
            "{message}"
        );
    }
}

#[test]
fn a_variable_the_caller_passes_on_by_any_toolset_is_accepted_below() {
    let temp = dir();
    let d = temp.path.clone();
    for (above, _) in passing(SET) {
        let top = worker(&d, "top", &[&above], &["./sub.yaml"]);
        for (below, _) in passing(SET) {
            worker(&d, "sub", &[&below], &[]);
            assert_eq!(plans(&top), 2, "{above} above {below}");
        }
        // What the caller passes on is a ceiling, not a floor: the called worker may pass less.
        worker(&d, "sub", &["shell: { default: ask }"], &[]);
        assert_eq!(plans(&top), 2, "{above}");
    }
}

#[test]
fn every_name_is_checked_not_only_the_first() {
    let temp = dir();
    let d = temp.path.clone();
    let top = worker(
        &d,
        "top",
        &["cli_execute: { allowed_binaries: [ls], env_passthrough: [GH_TOKEN] }"],
        &["./sub.yaml"],
    );
    worker(
        &d,
        "sub",
        &["shell: { default: ask, env_passthrough: [GH_TOKEN, NPM_TOKEN] }"],
        &[],
    );
    let message = plan_error(&top);
    assert!(message.contains("variable NPM_TOKEN"), "{message}");
    assert!(message.contains("(it passes on: GH_TOKEN)"), "{message}");
    // Two references in one MCP value: each one counts.
    worker(
        &d,
        "sub",
        &["mcp: { servers: { s: { command: node, env: { A: '${GH_TOKEN}:${AWS_SECRET}' } } } }"],
        &[],
    );
    let message = plan_error(&top);
    assert!(
        message.contains("toolsets.mcp.servers.s.env.A"),
        "{message}"
    );
    assert!(message.contains("variable AWS_SECRET"), "{message}");
    // Names are case-sensitive, as the environment is.
    worker(
        &d,
        "sub",
        &["shell: { default: ask, env_passthrough: [gh_token] }"],
        &[],
    );
    assert!(plan_error(&top).contains("variable gh_token"));
}

#[test]
fn mcp_args_are_passed_as_written_and_read_no_variable() {
    let temp = dir();
    let d = temp.path.clone();
    let top = worker(&d, "top", &[], &["./sub.yaml"]);
    worker(
        &d,
        "sub",
        &["mcp: { servers: { s: { command: node, args: [x.js, '${CXSECRET}'] } } }"],
        &[],
    );
    assert_eq!(plans(&top), 2);
}

/// Each level narrows again: a worker called by a called worker is bound by its direct
/// caller's variables, which are themselves within the top's.
#[test]
fn each_level_of_a_chain_narrows_again() {
    let temp = dir();
    let d = temp.path.clone();
    let both = format!("shell: {{ default: ask, env_passthrough: [{SET}, OTHER_SECRET] }}");
    let top = worker(&d, "top", &[&both], &["./mid.yaml"]);
    worker(
        &d,
        "mid",
        &[&format!(
            "executables: {{ dirs: [./tools], env_passthrough: [{SET}] }}"
        )],
        &["./leaf.yaml"],
    );
    let [(leaf_ok, _), ..] = passing(SET);
    worker(&d, "leaf", &[&leaf_ok], &[]);
    assert_eq!(plans(&top), 3);
    // The top passes OTHER_SECRET on, but the leaf's caller does not.
    worker(
        &d,
        "leaf",
        &["cli_execute: { allowed_binaries: [ls], env_passthrough: [OTHER_SECRET] }"],
        &[],
    );
    let message = plan_error(&top);
    assert!(
        message.contains(&d.join("leaf.yaml").display().to_string()),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "calling worker '{}'",
            d.join("mid.yaml").display()
        )),
        "{message}"
    );
    assert!(message.contains("variable OTHER_SECRET"), "{message}");
    // A middle worker that passes nothing on (only delegates) passes nothing down either.
    worker(&d, "mid", &[], &["./leaf.yaml"]);
    worker(&d, "leaf", &[&leaf_ok], &[]);
    let message = plan_error(&top);
    assert!(message.contains("leaf.yaml"), "{message}");
    assert!(message.contains("(it passes on: none)"), "{message}");
    // And a middle worker cannot widen past the top to make room for the leaf.
    worker(&d, "top", &["shell: { default: ask }"], &["./mid.yaml"]);
    worker(&d, "mid", &[&both], &["./leaf.yaml"]);
    let message = plan_error(&top);
    assert!(
        message.contains("mid.yaml: toolsets.shell.env_passthrough"),
        "{message}"
    );
}

#[test]
fn the_top_worker_passes_on_what_it_names() {
    let temp = dir();
    let d = temp.path.clone();
    let toolsets: Vec<String> = passing(SET)
        .into_iter()
        .map(|(toolset, _)| toolset)
        .filter(|toolset| !toolset.contains("web:"))
        .collect();
    let toolsets: Vec<&str> = toolsets.iter().map(String::as_str).collect();
    let top = worker(&d, "top", &toolsets, &[]);
    assert_eq!(plans(&top), 1);
    // The same toolsets in a worker called by one that passes nothing are refused.
    worker(&d, "sub", &toolsets, &[]);
    let top = worker(&d, "top", &[], &["./sub.yaml"]);
    assert!(plan_error(&top).contains("sub.yaml: toolsets.shell.env_passthrough"));
}

#[test]
fn a_called_worker_sends_the_search_key_only_where_its_caller_does() {
    let temp = dir();
    let d = temp.path.clone();
    let own = "builtins: { tools: [web_search], web_search: { provider: tavily, base_url: 'http://127.0.0.1:9/' } }";
    let theirs = "builtins: { tools: [web_search], web_search: { provider: tavily, base_url: 'https://api.tavily.com' } }";
    worker(&d, "sub", &[own], &[]);
    // A caller without web_search, one with the provider's own URL, one with another URL.
    for caller in [
        "shell: { default: ask }",
        "builtins: { tools: [web_search] }",
        theirs,
        "builtins: { tools: [web_search], web_search: { base_url: 'http://127.0.0.1:10/' } }",
    ] {
        let top = worker(&d, "top", &[caller], &["sub"]);
        let message = plan_error(&top);
        assert!(
            message.contains("toolsets.builtins.web_search.base_url")
                && message.contains("http://127.0.0.1:9/")
                && message.contains("provider key"),
            "{caller}: {message}"
        );
    }
    // The caller's own endpoint: accepted, as is a called worker naming none.
    let top = worker(&d, "top", &[own], &["sub"]);
    assert_eq!(plans(&top), 2);
    worker(&d, "sub", &["builtins: { tools: [web_search] }"], &[]);
    let top = worker(&d, "top", &["shell: { default: ask }"], &["sub"]);
    assert_eq!(plans(&top), 2);
}

#[test]
fn a_called_worker_reaches_no_internal_host_its_caller_does_not() {
    let temp = dir();
    let d = temp.path.clone();
    let http = |allow: &str| {
        format!("builtins: {{ tools: [http_request], http: {{ allow: [{allow}] }} }}")
    };
    let server = |url: &str| format!("mcp: {{ servers: {{ api: {{ url: '{url}' }} }} }}");
    // http_request's internal hosts, and MCP servers by URL on internal hosts (several forms).
    for (callee, setting) in [
        (http("127.0.0.1"), "toolsets.builtins.http.allow"),
        (http("10.0.0.0/8"), "toolsets.builtins.http.allow"),
        (
            server("http://127.0.0.1:8080/mcp"),
            "toolsets.mcp.servers.api.url",
        ),
        (
            server("http://localhost:9/mcp"),
            "toolsets.mcp.servers.api.url",
        ),
        (server("http://[::1]:9/mcp"), "toolsets.mcp.servers.api.url"),
        (
            server("http://169.254.169.254/latest"),
            "toolsets.mcp.servers.api.url",
        ),
        (
            server("http://[::ffff:10.1.2.3]/mcp"),
            "toolsets.mcp.servers.api.url",
        ),
    ] {
        worker(&d, "sub", &[&callee], &[]);
        for caller in [
            "shell: { default: ask }".to_string(),
            http("192.168.1.1"),
            server("http://127.0.0.1:8081/mcp"),
        ] {
            let top = worker(&d, "top", &[&caller], &["sub"]);
            let message = plan_error(&top);
            assert!(
                message.contains(setting) && message.contains("internal"),
                "{callee} under {caller}: {message}"
            );
        }
        // The caller reaches it too: accepted.
        let top = worker(&d, "top", &[&callee], &["sub"]);
        assert_eq!(plans(&top), 2, "{callee}");
    }
    // A public MCP server by URL is the called worker's own choice.
    worker(&d, "sub", &[&server("https://mcp.example.com/mcp")], &[]);
    let top = worker(&d, "top", &["shell: { default: ask }"], &["sub"]);
    assert_eq!(plans(&top), 2);
}
