//! Issue 23 §1: a caller's command restrictions bind every worker below it, at every depth,
//! strictest wins. Attack tests: each variant first runs unbound (the control, proving the
//! command really runs and does harm), then under a caller that forbids it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::approval::Decision;
use crate::command::{Approval, Verdict};
use crate::worker::plan::*;
use crate::worker::test_support::{dir, write};

/// A graph `top -> middle -> bottom` in a fresh folder with a `victim.txt`; `top` and
/// `middle` get the toolset blocks given (YAML under `toolsets:`), `bottom` the one given.
struct Graph {
    _dir: crate::worker::test_support::Dir,
    path: PathBuf,
    top: PathBuf,
}

fn graph(top: &str, middle: &str, bottom: &str) -> Graph {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::write(d.join("victim.txt"), "keep me\n").unwrap();
    let top_file = write(
        &d,
        "top.yaml",
        &format!(
            "name: top\nsandbox: {{ mode: off }}\ntoolsets:\n{top}\n  workers: {{ allowed_workers: [middle] }}\n"
        ),
    );
    write(
        &d,
        "middle.yaml",
        &format!("name: middle\ntoolsets:\n{middle}\n  workers: {{ allowed_workers: [bottom] }}\n"),
    );
    write(
        &d,
        "bottom.yaml",
        &format!("name: bottom\ntoolsets:\n{bottom}\n"),
    );
    Graph {
        path: d,
        _dir: temp,
        top: top_file,
    }
}

fn bottom(plan: &WorkerPlan) -> &PlannedWorker {
    plan.workers()
        .iter()
        .find(|planned| planned.worker.name == "bottom")
        .unwrap()
}

const PERMISSIVE_SHELL: &str = "  shell: { default: preApproved }";
const PERMISSIVE_CLI: &str = "  cli_execute: { allowed_binaries: [rm, ls, cat, find, printf] }";

