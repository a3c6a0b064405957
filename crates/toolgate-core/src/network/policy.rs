//! The `network` setting (the contract: `true | false | { allow?, deny?, ask? }`) and the
//! decision it makes about each connection.
//!
//! A connection to a host and port is judged in this order:
//! 1. a `deny` entry that matches refuses it (deny wins over allow);
//! 2. for an address (a literal, or every address a name resolves to), an internal address
//!    (loopback, private, link-local, unique-local, CGNAT, metadata, and their IPv6 forms) is
//!    refused unless the address or its range is itself an `allow` entry; a name entry that
//!    resolves there is not enough;
//! 3. an `allow` entry that matches lets it through;
//! 4. otherwise, with `ask: true`, the run's approval handler is asked; without, it is refused.
//!
//! Several policies can hold at once ([`NetworkPolicy`] is a stack of layers): a called worker's
//! policy only narrows its caller's, so a connection needs every layer to let it through; any
//! layer's refusal refuses it; it is asked about when every layer allows or asks. A toolset's
//! `network` inside a worker file may widen the worker's ([`NetworkSetting::extended_by`]).

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::address::check_address;
use super::host::Host;
use super::record::DecidedBy;
use super::rule::{Rule, ENTRY_FORMS};
use crate::error::{Error, Result};

/// Most entries one `allow` or `deny` list may hold.
pub const MAX_ENTRIES: usize = 1024;

/// The `network` setting as written: `false` (no network), `true` (open network, no proxy), or
/// an object: only the hosts it allows, through the egress proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkSetting {
    Off,
    Open,
    Hosts(HostPolicy),
}

/// The object form `{ allow?, deny?, ask? }`, every entry parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPolicy {
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// `None` when not written (then `false`, or the worker's value for a toolset).
    pub ask: Option<bool>,
}

impl HostPolicy {
    /// Whether a host neither allowed nor denied goes to the approval handler.
    pub fn asks(&self) -> bool {
        self.ask.unwrap_or(false)
    }

    /// Parses the object form's lists; `setting` names it in errors (`sandbox.network`).
    pub fn parse(
        allow: &[String],
        deny: &[String],
        ask: Option<bool>,
        setting: &str,
    ) -> Result<Self> {
        Ok(HostPolicy {
            allow: parse_entries(allow, &format!("{setting}.allow"))
                .map_err(Error::ConfigInvalid)?,
            deny: parse_entries(deny, &format!("{setting}.deny")).map_err(Error::ConfigInvalid)?,
            ask,
        })
    }

    fn verdict_for_host(&self, host: &Host, port: u16) -> HostVerdict {
        if let Some(rule) = self.deny.iter().find(|rule| rule.matches(host, port)) {
            return HostVerdict::Deny(Denial {
                decided_by: DecidedBy::Rule,
                rule: Some(rule.to_string()),
                reason: format!("it matches network.deny entry '{rule}'"),
                fix: Some(
                    "deny wins over allow: remove the entry from network.deny to reach it".into(),
                ),
            });
        }
        if let Some(rule) = self.allow.iter().find(|rule| rule.matches(host, port)) {
            return HostVerdict::Allow {
                rule: rule.to_string(),
            };
        }
        if self.asks() {
            return HostVerdict::Ask;
        }
        let with_port = host.with_port(port);
        HostVerdict::Deny(Denial {
            decided_by: DecidedBy::Policy,
            rule: None,
            reason: format!("{with_port} is not in network.allow"),
            fix: Some(format!(
                "allow it with network.allow: [\"{host}\"] (any port) or [\"{with_port}\"]"
            )),
        })
    }
}

fn parse_entries(entries: &[String], list: &str) -> Result<Vec<Rule>, String> {
    if entries.len() > MAX_ENTRIES {
        return Err(format!(
            "{list} has {} entries, at most {MAX_ENTRIES} are accepted",
            entries.len()
        ));
    }
    entries
        .iter()
        .map(|entry| {
            Rule::parse(entry).map_err(|why| {
                format!(
                    "{list} entry '{}' is not valid: {why}; {ENTRY_FORMS}",
                    super::host::printable(entry)
                )
            })
        })
        .collect()
}

impl NetworkSetting {
    /// Reads the setting from JSON (a JavaScript option); `setting` names it in errors
    /// (`sandbox.network`). An unknown key or a malformed entry is `CONFIG_INVALID`.
    pub fn from_json(value: &serde_json::Value, setting: &str) -> Result<Self> {
        NetworkSetting::deserialize(value)
            .map_err(|err| Error::ConfigInvalid(format!("{setting}: {err}")))
    }

