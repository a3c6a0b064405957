//! The plan report (`toolgate check worker.yaml`) and the path check (`check --path`), from real
//! worker files.

use std::collections::BTreeMap;

use super::*;
use crate::worker::test_support::{dir, write};
use crate::worker::{plan_worker, LoadOptions};

fn graph() -> (crate::worker::test_support::Dir, WorkerPlan) {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir(d.join("sub")).unwrap();
    let top = write(
        &d,
        "top.yaml",
        "name: top
sandbox: { mode: best-effort, readonly: true }
approval: { default: ask }
toolsets:
  filesystem: { approval: { paths: [{ pattern: '.env*', approval: blocked }] } }
  code_agent: { group: read }
  shell:
    default: ask
    rules: [{ pattern: rm, approval: blocked }, { pattern: ls, approval: preApproved }]
  cli_execute:
    allowed_binaries: [ls, no-such-program-xyz]
    guardrails:
      deny_commands: [{ pattern: 'rm ' }]
      deny_output: [{ pattern: 'sk-[a-z]+', action: redact }]
  workers:
    allowed_workers: [helper]
    approval: { default: preApproved }
",
    );
    write(
        &d,
        "helper.yaml",
        "name: helper
sandbox: { restrict: /sub }
toolsets:
  shell: { default: preApproved, sandbox: { mode: enforce } }
  code_agent: { approval: { paths: [{ pattern: 'secret/**', approval: ask }] } }
",
    );
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    (temp, plan)
}

#[test]
fn the_report_shows_every_worker_with_its_tools_sandbox_rules_and_callers() {
    let (_temp, plan) = graph();
    let report = plan.report(&BTreeMap::new(), &McpReports::new()).unwrap();
    assert_eq!(report.version, PLAN_REPORT_VERSION);
    let [top, helper] = &report.workers[..] else {
        panic!("two workers expected")
    };
    // Offered tools with their decision and what made it.
    let tool = |worker: &WorkerReport, name: &str| {
        worker
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", worker.tools))
            .clone()
    };
    let read_file = tool(top, "read_file");
    assert_eq!(read_file.decision, Decision::Ask);
    assert_eq!(read_file.decided_by, "worker-floor");
    assert!(read_file.per_call.unwrap().contains("path rules"));
    assert!(tool(top, "shell")
        .per_call
        .unwrap()
        .starts_with("each command, by the shell rules"));
    assert_eq!(tool(top, "helper").decided_by, "worker-floor");
    // Left out: readonly removes the write tools, the group leaves out the rest.
    let left = |worker: &WorkerReport, name: &str| {
        worker
            .left_out
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", worker.left_out))
            .reason
            .clone()
    };
    assert!(left(top, "write_file").contains("sandbox.readonly"));
    assert!(left(top, "file_write").contains("not in group 'read'"));
    assert!(left(top, "cli_execute: no-such-program-xyz").contains("not found"));
    // Sandboxes: the helper's shell narrowed the mode; protected paths are computed.
    assert_eq!(top.sandbox.mode, "best-effort");
    assert_eq!(top.sandbox.network.access, "off");
    assert!(top
        .sandbox
        .protected_paths
        .as_ref()
        .is_some_and(|paths| paths.iter().any(|path| path.ends_with("top.yaml"))));
    assert!(helper.sandbox.readonly, "inherited");
    assert_eq!(
        helper.work_dir,
        plan.workers()[0].worker.work_dir.join("sub")
    );
    let shell_sandbox = &helper.toolset_sandboxes[0];
    assert_eq!(
        (shell_sandbox.toolset, shell_sandbox.sandbox.mode),
        ("shell", "enforce")
    );
    // Path rules: the helper's own, then its caller's.
    let rules: Vec<(&str, &str, bool)> = helper
        .path_rules
        .iter()
        .map(|r| (r.worker.as_str(), r.toolset, r.inherited))
        .collect();
    assert_eq!(
        rules,
        [("helper", "code_agent", false), ("top", "filesystem", true)]
    );
    // The caller's command policies, as they bind the helper.
    let [caller] = &helper.callers[..] else {
        panic!("one caller expected: {:?}", helper.callers)
    };
    assert_eq!(caller.worker, "top");
    let shell = caller.shell.as_ref().unwrap();
    assert_eq!(shell.rules[0].pattern, "rm");
    assert_eq!(shell.default, Some(Decision::Ask));
    let cli = caller.cli_execute.as_ref().unwrap();
    assert_eq!(cli.allowed_binaries[0].name, "ls");
    assert!(cli.allowed_binaries[1].path.is_none());
    assert_eq!(cli.deny_commands, ["rm "]);
    assert_eq!(cli.deny_output[0].action, "redact");
    assert_eq!(
        caller.approval.as_ref().unwrap().default,
        Some(Decision::Ask)
    );
    // The delegation graph.
    assert_eq!(top.delegates[0].worker, 1);
    assert_eq!(helper.parent, Some(0));
    assert_eq!(helper.chain, ["top", "helper"]);
    // The JSON names the version and uses camelCase.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["version"], PLAN_REPORT_VERSION);
    // Every sandbox names its protected paths: the worker files and the permissions file.
    let protected = json["workers"][1]["toolsetSandboxes"][0]["sandbox"]["protectedPaths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|path| path.as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    for name in [
        "top.yaml",
        "helper.yaml",
        crate::limits::PERMISSIONS_FILE_NAME,
    ] {
        assert!(
            protected.iter().any(|path| path.ends_with(name)),
            "{name} in {protected:?}"
        );
    }
    assert_eq!(json["workers"][0]["tools"][0]["decidedBy"], "worker-floor");
}

