//! Real clients through the proxy: curl, Python's urllib and a raw socket, git (dumb HTTP over
//! http and https), Node's fetch. Each gets only the proxy variables, as a sandboxed process
//! will; every server is on 127.0.0.1 and every name resolves through the test table.
//!
//! What each client needs (the launcher sets all of it):
//! - curl and git (libcurl): `http_proxy` (lower case; curl ignores `HTTP_PROXY`),
//!   `https_proxy`/`HTTPS_PROXY`, `ALL_PROXY=socks5h://…`, `NO_PROXY` empty.
//! - Python's urllib (and pip): `http_proxy`, `https_proxy` (either case).
//! - Node ≥ 24 (and 22.21): `NODE_USE_ENV_PROXY=1` with `HTTP_PROXY`/`HTTPS_PROXY` makes the
//!   built-in `fetch` and `http` use the proxy. Node 20's `fetch` ignores proxy variables: a
//!   program must install undici's `EnvHttpProxyAgent` (tested here) or it gets a clean
//!   refusal inside the sandbox, where no direct connection works.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::support::*;
use crate::network::{DecidedBy, Decision, Protocol};

#[test]
fn curl_reaches_an_allowed_host_over_http_and_https() {
    let web = Web::start();
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("file.txt"), "served over tls").unwrap();
    let tls = StaticServer::start(files.path(), true);
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let home = tempfile::tempdir().unwrap();

    let plain = run(client("curl", call.local_addr(), home.path()).args([
        "-q",
        "-sS",
        &format!("http://web.test:{}/hello", web.port),
    ]));
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert_eq!(text(&plain.stdout), "hello from web");

    let secure = run(client("curl", call.local_addr(), home.path())
        .args(["-q", "-sS", "--cacert"])
        .arg(&certificate().cert)
        .arg(format!("https://web.test:{}/file.txt", tls.port)));
    assert!(secure.status.success(), "{}", text(&secure.stderr));
    assert_eq!(text(&secure.stdout), "served over tls");

    let records = finish(call);
    assert_eq!(records.len(), 2, "{records:?}");
    let http = &records[0];
    assert_eq!(
        (http.protocol, http.decision, http.decided_by),
        (Protocol::Http, Decision::Allowed, DecidedBy::Rule)
    );
    assert_eq!(http.rule.as_deref(), Some("web.test"));
    assert_eq!((http.host.as_str(), http.port), ("web.test", web.port));
    assert!(
        http.bytes_up > 0 && http.bytes_down > "hello from web".len() as u64,
        "{http:?}"
    );
    let tunnel = &records[1];
    assert_eq!(
        (tunnel.protocol, tunnel.decision),
        (Protocol::Connect, Decision::Allowed)
    );
    assert_eq!(
        tunnel.address.as_deref(),
        Some(format!("127.0.0.1:{}", tls.port).as_str())
    );
    // TLS both ways: a handshake and the file, more than the file alone.
    assert!(
        tunnel.bytes_up > 200 && tunnel.bytes_down > 500,
        "{tunnel:?}"
    );
    // The server saw the request the proxy made, not the proxy request.
    let seen = web.requests();
    assert!(
        seen[0].starts_with("GET /hello HTTP/1.1\r\n"),
        "{}",
        seen[0]
    );
    assert!(seen[0].contains("Connection: close"), "{}", seen[0]);
}

