use serde_json::json;

use super::*;
use crate::approval::Decision;

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
    assert_eq!(config.max_output_bytes, Some(4096));

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
