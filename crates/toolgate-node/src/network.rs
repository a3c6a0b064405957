//! Network by host as a run sees it: the run's `always` answers, the approval handler the
//! egress proxy asks about hosts (a JavaScript function called through a thread-safe function,
//! from the proxy's own threads, never blocking the event loop), and the records of every
//! connection, which the SDK takes when a call ends.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Function, Promise};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Env, Status};
use napi_derive::napi;
use serde::Deserialize;
use toolgate_core::network::{
    AskAnswer, AskRequest, Asker, ConnectionRecord, NetworkCall, RecordSink, RunAllowances,
};

use crate::error::{infallible, sync};

/// Most records a run keeps between two `takeRecords()` (the oldest are dropped past it, and
/// counted).
const MAX_BUFFERED_RECORDS: usize = 10_000;

/// The JavaScript handler: the request as JSON in, a promise of the answer as JSON out.
type AskFunction = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

/// The answer the handler resolves with.
#[derive(Deserialize)]
#[serde(tag = "decision", rename_all = "kebab-case", deny_unknown_fields)]
enum JsAnswer {
    Approve,
    Always,
    Deny {
        #[serde(default)]
        reason: Option<String>,
    },
    Defer {
        reason: String,
    },
}

/// Asks the run's JavaScript handler; anything but a well-formed answer is a refusal.
struct JsAsker {
    function: Arc<AskFunction>,
}

impl Asker for JsAsker {
    fn ask(&self, request: AskRequest) -> Pin<Box<dyn Future<Output = AskAnswer> + Send>> {
        let function = Arc::clone(&self.function);
        Box::pin(async move {
            let failed = |what: String| AskAnswer::Deny {
                reason: Some(format!("the approval handler failed: {what}")),
            };
            let Ok(json) = serde_json::to_string(&request) else {
                return failed("the request could not be encoded".into());
            };
            let promise = match function.call_async_catch(json).await {
                Ok(promise) => promise,
                Err(err) => return failed(err.reason),
            };
            let text = match promise.await {
                Ok(text) => text,
                Err(err) => return failed(err.reason),
            };
            match serde_json::from_str::<JsAnswer>(&text) {
                Ok(JsAnswer::Approve) => AskAnswer::Approve,
                Ok(JsAnswer::Always) => AskAnswer::Always,
                Ok(JsAnswer::Deny { reason }) => AskAnswer::Deny { reason },
                Ok(JsAnswer::Defer { reason }) => AskAnswer::Deferred { reason },
                Err(err) => failed(format!("its answer {text:?} is not one ({err})")),
            }
        })
    }
}

/// The records of a run's connections, until the SDK takes them.
#[derive(Default)]
struct Buffer {
    records: VecDeque<ConnectionRecord>,
    dropped: u64,
}

struct BufferSink(Arc<Mutex<Buffer>>);

impl RecordSink for BufferSink {
    fn record(&self, record: &ConnectionRecord) {
        let mut buffer = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if buffer.records.len() == MAX_BUFFERED_RECORDS {
            buffer.records.pop_front();
            buffer.dropped += 1;
        }
        buffer.records.push_back(record.clone());
    }
}

/// One run's network by host: the `always` answers its calls share, the handler the proxy
/// asks about hosts neither allowed nor denied, and the records of every connection.
/// Attach it to each process of the run with `ProcessHandle.attachNetwork`.
#[napi]
pub struct NetworkRun {
    run: Arc<RunAllowances>,
    asker: Option<Arc<dyn Asker>>,
    buffer: Arc<Mutex<Buffer>>,
}

impl NetworkRun {
    /// The proxy's view of one tool call of this run.
    pub fn call(&self, tool_call_id: String, tool: String) -> NetworkCall {
        NetworkCall {
            tool_call_id,
            tool,
            run: Arc::clone(&self.run),
            asker: self.asker.clone(),
            sink: Some(Arc::new(BufferSink(Arc::clone(&self.buffer)))),
        }
    }
}

/// A connection's record: `{ host, port, toolCallId, tool, protocol, decision, decidedBy,
/// rule?, message?, address?, bytesUp, bytesDown, durationMs }`.
#[napi(object, object_from_js = false)]
pub struct NetworkRecords {
    /// The records since the last call, oldest first.
    #[napi(ts_type = "unknown[]")]
    pub records: Vec<serde_json::Value>,
    /// Records dropped since the last call because too many waited.
    pub dropped: f64,
}

