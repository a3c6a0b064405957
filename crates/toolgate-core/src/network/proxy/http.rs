//! HTTP/1.x to the proxy: `CONNECT host:port` (a tunnel; TLS is not intercepted) and
//! absolute-form requests (`GET http://host:port/path`, forwarded).
//!
//! Parsing is strict (httparse, plus the checks a smuggler would probe): the head must end
//! lines with CRLF and hold no NUL, no obsolete line folding, at most one Host and one
//! Content-Length, never both Content-Length and Transfer-Encoding, only `chunked` as transfer
//! coding, a Host header that agrees with the request target, and at most
//! [`MAX_HEAD_BYTES`] — anything else is a 400. One request per client connection: it is
//! forwarded with `Connection: close`, its body exactly as framed, and nothing the client
//! sends after it is read, so a second request on the same connection reaches nobody.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::connect::open;
use super::relay::{self, Activity, Framing};
use super::session::{Refusal, Session};
use crate::network::host::{parse_authority, printable, Host};
use crate::network::record::Protocol;
use crate::network::{MAX_HEADERS, MAX_HEAD_BYTES};

/// Headers that describe one hop, never forwarded either way (with those `Connection` names).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

/// How long a refused client gets to finish sending before its connection is closed (so
/// that it reads the refusal instead of a reset).
const LINGER: Duration = Duration::from_millis(500);

pub(crate) async fn serve(mut client: TcpStream, mut buf: Vec<u8>, session: &mut Session) {
    session.protocol = Protocol::Http;
    let deadline = tokio::time::Instant::now() + session.call.config.head_timeout;
    let head_end = match read_head(&mut client, &mut buf, deadline).await {
        Ok(end) => end,
        Err(HeadError::Closed) => return,
        Err(HeadError::Bad(what)) => {
            let refusal = session.bad_request(what);
            respond(&mut client, &refusal).await;
            return;
        }
    };
    let request = match parse_request(&buf[..head_end]) {
        Ok(request) => request,
        Err(RequestError { what, target }) => {
            if let Some((host, port)) = target {
                session.target(&host, port);
            }
            if request_is_connect(&buf) {
                session.protocol = Protocol::Connect;
            }
            let refusal = session.bad_request(what);
            respond(&mut client, &refusal).await;
            return;
        }
    };
    let rest = buf[head_end..].to_vec();
    match request.kind {
        Kind::Connect => connect(client, rest, &request, session).await,
        Kind::Forward { .. } => forward(client, rest, &request, session).await,
    }
}

fn request_is_connect(buf: &[u8]) -> bool {
    buf.len() >= 8 && buf[..8].eq_ignore_ascii_case(b"CONNECT ")
}

