//! Path rules against every file tool, with the ways around them a model could try: other
//! spellings (`./.env`, `a/../.env`, absolute), symlinks to a blocked file or into a blocked or
//! asking directory, symlinks named like a blocked file, case variants, searches and listings
//! that would show a blocked file, and patches that touch one among others.

use std::os::unix::fs::symlink;

use serde_json::json;

use super::*;
use crate::approval::Decision::{Ask, Blocked, PreApproved};
use crate::fs::{
    self, Cancel, EditRequest, GlobRequest, GrepRequest, PatchAction, PatchOperation, ReadRequest,
    TreeRequest,
};

const SECRET: &str = "hunter2-secret";

struct Fixture {
    _dir: tempfile::TempDir,
    validator: PathValidator,
    gate: Arc<PathGate>,
}

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The rules, plus a blocked pattern that is not hidden (`*.key`) and an asking
/// directory that searches enter (`notes/`).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".env", &format!("TOKEN={SECRET}\n"));
    write(root, ".env.local", &format!("LOCAL={SECRET}\n"));
    write(root, "config/.env", &format!("NESTED={SECRET}\n"));
    write(root, "keys/server.key", &format!("{SECRET}\n"));
    write(root, ".git/config", "[core]\n\tneedle = git\n");
    write(root, "src/a.ts", "export const needle = 1;\n");
    write(root, "notes/n.txt", "needle in notes\n");
    write(root, "docs/readme.md", "needle in docs\n");
    write(root, ".ENV", "a different file, not the secret\n");
    symlink(".env", root.join("x")).unwrap();
    symlink("keys/server.key", root.join("src/k.ts")).unwrap();
    symlink(".git", root.join("gitlink")).unwrap();
    symlink("docs/readme.md", root.join(".envlink")).unwrap();
    let validator = PathValidator::new(root).unwrap();
    let rules = [
        (".env*", Blocked),
        (".git/**", Ask),
        ("src/**", PreApproved),
        ("*.key", Blocked),
        ("notes/", Ask),
    ]
    .map(|(pattern, approval)| PathRule {
        pattern: pattern.into(),
        approval,
    });
    let gate = PathGate::new(validator.root(), &rules, "code_agent approval.paths").unwrap();
    Fixture {
        _dir: dir,
        validator,
        gate: Arc::new(gate),
    }
}

const READS: ToolApproval = ToolApproval {
    decision: PreApproved,
    path_floor: None,
};
const WRITES: ToolApproval = ToolApproval {
    decision: Ask,
    path_floor: None,
};

impl Fixture {
    fn call(&self, tool: ToolApproval, approved: Option<Decision>) -> CallGate {
        CallGate {
            gate: Arc::clone(&self.gate),
            tool,
            approved,
        }
    }

    fn decide(&self, tool: &str, input: Value) -> CallDecision {
        let approval = if tool.contains("write")
            || tool.contains("edit")
            || tool.contains("patch")
            || tool.contains("delete")
        {
            WRITES
        } else {
            READS
        };
        decide_call(&self.gate, &self.validator, approval, tool, &input).unwrap()
    }

    fn root(&self) -> &Path {
        self.validator.root()
    }
}

/// Every spelling of the blocked `.env` a model could try.
fn env_spellings(root: &Path) -> Vec<String> {
    vec![
        ".env".into(),
        "./.env".into(),
        "a/../.env".into(),
        "src/../.env".into(),
        "src/./../.env".into(),
        ".//.env".into(),
        root.join(".env").display().to_string(),
        "x".into(),
        "config/.env".into(),
        ".env.local".into(),
        ".env.missing".into(),
        ".envlink".into(),
        "keys/server.key".into(),
        "src/k.ts".into(),
        ".env/".into(),
        ".env/.".into(),
        "x/.".into(),
        "src/../.env/".into(),
        "keys//server.key".into(),
    ]
}

fn assert_blocked<T: std::fmt::Debug>(what: &str, result: crate::Result<T>) -> String {
    let err = result.expect_err(what);
    assert_eq!(err.code(), "PATH_BLOCKED", "{what}: {err}");
    let message = err.to_string();
    assert!(!message.contains(SECRET), "{what}: {message}");
    message
}

