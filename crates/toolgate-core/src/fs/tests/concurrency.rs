//! Writers racing each other: in-process writers through every write tool, other processes
//! writing the same file during an edit, and writers killed in the middle of a write.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;

use crate::fs::*;
use crate::fs::{anchor, temp};
use crate::PathValidator;

fn setup() -> (tempfile::TempDir, Arc<PathValidator>) {
    let dir = tempfile::tempdir().unwrap();
    let validator = Arc::new(PathValidator::new(dir.path()).unwrap());
    (dir, validator)
}

fn numbered_lines(count: usize) -> String {
    (0..count).map(|i| format!("line {i}\n")).collect()
}

fn edit_line(validator: &PathValidator, path: &str, line: usize) -> crate::Result<EditOutput> {
    edit(
        validator,
        &EditRequest {
            path: path.into(),
            old_text: format!("line {line}\n"),
            new_text: format!("line {line} edited\n"),
            replace_all: false,
        },
    )
}

fn edited_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| line.ends_with(" edited"))
        .count()
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".toolgate-"))
        .collect()
}

#[test]
fn two_hundred_parallel_edits_of_one_file_all_land() {
    let (dir, v) = setup();
    std::fs::write(dir.path().join("f.txt"), numbered_lines(200)).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|worker| {
            let v = v.clone();
            thread::spawn(move || {
                (worker..200)
                    .step_by(8)
                    .map(|line| edit_line(&v, "./x/../f.txt", line).map(|_| ()))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for thread in threads {
        for outcome in thread.join().unwrap() {
            outcome.unwrap();
        }
    }
    assert_eq!(edited_lines(&dir.path().join("f.txt")), 200);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn edits_patches_writes_and_deletes_in_one_directory_lose_nothing() {
    let (dir, v) = setup();
    std::fs::write(dir.path().join("f.txt"), numbered_lines(100)).unwrap();
    std::fs::write(dir.path().join("moving-a"), "m").unwrap();
    let mut threads = Vec::new();
    for worker in 0..4 {
        let v = v.clone();
        threads.push(thread::spawn(move || {
            for line in (worker..100).step_by(4) {
                edit_line(&v, "f.txt", line).unwrap();
            }
        }));
    }
    {
        let v = v.clone();
        threads.push(thread::spawn(move || {
            for round in 0..30 {
                let (from, to) = if round % 2 == 0 {
                    ("moving-a", "moving-b")
                } else {
                    ("moving-b", "moving-a")
                };
                let operations = [
                    PatchOperation {
                        action: PatchAction::Add,
                        path: format!("added-{round}"),
                        content: Some(format!("added {round}")),
                        new_path: None,
                    },
                    PatchOperation {
                        action: PatchAction::Move,
                        path: from.into(),
                        content: None,
                        new_path: Some(to.into()),
                    },
                ];
                patch(&*v, &operations).unwrap();
            }
        }));
    }
    {
        let v = v.clone();
        threads.push(thread::spawn(move || {
            for round in 0..30 {
                write(&*v, &format!("written-{round}"), b"w").unwrap();
                delete(&*v, &format!("written-{round}")).unwrap();
            }
        }));
    }
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(edited_lines(&dir.path().join("f.txt")), 100);
    assert!(dir.path().join("moving-a").exists() && !dir.path().join("moving-b").exists());
    for round in 0..30 {
        assert!(dir.path().join(format!("added-{round}")).exists());
        assert!(!dir.path().join(format!("written-{round}")).exists());
    }
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn a_deleted_file_is_never_brought_back_by_an_edit_in_flight() {
    for _ in 0..20 {
        let (dir, v) = setup();
        std::fs::write(dir.path().join("d.txt"), numbered_lines(40)).unwrap();
        let editors: Vec<_> = (0..4)
            .map(|worker| {
                let v = v.clone();
                thread::spawn(move || {
                    for line in (worker..40).step_by(4) {
                        if let Err(err) = edit_line(&v, "d.txt", line) {
                            assert_eq!(err.code(), "FILE_NOT_FOUND", "{err}");
                        }
                    }
                })
            })
            .collect();
        delete(&*v, "d.txt").unwrap();
        for editor in editors {
            editor.join().unwrap();
        }
        assert!(
            !dir.path().join("d.txt").exists(),
            "an edit recreated a deleted file"
        );
    }
}

#[test]
fn whole_file_writes_and_patch_updates_of_one_file_never_interleave() {
    let (dir, v) = setup();
    std::fs::write(dir.path().join("w.txt"), "start").unwrap();
    let contents: Vec<String> = (0..16).map(|i| format!("{i}").repeat(100_000)).collect();
    let threads: Vec<_> = contents
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, content)| {
            let v = v.clone();
            thread::spawn(move || {
                if i % 2 == 0 {
                    write(&*v, "w.txt", content.as_bytes()).map(|_| ())
                } else {
                    let update = PatchOperation {
                        action: PatchAction::Update,
                        path: "w.txt".into(),
                        content: Some(content),
                        new_path: None,
                    };
                    patch(&*v, &[update]).map(|_| ())
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().unwrap();
    }
    let now = std::fs::read_to_string(dir.path().join("w.txt")).unwrap();
    assert!(
        contents.contains(&now),
        "the file is not one of the written contents"
    );
}

/// Makes `script` run by `sh` in `dir` (a real other process) the first `times` times an edit
/// of `name` has written its new content and is about to check the file: after the edit read
/// the file and before it renames its new content into place.
fn change_during_edits(dir: &Path, name: &str, script: &'static str, times: usize) -> PathBuf {
    let target = dir.canonicalize().unwrap().join(name);
    let dir = dir.to_path_buf();
    let mut left = times;
    anchor::race::before_check_of(&target, move || {
        if left == 0 {
            return;
        }
        left -= 1;
        let status = Command::new("sh")
            .args(["-c", script])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{script}");
    });
    target
}

#[test]
fn another_process_changing_the_file_mid_edit_is_not_overwritten() {
    for (how, script) in [
        ("appending in place", "printf 'external\\n' >> f.txt"),
        (
            "replacing the file as editors do",
            "cat f.txt > f.new && printf 'external\\n' >> f.new && mv f.new f.txt",
        ),
        (
            "rewriting it in place",
            "cat f.txt > f.new && printf 'external\\n' >> f.new && cat f.new > f.txt && rm f.new",
        ),
    ] {
        let (dir, v) = setup();
        std::fs::write(dir.path().join("f.txt"), numbered_lines(50)).unwrap();
        // Only the first attempt is raced: the edit is then made again on the new content.
        let target = change_during_edits(dir.path(), "f.txt", script, 1);
        let outcome = edit_line(&v, "f.txt", 7);
        anchor::race::clear(&target);
        let out = outcome.unwrap_or_else(|err| panic!("{how}: {err}"));
        assert_eq!(out.replacements, 1);
        let now = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
        assert!(
            now.contains("line 7 edited\n"),
            "{how}: the edit is missing"
        );
        assert!(
            now.ends_with("line 49\nexternal\n"),
            "{how}: the other change was lost"
        );
        assert!(temp_files(dir.path()).is_empty(), "{how}");
    }
}

#[test]
fn a_file_that_keeps_changing_fails_the_edit_without_writing() {
    let (dir, v) = setup();
    std::fs::write(dir.path().join("f.txt"), numbered_lines(50)).unwrap();
    let target = change_during_edits(
        dir.path(),
        "f.txt",
        "printf 'external\\n' >> f.txt",
        usize::MAX,
    );
    let outcome = edit_line(&v, "f.txt", 7);
    anchor::race::clear(&target);
    let err = outcome.unwrap_err();
    assert_eq!(err.code(), "TOOL_FAILED", "{err}");
    assert!(
        err.to_string().contains("another program keeps writing it"),
        "{err}"
    );
    let now = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
    assert!(!now.contains("edited"));
    assert_eq!(
        now.matches("external\n").count(),
        3,
        "one change per attempt"
    );
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn old_text_removed_by_another_process_mid_edit_says_so() {
    let (dir, v) = setup();
    std::fs::write(dir.path().join("f.txt"), numbered_lines(50)).unwrap();
    let target = change_during_edits(
        dir.path(),
        "f.txt",
        "printf 'replaced\\n' > small && mv small f.txt",
        1,
    );
    let outcome = edit_line(&v, "f.txt", 7);
    anchor::race::clear(&target);
    let err = outcome.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.to_string().contains("another program changed 'f.txt'"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "replaced\n"
    );
}

#[test]
fn temporary_files_of_dead_writers_are_swept_and_live_ones_kept() {
    let (dir, v) = setup();
    // A real writer that died: a child process, reaped, so its pid names no process (or a
    // different one, with another start time).
    let mut child = Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let mine = temp::hidden_name("kept.txt".as_ref(), "tmp");
    let mine = mine.to_str().unwrap();
    let (namespace, rest) = mine
        .rsplit_once(".toolgate-")
        .unwrap()
        .1
        .split_once('-')
        .unwrap();
    let start = rest.split('-').nth(1).unwrap();
    let dead = format!(".x.txt.toolgate-{namespace}-{dead_pid}-{start}-0.tmp");
    let recycled = format!(".y.txt.toolgate-{namespace}-{}-1-0.tmp", std::process::id());
    let other_namespace = format!(".z.txt.toolgate-1-{dead_pid}-{start}-0.tmp");
    let orig = format!(".x.txt.toolgate-{namespace}-{dead_pid}-{start}-1.orig");
    for name in [&dead, &recycled, mine, &other_namespace, &orig] {
        std::fs::write(dir.path().join(name), vec![b'x'; 1 << 20]).unwrap();
    }
    write(&*v, "new.txt", b"x").unwrap();
    let mut left = temp_files(dir.path());
    left.sort();
    let mut expected = vec![mine.to_string(), other_namespace, orig];
    expected.sort();
    assert_eq!(left, expected);
}
