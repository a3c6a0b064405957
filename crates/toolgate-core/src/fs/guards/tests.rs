//! Protected configuration and the same-file refusal against every file tool: writes, edits,
//! patches (each action, moves from and to), deletes of protected files and directories; and
//! hard links to a blocked file (also one inside a blocked directory, also made after the tools
//! were prepared) read, searched, globbed, listed and drawn under another name.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::approval::Decision::{self, Ask, Blocked, PreApproved};
use crate::fs::access::{decide_call, Access, CallGate, DecidedBy, PathGate, ToolApproval};
use crate::fs::rules::PathRule;
use crate::fs::{
    self, Cancel, EditRequest, GlobRequest, GrepRequest, PatchAction, PatchOperation, ReadRequest,
    TreeRequest,
};
use crate::PathValidator;

const SECRET: &str = "hunter2-secret";

fn put(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

struct Fixture {
    _dir: tempfile::TempDir,
    validator: PathValidator,
    gate: Arc<PathGate>,
}

/// A work directory with a tools module and a tool directory protected, `.env*` and
/// `secrets/` blocked, and hard links to the blocked files made before the tools are prepared.
fn fixture(rules: &[(&str, Decision)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    put(&root, "tools.ts", "export const x = 1;\n");
    put(&root, "toolgate-tools/hello.sh", "#!/bin/sh\n");
    put(&root, ".env", &format!("TOKEN={SECRET}\n"));
    put(&root, "secrets/key", &format!("KEY={SECRET}\n"));
    put(&root, "src/app.ts", "needle\n");
    std::fs::hard_link(root.join(".env"), root.join("notes.txt")).unwrap();
    std::fs::hard_link(root.join("secrets/key"), root.join("src/key.txt")).unwrap();
    std::fs::hard_link(root.join("tools.ts"), root.join("copy.ts")).unwrap();
    let validator = PathValidator::new(&root).unwrap();
    let mut list: Vec<PathRule> = vec![
        PathRule {
            pattern: ".env*".into(),
            approval: Blocked,
        },
        PathRule {
            pattern: "/secrets/".into(),
            approval: Blocked,
        },
    ];
    list.extend(rules.iter().map(|(pattern, approval)| PathRule {
        pattern: pattern.to_string(),
        approval: *approval,
    }));
    let gate = PathGate::new(&root, &list, "code_agent approval.paths").unwrap();
    let protected = vec![
        (root.join("tools.ts"), "the tools module of 'w'".to_string()),
        (
            root.join("toolgate-tools"),
            "an executable-tool directory of 'w'".to_string(),
        ),
        (root.join(".git/hooks"), "git hooks".to_string()),
        // Outside the root: ignored.
        (Path::new("/elsewhere/worker.yaml").into(), "x".to_string()),
    ];
    let guards = FileGuards::new(&root, &protected, &[], &gate).unwrap();
    Fixture {
        _dir: dir,
        validator,
        gate: Arc::new(gate.with_guards(guards)),
    }
}

impl Fixture {
    fn call(&self, decision: Decision, approved: Option<Decision>) -> CallGate {
        CallGate {
            gate: Arc::clone(&self.gate),
            tool: ToolApproval {
                decision,
                path_floor: None,
            },
            approved,
        }
    }

    fn root(&self) -> &Path {
        self.validator.root()
    }

    fn decide(&self, tool: &str, input: serde_json::Value) -> crate::fs::access::CallDecision {
        let approval = ToolApproval {
            decision: Ask,
            path_floor: None,
        };
        decide_call(&self.gate, &self.validator, approval, tool, &input).unwrap()
    }
}

/// A call of a pre-approved tool through `gate`.
fn preapproved(gate: Arc<PathGate>) -> CallGate {
    CallGate {
        gate,
        tool: ToolApproval {
            decision: PreApproved,
            path_floor: None,
        },
        approved: None,
    }
}

/// A search of the whole work directory for [`SECRET`].
fn secret_search() -> GrepRequest {
    GrepRequest {
        pattern: SECRET.into(),
        path: None,
        include: Vec::new(),
        exclude: Vec::new(),
        context: 0,
        max_results: 50,
        ignore_case: false,
    }
}

fn blocked<T: std::fmt::Debug>(what: &str, result: crate::Result<T>) -> String {
    let err = result.expect_err(what);
    assert_eq!(err.code(), "PATH_BLOCKED", "{what}: {err}");
    let message = err.to_string();
    assert!(!message.contains(SECRET), "{what}: {message}");
    message
}

#[test]
fn every_change_of_a_protected_path_is_refused_with_the_rule_protected() {
    let f = fixture(&[]);
    let call = f.call(Ask, None);
    let access = Access::new(&f.validator, Some(&call));
    let message = blocked("write", fs::write(access, "tools.ts", b"evil()"));
    assert!(
        message.contains("'tools.ts' is protected configuration"),
        "{message}"
    );
    assert!(message.contains("the tools module of 'w'"), "{message}");
    assert!(message.contains("rule protected"), "{message}");
    assert!(
        message.contains("pattern: '/tools.ts', approval: ask"),
        "{message}"
    );
    for spelled in [
        "./tools.ts",
        "src/../tools.ts",
        &f.root().join("tools.ts").display().to_string(),
    ] {
        blocked(spelled, fs::write(access, spelled, b"evil()"));
    }
    // A new file in a protected directory, which does not exist yet.
    blocked(
        "plant",
        fs::write(access, "toolgate-tools/planted", b"#!/bin/sh\n"),
    );
    blocked(
        "hook",
        fs::write(access, ".git/hooks/pre-commit", b"#!/bin/sh\n"),
    );
    assert!(!f.root().join(".git").exists(), "nothing was created");
    let edit = EditRequest {
        path: "tools.ts".into(),
        old_text: "1".into(),
        new_text: "2".into(),
        replace_all: false,
    };
    blocked("edit", fs::edit(access, &edit));
    blocked("delete", fs::delete(access, "tools.ts"));
    blocked(
        "delete in dir",
        fs::delete(access, "toolgate-tools/hello.sh"),
    );
    let op = |action, path: &str, new_path: Option<&str>| PatchOperation {
        action,
        path: path.into(),
        content: Some("x".into()),
        new_path: new_path.map(String::from),
    };
    for ops in [
        vec![op(PatchAction::Update, "tools.ts", None)],
        vec![op(PatchAction::Delete, "tools.ts", None)],
        vec![op(PatchAction::Add, "toolgate-tools/new.sh", None)],
        // Renamed over, and moved away.
        vec![op(PatchAction::Move, "src/app.ts", Some("tools.ts"))],
        vec![op(PatchAction::Move, "tools.ts", Some("src/old.ts"))],
        vec![
            op(PatchAction::Add, "ok.txt", None),
            op(PatchAction::Update, "tools.ts", None),
        ],
    ] {
        blocked("patch", fs::patch(access, &ops));
    }
    assert!(
        !f.root().join("ok.txt").exists(),
        "the patch changed nothing"
    );
    // A hard link to the protected file is the protected file.
    let message = blocked("link", fs::write(access, "copy.ts", b"evil()"));
    assert!(message.contains("same file as 'tools.ts'"), "{message}");
    assert_eq!(
        std::fs::read_to_string(f.root().join("tools.ts")).unwrap(),
        "export const x = 1;\n"
    );
    // Reading is fine: protected paths are read-only, not hidden.
    let read = fs::read(access, &ReadRequest::new("tools.ts")).unwrap();
    assert!(read.text.contains("export const x"));
    assert!(fs::read(access, &ReadRequest::new("copy.ts")).is_ok());
}

#[test]
fn the_per_call_decision_blocks_a_protected_change_and_an_explicit_rule_makes_it_ask() {
    let f = fixture(&[]);
    let decided = f.decide("file_write", json!({ "path": "tools.ts" }));
    assert_eq!(
        (decided.decision, decided.by),
        (Blocked, DecidedBy::Protected)
    );
    let decided = f.decide(
        "file_patch",
        json!({ "operations": [{ "action": "move", "path": "src/app.ts", "new_path": "toolgate-tools/x" }] }),
    );
    assert_eq!(decided.decision, Blocked);
    // Reading tools do not change anything.
    assert_eq!(
        f.decide("file_read", json!({ "path": "tools.ts" }))
            .decision,
        Ask
    );

    // An explicit rule names it: the call asks, even when the rule pre-approves.
    let f = fixture(&[("/tools.ts", PreApproved), ("**", PreApproved)]);
    let decided = f.decide("file_write", json!({ "path": "tools.ts" }));
    assert_eq!((decided.decision, decided.by), (Ask, DecidedBy::Rule));
    // The catch-all rule names nothing in particular.
    let decided = f.decide("file_write", json!({ "path": "toolgate-tools/x" }));
    assert_eq!(
        (decided.decision, decided.by),
        (Blocked, DecidedBy::Protected)
    );
    // Approved at `ask`, the write runs; approved lower, it is refused.
    let asked = f.call(Ask, Some(Ask));
    fs::write(
        Access::new(&f.validator, Some(&asked)),
        "tools.ts",
        b"changed",
    )
    .unwrap();
    let low = f.call(PreApproved, Some(PreApproved));
    let err = fs::write(Access::new(&f.validator, Some(&low)), "tools.ts", b"x").unwrap_err();
    assert_eq!(err.code(), "APPROVAL_DENIED", "{err}");
}

#[test]
fn a_hard_link_to_a_blocked_file_is_refused_and_never_shown() {
    let f = fixture(&[]);
    let call = f.call(PreApproved, None);
    let access = Access::new(&f.validator, Some(&call));
    let message = blocked("read", fs::read(access, &ReadRequest::new("notes.txt")));
    assert!(
        message.contains("'notes.txt' is the same file as '.env'"),
        "{message}"
    );
    assert!(message.contains("'.env*' (blocked)"), "{message}");
    // Inside a blocked directory too.
    let message = blocked("key", fs::read(access, &ReadRequest::new("src/key.txt")));
    assert!(message.contains("same file as 'secrets/key'"), "{message}");
    blocked("info", fs::info(access, "notes.txt"));
    blocked("exists", fs::exists(access, "notes.txt"));
    blocked("write", fs::write(access, "notes.txt", b"x"));
    let grep = secret_search();
    let found = fs::grep(access, &grep, &Cancel::default()).unwrap();
    assert!(
        !found.text.contains("TOKEN=") && !found.text.contains("KEY="),
        "{}",
        found.text
    );
    assert_eq!(found.files_with_matches, 0, "{}", found.text);
    blocked(
        "grep path",
        fs::grep(
            access,
            &GrepRequest {
                path: Some("notes.txt".into()),
                ..grep.clone()
            },
            &Cancel::default(),
        ),
    );
    let glob = fs::glob(
        access,
        &GlobRequest {
            pattern: "**/*.txt".into(),
            path: None,
            max_results: 100,
        },
        &Cancel::default(),
    )
    .unwrap();
    assert!(glob.files.is_empty(), "{:?}", glob.files);
    let tree = fs::tree(
        access,
        &TreeRequest {
            path: None,
            max_depth: 3,
        },
        &Cancel::default(),
    )
    .unwrap();
    assert!(
        !tree.text.contains("notes.txt") && !tree.text.contains("key.txt"),
        "{}",
        tree.text
    );
    assert!(tree.text.contains("app.ts"), "{}", tree.text);
    let listing = fs::read(access, &ReadRequest::new(".")).unwrap();
    assert!(!listing.text.contains("notes.txt"), "{}", listing.text);
    // A symlink to the hard link is not listed either.
    std::os::unix::fs::symlink("../notes.txt", f.root().join("src/alias.txt")).unwrap();
    let glob = fs::glob(
        access,
        &GlobRequest {
            pattern: "**/*.txt".into(),
            path: None,
            max_results: 100,
        },
        &Cancel::default(),
    )
    .unwrap();
    assert!(glob.files.is_empty(), "{:?}", glob.files);
    blocked(
        "through symlink",
        fs::read(access, &ReadRequest::new("src/alias.txt")),
    );
}

#[test]
fn a_hard_link_made_after_the_tools_were_prepared_is_refused_on_the_opened_file() {
    let f = fixture(&[]);
    let call = f.call(PreApproved, None);
    let access = Access::new(&f.validator, Some(&call));
    // What a sandboxed `ln .env later.txt` would leave behind during a run.
    std::fs::hard_link(f.root().join(".env"), f.root().join("later.txt")).unwrap();
    let message = blocked("read", fs::read(access, &ReadRequest::new("later.txt")));
    assert!(message.contains("same file as '.env'"), "{message}");
    // The blocked file itself is refused by its name, as before.
    let message = blocked("env", fs::read(access, &ReadRequest::new(".env")));
    assert!(message.contains("path rule"), "{message}");
    // An ordinary file with several names is not affected.
    std::fs::hard_link(f.root().join("src/app.ts"), f.root().join("src/app2.ts")).unwrap();
    assert!(fs::read(access, &ReadRequest::new("src/app2.ts")).is_ok());
}

#[test]
fn without_blocked_rules_no_walk_is_made_and_only_protection_applies() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    put(&root, "worker.yaml", "name: w\n");
    let gate = PathGate::new(&root, &[], "approval.paths").unwrap();
    assert!(!gate.has_blocking_rules());
    let guards = FileGuards::new(
        &root,
        &[(root.join("worker.yaml"), "the worker file".into())],
        &[],
        &gate,
    )
    .unwrap();
    assert!(!guards.is_empty());
    let gate = Arc::new(gate.with_guards(guards));
    assert!(!gate.is_empty());
    let call = preapproved(gate);
    let validator = PathValidator::new(&root).unwrap();
    let access = Access::new(&validator, Some(&call));
    blocked(
        "worker",
        fs::write(access, "worker.yaml", b"sandbox: { mode: off }"),
    );
    fs::write(access, "notes.md", b"fine").unwrap();
    let empty = FileGuards::new(&root, &[], &[], &PathGate::new(&root, &[], "x").unwrap()).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn what_a_blocked_symlink_leads_to_is_blocked_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // dotenv-vault and direnv layouts: the blocked names are symlinks into the work directory.
    put(&root, "env/production", &format!("TOKEN={SECRET}\n"));
    put(&root, "store/key", &format!("KEY={SECRET}\n"));
    put(&root, "store/deep/more", &format!("MORE={SECRET}\n"));
    put(&root, "src/app.ts", "needle\n");
    std::os::unix::fs::symlink("env/production", root.join(".env")).unwrap();
    std::os::unix::fs::symlink("store", root.join("vault")).unwrap();
    let validator = PathValidator::new(&root).unwrap();
    let rules = vec![
        PathRule {
            pattern: ".env*".into(),
            approval: Blocked,
        },
        PathRule {
            pattern: "/vault/".into(),
            approval: Blocked,
        },
    ];
    let gate = PathGate::new(&root, &rules, "code_agent approval.paths").unwrap();
    let guards = FileGuards::new(&root, &[], &[], &gate).unwrap();
    let gate = Arc::new(gate.with_guards(guards));
    let call = preapproved(gate);
    let access = Access::new(&validator, Some(&call));
    let message = blocked(
        "target",
        fs::read(access, &ReadRequest::new("env/production")),
    );
    assert!(message.contains("same file as '.env'"), "{message}");
    let message = blocked(
        "in folder",
        fs::read(access, &ReadRequest::new("store/key")),
    );
    assert!(message.contains("same file as 'vault/key'"), "{message}");
    blocked(
        "deeper",
        fs::read(access, &ReadRequest::new("store/deep/more")),
    );
    blocked("write", fs::write(access, "env/production", b"x"));
    let grep = secret_search();
    let found = fs::grep(access, &grep, &Cancel::default()).unwrap();
    assert_eq!(found.files_with_matches, 0, "{}", found.text);
    assert!(fs::read(access, &ReadRequest::new("src/app.ts")).is_ok());
}

#[test]
fn a_callers_hidden_file_outside_the_root_is_refused_under_a_name_inside() {
    // The caller's work directory holds `.env` and `vault/` (blocked by its rules); the called
    // worker's file tools are confined to `sub/`, where hard links to them were made.
    let dir = tempfile::tempdir().unwrap();
    let caller = std::fs::canonicalize(dir.path()).unwrap();
    put(&caller, ".env", &format!("TOKEN={SECRET}\n"));
    put(&caller, "vault/deep/key", &format!("KEY={SECRET}\n"));
    put(&caller, "sub/readme.md", "hello\n");
    std::fs::hard_link(caller.join(".env"), caller.join("sub/notes.txt")).unwrap();
    std::fs::hard_link(caller.join("vault/deep/key"), caller.join("sub/key.txt")).unwrap();
    let root = caller.join("sub");
    let gate = PathGate::new(&root, &[], "approval.paths").unwrap();
    let hidden = [
        (
            caller.join(".env"),
            "the path rule '.env*' (blocked)".to_string(),
        ),
        (
            caller.join("vault"),
            "the path rule '/vault/' (blocked)".to_string(),
        ),
        (
            caller.join("missing"),
            "a path that does not exist".to_string(),
        ),
        // The caller's walk finds the link too (another name of a blocked file), inside the
        // called worker's root: hidden under that name as well, whatever its own rules say.
        (
            caller.join("sub/notes.txt"),
            "a blocked path rule of the caller".to_string(),
        ),
    ];
    let guards = FileGuards::new(&root, &[], &hidden, &gate).unwrap();
    for name in ["notes.txt", "key.txt"] {
        let err = guards
            .check_path(name, &root.join(name), false)
            .unwrap_err();
        assert_eq!(err.code(), "PATH_BLOCKED", "{name}");
        assert!(err.to_string().contains("same file as"), "{err}");
    }
    guards
        .check_path("readme.md", &root.join("readme.md"), false)
        .unwrap();
}
