use super::*;
use crate::test_support::{process_is_gone, wait_until_gone};

fn tmp() -> PathBuf {
    std::env::temp_dir()
}

fn sh(script: &str) -> ExecRequest {
    ExecRequest::new("/bin/sh", tmp())
        .args(["-c", script])
        .env([("PATH", "/usr/bin:/bin")])
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_and_output_are_data() {
    let out = run(sh("echo out; echo err >&2; exit 3")).await.unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.signal, None);
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    assert!(!out.truncated() && !out.timed_out && !out.aborted);
    assert!(!out.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signal_is_reported_by_name() {
    let out = run(sh("kill -USR1 $$")).await.unwrap();
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal.as_deref(), Some("SIGUSR1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_reach_the_program_verbatim_without_a_shell() {
    let hostile = ["$(id)", "`id`", "a;b", "*", "$HOME", "x y", "'q'", "\"dq\""];
    let out =
        run(ExecRequest::new("/usr/bin/printf", tmp())
            .args(std::iter::once("%s\\n").chain(hostile)))
        .await
        .unwrap();
    let expected: String = hostile.iter().map(|a| format!("{a}\n")).collect();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_child_sees_exactly_the_given_environment() {
    // SAFETY: a unique variable name; no other test reads it.
    unsafe { std::env::set_var("TOOLGATE_TEST_PARENT_SECRET", "hunter2") };
    let out = run(ExecRequest::new("/usr/bin/env", tmp()).env([("ONLY", "this")]))
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "ONLY=this\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn bare_names_are_found_on_the_given_path() {
    let out = run(ExecRequest::new("printf", tmp())
        .args(["ok"])
        .env([("PATH", "/nonexistent:/usr/bin")]))
    .await
    .unwrap();
    assert_eq!(out.stdout, b"ok");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_child_leads_its_own_process_group_with_default_signals() {
    let out =
        run(ExecRequest::new("/bin/cat", tmp()).args(["/proc/self/stat", "/proc/self/status"]))
            .await
            .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let stat = text.lines().next().unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let pid = stat.split_whitespace().next().unwrap();
    assert_eq!(fields[2], pid, "pgrp must equal the child's pid: {stat}");
    // The test harness ignores SIGPIPE; the child must not inherit that.
    let ignored = text
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap();
    assert_eq!(
        ignored & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored in child"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn timeout_kills_the_group_even_when_a_grandchild_holds_the_pipes() {
    let started = Instant::now();
    let out = run(sh("sleep 30 & echo $!; wait").timeout(Duration::from_secs(1)))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(out.timed_out);
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    let grandchild: u32 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_until_gone(grandchild).await,
        "grandchild {grandchild} still runs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_ignores_term_is_killed() {
    let started = Instant::now();
    let out =
        run(sh("trap '' TERM; sleep 30 & wait; sleep 30").timeout(Duration::from_millis(300)))
            .await
            .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.signal.as_deref(), Some("SIGKILL"));
    assert!(started.elapsed() < Duration::from_millis(1300));
}

#[tokio::test(flavor = "multi_thread")]
async fn background_processes_do_not_outlive_their_parent() {
    let started = Instant::now();
    let out = run(sh("sleep 30 & echo $!")).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(out.exit_code, Some(0));
    let grandchild: u32 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_until_gone(grandchild).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_stops_a_running_process() {
    let process = spawn(sh("sleep 30")).unwrap();
    let pid = process.pid();
    let abort = process.abort_handle();
    let started = Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        abort.abort();
    });
    let out = process.wait().await.unwrap();
    assert!(out.aborted && !out.timed_out);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(process_is_gone(pid));
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_before_waiting_is_not_lost() {
    let process = spawn(sh("sleep 30")).unwrap();
    process.abort_handle().abort();
    let out = process.wait().await.unwrap();
    assert!(out.aborted);
}

#[tokio::test(flavor = "multi_thread")]
async fn output_is_capped_exactly_and_the_child_is_drained() {
    let out = run(ExecRequest::new("/usr/bin/head", tmp())
        .args(["-c", "1073741824", "/dev/zero"])
        .max_output_bytes(1024 * 1024))
    .await
    .unwrap();
    assert_eq!(out.stdout.len(), 1024 * 1024);
    assert!(out.stdout_truncated && out.truncated());
    assert_eq!(
        out.exit_code,
        Some(0),
        "head must finish writing, not die of SIGPIPE"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unread_stdin_does_not_deadlock() {
    let out = run(sh("exit 0")
        .stdin(vec![b'x'; 10 * 1024 * 1024])
        .timeout(Duration::from_secs(10)))
    .await
    .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert!(!out.timed_out);
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_round_trips_while_output_is_read() {
    let input: Vec<u8> = (0..10 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let out = run(ExecRequest::new("/bin/cat", tmp())
        .stdin(input.clone())
        .max_output_bytes(20 * 1024 * 1024))
    .await
    .unwrap();
    assert_eq!(out.stdout, input);
}

#[tokio::test(flavor = "multi_thread")]
async fn many_concurrent_runs_complete() {
    let runs = (0..200).map(|i| tokio::spawn(run(sh(&format!("echo {i}")))));
    for (i, handle) in runs.enumerate() {
        let out = handle.await.unwrap().unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{i}\n"));
    }
}

#[test]
fn start_failures_are_errors_that_name_program_and_cwd() {
    let err = spawn(ExecRequest::new("no-such-program-xyz", tmp()).env([("PATH", "/usr/bin")]))
        .unwrap_err();
    assert_eq!(err.code(), "BINARY_NOT_FOUND");
    assert!(err.to_string().contains("no-such-program-xyz"), "{err}");
    assert!(err.to_string().contains("/usr/bin"), "{err}");

    let err = spawn(ExecRequest::new("/bin/true", "/no/such/dir")).unwrap_err();
    assert_eq!(err.code(), "SPAWN_FAILED");
    assert!(err.to_string().contains("/no/such/dir"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let err = spawn(ExecRequest::new(&script, dir.path())).unwrap_err();
    assert_eq!(err.code(), "SPAWN_FAILED");
    assert!(err.to_string().contains("permission denied"), "{err}");
    assert!(err.to_string().contains("not-executable.sh"), "{err}");

    let err = spawn(ExecRequest::new("./missing", dir.path())).unwrap_err();
    assert_eq!(err.code(), "BINARY_NOT_FOUND");
}

#[test]
fn signal_names() {
    assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    assert_eq!(signal_name(64), "SIG64");
}
