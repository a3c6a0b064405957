mod caller;
mod env;
mod network;

use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::approval::{Candidate, Decision, OwnApproval, Toolset};
use crate::sandbox_config::{SandboxModeName, SandboxScope};
use crate::worker::test_support::{dir, write};
use crate::worker::{DecidedTool, ModuleTools};

fn plan(path: &Path) -> WorkerPlan {
    plan_worker(path, &LoadOptions::default()).unwrap()
}

fn decision(tools: &[DecidedTool], name: &str) -> Decision {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("no tool {name} in {tools:?}"))
        .resolved
        .decision
}

fn decide(plan: &WorkerPlan) -> Vec<Vec<DecidedTool>> {
    plan.decide(&BTreeMap::new()).unwrap()
}

#[test]
fn the_graph_is_planned_top_down_with_the_callers_sandbox() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir(d.join("src")).unwrap();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { readonly: true }\ntoolsets:\n  code_agent: {}\n  workers:\n    allowed_workers: [helper]\n",
    );
    write(
        &d,
        "helper.yaml",
        "name: helper\ndescription: Helps\nsandbox: { restrict: /src }\ntoolsets:\n  filesystem: {}\n",
    );
    let plan = plan(&top);
    let [main, helper] = plan.workers() else {
        panic!("two workers expected")
    };
    assert_eq!(main.code_agent_group, Some(CodeAgentGroup::Read));
    assert_eq!(
        main.delegates,
        [Delegate {
            name: "helper".into(),
            description: "Helps".into(),
            worker: 1
        }]
    );
    assert_eq!(helper.parent, Some(0));
    assert_eq!(helper.chain, ["main", "helper"]);
    assert_eq!(helper.worker.work_dir, d.join("src"));
    // The caller's read-only sandbox is inherited: no write_file, no delete_file.
    assert_eq!(
        helper.filesystem_tools.as_deref(),
        Some(&["read_file", "list_files", "file_exists", "file_info"][..])
    );
}

/// Issue 10 item 9: a delegated run is at least as strict as its callers, tool by tool, all
/// the way down.
#[test]
fn the_callers_decisions_are_a_floor_for_every_worker_below() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\ntoolsets:\n  filesystem:\n    approval: { tools: { write_file: blocked } }\n  workers:\n    allowed_workers: [helper]\n    approval: { default: preApproved }\n",
    );
    write(
        &d,
        "helper.yaml",
        "name: helper\ntoolsets:\n  filesystem:\n    approval: { default: preApproved }\n  workers:\n    allowed_workers: [deep]\n",
    );
    write(
        &d,
        "deep.yaml",
        "name: deep\napproval: { default: preApproved }\ntoolsets:\n  filesystem:\n    approval: { default: preApproved }\n",
    );
    let plan = plan(&top);
    let decided = decide(&plan);
    assert_eq!(decision(&decided[0], "write_file"), Decision::Blocked);
    assert_eq!(decision(&decided[0], "helper"), Decision::PreApproved);
    assert_eq!(decision(&decided[1], "write_file"), Decision::Blocked);
    assert_eq!(decision(&decided[1], "delete_file"), Decision::Ask);
    assert_eq!(decision(&decided[2], "write_file"), Decision::Blocked);
    // delete_file is `ask` in main (documented default), so it stays at least `ask` below.
    assert_eq!(decision(&decided[2], "delete_file"), Decision::Ask);
    assert_eq!(decision(&decided[2], "read_file"), Decision::PreApproved);
}

/// Issue 10 item 10: `blocked` wins at every level.
#[test]
fn a_worker_level_default_cannot_unblock_a_blocked_tool() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\napproval: { default: preApproved }\ntoolsets:\n  filesystem:\n    approval: { tools: { delete_file: blocked } }\n",
    );
    let decided = decide(&plan(&top));
    assert_eq!(decision(&decided[0], "delete_file"), Decision::Blocked);
    assert_eq!(decision(&decided[0], "write_file"), Decision::Ask);
    let top = write(
        &d,
        "tight.yaml",
        "name: tight\napproval: { tools: { read_file: blocked }, default: ask }\ntoolsets:\n  filesystem: {}\n",
    );
    let decided = decide(&plan(&top));
    assert_eq!(decision(&decided[0], "read_file"), Decision::Blocked);
    assert_eq!(decision(&decided[0], "file_info"), Decision::Ask);
}

