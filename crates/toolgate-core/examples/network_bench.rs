//! Benchmark of the egress proxy (`npm run bench network`, tests/bench/network.bench.ts): an
//! HTTP server on 127.0.0.1, reached directly (the baseline, as with `network: true`) and
//! through the proxy, in the same run, rounds interleaved.
//!
//! - a 100 MB download: directly, through the proxy as an absolute-form request (`http_proxy`)
//!   and through a CONNECT tunnel (`https_proxy`), by a Rust client; the same with curl when it
//!   is installed (a real client reading as fast as it can);
//! - 1,000 sequential small requests each way, each on a new connection, direct and proxied
//!   (absolute-form) alternating: the median of each, for the latency the proxy adds to a new
//!   connection.
//!
//! Usage: network_bench [megabytes] [requests] [rounds]. Prints one JSON object.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::json;
use toolgate_core::network::{
    table_lookup, CallContext, NetworkAccess, NetworkSetting, Proxy, ProxyConfig,
};

/// CPU time the server's threads spent sending downloads (a thread's own accounting, read
/// before it ends).
static SERVER_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// Serves `GET /big` (the download) and `GET /small` on 127.0.0.1, one thread per connection.
fn start_server(big_bytes: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let chunk = vec![b'x'; 1024 * 1024];
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let chunk = chunk.clone();
            let _ = std::thread::Builder::new()
                .name("bench-server".into())
                .spawn(move || serve(stream, big_bytes, &chunk));
        }
    });
    address
}

fn serve(stream: TcpStream, big_bytes: usize, chunk: &[u8]) {
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    if request_line.contains(" /big ") {
        let head =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {big_bytes}\r\nConnection: close\r\n\r\n");
        let _ = writer.write_all(head.as_bytes());
        let started = own_cpu_ns();
        let mut left = big_bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            if writer.write_all(&chunk[..n]).is_err() {
                break;
            }
            left -= n;
        }
        SERVER_CPU_NS.fetch_add(own_cpu_ns() - started, Ordering::Relaxed);
    } else {
        let _ = writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    }
}

/// One request on a new connection; returns the bytes read (head and body).
fn request(to: SocketAddr, head: &str, tunnel: Option<&str>) -> usize {
    let mut stream = TcpStream::connect(to).unwrap();
    stream.set_nodelay(true).unwrap();
    if let Some(connect) = tunnel {
        stream.write_all(connect.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            answer.push(byte[0]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"), "tunnel refused");
    }
    stream.write_all(head.as_bytes()).unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(err) => panic!("read failed: {err}"),
        }
    }
    total
}

fn seconds(run: impl FnOnce()) -> f64 {
    let started = Instant::now();
    run();
    started.elapsed().as_secs_f64()
}

/// CPU time used so far by the proxy's threads (named `toolgate-proxy`), in nanoseconds, from
/// the scheduler's own accounting: unlike wall time, it does not grow when a busy machine makes
/// the proxy wait for a core.
fn proxy_cpu_ns() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with("toolgate-proxy") {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            total += stat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// CPU time used so far by the calling thread, in nanoseconds.
fn own_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .unwrap_or(0)
}

/// CPU time of each party, summed over downloads.
#[derive(Default)]
struct Cpu {
    server: u64,
    proxy: u64,
    client: u64,
}

impl Cpu {
    /// Runs one download on this thread (the client), adding each party's CPU time; returns
    /// its wall time in seconds.
    fn add(&mut self, download: impl FnOnce()) -> f64 {
        let before = (
            SERVER_CPU_NS.load(Ordering::Relaxed),
            proxy_cpu_ns(),
            own_cpu_ns(),
        );
        let secs = seconds(download);
        self.server += SERVER_CPU_NS.load(Ordering::Relaxed) - before.0;
        self.proxy += proxy_cpu_ns() - before.1;
        self.client += own_cpu_ns() - before.2;
        secs
    }

    fn json(&self, rounds: usize) -> serde_json::Value {
        let ms = |ns: u64| ns as f64 / rounds as f64 / 1e6;
        json!({ "server": ms(self.server), "proxy": ms(self.proxy), "client": ms(self.client) })
    }
}

