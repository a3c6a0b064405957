use serde_json::json;

use super::*;
use crate::approval::Decision;
use crate::builtins::BuiltinsOptions;
use crate::command::{CliExecuteOptions, ShellOptions};
use crate::executables::{CreateCustomToolOptions, ExecutableToolsOptions, RefreshOptions};
use crate::fs::{
    CodeAgentOptions, FilesystemOptions, GrepOptions, PatchOperationOptions, ReadOptions,
};
use crate::mcp::McpToolsetOptions;
use crate::process::ExecOptions;
use crate::run::RunWorkerOptions;
use crate::worker::{LoadCustomToolsOptions, LoadWorkerOptions, ResolveModelOptions};

fn parse_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> crate::Result<T> {
    parse(value.into(), false)
}

fn message<T: serde::de::DeserializeOwned + std::fmt::Debug>(value: serde_json::Value) -> String {
    let err = parse_json::<T>(value).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    err.to_string()
}

#[test]
fn the_documented_guardrail_typo_names_the_path_and_the_accepted_keys() {
    let text = message::<CliExecuteOptions>(json!({
        "allowedBinaries": ["git"],
        "guardrails": { "deny_commands": [{ "pattern": "push" }] }
    }));
    assert_eq!(
        text,
        "unknown option 'guardrails.deny_commands', expected one of 'denyCommands', 'denyOutput'"
    );
}

/// Every options type refuses a misspelled key at the top and one level down.
#[test]
fn misspelled_keys_are_refused_at_two_depths_for_every_options_type() {
    fn check<T: serde::de::DeserializeOwned + std::fmt::Debug>(
        top: serde_json::Value,
        nested: Option<serde_json::Value>,
        nested_path: &str,
    ) {
        let text = message::<T>(top);
        assert!(text.starts_with("unknown option '"), "{text}");
        if let Some(nested) = nested {
            let text = message::<T>(nested);
            assert!(
                text.starts_with(&format!("unknown option '{nested_path}'")),
                "{text}"
            );
        }
    }
    check::<ExecOptions>(json!({ "command": "ls", "timeout": 5 }), None, "");
    check::<CliExecuteOptions>(
        json!({ "allowedBinaries": [], "workdir": "." }),
        Some(json!({ "allowedBinaries": [], "approval": { "defualt": "ask" } })),
        "approval.defualt",
    );
    check::<ShellOptions>(
        json!({ "rule": [] }),
        Some(json!({ "rules": [{ "pattern": "git", "decision": "ask" }] })),
        "rules[0].decision",
    );
    check::<FilesystemOptions>(
        json!({ "readonly": true }),
        Some(json!({ "approval": { "tool": {} } })),
        "approval.tool",
    );
    check::<CodeAgentOptions>(
        json!({ "groups": "read" }),
        Some(json!({ "approval": { "tools": {}, "x": 1 } })),
        "approval.x",
    );
    check::<CreateCustomToolOptions>(
        json!({ "directory": "x" }),
        Some(json!({ "approval": { "defaults": "ask" } })),
        "approval.defaults",
    );
    check::<LoadCustomToolsOptions>(
        json!({ "tool": ["a"] }),
        Some(json!({ "approval": { "Default": "ask" } })),
        "approval.Default",
    );
    check::<ExecutableToolsOptions>(
        json!({ "dir": ["x"] }),
        Some(json!({ "approval": { "tools": {}, "default": "ask", "extra": true } })),
        "approval.extra",
    );
    check::<LoadWorkerOptions>(json!({ "work_dir": "." }), None, "");
    check::<RunWorkerOptions>(json!({ "max_steps": 3 }), None, "");
    check::<RefreshOptions>(json!({ "forced": true }), None, "");
    check::<ResolveModelOptions>(json!({ "baseURL": "http://x" }), None, "");
    check::<ReadOptions>(json!({ "path": "a", "lines": 3 }), None, "");
    check::<GrepOptions>(
        json!({ "pattern": "a", "ignoreCase": true, "case": 1 }),
        None,
        "",
    );
    check::<PatchOperationOptions>(
        json!({ "action": "add", "path": "a", "body": "" }),
        None,
        "",
    );
}