#[test]
fn module_tools_are_decided_from_what_the_sdk_found() {
    let temp = dir();
    let d = temp.path.clone();
    write(&d, "tools.ts", "export {}\n");
    let top = write(
        &d,
        "main.yaml",
        "name: main\ntoolsets:\n  custom:\n    module: ./tools.ts\n    approval: { default: preApproved, tools: { deploy: blocked } }\n",
    );
    let plan = plan(&top);
    let err = plan.decide(&BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("was not loaded"), "{err}");
    let module = ModuleTools {
        available: vec!["deploy".into(), "greet".into(), "ping".into()],
        selected: vec![
            Candidate::plain("greet"),
            Candidate {
                name: "ping".into(),
                own: OwnApproval::from_flag(true),
            },
            Candidate {
                name: "check".into(),
                own: OwnApproval::Dynamic,
            },
        ],
    };
    let decided = plan.decide(&BTreeMap::from([(0, module.clone())])).unwrap();
    let tools = &decided[0];
    assert_eq!(decision(tools, "greet"), Decision::PreApproved);
    assert_eq!(decision(tools, "ping"), Decision::Ask);
    assert!(tools[2].resolved.dynamic);
    assert!(tools
        .iter()
        .all(|tool| tool.toolset == Toolset::ToolsModule));

    let typo = ModuleTools {
        available: vec!["greet".into()],
        ..module
    };
    let err = plan.decide(&BTreeMap::from([(0, typo)])).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(err.to_string().contains("'deploy'"), "{err}");
}

#[test]
fn approval_names_reserved_names_and_clashes_are_configuration_errors() {
    let temp = dir();
    let d = temp.path.clone();
    let cases = [
        (
            "name: a\napproval: { tools: { wirte_file: blocked } }\ntoolsets:\n  filesystem: {}\n",
            "'wirte_file'",
        ),
        (
            "name: a\ntoolsets:\n  filesystem:\n    approval: { tools: { file_read: ask } }\n",
            "'file_read'",
        ),
        (
            "name: a\ntoolsets:\n  workers:\n    allowed_workers: [task_completion]\n",
            "reserved tool name",
        ),
        (
            "name: a\ntoolsets:\n  workers:\n    allowed_workers: [converse]\n",
            "'converse' is a reserved tool name",
        ),
        (
            "name: a\ntoolsets:\n  workers:\n    allowed_workers: [network]\n",
            "'network' is a reserved tool name (the egress proxy asks about hosts by it)",
        ),
        (
            "name: a\ntoolsets:\n  workers:\n    allowed_workers: [b, ./b.yaml]\n",
            "two tools are named 'b'",
        ),
        (
            "name: a\ntoolsets:\n  executables:\n    dirs: [./tools]\n    approval: { tools: { wether: blocked } }\n",
            "'wether'",
        ),
    ];
    std::fs::create_dir(d.join("tools")).unwrap();
    write(&d, "task_completion.yaml", "name: task_completion\n");
    write(&d, "converse.yaml", "name: converse\n");
    write(&d, "network.yaml", "name: network\n");
    write(&d, "b.yaml", "name: b\n");
    for (index, (yaml, expected)) in cases.iter().enumerate() {
        let path = write(&d, &format!("case{index}.yaml"), yaml);
        let err = plan(&path).decide(&BTreeMap::new()).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{yaml}");
        let message = err.to_string();
        assert!(message.contains(expected), "{yaml}: {message}");
        assert!(message.contains(&format!("case{index}.yaml")), "{message}");
    }
}

/// Issue 10 item 8: the graph is frozen when the top worker loads.
#[test]
fn a_file_of_the_graph_that_changed_after_planning_is_refused() {
    let temp = dir();
    let d = temp.path.clone();
    write(&d, "helper_tools.ts", "export {}\n");
    let top = write(
        &d,
        "main.yaml",
        "name: main\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n",
    );
    write(
        &d,
        "helper.worker",
        "---\nname: helper\ntoolsets:\n  custom:\n    module: ./helper_tools.ts\n  workers:\n    allowed_workers: [deep]\n---\nHelp.\n",
    );
    write(&d, "deep.yaml", "name: deep\n");
    let plan = plan(&top);
    plan.verify(1).unwrap();
    plan.verify(2).unwrap();

    write(&d, "deep.yaml", "name: deep\ninstructions: changed\n");
    plan.verify(1).unwrap();
    let message = plan.verify(2).unwrap_err().to_string();
    assert!(
        message.contains("deep.yaml' changed after the run started"),
        "{message}"
    );
    assert!(
        message.contains("calling worker 'deep' from 'helper'"),
        "{message}"
    );

    write(&d, "helper_tools.ts", "import './evil.mjs'\n");
    let message = plan.verify(1).unwrap_err().to_string();
    assert!(message.contains("tools module"), "{message}");
    assert!(message.contains("helper_tools.ts"), "{message}");

    let plan = super::plan_worker(&top, &LoadOptions::default()).unwrap();
    write(
        &d,
        "helper.worker",
        "---\nname: helper\ntoolsets:\n  custom:\n    module: ./evil.mjs\n---\nHelp.\n",
    );
    let message = plan.verify(1).unwrap_err().to_string();
    assert!(message.contains("worker file"), "{message}");
    assert!(message.contains("helper.worker"), "{message}");
}