#[test]
fn every_tool_decides_blocked_for_every_spelling_of_a_blocked_file() {
    let f = fixture();
    let path_tools = [
        "read_file",
        "file_read",
        "write_file",
        "file_write",
        "file_edit",
        "delete_file",
        "file_exists",
        "file_info",
        "grep_search",
        "directory_tree",
        "glob_search",
        "list_files",
    ];
    for spelled in env_spellings(f.root()) {
        for tool in path_tools {
            let decided = f.decide(tool, json!({ "path": spelled }));
            assert_eq!(decided.decision, Blocked, "{tool} {spelled}: {decided:?}");
            assert!(decided.rule.is_some(), "{tool} {spelled}");
        }
        let patch = f.decide(
            "file_patch",
            json!({ "operations": [
                { "action": "add", "path": "ok.txt", "content": "x" },
                { "action": "update", "path": spelled, "content": "x" },
            ]}),
        );
        assert_eq!(patch.decision, Blocked, "patch {spelled}");
    }
    // A move whose destination is blocked, and a glob whose literal prefix is.
    let moved = f.decide(
        "file_patch",
        json!({ "operations": [{ "action": "move", "path": "src/a.ts", "new_path": "keys/b.key" }]}),
    );
    assert_eq!(moved.decision, Blocked);
    let glob = f.decide("glob_search", json!({ "pattern": "keys/x.key/**" }));
    assert_eq!(glob.decision, Blocked);
}

