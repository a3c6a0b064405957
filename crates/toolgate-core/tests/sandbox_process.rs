//! The process side of the sandbox: the whole tree dies with the call (normal exit, timeout,
//! abort), exit codes and signals pass through, and the refused system calls fail with an
//! error the program sees.

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{
    installed, sleep_marker, text, wait_for_marker, wait_inside_for, wait_until_gone, Fixture,
};
use toolgate_core::exec;

/// A script that starts an escaping descendant, which ends as `sleep MARKER` (found on the host
/// by its marker: inside its PID namespace it cannot learn its host pid).
fn escapee(kind: &str, marker: &str) -> String {
    let body = format!("exec sleep {marker}");
    match kind {
        "setsid" => format!("setsid sh -c '{body}' &"),
        "double-fork" => format!("( sh -c '{body}' & ) &"),
        "setsid-double-fork" => format!(
            "( setsid sh -c \"( sh -c '{}' & )\" & ) &",
            body.replace('$', "\\$")
        ),
        "nohup-ignoring-term" => format!("sh -c 'trap \"\" TERM HUP INT; {body}' &"),
        "setpgid-perl" => format!("perl -e 'setpgrp(0,0); exec(\"sh\", \"-c\", q({body}))' &"),
        "background" => format!("sh -c '{body}' &"),
        other => panic!("unknown kind {other}"),
    }
}

const KINDS: &[&str] = &[
    "setsid",
    "double-fork",
    "setsid-double-fork",
    "nohup-ignoring-term",
    "setpgid-perl",
    "background",
];