    /// What the setting means on its own (no caller above it).
    pub fn access(&self) -> NetworkAccess {
        match self {
            NetworkSetting::Off => NetworkAccess::Off,
            NetworkSetting::Open => NetworkAccess::Open,
            NetworkSetting::Hosts(policy) => {
                NetworkAccess::Hosts(NetworkPolicy::new(policy.clone()))
            }
        }
    }

    /// A toolset's `network` over its worker's, inside one worker file, where a toolset may
    /// widen: `false` and `true` replace the worker's; an object over `false` or `true` is the
    /// toolset's object alone; an object over an object keeps both lists (the toolset adds
    /// hosts to `allow`; the worker's `deny` entries still hold, since deny wins) and the
    /// toolset's `ask` when it writes one, else the worker's.
    pub fn extended_by(&self, toolset: &NetworkSetting) -> NetworkSetting {
        match (self, toolset) {
            (NetworkSetting::Hosts(worker), NetworkSetting::Hosts(own)) => {
                let mut allow = worker.allow.clone();
                allow.extend(
                    own.allow
                        .iter()
                        .filter(|rule| !worker.allow.contains(rule))
                        .cloned(),
                );
                let mut deny = worker.deny.clone();
                deny.extend(
                    own.deny
                        .iter()
                        .filter(|rule| !worker.deny.contains(rule))
                        .cloned(),
                );
                NetworkSetting::Hosts(HostPolicy {
                    allow,
                    deny,
                    ask: own.ask.or(worker.ask),
                })
            }
            (_, toolset) => toolset.clone(),
        }
    }
}

impl From<bool> for NetworkSetting {
    fn from(open: bool) -> Self {
        if open {
            NetworkSetting::Open
        } else {
            NetworkSetting::Off
        }
    }
}

/// The network a call gets, every level above it applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkAccess {
    /// No network at all.
    Off,
    /// The open network (`network: true`): no proxy, no filtering.
    Open,
    /// Only through the egress proxy, judged by the policy.
    Hosts(NetworkPolicy),
}

impl NetworkAccess {
    /// This access (a caller's) for a called worker whose own setting gives `inner`: the
    /// strictest of the two. Off anywhere is off; open adds nothing; two host policies both
    /// hold (a connection needs each to let it through).
    pub fn narrowed_by(&self, inner: &NetworkAccess) -> NetworkAccess {
        match (self, inner) {
            (NetworkAccess::Off, _) | (_, NetworkAccess::Off) => NetworkAccess::Off,
            (NetworkAccess::Open, other) | (other, NetworkAccess::Open) => other.clone(),
            (NetworkAccess::Hosts(outer), NetworkAccess::Hosts(inner)) => {
                let mut layers = outer.layers.clone();
                for layer in &inner.layers {
                    if !layers.iter().any(|existing| existing == layer) {
                        layers.push(Arc::clone(layer));
                    }
                }
                NetworkAccess::Hosts(NetworkPolicy { layers })
            }
        }
    }

    /// What `inner` would reach that this access does not, in words for a `CONFIG_INVALID`
    /// that refuses a widening called worker; `None` when `inner` only narrows. (The narrowed
    /// access never widens either way: [`narrowed_by`](Self::narrowed_by) keeps every layer.)
    pub fn widening(&self, inner: &NetworkAccess) -> Option<String> {
        match (self, inner) {
            (_, NetworkAccess::Off) | (NetworkAccess::Open, _) => None,
            (NetworkAccess::Off, NetworkAccess::Open) => {
                Some("network is true where it is false".into())
            }
            (NetworkAccess::Off, NetworkAccess::Hosts(_)) => {
                Some("network allows hosts where it is false".into())
            }
            (NetworkAccess::Hosts(_), NetworkAccess::Open) => {
                Some("network is true where it is limited to some hosts".into())
            }
            (NetworkAccess::Hosts(outer), NetworkAccess::Hosts(inner)) => {
                for layer in &inner.layers {
                    for rule in &layer.allow {
                        let held = outer.layers.iter().all(|outer| {
                            outer.allow.iter().any(|wide| rule.within(wide)) || outer.asks()
                        });
                        if !held {
                            return Some(format!(
                                "network.allow has '{rule}', which the caller does not allow"
                            ));
                        }
                    }
                    if layer.asks() && !outer.layers.iter().all(|outer| outer.asks()) {
                        return Some("network.ask is true where it is false".into());
                    }
                }
                None
            }
        }
    }

