//! End-to-end tests of the command policy with real processes and real files.

mod attack;
mod indirection;

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use super::config::{DenyCommand, DenyOutput, Guardrails, OutputAction};
use super::*;
use crate::options::ByteCount;

struct Work {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn work() -> Work {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap().join("work");
    std::fs::create_dir(&path).unwrap();
    Work { _dir: dir, path }
}

fn cli(work: &Work, binaries: &[&str]) -> CliExecute {
    CliExecute::new(
        &work.path,
        &CliExecuteConfig {
            allowed_binaries: binaries.iter().map(|b| b.to_string()).collect(),
            ..Default::default()
        },
    )
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| a.to_string()).collect()
}

fn shell(work: &Work, rules: &[(&str, Approval)], default: Option<Approval>) -> ShellToolset {
    ShellToolset::new(
        &work.path,
        &ShellConfig {
            rules: rules
                .iter()
                .map(|(pattern, approval)| ShellRule {
                    pattern: pattern.to_string(),
                    approval: *approval,
                })
                .collect(),
            default,
            ..Default::default()
        },
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_execute_runs_in_the_work_directory_with_home_there_and_no_shell() {
    let w = work();
    let policy = cli(&w, &["pwd", "printf"]);
    let out = policy
        .prepare("pwd", &[], None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout.trim_end(), w.path.display().to_string());
    let out = policy
        .prepare("printf", &args(&["%s|", "a;b", "*", "$HOME", "'q'"]), None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, "a;b|*|$HOME|'q'|");
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_child_environment_holds_no_parent_secret() {
    std::env::set_var("TOOLGATE_COMMAND_TEST_SECRET", "hunter2");
    let w = work();
    let policy = cli(&w, &["printenv"]);
    let out = policy
        .prepare("printenv", &[], None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert!(!out.stdout.contains("hunter2"), "{}", out.stdout);
    // HOME is a private, empty directory of the call, never the work directory.
    let home = out
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("HOME="))
        .unwrap();
    assert!(
        std::path::Path::new(home).starts_with(crate::exec::private_dirs_root()),
        "{home}"
    );
    assert!(!std::path::Path::new(home).starts_with(&w.path), "{home}");
    for line in out.stdout.lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            ["PATH", "HOME", "TMPDIR", "LANG", "TZ", "USER", "LOGNAME"].contains(&name)
                || name.starts_with("XDG_")
                || name.starts_with("LC_")
                || name.to_ascii_lowercase().ends_with("_proxy"),
            "unexpected variable {name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_timeout_and_caps_apply() {
    let w = work();
    let policy = CliExecute::new(
        &w.path,
        &CliExecuteConfig {
            allowed_binaries: args(&["cat", "sleep", "head"]),
            timeout: Some(0.5),
            max_output_bytes: Some(ByteCount(1000)),
            ..Default::default()
        },
    )
    .unwrap();
    let out = policy
        .prepare("cat", &[], Some(b"hi".to_vec()))
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, "hi");
    let out = policy
        .prepare("sleep", &args(&["10"]), None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert!(out.timed_out);
    assert!(out.duration.as_secs_f64() < 2.0);
    let out = policy
        .prepare("head", &args(&["-c", "100000", "/dev/zero"]), None)
        .unwrap_err();
    // /dev/zero is outside the work directory
    assert_eq!(out.code(), "PATH_OUTSIDE_ROOT");
    std::fs::write(w.path.join("big"), vec![b'x'; 100_000]).unwrap();
    let out = policy
        .prepare("cat", &args(&["big"]), None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.truncated);
}

#[tokio::test(flavor = "multi_thread")]
async fn guardrails_refuse_commands_and_block_or_redact_output() {
    let w = work();
    let policy = CliExecute::new(
        &w.path,
        &CliExecuteConfig {
            allowed_binaries: args(&["printf"]),
            guardrails: Guardrails {
                deny_commands: vec![DenyCommand {
                    pattern: "^printf forbidden".into(),
                    message: Some("printing 'forbidden' is not allowed".into()),
                }],
                deny_output: vec![
                    DenyOutput {
                        pattern: "sk-[a-z0-9]{6,}".into(),
                        action: OutputAction::Redact,
                    },
                    DenyOutput {
                        pattern: "PRIVATE KEY".into(),
                        action: OutputAction::Block,
                    },
                ],
            },
            ..Default::default()
        },
    )
    .unwrap();
    let err = policy
        .prepare("printf", &args(&["forbidden"]), None)
        .unwrap_err();
    assert_eq!(err.code(), "GUARDRAIL_BLOCKED");
    assert_eq!(err.to_string(), "printing 'forbidden' is not allowed");
    let out = policy
        .prepare("printf", &args(&["token sk-abc123def done"]), None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, format!("token {REDACTED} done"));
    let err = policy
        .prepare("printf", &args(&["sk-abc123def PRIVATE KEY"]), None)
        .unwrap()
        .run()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_BLOCKED");
}

#[test]
fn cli_execute_configuration_errors_say_why() {
    let w = work();
    let config = |binaries: &[&str]| CliExecuteConfig {
        allowed_binaries: args(binaries),
        ..Default::default()
    };
    for (binaries, needle) in [
        (&["git", "bash"][..], "shell"),
        (&["env"][..], "another program"),
        (&["sudo"][..], "privileges"),
        (&["bash5"][..], "shell"),
        (&["/usr/bin/git"][..], "bare names"),
        (&[][..], "empty"),
        (&["no-such-program-xyz"][..], "none of allowed_binaries"),
    ] {
        let err = CliExecute::new(&w.path, &config(binaries)).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{binaries:?}");
        assert!(err.to_string().contains(needle), "{binaries:?}: {err}");
    }
    for (timeout, max) in [
        (Some(0.0), None),
        (Some(-1.0), None),
        (Some(f64::NAN), None),
        (None, Some(ByteCount(0))),
    ] {
        let err = CliExecute::new(
            &w.path,
            &CliExecuteConfig {
                timeout,
                max_output_bytes: max,
                ..config(&["ls"])
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
    }
}

#[test]
fn missing_binaries_are_reported_and_refused_when_called() {
    let w = work();
    let policy = cli(&w, &["ls", "no-such-program-xyz", "ls"]);
    let availability = policy.availability();
    assert_eq!(availability.len(), 2);
    assert!(availability[0].path.as_ref().unwrap().is_absolute());
    assert_eq!(availability[1].path, None);
    assert_eq!(policy.available().collect::<Vec<_>>(), ["ls"]);
    let refusal = policy.check("no-such-program-xyz", &[], None).unwrap_err();
    assert_eq!(refusal.error.code(), "BINARY_NOT_FOUND");
    assert_eq!(refusal.layer, Layer::Program);
    let refusal = policy.check("cat", &[], None).unwrap_err();
    assert_eq!(refusal.error.code(), "BINARY_NOT_ALLOWED");
    assert_eq!(refusal.layer, Layer::Allowlist);
    let err = policy.prepare("bash", &[], None).unwrap_err();
    assert_eq!(err.code(), "BINARY_NOT_ALLOWED");
    assert!(err.to_string().contains("shell"), "{err}");
}

#[test]
fn shell_rules_decide_and_blocked_commands_fail_with_the_rule() {
    let w = work();
    let tools = shell(
        &w,
        &[
            ("ls", Approval::PreApproved),
            ("ls -la", Approval::Ask),
            ("cat", Approval::Blocked),
        ],
        None,
    );
    assert!(!tools.needs_approval("ls"));
    assert!(tools.needs_approval("ls -la"));
    assert!(!tools.needs_approval("cat x"));
    let err = tools.prepare("cat x").unwrap_err();
    assert_eq!(err.code(), "COMMAND_BLOCKED");
    assert!(err.to_string().contains("rules[2]"), "{err}");
    let err = tools.prepare("printf x").unwrap_err();
    assert_eq!(err.code(), "COMMAND_BLOCKED");
    assert!(err.to_string().contains("no default"), "{err}");
    let explanation = tools.explain("ls -la src");
    assert_eq!(explanation.verdict(), Verdict::Ask);
    assert_eq!(
        explanation.decision.unwrap().rule().unwrap().pattern,
        "ls -la"
    );
}

#[test]
fn shell_refusals_name_their_layer() {
    let w = work();
    symlink("/bin/bash", w.path.join("innocent")).unwrap();
    let tools = shell(
        &w,
        &[("git push", Approval::Blocked)],
        Some(Approval::PreApproved),
    );
    for (command, layer, code) in [
        ("ls | wc", Layer::Syntax, "ARGUMENT_REJECTED"),
        ("", Layer::Syntax, "INVALID_INPUT"),
        ("bash -c id", Layer::ShellOrTrampoline, "SHELL_NOT_ALLOWED"),
        (
            "./innocent -c id",
            Layer::ShellOrTrampoline,
            "SHELL_NOT_ALLOWED",
        ),
        (
            "/usr/bin/env ls",
            Layer::ShellOrTrampoline,
            "SHELL_NOT_ALLOWED",
        ),
        ("git push origin main", Layer::Rules, "COMMAND_BLOCKED"),
        ("no-such-program-xyz", Layer::Program, "BINARY_NOT_FOUND"),
        (
            "git clone file:///srv/x",
            Layer::Arguments,
            "ARGUMENT_REJECTED",
        ),
        ("cat ../outside", Layer::Paths, "PATH_OUTSIDE_ROOT"),
    ] {
        let explanation = tools.explain(command);
        let refusal = explanation
            .refusal
            .as_ref()
            .unwrap_or_else(|| panic!("{command} passed"));
        assert_eq!(refusal.layer, layer, "{command}: {}", refusal.error);
        assert_eq!(refusal.error.code(), code, "{command}");
    }
    let ok = tools.explain("ls -la");
    assert!(ok.refusal.is_none());
    assert_eq!(ok.verdict(), Verdict::PreApproved);
    assert_eq!(ok.argv, ["ls", "-la"]);
    assert!(ok.program.unwrap().is_absolute());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preapproved_shell_command_runs_without_a_shell() {
    let w = work();
    let tools = shell(&w, &[], Some(Approval::PreApproved));
    let out = tools
        .prepare("printf '%s|' 'a b' \"c|d\" '$HOME'")
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, "a b|c|d|$HOME|");
}

#[tokio::test(flavor = "multi_thread")]
async fn output_guardrails_see_a_secret_that_straddles_the_cap() {
    let w = work();
    let secret = "sk-abcdefghijklmnopqrstuvwxyz";
    std::fs::write(
        w.path.join("out.txt"),
        format!("{}{secret} tail", "x".repeat(990)),
    )
    .unwrap();
    let config = |action| CliExecuteConfig {
        allowed_binaries: args(&["cat"]),
        max_output_bytes: Some(ByteCount(1000)),
        guardrails: Guardrails {
            deny_commands: vec![],
            deny_output: vec![DenyOutput {
                pattern: "sk-[a-z]{20,}".into(),
                action,
            }],
        },
        ..Default::default()
    };
    let redacting = CliExecute::new(&w.path, &config(OutputAction::Redact)).unwrap();
    let out = redacting
        .prepare("cat", &args(&["out.txt"]), None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.truncated);
    assert!(!out.stdout.contains("sk-abcdefg"), "{}", &out.stdout[980..]);
    assert!(out.stdout.ends_with("[REDACTED]"), "{}", &out.stdout[980..]);
    let blocking = CliExecute::new(&w.path, &config(OutputAction::Block)).unwrap();
    let err = blocking
        .prepare("cat", &args(&["out.txt"]), None)
        .unwrap()
        .run()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_BLOCKED");
}

#[test]
fn a_remembered_program_is_judged_again_when_its_file_changes() {
    let w = work();
    let bin = w.path.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tools = shell(&w, &[], Some(Approval::PreApproved));
    symlink("/bin/true", w.path.join("tool")).unwrap();
    assert!(tools.explain("./tool").refusal.is_none());
    // names with a slash are resolved every time
    std::fs::remove_file(w.path.join("tool")).unwrap();
    symlink("/bin/bash", w.path.join("tool")).unwrap();
    assert_eq!(
        tools.explain("./tool").refusal.unwrap().error.code(),
        "SHELL_NOT_ALLOWED"
    );
    // a bare name is remembered (the swap of a remembered file is tested in tests/shell.test.ts)
    let cache = engine::ProgramCache::default();
    let engine = engine::Engine::new(&w.path, &[], &[], None, None).unwrap();
    let first = cache.resolve(&engine, "ls").unwrap();
    assert_eq!(cache.resolve(&engine, "ls").unwrap(), first);
    assert!(cache.resolve(&engine, "no-such-program-xyz").is_err());
}

#[test]
fn oversized_commands_arguments_and_stdin_are_invalid_input_before_anything_runs() {
    use crate::limits::{MAX_ARGUMENTS, MAX_ARGUMENT_BYTES, MAX_COMMAND_BYTES, MAX_STDIN_BYTES};
    let w = work();
    let policy = cli(&w, &["printf"]);
    let code = |result: crate::Result<PreparedCommand>| result.map(|_| ()).unwrap_err().code();
    let many = vec!["x".to_string(); MAX_ARGUMENTS + 1];
    assert_eq!(code(policy.prepare("printf", &many, None)), "INVALID_INPUT");
    let long = vec!["y".repeat(MAX_ARGUMENT_BYTES + 1)];
    assert_eq!(code(policy.prepare("printf", &long, None)), "INVALID_INPUT");
    let flood = vec![0u8; MAX_STDIN_BYTES + 1];
    assert_eq!(
        code(policy.prepare("printf", &[], Some(flood))),
        "INVALID_INPUT"
    );
    // at the limits, the checks pass
    let at_limit = vec!["x".to_string(); MAX_ARGUMENTS];
    policy.prepare("printf", &at_limit, None).unwrap();

    let sh = shell(&w, &[], Some(Approval::PreApproved));
    let command = format!("printf {}", "z".repeat(MAX_COMMAND_BYTES));
    let err = sh.prepare(&command).map(|_| ()).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(err.to_string().contains("limit"), "{err}");
    let words = format!("printf{}", " w".repeat(MAX_ARGUMENTS + 1));
    assert_eq!(
        sh.prepare(&words).map(|_| ()).unwrap_err().code(),
        "INVALID_INPUT"
    );
}
