//! The record of every connection decision: what the run's records and the audit log keep,
//! and what a call's result reports about refused connections.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

/// What became of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// An allow entry, or an earlier `always` of this run, let it through.
    Allowed,
    /// The approval handler approved this connection.
    AskedApproved,
    /// The approval handler answered `always`: this host and port for the rest of the run.
    Always,
    /// Refused: by a deny entry, the policy, the address rule, the handler, or a malformed or
    /// over-limit request.
    Denied,
}

/// Who or what decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// An entry of `network.allow` or `network.deny` (named in `rule`).
    Rule,
    /// No entry matched and `ask` is off: refused by default.
    Policy,
    /// The address is internal (loopback, private, metadata…) and not itself in `allow`.
    Address,
    /// The approval handler's answer.
    User,
    /// An earlier `always` answer in this run.
    RunAllowance,
    /// `ask` is on, but the call has no approval handler: refused (fail closed).
    NoHandler,
    /// `ask` is on in a deferred run: refused now, the question waits for the run's resume.
    Deferred,
    /// The request itself was malformed or used something the proxy does not offer.
    Request,
    /// The call already had as many connections open as it may.
    Limit,
}

/// The protocol a client spoke to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// An absolute-form HTTP request (`GET http://host/path`), forwarded.
    Http,
    /// HTTP `CONNECT host:port`, tunnelled.
    Connect,
    /// SOCKS5 `CONNECT`, tunnelled.
    Socks5,
    /// Something the proxy does not speak.
    Unknown,
}

/// One connection, from decision to close.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionRecord {
    /// The destination host as the policy saw it (normalised), or the client's text quoted
    /// safely when it was no host.
    pub host: String,
    /// The destination port (0 when the request never named one).
    pub port: u16,
    /// The tool call whose process connected.
    pub tool_call_id: String,
    /// The tool whose process connected.
    pub tool: String,
    pub protocol: Protocol,
    pub decision: Decision,
    pub decided_by: DecidedBy,
    /// The `allow`/`deny` entry that decided, in its normal spelling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// For a refusal, the text the client was sent (host, port and reason); for an allowed
    /// connection that failed (resolution, connect, timeout), what failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The address connected to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Bytes sent to the destination.
    pub bytes_up: u64,
    /// Bytes received from the destination.
    pub bytes_down: u64,
    pub duration_ms: u64,
}

impl ConnectionRecord {
    /// Whether the connection was refused (rather than allowed, whatever became of it).
    pub fn refused(&self) -> bool {
        self.decision == Decision::Denied
    }
}

impl fmt::Display for ConnectionRecord {
    /// One line for logs: `denied api.test:443 (rule '*.api.test', bytes 0/0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decision = serde_json::to_value(self.decision).unwrap_or_default();
        let by = serde_json::to_value(self.decided_by).unwrap_or_default();
        write!(
            f,
            "{} {}:{} by {}",
            decision.as_str().unwrap_or("?"),
            self.host,
            self.port,
            by.as_str().unwrap_or("?")
        )?;
        if let Some(rule) = &self.rule {
            write!(f, " (entry '{rule}')")?;
        }
        write!(f, ", {} bytes up, {} down", self.bytes_up, self.bytes_down)
    }
}

/// Most refused destinations a call's result names (the records keep every one).
pub const MAX_REFUSALS_REPORTED: usize = 16;

/// A refused destination, as a call's result tells the model: so that it can ask for the
/// right host, or stop trying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusedConnection {
    pub host: String,
    pub port: u16,
    /// The refusal the client was sent: host, port, reason and how to allow it.
    pub reason: String,
    pub decided_by: DecidedBy,
}