#[test]
fn a_port_not_allowed_is_refused_with_the_host_named() {
    let web = Web::start();
    let other = Web::start();
    let proxy = proxy();
    let call = serve(
        &proxy,
        json!({ "allow": [format!("web.test:{}", web.port), "127.0.0.1"] }),
    );
    let home = tempfile::tempdir().unwrap();

    let allowed = run(client("curl", call.local_addr(), home.path()).args([
        "-q",
        "-sS",
        &format!("http://web.test:{}/hello", web.port),
    ]));
    assert_eq!(text(&allowed.stdout), "hello from web");

    let refused = run(client("curl", call.local_addr(), home.path()).args([
        "-q",
        "-s",
        "-w",
        "\n%{http_code}",
        &format!("http://web.test:{}/hello", other.port),
    ]));
    let out = text(&refused.stdout);
    assert!(out.ends_with("\n403"), "{out}");
    assert!(
        out.contains(&format!(
            "toolgate: connection to web.test:{0} refused: web.test:{0} is not in network.allow",
            other.port
        )),
        "{out}"
    );
    let tunnel = run(client("curl", call.local_addr(), home.path()).args([
        "-q",
        "-sS",
        &format!("https://web.test:{}/", other.port),
    ]));
    assert!(!tunnel.status.success());
    assert!(
        text(&tunnel.stderr).contains("403"),
        "{}",
        text(&tunnel.stderr)
    );
    assert_eq!(
        other.connections(),
        0,
        "the refused port was never connected to"
    );

    let records = finish(call);
    let refused: Vec<_> = records.iter().filter(|record| record.refused()).collect();
    assert_eq!(refused.len(), 2, "{records:?}");
    for record in refused {
        assert_eq!(
            (record.host.as_str(), record.port),
            ("web.test", other.port)
        );
        assert_eq!(record.decided_by, DecidedBy::Policy);
        assert!(
            record.message.as_deref().unwrap().contains("network.allow"),
            "{record:?}"
        );
    }
}

#[test]
fn python_urllib_uses_the_proxy_for_http_and_https() {
    let web = Web::start();
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("data.json"), r#"{"ok": true}"#).unwrap();
    let tls = StaticServer::start(files.path(), true);
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["*.test", "127.0.0.1"] }));
    let home = tempfile::tempdir().unwrap();
    let script = r#"
import ssl, sys, urllib.request, urllib.error
plain = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
context = ssl.create_default_context(cafile=sys.argv[3])
secure = urllib.request.urlopen(sys.argv[2], timeout=10, context=context).read().decode()
try:
    urllib.request.urlopen(sys.argv[4], timeout=10)
    refused = "not refused"
except urllib.error.HTTPError as error:
    refused = f"{error.code} {error.read().decode().strip()}"
print(plain, secure, refused, sep="\n")
"#;
    let out = run(client("python3", call.local_addr(), home.path())
        .arg("-c")
        .arg(script)
        .arg(format!("http://web.test:{}/hello", web.port))
        .arg(format!("https://web.test:{}/data.json", tls.port))
        .arg(&certificate().cert)
        .arg(format!("http://private.test:{}/hello", web.port)));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "hello from web");
    assert_eq!(lines[1], r#"{"ok": true}"#);
    assert!(
        lines[2].starts_with("403 toolgate: connection to private.test:"),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].contains("private.test resolves to 10.0.0.5, a private address"),
        "{}",
        lines[2]
    );
    let records = finish(call);
    assert_eq!(
        records.iter().filter(|record| record.refused()).count(),
        1,
        "{records:?}"
    );
}

#[test]
fn raw_tcp_goes_through_socks5() {
    let web = Web::start();
    let echo = Echo::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["*.test", "127.0.0.1"] }));
    let home = tempfile::tempdir().unwrap();

    let curl = run(client("curl", call.local_addr(), home.path()).args([
        "-q",
        "-sS",
        "--socks5-hostname",
        &call.local_addr().to_string(),
        &format!("http://web.test:{}/hello", web.port),
    ]));
    assert!(curl.status.success(), "{}", text(&curl.stderr));
    assert_eq!(text(&curl.stdout), "hello from web");

    // A tiny SOCKS5 client in Python: a raw TCP service, then a refused one.
    let script = r#"
import socket, struct, sys
def socks(host, port):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    name = host.encode()
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", port))
    reply = s.recv(10)
    return s, reply[1]
s, code = socks("web.test", int(sys.argv[2]))
s.sendall(b"ping over socks")
print(code, s.recv(100).decode())
s, code = socks("private.test", int(sys.argv[2]))
print(code)
"#;
    let out = run(client("python3", call.local_addr(), home.path())
        .arg("-c")
        .arg(script)
        .arg(call.local_addr().port().to_string())
        .arg(echo.port.to_string()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "0 ping over socks\n2\n");

    let records = finish(call);
    assert_eq!(records.len(), 3, "{records:?}");
    assert!(records
        .iter()
        .all(|record| record.protocol == Protocol::Socks5));
    let echoed = records
        .iter()
        .find(|record| record.port == echo.port && !record.refused())
        .unwrap();
    assert_eq!((echoed.bytes_up, echoed.bytes_down), (15, 15));
    let refused = records.iter().find(|record| record.refused()).unwrap();
    assert_eq!(
        (refused.host.as_str(), refused.decided_by),
        ("private.test", DecidedBy::Address)
    );
}

