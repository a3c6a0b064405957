//! The one-shot launcher (`toolgate-sandbox [policy] -- program args`), driven directly with
//! the words of a policy: the kernel refuses what the policy does not grant (Landlock: paths;
//! seccomp: system calls and sockets), the program's exit code and signal come back, its whole
//! tree ends with it, and the launcher's own failures use its exit codes.

#![cfg(target_os = "linux")]

mod common;

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use common::{
    eventually, installed, kernel_can_confine, launcher, process_is_gone, processes_with,
    restricted, sleep_marker, text, view_available, wait_inside_for, Fixture, SECRET,
};
use toolgate_sandbox::protocol::{
    EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED, LAUNCHER_MESSAGE_PREFIX,
};

/// Runs `program args` through the launcher under `policy`, in the work directory, with a
/// plain `PATH` and nothing else in the environment.
fn run(f: &Fixture, policy: &[OsString], program: &str, args: &[&str]) -> Output {
    Command::new(launcher())
        .arg("--parent")
        .arg(std::process::id().to_string())
        .args(policy)
        .arg("--")
        .arg(program)
        .args(args)
        .current_dir(&f.work)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

fn sh(f: &Fixture, policy: &[OsString], script: &str) -> Output {
    run(f, policy, "/bin/sh", &["-c", script])
}

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn paths_outside_the_policy_are_refused_by_the_kernel() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let policy = f.policy(false, &["--seccomp"]);
    let secret = f.secret();
    let reads = [
        format!("cat {secret}"),
        "cat ../outside/secret.txt".to_string(),
        "ls ..".to_string(),
        format!("cp {secret} ./stolen"),
        "ln -s ../secret.txt link && cat link".to_string(),
        format!("while read line; do echo $line; done < {secret}"),
        "cat /root/.bashrc /etc/shadow".to_string(),
    ];
    for script in &reads {
        let out = sh(&f, &policy, script);
        assert_ne!(out.status.code(), Some(0), "{script}: {out:?}");
        assert!(
            !text(&out.stdout).contains(SECRET),
            "{script}: the secret leaked"
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("Permission denied") || stderr.contains("No such file"),
            "{script}: {stderr}"
        );
    }
    for script in [
        "echo x > ../stolen",
        "mkdir ../made",
        "echo x >> ../secret.txt",
        "rm ../outside/secret.txt",
        "mv in.txt ../moved",
        "touch /tmp/toolgate-sandbox-test-escape",
    ] {
        let out = sh(&f, &policy, script);
        assert_ne!(out.status.code(), Some(0), "{script}: {out:?}");
    }
    assert_eq!(listing(&f.root), ["outside", "secret.txt", "work"]);
    assert_eq!(listing(&f.outside), ["secret.txt"]);
    assert!(!std::path::Path::new("/tmp/toolgate-sandbox-test-escape").exists());
    assert_eq!(
        std::fs::read_to_string(f.root.join("secret.txt")).unwrap(),
        format!("{SECRET}\n")
    );

    // Inside the policy the same programs work: the refusals above are the sandbox's.
    let out = sh(
        &f,
        &policy,
        "cat in.txt && echo made > new.txt && cat new.txt",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "line one\nline two\nmade\n");

    // Read-only work directory: reading works, writing does not.
    let readonly = f.policy(true, &["--seccomp"]);
    let out = sh(&f, &readonly, "cat in.txt");
    assert_eq!(text(&out.stdout), "line one\nline two\n");
    for script in ["echo x > other.txt", "rm in.txt", "mkdir sub"] {
        let out = sh(&f, &readonly, script);
        assert_ne!(out.status.code(), Some(0), "{script}: {out:?}");
    }
    assert_eq!(listing(&f.work), ["in.txt", "link", "new.txt"]);
}

