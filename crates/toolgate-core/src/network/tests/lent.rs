//! Tool calls lent to a long-lived program's listener (an MCP server's): connections belong to
//! the call in progress when they are accepted; outside calls, and with several at once,
//! nobody is asked.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::support::*;
use crate::network::{
    refused_connections, AskAnswer, AskRequest, Asker, CallContext, CallHandle, ConnectionRecord,
    DecidedBy, Decision, NetworkCall, Proxy, RecordSink, RunAllowances, SharedSink, ToolCallScope,
};

/// Answers every question with `answer` and remembers the questions.
struct Answering {
    answer: AskAnswer,
    asked: Mutex<Vec<AskRequest>>,
}

impl Asker for Answering {
    fn ask(
        &self,
        request: AskRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = AskAnswer> + Send>> {
        self.asked.lock().unwrap().push(request);
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

fn answering(answer: AskAnswer) -> Arc<Answering> {
    Arc::new(Answering {
        answer,
        asked: Mutex::new(Vec::new()),
    })
}

/// Keeps the records it is given.
#[derive(Default)]
struct Kept(Mutex<Vec<ConnectionRecord>>);

impl RecordSink for Kept {
    fn record(&self, record: &ConnectionRecord) {
        self.0.lock().unwrap().push(record.clone());
    }
}

/// A server's listener: `ask: true`, loopback allowed by address, and nobody to ask of its
/// own (as an MCP server's, which starts outside any run).
fn server_listener(proxy: &Proxy) -> CallHandle {
    let context = CallContext::new(
        "",
        "mcp server s",
        policy(json!({ "allow": ["127.0.0.1"], "deny": ["other.test"], "ask": true })),
    )
    .with_nobody_to_ask("outside any of its tool calls");
    proxy.listen(context).unwrap()
}

fn tool_call(
    id: &str,
    tool: &str,
    asker: Option<Arc<Answering>>,
    run: &Arc<RunAllowances>,
    sink: Option<SharedSink>,
) -> NetworkCall {
    NetworkCall {
        tool_call_id: id.into(),
        tool: tool.into(),
        run: Arc::clone(run),
        asker: asker.map(|asker| asker as Arc<dyn Asker>),
        sink,
    }
}

fn get(proxy: SocketAddr, host: &str, port: u16) -> String {
    exchange(
        proxy,
        format!("GET http://{host}:{port}/hello HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n")
            .as_bytes(),
    )
}

/// Ends the call: its records, once its connections are recorded.
fn end(scope: ToolCallScope) -> Vec<ConnectionRecord> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(scope.finish())
}

fn refusals(records: &[ConnectionRecord]) -> Vec<crate::network::RefusedConnection> {
    refused_connections(records)
}

#[test]
fn a_connection_during_a_call_is_asked_for_that_call_and_recorded_for_it() {
    let web = Web::start();
    let proxy = proxy();
    let listener = server_listener(&proxy);
    let run = RunAllowances::new();
    let asker = answering(AskAnswer::Approve);
    let sink = Arc::new(Kept::default());
    let scope = listener.begin_call(&tool_call(
        "call-1",
        "s_fetch",
        Some(Arc::clone(&asker)),
        &run,
        Some(Arc::clone(&sink) as SharedSink),
    ));
    assert!(get(listener.local_addr(), "web.test", web.port).ends_with("hello from web"));
    let asked = asker.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].tool.as_str(), asked[0].tool_call_id.as_str()),
        ("s_fetch", "call-1")
    );
    // A denied host during the call: refused, and in the call's result.
    assert!(get(listener.local_addr(), "other.test", web.port).starts_with("HTTP/1.1 403"));
    let records = end(scope);
    let refused = refusals(&records);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].host, "other.test");
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records
        .iter()
        .all(|record| record.tool == "s_fetch" && record.tool_call_id == "call-1"));
    assert_eq!(records[0].decision, Decision::AskedApproved);
    assert_eq!(sink.0.lock().unwrap().len(), 2, "the run's sink has both");

    // After the call: the listener's own context again, nobody asked, saying why.
    let after = get(listener.local_addr(), "web.test", web.port);
    assert!(after.starts_with("HTTP/1.1 403"), "{after}");
    assert!(
        after.contains("nobody to ask (outside any of its tool calls)"),
        "{after}"
    );
    assert_eq!(asker.asked.lock().unwrap().len(), 1);
    assert_eq!(sink.0.lock().unwrap().len(), 2, "not the call's any more");
    let all = finish(listener);
    let last = all.last().unwrap();
    assert_eq!(
        (last.tool.as_str(), last.decided_by),
        ("mcp server s", DecidedBy::NoHandler)
    );
    assert_eq!(web.requests().len(), 1);
}