async fn connect(mut client: TcpStream, rest: Vec<u8>, request: &Request, session: &mut Session) {
    session.protocol = Protocol::Connect;
    let mut server = match open(session, &request.host, request.port).await {
        Ok(server) => server,
        Err(refusal) => {
            respond(&mut client, &refusal).await;
            return;
        }
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    // Bytes the client sent right after the head (a TLS hello) belong to the tunnel.
    if !rest.is_empty() {
        if server.write_all(&rest).await.is_err() {
            return;
        }
        session.up.fetch_add(rest.len() as u64, Ordering::Relaxed);
    }
    relay::tunnel(
        &client,
        &server,
        &session.up,
        &session.down,
        session.call.config.idle_timeout,
    )
    .await;
}

async fn forward(mut client: TcpStream, rest: Vec<u8>, request: &Request, session: &mut Session) {
    let server = match open(session, &request.host, request.port).await {
        Ok(server) => server,
        Err(refusal) => {
            respond(&mut client, &refusal).await;
            return;
        }
    };
    let Kind::Forward { head, framing } = &request.kind else {
        return;
    };
    let activity = Activity::new(session.call.config.idle_timeout);
    if activity.write_all(&server, head).await.is_err() {
        return;
    }
    session.up.fetch_add(head.len() as u64, Ordering::Relaxed);
    let outcome = {
        let upload = relay::body(&rest, &client, &server, *framing, &session.up, &activity);
        let download = response(
            &server,
            &client,
            request.method_is_head,
            &session.down,
            &activity,
        );
        tokio::pin!(upload, download);
        // The response may come before the body is sent (an early error, `Expect:
        // 100-continue`): both run at once, and the exchange ends with the response.
        let mut upload_done = false;
        loop {
            tokio::select! {
                result = &mut upload, if !upload_done => match result {
                    Ok(()) => upload_done = true,
                    Err(what) => break Err(format!("the request body could not be forwarded: {what}")),
                },
                result = &mut download => break result,
            }
        }
    };
    if let Err(what) = outcome {
        let text = format!("toolgate: {}: {what}", session.target_text());
        session.note(text);
    }
    drop(server);
    linger(&mut client).await;
}

/// Relays the response: head(s) rewritten (hop-by-hop headers dropped, `Connection: close`),
/// then the body as framed. `down` counts what is relayed from the server.
async fn response(
    server: &TcpStream,
    client: &TcpStream,
    method_is_head: bool,
    down: &AtomicU64,
    activity: &Activity,
) -> Result<(), String> {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let head_end = loop {
            if let Some(end) = find_head_end(&buf) {
                break end;
            }
            if buf.len() >= MAX_HEAD_BYTES {
                return Err(format!(
                    "the response head is longer than {MAX_HEAD_BYTES} bytes"
                ));
            }
            let n = activity
                .read(server, &mut chunk)
                .await
                .map_err(|err| err.to_string())?;
            if n == 0 {
                return Err("the server closed the connection without a complete response".into());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let parsed = parse_response(&buf[..head_end])?;
        down.fetch_add(head_end as u64, Ordering::Relaxed);
        activity
            .write_all(client, &parsed.head)
            .await
            .map_err(|err| err.to_string())?;
        buf.drain(..head_end);
        if parsed.interim {
            continue;
        }
        let framing = if method_is_head || parsed.no_body {
            Framing::None
        } else {
            parsed.framing
        };
        return relay::body(&buf, server, client, framing, down, activity).await;
    }
}

/// Writes a refusal (or failure) as an HTTP response and closes the connection gently.
pub(crate) async fn respond(client: &mut TcpStream, refusal: &Refusal) {
    let reason = match refusal.status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    };
    let body = format!("{}\n", refusal.body);
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        refusal.status,
        body.len()
    );
    let mut response = head.into_bytes();
    response.extend_from_slice(body.as_bytes());
    if client.write_all(&response).await.is_ok() {
        linger(client).await;
    }
}

/// Ends the connection without a reset: stop sending, then read (and drop) what the client
/// still sends, briefly, so that it gets to read the response.
async fn linger(client: &mut TcpStream) {
    let _ = client.shutdown().await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        let mut total = 0usize;
        while let Ok(n) = client.read(&mut sink).await {
            total += n;
            if n == 0 || total > 1024 * 1024 {
                break;
            }
        }
    })
    .await;
}

// --- reading and parsing heads -------------------------------------------------------------

enum HeadError {
    /// The client went away before sending a whole head.
    Closed,
    Bad(String),
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    memchr::memmem::find(buf, b"\r\n\r\n").map(|at| at + 4)
}

/// Reads until the head's blank line; returns where the head ends in `buf`.
async fn read_head(
    client: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: tokio::time::Instant,
) -> Result<usize, HeadError> {
    loop {
        if let Some(end) = find_head_end(buf) {
            if end > MAX_HEAD_BYTES {
                return Err(too_long());
            }
            return Ok(end);
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(too_long());
        }
        match tokio::time::timeout_at(deadline, client.read_buf(buf)).await {
            Err(_) => {
                return Err(HeadError::Bad(
                    "the request head did not arrive in time (every line must end with CRLF, the head with an empty line)".into(),
                ))
            }
            Ok(Ok(0)) | Ok(Err(_)) => return Err(HeadError::Closed),
            Ok(Ok(_)) => {}
        }
    }
}

fn too_long() -> HeadError {
    HeadError::Bad(format!(
        "the request head is longer than {} KiB",
        MAX_HEAD_BYTES / 1024
    ))
}

/// A request the proxy will act on.
#[derive(Debug)]
struct Request {
    host: Host,
    port: u16,
    method_is_head: bool,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Connect,
    /// The head to send to the server, and how the body that follows ends.
    Forward {
        head: Vec<u8>,
        framing: Framing,
    },
}

