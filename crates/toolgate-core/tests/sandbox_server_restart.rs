//! A launcher server that is killed: the call it was running ends with an error that says so
//! (its processes die with it), and the next call starts a new server, which removes the
//! cgroups the killed one left. One test in its own binary, because it kills the server all
//! tests of a process share.

#![cfg(target_os = "linux")]

mod common;

use common::{sleep_marker, text, wait_for_marker, wait_until_gone, Fixture};
use std::path::PathBuf;

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
    let left_behind = server_cgroups(sleeper);
    // SAFETY: SIGKILL to the server this test's process started.
    unsafe { libc::kill(first[0] as libc::pid_t, libc::SIGKILL) };
    let err = running.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(err.to_string().contains("server"), "{err}");
    assert!(
        wait_until_gone(sleeper).await,
        "the call's process outlived its server"
    );

    // The killed server removed none of its cgroups; once their processes are gone, the next
    // server removes them.
    if left_behind.is_empty() {
        eprintln!("no call cgroups here (limits by rlimits): the clean-up of a killed server's cgroups is not checked");
    }
    for dir in &left_behind {
        assert!(dir.is_dir(), "{} is already gone", dir.display());
        assert!(
            wait_until_empty(dir).await,
            "{} still holds processes",
            dir.display()
        );
    }

    // The next call starts a new server.
    let out = f.run("/bin/echo", &["again"]).await;
    assert_eq!(text(&out.stdout), "again\n");
    let second = servers();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first);
    for dir in &left_behind {
        assert!(
            !dir.exists(),
            "the killed server's cgroup {} was left behind",
            dir.display()
        );
    }
}

/// The cgroups the launcher server made that the process `pid` (a call's) is in: the server's
/// own directory in each cgroup v1 hierarchy, or its call's directory on cgroup v2 (both named
/// `toolgate-sandbox-<server pid>...`). Empty when calls get no cgroup here.
fn server_cgroups(pid: u32) -> Vec<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let mut dirs = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (
            parts.next(),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let Some(at) = path.find("/toolgate-sandbox-") else {
            continue;
        };
        let end = path[at + 1..].find('/').map_or(path.len(), |i| at + 1 + i);
        // The hierarchy's mount: cgroup2 for `0::`, else the v1 mount with these controllers.
        let mount = mounts.lines().find_map(|mount| {
            let (left, right) = mount.split_once(" - ")?;
            let mut right = right.split_whitespace();
            let kind = right.next()?;
            let options = right.nth(1)?;
            let matches = if controllers.is_empty() {
                kind == "cgroup2"
            } else {
                kind == "cgroup"
                    && controllers
                        .split(',')
                        .all(|c| options.split(',').any(|o| o == c))
            };
            let mut left = left.split_whitespace();
            let root = left.nth(3)?;
            let point = left.next()?;
            matches.then(|| (root.to_string(), point.to_string()))
        });
        let Some((root, point)) = mount else { continue };
        let inside = path[..end]
            .strip_prefix(root.trim_end_matches('/'))
            .unwrap_or(&path[..end]);
        dirs.push(PathBuf::from(format!("{point}{inside}")));
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Waits up to five seconds until no process is left in the cgroup `dir` or any below it.
async fn wait_until_empty(dir: &std::path::Path) -> bool {
    fn holds_processes(dir: &std::path::Path) -> bool {
        let here = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        !here.trim().is_empty()
            || std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|entry| {
                    entry.file_type().is_ok_and(|kind| kind.is_dir())
                        && holds_processes(&entry.path())
                })
    }
    for _ in 0..250 {
        if !holds_processes(dir) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    false
}
