use std::path::{Path, PathBuf};

use super::*;
use crate::options::{parse, OptionValue};
use crate::sandbox::SandboxMode;

/// A work directory with `data/`, `cache/` and `work/sub/` in a scratch directory, canonical.
struct Dirs {
    _scratch: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
}

fn dirs() -> Dirs {
    let scratch = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(scratch.path()).unwrap();
    for dir in ["data/deep", "cache", "work/sub", "other"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    Dirs {
        work: root.join("work"),
        root,
        _scratch: scratch,
    }
}

fn option(json: serde_json::Value) -> crate::Result<SandboxOption> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Holder {
        sandbox: SandboxOption,
    }
    parse::<Holder>(
        OptionValue::from(serde_json::json!({ "sandbox": json })),
        false,
    )
    .map(|holder| holder.sandbox)
}

fn fields(yaml: &str) -> SandboxFields {
    serde_yaml::from_str(yaml).unwrap()
}

const WIDENING: Widening<'static> = Widening {
    setting: "w.worker: toolsets.shell.sandbox",
    above: "the worker's sandbox",
    narrower: "a toolset",
    fix: "widen the worker-level `sandbox` instead",
};

#[test]
fn the_option_takes_false_a_mode_or_the_object_form() {
    assert_eq!(
        option(serde_json::json!(false)).unwrap(),
        SandboxOption::Off
    );
    assert_eq!(
        option(serde_json::json!("best-effort")).unwrap(),
        SandboxOption::Mode(SandboxModeName::BestEffort)
    );
    assert_eq!(
        option(serde_json::json!({ "network": true, "read": ["/usr"] })).unwrap(),
        SandboxOption::Fields(Box::new(SandboxFields {
            network: Some(crate::network::NetworkSetting::Open),
            read: Some(vec![PathBuf::from("/usr")]),
            ..SandboxFields::default()
        }))
    );
    assert_eq!(
        SandboxOption::Off.into_fields().mode,
        Some(SandboxModeName::Off)
    );
}

#[test]
fn the_option_is_read_strictly() {
    let cases = [
        (serde_json::json!(true), "on by default"),
        (serde_json::json!("strict"), "'strict'"),
        (serde_json::json!({ "netwrk": true }), "sandbox.netwrk"),
        (serde_json::json!({ "mode": "paranoid" }), "paranoid"),
        (serde_json::json!({ "read": "/usr" }), "sandbox.read"),
        (serde_json::json!(3), "sandbox"),
    ];
    for (value, expected) in cases {
        let err = option(value.clone()).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{value}");
        assert!(err.to_string().contains(expected), "{value}: {err}");
    }
}

#[test]
fn yaml_spells_the_modes_in_kebab_case_and_off_is_a_mode() {
    assert_eq!(fields("mode: off").mode, Some(SandboxModeName::Off));
    assert_eq!(
        fields("mode: best-effort").mode,
        Some(SandboxModeName::BestEffort)
    );
    assert!(serde_yaml::from_str::<SandboxFields>("mode: strict").is_err());
    assert!(serde_yaml::from_str::<SandboxFields>("netwrk: true").is_err());
}

#[test]
fn a_scope_on_its_own_starts_from_enforce_without_network() {
    let d = dirs();
    let scope = SandboxScope::new(&d.work, false, &SandboxFields::default(), &d.work, "s").unwrap();
    assert_eq!(scope.mode, SandboxModeName::Enforce);
    assert!(scope.network.is_off() && scope.read.is_empty() && scope.write.is_empty());
    assert_eq!(scope.work_dir, d.work);
    let policy = scope.policy().unwrap();
    assert_eq!(policy.mode, SandboxMode::Enforce);
    assert!(!policy.readonly);

    let scope = SandboxScope::new(
        &d.work,
        true,
        &fields("{ mode: off, read: [../data, ../data/deep/..], write: [sub] }"),
        &d.work,
        "s",
    )
    .unwrap();
    assert_eq!(
        scope.read,
        [d.root.join("data")],
        "resolved and deduplicated"
    );
    assert_eq!(scope.write, [d.work.join("sub")]);
    assert!(scope.policy().is_none(), "mode off has no kernel policy");
}