#[test]
fn too_many_workers_in_one_graph_are_refused() {
    let temp = dir();
    let d = temp.path.clone();
    // Four levels of eight: far more call paths than the limit.
    for level in 0..4 {
        let next: Vec<String> = (0..8)
            .map(|i| format!("./l{}_{i}.yaml", level + 1))
            .collect();
        for i in 0..8 {
            let workers = if level < 3 {
                format!(
                    "toolsets:\n  workers:\n    allowed_workers: [{}]\n",
                    next.join(", ")
                )
            } else {
                String::new()
            };
            write(
                &d,
                &format!("l{level}_{i}.yaml"),
                &format!("name: w{level}_{i}\n{workers}"),
            );
        }
    }
    let err = plan_worker(&d.join("l0_0.yaml"), &LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("more than 64 workers"), "{err}");
}

fn plan_error(path: &Path) -> String {
    let err = plan_worker(path, &LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
    err.to_string()
}

#[test]
fn the_worker_sandbox_keys_reach_every_process_toolset() {
    let temp = dir();
    let d = temp.path.clone();
    for sub in ["data", "cache", "work"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { root: ./work, readonly: true, mode: best-effort, network: true, read: [./data], write: [./cache] }\ntoolsets:\n  shell: { default: ask }\n  cli_execute: { allowed_binaries: [ls] }\n  executables: { dirs: [./work] }\n",
    );
    let plan = plan(&top);
    let main = &plan.workers()[0];
    let expected = SandboxScope {
        mode: SandboxModeName::BestEffort,
        network: crate::sandbox_config::ScopeNetwork::new(Some(
            &crate::network::NetworkSetting::Open,
        )),
        read: vec![d.join("data")],
        write: vec![d.join("cache")],
        work_dir: d.join("work"),
        readonly: true,
        // The plan's protected paths are their own test (`plan/protected/tests.rs`).
        guards: main.sandbox.guards.clone(),
        limits: Default::default(),
    };
    assert_eq!(main.sandbox, expected);
    let names: Vec<&str> = main
        .toolset_sandboxes
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(names, ["shell", "cli_execute", "executables"]);
    assert!(main
        .toolset_sandboxes
        .iter()
        .all(|(_, scope)| scope == &expected));
    let shell = main.shell.as_ref().unwrap().sandbox().unwrap();
    assert!(shell.policy().readonly && shell.policy().network == crate::sandbox::NetworkMode::On);
    assert!(
        !main.worker.warnings.iter().any(|w| w.contains("readonly")),
        "{:?}",
        main.worker.warnings
    );
}

#[test]
fn a_toolset_may_narrow_the_worker_sandbox() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir_all(d.join("data/deep")).unwrap();
    std::fs::create_dir(d.join("work")).unwrap();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { root: ./work, mode: best-effort, network: true, read: [./data] }\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { mode: enforce, network: false, read: [./data/deep] }\n  cli_execute:\n    allowed_binaries: [ls]\n    read_roots: [./data]\n    sandbox: { read: [] }\n  executables:\n    sandbox: { network: false }\n",
    );
    let plan = plan(&top);
    let main = &plan.workers()[0];
    let scopes: BTreeMap<&str, &SandboxScope> = main
        .toolset_sandboxes
        .iter()
        .map(|(name, scope)| (*name, scope))
        .collect();
    assert_eq!(scopes["shell"].mode, SandboxModeName::Enforce);
    assert!(scopes["shell"].network.is_off());
    assert_eq!(scopes["shell"].read, [d.join("data/deep")]);
    // cli_execute's read_roots stay readable: path arguments may name them.
    assert_eq!(scopes["cli_execute"].read, [d.join("data")]);
    assert!(scopes["cli_execute"].network.is_open());
    assert!(scopes["executables"].network.is_off());
    assert_eq!(main.sandbox.mode, SandboxModeName::BestEffort);
}

