//! Fail closed where user namespaces are restricted (issue 22, classes 2 and 9): the launcher
//! runs under a seccomp filter that refuses what such a machine refuses
//! (`tests/helpers/restricted_launcher.py`). Without a view, `enforce` refuses a policy whose
//! protected or hidden paths are inside its roots, or whose network goes through the proxy,
//! naming the paths and the fixes; `best-effort` warns and runs; a policy that needs no view
//! still runs under Landlock alone. One test: the launcher is chosen for the whole process.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};

use common::{installed, launcher, text, Fixture, SECRET};
use toolgate_core::exec;
use toolgate_core::sandbox::{NetworkMode, LAUNCHER_ENV};
use toolgate_core::{Sandbox, SandboxMode, SandboxPolicy};

const PYTHON: &str = "/usr/bin/python3";

/// Runs `program args` in the work directory under the default policy and the launcher the
/// variable names now.
async fn run(f: &Fixture, program: &str, args: &[&str]) -> exec::ExecOutput {
    let sandbox = std::sync::Arc::new(Sandbox::prepare(f.policy()).unwrap());
    let request = exec::ExecRequest::new(program, &f.work)
        .args(args.iter().copied())
        .env(exec::env::child_environment(&[]))
        .sandbox(sandbox);
    exec::run(request).await.unwrap()
}

/// A launcher that runs the real one under the filter of `mode`.
fn restricted(dir: &Path, mode: &str) -> PathBuf {
    let helpers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/helpers");
    let helpers = std::fs::canonicalize(helpers).unwrap();
    let script = dir.join(format!("restricted-{mode}"));
    std::fs::write(
        &script,
        format!(
            "#!{PYTHON}\nimport sys\nsys.path.insert(0, {:?})\nimport restricted_launcher\nrestricted_launcher.run({mode:?}, {:?}, sys.argv[1:])\n",
            helpers.display().to_string(),
            launcher().display().to_string()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_view_enforce_refuses_what_it_cannot_keep() {
    if !installed(PYTHON) {
        return;
    }
    let f = Fixture::new();
    let scripts = tempfile::tempdir().unwrap();
    std::fs::write(f.work.join("worker.yaml"), "name: w\n").unwrap();
    std::fs::write(f.work.join(".env"), "KEY=1\n").unwrap();

    // ---- A user namespace without capabilities (Ubuntu 24.04's default) ----
    std::env::set_var(LAUNCHER_ENV, restricted(scripts.path(), "no-capabilities"));
    let probe =
        toolgate_core::sandbox::probe_launcher(&restricted(scripts.path(), "no-capabilities"))
            .unwrap();
    assert!(probe.view.is_err(), "{probe:?}");

    let protected = SandboxPolicy {
        protect: vec!["worker.yaml".into()],
        ..f.policy()
    };
    let hidden = SandboxPolicy {
        hide: vec![".env".into()],
        ..f.policy()
    };
    let proxy = SandboxPolicy {
        network: NetworkMode::Proxy,
        ..f.policy()
    };
    for (policy, names) in [
        (&protected, "worker.yaml"),
        (&hidden, ".env"),
        (&proxy, "network by host"),
    ] {
        let err = Sandbox::prepare(policy.clone()).unwrap_err();
        assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
        let message = err.to_string();
        for needle in [
            names,
            "outside the work directory",
            "sandbox.root",
            "best-effort",
        ] {
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }
    // best-effort: runs, and says what it does without.
    let sandbox = Sandbox::prepare(SandboxPolicy {
        mode: SandboxMode::BestEffort,
        ..protected.clone()
    })
    .unwrap();
    assert!(
        sandbox.warnings().iter().any(|w| w.contains("worker.yaml")),
        "{:?}",
        sandbox.warnings()
    );
    // A protected path outside every writable root needs no view.
    let outside = SandboxPolicy {
        protect: vec![f.outside.join("secret.txt")],
        ..f.policy()
    };
    assert!(Sandbox::prepare(outside).is_ok());

    // A policy that needs no view runs under Landlock alone: outside is refused, not missing.
    let out = run(&f, "/bin/cat", &[&f.secret()]).await;
    assert!(out.sandboxed);
    assert_eq!(out.exit_code, Some(1));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    assert!(!text(&out.stdout).contains(SECRET));
    let out = run(&f, "/bin/sh", &["-c", "echo ok > made.txt && cat made.txt"]).await;
    assert_eq!(text(&out.stdout), "ok\n", "{}", text(&out.stderr));
    // Its private HOME and TMPDIR: without a view the server makes them on the host, writable
    // for this call only, and they are gone when the call returns.
    let script = "echo \"$HOME\"; echo h > \"$HOME/h\" && echo t > \"$TMPDIR/t\" && cat \"$HOME/h\" \"$TMPDIR/t\"";
    let mut homes = Vec::new();
    for _ in 0..2 {
        let out = run(&f, "/bin/sh", &["-c", script]).await;
        let stdout = text(&out.stdout);
        let (home, rest) = stdout.split_once('\n').unwrap_or_default();
        assert_eq!(rest, "h\nt\n", "{}", text(&out.stderr));
        assert!(!Path::new(home).exists(), "{home} outlived its call");
        homes.push(home.to_string());
    }
    assert_ne!(homes[0], homes[1], "two calls shared a private directory");
    // Another call's directory is not its to write.
    let out = run(
        &f,
        "/bin/sh",
        &["-c", &format!("mkdir -p '{}' && echo written", homes[0])],
    )
    .await;
    assert!(
        !text(&out.stdout).contains("written"),
        "{}",
        text(&out.stdout)
    );

    // ---- No user namespaces at all ----
    let no_userns = restricted(scripts.path(), "no-user-namespaces");
    std::env::set_var(LAUNCHER_ENV, &no_userns);
    let probe = toolgate_core::sandbox::probe_launcher(&no_userns).unwrap();
    assert!(!probe.user_namespaces, "{probe:?}");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // Root makes its namespaces without one; anyone else gets no view.
    assert_eq!(probe.view.is_ok(), root, "{probe:?}");
    let result = Sandbox::prepare(protected.clone());
    assert_eq!(result.is_ok(), root, "{result:?}");
    let out = run(&f, "/bin/cat", &["in.txt"]).await;
    assert_eq!(
        text(&out.stdout),
        "line one\nline two\n",
        "{}",
        text(&out.stderr)
    );
    std::env::remove_var(LAUNCHER_ENV);
}
