//! Class 6 of issue 22: each call's limits stop a fork bomb, a large allocation, a full
//! private tmpfs, a file over the size limit and a CPU spin; the host survives, the call ends,
//! and its result names the limit.

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{installed, sleep_marker, text, wait_for_marker, Fixture};
use toolgate_core::exec::{self, ExecOutput, ExecRequest};
use toolgate_core::sandbox::SandboxLimits;
use toolgate_core::SandboxPolicy;

const PYTHON: &str = "/usr/bin/python3";

fn policy(f: &Fixture, limits: SandboxLimits) -> SandboxPolicy {
    let mut policy = f.policy();
    policy.limits = limits;
    policy
}

async fn run(f: &Fixture, limits: SandboxLimits, program: &str, args: &[&str]) -> ExecOutput {
    let request = f
        .request_with(policy(f, limits), program, args)
        .timeout(Duration::from_secs(30));
    exec::run(request).await.unwrap()
}

/// How limits are enforced here (cgroups, or rlimits).
fn enforcement() -> String {
    toolgate_core::sandbox::probe_launcher(common::launcher())
        .map(|probe| probe.cgroups)
        .unwrap_or_default()
}

fn says_limit(out: &ExecOutput, name: &str) {
    assert!(
        out.limit
            .as_deref()
            .is_some_and(|limit| limit.split(',').any(|n| n == name)),
        "the result does not name {name}: limit {:?}, stderr: {}",
        out.limit,
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains(&format!("sandbox limit: {name}")),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_bomb_stops_at_the_process_limit() {
    let f = Fixture::new();
    if !installed(PYTHON) {
        return;
    }
    let _busy = BUSY_CPUS.lock().await;
    let limits = SandboxLimits {
        processes: Some(64),
        ..SandboxLimits::default()
    };
    // Counts the children it gets before fork fails.
    let code = "import os, sys, time\n\
         n = 0\n\
         try:\n\
         \x20   while n < 2000:\n\
         \x20       if os.fork() == 0:\n\
         \x20           time.sleep(30); os._exit(0)\n\
         \x20       n += 1\n\
         except OSError as e:\n\
         \x20   print('stopped', n, e.errno)\n";
    let started = Instant::now();
    let out = run(&f, limits, PYTHON, &["-c", code]).await;
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("stopped"),
        "{stdout}{}",
        text(&out.stderr)
    );
    let made: usize = stdout.split_whitespace().nth(1).unwrap().parse().unwrap();
    let bound = if enforcement().starts_with("cgroup") {
        64
    } else {
        400
    };
    assert!(
        made < bound,
        "{made} processes under a limit of 64 ({})",
        enforcement()
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    if enforcement().starts_with("cgroup") {
        says_limit(&out, "processes");
    }

    // The classic one: the call ends at its timeout, the host is fine, the test goes on.
    let request = f
        .request_with(
            policy(
                &f,
                SandboxLimits {
                    processes: Some(64),
                    ..SandboxLimits::default()
                },
            ),
            "/bin/bash",
            &["-c", "b() { b | b & }; b; sleep 20"],
        )
        .timeout(Duration::from_secs(3));
    let started = Instant::now();
    let out = exec::run(request).await.unwrap();
    assert!(out.timed_out, "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.sandboxed);
    if enforcement().starts_with("cgroup") {
        says_limit(&out, "processes");
    }
    assert!(
        f.run("/bin/true", &[]).await.success(),
        "the next call runs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_allocation_stops_at_the_memory_limit() {
    let f = Fixture::new();
    if !installed(PYTHON) {
        return;
    }
    let limits = SandboxLimits {
        memory_mb: Some(128),
        ..SandboxLimits::default()
    };
    for code in [
        "b = bytearray(2 << 30); print('allocated', len(b))",
        "chunks = []\nfor _ in range(64): chunks.append(bytearray(32 << 20))\nprint('allocated')",
    ] {
        let out = run(&f, limits, PYTHON, &["-c", code]).await;
        assert!(!out.success(), "{code}: {}", text(&out.stdout));
        assert!(!text(&out.stdout).contains("allocated"));
        if enforcement().starts_with("cgroup") {
            says_limit(&out, "memoryMb");
        } else {
            assert!(
                text(&out.stderr).contains("MemoryError"),
                "{}",
                text(&out.stderr)
            );
        }
    }
    // Under the limit it works.
    let out = run(
        &f,
        limits,
        PYTHON,
        &["-c", "b = bytearray(16 << 20); print(len(b))"],
    )
    .await;
    assert_eq!(text(&out.stdout), "16777216\n", "{}", text(&out.stderr));
    assert_eq!(out.limit, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_private_tmpfs_stops_at_its_size() {
    let f = Fixture::new();
    if !common::view_available() {
        return; // without a view the private directory is the host's
    }
    let limits = SandboxLimits {
        tmp_mb: Some(16),
        ..SandboxLimits::default()
    };
    for script in [
        "dd if=/dev/zero of=$TMPDIR/big bs=1M count=64",
        "head -c 100000000 /dev/zero > $HOME/big",
        "i=0; while [ $i -lt 40 ]; do head -c 1000000 /dev/zero > $TMPDIR/f$i || exit 1; i=$((i+1)); done",
    ] {
        let out = run(&f, limits, "/bin/sh", &["-c", script]).await;
        assert!(!out.success(), "{script}");
        assert!(text(&out.stderr).contains("No space left"), "{}", text(&out.stderr));
        says_limit(&out, "tmpMb");
    }
    // The default (512 MiB) stops a 1 GiB write into TMPDIR.
    let out = run(
        &f,
        SandboxLimits::default(),
        "/bin/sh",
        &["-c", "dd if=/dev/zero of=$TMPDIR/big bs=1M count=1024"],
    )
    .await;
    assert!(!out.success());
    says_limit(&out, "tmpMb");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_over_the_size_limit_is_not_written() {
    let f = Fixture::new();
    let limits = SandboxLimits {
        file_size_mb: Some(1),
        ..SandboxLimits::default()
    };
    // Repeated: the limit and the program's own end come in one report, so neither can be lost
    // to toolgate ending the call when the first part of it arrives.
    for round in 0..10 {
        let out = run(
            &f,
            limits,
            "/usr/bin/dd",
            &["if=/dev/zero", "of=big", "bs=1M", "count=4"],
        )
        .await;
        assert_eq!(
            out.signal.as_deref(),
            Some("SIGXFSZ"),
            "round {round}: {}",
            text(&out.stderr)
        );
        says_limit(&out, "fileSizeMb");
        assert!(std::fs::metadata(f.work.join("big")).unwrap().len() <= 1 << 20);
    }
    // Through a shell the limit holds (the shell reports its child's signal itself).
    let out = run(
        &f,
        limits,
        "/bin/sh",
        &["-c", "head -c 3000000 /dev/zero > big2"],
    )
    .await;
    assert!(!out.success());
    assert!(std::fs::metadata(f.work.join("big2")).unwrap().len() <= 1 << 20);
    if installed(PYTHON) {
        let code = "f = open('big3', 'wb')\ntry:\n    f.write(bytes(3 << 20)); f.flush()\nexcept OSError as e: print('refused', e.errno)";
        let out = run(&f, limits, PYTHON, &["-c", code]).await;
        assert!(std::fs::metadata(f.work.join("big3")).unwrap().len() <= 1 << 20);
        assert!(!out.success() || text(&out.stdout).contains("refused 27"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cpu_spin_stops_at_the_cpu_limit() {
    let f = Fixture::new();
    let _busy = BUSY_CPUS.lock().await;
    let limits = SandboxLimits {
        cpu_seconds: Some(1),
        ..SandboxLimits::default()
    };
    let started = Instant::now();
    let out = run(&f, limits, "/bin/sh", &["-c", "while :; do :; done"]).await;
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(
        matches!(out.signal.as_deref(), Some("SIGXCPU" | "SIGKILL")),
        "{out:?}"
    );
    says_limit(&out, "cpuSeconds");

    // A process other than the program that hits the limit: an orphan the call's init reaps
    // (its parent exited without waiting), spinning on its own or in a subshell left behind.
    // The orphan ends by its signal; where a cgroup counts the call's CPU time, the whole
    // call may end there too (it is then at its limit: whether the cgroup's count, which is
    // not sampled as `RLIMIT_CPU`'s is, reached it first or not).
    let per_call = enforcement().contains("cpuSeconds per call");
    for script in [
        "(sh -c 'while :; do :; done' &) ; sleep 4",
        "sh -c 'while :; do :; done' & exec sleep 4",
        "(sh -c 'while :; do :; done' & sleep 4) & sleep 4.5",
        // One that ignores SIGXCPU: the kernel's SIGKILL at the hard limit (two seconds on).
        "(sh -c 'trap \"\" XCPU; while :; do :; done' &) ; sleep 5",
        // A child its parent waits for and outlives: ended by its own SIGXCPU, which only
        // the parent sees (the call's count names it).
        "sh -c 'while :; do :; done'; echo after",
        "(while :; do :; done); echo after",
    ] {
        let out = run(&f, limits, "/bin/sh", &["-c", script]).await;
        assert!(per_call || out.success(), "{script}: {out:?}");
        says_limit(&out, "cpuSeconds");
    }
}

/// Taken by the tests that keep CPUs busy, one at a time: a test whose processes must get
/// their CPU time, or end, within a few seconds (`a_cpu_spin_stops_at_the_cpu_limit`, the fork
/// bomb) would not, on a machine of two CPUs, beside another's busy processes.
static BUSY_CPUS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether the launcher says here that `cpuSeconds` bounds each process only (no cgroup
/// counts a call's CPU time): the tests of the whole call's CPU time are skipped then.
fn cpu_per_process_only() -> bool {
    let enforcement = enforcement();
    let per_process = enforcement.contains("cpuSeconds per process");
    if per_process {
        eprintln!("skipped: cpuSeconds bounds each process only here ({enforcement})");
    }
    per_process
}

/// A shell command that uses `seconds` of CPU time in a process of its own, then exits
/// (Python counts its own CPU time, so the amount does not depend on the machine's load);
/// without Python, a shell loop for that long.
fn busy(seconds: f64) -> String {
    if installed(PYTHON) {
        format!(
            "{PYTHON} -c 'import time\nt = time.process_time()\nwhile time.process_time() - t < {seconds}: pass'"
        )
    } else {
        format!("timeout {seconds} sh -c 'while :; do :; done'")
    }
}

/// Runs `script` with `cpuSeconds: seconds`, with a generous guard against a hang (the
/// scripts end on their own, the slowest after about a minute of CPU time).
async fn run_cpu(f: &Fixture, seconds: u64, script: &str) -> ExecOutput {
    let limits = SandboxLimits {
        cpu_seconds: Some(seconds),
        ..SandboxLimits::default()
    };
    let request = f
        .request_with(policy(f, limits), "/bin/sh", &["-c", script])
        .timeout(Duration::from_secs(120));
    let out = exec::run(request).await.unwrap();
    assert!(!out.timed_out, "{script}: {out:?}");
    out
}

/// `cpuSeconds` bounds the whole call: many processes, each under the limit (which
/// `RLIMIT_CPU` would let run), together over it end the call, all its processes, with the
/// limit named.
#[tokio::test(flavor = "multi_thread")]
async fn many_short_busy_processes_together_stop_at_the_cpu_limit() {
    let f = Fixture::new();
    if cpu_per_process_only() {
        return;
    }
    let _busy = BUSY_CPUS.lock().await;
    let b4 = busy(0.4);
    let b9 = busy(0.9);
    for script in [
        // One after another (the security tester's case: 7.2 CPU seconds under a limit of 2).
        format!("i=0; while [ $i -lt 18 ]; do {b4}; i=$((i+1)); done; echo finished"),
        // At the same time.
        format!("for i in 1 2 3 4 5 6 7 8; do {b9} & done; wait; echo finished"),
        // In subshells, each child's exit status seen by its own parent only.
        format!("for i in 1 2 3 4 5 6 7 8; do ({b9}; echo done $i); done; echo finished"),
        // Orphans the call's init reaps, while the program sleeps.
        format!("for i in 1 2 3 4 5 6 7 8; do ({b9} &); done; sleep 60; echo finished"),
        // Daemons in sessions of their own.
        format!(
            "for i in 1 2 3 4 5 6 7 8; do setsid sh -c '{}' & done; sleep 60; echo finished",
            busy(0.9).replace('\'', "\"")
        ),
        // A shell loop only, children each much shorter than the limit.
        "i=0; while [ $i -lt 200 ]; do timeout 0.1 sh -c 'while :; do :; done'; i=$((i+1)); done; echo finished".to_string(),
        // A single busy process.
        "while :; do :; done; echo finished".to_string(),
    ] {
        let out = run_cpu(&f, 2, &script).await;
        says_limit(&out, "cpuSeconds");
        assert!(!out.success(), "{script}: {out:?}");
        assert!(
            !text(&out.stdout).contains("finished"),
            "{script}: the call went on past its limit: {}",
            text(&out.stdout)
        );
        assert!(
            matches!(out.signal.as_deref(), Some("SIGKILL" | "SIGXCPU")),
            "{script}: {out:?}"
        );
    }
    assert!(
        f.run("/bin/true", &[]).await.success(),
        "the next call runs"
    );
}

/// Under its limit nothing is said, whatever the number of processes; and a cgroup that
/// served an earlier call (the launcher server hands emptied ones on) counts from the call's
/// start, not the earlier calls' CPU time.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_within_its_cpu_limit_is_not_stopped() {
    let f = Fixture::new();
    if cpu_per_process_only() {
        return;
    }
    let _busy = BUSY_CPUS.lock().await;
    let b3 = busy(0.3);
    for script in [
        format!("{b3}; {b3}; {b3}; echo finished"),
        format!("{b3} & {b3} & wait; echo finished"),
        "sleep 1; echo finished".to_string(),
    ] {
        let out = run_cpu(&f, 3, &script).await;
        assert!(out.success(), "{script}: {out:?}");
        assert_eq!(out.limit, None, "{script}: {}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains("sandbox limit"),
            "{script}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "finished\n");
    }
    // Calls of one sandbox, each using 1.2 of its 2 CPU seconds: together they are over, and
    // each alone is not.
    let limits = SandboxLimits {
        cpu_seconds: Some(2),
        ..SandboxLimits::default()
    };
    let sandbox = f.sandbox(policy(&f, limits));
    let b6 = busy(0.6);
    let mut cgroups = Vec::new();
    for round in 0..4 {
        let request = ExecRequest::new("/bin/sh", &f.work)
            .args([
                "-c",
                &format!("cat /proc/self/cgroup; {b6}; {b6}; echo finished"),
            ])
            .env(toolgate_core::exec::env::child_environment(&[]))
            .timeout(Duration::from_secs(120))
            .sandbox(std::sync::Arc::clone(&sandbox));
        let out = exec::run(request).await.unwrap();
        assert!(out.success(), "round {round}: {out:?}");
        assert_eq!(out.limit, None, "round {round}: {}", text(&out.stderr));
        assert!(text(&out.stdout).ends_with("finished\n"));
        cgroups.extend(
            text(&out.stdout)
                .lines()
                .find(|line| line.contains("call-"))
                .map(str::to_string),
        );
        // The server keeps emptied cgroups when it is idle.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut distinct = cgroups.clone();
    distinct.sort();
    distinct.dedup();
    eprintln!(
        "{} calls in {} cgroups: {cgroups:?}",
        cgroups.len(),
        distinct.len()
    );
}

/// The one-shot launcher (MCP stdio servers, `toolgate sandbox`) bounds its program's whole
/// tree the same way, and says so on stderr.
#[test]
fn the_one_shot_launcher_bounds_the_whole_tree_s_cpu_time() {
    use std::os::unix::process::ExitStatusExt;
    let f = Fixture::new();
    if cpu_per_process_only() {
        return;
    }
    let _busy = BUSY_CPUS.blocking_lock();
    let limits = SandboxLimits {
        cpu_seconds: Some(2),
        ..SandboxLimits::default()
    };
    let sandbox = f.sandbox(policy(&f, limits));
    let call_dir = tempfile::tempdir().unwrap();
    let vars = toolgate_core::exec::env::child_environment(&[]);
    let (launcher, launcher_args) = sandbox
        .command(std::path::Path::new("/bin/sh"), call_dir.path(), &vars, &[])
        .unwrap();
    let b9 = busy(0.9);
    for script in [
        format!("for i in 1 2 3 4 5 6 7 8; do {b9} & done; wait; echo finished"),
        format!("for i in 1 2 3 4 5 6 7 8; do ({b9} &); done; sleep 60; echo finished"),
    ] {
        let out = std::process::Command::new(launcher)
            .args(&launcher_args)
            .args(["-c", &script])
            .current_dir(&f.work)
            .env_clear()
            .envs(vars.iter().cloned())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("the call ran into its limit: cpuSeconds"),
            "{script}: {out:?}"
        );
        assert!(!text(&out.stdout).contains("finished"), "{script}: {out:?}");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "{script}: {out:?}"
        );
    }
    // Within the limit, nothing is said.
    let out = std::process::Command::new(launcher)
        .args(&launcher_args)
        .args(["-c", &format!("{}; echo finished", busy(0.5))])
        .current_dir(&f.work)
        .env_clear()
        .envs(vars.iter().cloned())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "finished\n");
    assert!(!text(&out.stderr).contains("limit"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_are_checked_when_prepared() {
    let f = Fixture::new();
    for (limits, name) in [
        (
            SandboxLimits {
                processes: Some(0),
                ..SandboxLimits::default()
            },
            "processes",
        ),
        (
            SandboxLimits {
                memory_mb: Some(u64::MAX),
                ..SandboxLimits::default()
            },
            "memoryMb",
        ),
    ] {
        let err = toolgate_core::Sandbox::prepare(policy(&f, limits)).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(
            err.to_string().contains(&format!("sandbox.limits.{name}")),
            "{err}"
        );
    }
}

/// Runs `script` as a call, and the cgroup it ran in (its `call-N` name) as the host sees it:
/// inside, the call's own cgroup namespace shows only `/`. The call first sleeps under a marker
/// while the host reads its process's `/proc/<pid>/cgroup`.
async fn call_and_its_cgroup(
    f: &Fixture,
    sandbox: &std::sync::Arc<toolgate_core::Sandbox>,
    script: &str,
    timeout: Duration,
) -> (exec::ExecOutput, String) {
    let marker = sleep_marker(1);
    let request = ExecRequest::new("/bin/sh", &f.work)
        .args(["-c", &format!("sleep {marker}; {script}")])
        .env(toolgate_core::exec::env::child_environment(&[]))
        .timeout(timeout)
        .sandbox(std::sync::Arc::clone(sandbox));
    let running = tokio::spawn(exec::run(request));
    let pid = wait_for_marker(&marker).await;
    let listing = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let out = running.await.unwrap().unwrap();
    let cgroup = listing
        .lines()
        .find(|line| line.contains("call-"))
        .and_then(|line| line.rsplit('/').next())
        .unwrap_or_else(|| panic!("no call cgroup in {listing}"))
        .to_string();
    (out, cgroup)
}

/// The cgroup a call under its limits ran in.
async fn cgroup_of_call(f: &Fixture, sandbox: &std::sync::Arc<toolgate_core::Sandbox>) -> String {
    let (out, cgroup) = call_and_its_cgroup(f, sandbox, "true", Duration::from_secs(20)).await;
    assert!(out.success(), "{}", text(&out.stderr));
    assert_eq!(out.limit, None, "a call under its limits names none");
    cgroup
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cgroup_serves_again_only_when_its_call_hit_no_limit() {
    // Making and removing a cgroup per call costs more than a short call's program, so an
    // emptied one serves a later call. Its counters only grow: one whose call hit a limit must
    // never serve again, or the next call would be told it hit that limit too.
    let f = Fixture::new();
    if !enforcement().starts_with("cgroup") {
        eprintln!(
            "skipped: limits are not enforced with cgroups here ({})",
            enforcement()
        );
        return;
    }
    let limits = SandboxLimits {
        processes: Some(16),
        memory_mb: Some(512),
        ..SandboxLimits::default()
    };
    let sandbox = f.sandbox(policy(&f, limits));
    let mut seen = Vec::new();
    for _ in 0..8 {
        seen.push(cgroup_of_call(&f, &sandbox).await);
        // The server cleans up (and keeps emptied cgroups) when it is idle.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut distinct = seen.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct.len() < seen.len(),
        "no cgroup served a second call: {seen:?}"
    );
    // A call that hit a limit, or left more than a little memory charged (8 MiB of page
    // cache from a file it wrote), gives its cgroup to no later call.
    let scripts = [
        (
            "processes",
            "i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done; wait",
        ),
        (
            "processes",
            "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do sleep 5 & done; wait",
        ),
        ("", "head -c 8388608 /dev/zero > charged.bin"),
        ("", "head -c 12582912 /dev/zero > charged.bin"),
    ];
    for (round, (limit, script)) in scripts.into_iter().enumerate() {
        let (out, used) = call_and_its_cgroup(&f, &sandbox, script, Duration::from_secs(4)).await;
        if limit.is_empty() {
            assert!(out.success(), "round {round}: {}", text(&out.stderr));
        } else {
            says_limit(&out, limit);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        for _ in 0..6 {
            let next = cgroup_of_call(&f, &sandbox).await;
            assert_ne!(
                next, used,
                "round {round}: the cgroup of `{script}` served again"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