#[tokio::test(flavor = "multi_thread")]
async fn no_descendant_survives_the_programs_exit() {
    let f = Fixture::new();
    for kind in KINDS {
        if kind.contains("perl") && !installed("perl") {
            continue;
        }
        let marker = sleep_marker(30);
        let script = format!(
            "{}\n{}\nexit 3",
            escapee(kind, &marker),
            wait_inside_for(&marker)
        );
        let started = Instant::now();
        let out = f.sh(&script).await;
        assert_eq!(out.exit_code, Some(3), "{kind}: {}", text(&out.stderr));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{kind} held the call"
        );
        // It ran until the call ended (the script waited for it), and it is gone by the time
        // the call returns: the init kills and reaps the rest before it reports.
        assert_eq!(
            common::processes_with(&marker),
            Vec::<u32>::new(),
            "{kind}: a descendant survived the call's return"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crowd_of_descendants_is_gone_when_the_call_returns() {
    // Many processes, some forking while the init ends the namespace: none is left running
    // (or unreaped) once `exec` returns.
    let f = Fixture::new();
    let marker = sleep_marker(30);
    let script = format!(
        "i=0; while [ $i -lt 12 ]; do {} i=$((i+1)); done\n\
         ( while :; do sh -c 'exec sleep {marker}' & sleep 0.005; done ) &\n\
         {}\nsleep 0.05\nexit 0",
        escapee("double-fork", &marker),
        wait_inside_for(&marker)
    );
    for round in 0..3 {
        let out = f.sh(&script).await;
        assert_eq!(
            out.exit_code,
            Some(0),
            "round {round}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            common::processes_with(&marker),
            Vec::<u32>::new(),
            "round {round}: a descendant survived the call's return"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_descendant_survives_a_timeout() {
    let f = Fixture::new();
    for kind in ["setsid", "setsid-double-fork", "nohup-ignoring-term"] {
        let marker = sleep_marker(30);
        let script = format!("{}\nsleep 30", escapee(kind, &marker));
        let request = f
            .request("/bin/sh", &["-c", &script])
            .timeout(Duration::from_millis(700));
        let started = Instant::now();
        let running = tokio::spawn(exec::run(request));
        let pid = wait_for_marker(&marker).await;
        let out = running.await.unwrap().unwrap();
        assert!(out.timed_out, "{kind}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{kind}: {:?}",
            started.elapsed()
        );
        assert!(
            wait_until_gone(pid).await,
            "{kind}: descendant {pid} survived the timeout"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_descendant_survives_an_abort_or_a_dropped_run() {
    let f = Fixture::new();
    for kind in ["setsid", "double-fork"] {
        let marker = sleep_marker(30);
        let script = format!("{}\nsleep 30", escapee(kind, &marker));
        let process = exec::spawn(f.request("/bin/sh", &["-c", &script])).unwrap();
        let abort = process.abort_handle();
        let pid = wait_for_marker(&marker).await;
        abort.abort();
        let out = process.wait().await.unwrap();
        assert!(out.aborted);
        assert!(
            wait_until_gone(pid).await,
            "{kind}: descendant {pid} survived the abort"
        );
    }
    let marker = sleep_marker(30);
    let process = exec::spawn(f.request(
        "/bin/sh",
        &["-c", &format!("{}\nsleep 30", escapee("setsid", &marker))],
    ))
    .unwrap();
    let pid = wait_for_marker(&marker).await;
    drop(process);
    assert!(
        wait_until_gone(pid).await,
        "descendant {pid} survived a dropped run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_and_signals_pass_through() {
    let f = Fixture::new();
    for code in [0, 1, 2, 42, 125, 126, 127, 255] {
        let out = f.sh(&format!("exit {code}")).await;
        assert_eq!(out.exit_code, Some(code), "exit {code}");
        assert_eq!(out.signal, None);
    }
    for signal in ["USR1", "TERM", "KILL", "SEGV", "ABRT", "HUP", "PIPE"] {
        let out = f.sh(&format!("kill -{signal} $$")).await;
        assert_eq!(out.exit_code, None, "{signal}");
        assert_eq!(out.signal.as_deref(), Some(format!("SIG{signal}").as_str()));
    }
    // A program that handles TERM on a timeout ends the way it chooses.
    let request = f
        .request("/bin/sh", &["-c", "trap 'exit 7' TERM; sleep 30 & wait"])
        .timeout(Duration::from_millis(300));
    let out = exec::run(request).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, Some(7), "{:?}", out.signal);
    // Output, stdin and the working directory are the program's.
    let out = exec::run(f.request("/bin/cat", &[]).stdin("piped\n"))
        .await
        .unwrap();
    assert_eq!(text(&out.stdout), "piped\n");
    let out = f.run("/bin/pwd", &[]).await;
    assert_eq!(text(&out.stdout).trim(), f.work.display().to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_program_sees_normal_signal_semantics_and_sigpipe() {
    let f = Fixture::new();
    // `kill -TERM $$` works (the program is not PID 1 of its namespace), and SIGPIPE kills
    // a writer whose reader went away.
    let out = f
        .sh("yes | head -c 3 >/dev/null; echo ${PIPESTATUS:-done}")
        .await;
    assert!(out.success(), "{}", text(&out.stderr));
    let out = f
        .sh("grep -E '^(SigIgn|SigBlk|NoNewPrivs|Seccomp):' /proc/self/status")
        .await;
    let status = text(&out.stdout);
    let ignored = status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .map(|mask| u64::from_str_radix(mask.trim(), 16).unwrap())
        .unwrap();
    assert_eq!(
        ignored & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored: {status}"
    );
    assert!(status.contains("SigBlk:\t0000000000000000"), "{status}");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("Seccomp:\t2"), "{status}");
    // The sandbox installs one filter (clone3's ENOSYS is part of it: one to check and
    // compile per call's init, one to run per system call), on top of any this test
    // process runs under (a container's).
    let filters = |status: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Seccomp_filters:"))
            .map(|count| count.trim().parse::<u32>().unwrap())
    };
    let out = f.sh("cat /proc/self/status").await;
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    match (filters(&text(&out.stdout)), filters(&own)) {
        (Some(inside), Some(outside)) => assert_eq!(inside, outside + 1),
        _ => eprintln!("this kernel does not count seccomp filters in /proc/PID/status"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_system_calls_fail_with_an_error() {
    let f = Fixture::new();
    let python = "/usr/bin/python3";
    if !installed(python) {
        return;
    }
    // Each call is made with harmless arguments; only the error number matters.
    let script = r#"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(nr, *args)
    print(name, rc, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
call("ptrace", 101, 0, 0, 0, 0)
call("process_vm_readv", 310, os.getppid(), 0, 0, 0, 0, 0)
call("keyctl", 250, 0, 0, 0, 0, 0)
call("add_key", 248, 0, 0, 0, 0, 0)
call("unshare", 272, 0x10000000)
call("setns", 308, 0, 0)
call("mount", 165, 0, 0, 0, 0, 0)
call("bpf", 321, 0, 0, 0)
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("userfaultfd", 323, 0)
call("io_uring_setup", 425, 1, 0)
call("clone3", 435, 0, 0)
call("clone_newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
call("ioctl_tiocsti", 16, 0, 0x5412, 0)
call("init_module", 175, 0, 0, 0)
call("x32_ptrace", 0x40000000 | 521, 0, 0, 0, 0)
"#;
    let out = f.run(python, &["-c", script]).await;
    let report = text(&out.stdout);
    assert!(out.success(), "{report}\n{}", text(&out.stderr));
    for line in report.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let expected = if parts[0] == "clone3" {
            "ENOSYS"
        } else {
            "EPERM"
        };
        assert_eq!(parts[1], "-1", "{line}");
        // x32 calls fail with ENOSYS where the kernel has no x32 ABI; either way they fail.
        if parts[0] == "x32_ptrace" {
            assert!(["EPERM", "ENOSYS"].contains(&parts[2]), "{line}");
        } else {
            assert_eq!(parts[2], expected, "{line}");
        }
    }
    assert_eq!(report.lines().count(), 16, "{report}");
    // Programs that fork and run threads still work (clone without namespace flags).
    let out = f.run(python, &["-c", "import threading, subprocess; t = threading.Thread(target=print, args=('thread',)); t.start(); t.join(); subprocess.run(['true'], check=True)"]).await;
    assert!(out.success(), "{}", text(&out.stderr));
    if installed("unshare") {
        let out = f.run("unshare", &["-U", "true"]).await;
        assert_ne!(out.exit_code, Some(0));
    }
}
