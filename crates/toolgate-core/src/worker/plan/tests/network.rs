//! `sandbox.network` through a worker graph: a toolset may widen its worker's network inside
//! one file; a called worker and its toolsets only narrow their caller's.

use std::collections::BTreeMap;

use crate::worker::plan::*;
use crate::worker::test_support::{dir, write};

fn scopes(plan: &WorkerPlan, worker: usize) -> BTreeMap<&'static str, String> {
    plan.workers()[worker]
        .toolset_sandboxes
        .iter()
        .map(|(name, scope)| (*name, scope.network.describe()))
        .collect()
}

fn plan_error(path: &std::path::Path) -> String {
    let err = plan_worker(path, &LoadOptions::default()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
    err.to_string()
}

#[test]
fn a_toolset_widens_its_workers_hosts_inside_one_file() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox:\n  mode: best-effort\n  network: { allow: [registry.npmjs.org], deny: [bad.npmjs.org] }\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { network: { allow: [pypi.org, files.pythonhosted.org], ask: true } }\n  cli_execute:\n    allowed_binaries: [ls]\n  executables:\n    sandbox: { network: false }\n",
    );
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let main = &plan.workers()[0];
    assert_eq!(
        main.sandbox.network.describe(),
        "by host through the egress proxy: allow registry.npmjs.org; deny bad.npmjs.org; refuse other hosts"
    );
    let scopes = scopes(&plan, 0);
    assert_eq!(
        scopes["shell"],
        "by host through the egress proxy: allow registry.npmjs.org, pypi.org, files.pythonhosted.org; deny bad.npmjs.org; ask about other hosts"
    );
    assert_eq!(scopes["cli_execute"], main.sandbox.network.describe());
    assert_eq!(scopes["executables"], "off");
    // The prepared sandbox carries the policy the proxy judges by.
    let shell = main.shell.as_ref().unwrap().sandbox().unwrap();
    let policy = shell.host_policy().unwrap().to_string();
    assert!(policy.contains("pypi.org"), "{policy}");
    assert_eq!(
        shell.policy().network,
        crate::sandbox::NetworkMode::Proxy,
        "the kernel network is the proxy's only"
    );
}

#[test]
fn a_called_worker_and_its_toolsets_only_narrow_the_callers_hosts() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox:\n  mode: best-effort\n  network: { allow: [\"*.npmjs.org\"] }\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n",
    );
    let helper = d.join("helper.yaml");
    // Narrower, and a toolset within the caller's hosts: both hold at once.
    std::fs::write(
        &helper,
        "name: helper\nsandbox: { network: { allow: [registry.npmjs.org] } }\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { network: { allow: [\"www.npmjs.org\"] } }\n",
    )
    .unwrap();
    let plan = plan_worker(&top, &LoadOptions::default()).unwrap();
    let called = &plan.workers()[1];
    let text = called.sandbox.network.describe();
    assert!(
        text.contains(
            "allow *.npmjs.org; refuse other hosts; and within that, allow registry.npmjs.org"
        ),
        "{text}"
    );
    let shell = &scopes(&plan, 1)["shell"];
    assert!(
        shell.contains("and within that, allow registry.npmjs.org, www.npmjs.org"),
        "{shell}"
    );
    // A called worker's own hosts past the caller's: refused, naming the entry.
    for (file, expected) in [
        (
            "name: helper\nsandbox: { network: { allow: [pypi.org] } }\n",
            "network.allow has 'pypi.org', which the caller does not allow",
        ),
        (
            "name: helper\nsandbox: { network: true }\n",
            "network is true where it is limited to some hosts",
        ),
        (
            "name: helper\nsandbox: { network: { allow: [\"*.npmjs.org\"], ask: true } }\n",
            "network.ask is true where it is false",
        ),
        (
            "name: helper\ntoolsets:\n  shell:\n    default: ask\n    sandbox: { network: { allow: [pypi.org] } }\n",
            "which the worker's callers do not allow",
        ),
    ] {
        std::fs::write(&helper, file).unwrap();
        let message = plan_error(&top);
        assert!(message.contains(expected), "{file}: {message}");
        assert!(message.contains("helper.yaml"), "{file}: {message}");
    }
    // A caller without network: no host of a called worker is reachable.
    std::fs::write(
        &top,
        "name: main\nsandbox: { mode: best-effort }\ntoolsets:\n  workers:\n    allowed_workers: [helper]\n",
    )
    .unwrap();
    std::fs::write(
        &helper,
        "name: helper\nsandbox: { network: { allow: [registry.npmjs.org] } }\n",
    )
    .unwrap();
    assert!(plan_error(&top).contains("network allows hosts where it is false"));
}

#[test]
fn a_network_setting_with_an_unknown_key_or_a_bad_entry_is_refused_with_its_place() {
    let temp = dir();
    let d = temp.path.clone();
    for (sandbox, expected) in [
        (
            "{ network: { allow: [a.test], hosts: [b.test] } }",
            "unknown key 'hosts' in the network setting",
        ),
        (
            "{ network: { allow: [\"https://a.test\"] } }",
            "network.allow entry 'https://a.test' is not valid",
        ),
        ("{ network: { ask: yes } }", "ask"),
        ("{ network: 1 }", "true, false or an object"),
    ] {
        let top = write(
            &d,
            "main.yaml",
            &format!("name: main\nsandbox: {sandbox}\n"),
        );
        let message = plan_error(&top);
        assert!(message.contains(expected), "{sandbox}: {message}");
        assert!(message.contains("main.yaml"), "{sandbox}: {message}");
    }
}

#[test]
fn hosts_with_the_sandbox_off_are_refused() {
    let temp = dir();
    let d = temp.path.clone();
    let top = write(
        &d,
        "main.yaml",
        "name: main\nsandbox: { mode: off, network: { allow: [a.test] } }\ntoolsets:\n  shell: { default: ask }\n",
    );
    let message = plan_error(&top);
    assert!(message.contains("mode is 'off'"), "{message}");
}
