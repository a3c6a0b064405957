use super::*;
use serde_json::json;

fn folder() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn words(text: &str) -> Vec<String> {
    split_command(text).unwrap()
}

const WORK: &str = "/srv/project";

fn write(dir: &Path, text: &str) {
    std::fs::write(dir.join(PERMISSIONS_FILE_NAME), text).unwrap();
}

fn load_error(text: &str) -> String {
    let dir = folder();
    write(dir.path(), text);
    let err = Permissions::load(dir.path()).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
    err.to_string()
}

#[test]
fn a_folder_without_a_file_has_no_rules() {
    let dir = folder();
    let permissions = Permissions::load(dir.path()).unwrap();
    assert!(permissions.rules().is_empty());
    assert_eq!(permissions.path(), dir.path().join(PERMISSIONS_FILE_NAME));
}

#[test]
fn rules_are_read_with_their_lines_and_cover_exactly_their_scope() {
    let dir = folder();
    write(
        dir.path(),
        "# mine\nversion: 1\nrules:\n  - worker: w\n    tool: shell\n    command: git status\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n  - worker: w\n    tool: shell\n    prefix: npm run\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n  - worker: w\n    tool: file_write\n    path: ./notes/a.txt\n    saved: 2026-01-31T09:30:00+01:00\n    by: mcp-elicitation\n  - worker: w\n    tool: lookup\n    input: { b: [1, 2], a: x }\n    saved: 2026-01-31T09:30:00Z\n    by: deferred-answer\n  - worker: w\n    tool: network\n    host: API.example.com:443\n    saved: 2026-01-31T09:30:00Z\n    by: approval-handler\n",
    );
    let permissions = Permissions::load(dir.path()).unwrap();
    let rules = permissions.rules();
    assert_eq!(
        rules.iter().map(|rule| rule.line).collect::<Vec<_>>(),
        [4, 9, 14, 19, 24]
    );
    assert_eq!(
        rules[2].saved, "2026-01-31T08:30:00Z",
        "dates are kept in UTC"
    );
    assert_eq!(rules[2].by, SavedBy::McpElicitation);
    let work = Path::new(WORK);
    let shell = |command: &str| {
        permissions
            .covering(
                "w",
                "shell",
                &json!({ "command": command }),
                Some(&words(command)),
                work,
            )
            .map(|rule| rule.line)
    };
    assert_eq!(shell("git status"), Some(4));
    for other in [
        "git status -s",
        "git  statu",
        "git",
        "git push",
        "gitstatus",
    ] {
        assert_eq!(shell(other), None, "{other}");
    }
    assert_eq!(shell("npm run test"), Some(9));
    assert_eq!(shell("npm runx"), None);
    // another worker or tool is not covered
    assert!(permissions
        .covering("v", "shell", &json!({}), Some(&words("git status")), work)
        .is_none());
    assert!(permissions
        .covering(
            "w",
            "cli_execute",
            &json!({}),
            Some(&words("git status")),
            work
        )
        .is_none());
    // paths: normalised, as written, never through `..`
    let file = |path: &str| {
        permissions
            .covering(
                "w",
                "file_write",
                &json!({ "path": path, "content": "anything" }),
                None,
                work,
            )
            .is_some()
    };
    for same in [
        "notes/a.txt",
        "./notes/a.txt",
        "notes//a.txt",
        "/srv/project/notes/a.txt",
        "notes/./a.txt",
    ] {
        assert!(file(same), "{same}");
    }
    for other in [
        "notes/a.txt/..",
        "notes/../notes/a.txt",
        "notes/b.txt",
        "/elsewhere/notes/a.txt",
        "notes",
        "a.txt",
    ] {
        assert!(!file(other), "{other}");
    }
    assert!(permissions
        .covering(
            "w",
            "file_edit",
            &json!({ "path": "notes/a.txt" }),
            None,
            work
        )
        .is_none());
    // exact input, in any key order
    let lookup = |input: Value| {
        permissions
            .covering("w", "lookup", &input, None, work)
            .is_some()
    };
    assert!(lookup(json!({ "a": "x", "b": [1, 2] })));
    assert!(!lookup(json!({ "a": "x", "b": [2, 1] })));
    assert!(!lookup(json!({ "a": "x", "b": [1, 2], "c": 1 })));
    // hosts: normalised, on the port saved
    let net = |host: &str, port: u64| {
        permissions
            .covering(
                "w",
                "network",
                &json!({ "host": host, "port": port, "tool": "shell" }),
                None,
                work,
            )
            .is_some()
    };
    assert!(net("api.example.com", 443));
    assert!(net("API.Example.COM.", 443));
    assert!(!net("api.example.com", 80));
    assert!(!net("evil.api.example.com", 443));
    assert!(!net("example.com", 443));
}