#[test]
fn always_goes_into_the_run_and_a_denial_reaches_the_result() {
    let web = Web::start();
    let proxy = proxy();
    let listener = server_listener(&proxy);
    let run = RunAllowances::new();
    let always = answering(AskAnswer::Always);
    let scope = listener.begin_call(&tool_call(
        "c1",
        "s_fetch",
        Some(Arc::clone(&always)),
        &run,
        None,
    ));
    assert!(get(listener.local_addr(), "web.test", web.port).ends_with("hello from web"));
    assert!(refusals(&end(scope)).is_empty());
    assert_eq!(run.always(), vec![("web.test".to_string(), web.port)]);
    // The next call of the run is not asked.
    let scope = listener.begin_call(&tool_call(
        "c2",
        "s_fetch",
        Some(Arc::clone(&always)),
        &run,
        None,
    ));
    assert!(get(listener.local_addr(), "web.test", web.port).ends_with("hello from web"));
    assert_eq!(always.asked.lock().unwrap().len(), 1);
    let records = end(scope);
    assert_eq!(records[0].decided_by, DecidedBy::RunAllowance);

    let deny = answering(AskAnswer::Deny {
        reason: Some("not for this task".into()),
    });
    let scope = listener.begin_call(&tool_call(
        "c3",
        "s_fetch",
        Some(deny),
        &RunAllowances::new(),
        None,
    ));
    let refused = get(listener.local_addr(), "web.test", web.port);
    assert!(
        refused.contains("denied when asked: not for this task"),
        "{refused}"
    );
    let refused = refusals(&end(scope));
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].reason.contains("not for this task"),
        "{refused:?}"
    );
}

#[test]
fn several_calls_at_once_ask_nobody_and_name_every_call() {
    let web = Web::start();
    let proxy = proxy();
    let listener = server_listener(&proxy);
    let run = RunAllowances::new();
    let asker = answering(AskAnswer::Approve);
    let first = listener.begin_call(&tool_call(
        "c1",
        "s_a",
        Some(Arc::clone(&asker)),
        &run,
        None,
    ));
    let second = listener.begin_call(&tool_call(
        "c2",
        "s_b",
        Some(Arc::clone(&asker)),
        &run,
        None,
    ));
    let refused = get(listener.local_addr(), "web.test", web.port);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(
        refused.contains("'s_a' (call c1) and 's_b' (call c2)"),
        "{refused}"
    );
    assert!(asker.asked.lock().unwrap().is_empty());
    // Allowed and denied hosts are decided as ever.
    assert!(get(listener.local_addr(), "127.0.0.1", web.port).ends_with("hello from web"));
    // The run's earlier `always` still holds (both calls are of one run).
    run.allow_always("web.test", web.port);
    assert!(get(listener.local_addr(), "web.test", web.port).ends_with("hello from web"));
    // Both calls are told of the refusal.
    let second_refused = refusals(&end(second));
    assert_eq!(second_refused.len(), 1);
    // With one call left, it is asked again for that call.
    let other = Web::start();
    assert!(get(listener.local_addr(), "web.test", other.port).ends_with("hello from web"));
    assert_eq!(asker.asked.lock().unwrap()[0].tool, "s_a");
    assert_eq!(refusals(&end(first)).len(), 1);

    // Calls of different runs share no allowances.
    let other_run = RunAllowances::new();
    let a = listener.begin_call(&tool_call("c3", "s_a", None, &run, None));
    let b = listener.begin_call(&tool_call("c4", "s_b", None, &other_run, None));
    assert!(get(listener.local_addr(), "web.test", web.port).starts_with("HTTP/1.1 403"));
    drop((a, b));
}

