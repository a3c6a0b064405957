//! Degrading: a missing or failing launcher. One test in its own binary, because it sets
//! `TOOLGATE_SANDBOX_LAUNCHER` for the whole process.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{text, Fixture};
use toolgate_core::exec::{self, env, ExecRequest};
use toolgate_core::sandbox::LAUNCHER_ENV;
use toolgate_core::{Sandbox, SandboxMode};

#[tokio::test(flavor = "multi_thread")]
async fn enforce_fails_closed_and_best_effort_warns_once() {
    let f = Fixture::new();
    let missing = f.root.join("no-such-launcher");
    // SAFETY: the only test in this binary.
    unsafe { std::env::set_var(LAUNCHER_ENV, &missing) };

    let err = Sandbox::prepare(f.policy()).unwrap_err();
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    let message = err.to_string();
    for needle in [
        missing.to_str().unwrap(),
        "npm run build:native",
        LAUNCHER_ENV,
        "best-effort",
        "sandbox: false",
    ] {
        assert!(message.contains(needle), "{needle} missing from: {message}");
    }

    let mut policy = f.policy();
    policy.mode = SandboxMode::BestEffort;
    let sandbox = std::sync::Arc::new(Sandbox::prepare(policy.clone()).unwrap());
    assert!(!sandbox.confines());
    let warning = sandbox.warning_once().unwrap();
    assert!(
        warning.contains("best-effort") && warning.contains(missing.to_str().unwrap()),
        "{warning}"
    );
    assert!(sandbox.warning_once().is_none(), "warned twice");
    assert!(
        Sandbox::prepare(policy).unwrap().warning_once().is_none(),
        "warned twice"
    );
    // It runs, unconfined, still with a private HOME.
    let request = ExecRequest::new("/bin/sh", &f.work)
        .args(["-c", "cat ../secret.txt >/dev/null && echo $HOME"])
        .env(env::child_environment(&[]))
        .sandbox(sandbox);
    let out = exec::run(request).await.unwrap();
    assert!(out.success() && !out.sandboxed);
    assert!(!text(&out.stdout).contains(f.work.to_str().unwrap()));

    // A launcher that fails to set up is an error, not a result of the program.
    let fake = f.root.join("failing-launcher");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'toolgate-sandbox: Landlock could not be applied: test' >&2\nexit 125\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: as above.
    unsafe { std::env::set_var(LAUNCHER_ENV, &fake) };
    let sandbox = std::sync::Arc::new(Sandbox::prepare(f.policy()).unwrap());
    let request = ExecRequest::new("/bin/true", &f.work).sandbox(sandbox);
    let err = exec::run(request).await.unwrap_err();
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(
        err.to_string().contains("Landlock could not be applied"),
        "{err}"
    );
}