/// A repository served as static files ("dumb" HTTP): a bare clone after
/// `git update-server-info`.
fn served_repository(root: &Path) {
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let out = Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", root)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    };
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("README.md"), "cloned through the proxy\n").unwrap();
    git(&work, &["add", "README.md"]);
    git(&work, &["commit", "-q", "-m", "first"]);
    git(root, &["clone", "-q", "--bare", "work", "repo.git"]);
    git(&root.join("repo.git"), &["update-server-info"]);
}

#[test]
fn git_clones_over_http_and_https_through_the_proxy() {
    let served = tempfile::tempdir().unwrap();
    served_repository(served.path());
    let plain = StaticServer::start(served.path(), false);
    let tls = StaticServer::start(served.path(), true);
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let home = tempfile::tempdir().unwrap();
    for (name, url) in [
        (
            "over-http",
            format!("http://web.test:{}/repo.git", plain.port),
        ),
        (
            "over-https",
            format!("https://web.test:{}/repo.git", tls.port),
        ),
    ] {
        let target = home.path().join(name);
        let out = run(client("git", call.local_addr(), home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_SSL_CAINFO", &certificate().cert)
            .args(["clone", "-q", &url])
            .arg(&target));
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert_eq!(
            std::fs::read_to_string(target.join("README.md")).unwrap(),
            "cloned through the proxy\n"
        );
    }
    let records = finish(call);
    assert!(records
        .iter()
        .any(|record| record.protocol == Protocol::Http));
    assert!(records
        .iter()
        .any(|record| record.protocol == Protocol::Connect));
    assert!(
        records.iter().all(|record| !record.refused()),
        "{records:?}"
    );
}

/// The checkout's root, where `node_modules` is.
fn checkout() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn node_fetch_goes_through_the_proxy_with_undicis_env_agent() {
    let undici = checkout().join("node_modules/undici/package.json");
    assert!(
        undici.exists(),
        "undici is installed with the checkout's dev dependencies (npm install); Node 20's fetch needs it to use a proxy"
    );
    let web = Web::start();
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("file.txt"), "tls for node").unwrap();
    let tls = StaticServer::start(files.path(), true);
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let home = tempfile::tempdir().unwrap();
    let script = r#"
const { createRequire } = require('node:module');
const undici = createRequire(process.argv[1] + '/')('undici');
undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent());
(async () => {
  const plain = await (await fetch(process.argv[2])).text();
  const secure = await (await fetch(process.argv[3])).text();
  // undici tunnels http:// URLs too (CONNECT), and reports a refused tunnel as an error
  // whose innermost cause names the proxy's status.
  const failure = (url) => fetch(url).then((r) => `status ${r.status}`, (e) => `${e.cause?.cause?.message ?? e.cause?.message ?? e.message}`);
  const refused = await failure(process.argv[4]);
  const tunnel = await failure(process.argv[5]);
  console.log(JSON.stringify({ plain, secure, refused, tunnel }));
})();
"#;
    let out = run(client("node", call.local_addr(), home.path())
        .env("NODE_EXTRA_CA_CERTS", &certificate().cert)
        .arg("-e")
        .arg(script)
        .arg(checkout())
        .arg(format!("http://web.test:{}/hello", web.port))
        .arg(format!("https://web.test:{}/file.txt", tls.port))
        .arg(format!("http://private.test:{}/hello", web.port))
        .arg(format!("https://private.test:{}/", tls.port)));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["plain"], "hello from web");
    assert_eq!(result["secure"], "tls for node");
    for refused in [&result["refused"], &result["tunnel"]] {
        assert!(
            refused.as_str().unwrap().contains("Proxy response (403)"),
            "{result}"
        );
    }
    let records = finish(call);
    assert_eq!(
        records.iter().filter(|record| record.refused()).count(),
        2,
        "{records:?}"
    );
}