#[test]
fn a_malformed_file_is_refused_with_file_line_and_column() {
    let entry = "  - worker: w\n    tool: shell\n    command: ls\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n";
    for (text, place, says) in [
        ("version: 1\nrules:\n  - worker: w\n    tool: shell\n    command: ls\n    sved: x\n", ":6:5:", "unknown field `sved`"),
        ("version: 1\nrules: [\n", ":3:1:", ""),
        ("version: 2\nrules: []\n", ":1:1:", "version 2"),
        ("versoin: 1\n", ":1:1:", "unknown field `versoin`"),
        (&format!("version: 1\nrules:\n{entry}  - worker: w\n    tool: shell\n    command: ls\n    path: a\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n"), ":8:5:", "exactly one of command, prefix, path, input, host; this one gives command and path"),
        (&format!("version: 1\nrules:\n{entry}  - worker: w\n    tool: shell\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n"), ":8:5:", "gives none"),
        (&format!("version: 1\nrules:\n{entry}{}", entry.replace("2026-01-31T09:30:00Z", "yesterday")), ":8:5:", "'saved' yesterday is not a date"),
        (&format!("version: 1\nrules:\n{}", entry.replace("command: ls", "path: ../x")), ":3:5:", "without '..'"),
        (&format!("version: 1\nrules:\n{}", entry.replace("command: ls", "path: /etc/passwd")), ":3:5:", "relative to the work directory"),
        (&format!("version: 1\nrules:\n{}", entry.replace("command: ls", "host: http://x.com/")), ":3:5:", "it is a URL"),
        (&format!("version: 1\nrules:\n{}", entry.replace("command: ls", "command: \"ls $(x\"")), ":3:5:", "does not split"),
        (&format!("version: 1\nrules:\n{}", entry.replace("by: terminal", "by: someone")), ":7:9:", "unknown variant `someone`"),
        (&format!("version: 1\nrules:\n{}", entry.replace("worker: w", "worker: \"\"")), ":3:5:", "'worker' is empty"),
    ] {
        let message = load_error(text);
        assert!(message.contains(&format!("{PERMISSIONS_FILE_NAME}{place}")), "{place} in {message}");
        assert!(message.contains(says), "{says} in {message}");
    }
    // too large
    let dir = folder();
    write(
        dir.path(),
        &format!("version: 1\n#{}\n", "x".repeat(MAX_PERMISSIONS_FILE_BYTES)),
    );
    assert!(Permissions::load(dir.path())
        .unwrap_err()
        .to_string()
        .contains("larger than"));
}

