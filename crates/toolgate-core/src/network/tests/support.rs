//! What the proxy's end-to-end tests share: servers on 127.0.0.1 (a keep-alive HTTP server
//! that records every request it parses, a TCP echo service, Python's static file server over
//! HTTP and HTTPS), a self-signed certificate made with the `openssl` command, a proxy with a
//! table resolver (no DNS), and real client processes run with nothing but the proxy in their
//! environment.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::network::{
    table_lookup, CallContext, CallHandle, ConnectionRecord, Lookup, NetworkAccess, NetworkPolicy,
    NetworkSetting, Proxy, ProxyConfig,
};

/// Names the test resolver knows. `web.test` is the local servers' name.
pub const NAMES: &[(&str, &[&str])] = &[
    ("web.test", &["127.0.0.1"]),
    ("other.test", &["127.0.0.1"]),
    ("localhost", &["127.0.0.1"]),
    ("private.test", &["10.0.0.5"]),
    ("metadata.test", &["169.254.169.254"]),
    ("mapped.test", &["::ffff:127.0.0.1"]),
    ("mixed.test", &["10.0.0.5", "127.0.0.1"]),
    ("public.test", &["192.88.99.1"]),
];

pub fn names() -> Lookup {
    let table: HashMap<String, Vec<IpAddr>> = NAMES
        .iter()
        .map(|(name, ips)| {
            (
                name.to_string(),
                ips.iter().map(|ip| ip.parse().unwrap()).collect(),
            )
        })
        .collect();
    table_lookup(table)
}

/// A proxy of the test's own, resolving through [`NAMES`], with short timeouts.
pub fn proxy() -> Proxy {
    proxy_with(ProxyConfig {
        lookup: names(),
        head_timeout: Duration::from_secs(3),
        connect_timeout: Duration::from_secs(3),
        ..ProxyConfig::default()
    })
}

pub fn proxy_with(config: ProxyConfig) -> Proxy {
    Proxy::start(config).unwrap()
}

/// A policy from its JSON spelling.
pub fn policy(value: Value) -> NetworkPolicy {
    match NetworkSetting::from_json(&value, "network")
        .unwrap()
        .access()
    {
        NetworkAccess::Hosts(policy) => policy,
        other => panic!("not a host policy: {other:?}"),
    }
}

/// Serves one call with `policy` on a fresh listener.
pub fn serve(proxy: &Proxy, policy_json: Value) -> CallHandle {
    proxy
        .listen(CallContext::new("call-1", "shell", policy(policy_json)))
        .unwrap()
}

// --- servers -------------------------------------------------------------------------------

/// A keep-alive HTTP/1.1 server, lenient like many backends: it parses every request that
/// reaches it, so a request smuggled past the proxy would show up in [`Web::requests`].
pub struct Web {
    pub port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
}

impl Web {
    pub fn start() -> Web {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (seen, count) = (Arc::clone(&requests), Arc::clone(&connections));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve_http(stream, seen, port));
            }
        });
        Web {
            port,
            requests,
            connections,
        }
    }

    /// Every request parsed so far: head and body as text.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn serve_http(stream: TcpStream, seen: Arc<Mutex<Vec<String>>>, port: u16) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            head.push_str(&line);
            if line == "\r\n" || line == "\n" {
                break;
            }
        }
        let header = |name: &str| {
            head.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| value.trim().to_string())
            })
        };
        let mut body = Vec::new();
        if header("transfer-encoding").is_some_and(|value| value.to_lowercase().contains("chunked"))
        {
            loop {
                let mut size = String::new();
                if reader.read_line(&mut size).unwrap_or(0) == 0 {
                    return;
                }
                let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                    .unwrap_or(0);
                let mut chunk = vec![0u8; size + 2];
                if reader.read_exact(&mut chunk).is_err() {
                    return;
                }
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) =
            header("content-length").and_then(|value| value.parse::<usize>().ok())
        {
            body.resize(length, 0);
            if reader.read_exact(&mut body).is_err() {
                return;
            }
        }
        let request = format!("{head}{}", String::from_utf8_lossy(&body));
        seen.lock().unwrap().push(request.clone());
        let path = head.split(' ').nth(1).unwrap_or("/").to_string();
        let close = header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close"));
        let (status, extra, body) = match path.as_str() {
            "/hello" => ("200 OK", String::new(), b"hello from web".to_vec()),
            "/echo" => ("200 OK", String::new(), request.into_bytes()),
            "/redirect-private" => (
                "302 Found",
                format!("Location: http://10.0.0.5:{port}/hello\r\n"),
                Vec::new(),
            ),
            // A redirect to the host after the prefix, on the same port.
            other if other.starts_with("/redirect-to/") => (
                "302 Found",
                format!("Location: http://{}:{port}/hello\r\n", &other[13..]),
                Vec::new(),
            ),
            other if other.starts_with("/big/") => {
                let size: usize = other[5..].parse().unwrap_or(0);
                ("200 OK", String::new(), vec![b'x'; size])
            }
            other if other.starts_with("/until-close/") => {
                // No length: the body ends when the connection does.
                let size: usize = other[13..].parse().unwrap_or(0);
                let mut reply = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
                reply.extend(std::iter::repeat_n(b'y', size));
                let _ = writer.write_all(&reply);
                return;
            }
            "/chunked" => {
                let reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n";
                if writer.write_all(reply.as_bytes()).is_err() || close {
                    return;
                }
                continue;
            }
            _ => ("404 Not Found", String::new(), b"missing".to_vec()),
        };
        let mut reply = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nKeep-Alive: timeout=5\r\n{extra}\r\n",
            body.len()
        )
        .into_bytes();
        reply.extend_from_slice(&body);
        if writer.write_all(&reply).is_err() || close {
            return;
        }
    }
}