#[test]
fn the_filters_refuse_system_calls_and_sockets_without_network() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let status = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status";
    let out = sh(&f, &f.policy(false, &["--seccomp"]), status);
    assert_eq!(
        text(&out.stdout),
        "NoNewPrivs:\t1\nSeccomp:\t2\n",
        "{out:?}"
    );
    // The filters are the policy's to ask for.
    let out = sh(&f, &f.policy(false, &[]), status);
    assert_eq!(
        text(&out.stdout),
        "NoNewPrivs:\t1\nSeccomp:\t0\n",
        "{out:?}"
    );

    if installed("unshare") {
        let out = run(
            &f,
            &f.policy(false, &["--seccomp"]),
            "unshare",
            &["-U", "true"],
        );
        assert_ne!(out.status.code(), Some(0), "{out:?}");
    }
    let python = "/usr/bin/python3";
    if !installed(python) {
        return;
    }
    let calls = r#"
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(nr, *args)
    print(name, rc, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
call("ptrace", 101, 0, 0, 0, 0)
call("unshare", 272, 0x10000000)
call("mount", 165, 0, 0, 0, 0, 0)
call("bpf", 321, 0, 0, 0)
call("io_uring_setup", 425, 1, 0)
call("keyctl", 250, 0, 0, 0, 0, 0)
for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):
    try:
        socket.socket(family, socket.SOCK_DGRAM if family == socket.AF_NETLINK else socket.SOCK_STREAM)
        print("socket", family, "made")
    except OSError as err:
        print("socket", family, errno.errorcode[err.errno])
a, b = socket.socketpair()
print("socketpair ok")
"#;
    if cfg!(target_arch = "x86_64") {
        let out = run(&f, &f.policy(false, &["--seccomp"]), python, &["-c", calls]);
        let report = text(&out.stdout);
        assert!(out.status.success(), "{report}\n{}", text(&out.stderr));
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines.len(), 10, "{report}");
        for line in &lines[..6] {
            assert!(line.ends_with("-1 EPERM"), "{line}");
        }
        for line in &lines[6..9] {
            assert!(line.ends_with(" EPERM"), "{line}");
        }
        assert_eq!(lines[9], "socketpair ok");
    }

    // TCP to a listener on this machine: refused without --network, reached with it.
    let connect = "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3); s.sendall(b'hi')";
    for network in [false, true] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let extra: &[&str] = if network {
            &["--seccomp", "--network"]
        } else {
            &["--seccomp"]
        };
        let out = run(&f, &f.policy(false, extra), python, &["-c", connect, &port]);
        listener.set_nonblocking(true).unwrap();
        let reached = listener.accept().is_ok();
        assert_eq!(reached, network, "network {network}: {out:?}");
        assert_eq!(out.status.success(), network, "network {network}: {out:?}");
    }
}

#[test]
fn exit_codes_signals_and_the_launchers_own_failures() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let policy = f.policy(false, &["--seccomp"]);
    for code in [0, 3, 125, 255] {
        let out = sh(&f, &policy, &format!("exit {code}"));
        assert_eq!(out.status.code(), Some(code));
    }
    let out = sh(&f, &policy, "kill -TERM $$");
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    let out = sh(&f, &policy, "kill -KILL $$");
    assert_eq!(out.status.signal(), Some(libc::SIGKILL));

    let out = run(&f, &policy, "/no/such/program", &[]);
    assert_eq!(out.status.code(), Some(EXIT_NOT_FOUND));
    assert!(
        text(&out.stderr).starts_with(LAUNCHER_MESSAGE_PREFIX),
        "{out:?}"
    );
    let out = run(&f, &policy, "/etc", &[]);
    assert_eq!(out.status.code(), Some(EXIT_CANNOT_EXECUTE), "{out:?}");
    // A program outside the policy cannot be executed either: it does not exist in the view
    // (without one, Landlock refuses to execute it).
    let copy = f.root.join("true-copy");
    std::fs::copy("/bin/true", &copy).unwrap();
    let out = run(&f, &policy, copy.to_str().unwrap(), &[]);
    let expected = if view_available() {
        EXIT_NOT_FOUND
    } else {
        EXIT_CANNOT_EXECUTE
    };
    assert_eq!(out.status.code(), Some(expected), "{out:?}");

    for words in [
        vec!["--bogus", "--", "/bin/true"],
        vec!["--read"],
        vec!["--read", "/usr"],
        vec!["--parent", "0", "--", "/bin/true"],
        vec!["--parent", "1", "--", "/bin/true"],
    ] {
        let out = Command::new(launcher()).args(&words).output().unwrap();
        assert_eq!(out.status.code(), Some(EXIT_SETUP_FAILED), "{words:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with(LAUNCHER_MESSAGE_PREFIX),
            "{words:?}: {stderr}"
        );
    }
}