#[derive(Debug)]
struct RequestError {
    what: String,
    /// The destination, when it was understood before the error.
    target: Option<(Host, u16)>,
}

impl From<String> for RequestError {
    fn from(what: String) -> Self {
        RequestError { what, target: None }
    }
}

/// Line-level checks httparse is lenient about: CRLF only, no NUL, no obsolete folding.
fn check_raw_head(head: &[u8]) -> Result<(), String> {
    if head.contains(&0) {
        return Err("the head contains a NUL byte".into());
    }
    for (at, &byte) in head.iter().enumerate() {
        let bare_lf = byte == b'\n' && (at == 0 || head[at - 1] != b'\r');
        let bare_cr = byte == b'\r' && head.get(at + 1) != Some(&b'\n');
        if bare_lf || bare_cr {
            return Err("a line of the head does not end with CRLF (a bare CR or LF)".into());
        }
        if byte == b'\n' && matches!(head.get(at + 1), Some(b' ' | b'\t')) {
            return Err("a header line starts with white space (obsolete line folding)".into());
        }
    }
    Ok(())
}

fn httparse_error(err: httparse::Error) -> String {
    match err {
        httparse::Error::TooManyHeaders => format!("the head has more than {MAX_HEADERS} headers"),
        httparse::Error::HeaderName => "a header name is malformed".into(),
        httparse::Error::HeaderValue => "a header value holds bytes a header cannot carry".into(),
        httparse::Error::Token => "the request line is malformed (the method)".into(),
        httparse::Error::Version => "the request line is malformed (the HTTP version)".into(),
        httparse::Error::NewLine => "a line of the head does not end with CRLF".into(),
        httparse::Error::Status => "the status line is malformed".into(),
    }
}

fn parse_request(head: &[u8]) -> Result<Request, RequestError> {
    check_raw_head(head)?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(head) {
        Ok(httparse::Status::Complete(n)) if n == head.len() => {}
        Ok(_) => return Err("the request head is incomplete".to_string().into()),
        Err(err) => return Err(httparse_error(err).into()),
    }
    let method = parsed.method.unwrap_or_default().to_string();
    let target = parsed.path.unwrap_or_default().to_string();
    let version = parsed.version.unwrap_or(1);
    let fields = Fields::read(parsed.headers)?;

    if method == "CONNECT" {
        let (host, port) = parse_authority(&target, None).map_err(|why| {
            format!(
                "CONNECT needs host:port, and '{}' is not one: {why}",
                printable(&target)
            )
        })?;
        let with_target = |what: String| RequestError {
            what,
            target: Some((host.clone(), port)),
        };
        if fields.content_length.is_some() || fields.transfer_encoding {
            return Err(with_target("a CONNECT request carries no body".into()));
        }
        if let Some(host_header) = &fields.host {
            check_host_header(host_header, &host, port, true).map_err(with_target)?;
        }
        return Ok(Request {
            host,
            port,
            method_is_head: false,
            kind: Kind::Connect,
        });
    }

    let (host, port, path) = absolute_target(&target)?;
    let with_target = |what: String| RequestError {
        what,
        target: Some((host.clone(), port)),
    };
    if let Some(host_header) = &fields.host {
        check_host_header(host_header, &host, port, false).map_err(with_target)?;
    }
    if version == 0 && fields.transfer_encoding {
        return Err(with_target(
            "an HTTP/1.0 request cannot use Transfer-Encoding".into(),
        ));
    }
    let framing = match (fields.content_length, fields.transfer_encoding) {
        (Some(_), true) => {
            return Err(with_target(
                "the request has both Content-Length and Transfer-Encoding".into(),
            ))
        }
        (Some(0), false) | (None, false) => Framing::None,
        (Some(length), false) => Framing::Length(length),
        (None, true) => Framing::Chunked,
    };
    let authority = if port == 80 {
        host.to_string()
    } else {
        host.with_port(port)
    };
    let mut out = Vec::with_capacity(head.len() + 64);
    out.extend_from_slice(format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n").as_bytes());
    for header in parsed.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        if name == "host"
            || HOP_BY_HOP.contains(&name.as_str())
            || name.starts_with("proxy-")
            || fields.connection_names.contains(&name)
        {
            continue;
        }
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        host,
        port,
        method_is_head: method == "HEAD",
        kind: Kind::Forward { head: out, framing },
    })
}