#[test]
fn wrong_types_missing_keys_and_unknown_values_say_what_is_accepted() {
    let text = message::<CliExecuteOptions>(json!({ "allowedBinaries": "git" }));
    assert_eq!(
        text,
        "option 'allowedBinaries' must be a list, got a string"
    );
    let text = message::<CliExecuteOptions>(json!({}));
    assert_eq!(text, "option 'allowedBinaries' is required");
    let text = message::<CliExecuteOptions>(json!({
        "allowedBinaries": [],
        "guardrails": { "denyOutput": [{ "pattern": "x", "action": "hide" }] }
    }));
    assert_eq!(
        text,
        "option 'guardrails.denyOutput[0].action' is 'hide', expected one of block, redact"
    );
    let text = message::<ShellOptions>(json!({ "default": "sometimes" }));
    assert!(text.contains("preApproved, ask, blocked"), "{text}");
    let text = message::<ExecutableToolsOptions>(json!({ "cache": "fast" }));
    assert!(text.contains("use, refresh, off"), "{text}");
    let text = message::<ExecOptions>(json!(null));
    assert_eq!(text, "the options must be an object, got null");
}

#[test]
fn numbers_follow_one_rule_in_every_api() {
    for (value, accepted) in [(json!(0), false), (json!(1), true), (json!(2e22), false)] {
        let exec = parse_json::<ExecOptions>(json!({ "command": "ls", "timeoutMs": value }));
        let cli =
            parse_json::<CliExecuteOptions>(json!({ "allowedBinaries": [], "timeoutMs": value }));
        let shell = parse_json::<ShellOptions>(json!({ "timeoutMs": value }));
        let tools = parse_json::<ExecutableToolsOptions>(json!({ "timeoutMs": value }));
        assert_eq!(exec.is_ok(), accepted, "{value}");
        assert_eq!(cli.is_ok(), accepted, "{value}");
        assert_eq!(shell.is_ok(), accepted, "{value}");
        assert_eq!(tools.is_ok(), accepted, "{value}");
    }
    let err = parse::<ExecOptions>(
        OptionValue::Object(vec![
            ("command".into(), OptionValue::String("ls".into())),
            ("timeoutMs".into(), OptionValue::Number(f64::NAN)),
        ]),
        true,
    )
    .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.to_string().starts_with("option 'timeoutMs' is NaN;"),
        "{err}"
    );
}

#[test]
fn js_only_values_and_undefined_keys_are_accepted() {
    let options: RunWorkerOptions = parse(
        OptionValue::Object(vec![
            (
                "onApproval".into(),
                OptionValue::Opaque("a function".into()),
            ),
            (
                "signal".into(),
                OptionValue::Opaque("an AbortSignal".into()),
            ),
            ("model".into(), OptionValue::String("openai:gpt-4o".into())),
            ("maxSteps".into(), OptionValue::Undefined),
        ]),
        false,
    )
    .unwrap();
    assert!(options.max_steps.is_none());
    // Where plain data is expected, a function is refused by what it is.
    let err = parse::<ShellOptions>(
        OptionValue::Object(vec![(
            "rules".into(),
            OptionValue::Opaque("a function".into()),
        )]),
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "option 'rules' must be plain data, got a function"
    );
}

#[test]
fn options_become_the_core_configuration() {
    let options: ShellOptions = parse_json(json!({
        "workDir": "/srv",
        "rules": [{ "pattern": "git status", "approval": "preApproved" }],
        "default": "ask",
        "timeoutMs": 1500,
        "maxOutputBytes": 4096,
    }))
    .unwrap();
    let (work_dir, config) = options.into_config().unwrap();
    assert_eq!(work_dir.path, std::path::PathBuf::from("/srv"));
    assert!(work_dir.deprecation.is_none());
    assert_eq!(config.rules[0].approval, Decision::PreApproved);
    assert_eq!(config.timeout, Some(1.5));
    assert_eq!(config.max_output_bytes, Some(ByteCount(4096)));

    let (work_dir, _) = parse_json::<ShellOptions>(json!({ "cwd": "/srv" }))
        .unwrap()
        .into_config()
        .unwrap();
    assert_eq!(work_dir.path, std::path::PathBuf::from("/srv"));
    assert!(work_dir.deprecation.unwrap().contains("workDir"));
    let err = parse_json::<ShellOptions>(json!({ "cwd": "/a", "workDir": "/b" }))
        .unwrap()
        .into_config()
        .unwrap_err();
    assert!(err.to_string().contains("disagree"), "{err}");

    let filesystem: FilesystemOptions = parse_json(json!({ "root": "/srv" })).unwrap();
    assert!(filesystem.work_dir().unwrap().deprecation.is_some());

    let request: crate::fs::GrepRequest = parse_json::<GrepOptions>(json!({ "pattern": "x" }))
        .unwrap()
        .into();
    assert_eq!(request.max_results, crate::limits::DEFAULT_GREP_RESULTS);
    let err = parse::<GrepOptions>(
        serde_json::json!({ "pattern": "x", "context": 21 }).into(),
        true,
    )
    .unwrap_err();
    assert!(err.to_string().contains("from 0 to 20"), "{err}");
}

