//! `http_request` against a real server on 127.0.0.1, with names resolved by a test hook.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::ErrorCode;

/// A tiny HTTP/1.1 server: every connection gets one answer chosen by the request path.
struct Server {
    port: u16,
}

fn answer(path: &str, request: &str, port: u16) -> Vec<u8> {
    let plain = |status: &str, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    match path {
        "/ok" => plain(
            "200 OK",
            "Content-Type: text/plain\r\nX-Test: yes\r\n",
            "hello",
        ),
        "/echo-auth" => {
            let auth = request
                .lines()
                .find_map(|line| {
                    line.strip_prefix("authorization: ")
                        .or_else(|| line.strip_prefix("Authorization: "))
                })
                .unwrap_or("none")
                .to_string();
            plain("200 OK", "", &format!("auth={auth}"))
        }
        "/echo-method" => {
            let method = request.split(' ').next().unwrap_or("").to_string();
            plain("200 OK", "", &method)
        }
        "/big" => plain("200 OK", "", &"x".repeat(3 * 1024 * 1024)),
        "/slow" => {
            std::thread::sleep(Duration::from_secs(3));
            plain("200 OK", "", "late")
        }
        "/to-ok" => plain("302 Found", "Location: /ok\r\n", ""),
        "/post-303" => plain("303 See Other", "Location: /echo-method\r\n", ""),
        "/to-other-origin" => plain(
            "302 Found",
            &format!("Location: http://other.test:{port}/echo-auth\r\n"),
            "",
        ),
        "/to-same-origin-auth" => plain("307 Temporary Redirect", "Location: /echo-auth\r\n", ""),
        "/loop" => plain("302 Found", "Location: /loop\r\n", ""),
        other => {
            // /redirect?<location> answers with that location.
            if let Some(location) = other.strip_prefix("/redirect?") {
                plain("302 Found", &format!("Location: {location}\r\n"), "")
            } else {
                plain("404 Not Found", "", "missing")
            }
        }
    }
}

fn serve(mut stream: TcpStream, port: u16) {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request).to_string();
    let path = text.split(' ').nth(1).unwrap_or("/").to_string();
    let _ = stream.write_all(&answer(&path, &text, port));
}

impl Server {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || serve(stream, port));
            }
        });
        Server { port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// Resolves `.test` names from a fixed table and counts lookups.
fn table_lookup(table: &[(&str, &[&str])], calls: Arc<AtomicUsize>) -> Lookup {
    let table: HashMap<String, Vec<IpAddr>> = table
        .iter()
        .map(|(name, ips)| {
            (
                name.to_string(),
                ips.iter().map(|ip| ip.parse().unwrap()).collect(),
            )
        })
        .collect();
    Arc::new(move |host: String| {
        calls.fetch_add(1, Ordering::SeqCst);
        let found = table.get(&host).cloned();
        Box::pin(async move {
            found.ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such test name")
            })
        })
    })
}

fn client(allow: &[&str], table: &[(&str, &[&str])]) -> (HttpClient, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let allow: Vec<String> = allow.iter().map(|entry| entry.to_string()).collect();
    let policy = HttpPolicy {
        allow: Arc::new(AllowList::parse(&allow).unwrap()),
        timeout: Duration::from_secs(10),
        max_response_bytes: 1024 * 1024,
    };
    (
        HttpClient::new(policy, table_lookup(table, Arc::clone(&calls))).unwrap(),
        calls,
    )
}

async fn get(client: &HttpClient, url: &str) -> crate::Result<Value> {
    client.request(json!({ "url": url })).await
}

#[tokio::test]
async fn a_local_server_allowed_by_config_answers() {
    let server = Server::start();
    let (allowed, _) = client(&["127.0.0.1"], &[]);
    let out = get(&allowed, &server.url("/ok")).await.unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "hello");
    assert_eq!(out["headers"]["x-test"], "yes");
    assert_eq!(out["truncated"], false);
    let (by_range, _) = client(&["127.0.0.0/8"], &[]);
    assert_eq!(
        get(&by_range, &server.url("/ok")).await.unwrap()["status"],
        200
    );
}

#[tokio::test]
async fn the_same_server_is_refused_without_config() {
    let server = Server::start();
    let (strict, _) = client(&[], &[]);
    for url in [
        server.url("/ok"),
        format!("http://127.1:{}/ok", server.port),
        format!("http://2130706433:{}/ok", server.port),
        format!("http://0x7f.0.0.1:{}/ok", server.port),
        format!("http://017700000001:{}/ok", server.port),
        format!("http://[::ffff:127.0.0.1]:{}/ok", server.port),
        format!("http://[::1]:{}/ok", server.port),
        format!("http://0.0.0.0:{}/ok", server.port),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://[fd00:ec2::254]/latest/meta-data/".to_string(),
        "http://100.100.100.200/latest/meta-data/".to_string(),
    ] {
        let err = get(&strict, &url).await.unwrap_err();
        assert_eq!(
            err.error_code(),
            ErrorCode::ArgumentRejected,
            "{url}: {err}"
        );
        assert!(
            err.to_string().contains("builtins.http.allow"),
            "{url}: {err}"
        );
    }
}