/// The headers that decide framing and routing, checked.
struct Fields {
    host: Option<String>,
    content_length: Option<u64>,
    transfer_encoding: bool,
    /// Header names listed in `Connection` (hop-by-hop by declaration), lower case.
    connection_names: Vec<String>,
}

impl Fields {
    fn read(headers: &[httparse::Header<'_>]) -> Result<Fields, String> {
        let mut fields = Fields {
            host: None,
            content_length: None,
            transfer_encoding: false,
            connection_names: Vec::new(),
        };
        for header in headers {
            let name = header.name.to_ascii_lowercase();
            // Only the headers read here need to be text; others pass as they are.
            let text = || {
                std::str::from_utf8(header.value)
                    .map(|value| value.trim_matches([' ', '\t']))
                    .map_err(|_| format!("the {} header is not valid text", header.name))
            };
            match name.as_str() {
                "host" if fields.host.is_some() => {
                    return Err("the request has two Host headers".into());
                }
                "host" => fields.host = Some(text()?.to_string()),
                "content-length" => {
                    if fields.content_length.is_some() {
                        return Err("the request has two Content-Length headers".into());
                    }
                    let value = text()?;
                    if value.is_empty()
                        || value.len() > 18
                        || !value.bytes().all(|b| b.is_ascii_digit())
                    {
                        return Err(format!(
                            "Content-Length '{}' is not a number",
                            printable(value)
                        ));
                    }
                    fields.content_length = value.parse().ok();
                }
                "transfer-encoding" => {
                    if fields.transfer_encoding {
                        return Err("the request has two Transfer-Encoding headers".into());
                    }
                    let value = text()?;
                    if !value.eq_ignore_ascii_case("chunked") {
                        return Err(format!(
                            "Transfer-Encoding '{}' is not forwarded; only 'chunked' is",
                            printable(value)
                        ));
                    }
                    fields.transfer_encoding = true;
                }
                "connection" => {
                    for token in text()?.split(',') {
                        let token = token.trim_matches([' ', '\t']).to_ascii_lowercase();
                        if matches!(
                            token.as_str(),
                            "host" | "content-length" | "transfer-encoding"
                        ) {
                            return Err(format!("Connection may not name the {token} header"));
                        }
                        if !token.is_empty() {
                            fields.connection_names.push(token);
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(fields)
    }
}

/// `http://host[:port][/path][?query]` → host, port, origin-form path.
fn absolute_target(target: &str) -> Result<(Host, u16, String), String> {
    let scheme_end = target.find("://");
    let scheme = scheme_end.map(|end| &target[..end]);
    match scheme {
        Some(scheme) if scheme.eq_ignore_ascii_case("http") => {}
        Some(scheme) if scheme.eq_ignore_ascii_case("https") => {
            return Err("an https:// URL goes through CONNECT (a tunnel): give the client the proxy as HTTPS_PROXY".into())
        }
        Some(scheme) => {
            return Err(format!(
                "the scheme '{}' is not proxied; only http:// requests and CONNECT",
                printable(scheme)
            ))
        }
        None => {
            return Err(format!(
                "'{}' is not an absolute URL: this is a proxy, send http://host/path (or CONNECT host:port)",
                printable(target)
            ))
        }
    }
    let rest = &target[scheme_end.unwrap_or(0) + 3..];
    if rest.contains('#') {
        return Err("the request target has a fragment ('#')".into());
    }
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err("credentials in the URL are not forwarded; send them in a header".into());
    }
    let (host, port) = parse_authority(authority, Some(80))
        .map_err(|why| format!("the host of '{}' is not valid: {why}", printable(target)))?;
    let path = match path.chars().next() {
        None => "/".to_string(),
        Some('?') => format!("/{path}"),
        _ => path.to_string(),
    };
    Ok((host, port, path))
}

/// The Host header must name the same host and port as the request target.
fn check_host_header(value: &str, host: &Host, port: u16, connect: bool) -> Result<(), String> {
    let default_port = if connect { Some(port) } else { Some(80) };
    match parse_authority(value, default_port) {
        Ok((header_host, header_port)) if &header_host == host && header_port == port => Ok(()),
        _ => Err(format!(
            "the Host header '{}' does not match the request target {}",
            printable(value),
            host.with_port(port)
        )),
    }
}

/// A response head, rewritten for the client.
struct Response {
    head: Vec<u8>,
    /// 1xx (but 101): another head follows.
    interim: bool,
    /// 204, 304: no body whatever the headers say.
    no_body: bool,
    framing: Framing,
}

fn parse_response(head: &[u8]) -> Result<Response, String> {
    check_raw_head(head).map_err(|what| format!("the server's response is malformed: {what}"))?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    match parsed.parse(head) {
        Ok(httparse::Status::Complete(n)) if n == head.len() => {}
        Ok(_) => return Err("the server's response head is incomplete".into()),
        Err(err) => {
            return Err(format!(
                "the server's response is malformed: {}",
                httparse_error(err)
            ))
        }
    }
    let code = parsed.code.unwrap_or(0);
    let reason = parsed.reason.unwrap_or("");
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut transfer_encoding = false;
    let mut connection_names = Vec::new();
    for header in parsed.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        let value = String::from_utf8_lossy(header.value);
        let value = value.trim_matches([' ', '\t']);
        match name.as_str() {
            "content-length" => {
                let length: u64 = value
                    .parse()
                    .map_err(|_| "the server sent an invalid Content-Length".to_string())?;
                if content_length.is_some_and(|earlier| earlier != length) {
                    return Err("the server sent two different Content-Length headers".into());
                }
                content_length = Some(length);
            }
            "transfer-encoding" => {
                transfer_encoding = true;
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            }
            "connection" => connection_names.extend(
                value
                    .split(',')
                    .map(|token| token.trim().to_ascii_lowercase())
                    .filter(|token| !token.is_empty()),
            ),
            _ => {}
        }
    }
    let framing = if transfer_encoding {
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        match content_length {
            Some(0) => Framing::None,
            Some(length) => Framing::Length(length),
            None => Framing::UntilClose,
        }
    };
    let mut out = Vec::with_capacity(head.len() + 32);
    out.extend_from_slice(format!("HTTP/1.1 {code} {reason}\r\n").as_bytes());
    for header in parsed.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&name.as_str())
            || connection_names.contains(&name)
            || (transfer_encoding && name == "content-length")
        {
            continue;
        }
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.value);
        out.extend_from_slice(b"\r\n");
    }
    let interim = (100..200).contains(&code) && code != 101;
    if !interim {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(Response {
        head: out,
        interim,
        no_body: code == 204 || code == 304 || code == 101,
        framing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(head: &str) -> Result<Request, String> {
        parse_request(head.as_bytes()).map_err(|err| err.what)
    }

    fn forwarded(head: &str) -> (String, Framing) {
        match parse(head).unwrap().kind {
            Kind::Forward { head, framing } => (String::from_utf8(head).unwrap(), framing),
            Kind::Connect => panic!("not forwarded"),
        }
    }

    #[test]
    fn an_absolute_request_is_rewritten_for_one_hop() {
        let (head, framing) = forwarded(
            "GET http://Example.com:8080/a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: t\r\nProxy-Authorization: Basic x\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: websocket\r\n\r\n",
        );
        assert_eq!(
            head,
            "GET /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: t\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(framing, Framing::None);
        let (head, _) = forwarded("GET http://example.com HTTP/1.0\r\n\r\n");
        assert!(
            head.starts_with("GET / HTTP/1.1\r\nHost: example.com\r\n"),
            "{head}"
        );
        let (head, _) = forwarded("GET http://example.com?q HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("GET /?q HTTP/1.1\r\n"), "{head}");
        let (_, framing) =
            forwarded("POST http://example.com/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(framing, Framing::Length(5));
        let (head, framing) =
            forwarded("POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n");
        assert_eq!(framing, Framing::Chunked);
        assert!(head.contains("Transfer-Encoding: Chunked\r\n"));
    }

    #[test]
    fn connect_takes_host_and_port() {
        let request =
            parse("CONNECT Example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").unwrap();
        assert_eq!(request.host, Host::Name("example.com".into()));
        assert_eq!(request.port, 443);
        assert!(matches!(request.kind, Kind::Connect));
        assert!(parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").is_ok());
        assert!(parse("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n").is_ok());
        for bad in [
            "CONNECT example.com HTTP/1.1\r\n\r\n",
            "CONNECT example.com:0 HTTP/1.1\r\n\r\n",
            "CONNECT http://example.com:443 HTTP/1.1\r\n\r\n",
            "CONNECT example.com:443 HTTP/1.1\r\nHost: other.com:443\r\n\r\n",
            "CONNECT example.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn smuggling_and_malformed_heads_are_refused() {
        for (head, says) in [
            ("POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "both"),
            ("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "both"),
            ("POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", "two Content-Length"),
            ("POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "two Content-Length"),
            ("POST http://a.test/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", "not a number"),
            ("POST http://a.test/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", "not a number"),
            ("POST http://a.test/ HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n", "not a number"),
            ("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "only 'chunked'"),
            ("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "two Transfer-Encoding"),
            ("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", "header name"),
            ("POST http://a.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0"),
            ("GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", "folding"),
            ("GET http://a.test/ HTTP/1.1\r\nX-A: 1\r\n\tfolded\r\n\r\n", "folding"),
            ("GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", "does not match"),
            ("GET http://a.test/ HTTP/1.1\r\nHost: a.test:81\r\n\r\n", "does not match"),
            ("GET http://a.test:8080/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "does not match"),
            ("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", "two Host"),
            ("GET http://a.test/ x HTTP/1.1\r\n\r\n", "malformed"),
            ("GET http://a.test/\0 HTTP/1.1\r\n\r\n", "NUL"),
            ("GET http://a.test/ HTTP/1.1\r\nX-A: a\0b\r\n\r\n", "NUL"),
            ("GET http://a.test/ HTTP/1.1\nHost: a.test\r\n\r\n", "CRLF"),
            ("GET http://a.test/ HTTP/1.1\r\nX-A: a\rb\r\n\r\n", "CRLF"),
            ("GET http://a.test/ HTTP/1.1\r\nConnection: content-length\r\nContent-Length: 3\r\n\r\n", "may not name"),
            ("GET http://a.test/ HTTP/1.1\r\nConnection: close, Transfer-Encoding\r\n\r\n", "may not name"),
            ("GET /path HTTP/1.1\r\nHost: a.test\r\n\r\n", "not an absolute URL"),
            ("GET https://a.test/ HTTP/1.1\r\n\r\n", "CONNECT"),
            ("GET ftp://a.test/ HTTP/1.1\r\n\r\n", "not proxied"),
            ("GET http://user:pw@a.test/ HTTP/1.1\r\n\r\n", "credentials"),
            ("GET http://a.test/#frag HTTP/1.1\r\n\r\n", "fragment"),
            ("GET http://a%2etest/ HTTP/1.1\r\n\r\n", "not valid"),
            ("GET http://a.test:99999/ HTTP/1.1\r\n\r\n", "not valid"),
            ("GET http:///x HTTP/1.1\r\n\r\n", "not valid"),
            ("GET http://a.test/ HTTP/2.0\r\n\r\n", "version"),
        ] {
            let err = parse(head).unwrap_err();
            assert!(err.contains(says), "{head:?}: {err}");
        }
        let many: String = (0..=MAX_HEADERS).map(|n| format!("X-{n}: 1\r\n")).collect();
        let err = parse(&format!("GET http://a.test/ HTTP/1.1\r\n{many}\r\n")).unwrap_err();
        assert!(err.contains("more than"), "{err}");
    }

    #[test]
    fn a_refused_target_is_still_named() {
        let err =
            parse_request(b"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n").unwrap_err();
        assert_eq!(err.target, Some((Host::Name("a.test".into()), 80)));
    }

    #[test]
    fn responses_are_rewritten_and_framed() {
        let response = parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Kept: 2\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(response.head).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Kept: 2\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(response.framing, Framing::Length(5));
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n",
        )
        .unwrap();
        assert_eq!(chunked.framing, Framing::Chunked);
        assert!(!String::from_utf8(chunked.head)
            .unwrap()
            .contains("Content-Length"));
        let until_close = parse_response(b"HTTP/1.0 200 OK\r\n\r\n").unwrap();
        assert_eq!(until_close.framing, Framing::UntilClose);
        let interim = parse_response(b"HTTP/1.1 100 Continue\r\n\r\n").unwrap();
        assert!(interim.interim);
        assert!(
            parse_response(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")
                .unwrap()
                .no_body
        );
        assert!(parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
        )
        .is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n").is_err());
    }
}
