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
