//! Tool calls lent to a long-lived program's listener (an MCP stdio server): while a tool call
//! of the program is in progress, the connections its processes open belong to that call. A
//! connection keeps the context it was opened in: one opened before a call is not that call's,
//! and one opened during a call but used after its end asks nobody. (Before a call begins or
//! ends, the connections waiting in the listener's queue are accepted with the context of
//! until then, so a proxy that is late to accept does not move one into the next call.)
//!
//! A listener served for one process ([`Proxy::serve`](super::Proxy::serve)) has one context
//! for its whole life. A server started when its toolset loads outlives every tool call, so its
//! listener's own context has no run (nobody is asked, `ask` refuses). [`CallHandle::begin_call`]
//! lends it one tool call's part of a context (tool call id, tool, approval handler, the run's
//! allowances, the record sink) until the returned [`ToolCallScope`] ends. Each new connection
//! takes the context of the moment it was opened and keeps it:
//!
//! - no call in progress: the listener's own context;
//! - one call: that call's (asked about, recorded for it, refusals in its result);
//! - several calls at once: the proxy cannot tell which one a connection is for, so it asks
//!   nobody (fail closed): `ask` refuses, naming every call in progress, the run's earlier
//!   `always` answers still hold when all of them belong to the same run, and every one of
//!   those calls is told of the refusal.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::{lock, CallContext, CallHandle, CallState};
use crate::network::ask::RunAllowances;
use crate::network::call::NetworkCall;
use crate::network::record::ConnectionRecord;

/// How long ending a tool call waits for the connections it opened to be recorded (a refusal
/// is recorded once the client has read it; an exchange once it closes). A connection still
/// open after that is recorded for the call all the same when it closes, but is not in the
/// call's result.
pub const CALL_END_GRACE: Duration = Duration::from_secs(2);

/// One tool call lent to a listener.
pub(crate) struct LentCall {
    id: u64,
    pub(super) context: Arc<CallContext>,
    records: Mutex<Vec<ConnectionRecord>>,
    /// Connections accepted for the call and not yet recorded.
    open: AtomicUsize,
    closed: watch::Sender<()>,
    /// The call's result is in: a connection it opened may still make its request, but nobody
    /// is asked on the call's behalf any more.
    ended: AtomicBool,
}

impl LentCall {
    pub(super) fn opened(&self) {
        self.open.fetch_add(1, Ordering::SeqCst);
    }

    /// A record of one of the call's connections.
    pub(super) fn record(&self, record: &ConnectionRecord) {
        let mut records = lock(&self.records);
        if records.len() < crate::network::MAX_RECORDS_PER_CALL {
            records.push(record.clone());
        }
    }

    /// A connection of the call ended (after its record, if it came to a decision).
    fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
        self.closed.send_replace(());
    }
}

/// The tool calls lent to one listener, in the order they began.
#[derive(Default)]
pub(crate) struct LentCalls {
    pub(super) calls: Mutex<Vec<Arc<LentCall>>>,
    next_id: AtomicU64,
}

/// What one connection is judged and recorded with, fixed when it is accepted.
pub(crate) struct Owner {
    pub(crate) context: Arc<CallContext>,
    /// The lent calls it belongs to (none: the listener's own context).
    pub(super) calls: Vec<Arc<LentCall>>,
}

impl Owner {
    /// Why nobody may be asked about this connection any more: a tool call it belongs to has
    /// ended (a connection opened during a call and used after it, to be asked about on behalf
    /// of a call that is over).
    pub(crate) fn call_ended(&self) -> Option<String> {
        self.calls
            .iter()
            .find(|call| call.ended.load(Ordering::SeqCst))
            .map(|call| {
                format!(
                    "the tool call '{}' (call {}) the connection was opened in has ended",
                    call.context.tool, call.context.tool_call_id
                )
            })
    }
}

impl Drop for Owner {
    /// The connection has ended (and is recorded: a session's record is made before its owner
    /// is dropped): the calls it belonged to stop waiting for it.
    fn drop(&mut self) {
        for call in &self.calls {
            call.closed();
        }
    }
}