#[test]
fn saving_writes_the_rule_with_its_date_and_line_and_keeps_comments() {
    let dir = folder();
    let permissions = Permissions::load(dir.path()).unwrap();
    let saved = permissions
        .save(
            "w",
            "shell",
            SavedScope::Command(words("git commit -m 'a b'")),
            SavedBy::Terminal,
        )
        .unwrap();
    assert_eq!(saved.line, 6, "after the header comment");
    assert!(
        saved.saved.ends_with('Z') && saved.saved.len() == 20,
        "{}",
        saved.saved
    );
    assert_eq!(
        saved.describe(),
        "worker w: shell command exactly: git commit -m 'a b'"
    );
    let text = std::fs::read_to_string(permissions.path()).unwrap();
    assert!(text.starts_with("# Approvals saved"), "{text}");
    // a comment the person added is kept by the next run's save
    std::fs::write(permissions.path(), format!("{text}# mine\n")).unwrap();
    let permissions = Permissions::load(dir.path()).unwrap();
    let second = permissions
        .save(
            "w",
            "file_write",
            SavedScope::Path("notes/a.txt".into()),
            SavedBy::McpElicitation,
        )
        .unwrap();
    let text = std::fs::read_to_string(permissions.path()).unwrap();
    assert!(
        text.contains("# mine\n  - worker: w\n    tool: file_write\n    path: notes/a.txt\n"),
        "{text}"
    );
    assert_eq!(second.line, 12);
    // the same rule is not written twice
    let again = permissions
        .save(
            "w",
            "file_write",
            SavedScope::Path("notes/a.txt".into()),
            SavedBy::Terminal,
        )
        .unwrap();
    assert_eq!(again.line, 12);
    // a new process reads them
    let fresh = Permissions::load(dir.path()).unwrap();
    assert_eq!(fresh.rules().len(), 2);
    assert!(fresh
        .covering(
            "w",
            "shell",
            &json!({}),
            Some(&words("git commit -m 'a b'")),
            Path::new(WORK)
        )
        .is_some());
}

#[test]
fn any_value_saved_reads_back_as_the_same_rule() {
    let dir = folder();
    let permissions = Permissions::load(dir.path()).unwrap();
    let nasty = [
        "echo '\u{1b}]52;c;aGk=\u{7}'",
        "printf 'a\\tb'",
        "python3 -c \"print('x')    ;import os\"",
        "echo \u{202e}txt \u{200b} '#not a comment' ': colon'",
        "echo 'it'\\''s' \"--\" - ---",
    ];
    for command in nasty {
        let scope = SavedScope::Command(words(command));
        permissions
            .save("w", "shell", scope, SavedBy::Terminal)
            .unwrap();
    }
    let input = json!({ "key: with colon": "- dash", "n": [null, true, 1.5, "\u{0}\u{85}"], "e": {}, "#": "'\"" });
    permissions
        .save(
            "w",
            "lookup",
            SavedScope::Input(input.clone()),
            SavedBy::ApprovalHandler,
        )
        .unwrap();
    let host = SavedScope::for_call(
        ToolKind::Network,
        &json!({ "host": "Example.COM", "port": 8443 }),
        None,
        Path::new(WORK),
    )
    .unwrap();
    permissions
        .save("w", "network", host, SavedBy::Terminal)
        .unwrap();
    let fresh = Permissions::load(dir.path()).unwrap();
    assert_eq!(fresh.rules().len(), nasty.len() + 2);
    for command in nasty {
        assert!(
            fresh
                .covering(
                    "w",
                    "shell",
                    &json!({}),
                    Some(&words(command)),
                    Path::new(WORK)
                )
                .is_some(),
            "{command:?}"
        );
    }
    assert!(fresh
        .covering("w", "lookup", &input, None, Path::new(WORK))
        .is_some());
    assert!(fresh
        .covering(
            "w",
            "network",
            &json!({ "host": "example.com", "port": 8443 }),
            None,
            Path::new(WORK)
        )
        .is_some());
    let text = std::fs::read_to_string(fresh.path()).unwrap();
    assert!(text.contains("host: example.com:8443"), "{text}");
}