/// The refused destinations among `records`, once per host and port (with the first
/// refusal's reason), at most [`MAX_REFUSALS_REPORTED`].
pub fn refused_connections(records: &[ConnectionRecord]) -> Vec<RefusedConnection> {
    let mut refused: Vec<RefusedConnection> = Vec::new();
    for record in records.iter().filter(|record| record.refused()) {
        if refused.len() == MAX_REFUSALS_REPORTED {
            break;
        }
        if refused
            .iter()
            .any(|seen| seen.host == record.host && seen.port == record.port)
        {
            continue;
        }
        refused.push(RefusedConnection {
            host: record.host.clone(),
            port: record.port,
            reason: record.message.clone().unwrap_or_else(|| {
                format!(
                    "toolgate: connection to {}:{} refused",
                    record.host, record.port
                )
            }),
            decided_by: record.decided_by,
        });
    }
    refused
}

/// The refusals in one paragraph, for the message of a failed call: `None` when nothing was
/// refused.
pub fn refusal_note(refused: &[RefusedConnection]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    let lines: Vec<&str> = refused
        .iter()
        .map(|refusal| refusal.reason.as_str())
        .collect();
    Some(format!(
        "the egress proxy refused {} connection{}: {}",
        refused.len(),
        if refused.len() == 1 { "" } else { "s" },
        lines.join("; ")
    ))
}

/// Where records go as they are made: the run's records and the audit log. Called on the
/// proxy's threads, once per connection, when it closes (a refusal closes at once): it must
/// not block.
pub trait RecordSink: Send + Sync {
    fn record(&self, record: &ConnectionRecord);
}

impl<F: Fn(&ConnectionRecord) + Send + Sync> RecordSink for F {
    fn record(&self, record: &ConnectionRecord) {
        self(record)
    }
}

/// A shared sink.
pub type SharedSink = Arc<dyn RecordSink>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_serialise_with_the_contract_names() {
        let record = ConnectionRecord {
            host: "api.test".into(),
            port: 443,
            tool_call_id: "call-1".into(),
            tool: "shell".into(),
            protocol: Protocol::Connect,
            decision: Decision::AskedApproved,
            decided_by: DecidedBy::User,
            rule: None,
            message: None,
            address: Some("127.0.0.1:443".into()),
            bytes_up: 10,
            bytes_down: 20,
            duration_ms: 3,
        };
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["toolCallId"], "call-1");
        assert_eq!(json["decision"], "asked-approved");
        assert_eq!(json["decidedBy"], "user");
        assert_eq!(json["bytesUp"], 10);
        assert_eq!(json["bytesDown"], 20);
        assert!(json.get("rule").is_none());
        let refused = |host: &str, port: u16, message: &str| ConnectionRecord {
            host: host.into(),
            port,
            decision: Decision::Denied,
            decided_by: DecidedBy::Policy,
            message: Some(message.into()),
            ..record.clone()
        };
        let records = vec![
            record.clone(),
            refused(
                "a.test",
                443,
                "toolgate: connection to a.test:443 refused: first",
            ),
            refused(
                "a.test",
                443,
                "toolgate: connection to a.test:443 refused: again",
            ),
            refused(
                "b.test",
                80,
                "toolgate: connection to b.test:80 refused: other",
            ),
        ];
        let summary = refused_connections(&records);
        assert_eq!(summary.len(), 2);
        assert!(summary[0].reason.ends_with("first"));
        let note = refusal_note(&summary).unwrap();
        assert!(
            note.starts_with("the egress proxy refused 2 connections: "),
            "{note}"
        );
        assert!(note.contains("b.test:80 refused: other"), "{note}");
        assert_eq!(refusal_note(&[]), None);
        let many: Vec<ConnectionRecord> = (0..40)
            .map(|i| refused(&format!("h{i}.test"), 80, "x"))
            .collect();
        assert_eq!(refused_connections(&many).len(), MAX_REFUSALS_REPORTED);
        assert!(!record.refused());
        assert_eq!(
            record.to_string(),
            "asked-approved api.test:443 by user, 10 bytes up, 20 down"
        );
    }
}