#[test]
fn ask_and_pre_approved_paths_decide_the_call_and_unmatched_paths_keep_the_tool_decision() {
    let f = fixture();
    for (tool, input, expected, by) in [
        (
            "file_read",
            json!({"path": ".git/config"}),
            Ask,
            DecidedBy::Rule,
        ),
        (
            "file_read",
            json!({"path": "gitlink/config"}),
            Ask,
            DecidedBy::Rule,
        ),
        (
            "grep_search",
            json!({"path": "gitlink"}),
            Ask,
            DecidedBy::Rule,
        ),
        (
            "glob_search",
            json!({"pattern": ".git/**"}),
            Ask,
            DecidedBy::Rule,
        ),
        (
            "directory_tree",
            json!({"path": "notes"}),
            Ask,
            DecidedBy::Rule,
        ),
        (
            "grep_search",
            json!({"pattern": "x"}),
            PreApproved,
            DecidedBy::Tool,
        ),
        (
            "file_read",
            json!({"path": "docs/readme.md"}),
            PreApproved,
            DecidedBy::Tool,
        ),
        // A case variant is another file on this file system, and no rule names it.
        (
            "file_read",
            json!({"path": ".ENV"}),
            PreApproved,
            DecidedBy::Tool,
        ),
        // The rule pre-approves writes in src/ (the write tools ask by default) ...
        (
            "file_write",
            json!({"path": "src/new.ts"}),
            PreApproved,
            DecidedBy::Rule,
        ),
        (
            "file_write",
            json!({"path": "README.md"}),
            Ask,
            DecidedBy::Tool,
        ),
        // ... and a patch takes its strictest path.
        (
            "file_patch",
            json!({"operations": [
                {"action": "update", "path": "src/a.ts", "content": "x"},
                {"action": "move", "path": "docs/readme.md", "new_path": "src/readme.md"},
            ]}),
            Ask,
            DecidedBy::Tool,
        ),
    ] {
        let decided = f.decide(tool, input.clone());
        assert_eq!(
            (decided.decision, decided.by),
            (expected, by),
            "{tool} {input}"
        );
    }
    // A floor (an explicit `approval.tools` entry, the worker level, the callers) is never
    // undercut by a rule.
    let floored = ToolApproval {
        decision: Ask,
        path_floor: Some(Ask),
    };
    let decided = decide_call(
        &f.gate,
        &f.validator,
        floored,
        "file_write",
        &json!({"path": "src/a.ts"}),
    )
    .unwrap();
    assert_eq!((decided.decision, decided.by), (Ask, DecidedBy::Floor));
    // Paths outside the root and broken input leave the decision to the tool (the call fails).
    let outside = f.decide("file_read", json!({"path": "../../etc/passwd"}));
    assert_eq!((outside.decision, outside.path), (PreApproved, None));
    assert_eq!(f.decide("file_read", json!({})).decision, PreApproved);
    assert_eq!(
        f.decide("file_patch", json!({"operations": 3})).decision,
        Ask
    );
    let err = decide_call(&f.gate, &f.validator, READS, "shell", &json!({})).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn single_path_tools_refuse_blocked_paths_the_same_way_whether_they_exist_or_not() {
    let f = fixture();
    let reads = f.call(READS, None);
    let writes = f.call(WRITES, Some(Ask));
    let read = Access::new(&f.validator, Some(&reads));
    let write = Access::new(&f.validator, Some(&writes));
    for spelled in env_spellings(f.root()) {
        assert_blocked(
            &spelled,
            fs::read(read, &ReadRequest::new(spelled.as_str())),
        );
        assert_blocked(&spelled, fs::exists(read, &spelled));
        assert_blocked(&spelled, fs::info(read, &spelled));
        assert_blocked(&spelled, fs::write(write, &spelled, b"overwritten"));
        assert_blocked(&spelled, fs::delete(write, &spelled));
        let edit = EditRequest {
            path: spelled.clone(),
            old_text: SECRET.into(),
            new_text: "x".into(),
            replace_all: true,
        };
        assert_blocked(&spelled, fs::edit(write, &edit));
    }
    // Nothing was changed, created or removed.
    let root = f.root();
    assert!(std::fs::read_to_string(root.join(".env"))
        .unwrap()
        .contains(SECRET));
    assert!(std::fs::read_to_string(root.join("keys/server.key"))
        .unwrap()
        .contains(SECRET));
    assert!(!root.join(".env.missing").exists());
    assert!(std::fs::symlink_metadata(root.join("x")).is_ok());
    // The refusal names the rule, and an existing and a missing file read alike.
    let existing = assert_blocked("exists", fs::read(read, &ReadRequest::new(".env.local")));
    let missing = assert_blocked("missing", fs::read(read, &ReadRequest::new(".env.gone")));
    assert_eq!(
        existing.replace(".env.local", "P"),
        missing.replace(".env.gone", "P")
    );
    assert!(
        existing.contains("code_agent approval.paths[0] '.env*' (blocked)"),
        "{existing}"
    );
    // A case variant is a different file here, and reading it shows only that file.
    let other = fs::read(read, &ReadRequest::new(".ENV")).unwrap();
    assert!(other.text.contains("different file") && !other.text.contains(SECRET));
    let err = fs::read(read, &ReadRequest::new(".Env")).unwrap_err();
    assert_eq!(err.code(), "FILE_NOT_FOUND");
}

#[test]
fn a_patch_touching_a_blocked_path_among_others_changes_nothing() {
    let f = fixture();
    let writes = f.call(WRITES, Some(Ask));
    let access = Access::new(&f.validator, Some(&writes));
    let op = |action, path: &str, content: Option<&str>, new_path: Option<&str>| PatchOperation {
        action,
        path: path.into(),
        content: content.map(Into::into),
        new_path: new_path.map(Into::into),
    };
    for blocked in [
        vec![
            op(PatchAction::Add, "ok.txt", Some("x"), None),
            op(PatchAction::Update, ".env", Some("x"), None),
        ],
        vec![
            op(PatchAction::Add, "ok.txt", Some("x"), None),
            op(PatchAction::Delete, "a/../.env.local", None, None),
        ],
        vec![op(PatchAction::Move, "src/a.ts", None, Some("x"))],
        vec![op(
            PatchAction::Move,
            "docs/readme.md",
            None,
            Some("keys/new.key"),
        )],
        vec![
            op(PatchAction::Add, "ok.txt", Some("x"), None),
            op(PatchAction::Add, ".env.new", Some("x"), None),
        ],
    ] {
        let message = assert_blocked("patch", fs::patch(access, &blocked));
        assert!(message.contains("nothing was changed"), "{message}");
    }
    assert!(!f.root().join("ok.txt").exists());
    assert!(!f.root().join(".env.new").exists());
    assert!(f.root().join("src/a.ts").exists());
}

#[test]
fn searches_and_listings_never_show_a_blocked_file() {
    let f = fixture();
    let reads = f.call(READS, None);
    let access = Access::new(&f.validator, Some(&reads));
    let cancel = Cancel::default();
    let grep = |pattern: &str, path: Option<&str>, include: &[&str]| {
        fs::grep(
            access,
            &GrepRequest {
                pattern: pattern.into(),
                path: path.map(Into::into),
                include: include.iter().map(|s| s.to_string()).collect(),
                exclude: Vec::new(),
                context: 2,
                max_results: 100,
                ignore_case: true,
            },
            &cancel,
        )
    };
    // A string that is only in blocked files.
    for (path, include) in [
        (None, &[][..]),
        (None, &["*.key"][..]),
        (None, &[".env*", "**/.env"][..]),
        (Some("keys"), &[][..]),
        (Some("config"), &[][..]),
        (Some("src"), &[][..]),
    ] {
        let out = grep(SECRET, path, include).unwrap();
        // The pattern is echoed in "No matches for ..."; no file content may be.
        let shown = out.text.replace(&format!("/{SECRET}/"), "/pattern/");
        assert!(
            !shown.contains(SECRET) && out.total_matches == 0,
            "{path:?} {include:?}: {}",
            out.text
        );
    }
    assert_blocked("grep x", grep(SECRET, Some("x"), &[]));
    assert_blocked("grep .env", grep(SECRET, Some("./.env"), &[]));
    let glob = |pattern: &str, path: Option<&str>| {
        fs::glob(
            access,
            &GlobRequest {
                pattern: pattern.into(),
                path: path.map(Into::into),
                max_results: 2000,
            },
            &cancel,
        )
    };
    for pattern in [
        "**/*", "**/.env*", "**/*.key", "*", "**/x", "src/*", "**/.*",
    ] {
        let out = glob(pattern, None).unwrap();
        // The header line echoes the pattern; the listed paths follow it.
        let listed: String = out
            .text
            .lines()
            .skip(1)
            .map(|line| format!("\n{line}\n"))
            .collect();
        for hidden in [".env", "server.key", "src/k.ts", "\nx\n", ".envlink"] {
            assert!(
                !listed.contains(hidden),
                "{pattern}: {hidden} in {}",
                out.text
            );
        }
    }
    assert!(glob("**/*", None).unwrap().text.contains("src/a.ts"));
    assert_blocked("glob keys", glob("**/*", Some("keys/server.key")));
    assert_blocked("glob x", glob("*", Some("x")));
    assert_blocked("glob prefix", glob(".env/**", None));
    let tree = fs::tree(
        access,
        &TreeRequest {
            path: None,
            max_depth: 5,
        },
        &cancel,
    )
    .unwrap();
    for hidden in ["server.key", "k.ts", "x ->", ".env"] {
        assert!(!tree.text.contains(hidden), "{hidden} in {}", tree.text);
    }
    assert!(
        tree.text.contains("keys/\n") || tree.text.contains("keys/"),
        "{}",
        tree.text
    );
    for listed in [".", "./", "keys", "src", "config"] {
        let out = fs::read(access, &ReadRequest::new(listed)).unwrap();
        for hidden in [".env", "server.key", "k.ts", "  x ->", ".envlink"] {
            assert!(
                !out.text.contains(hidden),
                "{listed}: {hidden} in {}",
                out.text
            );
        }
    }
    let root = fs::read(access, &ReadRequest::new(".")).unwrap().text;
    assert!(root.contains(".git/") && root.contains(".ENV"), "{root}");
    // The header counts only what is shown.
    let keys = fs::read(access, &ReadRequest::new("keys")).unwrap().text;
    assert!(keys.contains("0 entries"), "{keys}");
}

#[test]
fn a_search_leaves_out_files_that_need_more_approval_than_the_call_had() {
    let f = fixture();
    let reads = f.call(READS, None);
    let access = Access::new(&f.validator, Some(&reads));
    let grep = |path: Option<&str>| {
        fs::grep(
            access,
            &GrepRequest {
                pattern: "needle".into(),
                path: path.map(Into::into),
                include: Vec::new(),
                exclude: Vec::new(),
                context: 0,
                max_results: 50,
                ignore_case: false,
            },
            &Cancel::default(),
        )
        .unwrap()
        .text
    };
    let root = grep(None);
    assert!(
        root.contains("src/a.ts:1:") && root.contains("docs/readme.md:1:"),
        "{root}"
    );
    assert!(!root.contains("notes/n.txt:"), "{root}");
    assert!(
        root.contains("[1 file was not searched: it needs approval (path rules 'notes/')"),
        "{root}"
    );
    // Naming the directory makes the call ask; approved, it searches there.
    assert_eq!(
        f.decide("grep_search", json!({"path": "notes"})).decision,
        Ask
    );
    let notes = grep(Some("notes"));
    assert!(notes.contains("notes/n.txt:1:needle in notes"), "{notes}");
    // A directory symlink into an asking directory is judged where it lands.
    let read = fs::read(access, &ReadRequest::new("gitlink/config")).unwrap();
    assert!(read.text.contains("needle = git"));
}

#[test]
fn a_path_whose_decision_rose_after_approval_is_refused() {
    let f = fixture();
    let approved = f.call(READS, Some(PreApproved));
    let access = Access::new(&f.validator, Some(&approved));
    let err = fs::read(access, &ReadRequest::new("gitlink/config")).unwrap_err();
    assert_eq!(err.code(), "APPROVAL_DENIED", "{err}");
    assert!(err.to_string().contains("'.git/**'"), "{err}");
    let asked = f.call(READS, Some(Ask));
    assert!(fs::read(
        Access::new(&f.validator, Some(&asked)),
        &ReadRequest::new("gitlink/config")
    )
    .is_ok());
}

#[test]
fn rules_handed_down_by_a_caller_only_make_calls_stricter() {
    let f = fixture();
    let caller_rules = [
        ("docs/**", Blocked),
        ("src/**", Ask),
        ("notes/**", PreApproved),
    ]
    .map(|(pattern, approval)| PathRule {
        pattern: pattern.into(),
        approval,
    });
    let inherited = InheritedRules::new(f.root(), &caller_rules, "caller approval.paths").unwrap();
    let gate = PathGate::new(f.root(), &[], "approval.paths")
        .unwrap()
        .with_inherited(vec![inherited]);
    assert!(!gate.is_empty());
    let decide = |tool: ToolApproval, path: &str| {
        decide_call(
            &gate,
            &f.validator,
            tool,
            "file_write",
            &json!({ "path": path }),
        )
        .unwrap()
    };
    assert_eq!(decide(WRITES, "docs/readme.md").by, DecidedBy::CallerRule);
    assert_eq!(decide(WRITES, "docs/readme.md").decision, Blocked);
    assert_eq!(decide(READS, "src/a.ts").decision, Ask);
    // The caller's preApproved does not loosen the called worker's own decision.
    assert_eq!(decide(WRITES, "notes/n.txt").decision, Ask);
    let call = CallGate {
        gate: Arc::new(gate),
        tool: READS,
        approved: None,
    };
    let access = Access::new(&f.validator, Some(&call));
    assert_blocked(
        "inherited",
        fs::read(access, &ReadRequest::new("docs/readme.md")),
    );
    let listing = fs::read(access, &ReadRequest::new(".")).unwrap().text;
    assert!(!listing.contains("docs/"), "{listing}");
}

#[test]
fn lexical_normalisation_stays_inside_the_root() {
    let root = Path::new("/w/root");
    assert_eq!(
        lexical(root, "./a/../.env"),
        Some(PathBuf::from("/w/root/.env"))
    );
    assert_eq!(
        lexical(root, "/w/root/b/./c"),
        Some(PathBuf::from("/w/root/b/c"))
    );
    assert_eq!(lexical(root, "../root/.env"), None);
    assert_eq!(lexical(root, "/etc/passwd"), None);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Name"), "x").unwrap();
    assert!(
        !ignores_case(dir.path()),
        "this file system is case-sensitive"
    );
}
