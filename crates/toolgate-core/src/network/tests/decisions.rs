//! The proxy's decisions end to end: deny over allow, internal addresses, asking, records,
//! limits and timeouts, listeners handed in from elsewhere.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::support::*;
use crate::network::{
    AskAnswer, AskRequest, Asker, CallContext, ConnectionRecord, DecidedBy, Decision, Lookup,
    Proxy, ProxyConfig, RunAllowances,
};

fn get(proxy: std::net::SocketAddr, host: &str, port: u16, path: &str) -> String {
    exchange(
        proxy,
        format!("GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n")
            .as_bytes(),
    )
}

#[test]
fn deny_wins_over_allow() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(
        &proxy,
        json!({ "allow": ["*.test", "127.0.0.1"], "deny": ["other.test", "127.0.0.1:1"] }),
    );
    assert!(get(call.local_addr(), "web.test", web.port, "/hello").ends_with("hello from web"));
    let refused = get(call.local_addr(), "other.test", web.port, "/hello");
    assert!(
        refused.starts_with("HTTP/1.1 403 Forbidden\r\n"),
        "{refused}"
    );
    assert!(
        refused.contains(&format!(
            "toolgate: connection to other.test:{} refused: it matches network.deny entry 'other.test'",
            web.port
        )),
        "{refused}"
    );
    let records = finish(call);
    let denied = records.iter().find(|record| record.refused()).unwrap();
    assert_eq!(
        (denied.decided_by, denied.rule.as_deref()),
        (DecidedBy::Rule, Some("other.test"))
    );
    assert_eq!(web.requests().len(), 1);
}

#[test]
fn a_name_resolving_to_loopback_needs_the_address_allowed() {
    let web = Web::start();
    let proxy = proxy();
    // The name alone: refused after resolution, naming the address.
    let by_name = serve(
        &proxy,
        json!({ "allow": ["localhost", "web.test", "mapped.test"] }),
    );
    for host in ["localhost", "web.test", "mapped.test"] {
        let refused = get(by_name.local_addr(), host, web.port, "/hello");
        assert!(refused.starts_with("HTTP/1.1 403"), "{host}: {refused}");
        assert!(
            refused.contains(&format!("{host} resolves to")),
            "{refused}"
        );
        assert!(
            refused.contains("a loopback address") || refused.contains("IPv4-mapped"),
            "{refused}"
        );
        assert!(
            refused.contains("network.allow: [\"127.0.0.1\"]")
                || refused.contains("::ffff:127.0.0.1"),
            "{refused}"
        );
    }
    assert_eq!(web.connections(), 0);
    let records = finish(by_name);
    assert!(
        records
            .iter()
            .all(|record| record.decided_by == DecidedBy::Address),
        "{records:?}"
    );
    // The address allowed too: reached.
    let with_address = serve(&proxy, json!({ "allow": ["localhost", "127.0.0.1"] }));
    assert!(
        get(with_address.local_addr(), "localhost", web.port, "/hello").ends_with("hello from web")
    );
    // ... and only on the port its entry names.
    let with_port = serve(
        &proxy,
        json!({ "allow": ["localhost", format!("127.0.0.1:{}", web.port + 1)] }),
    );
    assert!(
        get(with_port.local_addr(), "localhost", web.port, "/hello").starts_with("HTTP/1.1 403")
    );
}

#[test]
fn the_system_resolver_is_used_by_default() {
    let web = Web::start();
    let proxy = Proxy::start(ProxyConfig::default()).unwrap();
    let call = serve(
        &proxy,
        json!({ "allow": ["localhost", "127.0.0.1", "::1"] }),
    );
    assert!(get(call.local_addr(), "localhost", web.port, "/hello").ends_with("hello from web"));
    let shared = Proxy::shared().unwrap();
    assert!(
        std::ptr::eq(shared, Proxy::shared().unwrap()),
        "one proxy per process"
    );
    let refused = serve(shared, json!({ "allow": ["localhost"] }));
    assert!(get(refused.local_addr(), "localhost", web.port, "/hello").starts_with("HTTP/1.1 403"));
}

