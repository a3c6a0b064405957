//! The toolset as a whole: configuration, dispatch, read-only work directories, and
//! `web_search` against a local fake provider.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::approval::{Decision, Toolset};
use crate::ErrorCode;

fn builtins(config: BuiltinsConfig, readonly: bool) -> (Builtins, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = config.settings("worker.yaml: toolsets.builtins").unwrap();
    let tools = Builtins::new(settings, dir.path(), readonly, http::system_lookup()).unwrap();
    (tools, dir)
}

#[tokio::test]
async fn offers_every_tool_by_default_and_runs_them() {
    let (tools, dir) = builtins(BuiltinsConfig::default(), false);
    assert_eq!(tools.names(), TOOL_NAMES);
    let specs = tools.specs();
    assert!(specs
        .iter()
        .all(|spec| spec.input_schema["type"] == "object"));
    let sum = tools
        .run("math_calculate", json!({"expression": "6 * 7"}))
        .await
        .unwrap();
    assert_eq!(sum["result"], 42);
    let file = tools
        .run(
            "file_create",
            json!({"filename": "a.json", "content": "{}"}),
        )
        .await
        .unwrap();
    assert_eq!(file["mime_type"], "application/json");
    assert!(dir.path().join(".toolgate/files/a.json").is_file());
}

#[tokio::test]
async fn a_selection_and_read_only_work_directories_narrow_the_tools() {
    let config = BuiltinsConfig {
        tools: Some(vec!["file_create".into(), "json_parse".into()]),
        ..Default::default()
    };
    let (tools, _dir) = builtins(config.clone(), false);
    assert_eq!(tools.names(), ["json_parse", "file_create"]);
    let (readonly, dir) = builtins(config, true);
    assert_eq!(readonly.names(), ["json_parse"]);
    let err = readonly
        .run("file_create", json!({"filename": "a.md", "content": ""}))
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::ToolNotFound);
    assert!(!dir.path().join(".toolgate").exists());
}

#[test]
fn configuration_errors_name_the_place() {
    let unknown = BuiltinsConfig {
        tools: Some(vec!["shell_exec".into()]),
        ..Default::default()
    };
    let err = unknown.settings("w.yaml: toolsets.builtins").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("w.yaml: toolsets.builtins: tools names 'shell_exec'"),
        "{err}"
    );
    let bad_allow: BuiltinsConfig =
        serde_json::from_value(json!({"http": {"allow": ["http://x"]}})).unwrap();
    assert_eq!(
        bad_allow.settings("x").unwrap_err().error_code(),
        ErrorCode::ConfigInvalid
    );
    let slow: BuiltinsConfig = serde_json::from_value(json!({"http": {"timeout": 301}})).unwrap();
    assert!(slow.settings("x").is_err());
    let huge: BuiltinsConfig =
        serde_json::from_value(json!({"http": {"max_response_bytes": 17 * 1024 * 1024}})).unwrap();
    assert!(huge.settings("x").is_err());
    assert!(serde_json::from_value::<BuiltinsConfig>(json!({"htp": {}})).is_err());
}

#[test]
fn defaults_ask_for_the_network_and_writes_only() {
    for tool in ["http_request", "web_search", "file_create"] {
        assert_eq!(
            Toolset::Builtins.documented_default(tool),
            Decision::Ask,
            "{tool}"
        );
    }
    for tool in [
        "json_parse",
        "csv_parse",
        "datetime_now",
        "uuid_generate",
        "math_calculate",
    ] {
        assert_eq!(
            Toolset::Builtins.documented_default(tool),
            Decision::PreApproved,
            "{tool}"
        );
    }
}

/// A fake search provider on 127.0.0.1: records each request, answers with `body`.
fn fake_provider(body: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!(
        "http://127.0.0.1:{}/api",
        listener.local_addr().unwrap().port()
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = Vec::new();
            let mut buffer = [0u8; 8192];
            loop {
                let n = stream.read(&mut buffer).unwrap_or(0);
                request.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&request).to_string();
                let complete = text.split_once("\r\n\r\n").is_some_and(|(head, rest)| {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    rest.len() >= length
                });
                if n == 0 || complete {
                    break;
                }
            }
            record
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&request).to_string());
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (base, seen)
}

fn env_with(pairs: Vec<(&'static str, &'static str)>) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

#[tokio::test]
async fn web_search_talks_to_tavily_and_perplexity_shaped_servers() {
    let client = http::HttpClient::new(http::HttpPolicy::default(), http::system_lookup()).unwrap();
    let (base, seen) = fake_provider(
        r#"{"answer":"Paris","results":[{"title":"France","url":"https://example.org/fr","content":"capital"}]}"#,
    );
    let env = env_with(vec![("TAVILY_API_KEY", "tvly-secret")]);
    let endpoint = search::endpoint(None, Some(&base), &env).unwrap();
    let out = search::web_search(&client, &endpoint, json!({"query": "capital of France"}))
        .await
        .unwrap();
    assert_eq!(out["provider"], "tavily");
    assert_eq!(out["answer"], "Paris");
    assert_eq!(out["results"][0]["url"], "https://example.org/fr");
    let request = seen.lock().unwrap()[0].clone();
    assert!(request.starts_with("POST /api/search "), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer tvly-secret"),
        "{request}"
    );
    assert!(
        request.contains("\"query\":\"capital of France\""),
        "{request}"
    );

    let (base, seen) = fake_provider(
        r#"{"choices":[{"message":{"content":"It is Paris."}}],"citations":["https://example.org/a"]}"#,
    );
    let env = env_with(vec![
        ("WEB_SEARCH_PROVIDER", "perplexity"),
        ("PERPLEXITY_API_KEY", "pplx"),
    ]);
    let endpoint = search::endpoint(None, Some(&base), &env).unwrap();
    let out = search::web_search(
        &client,
        &endpoint,
        json!({"query": "capital?", "max_results": 1}),
    )
    .await
    .unwrap();
    assert_eq!(out["answer"], "It is Paris.");
    assert_eq!(
        out["results"],
        json!([{"title": null, "url": "https://example.org/a"}])
    );
    assert!(seen.lock().unwrap()[0].starts_with("POST /api/chat/completions "));

    let err = search::web_search(&client, &endpoint, json!({"query": " "}))
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::InvalidInput);
}