/// Issue 22 §8: inside one worker file a toolset's `sandbox` is the author's choice for that
/// toolset, and may widen the worker's.
#[test]
fn a_toolset_may_widen_its_workers_sandbox_inside_the_file() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::create_dir(d.join("work")).unwrap();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { root: ./work, mode: best-effort }\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { network: true, mode: off }\n  cli_execute:\n    allowed_binaries: [ls]\n    read_roots: [./data]\n  executables:\n    sandbox: { write: [./data] }\n  mcp:\n    servers: { files: { command: node, args: [server.js] } }\n    sandbox: { network: true, read: [./data] }\n",
    );
    let plan = plan(&top);
    let main = &plan.workers()[0];
    let scopes: BTreeMap<&str, &SandboxScope> = main
        .toolset_sandboxes
        .iter()
        .map(|(name, scope)| (*name, scope))
        .collect();
    assert!(scopes["shell"].network.is_open());
    assert_eq!(scopes["shell"].mode, SandboxModeName::Off);
    assert_eq!(scopes["cli_execute"].read, [d.join("data")]);
    assert_eq!(scopes["executables"].write, [d.join("data")]);
    assert!(scopes["mcp"].network.is_open());
    assert_eq!(scopes["mcp"].read, [d.join("data")]);
    // The worker's own sandbox, and every toolset that says nothing, stay as written.
    assert!(main.sandbox.network.is_off());
    assert!(main.sandbox.read.is_empty() && main.sandbox.write.is_empty());
    assert!(scopes["cli_execute"].network.is_off() && scopes["executables"].network.is_off());
    // A root that does not exist is still an error naming the toolset.
    std::fs::write(
        &top,
        "name: main\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { read: [./nowhere] }\n",
    )
    .unwrap();
    let message = plan_error(&top);
    assert!(message.contains("toolsets.shell"), "{message}");
    assert!(message.contains("nowhere"), "{message}");
}

/// Issue 22 §8: a called worker, and every toolset in it, may only narrow its caller's
/// worker-level sandbox; a toolset of a called worker may widen its own worker's narrowed
/// sandbox back up to the caller's, never past it.
#[test]
fn a_called_workers_toolsets_may_only_narrow_the_callers_sandbox() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir_all(d.join("data/deep")).unwrap();
    std::fs::create_dir(d.join("other")).unwrap();
    std::fs::create_dir(d.join("work")).unwrap();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { root: ./work, mode: best-effort, network: true, read: [./data] }\ntoolsets:\n  shell: { default: ask, sandbox: { write: [./other] } }\n  workers:\n    allowed_workers: [helper]\n",
    );
    let helper = write(
        &d,
        "helper.yaml",
        "name: helper\nsandbox: { network: false, read: [] }\ntoolsets:\n  shell: { default: ask, sandbox: { network: true, read: [./data/deep] } }\n",
    );
    let plan = plan(&top);
    let called = &plan.workers()[1];
    assert!(called.sandbox.network.is_off());
    let (_, shell) = &called.toolset_sandboxes[0];
    assert!(shell.network.is_open(), "back up to the caller's network");
    assert_eq!(shell.read, [d.join("data/deep")]);
    let cases = [
        ("shell: { default: ask, sandbox: { mode: off } }", "toolsets.shell", "mode is 'off'"),
        ("shell: { default: ask, sandbox: { read: [./other] } }", "toolsets.shell", "read root"),
        (
            "shell: { default: ask, sandbox: { write: [./other] } }",
            "toolsets.shell",
            "write root",
        ),
        (
            "cli_execute: { allowed_binaries: [ls], read_roots: [./other] }",
            "toolsets.cli_execute",
            "read_roots entry",
        ),
        (
            "cli_execute: { allowed_binaries: [ls], sandbox: { write: [./data] } }",
            "toolsets.cli_execute",
            "write root",
        ),
        (
            "executables: { sandbox: { read: [/] } }",
            "toolsets.executables",
            "read root '/'",
        ),
        (
            "mcp: { servers: { s: { command: node, args: [x.js] } }, sandbox: { read: [./other] } }",
            "toolsets.mcp",
            "read root",
        ),
    ];
    for (toolset, place, expected) in cases {
        std::fs::write(&helper, format!("name: helper\ntoolsets:\n  {toolset}\n")).unwrap();
        let message = plan_error(&top);
        assert!(message.contains("helper.yaml"), "{toolset}: {message}");
        assert!(message.contains(place), "{toolset}: {message}");
        assert!(message.contains(expected), "{toolset}: {message}");
        assert!(
            message.contains("widen the calling worker's `sandbox` instead"),
            "{toolset}: {message}"
        );
    }
    // The caller's own toolset widening does not reach the called worker: its bound is the
    // caller's worker-level sandbox (no write root there).
    std::fs::write(
        &helper,
        "name: helper\ntoolsets:\n  shell: { default: ask, sandbox: { write: [./other] } }\n",
    )
    .unwrap();
    assert!(plan_error(&top).contains("write root"));
    // Without network above, no toolset below can turn it on.
    std::fs::write(
        &top,
        "name: main\nsandbox: { root: ./work, mode: best-effort }\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n",
    )
    .unwrap();
    for toolset in [
        "shell: { default: ask, sandbox: { network: true } }",
        "mcp: { servers: { s: { command: node, args: [x.js] } }, sandbox: { network: true } }",
    ] {
        std::fs::write(&helper, format!("name: helper\ntoolsets:\n  {toolset}\n")).unwrap();
        assert!(plan_error(&top).contains("network is true"), "{toolset}");
    }
}