#[test]
fn the_path_check_confines_before_the_rules_and_says_which_refused() {
    let (_temp, plan) = graph();
    let decided = plan.decide(&BTreeMap::new()).unwrap();
    let top = plan.check_path(0, "../../README.md", &decided[0]).unwrap();
    assert!(!top.is_empty());
    for check in &top {
        assert_eq!(check.decision, Decision::Blocked, "{check:?}");
        assert_eq!(check.by, "outside-root");
        let refusal = check.refusal.as_ref().unwrap();
        assert_eq!(refusal.code, "PATH_OUTSIDE_ROOT");
    }
    for absolute in ["/etc/passwd", "/"] {
        let checks = plan.check_path(0, absolute, &decided[0]).unwrap();
        assert!(checks.iter().all(|c| c.by == "outside-root"), "{absolute}");
    }
    // A symlink that leads out is outside too.
    let work = &plan.workers()[0].worker.work_dir;
    std::os::unix::fs::symlink("/etc", work.join("out")).unwrap();
    let checks = plan.check_path(0, "out/passwd", &decided[0]).unwrap();
    assert!(checks.iter().all(|c| c.by == "outside-root"));

    let env = plan.check_path(0, ".env.local", &decided[0]).unwrap();
    let read = env.iter().find(|c| c.tool == "read_file").unwrap();
    assert_eq!((read.decision, read.by), (Decision::Blocked, "rule"));
    assert!(read.rule.as_ref().unwrap().contains(".env*"), "{read:?}");
    // code_agent has no rules of its own in the top worker: the tool's approval decides.
    let grep = env.iter().find(|c| c.tool == "grep_search").unwrap();
    assert_eq!(grep.by, "tool");

    // The helper's file tools are bound by the caller's rules too (relative to the caller's
    // work directory: the helper works in sub/).
    let helper = plan.check_path(1, ".env", &decided[1]).unwrap();
    let read = helper.iter().find(|c| c.tool == "file_read").unwrap();
    assert_eq!((read.decision, read.by), (Decision::Blocked, "caller-rule"));
    assert!(read
        .rule
        .as_ref()
        .unwrap()
        .contains("top.yaml: toolsets.filesystem"));
    assert_eq!(read.pattern.as_deref(), Some(".env*"));
    let secret = plan.check_path(1, "secret/key", &decided[1]).unwrap();
    let read = secret.iter().find(|c| c.tool == "file_read").unwrap();
    assert_eq!((read.decision, read.by), (Decision::Ask, "rule"));
    // Out of the helper's own work directory (into its caller's) is outside too.
    let checks = plan.check_path(1, "../top.yaml", &decided[1]).unwrap();
    assert!(checks.iter().all(|c| c.by == "outside-root"));
}