    /// One line for `toolgate check --sandbox`.
    pub fn describe(&self) -> String {
        match self {
            NetworkAccess::Off => "off".into(),
            NetworkAccess::Open => "open (network: true, every host)".into(),
            NetworkAccess::Hosts(policy) => format!("by host through the egress proxy: {policy}"),
        }
    }
}

/// Host policies that all hold at once; the first is the outermost (the top worker's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPolicy {
    layers: Vec<Arc<HostPolicy>>,
}

/// What the host and port alone decide (before any address is known for a name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostVerdict {
    /// Allowed by the entry named.
    Allow {
        rule: String,
    },
    /// Neither allowed nor denied, and every layer may ask.
    Ask,
    Deny(Denial),
}

/// A refusal by the policy, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub decided_by: DecidedBy,
    pub rule: Option<String>,
    /// What was refused and why: "it matches network.deny entry 'x'".
    pub reason: String,
    /// How to allow it, when the policy can be changed to.
    pub fix: Option<String>,
}

impl NetworkPolicy {
    /// A policy of one layer.
    pub fn new(policy: HostPolicy) -> Self {
        NetworkPolicy {
            layers: vec![Arc::new(policy)],
        }
    }

    /// The layers, outermost first.
    pub fn layers(&self) -> &[Arc<HostPolicy>] {
        &self.layers
    }

    /// Judges `host:port` by its name or literal address. For an address this is the whole
    /// decision but for asking; for a name, every address it resolves to must then pass
    /// [`judge_address`](Self::judge_address).
    pub fn judge_host(&self, host: &Host, port: u16) -> HostVerdict {
        if let Some(ip) = host.ip() {
            if let Some(denial) = self.deny_address(ip, port) {
                return HostVerdict::Deny(denial);
            }
            if let Err(denial) = self.check_internal(host, ip, port) {
                return HostVerdict::Deny(denial);
            }
        }
        let mut verdict = None;
        for layer in &self.layers {
            match layer.verdict_for_host(host, port) {
                deny @ HostVerdict::Deny(_) => return deny,
                HostVerdict::Ask => verdict = Some(HostVerdict::Ask),
                allow @ HostVerdict::Allow { .. } => {
                    if verdict.is_none() {
                        verdict = Some(allow);
                    }
                }
            }
        }
        // Every policy has a layer; an empty one would refuse.
        verdict.unwrap_or_else(|| HostPolicy::default().verdict_for_host(host, port))
    }

    /// Judges one address a name (`host`) resolved to: a deny entry reaching it, or an
    /// internal address no allow entry covers, refuses it.
    pub fn judge_address(&self, host: &Host, ip: IpAddr, port: u16) -> Result<(), Denial> {
        if let Some(denial) = self.deny_address(ip, port) {
            return Err(denial);
        }
        self.check_internal(host, ip, port)
    }

    fn deny_address(&self, ip: IpAddr, port: u16) -> Option<Denial> {
        self.layers
            .iter()
            .flat_map(|layer| layer.deny.iter())
            .find(|rule| rule.reaches_address(ip, port))
            .map(|rule| Denial {
                decided_by: DecidedBy::Rule,
                rule: Some(rule.to_string()),
                reason: format!("{ip} matches network.deny entry '{rule}'"),
                fix: Some(
                    "deny wins over allow: remove the entry from network.deny to reach it".into(),
                ),
            })
    }

    fn check_internal(&self, host: &Host, ip: IpAddr, port: u16) -> Result<(), Denial> {
        let exempt = |address: IpAddr| {
            self.layers.iter().all(|layer| {
                layer
                    .allow
                    .iter()
                    .any(|rule| rule.covers_address(address, port))
            })
        };
        check_address(ip, exempt).map_err(|refusal| {
            let reason = match host {
                Host::Ip(_) => refusal.reason.to_string(),
                Host::Name(name) => format!("{name} resolves to {ip}, {}", refusal.reason),
            };
            let fix = match host {
                Host::Ip(_) => format!("allow it with network.allow: [\"{ip}\"]"),
                Host::Name(_) => format!(
                    "allow the address itself with network.allow: [\"{ip}\"] (allowing the name is not enough)"
                ),
            };
            Denial {
                decided_by: DecidedBy::Address,
                rule: None,
                reason,
                fix: Some(fix),
            }
        })
    }
}

impl fmt::Display for HostPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |rules: &[Rule]| {
            rules
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.allow.is_empty() {
            f.write_str("allow nothing")?;
        } else {
            write!(f, "allow {}", list(&self.allow))?;
        }
        if !self.deny.is_empty() {
            write!(f, "; deny {}", list(&self.deny))?;
        }
        f.write_str(if self.asks() {
            "; ask about other hosts"
        } else {
            "; refuse other hosts"
        })
    }
}