#[test]
fn a_called_worker_may_narrow_its_callers_sandbox_but_not_widen_it() {
    let temp = dir();
    let d = temp.path.clone();
    std::fs::create_dir_all(d.join("data/deep")).unwrap();
    std::fs::create_dir(d.join("work")).unwrap();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { root: ./work, mode: best-effort, network: true, read: [./data] }\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n",
    );
    let helper = write(
        &d,
        "helper.yaml",
        "name: helper\nsandbox: { network: false, read: [./data/deep] }\ntoolsets:\n  shell: { default: ask }\n",
    );
    let plan = plan(&top);
    let called = &plan.workers()[1];
    assert!(called.sandbox.network.is_off());
    assert_eq!(called.sandbox.read, [d.join("data/deep")]);
    assert_eq!(
        called.sandbox.mode,
        SandboxModeName::BestEffort,
        "inherited"
    );

    for (keys, expected) in [
        ("{ mode: off }", "mode is 'off'"),
        ("{ read: [/] }", "read root '/'"),
        ("{ write: [./data] }", "write root"),
    ] {
        std::fs::write(
            &helper,
            format!("name: helper\nsandbox: {keys}\ntoolsets:\n  shell: {{ default: ask }}\n"),
        )
        .unwrap();
        let message = plan_error(&top);
        assert!(
            message.contains("helper.yaml: sandbox"),
            "{keys}: {message}"
        );
        assert!(message.contains(expected), "{keys}: {message}");
        assert!(
            message.contains("widen the calling worker's `sandbox` instead"),
            "{keys}: {message}"
        );
    }
    // The caller without network: the called worker cannot turn it on.
    std::fs::write(
        &top,
        "name: main\nsandbox: { mode: best-effort }\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n",
    )
    .unwrap();
    std::fs::write(&helper, "name: helper\nsandbox: { network: true }\n").unwrap();
    assert!(plan_error(&top).contains("network is true"));
}

#[test]
fn readonly_with_the_sandbox_off_still_warns() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { readonly: true, mode: off }\ntoolsets:\n  cli_execute: { allowed_binaries: [ls] }\n",
    );
    let plan = plan(&top);
    let main = &plan.workers()[0];
    assert!(main.cli_execute.as_ref().unwrap().sandbox().is_none());
    assert!(
        main.worker
            .warnings
            .iter()
            .any(|w| w.contains("readonly") && w.contains("cli_execute")),
        "{:?}",
        main.worker.warnings
    );
}