/// The median: a busy machine's spikes move it less than a mean.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn curl_seconds(url: &str, proxy: Option<&str>) -> Option<f64> {
    let mut command = Command::new("curl");
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command.args(["-q", "-s", "-o", "/dev/null", "-w", "%{time_total}"]);
    match proxy {
        Some(proxy) => command.args(["--proxy", proxy]),
        None => command.arg("--noproxy").arg("*"),
    };
    let out = command.arg(url).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let megabytes: usize = args
        .next()
        .map_or(100, |value| value.parse().expect("megabytes"));
    let requests: usize = args
        .next()
        .map_or(1000, |value| value.parse().expect("requests"));
    let rounds: usize = args
        .next()
        .map_or(10, |value| value.parse().expect("rounds"));
    let big_bytes = megabytes * 1024 * 1024;

    let server = start_server(big_bytes);
    let proxy = Proxy::start(ProxyConfig {
        lookup: table_lookup(HashMap::from([(
            "bench.test".to_string(),
            vec![server.ip()],
        )])),
        ..ProxyConfig::default()
    })
    .unwrap();
    let setting =
        NetworkSetting::from_json(&json!({ "allow": ["bench.test", "127.0.0.1"] }), "network")
            .unwrap();
    let NetworkAccess::Hosts(policy) = setting.access() else {
        unreachable!("an object is a host policy")
    };
    let call = proxy
        .listen(CallContext::new("bench", "bench", policy))
        .unwrap();
    let via = call.local_addr();
    let port = server.port();

    let direct_big =
        "GET /big HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n".to_string();
    let forward_big =
        format!("GET http://bench.test:{port}/big HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n");
    let connect = format!("CONNECT bench.test:{port} HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n");
    let direct_small =
        "GET /small HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n".to_string();
    let forward_small =
        format!("GET http://bench.test:{port}/small HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n");

    // Warm up: threads, page cache, the proxy's runtime.
    request(server, &direct_big, None);
    request(via, &forward_big, None);
    for _ in 0..50 {
        request(server, &direct_small, None);
        request(via, &forward_small, None);
    }

    let (mut direct, mut forward, mut tunnel) = (f64::MAX, f64::MAX, f64::MAX);
    let (mut small_direct, mut small_forward) = (Vec::new(), Vec::new());
    let (mut direct_cpu, mut forward_cpu, mut tunnel_cpu) =
        (Cpu::default(), Cpu::default(), Cpu::default());
    let (mut curl_direct, mut curl_proxied): (Option<f64>, Option<f64>) = (None, None);
    let big_url = format!("http://bench.test:{port}/big");
    for _ in 0..rounds {
        direct =
            direct.min(direct_cpu.add(|| assert!(request(server, &direct_big, None) > big_bytes)));
        forward =
            forward.min(forward_cpu.add(|| assert!(request(via, &forward_big, None) > big_bytes)));
        tunnel = tunnel
            .min(tunnel_cpu.add(|| assert!(request(via, &direct_big, Some(&connect)) > big_bytes)));
        let direct_url = format!("http://127.0.0.1:{port}/big");
        let best = |current: Option<f64>, new: Option<f64>| match (current, new) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        curl_direct = best(curl_direct, curl_seconds(&direct_url, None));
        curl_proxied = best(
            curl_proxied,
            curl_seconds(&big_url, Some(&call.proxy_url())),
        );
    }
    // Call by call, alternating, so that drift on a busy machine hits both alike.
    for _ in 0..requests {
        small_direct.push(seconds(|| {
            request(server, &direct_small, None);
        }));
        small_forward.push(seconds(|| {
            request(via, &forward_small, None);
        }));
    }
    let megabytes_per_second = |secs: f64| big_bytes as f64 / (1024.0 * 1024.0) / secs;
    let records = call.finish_blocking();
    println!(
        "{}",
        json!({
            "megabytes": megabytes,
            "requests": requests,
            "rounds": rounds,
            "download": {
                "directMBps": megabytes_per_second(direct),
                "forwardMBps": megabytes_per_second(forward),
                "tunnelMBps": megabytes_per_second(tunnel),
                "curlDirectMBps": curl_direct.map(megabytes_per_second),
                "curlProxiedMBps": curl_proxied.map(megabytes_per_second),
                // CPU per download, averaged over the rounds: the sending server's
                // threads, the proxy's and the receiving client's.
                "cpuMs": {
                    "direct": direct_cpu.json(rounds),
                    "forward": forward_cpu.json(rounds),
                    "tunnel": tunnel_cpu.json(rounds),
                },
            },
            "newConnection": {
                "directMs": median(&mut small_direct) * 1000.0,
                "proxiedMs": median(&mut small_forward) * 1000.0,
                "directMeanMs": mean(&small_direct) * 1000.0,
                "proxiedMeanMs": mean(&small_forward) * 1000.0,
            },
            "recordsKept": records.len(),
        })
    );
}
