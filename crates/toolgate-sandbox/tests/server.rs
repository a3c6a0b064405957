//! The launcher server (`toolgate-sandbox --serve`), driven through the public protocol
//! (`toolgate_sandbox::protocol::wire`) as toolgate drives it: a registered policy confines
//! every call made with it, each call reports its program's status, requests it cannot serve
//! are refused with a message, and when toolgate is gone its calls end and its private
//! directory goes (but not when toolgate only replaced the server).

#![cfg(target_os = "linux")]

mod common;

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{
    eventually, kernel_can_confine, launcher, process_is_gone, restricted, text, view_available,
    Fixture, SECRET,
};
use toolgate_sandbox::protocol::wire::{self, Reader};
use toolgate_sandbox::protocol::words;

/// A server started the way toolgate starts it, with this process as its toolgate.
struct Server {
    process: Child,
    socket: Option<OwnedFd>,
}

/// How a call ended, as the protocol reports it.
#[derive(Debug)]
enum Ended {
    /// `STARTED pid` then `EXITED status`: the init's pid and the program's wait status.
    Exited { init: i32, status: i32 },
    /// `FAILED code message`.
    Failed(i32, String),
}

struct CallResult {
    ended: Ended,
    stdout: String,
    stderr: String,
}

impl Server {
    fn start(clean: Option<&Path>) -> Self {
        Self::start_with(Command::new(launcher()), clean)
    }

    /// A server started by `command` (the launcher, or a helper that executes it).
    fn start_with(mut command: Command, clean: Option<&Path>) -> Self {
        let (ours, theirs) = wire::socket_pair().unwrap();
        command
            .arg("--serve")
            .arg("--parent")
            .arg(std::process::id().to_string());
        if let Some(dir) = clean {
            command.arg("--clean").arg(dir);
        }
        let process = command
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let ready = wire::recv(ours.as_fd(), true).unwrap();
        assert_eq!(ready.bytes, [wire::READY, wire::VERSION]);
        Self {
            process,
            socket: Some(ours),
        }
    }