#[test]
fn the_builtins_toolset_is_planned_and_decided() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\ntoolsets:\n  builtins:\n    tools: [http_request, math_calculate, file_create]\n    approval: { tools: { math_calculate: ask } }\n    http: { allow: [127.0.0.1], timeout: 5 }\n",
    );
    let plan = plan(&top);
    let builtins = plan.workers()[0]
        .builtins
        .as_ref()
        .expect("builtins planned");
    assert_eq!(
        builtins.names(),
        ["http_request", "math_calculate", "file_create"]
    );
    let decided = decide(&plan);
    let tools: Vec<&DecidedTool> = decided[0]
        .iter()
        .filter(|tool| tool.toolset == Toolset::Builtins)
        .collect();
    assert_eq!(tools.len(), 3);
    assert_eq!(decision(&decided[0], "http_request"), Decision::Ask);
    assert_eq!(decision(&decided[0], "math_calculate"), Decision::Ask);
    assert_eq!(decision(&decided[0], "file_create"), Decision::Ask);

    let readonly = write(
        &d,
        "readonly.yaml",
        "name: readonly\nsandbox: { readonly: true }\ntoolsets:\n  builtins: {}\n",
    );
    let plan = plan_worker(&readonly, &LoadOptions::default()).unwrap();
    let decided = decide(&plan);
    assert!(decided[0].iter().all(|tool| tool.name != "file_create"));
    assert_eq!(decision(&decided[0], "json_parse"), Decision::PreApproved);

    for (text, expected) in [
        (
            "name: a\ntoolsets:\n  builtins: { tools: [shell] }\n",
            "toolsets.builtins: tools names 'shell'",
        ),
        (
            "name: a\ntoolsets:\n  builtins: { approval: { tools: { http_requets: ask } } }\n",
            "'http_requets'",
        ),
        (
            "name: a\ntoolsets:\n  builtins: { http: { allow: ['10.0.0.0/33'] } }\n",
            "toolsets.builtins",
        ),
    ] {
        let path = write(&d, "bad.yaml", text);
        let err = plan_worker(&path, &LoadOptions::default())
            .and_then(|plan| plan.decide(&BTreeMap::new()).map(|_| ()))
            .unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::ConfigInvalid, "{text}");
        assert!(err.to_string().contains(expected), "{text}: {err}");
    }
}

#[test]
fn the_redaction_patterns_are_every_deny_output_pattern_of_the_graph_once() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { mode: best-effort }\ntoolsets:\n  cli_execute:\n    allowed_binaries: [ls]\n    guardrails:\n      deny_output: [{ pattern: 'sk-[a-z]+', action: redact }, { pattern: PRIVATE KEY }]\n  workers:\n    allowed_workers: [helper]\n",
    );
    write(
        &d,
        "helper.yaml",
        "name: helper\ntoolsets:\n  cli_execute:\n    allowed_binaries: [ls]\n    guardrails: { deny_output: [{ pattern: PRIVATE KEY }, { pattern: 'ghp_[A-Za-z0-9]+' }] }\n",
    );
    let plan = plan(&top);
    assert_eq!(
        plan.redaction_patterns(),
        ["sk-[a-z]+", "PRIVATE KEY", "ghp_[A-Za-z0-9]+"]
    );
    let fingerprint = plan.fingerprint().unwrap();
    assert_eq!(fingerprint, plan.fingerprint().unwrap());
    assert_eq!(fingerprint.len(), 64, "{fingerprint}");
}

#[test]
fn two_worker_files_of_one_graph_may_not_share_a_name() {
    let temp = dir();
    let d = temp.path.clone();
    // A called worker taking its caller's name (whose saved approvals name it).
    let top = write(
        &d,
        "top.yaml",
        "name: top\ntoolsets:\n  shell: { default: ask }\n  workers:\n    allowed_workers: [helper]\n",
    );
    write(
        &d,
        "helper.yaml",
        "name: top\ndescription: Helps\ntoolsets:\n  shell: { default: ask }\n",
    );
    let err = plan_error(&top);
    assert!(err.contains("name 'top' is already the name of"), "{err}");
    assert!(
        err.contains("top.yaml") && err.contains("helper.yaml"),
        "{err}"
    );
    // Two called workers sharing one name.
    let main = write(
        &d,
        "main.yaml",
        "name: main\ntoolsets:\n  workers:\n    allowed_workers: [a, b]\n",
    );
    write(&d, "a.yaml", "name: twin\ndescription: A\n");
    write(&d, "b.yaml", "name: twin\ndescription: B\n");
    let err = plan_error(&main);
    assert!(err.contains("name 'twin' is already the name of"), "{err}");
    // One file reached twice is one worker: no clash.
    write(
        &d,
        "b.yaml",
        "name: other\ndescription: B\ntoolsets:\n  workers:\n    allowed_workers: [a]\n",
    );
    plan(&main);
}
