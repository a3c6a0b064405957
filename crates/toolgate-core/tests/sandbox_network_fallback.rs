//! `exec` where no launcher server can run (here: a launcher that refuses `--serve`) starts its
//! calls through the one-shot launcher: a network-by-host call still gets its own network
//! namespace, whose listener the launcher's init hands over the handoff socket pair. (One test
//! in this binary: it points the launcher variable at the refusing launcher.)

#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use common::{installed, launcher, text, view_available, Fixture};
use toolgate_core::exec::{self, env, ExecRequest};
use toolgate_core::network::{HostPolicy, NetworkCall, NetworkPolicy};
use toolgate_core::sandbox::{NetworkMode, Sandbox, LAUNCHER_ENV};

/// A web server on the host's 127.0.0.1 answering every request with `hello`; its port.
fn web_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buffer = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.read(&mut buffer);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_launcher_server_a_call_hands_its_listener_over_the_one_shot_launcher() {
    if !view_available() || !installed("curl") {
        return;
    }
    let real = launcher().to_path_buf();
    let f = Fixture::new();
    let refusing = f.root.join("launcher-without-server");
    std::fs::write(
        &refusing,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --serve ]; then echo 'no server here' >&2; exit 1; fi\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&refusing, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var(LAUNCHER_ENV, &refusing) };

    let port = web_server();
    let target = format!("http://127.0.0.1:{port}/");
    let mut policy = f.policy();
    policy.network = NetworkMode::Proxy;
    let allow = vec!["127.0.0.1".to_string()];
    policy.hosts = Some(NetworkPolicy::new(
        HostPolicy::parse(&allow, &[], None, "sandbox.network").unwrap(),
    ));
    let sandbox = Arc::new(Sandbox::prepare(policy).unwrap());
    assert_eq!(sandbox.launcher(), Some(refusing.as_path()));
    assert!(sandbox.proxy_in_namespace());
    let script = format!(
        "curl -sS --max-time 10 {target}; echo; curl -sS --max-time 5 --noproxy '*' {target} >/dev/null 2>&1 && echo direct || echo no-direct; echo sockets=$(ls -l /proc/$$/fd | grep -c socket)"
    );
    let request = ExecRequest::new("/bin/sh", &f.work)
        .args(["-c", script.as_str()])
        .env(env::child_environment(&[]))
        .timeout(Duration::from_secs(30))
        .sandbox(Arc::clone(&sandbox))
        .network_call(NetworkCall::alone("call-1", "shell"));
    let out = exec::run(request).await.unwrap();
    assert_eq!(
        text(&out.stdout),
        "hello\nno-direct\nsockets=0\n",
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.connections.len(), 1, "{:?}", out.connections);
    assert_eq!(out.connections[0].port, port);

    // The call's private HOME and TMPDIR work through the one-shot launcher too (toolgate
    // makes the directory for it; the launcher server would make it itself).
    let request = ExecRequest::new("/bin/sh", &f.work)
        .args([
            "-c",
            "echo h > \"$HOME/h\" && echo t > \"$TMPDIR/t\" && cat \"$HOME/h\" \"$TMPDIR/t\"",
        ])
        .env(env::child_environment(&[]))
        .timeout(Duration::from_secs(30))
        .sandbox(Arc::clone(&sandbox))
        .network_call(NetworkCall::alone("call-2", "shell"));
    let out = exec::run(request).await.unwrap();
    assert_eq!(text(&out.stdout), "h\nt\n", "{}", text(&out.stderr));
}
