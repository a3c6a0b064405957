//! Inits the launcher server offers ahead of calls (`toolgate_sandbox::protocol::offer`): a
//! call goes straight to the init offered for its kind, but never to one whose view may be
//! stale. A protected or hidden path changed on the host (replaced, removed, made, its
//! directory moved) or any change in a directory the views are watched by sends the call
//! through the server, which builds a fresh view; the program cannot write what is protected
//! either way. Real programs, the real launcher, real files.

#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{text, view_available, Fixture};
use toolgate_core::exec::{self, ExecRequest};
use toolgate_core::{Sandbox, SandboxPolicy};

/// Waits up to five seconds for the server to offer an init for `sandbox`'s calls.
async fn offered(sandbox: &Sandbox) -> Vec<u32> {
    for _ in 0..250 {
        let offered = sandbox.offered_inits();
        if !offered.is_empty() {
            return offered;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no init was offered");
}

fn request(f: &Fixture, sandbox: &Arc<Sandbox>, script: &str) -> ExecRequest {
    ExecRequest::new("/bin/sh", &f.work)
        .args(["-c", script])
        .env(toolgate_core::exec::env::child_environment(&[]))
        .timeout(Duration::from_secs(20))
        .sandbox(Arc::clone(sandbox))
}

/// One test at a time: a fixture made in a watched directory by another test would make this
/// one's offer stale (correctly, but not what it tests).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `script` until a run goes to an offered init (a change elsewhere in a watched
/// directory, such as another process's temporary directory, may make an offer stale: the
/// call then goes through the server), at most five times.
async fn run_offered(f: &Fixture, sandbox: &Arc<Sandbox>, script: &str) -> exec::ExecOutput {
    for _ in 0..5 {
        let offers = offered(sandbox).await;
        let (went_to_offer, out) = run(f, sandbox, script, &offers).await;
        if went_to_offer {
            return out;
        }
    }
    panic!("no call went to an offered init");
}

/// Runs `script`; returns whether it went to one of `offered`, and its output.
async fn run(
    f: &Fixture,
    sandbox: &Arc<Sandbox>,
    script: &str,
    offered: &[u32],
) -> (bool, exec::ExecOutput) {
    let running = exec::spawn(request(f, sandbox, script)).unwrap();
    let went_to_offer = offered.contains(&running.pid());
    (went_to_offer, running.wait().await.unwrap())
}

fn policy(f: &Fixture) -> SandboxPolicy {
    let mut policy = f.policy();
    policy.protect = vec![
        "worker.yaml".into(),
        "tools/tools.ts".into(),
        "later.yaml".into(),
    ];
    policy.hide = vec![".env".into()];
    policy
}

/// The fixture's layout, its sandbox under `policy`, and a first call made through it (its
/// view built: inits of its kind are offered next).
async fn started(f: &Fixture, policy: SandboxPolicy) -> Arc<Sandbox> {
    layout(&f.work);
    let sandbox = f.sandbox(policy);
    let (_, out) = run(f, &sandbox, "true", &[]).await;
    assert!(out.success(), "the first call: {}", text(&out.stderr));
    sandbox
}

fn layout(work: &Path) {
    std::fs::write(work.join("worker.yaml"), "name: main\n").unwrap();
    std::fs::create_dir_all(work.join("tools")).unwrap();
    std::fs::write(work.join("tools/tools.ts"), "export {};\n").unwrap();
}

#[tokio::test]
async fn a_call_goes_straight_to_the_init_offered_for_its_kind() {
    let f = Fixture::new();
    if !view_available() {
        return;
    }
    layout(&f.work);
    let _one = ONE_AT_A_TIME.lock().await;
    let sandbox = f.sandbox(policy(&f));
    for round in 0..5 {
        let (_, out) = run(&f, &sandbox, "true", &[]).await;
        assert!(out.success(), "{round}: {}", text(&out.stderr));
        let out = run_offered(&f, &sandbox, "echo hi; cat worker.yaml").await;
        assert!(out.success(), "{round}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "hi\nname: main\n");
        // The offered init's view is the policy's: protected stays protected.
        let (_, out) = run(&f, &sandbox, "echo evil > worker.yaml", &[]).await;
        assert!(!out.success(), "{round}: wrote a protected file");
    }
    assert_eq!(
        std::fs::read_to_string(f.work.join("worker.yaml")).unwrap(),
        "name: main\n"
    );
}

/// How a protected or hidden path changes on the host between the offer and the call, and
/// the path the call then tries to write.
const HOST_CHANGES: &[(&str, &str)] = &[
    ("replace worker.yaml by a rename", "worker.yaml"),
    ("remove worker.yaml", "worker.yaml"),
    ("make later.yaml", "later.yaml"),
    ("make .env", ".env"),
    ("move tools away and make it again", "tools/tools.ts"),
];

fn change_on_host(work: &Path, change: &str) {
    match change {
        "replace worker.yaml by a rename" => {
            std::fs::write(work.join("worker.new"), "name: new\n").unwrap();
            std::fs::rename(work.join("worker.new"), work.join("worker.yaml")).unwrap();
        }
        "remove worker.yaml" => std::fs::remove_file(work.join("worker.yaml")).unwrap(),
        "make later.yaml" => std::fs::write(work.join("later.yaml"), "host\n").unwrap(),
        "make .env" => std::fs::write(work.join(".env"), "KEY=host\n").unwrap(),
        "move tools away and make it again" => {
            std::fs::rename(work.join("tools"), work.join("tools.old")).unwrap();
            std::fs::create_dir(work.join("tools")).unwrap();
            std::fs::write(work.join("tools/tools.ts"), "export {};\n").unwrap();
        }
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn an_offer_made_before_a_protected_path_changed_is_not_used() {
    let _one = ONE_AT_A_TIME.lock().await;
    for (change, target) in HOST_CHANGES {
        let f = Fixture::new();
        if !view_available() {
            return;
        }
        let sandbox = started(&f, policy(&f)).await;
        let offers = offered(&sandbox).await;
        change_on_host(&f.work, change);
        let before = std::fs::read(f.work.join(target)).ok();
        let script = format!("echo evil > {target}; echo evil >> {target}; cat {target}");
        let (went_to_offer, out) = run(&f, &sandbox, &script, &offers).await;
        assert!(
            !went_to_offer,
            "{change}: the call used an init offered before the change"
        );
        // A protected path that is missing may be made during a call; toolgate removes it
        // after (see `sandbox::guard`). One that exists is never written.
        if before.is_some() {
            assert!(
                !text(&out.stdout).contains("evil"),
                "{change}: the program wrote {target}: {}",
                text(&out.stdout)
            );
        }
        let after = std::fs::read(f.work.join(target)).ok();
        assert_eq!(before, after, "{change}: {target} changed on the host");
    }
}

#[tokio::test]
async fn a_change_in_a_watched_directory_sends_the_call_through_the_server() {
    let f = Fixture::new();
    if !view_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let sandbox = started(&f, policy(&f)).await;
    for (round, name) in ["notes.txt", "build", "notes2.txt"].into_iter().enumerate() {
        let offers = offered(&sandbox).await;
        // The work directory holds protected paths: it is watched, and any name made there
        // counts as a change the offer was not checked against.
        if name == "build" {
            std::fs::create_dir(f.work.join(name)).unwrap();
        } else {
            std::fs::write(f.work.join(name), "x").unwrap();
        }
        let (went_to_offer, out) = run(&f, &sandbox, "cat worker.yaml", &offers).await;
        assert!(
            !went_to_offer,
            "{round}: an offer older than the change was used"
        );
        assert!(out.success(), "{round}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "name: main\n");
        // Nothing changed since the next offer: it is used again.
        let out = run_offered(&f, &sandbox, "cat worker.yaml").await;
        assert!(out.success(), "{round}: {}", text(&out.stderr));
    }
}

/// The program's process of an offered init takes the call itself and executes it (see
/// toolgate-sandbox's `serve.rs`): it runs confined as any call's program (no_new_privs, the
/// seccomp filter, its own PID namespace), and a program it cannot execute in the view is
/// reported as for any call, with the next call served as usual.
#[tokio::test]
async fn an_offered_init_runs_its_program_confined_and_reports_what_cannot_run() {
    let f = Fixture::new();
    if !view_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    std::fs::create_dir(f.work.join("secret")).unwrap();
    let tool = f.work.join("secret/tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut policy = policy(&f);
    policy.hide.push("secret".into());
    let sandbox = started(&f, policy).await;
    for round in 0..3 {
        let out = run_offered(
            &f,
            &sandbox,
            "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; echo pid $$",
        )
        .await;
        assert!(out.success(), "{round}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains("NoNewPrivs:\t1"), "{round}: {stdout}");
        assert!(stdout.contains("Seccomp:\t2"), "{round}: {stdout}");
        // PID 1 is the init; its program is the next process of the namespace.
        assert!(stdout.contains("pid 2\n"), "{round}: {stdout}");

        // A program hidden in the view: its execution fails in the offered init's process.
        let mut went_to_offer = false;
        for _ in 0..5 {
            let offers = offered(&sandbox).await;
            let running = exec::spawn(
                ExecRequest::new(&tool, &f.work)
                    .env(toolgate_core::exec::env::child_environment(&[]))
                    .timeout(Duration::from_secs(20))
                    .sandbox(Arc::clone(&sandbox)),
            )
            .unwrap();
            went_to_offer = offers.contains(&running.pid());
            let err = running.wait().await.unwrap_err().to_string();
            assert!(err.contains("tool.sh"), "{round}: {err}");
            if went_to_offer {
                break;
            }
        }
        assert!(went_to_offer, "{round}: no call went to an offered init");
    }
}

/// The program's process an offered init started ahead dies before any call came (killed from
/// outside): the init ends without a report, and the next call does not take a report of
/// that death for its own but runs as usual.
#[tokio::test]
async fn an_offered_init_whose_waiting_process_died_serves_no_call() {
    let f = Fixture::new();
    if !view_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let sandbox = started(&f, policy(&f)).await;
    for round in 0..3 {
        let offers = offered(&sandbox).await;
        let mut killed = 0;
        for init in &offers {
            // The init starts the process once it hears it is offered: a moment after
            // toolgate hears of the offer.
            let mut children = String::new();
            for _ in 0..250 {
                children = std::fs::read_to_string(format!("/proc/{init}/task/{init}/children"))
                    .unwrap_or_default();
                if !children.trim().is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // Waiting, the init sleeps interruptibly: `S`, not `D` (which the kernel's own vfork
            // wait is), so an idle toolgate adds nothing to the load average. (Just after it
            // started the process it may still be running.)
            let mut stat = String::new();
            for _ in 0..250 {
                stat = std::fs::read_to_string(format!("/proc/{init}/stat")).unwrap();
                if stat
                    .rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('S'))
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]);
            assert_eq!(state, Some("S"), "{round}: offered init {init}: {stat}");
            for child in children.split_whitespace() {
                let child: libc::pid_t = child.parse().unwrap();
                // SAFETY: kill takes integers.
                assert_eq!(unsafe { libc::kill(child, libc::SIGKILL) }, 0);
                killed += 1;
            }
        }
        assert!(
            killed > 0,
            "{round}: the offered inits had no waiting process"
        );
        // The inits end without a report (and close their end of the offer).
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (went_to_offer, out) = run(&f, &sandbox, "echo hi", &offers).await;
        assert!(
            !went_to_offer,
            "{round}: a call went to an init whose process died"
        );
        assert!(
            out.success(),
            "{round}: {:?} {}",
            out.signal,
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "hi\n");
    }
}

/// An offered init holds the call's socket and its socket to the server while its program
/// runs: the program reaches neither, through `/proc/1/fd` or `pidfd_getfd` (Landlock keeps a
/// confined process from the less confined init, and seccomp refuses `ptrace`).
#[tokio::test]
async fn a_program_in_an_offered_init_cannot_take_the_inits_descriptors() {
    let f = Fixture::new();
    if !view_available() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().await;
    let sandbox = started(&f, policy(&f)).await;
    // The numbers of its descriptors can be listed (the directory is its user's), not what
    // they are nor their files.
    let shell = "for fd in $(ls /proc/1/fd 2>/dev/null) 0 1 2 3 4 5 6 7 8 9 10 11 12; do \
                 readlink /proc/1/fd/$fd >/dev/null 2>&1 && echo linked-$fd; \
                 (exec 9</proc/1/fd/$fd) 2>/dev/null && echo opened-$fd; \
                 (exec 9>/proc/1/fd/$fd) 2>/dev/null && echo wrote-$fd; done; \
                 echo done";
    let out = run_offered(&f, &sandbox, shell).await;
    assert_eq!(text(&out.stdout), "done\n", "{}", text(&out.stderr));
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|path| Path::new(path).exists());
    let Some(python) = python else {
        eprintln!("no python3: the pidfd_getfd variant is skipped");
        return;
    };
    let steal = "import ctypes; libc = ctypes.CDLL(None, use_errno=True); \
                 pidfd = libc.syscall(434, 1, 0); \
                 print(len([fd for fd in range(64) if pidfd >= 0 and libc.syscall(438, pidfd, fd, 0) >= 0]))";
    let out = run_offered(&f, &sandbox, &format!("{python} -c '{steal}'")).await;
    assert!(out.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "0\n", "{}", text(&out.stderr));
}
