//! Attack tests: each example of issue 12 run as the real program through `exec` under the
//! default sandbox policy, with a secret next to the work directory. Several variants per
//! class; a denial must be the program's own failure (a result, not an error).

#![cfg(target_os = "linux")]

mod common;

use common::{denial, installed, text, Fixture, SECRET};

#[tokio::test(flavor = "multi_thread")]
async fn find_exec_cannot_read_or_write_outside() {
    let f = Fixture::new();
    let secret = f.secret();
    let outside = f.outside.display().to_string();
    let variants: Vec<Vec<String>> = vec![
        vec![
            ".".into(),
            "-maxdepth".into(),
            "0".into(),
            "-exec".into(),
            "cat".into(),
            secret.clone(),
            ";".into(),
        ],
        vec![
            "..".into(),
            "-maxdepth".into(),
            "1".into(),
            "-name".into(),
            "secret.txt".into(),
            "-exec".into(),
            "cat".into(),
            "{}".into(),
            "+".into(),
        ],
        vec![
            outside.clone(),
            "-type".into(),
            "f".into(),
            "-exec".into(),
            "cat".into(),
            "{}".into(),
            ";".into(),
        ],
        vec![
            ".".into(),
            "-maxdepth".into(),
            "0".into(),
            "-exec".into(),
            "cp".into(),
            secret.clone(),
            "./stolen".into(),
            ";".into(),
        ],
        vec![
            ".".into(),
            "-maxdepth".into(),
            "0".into(),
            "-fprint".into(),
            format!("{outside}/written"),
        ],
        vec![
            ".".into(),
            "-maxdepth".into(),
            "0".into(),
            "-exec".into(),
            "touch".into(),
            format!("{outside}/touched"),
            ";".into(),
        ],
    ];
    for args in variants {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = f.run("find", &args).await;
        f.assert_confined(&format!("find {args:?}"), &out);
    }
    assert!(!f.work.join("stolen").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn awk_system_and_getline_cannot_reach_outside() {
    let f = Fixture::new();
    let secret = f.secret();
    let outside = f.outside.display();
    let programs = [
        format!(r#"BEGIN {{ system("cat {secret}") }}"#),
        format!(r#"BEGIN {{ while ((getline line < "{secret}") > 0) print line }}"#),
        r#"BEGIN { while ((getline line < "../secret.txt") > 0) print line }"#.to_string(),
        format!(r#"BEGIN {{ "cat {secret}" | getline line; print line }}"#),
        format!(r#"BEGIN {{ print "x" > "{outside}/written" }}"#),
        format!(r#"BEGIN {{ system("touch {outside}/touched; cp {secret} ./stolen") }}"#),
    ];
    for program in &programs {
        let out = f.run("awk", &[program]).await;
        f.assert_confined(&format!("awk {program}"), &out);
    }
    assert!(!f.work.join("stolen").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn sed_r_w_and_e_cannot_reach_outside() {
    let f = Fixture::new();
    let secret = f.secret();
    let outside = f.outside.display();
    let scripts = [
        format!("r {secret}"),
        "r ../secret.txt".to_string(),
        format!("1R {secret}"),
        format!("w {outside}/written"),
        format!("s/one/x/w {outside}/written2"),
        format!("1e cat {secret}"),
        format!("s/.*/cat {}/e", secret.replace('/', "\\/")),
    ];
    for script in &scripts {
        let out = f.run("sed", &[script.as_str(), "in.txt"]).await;
        f.assert_confined(&format!("sed {script}"), &out);
    }
    let out = f.run("sed", &["-i", "s/TOP/XXX/", &secret]).await;
    f.assert_confined("sed -i on the secret", &out);
}

#[tokio::test(flavor = "multi_thread")]
async fn tar_to_command_absolute_members_and_file_lists_stay_inside() {
    let f = Fixture::new();
    if !installed("tar") {
        return;
    }
    let secret = f.secret();
    let outside = f.outside.display().to_string();
    // An archive made outside the sandbox with an absolute member that lands next to the work
    // directory, and an ordinary one.
    let payload = f.root.join("outside/payload");
    std::fs::write(&payload, "payload").unwrap();
    let status = std::process::Command::new("tar")
        .args([
            "-cPf",
            f.work.join("evil.tar").to_str().unwrap(),
            payload.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(&payload).unwrap();
    let status = std::process::Command::new("tar")
        .args(["-cf", "plain.tar", "in.txt"])
        .current_dir(&f.work)
        .status()
        .unwrap();
    assert!(status.success());

    let variants: Vec<Vec<String>> = vec![
        vec!["-xPf".into(), "evil.tar".into()],
        vec!["-xf".into(), "evil.tar".into(), "-P".into()],
        vec![
            "-xf".into(),
            "plain.tar".into(),
            format!("--to-command=cat {secret}"),
        ],
        vec![
            "-xf".into(),
            "plain.tar".into(),
            format!("--to-command=sh -c 'cp {secret} {outside}/stolen'"),
        ],
        vec![
            "-xf".into(),
            "plain.tar".into(),
            "-C".into(),
            outside.clone(),
        ],
        vec!["-cf".into(), format!("{outside}/out.tar"), "in.txt".into()],
        vec!["-cf".into(), "-".into(), "-P".into(), secret.clone()],
        vec![
            "--checkpoint=1".into(),
            format!("--checkpoint-action=exec=cat {secret}"),
            "-cf".into(),
            "/dev/null".into(),
            "in.txt".into(),
        ],
    ];
    for args in variants {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = f.run("tar", &args).await;
        f.assert_confined(&format!("tar {args:?}"), &out);
    }
    // File lists read from stdin: `tar -T -` and `sort --files0-from=-`.
    for list in [format!("{secret}\n"), "../secret.txt\n".to_string()] {
        let request = f
            .request("tar", &["-cf", "-", "-P", "-T", "-"])
            .stdin(list.clone());
        let out = toolgate_core::exec::run(request).await.unwrap();
        f.assert_confined("tar -T -", &out);
        let request = f
            .request("sort", &["--files0-from=-"])
            .stdin(list.trim_end().to_string() + "\0");
        let out = toolgate_core::exec::run(request).await.unwrap();
        f.assert_confined("sort --files0-from=-", &out);
        assert_ne!(
            out.exit_code,
            Some(0),
            "sort read a file outside: {}",
            text(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_does_not_follow_a_symlink_out() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(&f.outside, f.work.join("link")).unwrap();
    std::os::unix::fs::symlink(f.root.join("secret.txt"), f.work.join("file-link")).unwrap();
    std::os::unix::fs::symlink("/", f.work.join("root-link")).unwrap();
    for args in [
        vec!["-R", "TOP-SECRET", "."],
        vec!["-r", "TOP-SECRET", "link/"],
        vec!["TOP-SECRET", "file-link"],
        vec!["-R", "TOP-SECRET", "root-link/tmp"],
        vec!["-R", "--include=secret.txt", "TOP", "link", "file-link"],
    ] {
        let out = f.run("grep", &args).await;
        f.assert_confined(&format!("grep {args:?}"), &out);
    }
    for args in [vec!["link/secret.txt"], vec!["file-link"]] {
        let out = f.run("cat", &args).await;
        f.assert_confined(&format!("cat {args:?}"), &out);
        assert_ne!(out.exit_code, Some(0));
        assert!(
            text(&out.stderr).contains(denial()),
            "{}",
            text(&out.stderr)
        );
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_git_file_pointing_outside_reads_nothing() {
    let f = Fixture::new();
    if !installed("git") {
        return;
    }
    let repo = f.outside.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), format!("{SECRET}\n")).unwrap();
    git(&repo, &["add", "notes.txt"]);
    git(&repo, &["commit", "-qm", "secret"]);
    std::fs::write(
        f.work.join(".git"),
        format!("gitdir: {}/.git\n", repo.display()),
    )
    .unwrap();
    for args in [
        vec!["log", "-p"],
        vec!["show", "HEAD:notes.txt"],
        vec!["cat-file", "-p", "HEAD:notes.txt"],
        vec![
            "--git-dir",
            "../outside/repo/.git",
            "show",
            "HEAD:notes.txt",
        ],
        vec!["-C", "../outside/repo", "grep", "TOP"],
    ] {
        let out = f.run("git", &args).await;
        // The outside repository holds files now, so compare only what must not change.
        assert!(out.sandboxed);
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(!all.contains(SECRET), "git {args:?} leaked: {all}");
        assert_ne!(out.exit_code, Some(0), "git {args:?}: {all}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn core_fsmonitor_in_a_repository_runs_only_inside_the_sandbox() {
    let f = Fixture::new();
    if !installed("git") {
        return;
    }
    git(&f.work, &["init", "-q"]);
    let secret = f.secret();
    let outside = f.outside.display();
    for (index, hook) in [
        format!("cat {secret} > leak-a; false"),
        format!("touch {outside}/pwned; false"),
        format!("cp {secret} {outside}/copy; false"),
        format!("cat /proc/{}/environ > leak-b; false", std::process::id()),
    ]
    .iter()
    .enumerate()
    {
        git(&f.work, &["config", "core.fsmonitor", hook]);
        let out = f.run("git", &["status", "--porcelain"]).await;
        f.assert_confined(&format!("fsmonitor hook {index}: {hook}"), &out);
        for leak in ["leak-a", "leak-b"] {
            let leaked = std::fs::read_to_string(f.work.join(leak)).unwrap_or_default();
            assert!(
                !leaked.contains(SECRET) && !leaked.contains("TOOLGATE_"),
                "{hook}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn perl_and_python_cannot_read_write_or_spawn_outside() {
    let f = Fixture::new();
    let secret = f.secret();
    let outside = f.outside.display();
    if installed("perl") {
        for program in [
            format!(r#"open(my $h, "<", "{secret}") or die "no: $!"; print <$h>;"#),
            r#"open(my $h, "<", "../secret.txt") or die "no: $!"; print <$h>;"#.to_string(),
            format!(r#"open(my $h, ">", "{outside}/written") or die "no: $!"; print $h "x";"#),
            format!(r#"system("cat", "{secret}"); exec("cat", "{secret}")"#),
            format!(r#"print `cat {secret}`"#),
            format!(
                r#"symlink("{secret}", "l") or die; open(my $h, "<", "l") or die "no: $!"; print <$h>"#
            ),
        ] {
            let out = f.run("perl", &["-e", &program]).await;
            f.assert_confined(&format!("perl -e {program}"), &out);
        }
    }
    let python = "/usr/bin/python3";
    if installed(python) {
        for program in [
            format!("print(open('{secret}').read())"),
            "print(open('../secret.txt').read())".to_string(),
            format!("open('{outside}/written', 'w').write('x')"),
            format!("import os; os.system('cat {secret}')"),
            format!("import subprocess; print(subprocess.run(['cat', '{secret}'], capture_output=True).stdout)"),
            format!("import os; os.link('{secret}', 'hard')"),
            format!("import os; os.rename('{secret}', 'moved')"),
            format!("import shutil; shutil.copy('{secret}', 'copied')"),
        ] {
            let out = f.run(python, &["-c", &program]).await;
            f.assert_confined(&format!("python3 -c {program}"), &out);
            if !program.contains("system") && !program.contains("subprocess") {
                assert_ne!(out.exit_code, Some(0), "{program}: {}", text(&out.stderr));
            }
        }
    }
    for name in ["hard", "moved", "copied", "l"] {
        // Only regular files: a symlink the program made is harmless, following it here is not.
        let path = f.work.join(name);
        if !std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_file()) {
            continue;
        }
        let content = std::fs::read_to_string(&path).unwrap();
        assert!(!content.contains(SECRET), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_parents_environment_and_memory_are_not_readable() {
    let f = Fixture::new();
    // SAFETY: a name no other test reads.
    unsafe { std::env::set_var("TOOLGATE_SANDBOX_PARENT_SECRET", SECRET) };
    let me = std::process::id();
    let scripts = [
        format!("cat /proc/{me}/environ"),
        format!("tr '\\0' '\\n' < /proc/{me}/environ"),
        format!("head -c 100000 /proc/{me}/mem"),
        format!("cat /proc/{me}/maps | head -3; ls -l /proc/{me}/fd; readlink /proc/{me}/cwd"),
        "for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null; done".to_string(),
        "cat /proc/1/environ".to_string(),
    ];
    for script in &scripts {
        let out = f.sh(script).await;
        f.assert_confined(script, &out);
    }
    if installed("ps") {
        for args in [vec!["eww"], vec!["axeww"], vec!["-eo", "pid,args", "e"]] {
            let out = f.run("ps", &args).await;
            f.assert_confined(&format!("ps {args:?}"), &out);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn writing_to_tmp_outside_the_private_directory_fails() {
    let f = Fixture::new();
    let name = format!("/tmp/toolgate-sandbox-escape-{}", std::process::id());
    for script in [
        format!("touch {name}"),
        format!("echo x > {name}"),
        format!("mkdir {name}"),
        "mktemp -p /tmp".to_string(),
        format!("ln -s /etc/passwd {name}"),
        format!(
            "cp in.txt {name}; cp in.txt /var/tmp/{}",
            name.trim_start_matches("/tmp/")
        ),
    ] {
        let out = f.sh(&script).await;
        f.assert_confined(&script, &out);
        assert_ne!(out.exit_code, Some(0), "{script}");
        assert!(
            !std::path::Path::new(&name).exists(),
            "{script} wrote {name}"
        );
    }
    // The private TMPDIR is where temporary files go, and that works.
    let out = f.sh(r#"t=$(mktemp) && echo ok > "$t" && cat "$t""#).await;
    assert_eq!(text(&out.stdout), "ok\n", "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_users_home_and_root_are_not_readable() {
    let f = Fixture::new();
    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    for script in [
        format!("ls -a {real_home}"),
        format!("cat {real_home}/.bashrc {real_home}/.profile"),
        "ls /root".to_string(),
        "cat /root/.bash_history".to_string(),
        "ls /home".to_string(),
        "cat /etc/shadow".to_string(),
        "ls ~".to_string(),
    ] {
        let out = f.sh(&script).await;
        f.assert_confined(&script, &out);
        if !script.contains('~') {
            assert_ne!(out.exit_code, Some(0), "{script}: {}", text(&out.stdout));
        }
    }
}

/// The control for every attack above: the same programs work on the work directory, so
/// the attacks fail because of the sandbox, not because the programs cannot start.
#[tokio::test(flavor = "multi_thread")]
async fn the_same_programs_work_inside_the_work_directory() {
    let f = Fixture::new();
    let mut checks: Vec<(&str, Vec<&str>, &str)> = vec![
        ("find", vec![".", "-name", "in.txt", "-exec", "cat", "{}", ";"], "line one"),
        ("awk", vec![r#"BEGIN { system("cat in.txt") }"#], "line one"),
        ("awk", vec![r#"BEGIN { while ((getline l < "in.txt") > 0) print l }"#], "line two"),
        ("sed", vec!["1r in.txt", "in.txt"], "line one\nline one"),
        ("sed", vec!["1e echo from-e", "in.txt"], "from-e"),
        ("grep", vec!["-R", "two", "."], "line two"),
        ("sh", vec!["-c", "tar -cf a.tar in.txt && tar -xOf a.tar --to-command=cat"], "line one"),
        ("sh", vec!["-c", "printf 'in.txt\\0' | sort --files0-from=-"], "line one"),
        ("perl", vec!["-e", r#"open(my $h, "<", "in.txt") or die; print <$h>; system("echo", "spawned")"#], "spawned"),
        ("/usr/bin/python3", vec!["-c", "import subprocess; print(open('in.txt').read()); subprocess.run(['echo', 'py-spawned'])"], "py-spawned"),
        ("ps", vec!["-o", "args"], "ps -o args"),
        ("git", vec!["--version"], "git version"),
    ];
    checks.retain(|(program, _, _)| installed(program));
    for (program, args, expected) in checks {
        let out = f.run(program, &args).await;
        let stdout = text(&out.stdout);
        assert!(
            out.success() && stdout.contains(expected),
            "{program} {args:?}: exit {:?}\nstdout: {stdout}\nstderr: {}",
            out.exit_code,
            text(&out.stderr)
        );
        assert!(out.sandboxed);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_is_the_programs_own_error() {
    let f = Fixture::new();
    let out = f.run("cat", &[&f.secret()]).await;
    assert_eq!(out.exit_code, Some(1));
    assert!(
        text(&out.stderr).contains(denial()),
        "{}",
        text(&out.stderr)
    );
    assert!(out.sandboxed);
}
