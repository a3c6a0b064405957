//! One client connection's decision and counters; its record is made when it is dropped, so a
//! connection cut short (by the call's end, a timeout or an error) is recorded all the same.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;

use super::{CallContext, CallState, Owner};
use crate::network::host::{printable, Host};
use crate::network::policy::Denial;
use crate::network::record::{ConnectionRecord, DecidedBy, Decision, Protocol};

/// What a client is told when its connection is not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The HTTP status: 403 refused, 400 malformed, 502 unreachable, 504 timed out, 503 limit.
    pub status: u16,
    /// The SOCKS5 reply code.
    pub socks: u8,
    /// The text, naming host, port and reason.
    pub body: String,
}

/// SOCKS5 reply codes (RFC 1928).
pub(crate) mod socks_reply {
    pub const GENERAL_FAILURE: u8 = 0x01;
    pub const NOT_ALLOWED: u8 = 0x02;
    pub const HOST_UNREACHABLE: u8 = 0x04;
    pub const CONNECTION_REFUSED: u8 = 0x05;
    pub const TTL_EXPIRED: u8 = 0x06;
    pub const COMMAND_NOT_SUPPORTED: u8 = 0x07;
    pub const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;
}

/// Why an allowed connection could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    Unresolved,
    Refused,
    TimedOut,
}

pub(crate) struct Session {
    pub(crate) call: Arc<CallState>,
    /// The tool call the connection belongs to, fixed when it was accepted.
    owner: Owner,
    started: Instant,
    pub(crate) protocol: Protocol,
    host: String,
    port: u16,
    decision: Option<(Decision, DecidedBy, Option<String>)>,
    message: Option<String>,
    address: Option<SocketAddr>,
    /// Bytes sent to the destination.
    pub(crate) up: AtomicU64,
    /// Bytes received from the destination.
    pub(crate) down: AtomicU64,
    permit: Option<OwnedSemaphorePermit>,
}

impl Session {
    pub(crate) fn new(
        call: Arc<CallState>,
        owner: Owner,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Self {
        Session {
            call,
            owner,
            started: Instant::now(),
            protocol: Protocol::Unknown,
            host: String::new(),
            port: 0,
            decision: None,
            message: None,
            address: None,
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            permit,
        }
    }

    /// The context the connection is judged with.
    pub(crate) fn context(&self) -> &CallContext {
        &self.owner.context
    }

    /// Why nobody may be asked for this connection any more (the tool call it was accepted in
    /// has ended), if so.
    pub(crate) fn call_ended(&self) -> Option<String> {
        self.owner.call_ended()
    }

    /// The destination, once the request names it.
    pub(crate) fn target(&mut self, host: &Host, port: u16) {
        self.host = host.to_string();
        self.port = port;
    }

    /// The destination as the client wrote it, when it is no valid host.
    pub(crate) fn raw_target(&mut self, text: &str, port: u16) {
        self.host = printable(text);
        self.port = port;
    }

    /// `host:port` for messages.
    pub(crate) fn target_text(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub(crate) fn within_limit(&self) -> bool {
        self.permit.is_some()
    }

    pub(crate) fn decide(&mut self, decision: Decision, by: DecidedBy, rule: Option<String>) {
        self.decision = Some((decision, by, rule));
    }

    pub(crate) fn connected(&mut self, address: SocketAddr) {
        self.address = Some(address);
    }

    /// Refused by the policy, the address rule or the approval handler: 403.
    pub(crate) fn deny(&mut self, denial: Denial) -> Refusal {
        let mut body = format!(
            "toolgate: connection to {} refused: {}",
            self.target_text(),
            denial.reason
        );
        if let Some(fix) = &denial.fix {
            body.push_str("; ");
            body.push_str(fix);
        }
        self.decide(Decision::Denied, denial.decided_by, denial.rule);
        self.message = Some(body.clone());
        Refusal {
            status: 403,
            socks: socks_reply::NOT_ALLOWED,
            body,
        }
    }

    /// Refused because the call has as many connections open as it may: 503.
    pub(crate) fn over_limit(&mut self) -> Refusal {
        let limit = self.call.config.max_connections_per_call;
        let body = format!(
            "toolgate: connection to {} refused: the call already has {limit} connections open through the proxy, the most it may; close some first",
            self.target_text()
        );
        self.decide(Decision::Denied, DecidedBy::Limit, None);
        self.message = Some(body.clone());
        Refusal {
            status: 503,
            socks: socks_reply::GENERAL_FAILURE,
            body,
        }
    }

    /// A malformed request, or one the proxy does not offer: 400 (SOCKS: general failure).
    pub(crate) fn bad_request(&mut self, what: String) -> Refusal {
        self.bad_request_with(what, socks_reply::GENERAL_FAILURE)
    }

    pub(crate) fn bad_request_with(&mut self, what: String, socks: u8) -> Refusal {
        let body = if self.host.is_empty() {
            format!("toolgate: proxy request refused: {what}")
        } else {
            format!(
                "toolgate: request for {} refused: {what}",
                self.target_text()
            )
        };
        self.decide(Decision::Denied, DecidedBy::Request, None);
        self.message = Some(body.clone());
        Refusal {
            status: 400,
            socks,
            body,
        }
    }

    /// An allowed connection that could not be made: the decision stands, the failure is
    /// recorded.
    pub(crate) fn fail(&mut self, failure: Failure, what: String) -> Refusal {
        let body = format!(
            "toolgate: connection to {} failed: {what}",
            self.target_text()
        );
        self.message = Some(body.clone());
        let (status, socks) = match failure {
            Failure::Unresolved => (502, socks_reply::HOST_UNREACHABLE),
            Failure::Refused => (502, socks_reply::CONNECTION_REFUSED),
            Failure::TimedOut => (504, socks_reply::TTL_EXPIRED),
        };
        Refusal {
            status,
            socks,
            body,
        }
    }

    /// Something went wrong after the connection was made (a malformed response): kept in
    /// the record.
    pub(crate) fn note(&mut self, what: String) {
        self.message = Some(what);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The owner, dropped after this, lets the call know the connection is done.
        let Some((decision, decided_by, rule)) = self.decision.take() else {
            return;
        };
        let context = &self.owner.context;
        let record = ConnectionRecord {
            host: std::mem::take(&mut self.host),
            port: self.port,
            tool_call_id: context.tool_call_id.clone(),
            tool: context.tool.clone(),
            protocol: self.protocol,
            decision,
            decided_by,
            rule,
            message: self.message.take(),
            address: self.address.map(|address| address.to_string()),
            bytes_up: self.up.load(Ordering::Relaxed),
            bytes_down: self.down.load(Ordering::Relaxed),
            duration_ms: self
                .started
                .elapsed()
                .as_millis()
                .try_into()
                .unwrap_or(u64::MAX),
        };
        self.call.push(&self.owner, record);
    }
}