#[napi]
impl NetworkRun {
    /// A run. `ask` receives an approval request as JSON (`{ host, port, tool, toolCallId }`)
    /// and resolves with the answer as JSON: `{ "decision": "approve" | "always" | "deny" |
    /// "defer", "reason"?: string }`. It is called from the proxy's threads through the event
    /// loop; a rejection, a throw or another answer refuses the connection. Without `ask`,
    /// hosts that `network.ask` would ask about are refused (fail closed).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "((request: string) => Promise<string>) | undefined | null")]
        ask: Option<Function<'_, String, Promise<String>>>,
    ) -> napi::Result<Self> {
        let function = ask
            .map(|ask| {
                ask.build_threadsafe_function::<String>()
                    .weak::<true>()
                    .callee_handled::<false>()
                    .build()
            })
            .transpose()?;
        sync(&env, "new NetworkRun", || {
            let asker = function.map(|function| {
                Arc::new(JsAsker {
                    function: Arc::new(function),
                }) as Arc<dyn Asker>
            });
            Ok(NetworkRun {
                run: RunAllowances::new(),
                asker,
                buffer: Arc::default(),
            })
        })
    }

    /// Allows `host:port` for the rest of the run (an `always` answer given before: a resumed
    /// run's). `host` is normalised as the proxy sees it.
    #[napi]
    pub fn allow_always(&self, env: Env, host: String, port: u32) -> napi::Result<()> {
        sync(&env, "NetworkRun.allowAlways", || {
            let (host, port) = normal(&host, port)?;
            self.run.allow_always(&host, port);
            Ok(())
        })
    }

    /// Answers `host:port` for the next call of `tool` (every connection of that call):
    /// approved, or denied with `reason` (which the program is sent). A deferred run's answer,
    /// given when it resumes, for the call the model retries.
    #[napi]
    pub fn answer_next_call(
        &self,
        env: Env,
        host: String,
        port: u32,
        tool: String,
        approved: bool,
        reason: Option<String>,
    ) -> napi::Result<()> {
        sync(&env, "NetworkRun.answerNextCall", || {
            let (host, port) = normal(&host, port)?;
            let answer = if approved {
                AskAnswer::Approve
            } else {
                AskAnswer::Deny { reason }
            };
            self.run.answer_next_call(&host, port, &tool, answer);
            Ok(())
        })
    }

    /// The `host:port` pairs answered `always` so far, sorted.
    #[napi(getter)]
    pub fn always(&self, env: Env) -> napi::Result<Vec<String>> {
        infallible(&env, "NetworkRun.always", || {
            self.run
                .always()
                .into_iter()
                .map(
                    |(host, port)| match toolgate_core::network::Host::parse(&host) {
                        Ok(parsed) => parsed.with_port(port),
                        Err(_) => format!("{host}:{port}"),
                    },
                )
                .collect()
        })
    }

    /// Takes the records made since the last call (a connection is recorded when it closes;
    /// a refusal at once). The records of a call's processes are all here once its
    /// `ProcessHandle.wait()` has resolved.
    #[napi]
    pub fn take_records(&self, env: Env) -> napi::Result<NetworkRecords> {
        infallible(&env, "NetworkRun.takeRecords", || {
            let mut buffer = self
                .buffer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let records = buffer
                .records
                .drain(..)
                .filter_map(|record| serde_json::to_value(record).ok())
                .collect();
            let dropped = std::mem::take(&mut buffer.dropped) as f64;
            NetworkRecords { records, dropped }
        })
    }
}

/// `host` and `port` as the proxy keys them: `CONFIG_INVALID` for no host or a port out of
/// range.
fn normal(host: &str, port: u32) -> toolgate_core::Result<(String, u16)> {
    let port = u16::try_from(port)
        .ok()
        .filter(|port| *port > 0)
        .ok_or_else(|| {
            toolgate_core::Error::InvalidInput(format!("port {port} is not a TCP port (1-65535)"))
        })?;
    let host = toolgate_core::network::Host::parse(host)
        .map_err(|why| toolgate_core::Error::InvalidInput(format!("host: {why}")))?;
    Ok((host.to_string(), port))
}
