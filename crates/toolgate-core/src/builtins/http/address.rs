//! `builtins.http.allow`: the operator's exceptions to the SSRF policy of `http_request`.
//!
//! Which addresses are internal (loopback, private, link-local, metadata, and every IPv6 form
//! that embeds one) is decided by [`crate::network::address`], the one implementation the
//! egress proxy uses too. What differs is only who is exempt: here the operator may exempt
//! addresses by CIDR and, unlike `network.allow`, hosts by name (a name in
//! `builtins.http.allow` may resolve to an internal address).

use std::net::IpAddr;

use ipnet::IpNet;

use crate::error::{Error, Result};
use crate::network::address::{check_address, AddressRefusal};

/// The words every refusal message starts with.
pub const REFUSAL_START: &str = "http_request refused '";
/// The words every refusal message ends with.
pub const REFUSAL_END: &str = "add it or its range to builtins.http.allow";

/// The operator's exceptions to the policy: host names and address ranges that may be reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    hosts: Vec<String>,
    nets: Vec<IpNet>,
}

impl AllowList {
    /// Reads `http.allow` entries: a CIDR (`10.0.0.0/8`), an address (`127.0.0.1`, `::1`) or a
    /// host name (`localhost`, `api.internal`). Anything else is `CONFIG_INVALID`.
    pub fn parse(entries: &[String]) -> Result<Self> {
        let mut list = AllowList::default();
        for entry in entries {
            let entry = entry.trim();
            if let Ok(net) = entry.parse::<IpNet>() {
                list.nets.push(net.trunc());
            } else if let Ok(ip) = entry.trim_matches(['[', ']']).parse::<IpAddr>() {
                list.nets.push(IpNet::from(ip));
            } else if is_host_name(entry) {
                list.hosts
                    .push(entry.trim_end_matches('.').to_ascii_lowercase());
            } else {
                return Err(Error::ConfigInvalid(format!(
                    "builtins.http.allow entry '{entry}' is neither a host name, an IP address nor a CIDR range (e.g. 'localhost', '127.0.0.1', '10.0.0.0/8')"
                )));
            }
        }
        Ok(list)
    }

    /// Whether the host name itself was allowed (then any address it resolves to is fine).
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|net| net.contains(&ip))
    }

    /// Checks one address `host` resolved to (or `host` itself when it is an address):
    /// `Ok` when it is public, allowed by range, or `host` is an allowed name.
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<()> {
        let by_name = self.allows_host(host);
        check_address(ip, |address| by_name || self.allows_ip(address)).map_err(
            |AddressRefusal { ip, reason }| {
                Error::ArgumentRejected(format!(
                    "{REFUSAL_START}{host}': it resolves to {ip}, {reason}; requests to internal networks are blocked (SSRF protection). If this host is meant to be reachable, {REFUSAL_END}"
                ))
            },
        )
    }
}

fn is_host_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list_admits_names_and_ranges() {
        let list = AllowList::parse(&[
            "localhost".into(),
            "127.0.0.1".into(),
            "10.1.0.0/16".into(),
            "[::1]".into(),
        ])
        .unwrap();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert!(list.check("localhost", ip("127.0.0.5")).is_ok());
        assert!(list.check("LOCALHOST.", ip("127.0.0.5")).is_ok());
        assert!(list.check("example.test", ip("127.0.0.1")).is_ok());
        assert!(list.check("example.test", ip("::ffff:127.0.0.1")).is_ok());
        assert!(list.check("example.test", ip("10.1.2.3")).is_ok());
        assert!(list.check("example.test", ip("::1")).is_ok());
        let err = list.check("example.test", ip("10.2.0.1")).unwrap_err();
        assert_eq!(err.error_code(), crate::ErrorCode::ArgumentRejected);
        assert!(err.to_string().contains("builtins.http.allow"), "{err}");
        assert!(list.check("example.test", ip("127.0.0.2")).is_err());
    }

    #[test]
    fn bad_allow_entries_are_config_errors() {
        for entry in ["http://x", "10.0.0.0/33", "a b", ""] {
            let err = AllowList::parse(&[entry.to_string()]).unwrap_err();
            assert_eq!(err.error_code(), crate::ErrorCode::ConfigInvalid, "{entry}");
        }
    }
}