    fn socket(&self) -> std::os::fd::BorrowedFd<'_> {
        self.socket.as_ref().unwrap().as_fd()
    }

    fn register(&self, id: u64, policy: &[OsString]) {
        let head = wire::request_head(wire::POLICY, id, 0);
        let body = words::join(policy);
        wire::send_with_body(self.socket(), head, wire::REQUEST_FLAGS_AT, &body, &[]).unwrap();
    }

    /// Starts `program args` in `cwd` with policy `id`, and returns once the program's
    /// status (or the refusal) came.
    fn call(&self, id: u64, cwd: &Path, program: &str, args: &[&str]) -> CallResult {
        let mut call: Vec<OsString> = vec!["--cwd".into(), cwd.into(), "--env".into()];
        call.push("PATH=/usr/bin:/bin".into());
        call.push("--".into());
        call.push(program.into());
        call.extend(args.iter().map(OsString::from));
        let (ours, theirs) = wire::socket_pair().unwrap();
        let (mut stdout, stdout_end) = pipe();
        let (mut stderr, stderr_end) = pipe();
        let head = wire::request_head(wire::SPAWN, id, 0);
        let fds = [theirs.as_fd(), stdout_end.as_fd(), stderr_end.as_fd()];
        let body = words::join(&call);
        wire::send_with_body(self.socket(), head, wire::REQUEST_FLAGS_AT, &body, &fds).unwrap();
        drop((theirs, stdout_end, stderr_end));
        let (mut init, mut status) = (None, None);
        let ended = loop {
            let message = wire::recv(ours.as_fd(), true).unwrap();
            let mut reader = Reader::new(&message.bytes);
            match reader.u8() {
                Some(wire::STARTED) => {
                    init = reader.i32();
                    assert_eq!(message.fds.len(), 1, "STARTED carries the init's pidfd");
                }
                Some(wire::EXITED) => status = reader.i32(),
                Some(wire::FAILED) => {
                    let code = reader.i32().unwrap();
                    break Ended::Failed(code, text(reader.rest()));
                }
                other => panic!("unexpected answer {other:?}: {:?}", message.bytes),
            }
            if let (Some(init), Some(status)) = (init, status) {
                break Ended::Exited { init, status };
            }
        };
        drop(ours); // the call is over: the server reaps its init
        let mut out = String::new();
        let mut err = String::new();
        stdout.read_to_string(&mut out).unwrap();
        stderr.read_to_string(&mut err).unwrap();
        CallResult {
            ended,
            stdout: out,
            stderr: err,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A pipe: our read end as a file, and the write end for the program.
fn pipe() -> (File, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new fds into the array we own.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both fds are fresh and ours alone.
    unsafe { (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn exit_code(result: &CallResult) -> i32 {
    match result.ended {
        Ended::Exited { status, .. } if libc::WIFEXITED(status) => libc::WEXITSTATUS(status),
        ref other => panic!(
            "the program did not exit normally: {other:?} {}",
            result.stderr
        ),
    }
}

#[test]
fn a_registered_policy_confines_every_call_made_with_it() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let server = Server::start(None);
    server.register(1, &f.policy(false, &["--seccomp"]));
    server.register(2, &f.policy(true, &["--seccomp"]));
    let secret = f.secret();

    let out = server.call(1, &f.work, "/bin/cat", &["in.txt"]);
    assert_eq!(exit_code(&out), 0, "{}", out.stderr);
    assert_eq!(out.stdout, "line one\nline two\n");
    // Once toolgate closed the call's socket, the server ends and reaps the call's init.
    let Ended::Exited { init, .. } = out.ended else {
        unreachable!("checked by exit_code")
    };
    assert!(eventually(5, || process_is_gone(init as u32)));
    for script in [
        format!("cat {secret}"),
        "cat ../outside/secret.txt".into(),
        "ls ..".into(),
        "echo x > ../stolen".into(),
        "touch /tmp/toolgate-sandbox-served-escape".into(),
    ] {
        let out = server.call(1, &f.work, "/bin/sh", &["-c", &script]);
        assert_ne!(exit_code(&out), 0, "{script}: {}", out.stdout);
        assert!(!out.stdout.contains(SECRET), "{script}: the secret leaked");
    }
    assert!(!f.root.join("stolen").exists());
    assert!(!Path::new("/tmp/toolgate-sandbox-served-escape").exists());

    let out = server.call(
        1,
        &f.work,
        "/bin/sh",
        &["-c", "echo made > new.txt; exit 7"],
    );
    assert_eq!(exit_code(&out), 7);
    assert_eq!(
        std::fs::read_to_string(f.work.join("new.txt")).unwrap(),
        "made\n"
    );
    // The read-only policy: the same call cannot write.
    let out = server.call(2, &f.work, "/bin/sh", &["-c", "echo again > new.txt"]);
    assert_ne!(exit_code(&out), 0);
    assert_eq!(
        std::fs::read_to_string(f.work.join("new.txt")).unwrap(),
        "made\n"
    );

    let status = "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status";
    let out = server.call(1, &f.work, "/bin/sh", &["-c", status]);
    assert_eq!(out.stdout, "NoNewPrivs:\t1\nSeccomp:\t2\n");
    let out = server.call(1, &f.work, "/bin/sh", &["-c", "kill -TERM $$"]);
    match out.ended {
        Ended::Exited { status, .. } => {
            assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGTERM)
        }
        other => panic!("{other:?}"),
    }
    let out = server.call(1, &f.work, "/no/such/program", &[]);
    assert_eq!(exit_code(&out), toolgate_sandbox::protocol::EXIT_NOT_FOUND);
}

#[test]
fn requests_it_cannot_serve_are_refused_with_a_message() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let server = Server::start(None);
    server.register(1, &[OsString::from("--bogus")]);
    server.register(
        2,
        &["--read", "/usr", "--", "/bin/true"].map(OsString::from),
    );
    for (id, needle) in [
        (1, "the policy was not accepted: unknown argument"),
        (2, "names no program"),
        (3, "unknown policy 3"),
    ] {
        let out = server.call(id, &f.work, "/bin/true", &[]);
        match out.ended {
            Ended::Failed(code, message) => {
                assert_eq!(code, toolgate_sandbox::protocol::EXIT_SETUP_FAILED);
                assert!(message.contains(needle), "{message}");
            }
            other => panic!("policy {id}: {other:?}"),
        }
    }
    // Still serving.
    server.register(4, &f.policy(false, &["--seccomp"]));
    assert_eq!(exit_code(&server.call(4, &f.work, "/bin/true", &[])), 0);
}

#[test]
fn when_toolgate_is_gone_its_calls_end_and_its_directory_goes() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let private = f.root.join("private");
    std::fs::create_dir_all(private.join("call/home")).unwrap();
    std::fs::write(private.join("call/home/left"), "x").unwrap();
    let mut server = Server::start(Some(&private));
    server.register(1, &f.policy(false, &["--seccomp"]));
    // A call that never ends, started on a socket of its own.
    let (ours, theirs) = wire::socket_pair().unwrap();
    let (_stdout, stdout_end) = pipe();
    let (_stderr, stderr_end) = pipe();
    let call = ["--cwd", f.work.to_str().unwrap(), "--", "/bin/sleep", "60"];
    let fds = [theirs.as_fd(), stdout_end.as_fd(), stderr_end.as_fd()];
    let head = wire::request_head(wire::SPAWN, 1, 0);
    let body = words::join(call);
    wire::send_with_body(server.socket(), head, wire::REQUEST_FLAGS_AT, &body, &fds).unwrap();
    let started = wire::recv(ours.as_fd(), true).unwrap();
    let mut reader = Reader::new(&started.bytes);
    assert_eq!(reader.u8(), Some(wire::STARTED));
    let init = reader.i32().unwrap() as u32;
    assert!(!process_is_gone(init));

    // End of file on the server's socket: toolgate exited.
    server.socket = None;
    let exit = server.process.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(
        eventually(5, || process_is_gone(init)),
        "the call outlived toolgate"
    );
    assert!(!private.exists(), "{} outlived toolgate", private.display());
}

#[test]
fn a_replaced_server_quits_and_leaves_the_directory_alone() {
    if !kernel_can_confine() {
        return;
    }
    let f = Fixture::new();
    let private = f.root.join("private");
    std::fs::create_dir(&private).unwrap();
    let mut server = Server::start(Some(&private));
    wire::send(server.socket(), &[wire::QUIT], &[]).unwrap();
    let exit = server.process.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(private.is_dir(), "QUIT removed toolgate's directory");
}

/// Where the new mount API is missing (qemu-user, kernels before 5.2; simulated by a seccomp
/// filter answering `ENOSYS`), the server's calls run without a view, under Landlock and
/// seccomp, and a policy that needs the view is refused with the reason.
#[test]
fn without_the_mount_api_calls_run_without_a_view() {
    if !kernel_can_confine() || !view_available() {
        return;
    }
    let Some(command) = restricted("no-mount-api") else {
        return;
    };
    let f = Fixture::new();
    let server = Server::start_with(command, None);
    server.register(1, &f.policy(false, &["--best-effort", "--seccomp"]));
    server.register(2, &f.policy(false, &["--seccomp"]));
    server.register(3, &f.policy(false, &["--seccomp", "--require-view"]));
    for id in [1, 2] {
        let out = server.call(id, &f.work, "/bin/cat", &["in.txt"]);
        assert_eq!(exit_code(&out), 0, "{}", out.stderr);
        assert_eq!(out.stdout, "line one\nline two\n");
        // Without a view the host's tree is there, and Landlock refuses it.
        let out = server.call(id, &f.work, "/bin/cat", &[&f.secret()]);
        assert_ne!(exit_code(&out), 0);
        assert!(out.stderr.contains("Permission denied"), "{}", out.stderr);
        assert!(!out.stdout.contains(SECRET));
    }
    match server.call(3, &f.work, "/bin/true", &[]).ended {
        Ended::Failed(code, message) => {
            assert_eq!(code, toolgate_sandbox::protocol::EXIT_SETUP_FAILED);
            assert!(
                message.contains("needs the sandbox's own view"),
                "{message}"
            );
            assert!(message.contains("Function not implemented"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