/// A toolset's configuration read from a worker file (YAML) and from JavaScript (an options
/// object through the strict reader) must be the same value.
fn same_configuration<C, O>(yaml: &str, js: serde_json::Value, config_of: impl FnOnce(O) -> C)
where
    C: serde::de::DeserializeOwned + serde::Serialize,
    O: serde::de::DeserializeOwned,
{
    let from_yaml: C = crate::yaml::from_str(yaml).unwrap();
    let from_js = config_of(parse_json::<O>(js).unwrap());
    assert_eq!(
        serde_json::to_value(&from_yaml).unwrap(),
        serde_json::to_value(&from_js).unwrap(),
        "{yaml}"
    );
}

#[test]
fn every_toolset_reads_the_same_from_a_worker_file_and_from_javascript() {
    use crate::builtins::BuiltinsConfig;
    use crate::command::{CliExecuteConfig, ShellConfig};
    use crate::executables::ExecutablesConfig;
    use crate::fs::config::{CodeAgentConfig, FilesystemConfig};
    use crate::mcp::McpToolsetConfig;

    same_configuration::<CliExecuteConfig, CliExecuteOptions>(
        "allowed_binaries: [git, jq]\nenv_passthrough: [GITHUB_TOKEN]\nread_roots: [/opt/data]\ntimeout: 1.5\nmax_output_bytes: 4096\nguardrails:\n  deny_commands: [{ pattern: 'push.*--force', message: no force pushes }]\n  deny_output: [{ pattern: 'sk-[a-z]+', action: redact }]\n",
        json!({
            "workDir": "/srv",
            "readOnly": true,
            "allowedBinaries": ["git", "jq"],
            "envPassthrough": ["GITHUB_TOKEN"],
            "readRoots": ["/opt/data"],
            "timeoutMs": 1500,
            "maxOutputBytes": 4096,
            "guardrails": {
                "denyCommands": [{ "pattern": "push.*--force", "message": "no force pushes" }],
                "denyOutput": [{ "pattern": "sk-[a-z]+", "action": "redact" }],
            },
        }),
        |options| options.config,
    );
    same_configuration::<ShellConfig, ShellOptions>(
        "default: ask\nrules: [{ pattern: git status, approval: preApproved }]\ntimeout: 30\nmax_output_bytes: 1000\nenv_passthrough: [LANGUAGE]\n",
        json!({
            "cwd": "/srv",
            "default": "ask",
            "rules": [{ "pattern": "git status", "approval": "preApproved" }],
            "timeoutMs": 30_000,
            "maxOutputBytes": 1000,
            "envPassthrough": ["LANGUAGE"],
        }),
        |options| options.config,
    );
    same_configuration::<FilesystemConfig, FilesystemOptions>(
        "read_only: true\napproval: { default: ask, tools: { read_file: preApproved }, paths: [{ pattern: '.env*', approval: blocked }] }\n",
        json!({
            "root": "/srv",
            "readOnly": true,
            "approval": {
                "default": "ask",
                "tools": { "read_file": "preApproved" },
                "paths": [{ "pattern": ".env*", "approval": "blocked" }],
            },
        }),
        |options| options.config,
    );
    same_configuration::<CodeAgentConfig, CodeAgentOptions>(
        "group: read\napproval: { tools: { file_read: blocked } }\n",
        json!({ "workDir": ".", "group": "read", "approval": { "tools": { "file_read": "blocked" } } }),
        |options| options.config,
    );
    same_configuration::<ExecutablesConfig, ExecutableToolsOptions>(
        "dirs: [tools]\ntimeout: 10\ntool_timeouts: { slow_report: 120.5 }\nmax_output_bytes: 2048\nenv_passthrough: [GITHUB_TOKEN]\napproval: { default: preApproved }\n",
        json!({
            "workDir": "/srv",
            "cache": "off",
            "parallelism": 2,
            "descriptionTimeoutMs": 500,
            "dirs": ["tools"],
            "timeoutMs": 10_000,
            "toolTimeoutsMs": { "slow_report": 120_500 },
            "maxOutputBytes": 2048,
            "envPassthrough": ["GITHUB_TOKEN"],
            "approval": { "default": "preApproved" },
        }),
        |options| options.config,
    );
    same_configuration::<McpToolsetConfig, McpToolsetOptions>(
        "servers:\n  my-files: { command: npx, args: [-y, server], env: { API_TOKEN: x } }\n  web: { url: 'http://127.0.0.1:8931/mcp', headers: { X_Trace_Id: y } }\ntools: [my-files.read_file]\napproval: { default: ask }\ntimeout: 60\nstartup_timeout: 2.5\n",
        json!({
            "workDir": "/srv",
            "servers": {
                "my-files": { "command": "npx", "args": ["-y", "server"], "env": { "API_TOKEN": "x" } },
                "web": { "url": "http://127.0.0.1:8931/mcp", "headers": { "X_Trace_Id": "y" } },
            },
            "tools": ["my-files.read_file"],
            "approval": { "default": "ask" },
            "timeoutMs": 60_000,
            "startupTimeoutMs": 2500,
        }),
        |options| options.config,
    );
    same_configuration::<BuiltinsConfig, BuiltinsOptions>(
        "tools: [http_request, web_search]\napproval: { tools: { http_request: preApproved } }\nhttp: { allow: [127.0.0.1], timeout: 12, max_response_bytes: 1000 }\nweb_search: { provider: tavily, base_url: 'http://127.0.0.1:9/api' }\n",
        json!({
            "workDir": ".",
            "tools": ["http_request", "web_search"],
            "approval": { "tools": { "http_request": "preApproved" } },
            "http": { "allow": ["127.0.0.1"], "timeoutMs": 12_000, "maxResponseBytes": 1000 },
            "webSearch": { "provider": "tavily", "baseUrl": "http://127.0.0.1:9/api" },
        }),
        |options| options.config,
    );
}

