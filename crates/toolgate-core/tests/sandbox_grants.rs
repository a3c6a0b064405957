//! Class 7 of issue 22: a program found in `<dir>/bin` gets its `bin` directory and the parts
//! of its prefix a runtime needs (`lib`, `libexec`, `share`), never `<dir>` itself: a copy of
//! perl (python, node) in `<dir>/bin` cannot read `<dir>/outside/secret.txt`, by name or by a
//! hex-encoded path, also through a symlinked `bin`. A program in any other folder (a home,
//! an application's folder) is granted alone: nothing beside it is readable.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{installed, text, Fixture, SECRET};
use toolgate_core::exec::{self, ExecOutput};

/// `root/prefix/{bin, lib, share, outside}` with `program` copied (or hard-linked) into `bin`.
fn prefix(f: &Fixture, program: &str) -> PathBuf {
    let prefix = f.root.join("prefix");
    for dir in ["bin", "lib", "share", "outside"] {
        std::fs::create_dir_all(prefix.join(dir)).unwrap();
    }
    std::fs::write(prefix.join("outside/secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(prefix.join("lib/data.txt"), "library data\n").unwrap();
    let name = Path::new(program).file_name().unwrap();
    let target = prefix.join("bin").join(name);
    if std::fs::hard_link(program, &target).is_err() {
        std::fs::copy(program, &target).unwrap();
    }
    prefix
}

/// Runs `name` found on a `PATH` that starts with `bin` (the way a tool's program is found).
async fn run_on_path(f: &Fixture, bin: &Path, name: &str, args: &[&str]) -> ExecOutput {
    let mut request = f.request(name, args).timeout(Duration::from_secs(20));
    request.env.retain(|(key, _)| key != "PATH");
    request.env.push((
        "PATH".into(),
        format!("{}:/usr/bin:/bin", bin.display()).into(),
    ));
    exec::run(request).await.unwrap()
}

fn hex(path: &Path) -> String {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_perl_copy_in_a_prefix_reads_its_lib_but_not_the_prefix() {
    if !installed("/usr/bin/perl") {
        return;
    }
    let f = Fixture::new();
    let prefix = prefix(&f, "/usr/bin/perl");
    let secret = prefix.join("outside/secret.txt");
    let bins = [prefix.join("bin"), {
        // The same bin directory through a symlink.
        let alias = f.root.join("alias");
        std::fs::create_dir(&alias).unwrap();
        std::os::unix::fs::symlink(prefix.join("bin"), alias.join("bin")).unwrap();
        alias.join("bin")
    }];
    for bin in &bins {
        for code in [
            format!(
                "open(F, '<', '{}') or die \"$!\\n\"; print <F>",
                secret.display()
            ),
            format!(
                "open(F, '<', pack('H*', '{}')) or die \"$!\\n\"; print <F>",
                hex(&secret)
            ),
            format!(
                "opendir(D, '{}') or die \"$!\\n\"; print readdir(D)",
                prefix.display()
            ),
            format!("print -e '{}' ? 'exists' : 'missing'", secret.display()),
        ] {
            let out = run_on_path(&f, bin, "perl", &["-e", &code]).await;
            assert!(
                !text(&out.stdout).contains(SECRET) && !text(&out.stdout).contains("outside"),
                "{code}: {}",
                text(&out.stdout)
            );
            assert!(!text(&out.stdout).contains("exists"), "{code}");
        }
        let out = run_on_path(
            &f,
            bin,
            "perl",
            &[
                "-e",
                &format!(
                    "open(F, '<', '{}') or die; print <F>",
                    prefix.join("lib/data.txt").display()
                ),
            ],
        )
        .await;
        assert_eq!(text(&out.stdout), "library data\n", "{}", text(&out.stderr));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_outside_a_bin_folder_is_granted_alone() {
    if !installed("/usr/bin/perl") {
        return;
    }
    let f = Fixture::new();
    // A copy of perl directly in a home, in an application's folder beside its configuration,
    // and in a folder named like a prefix part; each with a secret beside it.
    for folder in ["home", "opt-app", "opt-app/libexec-like"] {
        let folder = f.root.join(folder);
        std::fs::create_dir_all(folder.join("conf")).unwrap();
        std::fs::write(folder.join("conf/db.password"), format!("{SECRET}\n")).unwrap();
        std::fs::write(folder.join("beside.txt"), format!("{SECRET}\n")).unwrap();
        let program = folder.join("report");
        std::fs::copy("/usr/bin/perl", &program).unwrap();
        let reads = [
            folder.join("conf/db.password"),
            folder.join("beside.txt"),
            folder.clone(),
        ];
        for target in &reads {
            let code = format!(
                "if (open(F, '<', pack('H*', '{0}'))) {{ print <F> }} elsif (opendir(D, pack('H*', '{0}'))) {{ print readdir(D) }} else {{ print \"denied: $!\" }}",
                hex(target)
            );
            // By its absolute path, and found on PATH.
            let by_path = exec::run(
                f.request(program.to_str().unwrap(), &["-e", &code])
                    .timeout(Duration::from_secs(20)),
            )
            .await
            .unwrap();
            let on_path = run_on_path(&f, &folder, "report", &["-e", &code]).await;
            for out in [by_path, on_path] {
                let stdout = text(&out.stdout);
                assert!(out.sandboxed);
                assert!(
                    stdout.starts_with("denied"),
                    "{} read {}: {stdout}{}",
                    program.display(),
                    target.display(),
                    text(&out.stderr)
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_and_node_in_a_prefix_do_not_reach_the_prefix() {
    let f = Fixture::new();
    for (program, code) in [
        (
            "/usr/bin/python3.11",
            "import sys\ntry:\n    print(open(sys.argv[1]).read())\nexcept OSError as e: print('denied', e.errno)",
        ),
        (
            "/usr/bin/node",
            "try { console.log(require('fs').readFileSync(process.argv[1], 'utf8')) } catch (e) { console.log('denied', e.code) }",
        ),
    ] {
        if !installed(program) {
            continue;
        }
        let prefix = f.root.join("prefix");
        let _ = std::fs::remove_dir_all(&prefix);
        let prefix = self::prefix(&f, program);
        let name = Path::new(program).file_name().unwrap().to_str().unwrap();
        let secret = prefix.join("outside/secret.txt").display().to_string();
        let flag = if name.starts_with("python") { "-c" } else { "-e" };
        let out = run_on_path(&f, &prefix.join("bin"), name, &[flag, code, &secret]).await;
        assert!(!text(&out.stdout).contains(SECRET), "{program}: {}", text(&out.stdout));
        assert!(text(&out.stdout).contains("denied"), "{program}: {}{}", text(&out.stdout), text(&out.stderr));
    }
}

/// Runs `script` with `sh` under `sandbox`, with `PATH` starting at `first`.
async fn sh_with_path(
    f: &Fixture,
    sandbox: &std::sync::Arc<toolgate_core::Sandbox>,
    first: Option<&Path>,
    script: &str,
) -> ExecOutput {
    let mut request = toolgate_core::ExecRequest::new("/bin/sh", &f.work)
        .args(["-c", script])
        .env(toolgate_core::exec::env::child_environment(&[]))
        .timeout(Duration::from_secs(20))
        .sandbox(std::sync::Arc::clone(sandbox));
    if let Some(first) = first {
        request.env.retain(|(key, _)| key != "PATH");
        request.env.push((
            "PATH".into(),
            format!("{}:/usr/bin:/bin", first.display()).into(),
        ));
    }
    exec::run(request).await.unwrap()
}

/// A `PATH` entry that goes through a symlink inside the work directory grants nothing: a
/// sandboxed process can point that symlink anywhere, before the next sandbox is prepared
/// (then the target would be granted by its real path) or while one is in use (then the view,
/// which follows names when it is built, would mount the new target).
#[tokio::test(flavor = "multi_thread")]
async fn a_path_entry_through_a_symlink_a_process_can_change_grants_nothing() {
    let f = Fixture::new();
    let tools = f.root.join("tools/bin");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("data.txt"), "tool data\n").unwrap();
    std::os::unix::fs::symlink(&tools, f.work.join("binlink")).unwrap();
    let o = f.outside.display();
    // Re-pointed by a call, then used by a sandbox prepared before and by one prepared after.
    let before = f.sandbox(f.policy());
    let out = sh_with_path(&f, &before, Some(&f.work.join("binlink")), "true").await;
    assert!(out.success(), "{}", text(&out.stderr));
    let out = sh_with_path(
        &f,
        &before,
        None,
        &format!("rm binlink && ln -s {o} binlink"),
    )
    .await;
    assert!(out.success(), "{}", text(&out.stderr));
    let after = f.sandbox(f.policy());
    for sandbox in [&before, &after] {
        let out = sh_with_path(
            &f,
            sandbox,
            Some(&f.work.join("binlink")),
            &format!("cat binlink/secret.txt; cat {o}/secret.txt"),
        )
        .await;
        assert!(
            !text(&out.stdout).contains(SECRET),
            "read through the re-pointed PATH entry"
        );
    }
    // Symlinks a call makes and a later call names on its PATH: to a directory outside, by an
    // absolute or a relative target, deeper down, and to /etc.
    for (script, entry) in [
        (format!("ln -s {o} fresh"), "fresh"),
        ("ln -s ../outside relative".to_string(), "relative"),
        (format!("mkdir -p a && ln -s {o} a/b"), "a/b"),
        ("ln -s /etc etc".to_string(), "etc"),
    ] {
        let sandbox = f.sandbox(f.policy());
        let out = sh_with_path(&f, &sandbox, None, &script).await;
        assert!(out.success(), "{script}: {}", text(&out.stderr));
        let entry = f.work.join(entry);
        let sandbox = f.sandbox(f.policy());
        let out = sh_with_path(
            &f,
            &sandbox,
            Some(&entry),
            &format!("cat {0}/secret.txt {0}/shadow", entry.display()),
        )
        .await;
        assert!(!out.success(), "{script}: read {}", text(&out.stdout));
        assert!(!text(&out.stdout).contains(SECRET), "{script}");
        assert!(!text(&out.stdout).contains("root:"), "{script}");
    }
}

/// A `read` or `write` root that goes through a symlink inside a writable directory is refused
/// when the sandbox is prepared; one replaced by such a symlink while a sandbox is in use is not
/// followed by the view (its target does not become writable).
#[tokio::test(flavor = "multi_thread")]
async fn a_root_through_a_symlink_a_process_can_change_is_refused_or_not_followed() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(&f.outside, f.work.join("linked")).unwrap();
    for key in ["read", "write"] {
        let mut policy = f.policy();
        match key {
            "read" => policy.read = vec!["linked".into()],
            _ => policy.write = vec!["linked".into()],
        }
        let err = toolgate_core::Sandbox::prepare(policy).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{key}: {err}");
        assert!(err.to_string().contains("symlink"), "{err}");
    }
    // A real directory as a write root inside the work directory, replaced during use.
    std::fs::create_dir(f.work.join("out")).unwrap();
    let mut policy = f.policy();
    policy.write = vec!["out".into()];
    let sandbox = f.sandbox(policy);
    let o = f.outside.display();
    let out = sh_with_path(&f, &sandbox, None, &format!("rmdir out && ln -s {o} out")).await;
    assert!(out.success(), "{}", text(&out.stderr));
    let out = sh_with_path(
        &f,
        &sandbox,
        None,
        "echo planted > out/planted.txt; cat out/secret.txt",
    )
    .await;
    assert!(
        !f.outside.join("planted.txt").exists(),
        "the symlink's target became writable"
    );
    assert!(!text(&out.stdout).contains(SECRET));
}

/// The same `PATH` entry under a sandbox that may not write the work directory (a read-only
/// toolset, a called worker that narrows to read-only), and under one whose `PATH` entry is in
/// another sandbox's `write` root: the symlink was pointed by a process of the writable one.
#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_another_sandbox_can_change_grants_nothing_either() {
    let f = Fixture::new();
    let tools = f.root.join("tools/bin");
    std::fs::create_dir_all(&tools).unwrap();
    let shared = f.root.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::os::unix::fs::symlink(&tools, f.work.join("binlink")).unwrap();
    std::os::unix::fs::symlink(&tools, shared.join("binlink")).unwrap();
    let o = f.outside.display();
    let mut readonly = f.policy();
    readonly.readonly = true;
    let reader = f.sandbox(readonly.clone());
    let mut sharing = f.policy();
    sharing.write = vec![shared.clone()];
    let writer = f.sandbox(sharing);
    let out = sh_with_path(
        &f,
        &writer,
        None,
        &format!(
            "rm binlink && ln -s {o} binlink && rm {0}/binlink && ln -s {o} {0}/binlink",
            shared.display()
        ),
    )
    .await;
    assert!(out.success(), "{}", text(&out.stderr));
    let mut other = f.policy();
    other.readonly = true;
    for (sandbox, entry) in [
        (&reader, f.work.join("binlink")),
        (&f.sandbox(readonly), f.work.join("binlink")),
        (&f.sandbox(other), shared.join("binlink")),
    ] {
        let out = sh_with_path(
            &f,
            sandbox,
            Some(&entry),
            &format!("cat {}/secret.txt", entry.display()),
        )
        .await;
        assert!(
            !text(&out.stdout).contains(SECRET),
            "{}: read through it",
            entry.display()
        );
    }
}

/// A program found on `PATH` through a symlink a process planted in the work directory
/// (`WORK/bin/cat -> /srv/app/cat`) gets no grant of its own: `/srv/app`, where its target
/// lives with the application's secrets, stays out of the view.
#[tokio::test(flavor = "multi_thread")]
async fn a_program_planted_as_a_symlink_gets_no_grant() {
    let f = Fixture::new();
    let app = f.root.join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::copy("/bin/cat", app.join("cat")).unwrap();
    std::fs::write(app.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    let bin = f.work.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(app.join("cat"), bin.join("cat")).unwrap();
    let secret = app.join("secret.txt");
    let mut request = f
        .request("cat", &[secret.to_str().unwrap()])
        .timeout(Duration::from_secs(20));
    request.env.retain(|(key, _)| key != "PATH");
    request.env.push((
        "PATH".into(),
        format!("{}:/usr/bin:/bin", bin.display()).into(),
    ));
    // Not in the view at all: it does not start (without the rule it ran and read the secret).
    let err = exec::run(request).await.unwrap_err();
    assert_eq!(err.code(), "BINARY_NOT_FOUND", "{err}");
    // A program the work directory holds itself runs as before.
    std::fs::copy("/bin/cat", bin.join("cat2")).unwrap();
    let out = run_on_path(&f, &bin, "cat2", &["in.txt"]).await;
    assert_eq!(
        text(&out.stdout),
        "line one\nline two\n",
        "{}",
        text(&out.stderr)
    );
}
