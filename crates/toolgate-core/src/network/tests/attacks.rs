//! Attacks on the proxy, several variants per class, each against a live server that would
//! show a request or connection that got past: header smuggling, a second request or CONNECT
//! on the same connection, hosts with NUL bytes, trailing dots and mixed case, IPv4-mapped and
//! other IPv6 forms, decimal/octal/hex IPv4 spellings, redirects to private addresses, IDN
//! homographs, malformed SOCKS5.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::json;

use super::support::*;
use crate::network::{DecidedBy, Decision, Protocol, MAX_HEAD_BYTES};

fn assert_bad_request(answer: &str, what: &str) {
    assert!(
        answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{what}: {answer}"
    );
    assert!(answer.contains("toolgate: "), "{what}: {answer}");
}

#[test]
fn smuggling_heads_are_refused_before_any_connection() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let p = web.port;
    let target = format!("http://web.test:{p}/echo");
    let host = format!("Host: web.test:{p}\r\n");
    let over_long = format!(
        "GET {target} HTTP/1.1\r\n{host}X-Big: {}\r\n\r\n",
        "a".repeat(MAX_HEAD_BYTES)
    );
    let many_headers: String = (0..200).map(|n| format!("X-{n}: 1\r\n")).collect();
    let cases: Vec<(&str, String)> = vec![
        ("CL then TE", format!("POST {target} HTTP/1.1\r\n{host}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
        ("TE then CL", format!("POST {target} HTTP/1.1\r\n{host}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n")),
        ("two equal CL", format!("POST {target} HTTP/1.1\r\n{host}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc")),
        ("two different CL", format!("POST {target} HTTP/1.1\r\n{host}Content-Length: 3\r\nContent-Length: 30\r\n\r\nabc")),
        ("CL list", format!("POST {target} HTTP/1.1\r\n{host}Content-Length: 3, 3\r\n\r\nabc")),
        ("CL sign", format!("POST {target} HTTP/1.1\r\n{host}Content-Length: +3\r\n\r\nabc")),
        ("TE not chunked", format!("POST {target} HTTP/1.1\r\n{host}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n")),
        ("TE list", format!("POST {target} HTTP/1.1\r\n{host}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n")),
        ("TE twice", format!("POST {target} HTTP/1.1\r\n{host}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
        ("TE space before colon", format!("POST {target} HTTP/1.1\r\n{host}Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n")),
        ("TE folded", format!("POST {target} HTTP/1.1\r\n{host}Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n")),
        ("obs-fold", format!("GET {target} HTTP/1.1\r\n{host}X-A: 1\r\n\tX-B: 2\r\n\r\n")),
        ("Host mismatch", format!("GET {target} HTTP/1.1\r\nHost: private.test:{p}\r\n\r\n")),
        ("Host port mismatch", format!("GET {target} HTTP/1.1\r\nHost: web.test:1\r\n\r\n")),
        ("two Hosts", format!("GET {target} HTTP/1.1\r\n{host}Host: private.test\r\n\r\n")),
        ("CONNECT Host mismatch", format!("CONNECT web.test:{p} HTTP/1.1\r\nHost: private.test:{p}\r\n\r\n")),
        ("space in target", format!("GET http://web.test:{p}/echo HTTP/1.1 HTTP/1.1\r\n{host}\r\n")),
        ("space in host", format!("GET http://web.test :{p}/echo HTTP/1.1\r\n{host}\r\n")),
        ("NUL in request line", format!("GET http://web.test:{p}/e\0cho HTTP/1.1\r\n{host}\r\n")),
        ("NUL in header", format!("GET {target} HTTP/1.1\r\n{host}X-A: a\0b\r\n\r\n")),
        ("bare LF", format!("GET {target} HTTP/1.1\n{host}\r\n")),
        ("bare CR", format!("GET {target} HTTP/1.1\r\n{host}X-A: a\rX-B: b\r\n\r\n")),
        ("Connection names CL", format!("POST {target} HTTP/1.1\r\n{host}Connection: Content-Length\r\nContent-Length: 3\r\n\r\nabc")),
        ("HTTP/1.0 chunked", format!("POST {target} HTTP/1.0\r\n{host}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
        ("over-long head", over_long),
        ("too many headers", format!("GET {target} HTTP/1.1\r\n{host}{many_headers}\r\n")),
        ("origin form", format!("GET /echo HTTP/1.1\r\n{host}\r\n")),
        ("credentials", format!("GET http://user:pw@web.test:{p}/echo HTTP/1.1\r\n\r\n")),
        ("https absolute form", format!("GET https://web.test:{p}/echo HTTP/1.1\r\n\r\n")),
    ];
    for (what, request) in &cases {
        let answer = exchange(call.local_addr(), request.as_bytes());
        assert_bad_request(&answer, what);
    }
    assert_eq!(web.connections(), 0, "no request reached the server");
    let records = finish(call);
    assert_eq!(records.len(), cases.len(), "every refusal is recorded");
    assert!(records.iter().all(
        |record| record.decision == Decision::Denied && record.decided_by == DecidedBy::Request
    ));
}

#[test]
fn nothing_after_the_first_request_reaches_a_server() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let p = web.port;
    let first = format!("GET http://web.test:{p}/hello HTTP/1.1\r\nHost: web.test:{p}\r\n\r\n");
    let variants = [
        // A pipelined second request to another host.
        format!("{first}GET http://private.test:{p}/echo HTTP/1.1\r\nHost: private.test:{p}\r\n\r\n"),
        // A second request in origin form, hoping to be passed on raw.
        format!("{first}GET /echo HTTP/1.1\r\nHost: internal.test\r\n\r\n"),
        // A request hidden after a chunked body's end.
        format!("POST http://web.test:{p}/echo HTTP/1.1\r\nHost: web.test:{p}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: web.test\r\n\r\n"),
        // A request hidden after a Content-Length body's end.
        format!("POST http://web.test:{p}/echo HTTP/1.1\r\nHost: web.test:{p}\r\nContent-Length: 5\r\n\r\nhelloGET /smuggled HTTP/1.1\r\nHost: web.test\r\n\r\n"),
        // A CONNECT after a forwarded request.
        format!("{first}CONNECT private.test:{p} HTTP/1.1\r\n\r\n"),
    ];
    for (at, request) in variants.iter().enumerate() {
        let answer = exchange(call.local_addr(), request.as_bytes());
        assert_eq!(
            answer.matches("HTTP/1.1 ").count(),
            1,
            "one response: {answer}"
        );
        assert!(answer.contains("Connection: close\r\n"), "{answer}");
        assert_eq!(
            web.requests().len(),
            at + 1,
            "only the first request arrived: {:?}",
            web.requests()
        );
    }
    for request in web.requests() {
        assert!(
            !request.contains("smuggled") && !request.contains("internal.test"),
            "{request}"
        );
    }
    let records = finish(call);
    assert_eq!(
        records.len(),
        variants.len(),
        "one decision per connection: {records:?}"
    );
    assert!(records.iter().all(|record| !record.refused()));
}

#[test]
fn a_tunnel_cannot_open_a_second_connection() {
    let echo = Echo::start();
    let denied = Web::start();
    let proxy = proxy();
    let call = serve(
        &proxy,
        json!({ "allow": [format!("web.test:{}", echo.port), "127.0.0.1"] }),
    );
    let second = format!("CONNECT web.test:{} HTTP/1.1\r\n\r\n", denied.port);

    // After an allowed CONNECT, a second CONNECT is only data in the tunnel (the echo service
    // sends it back).
    let mut stream = TcpStream::connect(call.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(format!("CONNECT web.test:{} HTTP/1.1\r\n\r\n", echo.port).as_bytes())
        .unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200"));
    stream.write_all(second.as_bytes()).unwrap();
    let mut echoed = vec![0u8; second.len()];
    stream.read_exact(&mut echoed).unwrap();
    assert_eq!(text(&echoed), second);
    drop(stream);

    // Both at once: the second is still tunnel data.
    let both = format!("CONNECT web.test:{} HTTP/1.1\r\n\r\n{second}", echo.port);
    let mut stream = TcpStream::connect(call.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(both.as_bytes()).unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200"));
    let mut echoed = vec![0u8; second.len()];
    stream.read_exact(&mut echoed).unwrap();
    assert_eq!(text(&echoed), second);
    drop(stream);

    // A refused CONNECT closes the connection: the allowed one after it is never read.
    let refused_first = format!("{second}CONNECT web.test:{} HTTP/1.1\r\n\r\n", echo.port);
    let answer = exchange(call.local_addr(), refused_first.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");

    // SOCKS5: a second request inside the tunnel is data too.
    let mut stream = socks_connect(call.local_addr(), b"web.test", echo.port);
    let again = socks_request(b"web.test", denied.port);
    stream.write_all(&again).unwrap();
    let mut echoed = vec![0u8; again.len()];
    stream.read_exact(&mut echoed).unwrap();
    assert_eq!(echoed, again);
    drop(stream);

    assert_eq!(denied.connections(), 0, "the denied port was never reached");
    let records = finish(call);
    assert_eq!(records.len(), 4, "{records:?}");
    assert_eq!(records.iter().filter(|record| record.refused()).count(), 1);
    assert_eq!(echo.connections(), 3);
}

fn socks_request(host: &[u8], port: u16) -> Vec<u8> {
    let mut request = vec![0x05, 0x01, 0x00, 0x03, host.len() as u8];
    request.extend_from_slice(host);
    request.extend_from_slice(&port.to_be_bytes());
    request
}

/// A SOCKS5 handshake and request; returns the stream after a success reply.
fn socks_connect(proxy: SocketAddr, host: &[u8], port: u16) -> TcpStream {
    let (stream, code) = socks_raw(proxy, &socks_request(host, port));
    assert_eq!(code, 0, "SOCKS5 CONNECT to {} refused", text(host));
    stream
}

/// Greets with no-auth, sends `request`, returns the stream and the reply code.
fn socks_raw(proxy: SocketAddr, request: &[u8]) -> (TcpStream, u8) {
    let mut stream = TcpStream::connect(proxy).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(&[0x05, 0x01, 0x00]).unwrap();
    let mut greeting = [0u8; 2];
    stream.read_exact(&mut greeting).unwrap();
    assert_eq!(greeting, [0x05, 0x00]);
    stream.write_all(request).unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).unwrap();
    (stream, reply[1])
}

#[test]
fn hosts_with_nul_bytes_are_refused() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["*.test", "127.0.0.1"] }));
    let p = web.port;
    for request in [
        format!("CONNECT web.test\0.evil:{p} HTTP/1.1\r\n\r\n"),
        format!("CONNECT web.test:{p}\0 HTTP/1.1\r\n\r\n"),
        format!("GET http://web.test\0.evil:{p}/ HTTP/1.1\r\n\r\n"),
        format!("GET http://web.test%00.evil:{p}/ HTTP/1.1\r\n\r\n"),
        format!("GET http://web.test:{p}/ HTTP/1.1\r\nHost: web.test\0:{p}\r\n\r\n"),
    ] {
        assert_bad_request(&exchange(call.local_addr(), request.as_bytes()), &request);
    }
    for host in [&b"web.test\0.evil"[..], b"\0web.test", b"web.test\0"] {
        let (_, code) = socks_raw(call.local_addr(), &socks_request(host, p));
        assert_eq!(code, 0x02, "{host:?}");
    }
    assert_eq!(web.connections(), 0);
    let records = finish(call);
    let socks: Vec<_> = records
        .iter()
        .filter(|record| record.protocol == Protocol::Socks5)
        .collect();
    assert_eq!(socks.len(), 3);
    // The record quotes the host safely.
    assert!(socks[0].host.contains("\\u{0}"), "{:?}", socks[0]);
}

#[test]
fn trailing_dots_and_mixed_case_are_the_same_host() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(
        &proxy,
        json!({ "allow": [format!("web.test:{}", web.port), "127.0.0.1"], "deny": ["other.test"] }),
    );
    let p = web.port;
    for host in ["WEB.TEST", "web.test.", "Web.Test.", "wEb.tEsT"] {
        let answer = exchange(
            call.local_addr(),
            format!("GET http://{host}:{p}/hello HTTP/1.1\r\nHost: {host}:{p}\r\n\r\n").as_bytes(),
        );
        assert!(answer.ends_with("hello from web"), "{host}: {answer}");
        // The tunnel's answer only: the server keeps the connection open.
        let mut tunnel = TcpStream::connect(call.local_addr()).unwrap();
        tunnel
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        tunnel
            .write_all(format!("CONNECT {host}:{p} HTTP/1.1\r\n\r\n").as_bytes())
            .unwrap();
        let head = read_head(&mut tunnel);
        assert!(head.starts_with("HTTP/1.1 200"), "{host}: {head}");
    }
    for host in ["OTHER.test", "other.test.", "Other.TEST."] {
        let answer = exchange(
            call.local_addr(),
            format!("CONNECT {host}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
        assert!(
            answer.contains("network.deny entry 'other.test'"),
            "{answer}"
        );
    }
    for host in ["web.test..", ".web.test", "web..test"] {
        let answer = exchange(
            call.local_addr(),
            format!("CONNECT {host}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert_bad_request(&answer, host);
    }
    let records = finish(call);
    assert!(records
        .iter()
        .filter(|record| !record.refused())
        .all(|record| record.host == "web.test"));
}

#[test]
fn ipv6_forms_of_internal_addresses_are_judged_as_what_they_reach() {
    let web = Web::start();
    let proxy = proxy();
    let p = web.port;
    let names_only = serve(&proxy, json!({ "allow": ["*.test"], "ask": false }));
    for (count, host) in [
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::1]",
        "[::1]",
        "[fe80::1]",
        "[fd00::1]",
    ]
    .into_iter()
    .enumerate()
    {
        let answer = exchange(
            names_only.local_addr(),
            format!("CONNECT {host}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
        let records = records_at_least(&names_only, count + 1);
        let last = &records[count];
        assert_eq!(last.decided_by, DecidedBy::Address, "{host}: {last:?}");
    }
    // SOCKS5 with an IPv6 address type, the same.
    let mapped: std::net::Ipv6Addr = "::ffff:127.0.0.1".parse().unwrap();
    let mut request = vec![0x05, 0x01, 0x00, 0x04];
    request.extend_from_slice(&mapped.octets());
    request.extend_from_slice(&p.to_be_bytes());
    let (_, code) = socks_raw(names_only.local_addr(), &request);
    assert_eq!(code, 0x02);
    assert_eq!(web.connections(), 0);

    // Allowing 127.0.0.1 allows its mapped form, which reaches the server.
    let by_address = serve(&proxy, json!({ "allow": ["127.0.0.1"] }));
    let answer = exchange(
        by_address.local_addr(),
        format!("GET http://[::ffff:127.0.0.1]:{p}/hello HTTP/1.1\r\n\r\n").as_bytes(),
    );
    assert!(answer.ends_with("hello from web"), "{answer}");
    // Denying 127.0.0.1 denies every form that embeds it.
    let denying = serve(
        &proxy,
        json!({ "allow": ["::/0", "0.0.0.0/0"], "deny": ["127.0.0.1"] }),
    );
    for host in [
        "[::ffff:127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[::127.0.0.1]",
        "127.0.0.1",
    ] {
        let answer = exchange(
            denying.local_addr(),
            format!("CONNECT {host}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(
            answer.contains("network.deny entry '127.0.0.1'"),
            "{host}: {answer}"
        );
    }
}

#[test]
fn every_ipv4_spelling_is_judged_as_its_address() {
    let web = Web::start();
    let proxy = proxy();
    let p = web.port;
    let spellings = [
        "2130706433",
        "0177.0.0.1",
        "0x7f.1",
        "0x7f000001",
        "127.1",
        "0x7F.0.0.01",
        "127.0.0.1.",
    ];
    // A policy allowing names only: every spelling is the loopback address, refused as such.
    let names_only = serve(&proxy, json!({ "allow": ["*.test"], "ask": true }));
    for spelling in spellings {
        let answer = exchange(
            names_only.local_addr(),
            format!("CONNECT {spelling}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(
            answer.contains("refused: a loopback address"),
            "{spelling}: {answer}"
        );
        let forwarded = exchange(
            names_only.local_addr(),
            format!("GET http://{spelling}:{p}/hello HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(
            forwarded.starts_with("HTTP/1.1 403"),
            "{spelling}: {forwarded}"
        );
        let (_, code) = socks_raw(
            names_only.local_addr(),
            &socks_request(spelling.as_bytes(), p),
        );
        assert_eq!(code, 0x02, "{spelling}");
    }
    assert_eq!(web.connections(), 0);
    // Allowing the address allows every spelling of it, recorded as the address.
    let by_address = serve(&proxy, json!({ "allow": [format!("127.0.0.1:{p}")] }));
    for spelling in spellings {
        let answer = exchange(
            by_address.local_addr(),
            format!("GET http://{spelling}:{p}/hello HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(answer.ends_with("hello from web"), "{spelling}: {answer}");
    }
    let records = finish(by_address);
    assert!(
        records.iter().all(|record| record.host == "127.0.0.1"),
        "{records:?}"
    );
    // Spellings that mean no address are no host at all.
    let call = serve(&proxy, json!({ "allow": ["*.test"] }));
    for bad in [
        "256.0.0.1",
        "1.2.3.4.5",
        "0x100000000",
        "09.0.0.1",
        "example.123",
    ] {
        let answer = exchange(
            call.local_addr(),
            format!("CONNECT {bad}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert_bad_request(&answer, bad);
    }
}

#[test]
fn a_redirect_to_a_private_address_is_judged_on_its_own() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(
        &proxy,
        json!({ "allow": ["web.test", "127.0.0.1", "10.0.0.5:1"], "ask": true }),
    );
    let home = tempfile::tempdir().unwrap();
    // The proxy passes the redirect on and follows nothing itself.
    let raw = exchange(
        call.local_addr(),
        format!(
            "GET http://web.test:{0}/redirect-private HTTP/1.1\r\nHost: web.test:{0}\r\n\r\n",
            web.port
        )
        .as_bytes(),
    );
    assert!(raw.starts_with("HTTP/1.1 302 Found\r\n"), "{raw}");
    assert!(
        raw.contains(&format!("Location: http://10.0.0.5:{}/hello\r\n", web.port)),
        "{raw}"
    );
    // curl follows it: the second request is refused for its address.
    let out = run(client("curl", call.local_addr(), home.path()).args([
        "-q",
        "-s",
        "-L",
        "-w",
        "\n%{http_code}",
        &format!("http://web.test:{}/redirect-private", web.port),
    ]));
    let stdout = text(&out.stdout);
    assert!(stdout.ends_with("\n403"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "connection to 10.0.0.5:{} refused: a private address",
            web.port
        )),
        "{stdout}"
    );
    let records = finish(call);
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[2].decided_by, DecidedBy::Address);
    assert_eq!(
        web.requests().len(),
        2,
        "only the redirecting requests reached the server"
    );
}

#[test]
fn redirects_to_internal_addresses_in_every_spelling_are_refused_when_followed() {
    let web = Web::start();
    let proxy = proxy();
    // Every `.test` name is allowed by name, and 127.0.0.1 (the server) by address: what the
    // redirects point to is internal, and only an allow entry for the address itself opens it.
    let call = serve(
        &proxy,
        json!({ "allow": ["web.test", "*.test", "127.0.0.1"] }),
    );
    let home = tempfile::tempdir().unwrap();
    let targets = [
        // Cloud metadata, as written, IPv4-mapped, and by a name resolving there.
        "169.254.169.254",
        "[::ffff:a9fe:a9fe]",
        "metadata.test",
        // 10.0.0.5 in decimal, octal and hex spellings, IPv4-mapped, and by name.
        "167772165",
        "012.0.0.05",
        "0x0a000005",
        "[::ffff:10.0.0.5]",
        "private.test",
        // Unique-local and link-local IPv6.
        "[fd00::1]",
        "[fe80::1]",
    ];
    for target in targets {
        let out = run(client("curl", call.local_addr(), home.path()).args([
            "-q",
            "-s",
            "-L",
            "-w",
            "\n%{http_code}",
            &format!("http://web.test:{}/redirect-to/{target}", web.port),
        ]));
        let stdout = text(&out.stdout);
        assert!(stdout.ends_with("\n403"), "{target}: {stdout}");
        assert!(stdout.contains("refused"), "{target}: {stdout}");
        assert!(!stdout.contains("hello from web"), "{target}: {stdout}");
    }
    assert_eq!(
        web.requests().len(),
        targets.len(),
        "only the redirecting requests reached the server"
    );
    let records = finish(call);
    assert_eq!(records.len(), 2 * targets.len(), "{records:?}");
    // A record is made when its connection closes: the redirect's refusal may close before
    // the redirecting exchange does, so the order within a pair is not fixed.
    let (refused, allowed): (Vec<_>, Vec<_>) = records.iter().partition(|record| record.refused());
    assert_eq!(allowed.len(), targets.len(), "{records:?}");
    assert_eq!(refused.len(), targets.len(), "{records:?}");
    for record in refused {
        assert_eq!(record.decided_by, DecidedBy::Address, "{record:?}");
    }
}

/// A server on 127.0.0.1 answering every connection with `reply` once the request head has
/// come, then keeping the connection open (as a keep-alive server would) for a while.
fn replying_server(reply: &'static [u8]) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read_exact(&mut byte).is_ok() {
                    head.push(byte[0]);
                }
                let _ = stream.write_all(reply);
                std::thread::sleep(Duration::from_secs(2));
            });
        }
    });
    port
}

#[test]
fn nothing_past_a_responses_end_reaches_the_client() {
    let proxy = proxy();
    let cases: [(&str, &'static [u8], &str, &str); 6] = [
        (
            "bytes past Content-Length",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
            "GET",
            "hello",
        ),
        (
            "bytes past the last chunk",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
            "GET",
            "5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "Content-Length beside chunked (chunked wins, the length is dropped)",
            b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nsmuggled",
            "GET",
            "5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "a body after a HEAD response",
            b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
            "HEAD",
            "",
        ),
        (
            "a body after 204",
            b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
            "GET",
            "",
        ),
        (
            "bytes after 100 Continue and a sized response",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
            "GET",
            "ok",
        ),
    ];
    for (what, reply, method, body) in cases {
        let port = replying_server(reply);
        let call = serve(&proxy, json!({ "allow": ["127.0.0.1"] }));
        let answer = exchange(
            call.local_addr(),
            format!("{method} http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
                .as_bytes(),
        );
        assert!(!answer.contains("smuggled"), "{what}: {answer:?}");
        let (_, sent_body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let sent_body = sent_body
            .strip_prefix("HTTP/1.1 200 OK\r\n")
            .map_or(sent_body, |_| {
                // After 100 Continue: the final response's head, then its body.
                sent_body
                    .split_once("\r\n\r\n")
                    .map_or("", |(_, body)| body)
            });
        assert!(
            answer.contains("Connection: close\r\n"),
            "{what}: {answer:?}"
        );
        assert_eq!(sent_body, body, "{what}: {answer:?}");
        let records = finish(call);
        assert_eq!(records.len(), 1, "{what}");
        assert_eq!(
            records[0].bytes_down as usize,
            relayed_len(reply, method),
            "{what}: bytes counted are what was relayed from the server"
        );
    }
}

/// How much of `reply` the proxy relays: everything before the smuggled part (a second
/// response, or a body the first response has none of).
fn relayed_len(reply: &[u8], method: &str) -> usize {
    let text = std::str::from_utf8(reply).unwrap();
    let body = text.find("smuggled").unwrap();
    let second = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n";
    match text[..body].rfind(second) {
        // A HEAD response's own unread body.
        Some(0) if method == "HEAD" => body,
        Some(start) if start > 0 => start,
        _ => body,
    }
}

#[test]
fn idn_homographs_are_other_hosts() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let p = web.port;
    // Cyrillic 'е' (U+0435) in place of the Latin 'e'.
    let homograph = "w\u{0435}b.test";
    let punycode = "xn--wb-nlc.test";
    let answer = exchange(
        call.local_addr(),
        format!("GET http://{homograph}:{p}/hello HTTP/1.1\r\n\r\n").as_bytes(),
    );
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    let answer = exchange(
        call.local_addr(),
        format!("CONNECT {punycode}:{p} HTTP/1.1\r\n\r\n").as_bytes(),
    );
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains(&format!("{punycode}:{p} is not in network.allow")),
        "{answer}"
    );
    let (_, code) = socks_raw(call.local_addr(), &socks_request(homograph.as_bytes(), p));
    assert_eq!(code, 0x02);
    let (_, code) = socks_raw(call.local_addr(), &socks_request("wеb.tеst".as_bytes(), p));
    assert_eq!(code, 0x02);
    assert_eq!(web.connections(), 0);
    let records = finish(call);
    // Records are made as connections close, so the two SOCKS5 ones may come in either order.
    let socks: Vec<&str> = records
        .iter()
        .filter(|record| record.protocol == Protocol::Socks5)
        .map(|record| record.host.as_str())
        .collect();
    assert!(
        socks.contains(&punycode),
        "recorded in its ASCII form: {socks:?}"
    );
    assert!(
        socks.contains(&"xn--wb-nlc.xn--tst-rdd"),
        "recorded in its ASCII form: {socks:?}"
    );
    // Full-width Latin letters are the same name (IDNA maps them), as in a browser.
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let mut stream = socks_connect(call.local_addr(), "ｗｅｂ。ｔｅｓｔ".as_bytes(), p);
    stream
        .write_all(b"GET /hello HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert!(read_to_close(&mut stream).ends_with("hello from web"));
}

#[test]
fn malformed_socks5_is_refused_with_the_right_code() {
    let echo = Echo::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["*.test", "127.0.0.1"] }));
    let p = echo.port;
    // An over-long domain (255 bytes, the most the format carries).
    let long = "a".repeat(251) + ".test";
    let (_, code) = socks_raw(call.local_addr(), &socks_request(long.as_bytes(), p));
    assert_eq!(code, 0x02);
    let long_label = "a".repeat(64) + ".test";
    let (_, code) = socks_raw(call.local_addr(), &socks_request(long_label.as_bytes(), p));
    assert_eq!(code, 0x02);
    // An empty domain.
    let (_, code) = socks_raw(call.local_addr(), &socks_request(b"", p));
    assert_eq!(code, 0x02);
    // BIND and UDP ASSOCIATE.
    for command in [0x02u8, 0x03] {
        let mut request = socks_request(b"web.test", p);
        request[1] = command;
        let (_, code) = socks_raw(call.local_addr(), &request);
        assert_eq!(code, 0x07, "command {command}");
    }
    // An unknown address type.
    let (_, code) = socks_raw(call.local_addr(), &[0x05, 0x01, 0x00, 0x09, 0, 0]);
    assert_eq!(code, 0x08);
    // Port 0.
    let (_, code) = socks_raw(call.local_addr(), &socks_request(b"web.test", 0));
    assert_eq!(code, 0x01);
    // Only username/password offered: no acceptable method.
    let mut stream = TcpStream::connect(call.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(&[0x05, 0x01, 0x02]).unwrap();
    let mut reply = [0u8; 2];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(reply, [0x05, 0xff]);
    // SOCKS4 and TLS spoken to the proxy directly.
    let socks4 = exchange(
        call.local_addr(),
        &[0x04, 0x01, 0x00, 0x50, 127, 0, 0, 1, 0],
    );
    assert!(socks4.contains("SOCKS4 is not offered"), "{socks4}");
    let tls = exchange(
        call.local_addr(),
        &[0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5],
    );
    assert!(tls.contains("spoke TLS to the proxy"), "{tls}");
    assert_eq!(echo.connections(), 0);
    let records = finish(call);
    assert_eq!(records.len(), 10, "{records:?}");
    assert!(records.iter().all(|record| record.refused()));
}
