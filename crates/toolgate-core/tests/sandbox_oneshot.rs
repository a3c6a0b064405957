//! The one-shot launcher (`toolgate-sandbox [policy] -- program args`), as the CLI's
//! `toolgate sandbox` and MCP stdio servers start it: confined, the program's exit code and
//! signal mirrored, its whole tree gone when it exits, its own failures with its exit codes.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{denial, process_is_gone, processes_with, sleep_marker, text, Fixture, SECRET};
use toolgate_core::exec::env;
use toolgate_core::sandbox::LAUNCHER_MESSAGE_PREFIX;

/// Runs `program args` through the one-shot launcher under the default policy.
fn launch(f: &Fixture, program: &str, args: &[&str]) -> Output {
    launch_with(f, f.policy(), program, args)
}

/// Runs `program args` through the one-shot launcher under `policy`.
fn launch_with(
    f: &Fixture,
    policy: toolgate_core::SandboxPolicy,
    program: &str,
    args: &[&str],
) -> Output {
    let sandbox = f.sandbox(policy);
    let call_dir = tempfile::tempdir().unwrap();
    let vars = env::child_environment(&[]);
    let (launcher, launcher_args) = sandbox
        .command(Path::new(program), call_dir.path(), &vars, &[])
        .unwrap();
    Command::new(launcher)
        .args(launcher_args)
        .args(args)
        .current_dir(&f.work)
        .env_clear()
        .envs(vars)
        .output()
        .unwrap()
}

