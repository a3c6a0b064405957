//! The policy knobs: network off by default and on with `network: true`, `readonly`, the
//! `read`/`write` roots, and the private HOME/TMPDIR of each call.

#![cfg(target_os = "linux")]

mod common;

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use common::{installed, text, Fixture};
use toolgate_core::exec;

const PYTHON: &str = "/usr/bin/python3";

/// Programs that try to reach 127.0.0.1:`port` over TCP.
fn tcp_clients(port: u16) -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("bash", vec!["-c".into(), format!("echo hello > /dev/tcp/127.0.0.1/{port}")]),
        (PYTHON, vec!["-c".into(), format!("import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3); s.sendall(b'hello')")]),
        ("curl", vec!["-s".into(), "-m".into(), "3".into(), "--data".into(), "hello".into(), format!("http://127.0.0.1:{port}/")]),
        (PYTHON, vec!["-c".into(), format!("import socket; s = socket.socket(socket.AF_INET6); s.connect(('::ffff:127.0.0.1', {port}))")]),
    ]
}

/// Programs that send a UDP datagram to 127.0.0.1:`port`.
fn udp_clients(port: u16) -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("bash", vec!["-c".into(), format!("echo hello > /dev/udp/127.0.0.1/{port}")]),
        (PYTHON, vec!["-c".into(), format!("import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'hello', ('127.0.0.1', {port}))")]),
    ]
}

fn accepted(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Ok((mut stream, _)) => {
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let mut buf = [0u8; 5];
            stream.read_exact(&mut buf).is_ok()
        }
        Err(_) => false,
    }
}