#[test]
fn roots_must_exist_and_tilde_is_this_users_home() {
    let d = dirs();
    let err = SandboxScope::new(
        &d.work,
        false,
        &fields("{ read: [missing] }"),
        &d.work,
        "option 'sandbox'",
    )
    .unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    let text = err.to_string();
    assert!(
        text.contains("option 'sandbox': read entry 'missing'"),
        "{text}"
    );

    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let scope =
        SandboxScope::new(&d.work, false, &fields("{ read: ['~'] }"), &d.work, "s").unwrap();
    assert_eq!(scope.read, [std::fs::canonicalize(home).unwrap()]);
}

#[test]
fn narrowing_keeps_what_is_absent_and_accepts_what_is_narrower() {
    let d = dirs();
    let worker = SandboxScope::new(
        &d.work,
        false,
        &fields("{ mode: best-effort, network: true, read: [../data], write: [../cache] }"),
        &d.work,
        "w",
    )
    .unwrap();
    assert_eq!(
        worker
            .narrow(&SandboxFields::default(), &d.work, &WIDENING)
            .unwrap(),
        worker
    );
    let narrowed = worker
        .narrow(
            &fields("{ mode: enforce, network: false, read: [../data/deep, sub, ../cache], write: [sub] }"),
            &d.work,
            &WIDENING,
        )
        .unwrap();
    assert_eq!(narrowed.mode, SandboxModeName::Enforce);
    assert!(narrowed.network.is_off());
    assert_eq!(
        narrowed.read,
        [
            d.root.join("data/deep"),
            d.work.join("sub"),
            d.root.join("cache")
        ]
    );
    assert_eq!(narrowed.write, [d.work.join("sub")]);
    let narrowed = worker
        .narrow(&fields("{ read: [], write: [] }"), &d.work, &WIDENING)
        .unwrap();
    assert!(narrowed.read.is_empty() && narrowed.write.is_empty());
}

#[test]
fn widening_is_refused_and_says_where_to_widen() {
    let d = dirs();
    let worker = SandboxScope::new(
        &d.work,
        false,
        &fields("{ read: [../data], write: [../cache] }"),
        &d.work,
        "w",
    )
    .unwrap();
    let cases = [
        ("{ network: true }", "network is true"),
        ("{ mode: best-effort }", "mode is 'best-effort'"),
        ("{ mode: off }", "mode is 'off'"),
        ("{ read: [../other] }", "read root"),
        ("{ read: [..] }", "read root"),
        ("{ write: [../data] }", "write root"),
        ("{ write: [../data/deep] }", "write root"),
    ];
    for (yaml, expected) in cases {
        let err = worker
            .narrow(&fields(yaml), &d.work, &WIDENING)
            .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{yaml}");
        let text = err.to_string();
        assert!(text.contains(expected), "{yaml}: {text}");
        assert!(
            text.starts_with("w.worker: toolsets.shell.sandbox: ")
                && text.contains("widen the worker-level `sandbox` instead"),
            "{yaml}: {text}"
        );
    }
    // A read-only work directory cannot be made writable below.
    let readonly =
        SandboxScope::new(&d.work, true, &SandboxFields::default(), &d.work, "w").unwrap();
    let err = readonly
        .narrow(&fields("{ write: [sub] }"), &d.work, &WIDENING)
        .unwrap_err();
    assert!(err.to_string().contains("write root"), "{err}");
    assert!(readonly
        .narrow(&fields("{ read: [sub] }"), &d.work, &WIDENING)
        .is_ok());
}

#[test]
fn a_called_worker_stays_inside_and_inherits_readonly() {
    let d = dirs();
    let caller = SandboxScope::new(&d.work, true, &SandboxFields::default(), &d.work, "w").unwrap();
    let called = caller.within(&d.work.join("sub"), false).unwrap();
    assert_eq!(called.work_dir, d.work.join("sub"));
    assert!(called.readonly);
    let err = caller.within(&d.root.join("other"), false).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
}