#[test]
fn a_worker_without_file_tools_has_no_path_checks() {
    let temp = dir();
    let top = write(&temp.path, "w.yaml", "name: w\n");
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let decided = plan.decide(&BTreeMap::new()).unwrap();
    assert!(plan.check_path(0, "x", &decided[0]).unwrap().is_empty());
    assert_eq!(
        plan.check_path(3, "x", &decided[0]).unwrap_err().code(),
        "INVALID_INPUT"
    );
}

#[test]
fn the_report_lists_every_saved_rule_with_its_file_line_and_who_saved_it() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "top.yaml",
        "name: top\ntoolsets:\n  shell: { default: ask }\n",
    );
    let empty = plan_worker(&top, &LoadOptions::default())
        .unwrap()
        .report(&BTreeMap::new(), &McpReports::new())
        .unwrap();
    let file = d.join(crate::limits::PERMISSIONS_FILE_NAME);
    assert_eq!(empty.permissions_file.as_deref(), Some(file.as_path()));
    assert!(empty.saved_rules.is_empty(), "no file yet: no rules");
    std::fs::write(
        &file,
        "version: 1\nrules:\n  - worker: top\n    tool: shell\n    command: npm test\n    saved: 2026-03-01T09:30:00Z\n    by: terminal\n  - worker: top\n    tool: shell\n    prefix: git log\n    saved: 2026-03-02T08:00:00Z\n    by: terminal\n",
    )
    .unwrap();
    let report = plan_worker(&top, &LoadOptions::default())
        .unwrap()
        .report(&BTreeMap::new(), &McpReports::new())
        .unwrap();
    let lines: Vec<(String, u64, String)> = report
        .saved_rules
        .iter()
        .map(|rule| {
            (
                rule["rule"].as_str().unwrap().to_string(),
                rule["line"].as_u64().unwrap(),
                rule["file"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].0.contains("npm test"), "{lines:?}");
    assert_eq!(lines[0].1, 3);
    assert_eq!(lines[1].1, 8);
    assert!(lines
        .iter()
        .all(|(_, _, f)| f == &file.display().to_string()));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["savedRules"][1]["by"], "terminal");
    assert_eq!(json["savedRules"][1]["saved"], "2026-03-02T08:00:00Z");
}

/// The worker file beside its work directory, with file tools that may write everything.
const WRITER: &str = "name: writer
toolsets:
  filesystem: { approval: { default: preApproved } }
  code_agent: { approval: { default: preApproved } }
";

#[test]
fn the_path_check_refuses_changing_the_permissions_file_and_lets_reading_it() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(&d, "w.yaml", WRITER);
    std::fs::create_dir(d.join("sub")).unwrap();
    // Missing or written, under any spelling that resolves to it.
    for existing in [false, true] {
        if existing {
            write(
                &d,
                crate::limits::PERMISSIONS_FILE_NAME,
                "version: 1\nrules: []\n",
            );
        }
        let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
        let decided = plan.decide(&BTreeMap::new()).unwrap();
        let absolute = d.join(crate::limits::PERMISSIONS_FILE_NAME);
        for spelled in [
            crate::limits::PERMISSIONS_FILE_NAME.to_string(),
            format!("./{}", crate::limits::PERMISSIONS_FILE_NAME),
            format!("sub/../{}", crate::limits::PERMISSIONS_FILE_NAME),
            absolute.display().to_string(),
        ] {
            let checks = plan.check_path(0, &spelled, &decided[0]).unwrap();
            for tool in [
                "write_file",
                "file_write",
                "file_edit",
                "file_patch",
                "delete_file",
            ] {
                let check = checks.iter().find(|c| c.tool == tool).unwrap();
                assert_eq!(
                    (check.decision, check.by, check.rule.as_deref()),
                    (Decision::Blocked, "protected", Some("protected")),
                    "{tool} {spelled} (existing: {existing})"
                );
                let refusal = check.refusal.as_ref().unwrap();
                assert_eq!(refusal.code, "PATH_BLOCKED");
                assert!(
                    refusal.message.contains("project permissions file"),
                    "{}",
                    refusal.message
                );
            }
            // Reading is not a change: the file is read-only, not secret.
            let read = checks.iter().find(|c| c.tool == "read_file").unwrap();
            assert_eq!((read.decision, read.by), (Decision::PreApproved, "tool"));
        }
    }
}