/// A connection to `listener`, opened now and used later.
fn open_to(listener: &CallHandle) -> std::net::TcpStream {
    let stream = std::net::TcpStream::connect(listener.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Sends `GET http://host:port/hello` on a connection opened earlier and reads the answer.
fn get_on(mut stream: std::net::TcpStream, host: &str, port: u16) -> String {
    use std::io::Write;
    stream
        .write_all(
            format!("GET http://{host}:{port}/hello HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    read_to_close(&mut stream)
}

#[test]
fn a_connection_keeps_the_context_it_was_accepted_in_and_asks_nobody_after_its_call() {
    let web = Web::start();
    let proxy = proxy();
    let listener = server_listener(&proxy);
    let run = RunAllowances::new();
    let asker = answering(AskAnswer::Approve);
    let call = |id: &str| tool_call(id, "s_fetch", Some(Arc::clone(&asker)), &run, None);
    let connect = || open_to(&listener);
    // Opened before the call, used during it: the listener's own context, nobody asked.
    let early = connect();
    // The proxy has accepted it (a connection it has not accepted yet has no context): a
    // first exchange on another connection comes back only after the earlier accept.
    assert!(get(listener.local_addr(), "other.test", web.port).starts_with("HTTP/1.1 403"));
    let scope = listener.begin_call(&call("c1"));
    let answer = get_on(early, "web.test", web.port);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("outside any of its tool calls"), "{answer}");
    // Opened during the call, used after its end (to ask on behalf of a call that is over):
    // refused, nobody asked, whether no call or another call is in progress then.
    let late = connect();
    let later = connect();
    assert!(get(listener.local_addr(), "other.test", web.port).starts_with("HTTP/1.1 403"));
    let records = end(scope);
    let answer = get_on(late, "web.test", web.port);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("the tool call 's_fetch' (call c1) the connection was opened in has ended"),
        "{answer}"
    );
    let next = listener.begin_call(&call("c2"));
    let answer = get_on(later, "web.test", web.port);
    assert!(
        answer.contains("(call c1) the connection was opened in has ended"),
        "{answer}"
    );
    assert!(asker.asked.lock().unwrap().is_empty(), "nobody was asked");
    // The ended call's late connections are still recorded for it (in the run's sink); the
    // call's own result had what was decided before its end.
    assert!(records.iter().all(|record| record.tool_call_id == "c1"));
    // The run's earlier `always` still holds for such a connection.
    run.allow_always("web.test", web.port);
    let reused = connect();
    assert!(get(listener.local_addr(), "other.test", web.port).starts_with("HTTP/1.1 403"));
    drop(next);
    assert!(get_on(reused, "web.test", web.port).ends_with("hello from web"));
    assert_eq!(web.requests().len(), 1);
}

#[test]
fn a_connection_made_before_a_call_begins_or_ends_stays_outside_it_when_the_proxy_accepts_late() {
    let web = Web::start();
    let proxy = proxy();
    let listener = server_listener(&proxy);
    let run = RunAllowances::new();
    let asker = answering(AskAnswer::Approve);
    let call = |id: &str| tool_call(id, "s_fetch", Some(Arc::clone(&asker)), &run, None);
    let connect = || open_to(&listener);
    let busy = std::time::Duration::from_millis(500);
    // Made before the call while the proxy is busy: it is accepted only after the call began,
    // and is still not the call's.
    proxy.stall_threads(busy);
    let early = connect();
    let first = listener.begin_call(&call("c1"));
    let answer = get_on(early, "web.test", web.port);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("outside any of its tool calls"), "{answer}");
    // Made during the call; the call ends and the next begins before the proxy gets to it:
    // the first call's, which has ended.
    proxy.stall_threads(busy);
    let late = connect();
    let late_too = connect();
    let records = end(first);
    let second = listener.begin_call(&call("c2"));
    for stream in [late, late_too] {
        let answer = get_on(stream, "web.test", web.port);
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(
            answer.contains(
                "the tool call 's_fetch' (call c1) the connection was opened in has ended"
            ),
            "{answer}"
        );
    }
    assert!(asker.asked.lock().unwrap().is_empty(), "nobody was asked");
    assert!(records.iter().all(|record| record.tool_call_id == "c1"));
    // A connection of the second call is still its own.
    assert!(get(listener.local_addr(), "web.test", web.port).ends_with("hello from web"));
    assert_eq!(asker.asked.lock().unwrap().len(), 1);
    assert_eq!(asker.asked.lock().unwrap()[0].tool_call_id, "c2");
    drop(second);
    assert_eq!(web.requests().len(), 1);
}