/// Runs `command` through `bottom`'s shell when its policy lets it, and says whether
/// `victim.txt` survived.
async fn shell_run_survives(graph: &Graph, command: &str) -> (Verdict, Option<String>, bool) {
    let plan = plan_worker(&graph.top, &LoadOptions::default()).unwrap();
    let shell = bottom(&plan).shell.as_ref().unwrap();
    let explained = shell.explain(command);
    let verdict = explained.verdict();
    let message = explained
        .refusal
        .as_ref()
        .map(|refusal| format!("{}: {}", refusal.error.code(), refusal.error));
    if let Ok(prepared) = shell.prepare(command) {
        prepared.run().await.unwrap();
    }
    (verdict, message, graph.path.join("victim.txt").exists())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callers_blocked_shell_rule_binds_the_shell_below_at_every_depth() {
    let commands = [
        "rm victim.txt",
        "/bin/rm victim.txt",
        "/usr/bin/rm -f victim.txt",
        "rm -- victim.txt",
        "RM victim.txt",
        "find . -name victim.txt -exec rm {} ;",
        "find . -name victim.txt -execdir rm -f {} +",
    ];
    for command in commands {
        // Control: unbound, the command deletes the file (or cannot run at all, for `RM`).
        let free = graph("  code_agent: {}", "  code_agent: {}", PERMISSIVE_SHELL);
        let (verdict, _, survived) = shell_run_survives(&free, command).await;
        if verdict == Verdict::PreApproved {
            assert!(!survived, "control: '{command}' should delete the file");
        }
        // The top worker blocks rm; the middle worker has no command toolset.
        let bound = graph(
            "  shell: { default: ask, rules: [{ pattern: rm, approval: blocked }] }",
            "  code_agent: {}",
            PERMISSIVE_SHELL,
        );
        let (verdict, message, survived) = shell_run_survives(&bound, command).await;
        assert!(
            survived,
            "'{command}' deleted the file under a caller's block"
        );
        assert_ne!(verdict, Verdict::PreApproved, "{command}");
        assert_ne!(verdict, Verdict::Ask, "{command}");
        let message = message.unwrap();
        if verdict == Verdict::Blocked {
            assert!(
                message.starts_with("COMMAND_BLOCKED"),
                "{command}: {message}"
            );
            assert!(
                message.contains("the calling worker 'top'"),
                "{command}: {message}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callers_rules_bind_the_cli_execute_below() {
    let control = graph("  code_agent: {}", "  code_agent: {}", PERMISSIVE_CLI);
    let plan = plan_worker(&control.top, &LoadOptions::default()).unwrap();
    let cli = bottom(&plan).cli_execute.as_ref().unwrap();
    cli.prepare("rm", &["victim.txt".into()], None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert!(
        !control.path.join("victim.txt").exists(),
        "control: rm runs"
    );

    let bound = graph(
        "  shell: { default: preApproved, rules: [{ pattern: rm, approval: blocked }, { pattern: cat, approval: ask }] }",
        "  code_agent: {}",
        PERMISSIVE_CLI,
    );
    let plan = plan_worker(&bound.top, &LoadOptions::default()).unwrap();
    let cli = bottom(&plan).cli_execute.as_ref().unwrap();
    for args in [
        vec!["rm", "victim.txt"],
        vec!["find", ".", "-name", "victim.txt", "-exec", "rm", "{}", ";"],
        vec!["find", ".", "-name", "victim.txt", "-delete"],
    ] {
        let (binary, rest) = args.split_first().unwrap();
        let rest: Vec<String> = rest.iter().map(|a| a.to_string()).collect();
        match cli.prepare(binary, &rest, None) {
            Ok(prepared) => {
                // `find -delete` is not rm: the caller's rule does not name it.
                assert_eq!(args.last(), Some(&"-delete"), "{args:?} should be refused");
                drop(prepared);
            }
            Err(err) => {
                assert_eq!(err.code(), "COMMAND_BLOCKED", "{args:?}: {err}");
                assert!(
                    err.to_string().contains("the calling worker 'top'"),
                    "{err}"
                );
            }
        }
    }
    assert!(bound.path.join("victim.txt").exists());
    // A caller's `ask` makes the call ask, whatever the toolset's own approval.
    assert_eq!(
        cli.callers_approval("cat", &["victim.txt".into()]),
        Approval::Ask
    );
    assert_eq!(
        cli.callers_approval("ls", &[".".into()]),
        Approval::PreApproved
    );
    let decided = plan.decide(&BTreeMap::new()).unwrap();
    let tool = decided[2]
        .iter()
        .find(|tool| tool.name == "cli_execute")
        .unwrap();
    assert_eq!(tool.resolved.decision, Decision::Ask, "documented default");
}

#[test]
fn a_callers_ask_and_default_bind_the_shell_below() {
    // The caller asks about git and blocks what no rule names (no default).
    let bound = graph(
        "  shell: { rules: [{ pattern: ls, approval: preApproved }, { pattern: cat, approval: ask }] }",
        "  code_agent: {}",
        PERMISSIVE_SHELL,
    );
    let plan = plan_worker(&bound.top, &LoadOptions::default()).unwrap();
    let shell = bottom(&plan).shell.as_ref().unwrap();
    assert_eq!(shell.explain("ls .").verdict(), Verdict::PreApproved);
    assert_eq!(shell.explain("cat victim.txt").verdict(), Verdict::Ask);
    assert!(shell.needs_approval("cat victim.txt"));
    let unmatched = shell.explain("printf x");
    assert_eq!(unmatched.verdict(), Verdict::Blocked);
    let message = unmatched.refusal.unwrap().error.to_string();
    assert!(message.contains("which has no default"), "{message}");
    // The callee's own stricter rule still holds under a permissive caller.
    let own = graph(
        "  shell: { default: preApproved }",
        "  code_agent: {}",
        "  shell: { default: preApproved, rules: [{ pattern: cat, approval: blocked }] }",
    );
    let plan = plan_worker(&own.top, &LoadOptions::default()).unwrap();
    let shell = bottom(&plan).shell.as_ref().unwrap();
    let blocked = shell.explain("cat victim.txt");
    assert_eq!(blocked.verdict(), Verdict::Blocked);
    assert!(blocked.decision.unwrap().caller.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callers_allowlist_binds_every_command_below() {
    let bound = graph(
        "  cli_execute: { allowed_binaries: [ls, cat] }",
        "  code_agent: {}",
        &format!("{PERMISSIVE_SHELL}\n{PERMISSIVE_CLI}"),
    );
    let plan = plan_worker(&bound.top, &LoadOptions::default()).unwrap();
    let worker = bottom(&plan);
    let shell = worker.shell.as_ref().unwrap();
    for command in [
        "rm victim.txt",
        "/bin/rm victim.txt",
        "find . -name victim.txt -delete",
    ] {
        let refusal = shell.explain(command).refusal.expect(command);
        assert_eq!(refusal.error.code(), "BINARY_NOT_ALLOWED", "{command}");
        assert!(
            refusal
                .error
                .to_string()
                .contains("the calling worker 'top'"),
            "{}",
            refusal.error
        );
    }
    assert_eq!(shell.explain("ls .").verdict(), Verdict::PreApproved);
    let cli = worker.cli_execute.as_ref().unwrap();
    let err = cli.prepare("rm", &["victim.txt".into()], None).unwrap_err();
    assert_eq!(err.code(), "BINARY_NOT_ALLOWED", "{err}");
    let err = cli
        .prepare(
            "find",
            &["-name", "victim.txt", "-exec", "ls", "{}", ";"].map(String::from),
            None,
        )
        .unwrap_err();
    assert_eq!(
        err.code(),
        "BINARY_NOT_ALLOWED",
        "find itself is not allowed above: {err}"
    );
    let out = cli
        .prepare("cat", &["victim.txt".into()], None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, "keep me\n");
    assert!(bound.path.join("victim.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_callers_guardrails_bind_every_command_below() {
    let bound = graph(
        "  cli_execute:\n    allowed_binaries: [rm, cat, printf, ls]\n    guardrails:\n      deny_commands: [{ pattern: '^rm ', message: no deleting }]\n      deny_output: [{ pattern: 'sk-[a-z]{8}', action: redact }, { pattern: 'PRIVATE KEY', action: block }]",
        "  code_agent: {}",
        &format!("{PERMISSIVE_SHELL}\n{PERMISSIVE_CLI}"),
    );
    let plan = plan_worker(&bound.top, &LoadOptions::default()).unwrap();
    let worker = bottom(&plan);
    let shell = worker.shell.as_ref().unwrap();
    for command in [
        "rm victim.txt",
        "/bin/rm victim.txt",
        "/usr/bin/rm victim.txt",
    ] {
        let refusal = shell.explain(command).refusal.expect(command);
        assert_eq!(refusal.error.code(), "GUARDRAIL_BLOCKED", "{command}");
        assert!(
            refusal.error.to_string().contains("no deleting"),
            "{}",
            refusal.error
        );
    }
    let cli = worker.cli_execute.as_ref().unwrap();
    let err = cli.prepare("rm", &["victim.txt".into()], None).unwrap_err();
    assert_eq!(err.code(), "GUARDRAIL_BLOCKED");
    let out = shell
        .prepare("printf 'token sk-abcdefgh'")
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, "token [REDACTED]");
    let out = cli
        .prepare("printf", &["key sk-abcdefgh".into()], None)
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!(out.stdout, "key [REDACTED]");
    let err = shell
        .prepare("printf 'BEGIN PRIVATE KEY'")
        .unwrap()
        .run()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT_BLOCKED");
    assert!(bound.path.join("victim.txt").exists());
}

#[test]
fn a_caller_without_command_toolsets_binds_nothing() {
    let free = graph("  code_agent: {}", "  filesystem: {}", PERMISSIVE_SHELL);
    let plan = plan_worker(&free.top, &LoadOptions::default()).unwrap();
    assert!(bottom(&plan).callers.is_empty());
    let shell = bottom(&plan).shell.as_ref().unwrap();
    assert_eq!(
        shell.explain("rm victim.txt").verdict(),
        Verdict::PreApproved
    );
}

#[test]
fn the_chain_is_handed_down_outermost_first() {
    let bound = graph(
        "  shell: { default: ask }",
        "  cli_execute: { allowed_binaries: [ls] }",
        PERMISSIVE_SHELL,
    );
    let plan = plan_worker(&bound.top, &LoadOptions::default()).unwrap();
    let names: Vec<&str> = bottom(&plan)
        .callers
        .layers()
        .map(|layer| layer.worker.as_str())
        .collect();
    assert_eq!(names, ["top", "middle"]);
    let middle = &plan.workers()[1];
    assert_eq!(middle.callers.layers().count(), 1);
    assert!(plan.workers()[0].callers.is_empty());
}

/// What a program runs by its own means (git aliases, runners, `make`) is judged by the callers'
/// rules too, as by the worker's own.
#[test]
fn a_callers_rules_judge_what_a_command_runs_by_its_own_means() {
    let bound = graph(
        "  shell: { default: preApproved, rules: [{ pattern: git push, approval: blocked }, { pattern: rm, approval: blocked }] }",
        "  code_agent: {}",
        PERMISSIVE_SHELL,
    );
    let plan = plan_worker(&bound.top, &LoadOptions::default()).unwrap();
    let shell = bottom(&plan).shell.as_ref().unwrap();
    let mut commands = vec!["make"];
    if which("git") {
        commands.extend([
            "git push origin main",
            "git -C . push",
            "git -c alias.p=push p origin",
            "git-push origin",
        ]);
    }
    if which("npm") {
        commands.extend(["npm exec -- git push", "npx --no-install rm victim.txt"]);
    }
    for command in commands {
        let explained = shell.explain(command);
        assert!(
            matches!(explained.verdict(), Verdict::Blocked | Verdict::Refused),
            "{command}: {:?}",
            explained.decision
        );
        if explained.verdict() == Verdict::Blocked {
            let message = explained.refusal.unwrap().error.to_string();
            assert!(
                message.contains("the calling worker 'top'"),
                "{command}: {message}"
            );
        }
    }
    assert_eq!(shell.explain("git status").verdict(), Verdict::PreApproved);
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
