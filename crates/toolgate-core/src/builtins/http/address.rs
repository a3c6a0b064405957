//! Which addresses `http_request` may connect to: the SSRF policy.
//!
//! By default only globally routable unicast addresses are reachable. Refused: unspecified,
//! loopback, private (RFC 1918, IPv6 unique-local), link-local (cloud metadata lives there),
//! shared/CGNAT space, multicast, broadcast, documentation, benchmarking and reserved ranges,
//! well-known metadata addresses outside those ranges, and every IPv6 form that embeds an
//! IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) when the embedded address is refused
//! (Teredo always). The operator may allow hosts by name or addresses by CIDR.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::error::{Error, Result};

/// Metadata services that sit on otherwise public addresses.
const METADATA_ADDRESSES: [Ipv4Addr; 1] = [
    // Azure's wire server (the instance metadata service itself is 169.254.169.254).
    Ipv4Addr::new(168, 63, 129, 16),
];

/// The words every refusal message starts with.
pub const REFUSAL_START: &str = "http_request refused '";
/// The words every refusal message ends with.
pub const REFUSAL_END: &str = "add it or its range to builtins.http.allow";

/// Why an address is refused, in words for the error message.
pub fn refusal_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let reason = if ip.is_unspecified() || a == 0 {
        "an unspecified ('this network') address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_private() {
        "a private address"
    } else if ip.is_link_local() {
        "a link-local address (cloud metadata services live there)"
    } else if a == 100 && (64..128).contains(&b) {
        "a shared (CGNAT) address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if ip.is_broadcast() {
        "the broadcast address"
    } else if a >= 240 {
        "a reserved address"
    } else if a == 192 && b == 0 && c == 0 {
        "an IETF protocol address"
    } else if (a == 192 && b == 0 && c == 2)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
    {
        "a documentation address"
    } else if a == 198 && (b == 18 || b == 19) {
        "a benchmarking address"
    } else if METADATA_ADDRESSES.contains(&ip) {
        "a cloud metadata address"
    } else {
        return None;
    };
    Some(reason)
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let embedded_v4 = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (the deprecated compatible form).
    if segments[..5] == [0, 0, 0, 0, 0] && (segments[5] == 0xffff || segments[5] == 0) {
        return v4_reason(embedded_v4(segments[6], segments[7]))
            .map(|_| "an IPv4-mapped form of a refused IPv4 address");
    }
    // NAT64: 64:ff9b::/96 translates to the embedded IPv4 address; 64:ff9b:1::/48 is local use.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return v4_reason(embedded_v4(segments[6], segments[7]))
            .map(|_| "a NAT64 form of a refused IPv4 address");
    }
    if segments[0] == 0x64 && segments[1] == 0xff9b && segments[2] == 1 {
        return Some("a local-use NAT64 address");
    }
    // 6to4: 2002:AABB:CCDD::/48 routes to the IPv4 address AA.BB.CC.DD.
    if segments[0] == 0x2002 {
        return v4_reason(embedded_v4(segments[1], segments[2]))
            .map(|_| "a 6to4 form of a refused IPv4 address");
    }
    let reason = if segments[0] == 0x2001 && segments[1] == 0 {
        // Teredo hides the client's IPv4 address (XOR-ed); never needed by a tool.
        "a Teredo tunnel address"
    } else if segments[0] & 0xfe00 == 0xfc00 {
        "a unique-local (private) address"
    } else if segments[0] & 0xffc0 == 0xfe80 {
        "a link-local address"
    } else if segments[0] & 0xffc0 == 0xfec0 {
        "a site-local address"
    } else if segments[0] & 0xff00 == 0xff00 {
        "a multicast address"
    } else if segments[0] == 0x2001 && segments[1] == 0xdb8 {
        "a documentation address"
    } else if segments[..4] == [0x100, 0, 0, 0] {
        "a discard-only address"
    } else {
        return None;
    };
    Some(reason)
}

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
        let canonical = canonical(ip);
        self.nets
            .iter()
            .any(|net| net.contains(&ip) || net.contains(&canonical))
    }

    /// Checks one address `host` resolved to (or `host` itself when it is an address):
    /// `Ok` when it is public, allowed by range, or `host` is an allowed name.
    pub fn check(&self, host: &str, ip: IpAddr) -> Result<()> {
        if self.allows_host(host) || self.allows_ip(ip) {
            return Ok(());
        }
        match refusal_reason(ip) {
            None => Ok(()),
            Some(reason) => Err(Error::ArgumentRejected(format!(
                "{REFUSAL_START}{host}': it resolves to {ip}, {reason}; requests to internal networks are blocked (SSRF protection). If this host is meant to be reachable, {REFUSAL_END}"
            ))),
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
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

    fn refused(text: &str) -> bool {
        refusal_reason(text.parse().unwrap()).is_some()
    }

    #[test]
    fn internal_ipv4_ranges_are_refused() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "100.64.0.1",
            "100.100.100.200",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.170",
            "192.0.2.1",
            "198.18.0.1",
            "168.63.129.16",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
        ] {
            assert!(!refused(ip), "{ip} is public");
        }
    }

    #[test]
    fn ipv6_forms_of_internal_addresses_are_refused() {
        for ip in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:7f00:1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "100::1",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
        // Embedded public addresses stay reachable.
        assert!(!refused("::ffff:8.8.8.8"));
        assert!(!refused("64:ff9b::808:808"));
    }

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