#[test]
fn read_roots_of_a_toolset_must_lie_in_the_worker_sandbox() {
    let d = dirs();
    let worker =
        SandboxScope::new(&d.work, false, &fields("{ read: [../data] }"), &d.work, "w").unwrap();
    let narrowed = worker
        .narrow(&fields("{ read: [] }"), &d.work, &WIDENING)
        .unwrap();
    let with = narrowed
        .with_read_roots(
            &[PathBuf::from("../data/deep")],
            &d.work,
            Some((&worker, &WIDENING)),
        )
        .unwrap();
    assert_eq!(with.read, [d.root.join("data/deep")]);
    let err = narrowed
        .with_read_roots(
            &[PathBuf::from("../other")],
            &d.work,
            Some((&worker, &WIDENING)),
        )
        .unwrap_err();
    assert!(err.to_string().contains("read_roots entry"), "{err}");
    // On its own (a TypeScript tool) they simply become readable.
    let alone = narrowed
        .with_read_roots(&[PathBuf::from("../other")], &d.work, None)
        .unwrap();
    assert_eq!(alone.read, [d.root.join("other")]);
}

#[test]
fn description_runs_get_no_network_and_write_nothing() {
    let d = dirs();
    let scope = SandboxScope::new(
        &d.work,
        false,
        &fields("{ network: true, write: [../cache] }"),
        &d.work,
        "s",
    )
    .unwrap();
    let discovery = scope.for_discovery();
    assert!(discovery.network.is_off() && discovery.readonly && discovery.write.is_empty());
    assert_eq!(discovery.read, [d.root.join("cache")]);
    assert_eq!(discovery.mode, scope.mode);
}

#[test]
fn anchoring_keeps_home_paths_and_absolute_ones() {
    let anchored = fields("{ read: [data, /usr, ~/x], write: [./out] }").anchored(Path::new("/w"));
    assert_eq!(
        anchored.read.unwrap(),
        [
            PathBuf::from("/w/data"),
            PathBuf::from("/usr"),
            PathBuf::from("~/x")
        ]
    );
    assert_eq!(anchored.write.unwrap(), [PathBuf::from("/w/out")]);
}

#[test]
fn exec_reuses_a_prepared_sandbox_for_an_equal_scope() {
    let d = dirs();
    let scope = SandboxScope::new(
        &d.work,
        false,
        &fields("{ mode: best-effort }"),
        &d.work,
        "s",
    )
    .unwrap();
    let first = prepare_cached(&scope).unwrap().sandbox.unwrap();
    let second = prepare_cached(&scope).unwrap().sandbox.unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &second));
    let other = SandboxScope {
        network: super::ScopeNetwork::new(Some(&crate::network::NetworkSetting::Open)),
        ..scope
    };
    let third = prepare_cached(&other).unwrap().sandbox.unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &third));
}

#[test]
fn version_managers_on_the_path_are_readable_but_never_a_home() {
    use crate::sandbox::version_managers::{roots_of_shims, version_manager_parts};
    let d = dirs();
    for dir in [
        ".pyenv/shims",
        ".pyenv/versions/3.11/bin",
        ".pyenv/libexec",
        ".pyenv/plugins/venv/shims",
        ".pyenv/pyenv.d/exec",
        ".pyenv/credentials.d",
        ".pyenv/src",
        ".rbenv/bin",
        "loose/shims",
    ] {
        std::fs::create_dir_all(d.root.join(dir)).unwrap();
    }
    std::fs::write(d.root.join(".pyenv/version"), "3.11\n").unwrap();
    std::fs::write(d.root.join(".pyenv/notes.txt"), "not the shims'").unwrap();
    let search_path = std::env::join_paths([
        d.root.join(".pyenv/plugins/venv/shims"),
        d.root.join(".pyenv/shims"),
        d.root.join(".rbenv/bin"),
        d.root.join("loose/shims"),
        PathBuf::from("relative/shims"),
        PathBuf::from("/root/shims"),
        d.root.join("missing/shims"),
    ])
    .unwrap();
    assert_eq!(
        version_manager_roots(&search_path),
        [d.root.join(".pyenv")],
        "the root of a manager (the folder holding `versions` above a plugin's shims too), once; \
         not a bin directory, a `shims` folder without installs above it, a relative, missing or home entry"
    );
    let pyenv = d.root.join(".pyenv");
    assert_eq!(
        version_manager_parts(&search_path),
        ["libexec", "plugins", "shims", "versions", "version", "pyenv.d"]
            .map(|part| pyenv.join(part)),
        "the parts its shims use, never the root with its other files (src, notes.txt) or \
         another `*.d` folder than the manager's hooks (credentials.d)"
    );
    // `shims` directly in a home grants nothing: the home would be the root.
    let home = dirs();
    for dir in ["shims", "versions"] {
        std::fs::create_dir(home.root.join(dir)).unwrap();
    }
    let home_shims = std::env::join_paths([home.root.join("shims")]).unwrap();
    assert!(roots_of_shims(&home_shims, std::slice::from_ref(&home.root)).is_empty());
    assert_eq!(
        roots_of_shims(&home_shims, &[]),
        std::slice::from_ref(&home.root),
        "the same directory when it is nobody's home (it holds `versions`)"
    );
}