#[test]
fn the_scope_saved_for_a_call_is_what_the_person_was_shown() {
    let work = Path::new(WORK);
    let argv = words("rm -rf build");
    assert_eq!(
        SavedScope::for_call(ToolKind::Command, &json!({}), Some(&argv), work),
        Some(SavedScope::Command(argv.clone()))
    );
    assert_eq!(
        SavedScope::for_call(ToolKind::Command, &json!({}), None, work),
        None
    );
    assert_eq!(
        SavedScope::for_call(
            ToolKind::File,
            &json!({ "path": "./a/b.txt", "content": "x" }),
            None,
            work
        ),
        Some(SavedScope::Path("a/b.txt".into()))
    );
    // a path through `..`, or outside the work directory, is saved as the exact call
    for path in ["a/../b.txt", "/etc/passwd"] {
        let input = json!({ "path": path, "content": "x" });
        assert_eq!(
            SavedScope::for_call(ToolKind::File, &input, None, work),
            Some(SavedScope::Input(input.clone())),
            "{path}"
        );
    }
    let patch = json!({ "operations": [{ "action": "add", "path": "a" }] });
    assert_eq!(
        SavedScope::for_call(ToolKind::File, &patch, None, work),
        Some(SavedScope::Input(patch.clone()))
    );
    for bad in [
        json!({ "host": "x.com" }),
        json!({ "host": "x.com", "port": 70000 }),
        json!({ "host": "http://x", "port": 1 }),
    ] {
        assert_eq!(
            SavedScope::for_call(ToolKind::Network, &bad, None, work),
            None,
            "{bad}"
        );
    }
    assert!(SavedScope::Path("a".into())
        .describe("file_edit")
        .contains("whatever else its input says"));
}

#[test]
fn concurrent_saves_all_land() {
    let dir = folder();
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let folder = dir.path().to_path_buf();
            std::thread::spawn(move || {
                // each thread is its own "process": its own Permissions over the same folder
                let permissions = Permissions::load(&folder).unwrap();
                for index in 0..10 {
                    let command = format!("echo {thread} {index}");
                    permissions
                        .save(
                            "w",
                            "shell",
                            SavedScope::Command(words(&command)),
                            SavedBy::Terminal,
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let rules = Permissions::load(dir.path()).unwrap().rules();
    assert_eq!(rules.len(), 80);
    // no temporary file is left behind
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from(PERMISSIONS_FILE_NAME)]);
}

#[test]
fn a_file_broken_since_it_was_read_is_left_as_it_is() {
    let dir = folder();
    let permissions = Permissions::load(dir.path()).unwrap();
    write(dir.path(), "version: 1\nrules: [\n");
    let err = permissions
        .save(
            "w",
            "shell",
            SavedScope::Command(words("ls")),
            SavedBy::Terminal,
        )
        .unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(PERMISSIONS_FILE_NAME)).unwrap(),
        "version: 1\nrules: [\n"
    );
    // a flow-style file takes the rule too (written anew)
    write(dir.path(), "version: 1\nrules: []\n");
    let permissions = Permissions::load(dir.path()).unwrap();
    permissions
        .save(
            "w",
            "shell",
            SavedScope::Command(words("ls")),
            SavedBy::Terminal,
        )
        .unwrap();
    assert_eq!(Permissions::load(dir.path()).unwrap().rules().len(), 1);
}

// A save never launders content toolgate did not write: a file planted (or changed) since the
// plan read it is not merged into toolgate's own write, which the check after a call would keep.

const PLANTED: &str = "version: 1\nrules:\n  - worker: w\n    tool: shell\n    prefix: python3\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n";

fn save_ls(permissions: &Permissions) -> Result<SavedRule> {
    permissions.save(
        "w",
        "shell",
        SavedScope::Command(words("ls")),
        SavedBy::Terminal,
    )
}

fn on_disk(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(PERMISSIONS_FILE_NAME)).unwrap()
}

/// The refusal: `CONFIG_INVALID`, naming the file and what to do.
fn assert_refused(result: Result<SavedRule>, dir: &Path, says: &str) {
    let err = result.unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID", "{err}");
    let message = err.to_string();
    for part in [
        dir.join(PERMISSIONS_FILE_NAME).display().to_string(),
        says.to_string(),
        "does not save a rule into it".into(),
        "if you did not write it, delete it".into(),
    ] {
        assert!(message.contains(&part), "{part:?} in {message}");
    }
}