#[test]
fn every_address_is_checked_and_only_a_checked_one_is_connected_to() {
    let web = Web::start();
    let lookups = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&lookups);
    // A rebinding resolver: the first answer is loopback (allowed), later answers private.
    let lookup: Lookup = Arc::new(move |_host: String| {
        let first = counted.fetch_add(1, Ordering::SeqCst) == 0;
        Box::pin(async move {
            let ip: IpAddr = if first { "127.0.0.1" } else { "10.0.0.5" }
                .parse()
                .unwrap();
            Ok(vec![ip])
        })
    });
    let proxy = proxy_with(ProxyConfig {
        lookup,
        ..ProxyConfig::default()
    });
    let call = serve(&proxy, json!({ "allow": ["rebind.test", "127.0.0.1"] }));
    assert!(get(call.local_addr(), "rebind.test", web.port, "/hello").ends_with("hello from web"));
    assert_eq!(
        lookups.load(Ordering::SeqCst),
        1,
        "resolved once, checked, used"
    );
    let second = get(call.local_addr(), "rebind.test", web.port, "/hello");
    assert!(
        second.contains("rebind.test resolves to 10.0.0.5, a private address"),
        "{second}"
    );

    // A name with a refused and an allowed answer (10.0.0.5 is not allowed, 127.0.0.1 is)
    // connects only to the allowed one.
    let table_proxy = super::support::proxy();
    let mixed = serve(
        &table_proxy,
        json!({ "allow": ["mixed.test", "127.0.0.1"] }),
    );
    let answer = get(mixed.local_addr(), "mixed.test", web.port, "/hello");
    assert!(
        answer.ends_with("hello from web"),
        "10.0.0.5 left out, 127.0.0.1 used: {answer}"
    );
    let records = finish(mixed);
    assert_eq!(
        records[0].address.as_deref(),
        Some(format!("127.0.0.1:{}", web.port).as_str())
    );
    // A deny entry on any answer refuses the whole name.
    let denied = serve(
        &table_proxy,
        json!({ "allow": ["mixed.test", "127.0.0.1", "10.0.0.5"], "deny": ["10.0.0.0/8"] }),
    );
    let answer = get(denied.local_addr(), "mixed.test", web.port, "/hello");
    assert!(
        answer.contains("10.0.0.5 matches network.deny entry '10.0.0.0/8'"),
        "{answer}"
    );
}

#[test]
fn unreachable_and_unresolvable_hosts_fail_clearly() {
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["*.test", "127.0.0.1"] }));
    let port = closed_port();
    let refused = get(call.local_addr(), "web.test", port, "/");
    assert!(refused.starts_with("HTTP/1.1 502 Bad Gateway"), "{refused}");
    assert!(
        refused.contains(&format!("toolgate: connection to web.test:{port} failed")),
        "{refused}"
    );
    let unknown = get(call.local_addr(), "unknown.test", 80, "/");
    assert!(
        unknown.contains("unknown.test could not be resolved"),
        "{unknown}"
    );
    let records = finish(call);
    // Allowed by the policy, failed afterwards: recorded as allowed, with what failed.
    assert!(
        records
            .iter()
            .all(|record| record.decision == Decision::Allowed),
        "{records:?}"
    );
    assert!(records.iter().all(|record| record.message.is_some()));
}

/// An asker that answers from a script and remembers what it was asked.
struct Scripted {
    answer: AskAnswer,
    delay: Duration,
    asked: Mutex<Vec<AskRequest>>,
}