#[test]
fn the_worker_file_spelling_is_refused_from_javascript_and_named_in_the_callers_spelling() {
    // A key in worker-file spelling is unknown to JavaScript, at every depth, and the message
    // lists the JavaScript spellings, the function's own keys included.
    let text = message::<CliExecuteOptions>(json!({ "allowed_binaries": ["git"] }));
    assert!(
        text.starts_with("unknown option 'allowed_binaries', expected one of 'allowedBinaries', 'envPassthrough', 'readRoots', 'timeoutMs', 'maxOutputBytes', 'guardrails', "),
        "{text}"
    );
    for own in ["'workDir'", "'readOnly'", "'approval'", "'sandbox'"] {
        assert!(text.contains(own), "{text}");
    }
    let text = message::<CliExecuteOptions>(json!({ "allowedBinaries": [], "timeout": 5 }));
    assert!(
        text.starts_with("unknown option 'timeout', expected one of"),
        "{text}"
    );
    let text = message::<McpToolsetOptions>(json!({
        "servers": { "a": { "command": "x" } },
        "startup_timeout": 3,
    }));
    assert!(
        text.starts_with("unknown option 'startup_timeout'"),
        "{text}"
    );
    assert!(text.contains("'startupTimeoutMs'"), "{text}");
    let text = message::<BuiltinsOptions>(json!({ "http": { "max_response_bytes": 1 } }));
    assert_eq!(
        text,
        "unknown option 'http.max_response_bytes', expected one of 'allow', 'timeoutMs', 'maxResponseBytes'"
    );
    let text = message::<BuiltinsOptions>(json!({ "web_search": {} }));
    assert!(text.starts_with("unknown option 'web_search'"), "{text}");
    let text = message::<ExecutableToolsOptions>(json!({ "tool_timeouts": {} }));
    assert!(text.contains("'toolTimeoutsMs'"), "{text}");
    let text = message::<FilesystemOptions>(json!({ "read_only": true }));
    assert!(
        text.contains("'readOnly'") && text.contains("'workDir'"),
        "{text}"
    );
    // The function's own keys are not part of the block: a worker-file key is never taken for one.
    let text = message::<McpToolsetOptions>(json!({ "servers": {}, "work_dir": "." }));
    assert!(text.starts_with("unknown option 'work_dir'"), "{text}");
    // Missing keys and bad values are named in JavaScript spelling too.
    assert_eq!(
        message::<ExecutableToolsOptions>(json!({ "toolTimeoutsMs": { "slow": 0 } })),
        "option 'toolTimeoutsMs.slow' is 0; give a number of milliseconds from 1 to 86400000 (a day), or leave it out for the default"
    );
    let text = message::<CliExecuteOptions>(json!({ "allowedBinaries": [], "maxOutputBytes": 0 }));
    assert_eq!(
        text,
        "option 'maxOutputBytes' is 0; give a whole number of bytes from 1 to 1073741824"
    );
    let text = message::<BuiltinsOptions>(json!({ "http": { "timeoutMs": "5" } }));
    assert_eq!(
        text,
        "option 'http.timeoutMs' must be a number, got a string"
    );
    let text = message::<McpToolsetOptions>(json!({ "tools": [] }));
    assert_eq!(text, "option 'servers' is required");
}

