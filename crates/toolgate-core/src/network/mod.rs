//! Network by host: the `network` policy, the one address decision, and the egress proxy.
//!
//! - [`NetworkSetting`] is the contract `network: true | false | { allow?, deny?, ask? }`;
//!   [`Rule`] one entry of `allow`/`deny`; [`NetworkPolicy`] the decision for one connection
//!   (deny wins over allow; internal addresses only when the address itself is allowed; ask or
//!   refuse the rest), with the rules that join a caller's policy to a called worker's
//!   ([`NetworkAccess::narrowed_by`]) and a toolset's to its worker's
//!   ([`NetworkSetting::extended_by`]).
//! - [`address`] is the SSRF decision (loopback, private, link-local, metadata… refused unless
//!   exempt), shared with the builtins' `http_request`.
//! - [`Host`] normalises host names and addresses (case, trailing dot, IDNA, IPv4 spellings).
//! - [`Proxy`] is the egress proxy: one per process, on its own threads, serving HTTP
//!   (`CONNECT` and absolute-form requests) and SOCKS5 on listeners registered per tool call
//!   with a [`CallContext`] (policy, approval handler, run allowances, record sink). It
//!   resolves names itself, checks every address, connects only to a checked address, and
//!   records every decision as a [`ConnectionRecord`].
//!
//! Layering: this module uses only [`crate::error`]; the builtins use it, never the reverse.

pub mod address;
mod ask;
mod call;
mod environment;
mod host;
mod policy;
mod proxy;
mod record;
mod resolve;
mod rule;

#[cfg(test)]
mod tests;

use std::time::Duration;

pub use ask::{AskAnswer, AskRequest, Asker, RunAllowances};
pub use call::NetworkCall;
pub use environment::{proxy_environment, REPLACED_VARIABLES};
pub use host::{parse_authority, printable, Host};
pub use policy::{
    Denial, HostPolicy, HostVerdict, NetworkAccess, NetworkPolicy, NetworkSetting, MAX_ENTRIES,
};
pub use proxy::{
    CallContext, CallHandle, Proxy, ProxyConfig, ToolCallScope, CALL_END_GRACE, HANDOFF_TIMEOUT,
};
pub use record::{
    refusal_note, refused_connections, ConnectionRecord, DecidedBy, Decision, Protocol, RecordSink,
    RefusedConnection, SharedSink, MAX_REFUSALS_REPORTED,
};
pub use resolve::{system_lookup, table_lookup, Lookup};
pub use rule::{Pattern, Rule};

/// Longest request or response head the proxy reads (request line or status line and
/// headers); a longer one is refused with 400 (502 from a server).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Most header lines in one head.
pub const MAX_HEADERS: usize = 128;

/// How long a name may take to resolve.
pub const DEFAULT_RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long connecting to a destination may take (all its checked addresses together).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send its request head or SOCKS5 handshake.
pub const DEFAULT_HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may stay silent both ways before the proxy closes it.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the approval handler may take to answer about a host.
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// Connections one tool call may have open through the proxy at once.
pub const DEFAULT_MAX_CONNECTIONS_PER_CALL: usize = 64;

/// Records one call keeps for its result (all of them still go to the sink).
pub const MAX_RECORDS_PER_CALL: usize = 4096;