#[test]
fn the_tree_ends_with_the_program() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let policy = f.policy(false, &["--seccomp"]);
    // The daemon is found by its marker (inside, its pid is the namespace's).
    let marker = sleep_marker(30);
    let script = format!(
        "setsid sh -c 'exec sleep {marker}' &\n{}",
        wait_inside_for(&marker)
    );
    let out = sh(&f, &policy, &script);
    assert!(out.status.success(), "{out:?}");
    assert!(
        eventually(2, || processes_with(&marker)
            .iter()
            .all(|pid| process_is_gone(*pid))),
        "the setsid daemon outlived the launcher"
    );

    // Where the kernel allows PID namespaces the program is PID 2, under the launcher's init.
    let probe = Command::new(launcher()).arg("--probe").output().unwrap();
    if text(&probe.stdout).contains("pid_namespace=1") {
        let out = sh(&f, &policy, "echo $$");
        assert_eq!(text(&out.stdout), "2\n");
    }
}

#[test]
fn the_probe_says_what_the_kernel_allows() {
    let out = Command::new(launcher()).arg("--probe").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = text(&out.stdout);
    let keys: Vec<&str> = report
        .lines()
        .filter_map(|line| line.split_once('=').map(|(key, _)| key))
        .filter(|key| *key != "view_error")
        .collect();
    assert_eq!(
        keys,
        [
            "user_namespaces",
            "pid_namespace",
            "view",
            "fresh_proc",
            "network_namespace",
            "cgroups"
        ],
        "{report}"
    );
    for line in report
        .lines()
        .filter(|line| !line.starts_with("cgroups=") && !line.starts_with("view_error="))
    {
        assert!(line.ends_with("=0") || line.ends_with("=1"), "{report}");
    }
    eprintln!("launcher probe: {report}");
}

/// Where the new mount API is missing (qemu-user, kernels before 5.2; simulated by a seccomp
/// filter answering `ENOSYS`), the view cannot be built: the call runs under Landlock and
/// seccomp alone and the launcher says so, unless the policy needs the view.
#[test]
fn without_the_mount_api_the_view_is_left_out_and_said() {
    if !kernel_can_confine() || !view_available() {
        return;
    }
    let Some(_) = restricted("no-mount-api") else {
        return;
    };
    let f = Fixture::new();
    let run = |policy: &[OsString], script: &str| {
        restricted("no-mount-api")
            .unwrap()
            .arg("--parent")
            .arg(std::process::id().to_string())
            .args(policy)
            .arg("--")
            .args(["/bin/sh", "-c", script])
            .current_dir(&f.work)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap()
    };
    let warning = "view of the file system cannot be built here";
    for extra in [&["--best-effort", "--seccomp"][..], &["--seccomp"]] {
        let policy = f.policy(false, extra);
        let out = run(&policy, "cat in.txt && echo made > new.txt");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{extra:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "line one\nline two\n");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(warning), "{stderr}");
        assert!(stderr.contains("Function not implemented"), "{stderr}");
        assert!(stderr.contains("Landlock and seccomp alone"), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(f.work.join("new.txt")).unwrap(),
            "made\n"
        );
        // Landlock still refuses what the policy does not grant (the host's tree is there).
        for script in [
            format!("cat {}", f.secret()),
            "cat ../outside/secret.txt".into(),
        ] {
            let out = run(&policy, &script);
            assert_ne!(out.status.code(), Some(0), "{script}");
            assert!(
                !text(&out.stdout).contains(SECRET),
                "{script}: the secret leaked"
            );
            assert!(
                text(&out.stderr).contains("Permission denied"),
                "{}",
                text(&out.stderr)
            );
        }
        // seccomp too: no IP socket without network.
        let out = run(&policy, "exec 3<>/dev/tcp/127.0.0.1/9 && echo connected");
        assert!(!text(&out.stdout).contains("connected"));
    }
    // A policy that needs the view is refused, naming why.
    let out = run(
        &f.policy(false, &["--best-effort", "--seccomp", "--require-view"]),
        "echo ran",
    );
    assert_eq!(out.status.code(), Some(EXIT_SETUP_FAILED));
    assert!(text(&out.stdout).is_empty(), "the program ran");
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with(LAUNCHER_MESSAGE_PREFIX), "{stderr}");
    assert!(stderr.contains("needs the sandbox's own view"), "{stderr}");
    assert!(stderr.contains("Function not implemented"), "{stderr}");
}