/// The owner of a connection made while `calls` are lent to a listener whose own context is
/// `base`.
pub(super) fn owner(base: &Arc<CallContext>, calls: &[Arc<LentCall>]) -> Owner {
    let context = match calls {
        [] => Arc::clone(base),
        [only] => Arc::clone(&only.context),
        several => Arc::new(ambiguous(base, several)),
    };
    for call in calls {
        call.opened();
    }
    Owner {
        context,
        calls: calls.to_vec(),
    }
}

/// The context of a connection made while several tool calls are in progress: the listener's
/// own name and policy, nobody to ask (naming the calls), the run's allowances when they all
/// share one run, records to the oldest call's sink.
fn ambiguous(base: &CallContext, calls: &[Arc<LentCall>]) -> CallContext {
    let oldest = &calls[0].context;
    let same_run = calls
        .iter()
        .all(|call| Arc::ptr_eq(&call.context.run, &oldest.run));
    let names: Vec<String> = calls
        .iter()
        .map(|call| {
            format!(
                "'{}' (call {})",
                call.context.tool, call.context.tool_call_id
            )
        })
        .collect();
    CallContext {
        tool_call_id: base.tool_call_id.clone(),
        tool: base.tool.clone(),
        policy: base.policy.clone(),
        asker: None,
        run: if same_run {
            Arc::clone(&oldest.run)
        } else {
            RunAllowances::new()
        },
        sink: oldest.sink.clone(),
        nobody_to_ask: Some(format!(
            "the tool calls {} of this server are in progress at once, and the proxy cannot tell which of them the connection is for (call them one at a time, or allow the host)",
            names.join(" and ")
        )),
    }
}

/// A tool call lent to a listener, from [`CallHandle::begin_call`] until it is finished or
/// dropped: connections accepted meanwhile belong to it.
pub struct ToolCallScope {
    state: Arc<CallState>,
    call: Arc<LentCall>,
}

impl std::fmt::Debug for ToolCallScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallScope")
            .field("call", &self.call.context)
            .finish_non_exhaustive()
    }
}

impl CallHandle {
    /// Lends the listener tool call `call` (its id, tool, approval handler, run and sink; the
    /// policy stays the listener's) until the returned scope ends: connections accepted
    /// meanwhile are asked about, recorded and reported for that call. See the module's
    /// documentation for several calls at once.
    pub fn begin_call(&self, call: &NetworkCall) -> ToolCallScope {
        let lent = &self.state.lent;
        let (closed, _) = watch::channel(());
        let call = Arc::new(LentCall {
            id: lent.next_id.fetch_add(1, Ordering::Relaxed),
            context: Arc::new(call.context(self.state.base.policy.clone())),
            records: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            closed,
            ended: AtomicBool::new(false),
        });
        let mut calls = lock(&lent.calls);
        self.state.settle_waiting(&calls);
        calls.push(Arc::clone(&call));
        drop(calls);
        ToolCallScope {
            state: Arc::clone(&self.state),
            call,
        }
    }
}

impl ToolCallScope {
    /// The records of the call's connections so far.
    pub fn records(&self) -> Vec<ConnectionRecord> {
        lock(&self.call.records).clone()
    }

    /// Ends the call: connections accepted from now on are no longer its; waits (at most
    /// [`CALL_END_GRACE`]) for the ones it opened to be recorded, and returns their records
    /// ([`refused_connections`](crate::network::refused_connections) of them is what its
    /// result tells the model).
    pub async fn finish(self) -> Vec<ConnectionRecord> {
        self.withdraw();
        let mut closed = self.call.closed.subscribe();
        let call = Arc::clone(&self.call);
        let _ = tokio::time::timeout(
            CALL_END_GRACE,
            closed.wait_for(|_| call.open.load(Ordering::SeqCst) == 0),
        )
        .await;
        self.records()
    }

    fn withdraw(&self) {
        let mut calls = lock(&self.state.lent.calls);
        self.state.settle_waiting(&calls);
        calls.retain(|lent| lent.id != self.call.id);
        self.call.ended.store(true, Ordering::SeqCst);
    }
}

impl Drop for ToolCallScope {
    fn drop(&mut self) {
        self.withdraw();
    }
}