/// A TCP service that echoes what it is sent.
pub struct Echo {
    pub port: u16,
    connections: Arc<AtomicUsize>,
}

impl Echo {
    pub fn start() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&connections);
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Echo { port, connections }
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The self-signed certificate for `web.test` and 127.0.0.1, made once per test process with
/// the `openssl` command.
pub struct Certificate {
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn certificate() -> &'static Certificate {
    static CERTIFICATE: OnceLock<Certificate> = OnceLock::new();
    CERTIFICATE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let status = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
            ])
            .args([
                "-subj",
                "/CN=web.test",
                "-addext",
                "subjectAltName=DNS:web.test,IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("the openssl command makes the test certificate");
        assert!(status.success(), "openssl could not make the certificate");
        Certificate { cert, key }
    })
}

const STATIC_SERVER: &str = r#"
import functools, http.server, ssl, sys
directory = sys.argv[1]
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
handler = functools.partial(Quiet, directory=directory)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
if len(sys.argv) > 2:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// Python's static file server on 127.0.0.1, over HTTP or (with the test certificate) HTTPS.
pub struct StaticServer {
    pub port: u16,
    child: Child,
}

impl StaticServer {
    pub fn start(directory: &Path, tls: bool) -> StaticServer {
        let mut command = Command::new("python3");
        command.arg("-c").arg(STATIC_SERVER).arg(directory);
        if tls {
            let certificate = certificate();
            command.arg(&certificate.cert).arg(&certificate.key);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the static server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .expect("the static server prints its port");
        StaticServer { port, child }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// --- clients -------------------------------------------------------------------------------

/// A program with an empty environment but PATH, a private HOME and the proxy variables.
pub fn client(program: &str, proxy: SocketAddr, home: &Path) -> Command {
    let mut command = Command::new(program);
    command.env_clear();
    command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command.env("HOME", home);
    command.env("LANG", "C.UTF-8");
    let url = format!("http://{proxy}");
    for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"] {
        command.env(name, &url);
    }
    command.env("ALL_PROXY", format!("socks5h://{proxy}"));
    command.env("all_proxy", format!("socks5h://{proxy}"));
    command.env("NO_PROXY", "");
    command.env("no_proxy", "");
    command
}

/// Runs a command, failing the test with its output when it cannot start.
pub fn run(command: &mut Command) -> Output {
    command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|err| panic!("{command:?} could not start: {err}"))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Sends `request` to the proxy as a raw client and reads until the proxy closes.
pub fn exchange(proxy: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(proxy).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    read_to_close(&mut stream)
}

pub fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    text(&out)
}

/// Reads one HTTP response head (up to the blank line).
pub fn read_head(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while !out.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => out.push(byte[0]),
            _ => break,
        }
    }
    text(&out)
}

/// The call's records once it holds at least `count` (a connection is recorded when the
/// proxy is done with it, which may be just after the client is).
pub fn records_at_least(handle: &CallHandle, count: usize) -> Vec<ConnectionRecord> {
    for _ in 0..500 {
        let records = handle.records();
        if records.len() >= count {
            return records;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!(
        "the call has {} records, not {count}",
        handle.records().len()
    )
}

/// The call's records once its connections are closed.
pub fn finish(handle: CallHandle) -> Vec<ConnectionRecord> {
    handle.finish_blocking()
}