#[tokio::test]
async fn names_resolving_to_internal_addresses_are_refused() {
    let server = Server::start();
    let table: &[(&str, &[&str])] = &[
        ("internal.test", &["127.0.0.1"]),
        ("mixed.test", &["93.184.216.34", "127.0.0.1"]),
        ("mapped.test", &["::ffff:127.0.0.1"]),
        ("metadata.test", &["169.254.169.254"]),
        ("nat64.test", &["64:ff9b::a9fe:a9fe"]),
    ];
    let (strict, _) = client(&[], table);
    for name in [
        "internal.test",
        "mixed.test",
        "mapped.test",
        "metadata.test",
        "nat64.test",
    ] {
        let url = format!("http://{name}:{}/ok", server.port);
        let err = get(&strict, &url).await.unwrap_err();
        assert_eq!(
            err.error_code(),
            ErrorCode::ArgumentRejected,
            "{url}: {err}"
        );
        assert!(err.to_string().contains(name), "{err}");
    }
    // `localhost` is a name like any other: refused unless allowed.
    let (with_localhost, _) = client(&[], &[("localhost", &["127.0.0.1"])]);
    let url = format!("http://localhost:{}/ok", server.port);
    assert!(get(&with_localhost, &url).await.is_err());
    let (allowed, _) = client(&["localhost"], &[("localhost", &["127.0.0.1"])]);
    assert_eq!(get(&allowed, &url).await.unwrap()["body"], "hello");
}

#[tokio::test]
async fn the_connection_uses_the_checked_address_without_resolving_again() {
    let server = Server::start();
    let (allowed, calls) = client(&["127.0.0.0/8"], &[("svc.test", &["127.0.0.1"])]);
    let out = get(&allowed, &format!("http://svc.test:{}/ok", server.port))
        .await
        .unwrap();
    assert_eq!(out["body"], "hello");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "one lookup, checked and used"
    );
}

#[tokio::test]
async fn every_redirect_is_checked() {
    let server = Server::start();
    let table: &[(&str, &[&str])] = &[("private.test", &["192.168.1.20"])];
    let (allowed, _) = client(&["127.0.0.1"], table);
    let followed = get(&allowed, &server.url("/to-ok")).await.unwrap();
    assert_eq!(followed["body"], "hello");
    assert!(followed["url"].as_str().unwrap().ends_with("/ok"));
    for target in [
        "http://10.0.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://[::ffff:10.0.0.1]/".to_string(),
        "http://private.test/".to_string(),
        "http://2886729729/".to_string(),
    ] {
        let err = get(&allowed, &server.url(&format!("/redirect?{target}")))
            .await
            .unwrap_err();
        assert_eq!(
            err.error_code(),
            ErrorCode::ArgumentRejected,
            "{target}: {err}"
        );
    }
    let err = get(&allowed, &server.url("/redirect?file:///etc/passwd"))
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::ArgumentRejected, "{err}");
    let err = get(&allowed, &server.url("/loop")).await.unwrap_err();
    assert!(err.to_string().contains("redirects"), "{err}");
}

#[tokio::test]
async fn credentials_stay_with_their_origin() {
    let server = Server::start();
    let (allowed, _) = client(&["127.0.0.0/8"], &[("other.test", &["127.0.0.1"])]);
    let headers = json!({ "Authorization": "Bearer secret" });
    let same = allowed
        .request(json!({ "url": server.url("/to-same-origin-auth"), "headers": headers }))
        .await
        .unwrap();
    assert_eq!(same["body"], "auth=Bearer secret");
    let other = allowed
        .request(json!({ "url": server.url("/to-other-origin"), "headers": headers }))
        .await
        .unwrap();
    assert_eq!(other["body"], "auth=none");
    let after_303 = allowed
        .request(json!({ "url": server.url("/post-303"), "method": "POST", "body": "x" }))
        .await
        .unwrap();
    assert_eq!(after_303["body"], "GET");
}

#[tokio::test]
async fn large_bodies_are_cut_and_marked() {
    let server = Server::start();
    let (allowed, _) = client(&["127.0.0.1"], &[]);
    let out = get(&allowed, &server.url("/big")).await.unwrap();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["bytes"], 1024 * 1024);
    assert!(
        out["body"]
            .as_str()
            .unwrap()
            .contains("[response truncated"),
        "marker"
    );
}

#[tokio::test]
async fn slow_servers_time_out() {
    let server = Server::start();
    let (allowed, _) = client(&["127.0.0.1"], &[]);
    let started = std::time::Instant::now();
    let err = allowed
        .request(json!({ "url": server.url("/slow"), "timeout_ms": 200 }))
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::Timeout, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "did not wait for the server"
    );
}

#[tokio::test]
async fn model_input_is_bounded_and_checked() {
    let (allowed, _) = client(&["127.0.0.1"], &[]);
    let cases = [
        json!({ "url": "ftp://example.com/" }),
        json!({ "url": "file:///etc/passwd" }),
        json!({ "url": "not a url" }),
        json!({ "url": "http://user:pw@example.com/" }),
        json!({ "url": format!("http://example.com/{}", "a".repeat(MAX_HTTP_URL_BYTES)) }),
        json!({ "url": "http://example.com/", "method": "TRACE" }),
        json!({ "url": "http://example.com/", "headers": { "Host": "x" } }),
        json!({ "url": "http://example.com/", "headers": { "X-A": "a\r\nInjected: 1" } }),
        json!({ "url": "http://example.com/", "body": "x" }),
        json!({ "url": "http://example.com/", "timeout_ms": 0 }),
        json!({ "url": "http://example.com/", "surprise": 1 }),
        json!({}),
    ];
    for input in cases {
        let err = allowed.request(input.clone()).await.unwrap_err();
        assert!(
            matches!(
                err.error_code(),
                ErrorCode::InvalidInput | ErrorCode::ArgumentRejected
            ),
            "{input}: {err}"
        );
    }
}
