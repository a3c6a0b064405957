//! The launcher server that `exec` starts sandboxed calls through: many calls at once, the
//! call's streams, arguments and environment passed intact, nothing of the server's or of other
//! calls open in a program, and when toolgate itself is killed its calls die and its private
//! directories are removed. (A killed server: `server_restart.rs`.)

#![cfg(target_os = "linux")]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{text, Fixture};
use toolgate_core::exec::{self, ExecRequest};

#[tokio::test(flavor = "multi_thread")]
async fn hundreds_of_calls_at_once_each_get_their_own_streams() {
    let f = Fixture::new();
    let sandbox = f.sandbox(f.policy());
    let started = Instant::now();
    let calls = (0..200).map(|n| {
        let request = ExecRequest::new("/bin/sh", &f.work)
            .args([
                "-c",
                "read line; echo \"$line $1\"; echo err-$1 >&2",
                "sh",
                &n.to_string(),
            ])
            .env(toolgate_core::exec::env::child_environment(&[]))
            .stdin(format!("in-{n}\n"))
            .timeout(Duration::from_secs(60))
            .sandbox(sandbox.clone());
        tokio::spawn(exec::run(request))
    });
    let outputs: Vec<_> = futures_join(calls.collect()).await;
    for (n, out) in outputs.into_iter().enumerate() {
        let out = out.unwrap();
        assert!(out.success() && out.sandboxed, "{n}: {out:?}");
        assert_eq!(text(&out.stdout), format!("in-{n} {n}\n"));
        assert_eq!(text(&out.stderr), format!("err-{n}\n"));
    }
    assert!(started.elapsed() < Duration::from_secs(120), "did not hang");
}

async fn futures_join<T: Send + 'static>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        results.push(handle.await.unwrap());
    }
    results
}

#[tokio::test(flavor = "multi_thread")]
async fn large_arguments_input_and_output_pass_intact() {
    let f = Fixture::new();
    // Larger than a request message: the request travels in a memfd.
    let big_arg = "a".repeat(100_000);
    let big_env = "b".repeat(50_000);
    let input: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    let request = f
        .request(
            "/bin/sh",
            &[
                "-c",
                "printf %s \"$1\" | wc -c >&2; printf %s \"$BIG\" | wc -c >&2; cat",
                "sh",
                &big_arg,
            ],
        )
        .env(
            toolgate_core::exec::env::child_environment(&[])
                .into_iter()
                .chain([("BIG".into(), big_env.clone().into())]),
        )
        .stdin(input.clone())
        .max_output_bytes(4 << 20);
    let out = exec::run(request).await.unwrap();
    assert!(out.success(), "{}", text(&out.stderr));
    assert_eq!(out.stdout, input, "stdin came back through cat");
    let counts: Vec<String> = text(&out.stderr)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(counts, ["100000", "50000"]);
    // Without stdin the program reads end of file at once.
    let out = f.run("/bin/cat", &[]).await;
    assert!(out.success() && out.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_gets_its_three_streams_and_nothing_else() {
    let f = Fixture::new();
    // Another call runs meanwhile (until it is aborted), so its pipes exist while these start.
    let other = exec::spawn(f.request("/bin/sleep", &["60"])).unwrap();
    let stop_other = other.abort_handle();
    let other = tokio::spawn(other.wait());
    tokio::time::sleep(Duration::from_millis(100)).await;
    for round in 0..3 {
        let marker = common::sleep_marker(1);
        let script = format!("exec sleep {marker}");
        let running = tokio::spawn(exec::run(f.request("/bin/sh", &["-c", &script])));
        let pid = common::wait_for_marker(&marker).await;
        let links = settled_descriptors(pid).await;
        let fds: Vec<&str> = links.iter().map(|(fd, _)| fd.as_str()).collect();
        assert_eq!(fds, ["0", "1", "2"], "round {round}: {links:?}");
        assert!(running.await.unwrap().unwrap().success());
    }
    // A finished call's output ends at once although the other is still running: were it held
    // open, this would wait for the other call's minute.
    let started = Instant::now();
    let out = f.run("/bin/echo", &["done"]).await;
    assert_eq!(text(&out.stdout), "done\n");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the output was held open"
    );
    stop_other.abort();
    assert!(other.await.unwrap().unwrap().aborted);
}

/// The open descriptors of `pid` (number, target) once its program has started: the dynamic
/// loader and `setlocale` open and close a descriptor of their own (fd 3) just after `exec`,
/// so a descriptor is only counted when it is still there after that. One the program
/// inherited stays for its life.
async fn settled_descriptors(pid: u32) -> Vec<(String, Option<PathBuf>)> {
    let list = || {
        let mut fds: Vec<(String, Option<PathBuf>)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .map(|entry| {
                let fd = entry.unwrap().file_name().to_string_lossy().into_owned();
                let target = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok();
                (fd, target)
            })
            .collect();
        fds.sort();
        fds
    };
    for _ in 0..50 {
        let fds = list();
        if fds.len() <= 3 {
            return fds;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    list()
}

/// When set, this test binary is the "toolgate" of the test below.
const CHILD: &str = "TOOLGATE_TEST_KILLED_TOOLGATE";

#[test]
fn killing_toolgate_kills_its_calls_and_removes_its_private_directories() {
    if let Some(report) = std::env::var_os(CHILD) {
        run_as_killed_toolgate(PathBuf::from(report));
        return;
    }
    let f = Fixture::new();
    let report = f.root.join("report");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killing_toolgate_kills_its_calls_and_removes_its_private_directories",
            "--nocapture",
        ])
        .env(CHILD, &report)
        .env("TOOLGATE_TEST_WORK", &f.work)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let lines = loop {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        if text.lines().count() >= 2 {
            break text;
        }
        assert!(Instant::now() < deadline, "the child never reported");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut lines = lines.lines();
    let sleeper: u32 = lines.next().unwrap().parse().unwrap();
    let home = PathBuf::from(lines.next().unwrap());
    let process_dir = home.parent().unwrap().parent().unwrap().to_path_buf();
    assert!(process_dir.is_dir());
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = |check: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if check() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    assert!(
        gone(&|| common::process_is_gone(sleeper)),
        "the call outlived toolgate"
    );
    assert!(
        gone(&|| !process_dir.exists()),
        "{} outlived toolgate",
        process_dir.display()
    );
}

/// The child: starts a long sandboxed call, reports its pid and HOME, and waits to be killed.
fn run_as_killed_toolgate(report: PathBuf) {
    let work = PathBuf::from(std::env::var_os("TOOLGATE_TEST_WORK").unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let sandbox = std::sync::Arc::new(
            toolgate_core::Sandbox::prepare(toolgate_core::SandboxPolicy::new(&work)).unwrap(),
        );
        let home_file = work.join("child-home");
        let marker = common::sleep_marker(60);
        let script = format!(
            "sh -c 'exec sleep {marker}' & echo $HOME > {}; touch $HOME/left-behind; wait",
            home_file.display()
        );
        let request = ExecRequest::new("/bin/sh", &work)
            .args(["-c", &script])
            .env(toolgate_core::exec::env::child_environment(&[]))
            .sandbox(sandbox);
        let _running = exec::spawn(request).unwrap();
        // The sleeper's pid as the host sees it (inside, `$!` is the namespace's).
        let sleeper = common::wait_for_marker(&marker).await;
        for _ in 0..500 {
            let home = std::fs::read_to_string(&home_file).unwrap_or_default();
            if !home.trim().is_empty() {
                std::fs::write(&report, format!("{sleeper}\n{}", home.trim())).unwrap();
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
}