impl fmt::Display for NetworkPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, layer) in self.layers.iter().enumerate() {
            if index > 0 {
                f.write_str("; and within that, ")?;
            }
            write!(f, "{layer}")?;
        }
        Ok(())
    }
}

// --- serde: the contract's spelling -------------------------------------------------------

const SETTING_FORMS: &str =
    "true, false or an object { allow?: string[], deny?: string[], ask?: boolean }";

impl<'de> Deserialize<'de> for NetworkSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct SettingVisitor;
        impl<'de> Visitor<'de> for SettingVisitor {
            type Value = NetworkSetting;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(SETTING_FORMS)
            }

            fn visit_bool<E: de::Error>(
                self,
                open: bool,
            ) -> std::result::Result<NetworkSetting, E> {
                Ok(NetworkSetting::from(open))
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<NetworkSetting, A::Error> {
                let mut allow: Option<Vec<String>> = None;
                let mut deny: Option<Vec<String>> = None;
                let mut ask: Option<bool> = None;
                while let Some(key) = map.next_key::<String>()? {
                    let duplicate = || {
                        de::Error::custom(format!("the network setting has the key '{key}' twice"))
                    };
                    match key.as_str() {
                        "allow" if allow.is_none() => allow = Some(map.next_value_seed(EntryList("allow"))?),
                        "deny" if deny.is_none() => deny = Some(map.next_value_seed(EntryList("deny"))?),
                        "ask" if ask.is_none() => ask = Some(map.next_value()?),
                        "allow" | "deny" | "ask" => return Err(duplicate()),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown key '{}' in the network setting; its keys are allow, deny and ask",
                                super::host::printable(other)
                            )))
                        }
                    }
                }
                let policy = HostPolicy::parse(
                    allow.as_deref().unwrap_or_default(),
                    deny.as_deref().unwrap_or_default(),
                    ask,
                    "network",
                )
                .map_err(|err| de::Error::custom(err.to_string()))?;
                Ok(NetworkSetting::Hosts(policy))
            }
        }
        deserializer.deserialize_any(SettingVisitor)
    }
}

/// A list of entries: strings, at most [`MAX_ENTRIES`].
struct EntryList(&'static str);

impl<'de> de::DeserializeSeed<'de> for EntryList {
    type Value = Vec<String>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Vec<String>, D::Error> {
        struct ListVisitor(&'static str);
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = Vec<String>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "network.{} as a list of strings", self.0)
            }

            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Vec<String>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = seq.next_element::<String>()? {
                    if entries.len() == MAX_ENTRIES {
                        return Err(de::Error::custom(format!(
                            "network.{} has more than {MAX_ENTRIES} entries",
                            self.0
                        )));
                    }
                    entries.push(entry);
                }
                Ok(entries)
            }
        }
        deserializer.deserialize_seq(ListVisitor(self.0))
    }
}

impl Serialize for NetworkSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            NetworkSetting::Off => serializer.serialize_bool(false),
            NetworkSetting::Open => serializer.serialize_bool(true),
            NetworkSetting::Hosts(policy) => {
                let texts =
                    |rules: &[Rule]| rules.iter().map(ToString::to_string).collect::<Vec<_>>();
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("allow", &texts(&policy.allow))?;
                if !policy.deny.is_empty() {
                    map.serialize_entry("deny", &texts(&policy.deny))?;
                }
                if let Some(ask) = policy.ask {
                    map.serialize_entry("ask", &ask)?;
                }
                map.end()
            }
        }
    }
}

impl JsonSchema for NetworkSetting {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NetworkSetting".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "false: no network; true: the open network; an object: only the hosts it allows, through toolgate's egress proxy",
            "anyOf": [
                { "type": "boolean" },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "allow": {
                            "description": "Hosts that may be reached: 'example.com', '*.example.com' (subdomains), 'host:port', IP addresses and CIDR ranges with an optional ':port', '[IPv6]:port'",
                            "type": "array",
                            "items": { "type": "string" }
                        },
                        "deny": {
                            "description": "Hosts refused even when allowed (same entries as allow)",
                            "type": "array",
                            "items": { "type": "string" }
                        },
                        "ask": {
                            "description": "Ask the run's approval handler about hosts neither allowed nor denied (default false: refuse them)",
                            "type": "boolean"
                        }
                    }
                }
            ]
        })
    }
}

#[cfg(test)]
mod tests;