#[test]
fn programs_run_confined_with_their_exit_codes_and_signals() {
    let f = Fixture::new();
    let out = launch(&f, "/bin/cat", &[&f.secret()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(denial()), "{out:?}");
    assert!(!text(&out.stdout).contains(SECRET));

    let out = launch(&f, "/bin/cat", &["in.txt"]);
    assert_eq!(text(&out.stdout), "line one\nline two\n");
    for code in [0, 3, 125, 255] {
        let out = launch(&f, "/bin/sh", &["-c", &format!("exit {code}")]);
        assert_eq!(out.status.code(), Some(code));
    }
    let out = launch(&f, "/bin/sh", &["-c", "kill -TERM $$"]);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    let out = launch(
        &f,
        "/bin/sh",
        &["-c", "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"],
    );
    assert_eq!(text(&out.stdout), "NoNewPrivs:\t1\nSeccomp:\t2\n");
}

/// Descriptors toolgate's process inherited without close-on-exec (a shell's 255, a terminal,
/// a socket, a file or directory outside) do not reach the program: it could read, write or
/// connect through them past the view, Landlock and the network policy.
#[test]
fn descriptors_the_launcher_inherits_do_not_reach_the_program() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let f = Fixture::new();
    let secret = std::fs::File::open(f.secret()).unwrap();
    let outside_dir = std::fs::File::open(Path::new(&f.secret()).parent().unwrap()).unwrap();
    let (socket, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
    let (reader, _writer) = std::io::pipe().unwrap();
    let numbers = [20, 30, 40, 63, 251, 255, 1000];
    let sources = [
        secret.as_raw_fd(),
        outside_dir.as_raw_fd(),
        socket.as_raw_fd(),
        reader.as_raw_fd(),
        secret.as_raw_fd(),
        outside_dir.as_raw_fd(),
        socket.as_raw_fd(),
    ];
    let sandbox = f.sandbox(f.policy());
    let call_dir = tempfile::tempdir().unwrap();
    let vars = env::child_environment(&[]);
    let (launcher, launcher_args) = sandbox
        .command(Path::new("/bin/ls"), call_dir.path(), &vars, &[])
        .unwrap();
    // The program lists its descriptors (the listing takes the lowest free one, 3). Not
    // through `sh`: dash keeps descriptors above 9 from its children.
    let mut command = Command::new(launcher);
    command
        .args(launcher_args)
        .arg("/proc/self/fd")
        .current_dir(&f.work)
        .env_clear()
        .envs(vars);
    // SAFETY: only dup2 runs in the child before exec; dup2 leaves the copy without
    // close-on-exec, as a descriptor inherited from a shell is.
    unsafe {
        command.pre_exec(move || {
            for (source, number) in sources.iter().zip(numbers) {
                if libc::dup2(*source, number) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "0\n1\n2\n3\n", "{}", text(&out.stderr));
}

#[test]
fn the_tree_ends_with_the_program_and_failures_use_the_launchers_codes() {
    let f = Fixture::new();
    let marker = sleep_marker(30);
    let script = format!(
        "setsid sh -c 'exec sleep {marker}' &\n{}",
        common::wait_inside_for(&marker)
    );
    let out = launch(&f, "/bin/sh", &["-c", &script]);
    assert!(out.status.success(), "{out:?}");
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        processes_with(&marker)
            .iter()
            .all(|pid| process_is_gone(*pid))
    });
    assert!(gone, "the setsid daemon outlived the launcher");

    let out = launch(&f, "/no/such/program", &[]);
    assert_eq!(out.status.code(), Some(127));
    assert!(
        text(&out.stderr).starts_with(LAUNCHER_MESSAGE_PREFIX),
        "{out:?}"
    );
    let out = launch(&f, "/etc", &[]);
    assert_eq!(out.status.code(), Some(126));
}

/// The one-shot launcher (MCP stdio servers, `toolgate sandbox`) counts processes and memory in
/// a cgroup of the call's own, as the launcher server does, where one can be made: rlimits
/// bind neither a root user's processes nor memory a program does not map itself (`memfd`,
/// shared memory). The cgroup is gone after the call.
#[test]
fn the_one_shot_launcher_counts_processes_and_memory_in_a_cgroup() {
    let python = "/usr/bin/python3";
    let cgroups = toolgate_core::sandbox::probe_launcher(common::launcher())
        .map(|probe| probe.cgroups)
        .unwrap_or_default();
    if !cgroups.starts_with("cgroup") || !Path::new(python).exists() {
        eprintln!("skipped: limits are not enforced with cgroups here ({cgroups}), or no python3");
        return;
    }
    let f = Fixture::new();
    let mut policy = f.policy();
    policy.limits = toolgate_core::sandbox::SandboxLimits {
        processes: Some(16),
        memory_mb: Some(64),
        ..toolgate_core::sandbox::SandboxLimits::default()
    };
    // The call's cgroups, as the host sees them (inside, the call's cgroup namespace shows
    // `/`): read from the host while the call sleeps under a marker, before it forks.
    let marker = sleep_marker(1);
    let forks = format!("import os, subprocess, time\nsubprocess.run(['/bin/sleep', '{marker}'])\nn = 0\ntry:\n    while n < 300:\n        if os.fork() == 0:\n            time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)\n");
    let (out, cgroups) = std::thread::scope(|scope| {
        let launched = scope.spawn(|| launch_with(&f, policy.clone(), python, &["-c", &forks]));
        let mut cgroups = String::new();
        for _ in 0..250 {
            if let Some(pid) = processes_with(&marker).first() {
                cgroups =
                    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (launched.join().unwrap(), cgroups)
    });
    let stdout = text(&out.stdout);
    let made: usize = stdout
        .lines()
        .next()
        .unwrap_or("")
        .parse()
        .unwrap_or(usize::MAX);
    assert!(made < 16, "{made} processes under a limit of 16: {out:?}");
    assert!(cgroups.contains("call-"), "not in a call cgroup: {cgroups}");
    assert!(
        text(&out.stderr).contains("processes"),
        "{}",
        text(&out.stderr)
    );
    // The call's cgroups are gone once the launcher is (checked before another launch, which
    // would sweep what a launcher before it left).
    let leftovers: Vec<String> = cgroups
        .lines()
        .filter(|line| line.contains("/toolgate-sandbox-"))
        .filter_map(|line| {
            let (controllers, path) = line.split_once(':')?.1.split_once(':')?;
            let server = &path[..path.rfind('/')?];
            cgroup_mount(controllers).map(|point| format!("{point}{server}"))
        })
        .filter(|dir| Path::new(dir).exists())
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
    // Memory a program does not map itself: a memfd and shared anonymous memory.
    for code in [
        "import os\nfd = os.memfd_create('x')\nfor i in range(256):\n    os.write(fd, b'x' * (1 << 20))\nprint('wrote')\n",
        "import mmap\nm = mmap.mmap(-1, 256 << 20, flags=mmap.MAP_SHARED)\nfor i in range(0, 256 << 20, 4096):\n    m[i] = 1\nprint('wrote')\n",
    ] {
        let out = launch_with(&f, policy.clone(), python, &["-c", code]);
        assert!(!text(&out.stdout).contains("wrote"), "{out:?}");
        assert!(text(&out.stderr).contains("memoryMb"), "{}", text(&out.stderr));
    }
}

/// Where the cgroup v1 hierarchy of `controllers` (`pids`, `memory`) is mounted.
fn cgroup_mount(controllers: &str) -> Option<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .ok()?
        .lines()
        .find_map(|mount| {
            let (left, right) = mount.split_once(" - ")?;
            let mut right = right.split_whitespace();
            let options = (right.next()? == "cgroup").then(|| right.nth(1))??;
            let root = left.split_whitespace().nth(3)?;
            let point = left.split_whitespace().nth(4)?;
            (root == "/"
                && controllers
                    .split(',')
                    .all(|c| options.split(',').any(|o| o == c)))
            .then(|| point.to_string())
        })
}