#[test]
fn a_file_planted_after_the_plan_read_none_is_not_merged() {
    let dir = folder();
    let permissions = Permissions::load(dir.path()).unwrap();
    write(dir.path(), PLANTED);
    assert_refused(save_ls(&permissions), dir.path(), "did not exist");
    // left as it is (for the check after the call to remove), and nothing of it was taken in
    assert_eq!(on_disk(dir.path()), PLANTED);
    assert!(permissions.rules().is_empty());
    assert!(permissions
        .covering(
            "w",
            "shell",
            &json!({}),
            Some(&words("python3 -c 1")),
            Path::new(WORK)
        )
        .is_none());
    // a copy of what toolgate wrote elsewhere, planted here, is no better
    let other = folder();
    let elsewhere = Permissions::load(other.path()).unwrap();
    save_ls(&elsewhere).unwrap();
    let fresh = folder();
    let permissions = Permissions::load(fresh.path()).unwrap();
    std::fs::copy(
        other.path().join(PERMISSIONS_FILE_NAME),
        fresh.path().join(PERMISSIONS_FILE_NAME),
    )
    .unwrap();
    assert_refused(save_ls(&permissions), fresh.path(), "did not exist");
    // once the file is gone again, saving works (a new file with the rule alone)
    std::fs::remove_file(fresh.path().join(PERMISSIONS_FILE_NAME)).unwrap();
    save_ls(&permissions).unwrap();
    assert_eq!(Permissions::load(fresh.path()).unwrap().rules().len(), 1);
}

#[test]
fn a_file_whose_bytes_changed_since_it_was_read_is_not_merged() {
    let dir = folder();
    write(dir.path(), "# mine\nversion: 1\nrules:\n");
    let permissions = Permissions::load(dir.path()).unwrap();
    // changed in place (same inode), then saved into: refused
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join(PERMISSIONS_FILE_NAME))
        .unwrap();
    file.write_all(b"# planted\n").unwrap();
    drop(file);
    let changed = on_disk(dir.path());
    assert_refused(save_ls(&permissions), dir.path(), "now holds content");
    assert_eq!(on_disk(dir.path()), changed);
    // replaced by other content (as `cat > file` or an editor would): refused
    write(dir.path(), PLANTED);
    assert_refused(save_ls(&permissions), dir.path(), "now holds content");
    assert_eq!(on_disk(dir.path()), PLANTED);
    // the same bytes as read, even in another file, launder nothing: saved
    std::fs::remove_file(dir.path().join(PERMISSIONS_FILE_NAME)).unwrap();
    write(dir.path(), "# mine\nversion: 1\nrules:\n");
    save_ls(&permissions).unwrap();
    assert!(on_disk(dir.path()).starts_with("# mine\n"));
    // and toolgate's own write, changed afterwards, is refused too
    let text = on_disk(dir.path());
    write(
        dir.path(),
        &format!("{text}{}", &PLANTED[PLANTED.find("  -").unwrap()..]),
    );
    assert_refused(
        permissions.save(
            "w",
            "shell",
            SavedScope::Command(words("pwd")),
            SavedBy::Terminal,
        ),
        dir.path(),
        "now holds content",
    );
}

#[test]
fn a_file_replaced_by_a_symlink_or_a_hard_link_to_another_file_is_not_merged() {
    let dir = folder();
    let elsewhere = folder();
    let target = elsewhere.path().join("theirs.yaml");
    std::fs::write(&target, PLANTED).unwrap();
    let file = dir.path().join(PERMISSIONS_FILE_NAME);
    // missing when read, then a symlink
    let permissions = Permissions::load(dir.path()).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    assert_refused(save_ls(&permissions), dir.path(), "a symlink");
    assert!(std::fs::symlink_metadata(&file).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PLANTED);
    // present when read, then replaced by a symlink
    std::fs::remove_file(&file).unwrap();
    write(dir.path(), "version: 1\nrules: []\n");
    let permissions = Permissions::load(dir.path()).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    assert_refused(save_ls(&permissions), dir.path(), "a symlink");
    // a hard link to another file (toolgate's own write in another folder, even)
    std::fs::remove_file(&file).unwrap();
    let permissions = Permissions::load(dir.path()).unwrap();
    std::fs::hard_link(&target, &file).unwrap();
    assert_refused(save_ls(&permissions), dir.path(), "hard link");
    std::fs::remove_file(&file).unwrap();
    let own = Permissions::load(elsewhere.path()).unwrap();
    save_ls(&own).unwrap();
    std::fs::hard_link(elsewhere.path().join(PERMISSIONS_FILE_NAME), &file).unwrap();
    assert_refused(save_ls(&permissions), dir.path(), "hard link");
    assert_eq!(
        std::fs::metadata(&file).unwrap().nlink(),
        2,
        "left as it is"
    );
}