#[test]
fn limits_narrow_key_by_key_and_a_higher_one_widens() {
    let d = dirs();
    let worker = SandboxScope::new(
        &d.work,
        false,
        &fields("{ limits: { processes: 64, cpu_seconds: 10 } }"),
        &d.work,
        "w",
    )
    .unwrap();
    // An absent key keeps the value above; a lower one narrows.
    let narrowed = worker
        .narrow(
            &fields("{ limits: { memory_mb: 256 } }"),
            &d.work,
            &WIDENING,
        )
        .unwrap();
    assert_eq!(narrowed.limits.processes, Some(64));
    assert_eq!(narrowed.limits.cpu_seconds, Some(10));
    assert_eq!(narrowed.limits.memory_mb, Some(256));
    for (yaml, expected) in [
        (
            "{ limits: { processes: 65 } }",
            "limits.processes is 65 where it is 64",
        ),
        (
            "{ limits: { cpu_seconds: 11 } }",
            "limits.cpuSeconds is 11 where it is 10",
        ),
        (
            "{ limits: { tmp_mb: 100000 } }",
            "limits.tmpMb is 100000 where it is 512",
        ),
    ] {
        let err = worker
            .narrow(&fields(yaml), &d.work, &WIDENING)
            .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{yaml}");
        assert!(err.to_string().contains(expected), "{yaml}: {err}");
    }
    // A toolset inside its own worker file may raise them (issue 22 §8); a caller's bound
    // still says where it widens.
    let raised = worker
        .with_fields(&fields("{ limits: { processes: 200 } }"), &d.work, "w")
        .unwrap();
    assert_eq!(raised.limits.processes, Some(200));
    assert!(raised
        .widening_over(&worker)
        .is_some_and(|what| what.contains("limits.processes is 200 where it is 64")));
}

#[test]
fn roots_and_shims_through_a_symlink_a_process_may_change_are_not_taken() {
    let d = dirs();
    std::os::unix::fs::symlink(d.root.join("data"), d.work.join("linked")).unwrap();
    for key in ["read", "write"] {
        let err = SandboxScope::new(
            &d.work,
            false,
            &fields(&format!("{{ {key}: [linked] }}")),
            &d.work,
            "s",
        )
        .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{key}");
        assert!(err.to_string().contains("symlink"), "{err}");
    }
    // A read-only scope too: other toolsets and the file tools write the work directory.
    let err = SandboxScope::new(
        &d.work,
        true,
        &fields("{ read: [linked/deep] }"),
        &d.work,
        "s",
    )
    .unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    // A version manager's `shims` in the work directory (or made a symlink there) grants its
    // parent nothing.
    std::fs::create_dir_all(d.work.join("tool/shims")).unwrap();
    std::os::unix::fs::symlink(d.root.join("other"), d.work.join("shims")).unwrap();
    let search_path =
        std::env::join_paths([d.work.join("tool/shims"), d.work.join("shims")]).unwrap();
    assert!(crate::sandbox::version_managers::roots_of_shims(&search_path, &[]).is_empty());
}