fn received(socket: &UdpSocket) -> bool {
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 16];
    socket.recv(&mut buf).is_ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_and_udp_to_localhost_fail_by_default_and_work_with_network() {
    let f = Fixture::new();
    for network in [false, true] {
        let mut policy = f.policy();
        policy.network = toolgate_core::sandbox::NetworkMode::from_bool(network);
        for index in 0..tcp_clients(0).len() {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let (program, args) = tcp_clients(port).swap_remove(index);
            if !installed(program) {
                continue;
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            if args.iter().any(|a| a.contains("AF_INET6")) && network {
                continue; // IPv6 may be off on the machine; the refusal is what matters
            }
            let out = exec::run(f.request_with(policy.clone(), program, &args))
                .await
                .unwrap();
            let reached = accepted(&listener);
            assert_eq!(
                reached,
                network,
                "{program} {args:?} (network: {network}): exit {:?} {}",
                out.exit_code,
                text(&out.stderr)
            );
            if !network {
                assert_ne!(
                    out.exit_code,
                    Some(0),
                    "{program}: a refusal is a failure of the program"
                );
            }
        }
        for index in 0..udp_clients(0).len() {
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let port = socket.local_addr().unwrap().port();
            let (program, args) = udp_clients(port).swap_remove(index);
            if !installed(program) {
                continue;
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = exec::run(f.request_with(policy.clone(), program, &args))
                .await
                .unwrap();
            assert_eq!(
                received(&socket),
                network,
                "{program} {args:?} (network: {network}): {}",
                text(&out.stderr)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unix_sockets_of_host_services_cannot_be_reached_without_network() {
    let f = Fixture::new();
    if !installed(PYTHON) {
        return;
    }
    // A service outside the sandbox listening on a path socket and on an abstract socket.
    let path = f.outside.join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = format!(
        "import socket\nfor address in ['{}', '\\0toolgate-test-{}']:\n    s = socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(address); print('connected', repr(address))\n    except OSError as e:\n        print('refused', e.errno)\n",
        path.display(),
        std::process::id()
    );
    let out = f.run(PYTHON, &["-c", &script]).await;
    let report = text(&out.stdout);
    assert!(!report.contains("connected"), "{report}");
    assert_eq!(
        report.matches("refused").count(),
        2,
        "{report}{}",
        text(&out.stderr)
    );
    assert!(listener.accept().is_err());
    // Inside the sandbox, socketpair still works (programs use it for their own children).
    let out = f
        .run(
            PYTHON,
            &[
                "-c",
                "import socket; a, b = socket.socketpair(); a.send(b'x'); print(b.recv(1))",
            ],
        )
        .await;
    assert_eq!(text(&out.stdout).trim(), "b'x'", "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn readonly_makes_the_work_directory_read_only_for_programs() {
    let f = Fixture::new();
    let mut policy = f.policy();
    policy.readonly = true;
    for script in [
        "touch new.txt",
        "echo x >> in.txt",
        "rm in.txt",
        "mkdir d",
        "mv in.txt moved.txt",
        "ln -s in.txt link",
        ": > in.txt",
    ] {
        let out = exec::run(f.request_with(policy.clone(), "/bin/sh", &["-c", script]))
            .await
            .unwrap();
        assert_ne!(
            out.exit_code,
            Some(0),
            "{script} succeeded in a read-only work dir"
        );
    }
    assert_eq!(common::listing(&f.work), ["in.txt"]);
    assert_eq!(
        std::fs::read_to_string(f.work.join("in.txt")).unwrap(),
        "line one\nline two\n"
    );
    // Reading still works, and so does the private TMPDIR.
    let out = exec::run(f.request_with(
        policy,
        "/bin/sh",
        &[
            "-c",
            "cat in.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
        ],
    ))
    .await
    .unwrap();
    assert_eq!(
        text(&out.stdout),
        "line one\nline two\nt\n",
        "{}",
        text(&out.stderr)
    );
    // Without readonly the same touch works.
    let out = f.sh("touch new.txt").await;
    assert!(out.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn read_and_write_roots_widen_the_policy() {
    let f = Fixture::new();
    let secret = f.secret();
    let out = f.run("cat", &[&secret]).await;
    assert_ne!(out.exit_code, Some(0));
    let mut policy = f.policy();
    policy.read = vec!["../outside".into()];
    policy.write = vec![f.root.join("outside")];
    let script = "cat ../outside/secret.txt && echo w > ../outside/new.txt";
    let out = exec::run(f.request_with(policy.clone(), "/bin/sh", &["-c", script]))
        .await
        .unwrap();
    assert!(out.success(), "{}", text(&out.stderr));
    assert!(f.outside.join("new.txt").exists());
    // A read root is not writable, and the secret next to it stays closed.
    policy.write.clear();
    let out = exec::run(f.request_with(
        policy,
        "/bin/sh",
        &[
            "-c",
            &format!("echo w > ../outside/other.txt; cat {secret}"),
        ],
    ))
    .await
    .unwrap();
    assert_ne!(out.exit_code, Some(0));
    assert!(!f.outside.join("other.txt").exists());
    assert!(!text(&out.stdout).contains(common::SECRET));
}

#[tokio::test(flavor = "multi_thread")]
async fn each_call_gets_a_private_home_and_tmpdir_that_are_removed() {
    let f = Fixture::new();
    let script = r#"printf '%s\n%s\n' "$HOME" "$TMPDIR"; ls -A "$HOME" "$TMPDIR"; touch "$HOME/.h" "$TMPDIR/t" && mkdir -p "$XDG_CONFIG_HOME/app" "$XDG_CACHE_HOME" && echo writable; env | grep -c '^XDG_'"#;
    let first = f.sh(script).await;
    let second = f.sh(script).await;
    let lines: Vec<String> = text(&first.stdout).lines().map(String::from).collect();
    let (home, tmp) = (&lines[0], &lines[1]);
    assert!(
        text(&first.stdout).contains("writable"),
        "{}",
        text(&first.stderr)
    );
    assert_eq!(
        lines.last().unwrap(),
        "4",
        "XDG_CONFIG/CACHE/DATA/STATE_HOME are set"
    );
    assert!(!home.starts_with(&f.work.display().to_string()));
    assert_ne!(
        text(&first.stdout),
        text(&second.stdout),
        "calls share a HOME"
    );
    let root = std::path::Path::new(home).parent().unwrap();
    assert_eq!(std::path::Path::new(tmp).parent().unwrap(), root);
    assert!(!root.exists(), "{} outlived its call", root.display());
    // A timed-out call's directory goes too.
    let request = f
        .request("/bin/sh", &["-c", "echo $HOME; touch $TMPDIR/x; sleep 30"])
        .timeout(Duration::from_millis(500));
    let out = exec::run(request).await.unwrap();
    assert!(out.timed_out);
    let home = text(&out.stdout);
    assert!(!std::path::Path::new(home.trim()).exists());
}

#[test]
fn the_launcher_reports_what_the_kernel_offers() {
    let f = Fixture::new();
    let sandbox = f.sandbox(f.policy());
    let support = sandbox.kernel_support();
    assert!(support.landlock_abi >= 1 && support.seccomp, "{support:?}");
    assert!(sandbox.warnings().is_empty(), "{:?}", sandbox.warnings());
    assert!(sandbox.confines());
    let probe = sandbox.probe().unwrap();
    assert!(probe.pid_namespace, "no PID namespace available");
    eprintln!(
        "landlock ABI {}, user namespaces {}, view {:?}, limits by {}",
        support.landlock_abi, probe.user_namespaces, probe.view, probe.cgroups
    );
}