#[test]
fn toolgate_s_own_saves_are_merged_by_every_plan_and_process() {
    let dir = folder();
    let first = Permissions::load(dir.path()).unwrap();
    let second = Permissions::load(dir.path()).unwrap(); // read the file missing too
    save_ls(&first).unwrap();
    first
        .save(
            "w",
            "shell",
            SavedScope::Command(words("pwd")),
            SavedBy::Terminal,
        )
        .unwrap();
    // the other plan merges what toolgate wrote (in this process)
    second
        .save(
            "w",
            "shell",
            SavedScope::Command(words("id")),
            SavedBy::Terminal,
        )
        .unwrap();
    // another process: only the record in the private directory vouches for the file
    let other = Permissions {
        path: dir.path().join(PERMISSIONS_FILE_NAME),
        key: first.key.clone(),
        rules: Mutex::new(Vec::new()),
        known: Mutex::new(None),
    };
    written_here()
        .lock()
        .unwrap()
        .remove(&first.key)
        .expect("toolgate's write is noted");
    other
        .save(
            "w",
            "shell",
            SavedScope::Command(words("whoami")),
            SavedBy::Terminal,
        )
        .unwrap();
    let rules = Permissions::load(dir.path()).unwrap().rules();
    assert_eq!(rules.len(), 4);
    // a copy of toolgate's last write put in its place after it was removed is not vouched for
    let text = on_disk(dir.path());
    std::fs::remove_file(dir.path().join(PERMISSIONS_FILE_NAME)).unwrap();
    write(dir.path(), &text);
    let stale = Permissions {
        path: dir.path().join(PERMISSIONS_FILE_NAME),
        key: first.key.clone(),
        rules: Mutex::new(Vec::new()),
        known: Mutex::new(None),
    };
    assert_refused(save_ls(&stale), dir.path(), "did not exist");
    // a record that is not toolgate's (the directory is private, but say it were garbled)
    if let Some(records) = WriteRecords::open() {
        std::fs::write(records.file(&first.key), "garbage\n").unwrap();
        assert!(records.read(&first.key).is_none());
    }
}

#[test]
fn a_saved_path_covers_the_file_it_names_not_what_a_symlink_there_leads_to() {
    let dir = folder();
    let work = std::fs::canonicalize(dir.path()).unwrap();
    write(
        &work,
        "version: 1\nrules:\n  - worker: w\n    tool: file_write\n    path: notes/todo.md\n    saved: 2026-01-31T09:30:00Z\n    by: terminal\n",
    );
    let permissions = Permissions::load(&work).unwrap();
    let covered = || {
        permissions
            .covering(
                "w",
                "file_write",
                &json!({ "path": "notes/todo.md", "content": "x" }),
                None,
                &work,
            )
            .is_some()
    };
    // Missing, then a real file: the rule's own file.
    assert!(covered());
    std::fs::create_dir_all(work.join("notes")).unwrap();
    std::fs::write(work.join("notes/todo.md"), "todo").unwrap();
    assert!(covered());
    // A symlink by that name (to a workflow, say): the write would land elsewhere.
    std::fs::create_dir_all(work.join(".github/workflows")).unwrap();
    std::fs::remove_file(work.join("notes/todo.md")).unwrap();
    std::os::unix::fs::symlink(
        work.join(".github/workflows/ci.yml"),
        work.join("notes/todo.md"),
    )
    .unwrap();
    assert!(!covered(), "a symlink at the path");
    // A symlinked folder on the way.
    std::fs::remove_file(work.join("notes/todo.md")).unwrap();
    std::fs::remove_dir(work.join("notes")).unwrap();
    std::os::unix::fs::symlink(work.join(".github/workflows"), work.join("notes")).unwrap();
    assert!(!covered(), "a symlinked folder on the way");
}
