//! Shared fixture of the sandbox tests: a work directory with an outside secret next to it,
//! and helpers that run real programs through `exec` under the default sandbox policy. The
//! launcher is found or built first (`launcher.rs`).

#![allow(dead_code)] // each test binary uses its own subset

mod launcher;

pub use launcher::launcher;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolgate_core::exec::{self, env, ExecOutput, ExecRequest};
use toolgate_core::{Sandbox, SandboxPolicy};

/// The text of every secret outside the work directory.
pub const SECRET: &str = "TOP-SECRET-5b1e7c";

/// `root/` holds `secret.txt`, `outside/secret.txt` and the work directory `work/`.
pub struct Fixture {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub work: PathBuf,
    pub outside: PathBuf,
}

impl Fixture {
    /// A fresh fixture; the launcher is ready (found or built) once it returns.
    pub fn new() -> Self {
        launcher();
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let work = root.join("work");
        let outside = root.join("outside");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(root.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(work.join("in.txt"), "line one\nline two\n").unwrap();
        Self {
            _root: dir,
            root,
            work,
            outside,
        }
    }

    /// The default policy for this work directory.
    pub fn policy(&self) -> SandboxPolicy {
        SandboxPolicy::new(&self.work)
    }

    pub fn sandbox(&self, policy: SandboxPolicy) -> Arc<Sandbox> {
        let sandbox = Sandbox::prepare(policy).expect("the sandbox must be available here");
        let expected = std::fs::canonicalize(launcher()).unwrap();
        assert_eq!(
            std::fs::canonicalize(sandbox.launcher().unwrap()).unwrap(),
            expected
        );
        Arc::new(sandbox)
    }

    /// A request for `program` in the work directory under the default policy, with the one
    /// child-environment policy applied to this process's environment.
    pub fn request(&self, program: &str, args: &[&str]) -> ExecRequest {
        self.request_with(self.policy(), program, args)
    }

    pub fn request_with(&self, policy: SandboxPolicy, program: &str, args: &[&str]) -> ExecRequest {
        ExecRequest::new(program, &self.work)
            .args(args.iter().copied())
            .env(env::child_environment(&[]))
            .timeout(Duration::from_secs(20))
            .sandbox(self.sandbox(policy))
    }

    pub async fn run(&self, program: &str, args: &[&str]) -> ExecOutput {
        exec::run(self.request(program, args)).await.unwrap()
    }

    pub async fn sh(&self, script: &str) -> ExecOutput {
        self.run("/bin/sh", &["-c", script]).await
    }

    /// The secret was not printed, and nothing appeared next to the work directory.
    pub fn assert_confined(&self, what: &str, out: &ExecOutput) {
        assert!(out.sandboxed, "{what}: not sandboxed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stdout.contains(SECRET) && !stderr.contains(SECRET),
            "{what}: the secret leaked\nstdout: {stdout}\nstderr: {stderr}"
        );
        assert_eq!(
            listing(&self.root),
            ["outside", "secret.txt", "work"],
            "{what}"
        );
        assert_eq!(listing(&self.outside), ["secret.txt"], "{what}");
        assert_eq!(
            std::fs::read_to_string(self.root.join("secret.txt")).unwrap(),
            format!("{SECRET}\n"),
            "{what}: the secret was changed"
        );
    }

    pub fn secret(&self) -> String {
        self.root.join("secret.txt").display().to_string()
    }
}

pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether the launcher builds each call a view of its own here (else Landlock alone keeps
/// the file system; tests of the view say they are skipped).
pub fn view_available() -> bool {
    let probe = toolgate_core::sandbox::probe_launcher(launcher());
    let available = probe.as_ref().is_some_and(|probe| probe.view.is_ok());
    if !available {
        eprintln!("note: the sandbox's view cannot be built here: {probe:?}");
    }
    available
}

/// The message of a denied path outside the work directory: it does not exist in the view;
/// without a view Landlock refuses it.
pub fn denial() -> &'static str {
    if view_available() {
        "No such file or directory"
    } else {
        "Permission denied"
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether `program` is installed (absolute path, or on this process's PATH); prints why a
/// test is skipped when it is not.
pub fn installed(program: &str) -> bool {
    let found = if program.starts_with('/') {
        Path::new(program).exists()
    } else {
        std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
            .unwrap_or(false)
    };
    if !found {
        eprintln!("skipped: '{program}' is not installed on this machine");
    }
    found
}

/// A pid is gone when it no longer exists or is a zombie.
pub fn process_is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to two seconds for `pid` to be gone.
pub async fn wait_until_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if process_is_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A unique `sleep` argument of about `seconds` seconds (`30.004217`): a sandboxed process
/// that runs `sleep` with it is found on the host by [`wait_for_marker`] (inside its PID
/// namespace a process cannot learn its host pid).
pub fn sleep_marker(seconds: u32) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{seconds}.{:03}{unique:03}", std::process::id() % 1000)
}

/// Shell lines that wait until a process `sleep MARKER` runs (looked for in the `/proc` the
/// script sees).
pub fn wait_inside_for(marker: &str) -> String {
    format!(
        "found() {{ for p in /proc/[0-9]*/cmdline; do [ \"$(tr '\\0' ' ' < \"$p\" 2>/dev/null)\" = 'sleep {marker} ' ] && return 0; done; return 1; }}\nuntil found; do sleep 0.01; done"
    )
}

/// The host pids of the live processes with `marker` as an argument.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline
            .split(|&byte| byte == 0)
            .any(|arg| arg == marker.as_bytes())
            && !process_is_gone(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Waits up to five seconds for a process with `marker` as an argument; its host pid.
pub async fn wait_for_marker(marker: &str) -> u32 {
    for _ in 0..250 {
        if let Some(pid) = processes_with(marker).first() {
            return *pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no process with the argument {marker} appeared");
}

/// Waits up to five seconds for `file` to hold a pid (written by a sandboxed script).
pub async fn wait_for_pid(file: &Path) -> u32 {
    for _ in 0..250 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} was never written", file.display());
}
