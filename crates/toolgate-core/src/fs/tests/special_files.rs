//! FIFOs, sockets and devices where a file tool expects a file: every tool returns (an error or
//! a result without them), none blocks, also when another thread swaps a regular file for a
//! FIFO over and over while the tools run. A hang fails the test through its watchdog.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use rustix::fs::{FileType, Mode};

use crate::fs::*;
use crate::PathValidator;

/// Generous: a blocked open never returns at all, a working call takes milliseconds.
const WATCHDOG: Duration = Duration::from_secs(60);

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

/// Runs `work` on its own thread and fails when it does not finish within [`WATCHDOG`].
fn finishes<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, wait) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(work());
    });
    wait.recv_timeout(WATCHDOG)
        .unwrap_or_else(|_| panic!("{what} did not return: it blocked"))
}

fn read_request(path: &str) -> ReadRequest {
    ReadRequest::new(path)
}

fn grep_request(path: Option<&str>) -> GrepRequest {
    GrepRequest {
        pattern: "needle".into(),
        path: path.map(str::to_string),
        include: Vec::new(),
        exclude: Vec::new(),
        context: 0,
        max_results: 100,
        ignore_case: false,
    }
}

#[test]
fn every_tool_refuses_or_skips_special_files_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    mkfifo(&root.join("pipe"));
    mkfifo(&root.join(".gitignore"));
    std::fs::create_dir(root.join("sub")).unwrap();
    mkfifo(&root.join("sub/.ignore"));
    let _socket = std::os::unix::net::UnixListener::bind(root.join("socket")).unwrap();
    std::fs::write(root.join("file.txt"), "needle\n").unwrap();
    std::fs::write(root.join("sub/other.txt"), "needle\n").unwrap();
    let v = Arc::new(PathValidator::new(&root).unwrap());

    let validator = Arc::clone(&v);
    finishes("the tools", move || {
        let v = validator.as_ref();
        for name in ["pipe", "socket", ".gitignore"] {
            let err = read(v, &read_request(name)).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{name}: {err}");
            assert!(err.to_string().contains("not a regular file"), "{err}");
            let err = edit(
                v,
                &EditRequest {
                    path: name.into(),
                    old_text: "a".into(),
                    new_text: "b".into(),
                    replace_all: false,
                },
            )
            .unwrap_err();
            assert!(
                matches!(err.code(), "INVALID_INPUT" | "FILE_NOT_FOUND" | "IO_ERROR"),
                "{name}: {err}"
            );
            let err = read_bytes(v, name, 1024).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{name}: {err}");
        }
        // Searching the FIFO itself, and a tree full of them.
        match grep(v, &grep_request(Some("pipe")), &Cancel::default()) {
            Ok(found) => assert_eq!(found.total_matches, 0),
            Err(err) => assert_eq!(err.code(), "INVALID_INPUT", "{err}"),
        }
        let found = grep(v, &grep_request(None), &Cancel::default()).unwrap();
        assert_eq!(found.files_with_matches, 2, "{}", found.text);
        let listed = glob(
            v,
            &GlobRequest {
                pattern: "**/*".into(),
                path: None,
                max_results: 100,
            },
            &Cancel::default(),
        )
        .unwrap();
        // Newest first: the two files may be written in the same clock tick or not.
        let mut files = listed.files.clone();
        files.sort();
        assert_eq!(files, ["file.txt", "sub/other.txt"].map(String::from));
        let drawn = tree(
            v,
            &TreeRequest {
                path: None,
                max_depth: 3,
            },
            &Cancel::default(),
        )
        .unwrap();
        assert!(!drawn.text.contains("pipe"), "{}", drawn.text);
        assert!(drawn.text.contains("other.txt"), "{}", drawn.text);
    });
}

#[test]
fn a_racer_swapping_a_file_for_a_fifo_never_holds_a_tool() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir(root.join("swap")).unwrap();
    let v = Arc::new(PathValidator::new(&root).unwrap());
    let stop = Arc::new(AtomicBool::new(false));

    // The racer: `swap/target` is a regular file, then a FIFO, then a file again, as fast as
    // it can; `swap/.gitignore` likewise.
    let racer = {
        let stop = Arc::clone(&stop);
        let swap = root.join("swap");
        thread::spawn(move || {
            let mut rounds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for name in ["target", ".gitignore"] {
                    let path = swap.join(name);
                    let staged = swap.join(format!("{name}.next"));
                    let _ = std::fs::write(&staged, "needle\n");
                    let _ = std::fs::rename(&staged, &path);
                    let _ = std::fs::remove_file(&staged);
                    let _ = rustix::fs::mknodat(
                        rustix::fs::CWD,
                        &staged,
                        FileType::Fifo,
                        Mode::from_raw_mode(0o644),
                        0,
                    );
                    let _ = std::fs::rename(&staged, &path);
                }
                rounds += 1;
            }
            rounds
        })
    };

    let validator = Arc::clone(&v);
    let outcomes = finishes("200 calls against the racer", move || {
        let v = validator.as_ref();
        let mut outcomes = [0u32; 2];
        for round in 0..200 {
            let results = [
                read(v, &read_request("swap/target")).map(|_| ()),
                edit(
                    v,
                    &EditRequest {
                        path: "swap/target".into(),
                        old_text: "needle".into(),
                        new_text: "needle".into(),
                        replace_all: false,
                    },
                )
                .map(|_| ()),
                grep(v, &grep_request(Some("swap")), &Cancel::default()).map(|_| ()),
                grep(v, &grep_request(Some("swap/target")), &Cancel::default()).map(|_| ()),
                read_bytes(v, "swap/target", 1024).map(|_| ()),
            ];
            for result in results {
                outcomes[usize::from(result.is_err())] += 1;
                if let Err(err) = result {
                    // Refused for what it is (or gone between two swaps), never anything else.
                    assert!(
                        matches!(err.code(), "INVALID_INPUT" | "FILE_NOT_FOUND"),
                        "round {round}: {err}"
                    );
                }
            }
        }
        outcomes
    });
    stop.store(true, Ordering::Relaxed);
    let rounds = racer.join().unwrap();
    assert!(rounds > 0);
    assert_eq!(outcomes.iter().sum::<u32>(), 1000);
}