#[test]
fn map_keys_are_data_and_keep_their_spelling() {
    // Server names, variable names and tool names are not keys of a struct: never respelled.
    let options: McpToolsetOptions = parse_json(json!({
        "servers": { "git_hub": { "command": "x", "env": { "GITHUB_TOKEN": "t", "camelCase": "c" } } },
    }))
    .unwrap();
    let server = &options.config.servers["git_hub"];
    assert_eq!(server.env["GITHUB_TOKEN"], "t");
    assert_eq!(server.env["camelCase"], "c");
    let options: ExecutableToolsOptions =
        parse_json(json!({ "toolTimeoutsMs": { "slow_report": 1500, "fastTool": 2 } })).unwrap();
    assert_eq!(options.config.tool_timeouts["slow_report"], 1.5);
    assert_eq!(options.config.tool_timeouts["fastTool"], 0.002);
    // An unknown key inside a map's value is reported with the map key as written.
    let text = message::<McpToolsetOptions>(json!({
        "servers": { "git_hub": { "command": "x", "cwd": "/" } },
    }));
    assert_eq!(
        text,
        "unknown option 'servers.git_hub.cwd', expected one of 'command', 'args', 'env', 'url', 'headers'"
    );
}

#[test]
fn milliseconds_become_exact_seconds() {
    let options: ShellOptions = parse_json(json!({ "timeoutMs": 1500.5 })).unwrap();
    let seconds = options.config.timeout.unwrap();
    assert_eq!(
        std::time::Duration::from_secs_f64(seconds),
        std::time::Duration::from_micros(1_500_500)
    );
    for (ms, exact) in [
        (1.0, 1_000_000u64),
        (7.0, 7_000_000),
        (86_400_000.0, 86_400_000_000_000),
    ] {
        let options: McpToolsetOptions =
            parse_json(json!({ "servers": {}, "startupTimeoutMs": ms })).unwrap();
        let seconds = options.config.startup_timeout.unwrap();
        assert_eq!(
            std::time::Duration::from_secs_f64(seconds),
            std::time::Duration::from_nanos(exact),
            "{ms}"
        );
    }
}

/// The spelling rule holds for every key a worker file has: a key that holds seconds by its
/// name (`timeout`, `…_timeout`, `…_timeouts`) is a number of seconds (or a map of them), so
/// that its JavaScript spelling (`…Ms`) converts; no key is in milliseconds.
#[test]
fn every_timeout_of_the_worker_file_is_in_seconds() {
    fn walk(
        schema: &serde_json::Value,
        definitions: &serde_json::Value,
        at: &str,
        seen: &mut usize,
    ) {
        let schema = match schema.get("$ref").and_then(|r| r.as_str()) {
            Some(reference) => {
                let name = reference.rsplit('/').next().unwrap();
                &definitions[name]
            }
            None => schema,
        };
        if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
            for (key, property) in properties {
                let place = format!("{at}.{key}");
                assert!(!key.ends_with("_ms"), "{place} is in milliseconds");
                if spelling::holds_seconds(key) {
                    *seen += 1;
                    let text = property.to_string();
                    assert!(
                        text.contains("\"number\""),
                        "{place} holds seconds by its name but is not a number of seconds: {text}"
                    );
                }
                walk(property, definitions, &place, seen);
            }
        }
        for nested in ["anyOf", "oneOf", "allOf"] {
            for item in schema
                .get(nested)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
            {
                walk(item, definitions, at, seen);
            }
        }
        for nested in ["items", "additionalProperties"] {
            if let Some(item) = schema.get(nested).filter(|v| v.is_object()) {
                walk(item, definitions, at, seen);
            }
        }
    }
    let schema = serde_json::to_value(schemars::schema_for!(crate::worker::WorkerFile)).unwrap();
    let mut seen = 0;
    walk(&schema, &schema["$defs"], "", &mut seen);
    // cli_execute, shell, executables (2), mcp (2), builtins http
    assert!(seen >= 7, "only {seen} timeouts found");
}
