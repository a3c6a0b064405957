//! A launcher server that is killed: the call it was running ends with an error that says so
//! (its processes die with it), and the next call starts a new server. One test in its own
//! binary, because it kills the server all tests of a process share.

#![cfg(target_os = "linux")]

mod common;

use common::{sleep_marker, text, wait_for_marker, wait_until_gone, Fixture};
use toolgate_core::exec;

/// Pids of this process's launcher servers (children running `toolgate-sandbox --serve`).
fn servers() -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if parent == Some(me) && cmdline.split(|&b| b == 0).any(|arg| arg == b"--serve") {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_is_replaced_and_its_running_call_reports_it() {
    let f = Fixture::new();
    assert!(f.run("/bin/true", &[]).await.success());
    let first = servers();
    assert_eq!(first.len(), 1, "one server per process: {first:?}");

    // A call running while its server dies ends with an error that says so; its processes
    // die with the server.
    // Found by its marker: inside, the pid is the namespace's.
    let marker = sleep_marker(30);
    let script = format!("sh -c 'exec sleep {marker}' & wait");
    let running = tokio::spawn(exec::run(f.request("/bin/sh", &["-c", &script])));
    let sleeper = wait_for_marker(&marker).await;
    // SAFETY: SIGKILL to the server this test's process started.
    unsafe { libc::kill(first[0] as libc::pid_t, libc::SIGKILL) };
    let err = running.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(err.to_string().contains("server"), "{err}");
    assert!(
        wait_until_gone(sleeper).await,
        "the call's process outlived its server"
    );

    // The next call starts a new server.
    let out = f.run("/bin/echo", &["again"]).await;
    assert_eq!(text(&out.stdout), "again\n");
    let second = servers();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first);
}
