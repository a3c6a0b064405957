//! The network namespace hook of the egress proxy (issue 24) and of calls without network
//! (issue 22, class 5): a call with the proxy network has a network namespace of its own with
//! only `lo`, toolgate's proxy listening on `127.0.0.1:3128` in it (the listener handed up by
//! the call's init), and can reach a host only through it; everything else fails.

#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::{installed, text, view_available, Fixture};
use toolgate_core::exec::{self, ExecOutput};
use toolgate_core::network::{HostPolicy, NetworkCall, NetworkPolicy};
use toolgate_core::sandbox::NetworkMode;

const PYTHON: &str = "/usr/bin/python3";

/// A web server on the host's 127.0.0.1 answering every request with `hello`; its port.
fn web_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buffer = [0u8; 4096];
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = stream.read(&mut buffer);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                );
            });
        }
    });
    port
}

/// The host policy of the sandbox: only `allow`.
fn hosts(allow: &[&str]) -> NetworkPolicy {
    let allow: Vec<String> = allow.iter().map(|entry| entry.to_string()).collect();
    NetworkPolicy::new(HostPolicy::parse(&allow, &[], None, "sandbox.network").unwrap())
}

async fn run(f: &Fixture, allow: &[&str], program: &str, args: &[&str]) -> ExecOutput {
    let mut policy = f.policy();
    policy.network = NetworkMode::Proxy;
    policy.hosts = Some(hosts(allow));
    let request = f
        .request_with(policy, program, args)
        .timeout(Duration::from_secs(20))
        .network_call(NetworkCall::alone("call-1", "shell"));
    exec::run(request).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_proxy_is_the_only_way_out() {
    if !view_available() || !installed("curl") {
        return;
    }
    let f = Fixture::new();
    let port = web_server();
    let target = format!("http://127.0.0.1:{port}/");

    // Through the proxy, with the host allowed: reached, and recorded.
    let out = run(
        &f,
        &["127.0.0.1"],
        "curl",
        &[
            "-sS",
            "--max-time",
            "10",
            "--proxy",
            "http://127.0.0.1:3128",
            &target,
        ],
    )
    .await;
    assert_eq!(text(&out.stdout), "hello", "{}", text(&out.stderr));
    assert_eq!(out.connections.len(), 1, "{:?}", out.connections);
    assert_eq!(out.connections[0].port, port);

    // Through the proxy, not allowed: the proxy refuses (403) and records it.
    let out = run(
        &f,
        &["example.com"],
        "curl",
        &[
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--proxy",
            "http://127.0.0.1:3128",
            &target,
        ],
    )
    .await;
    assert_eq!(text(&out.stdout), "403");
    assert!(out.connections.iter().all(|record| record.refused()));

    // The proxy variables point there: curl without `--proxy` goes through it too.
    let out = run(
        &f,
        &["127.0.0.1"],
        "curl",
        &["-sS", "--max-time", "10", &target],
    )
    .await;
    assert_eq!(text(&out.stdout), "hello");

    // Direct (the variables ignored): the host's 127.0.0.1 is not in the call's network
    // namespace; other ports of its own lo are refused by Landlock; names do not resolve.
    for args in [
        vec!["-sS", "--max-time", "5", "--noproxy", "*", target.as_str()],
        vec![
            "-sS",
            "--max-time",
            "5",
            "--noproxy",
            "*",
            "http://10.0.0.1/",
        ],
        vec![
            "-sS",
            "--max-time",
            "5",
            "--noproxy",
            "*",
            "http://example.com/",
        ],
    ] {
        let out = run(&f, &["127.0.0.1", "example.com", "10.0.0.1"], "curl", &args).await;
        assert!(!out.success(), "{args:?}: {}", text(&out.stdout));
        assert!(!text(&out.stdout).contains("hello"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_tcp_to_the_proxy_port_and_only_lo() {
    if !view_available() || !installed(PYTHON) {
        return;
    }
    let f = Fixture::new();
    let code = "import socket, errno, sys\n\
         def attempt(what, make):\n\
         \x20   try:\n\
         \x20       make(); print(what, 'worked')\n\
         \x20   except OSError as e:\n\
         \x20       print(what, errno.errorcode.get(e.errno, e.errno))\n\
         attempt('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))\n\
         attempt('udp6', lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))\n\
         attempt('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n\
         attempt('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))\n\
         attempt('bind', lambda: socket.socket().bind(('127.0.0.1', 8080)))\n\
         attempt('connect-other', lambda: socket.create_connection(('127.0.0.1', 8080), 2))\n\
         attempt('connect-proxy', lambda: socket.create_connection(('127.0.0.1', 3128), 2).close())\n\
         attempt('resolve', lambda: socket.getaddrinfo('example.com', 80))\n\
         print('interfaces', sorted(name for _, name in socket.if_nameindex()))\n";
    let out = run(&f, &[], PYTHON, &["-c", code]).await;
    let stdout = text(&out.stdout);
    for expected in [
        "udp EPERM",
        "udp6 EPERM",
        "raw EPERM",
        "packet EPERM",
        "bind EACCES",
        "connect-other EACCES",
        "connect-proxy worked",
        "interfaces ['lo']",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected}: {stdout}{}",
            text(&out.stderr)
        );
    }
    assert!(!stdout.contains("resolve worked"), "{stdout}");
}

/// Without network, a call has a network namespace of its own too: only `lo`, and no host
/// abstract unix socket (a session bus, a container daemon) exists there.
#[tokio::test(flavor = "multi_thread")]
async fn without_network_the_hosts_abstract_sockets_are_not_there() {
    if !view_available() || !installed(PYTHON) {
        return;
    }
    let f = Fixture::new();
    let name = format!("toolgate-test-{}", std::process::id());
    use std::os::linux::net::SocketAddrExt;
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    let code = format!(
        "lines = open('/proc/net/dev').read().splitlines()[2:]\nprint(sorted(line.split(':')[0].strip() for line in lines))\nprint(open('/proc/net/unix').read().count({name:?}))"
    );
    let out = f.run(PYTHON, &["-c", &code]).await;
    assert_eq!(text(&out.stdout), "['lo']\n0\n", "{}", text(&out.stderr));
}

/// Programs the one-shot launcher starts (MCP stdio servers, `toolgate sandbox`) get the
/// proxy network under `enforce`: their own network namespace, whose listener the launcher's
/// init hands over the launch's socket pair (the launcher's descriptor 3). Through the proxy
/// an allowed host is reached and recorded; directly, nothing is.
#[test]
fn a_one_shot_launch_gets_the_proxy_in_a_namespace_of_its_own_under_enforce() {
    if !view_available() || !installed("curl") {
        return;
    }
    use std::os::unix::process::CommandExt;
    use toolgate_core::sandbox_config::{Launch, LaunchOptions};
    let f = Fixture::new();
    let port = web_server();
    let target = format!("http://127.0.0.1:{port}/");
    let options: LaunchOptions = serde_json::from_value(serde_json::json!({
        "workDir": f.work,
        "sandbox": { "network": { "allow": ["127.0.0.1"] } },
    }))
    .unwrap();
    let script = format!(
        "curl -sS --max-time 10 {target}; echo; curl -sS --max-time 5 --noproxy '*' {target} >/dev/null 2>&1 && echo direct || echo no-direct"
    );
    let mut launch = Launch::prepare(options, "/bin/sh", &["-c".into(), script]).unwrap();
    assert!(launch.sandboxed);
    assert!(
        launch.sandbox.warning.is_none(),
        "{:?}",
        launch.sandbox.warning
    );
    let handoff = launch
        .handoff_fd()
        .expect("a handoff socket for the launcher");
    assert!(launch
        .args
        .windows(2)
        .any(|pair| pair[0] == "--proxy-handoff" && pair[1] == "3"));
    let mut command = std::process::Command::new(&launch.file);
    command
        .args(&launch.args)
        .env_clear()
        .envs(launch.env.iter().map(|(name, value)| (name, value)))
        .current_dir(&launch.cwd);
    // SAFETY: dup2 in the forked child before exec (what Node's `stdio[3]` does).
    unsafe {
        command.pre_exec(move || {
            if libc::dup2(handoff, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    launch.close_handoff();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        "hello\nno-direct\n",
        "{}",
        text(&out.stderr)
    );
    let records = launch.finish();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].port, port);
    assert!(!records[0].refused());
}

/// Where the launcher ends without handing its listener over (here: it is given no handoff
/// socket), the proxy's side does not wait for it: the launch finishes at once, with nothing
/// recorded, and the program never ran.
#[test]
fn a_one_shot_launch_without_its_handoff_runs_nothing_and_finishes() {
    if !view_available() {
        return;
    }
    use toolgate_core::sandbox_config::{Launch, LaunchOptions};
    let f = Fixture::new();
    let options: LaunchOptions = serde_json::from_value(serde_json::json!({
        "workDir": f.work,
        "sandbox": { "network": { "allow": ["127.0.0.1"] } },
    }))
    .unwrap();
    let mut launch =
        Launch::prepare(options, "/bin/sh", &["-c".into(), "touch ran".into()]).unwrap();
    let out = std::process::Command::new(&launch.file)
        .args(&launch.args)
        .env_clear()
        .envs(launch.env.iter().map(|(name, value)| (name, value)))
        .current_dir(&launch.cwd)
        .output()
        .unwrap();
    launch.close_handoff();
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(!f.work.join("ran").exists());
    assert!(launch.finish().is_empty());
}