impl Scripted {
    fn new(answer: AskAnswer, delay: Duration) -> Arc<Scripted> {
        Arc::new(Scripted {
            answer,
            delay,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<AskRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Asker for Scripted {
    fn ask(
        &self,
        request: AskRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = AskAnswer> + Send>> {
        self.asked.lock().unwrap().push(request);
        let (answer, delay) = (self.answer.clone(), self.delay);
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer
        })
    }
}

fn asking_call(
    proxy: &Proxy,
    asker: Option<Arc<Scripted>>,
    run: Arc<RunAllowances>,
    call_id: &str,
) -> crate::network::CallHandle {
    let mut context = CallContext::new(
        call_id,
        "shell",
        policy(json!({ "allow": ["127.0.0.1"], "deny": ["other.test"], "ask": true })),
    )
    .with_run(run);
    if let Some(asker) = asker {
        context = context.with_asker(asker);
    }
    proxy.listen(context).unwrap()
}

#[test]
fn ask_approves_one_connection_at_a_time() {
    let web = Web::start();
    let proxy = proxy();
    let asker = Scripted::new(AskAnswer::Approve, Duration::ZERO);
    let call = asking_call(
        &proxy,
        Some(Arc::clone(&asker)),
        RunAllowances::new(),
        "call-1",
    );
    for _ in 0..2 {
        assert!(get(call.local_addr(), "web.test", web.port, "/hello").ends_with("hello from web"));
    }
    let asked = asker.asked();
    assert_eq!(asked.len(), 2, "approve covers one connection");
    assert_eq!(
        (
            asked[0].host.as_str(),
            asked[0].port,
            asked[0].tool.as_str(),
            asked[0].tool_call_id.as_str()
        ),
        ("web.test", web.port, "shell", "call-1")
    );
    // Denied hosts are never asked about.
    assert!(get(call.local_addr(), "other.test", web.port, "/hello").starts_with("HTTP/1.1 403"));
    assert_eq!(asker.asked().len(), 2);
    let records = finish(call);
    assert_eq!(records[0].decision, Decision::AskedApproved);
    assert_eq!(records[0].decided_by, DecidedBy::User);
}

#[test]
fn always_holds_for_every_call_of_the_run() {
    let web = Web::start();
    let proxy = proxy();
    let run = RunAllowances::new();
    let asker = Scripted::new(AskAnswer::Always, Duration::ZERO);
    let first = asking_call(&proxy, Some(Arc::clone(&asker)), Arc::clone(&run), "call-1");
    assert!(get(first.local_addr(), "web.test", web.port, "/hello").ends_with("hello from web"));
    let second = asking_call(&proxy, Some(Arc::clone(&asker)), Arc::clone(&run), "call-2");
    assert!(get(second.local_addr(), "web.test", web.port, "/hello").ends_with("hello from web"));
    assert_eq!(asker.asked().len(), 1, "asked once for the run");
    assert_eq!(run.always(), vec![("web.test".to_string(), web.port)]);
    // Only that host and port.
    let other_port = Web::start();
    assert!(
        get(second.local_addr(), "web.test", other_port.port, "/hello").ends_with("hello from web")
    );
    assert_eq!(asker.asked().len(), 2);
    let first_records = finish(first);
    let second_records = finish(second);
    assert_eq!(
        (first_records[0].decision, first_records[0].decided_by),
        (Decision::Always, DecidedBy::User)
    );
    assert_eq!(
        (second_records[0].decision, second_records[0].decided_by),
        (Decision::Allowed, DecidedBy::RunAllowance)
    );
    // A new run asks again.
    let fresh = asking_call(
        &proxy,
        Some(Arc::clone(&asker)),
        RunAllowances::new(),
        "call-3",
    );
    get(fresh.local_addr(), "web.test", web.port, "/hello");
    assert_eq!(asker.asked().len(), 3);
}

#[test]
fn a_denial_carries_its_reason_and_nobody_to_ask_refuses() {
    let web = Web::start();
    let proxy = proxy();
    let asker = Scripted::new(
        AskAnswer::Deny {
            reason: Some("not during this task".into()),
        },
        Duration::ZERO,
    );
    let call = asking_call(&proxy, Some(asker), RunAllowances::new(), "call-1");
    let refused = get(call.local_addr(), "web.test", web.port, "/hello");
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(
        refused.contains(&format!(
            "toolgate: connection to web.test:{} refused: denied when asked: not during this task",
            web.port
        )),
        "{refused}"
    );
    let records = finish(call);
    assert_eq!(
        (records[0].decision, records[0].decided_by),
        (Decision::Denied, DecidedBy::User)
    );

    let unattended = asking_call(&proxy, None, RunAllowances::new(), "call-2");
    let refused = get(unattended.local_addr(), "web.test", web.port, "/hello");
    assert!(
        refused.contains("network.ask has nobody to ask"),
        "{refused}"
    );
    let records = finish(unattended);
    assert_eq!(records[0].decided_by, DecidedBy::NoHandler);
    assert_eq!(web.connections(), 0);
}

/// A resumed run may have nobody to ask (`toolgate resume` with answers only): the answers it
/// carries (an `always`, an answer for the next call of a tool) still hold, and nothing else
/// is let through.
#[test]
fn a_run_without_a_handler_keeps_the_answers_it_was_given() {
    let web = Web::start();
    let proxy = proxy();
    let run = RunAllowances::new();
    run.answer_next_call("web.test", web.port, "shell", AskAnswer::Approve);
    let retried = asking_call(&proxy, None, Arc::clone(&run), "call-2");
    for _ in 0..2 {
        let answer = get(retried.local_addr(), "web.test", web.port, "/hello");
        assert!(answer.ends_with("hello from web"), "{answer}");
    }
    let records = finish(retried);
    assert_eq!(
        (records[0].decision, records[0].decided_by),
        (Decision::AskedApproved, DecidedBy::User)
    );
    // The answer was the retried call's: the next call has nobody to ask again.
    let next = asking_call(&proxy, None, Arc::clone(&run), "call-3");
    let refused = get(next.local_addr(), "web.test", web.port, "/hello");
    assert!(refused.contains("nobody to ask"), "{refused}");
    drop(finish(next));
    // A denial given on resume holds the same way, with its reason.
    run.answer_next_call(
        "web.test",
        web.port,
        "shell",
        AskAnswer::Deny {
            reason: Some("use the mirror".into()),
        },
    );
    let denied = asking_call(&proxy, None, Arc::clone(&run), "call-4");
    let refused = get(denied.local_addr(), "web.test", web.port, "/hello");
    assert!(
        refused.contains("denied when asked: use the mirror"),
        "{refused}"
    );
    drop(finish(denied));
    // `always`, restored into the run: every later call, nobody asked.
    run.allow_always("web.test", web.port);
    let later = asking_call(&proxy, None, Arc::clone(&run), "call-5");
    let answer = get(later.local_addr(), "web.test", web.port, "/hello");
    assert!(answer.ends_with("hello from web"), "{answer}");
    assert_eq!(finish(later)[0].decided_by, DecidedBy::RunAllowance);
    assert_eq!(web.connections(), 3);
}

#[test]
fn concurrent_connections_wait_for_one_answer() {
    let web = Web::start();
    let proxy = proxy();
    let asker = Scripted::new(AskAnswer::Approve, Duration::from_millis(300));
    let call = asking_call(
        &proxy,
        Some(Arc::clone(&asker)),
        RunAllowances::new(),
        "call-1",
    );
    let address = call.local_addr();
    let port = web.port;
    let clients: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || get(address, "web.test", port, "/hello")))
        .collect();
    for client in clients {
        assert!(client.join().unwrap().ends_with("hello from web"));
    }
    assert_eq!(
        asker.asked().len(),
        1,
        "one question for the four connections"
    );
    let records = finish(call);
    assert_eq!(records.len(), 4);
    assert!(records
        .iter()
        .all(|record| record.decision == Decision::AskedApproved));
}

#[test]
fn records_reach_the_sink_as_they_are_made() {
    let web = Web::start();
    let proxy = proxy();
    let sunk: Arc<Mutex<Vec<ConnectionRecord>>> = Arc::default();
    let into = Arc::clone(&sunk);
    let context = CallContext::new(
        "call-9",
        "fetcher",
        policy(json!({ "allow": ["web.test", "127.0.0.1"] })),
    )
    .with_sink(Arc::new(move |record: &ConnectionRecord| {
        into.lock().unwrap().push(record.clone())
    }));
    let call = proxy.listen(context).unwrap();
    get(call.local_addr(), "web.test", web.port, "/big/100000");
    get(call.local_addr(), "private.test", web.port, "/");
    let records = finish(call);
    assert_eq!(*sunk.lock().unwrap(), records);
    assert_eq!(records.len(), 2);
    let big = &records[0];
    assert_eq!(
        (big.tool_call_id.as_str(), big.tool.as_str()),
        ("call-9", "fetcher")
    );
    assert!(
        big.bytes_down > 100_000 && big.bytes_down < 100_400,
        "{big:?}"
    );
    assert!(big.bytes_up > 40 && big.bytes_up < 400, "{big:?}");
    let json = serde_json::to_value(&records[1]).unwrap();
    assert_eq!(json["decision"], "denied");
    assert_eq!(json["decidedBy"], "policy");
    assert_eq!(json["toolCallId"], "call-9");
    assert!(json["message"].as_str().unwrap().contains("private.test"));
}

#[test]
fn a_call_has_a_limit_on_open_connections() {
    let echo = Echo::start();
    let proxy = proxy_with(ProxyConfig {
        lookup: names(),
        max_connections_per_call: 2,
        ..ProxyConfig::default()
    });
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let connect = |port: u16| {
        let mut stream = TcpStream::connect(call.local_addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
            .write_all(format!("CONNECT web.test:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .unwrap();
        let head = read_head(&mut stream);
        (stream, head)
    };
    let (_first, head) = connect(echo.port);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (_second, head) = connect(echo.port);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (mut third, head) = connect(echo.port);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(read_to_close(&mut third).contains("the call already has 2 connections open"));
    drop(_first);
    // A closed tunnel frees its place.
    let mut freed = false;
    for _ in 0..50 {
        let (_stream, head) = connect(echo.port);
        if head.starts_with("HTTP/1.1 200") {
            freed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(freed, "a place was freed");
    let records = finish(call);
    assert!(records
        .iter()
        .any(|record| record.decided_by == DecidedBy::Limit));
}

#[test]
fn finishing_a_call_cuts_its_connections_and_records_them() {
    let echo = Echo::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let mut stream = TcpStream::connect(call.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(format!("CONNECT web.test:{} HTTP/1.1\r\n\r\nping", echo.port).as_bytes())
        .unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200"));
    let mut echoed = [0u8; 4];
    stream.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"ping");
    let address = call.local_addr();
    let records = finish(call);
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].bytes_up, records[0].bytes_down), (4, 4));
    assert_eq!(read_to_close(&mut stream), "", "the tunnel was cut");
    assert!(
        TcpStream::connect(address).is_err(),
        "the listener is closed"
    );
}

#[test]
fn a_listener_handed_in_is_served() {
    // As a sandboxed call will: a listening socket made elsewhere, handed over as a descriptor.
    use std::os::fd::{FromRawFd, IntoRawFd};
    let web = Web::start();
    let made_elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let descriptor = made_elsewhere.into_raw_fd();
    // SAFETY: the descriptor was just taken out of a listener, so it is open and owned here.
    let handed_in = unsafe { std::net::TcpListener::from_raw_fd(descriptor) };
    let proxy = proxy();
    let call = proxy
        .serve(
            handed_in,
            CallContext::new(
                "call-1",
                "shell",
                policy(json!({ "allow": ["web.test", "127.0.0.1"] })),
            ),
        )
        .unwrap();
    assert!(get(call.local_addr(), "web.test", web.port, "/hello").ends_with("hello from web"));
}

#[test]
fn slow_and_silent_clients_are_cut_off() {
    let echo = Echo::start();
    let proxy = proxy_with(ProxyConfig {
        lookup: names(),
        head_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        ..ProxyConfig::default()
    });
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    // A head that never ends.
    let mut stream = TcpStream::connect(call.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET http://web.test/ HTTP/1.1\r\nX-Slow: ")
        .unwrap();
    let answer = read_to_close(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("did not arrive in time"), "{answer}");
    // A tunnel nobody uses.
    let mut stream = TcpStream::connect(call.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(format!("CONNECT web.test:{} HTTP/1.1\r\n\r\n", echo.port).as_bytes())
        .unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200"));
    assert_eq!(
        read_to_close(&mut stream),
        "",
        "closed after the idle timeout"
    );
}

#[test]
fn large_bodies_are_relayed_exactly_each_way() {
    let web = Web::start();
    let proxy = proxy();
    let call = serve(&proxy, json!({ "allow": ["web.test", "127.0.0.1"] }));
    let p = web.port;
    let size = 5_000_000;
    // Forwarded, with a length.
    let answer = get(call.local_addr(), "web.test", p, &format!("/big/{size}"));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(&format!("Content-Length: {size}")), "{head}");
    assert_eq!(body.len(), size);
    // Forwarded, until the server closes.
    let answer = get(
        call.local_addr(),
        "web.test",
        p,
        &format!("/until-close/{size}"),
    );
    assert_eq!(answer.split_once("\r\n\r\n").unwrap().1.len(), size);
    // Chunked, through.
    let answer = get(call.local_addr(), "web.test", p, "/chunked");
    assert!(
        answer.ends_with("3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n"),
        "{answer}"
    );
    // Tunnelled.
    let mut tunnel = TcpStream::connect(call.local_addr()).unwrap();
    tunnel
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    tunnel
        .write_all(format!("CONNECT web.test:{p} HTTP/1.1\r\n\r\nGET /big/{size} HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let answer = read_to_close(&mut tunnel);
    let body = answer.rsplit_once("\r\n\r\n").unwrap().1;
    assert_eq!(body.len(), size);
    // Uploads: a length and chunks, each forwarded exactly.
    let upload = "u".repeat(3_000_000);
    let answer = exchange(
        call.local_addr(),
        format!(
            "POST http://web.test:{p}/echo HTTP/1.1\r\nContent-Length: {}\r\n\r\n{upload}",
            upload.len()
        )
        .as_bytes(),
    );
    assert!(answer.ends_with(&upload), "the echo ends with the body");
    let chunks = format!(
        "{:x}\r\n{upload}\r\n{:x}\r\n{upload}\r\n0\r\n\r\n",
        upload.len(),
        upload.len()
    );
    let answer = exchange(
        call.local_addr(),
        format!(
            "POST http://web.test:{p}/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{chunks}"
        )
        .as_bytes(),
    );
    assert!(answer.ends_with(&format!("{upload}{upload}")));
    let records = finish(call);
    assert_eq!(records.len(), 6);
    // Records come as connections close; each carries what it moved. Down: a body and a head
    // of some tens of bytes; up: the head, and the body uploaded.
    let near = |value: u64, expected: u64| value > expected && value < expected + 300;
    let downloads = records
        .iter()
        .filter(|record| near(record.bytes_down, size as u64))
        .count();
    assert_eq!(downloads, 3, "{records:?}");
    assert!(
        records
            .iter()
            .any(|record| near(record.bytes_up, 3_000_000)),
        "{records:?}"
    );
    assert!(
        records
            .iter()
            .any(|record| near(record.bytes_up, 6_000_000)),
        "{records:?}"
    );
}