/// `fileSizeMb` is named when the program itself, or an orphan of the call (a process whose
/// parent exited before it: the init reaps it), is killed by `SIGXFSZ`; a child reaped by its
/// own parent is not seen (the kernel tells only the parent).
#[test]
fn a_file_size_overrun_by_an_orphan_is_named() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let policy = f.policy(
        false,
        &[
            "--seccomp",
            "--device",
            "/dev/zero",
            "--limit",
            "fileSizeMb=1",
        ],
    );
    let report = format!(
        "{LAUNCHER_MESSAGE_PREFIX}{}fileSizeMb",
        toolgate_sandbox::protocol::LIMIT_REPORT
    );
    // The writer's parent (a subshell) exits at once, and the writer starts only once it is
    // an orphan (its parent changed: `orphan.sh`); the script waits until the writer is gone
    // (reaped by the init: `kill -0` fails only then) and exits 0 itself.
    std::fs::write(f.work.join("orphan.sh"), ORPHAN_SH).unwrap();
    for (writer, file) in [
        ("head -c 3000000 /dev/zero > big1", "big1"),
        ("dd if=/dev/zero of=big2 bs=1M count=3 2>/dev/null", "big2"),
    ] {
        let script = format!(
            "(sh orphan.sh $(sh -c 'echo $PPID') '{writer}' & echo $! > pid); while kill -0 $(cat pid) 2>/dev/null; do sleep 0.01; done; echo done"
        );
        let out = sh(&f, &policy, &script);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "done\n");
        assert!(
            text(&out.stderr).contains(&report),
            "{writer}: {}",
            text(&out.stderr)
        );
        assert_eq!(std::fs::metadata(f.work.join(file)).unwrap().len(), 1 << 20);
    }
    // The program itself.
    let out = sh(&f, &policy, "exec head -c 3000000 /dev/zero > big3");
    assert_eq!(out.status.signal(), Some(libc::SIGXFSZ));
    assert!(text(&out.stderr).contains(&report), "{}", text(&out.stderr));
    // Within the limit, or a file-size error the writer handled itself: nothing named.
    for script in [
        "head -c 1000 /dev/zero > small; (head -c 1000 /dev/zero > small2 &); sleep 0.1",
        "trap '' XFSZ; head -c 3000000 /dev/zero > big4 || echo refused",
    ] {
        let out = sh(&f, &policy, script);
        assert!(
            !text(&out.stderr).contains(LIMIT_REPORT_TEXT),
            "{script}: {}",
            text(&out.stderr)
        );
    }
}

const LIMIT_REPORT_TEXT: &str = toolgate_sandbox::protocol::LIMIT_REPORT;

/// Runs the command `$2` once this shell's parent is no longer `$1` (it is then an orphan,
/// whose end only the init sees).
const ORPHAN_SH: &str = "while [ \"$(cut -d' ' -f4 /proc/$$/stat)\" = \"$1\" ]; do sleep 0.01; done
eval \"exec $2\"
";
