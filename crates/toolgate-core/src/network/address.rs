//! Which addresses may be reached: the one SSRF decision of toolgate.
//!
//! By default only globally routable unicast addresses are reachable. Refused: unspecified,
//! loopback, private (RFC 1918, IPv6 unique-local), link-local (cloud metadata lives there),
//! shared/CGNAT space, multicast, broadcast, documentation, benchmarking and reserved ranges,
//! well-known metadata addresses outside those ranges, and every IPv6 form that embeds an
//! IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) when the embedded address is refused
//! (Teredo always). The caller says which addresses are exempt: the egress proxy exempts the
//! addresses and ranges written in `network.allow`, the builtins' `http_request` those in
//! `builtins.http.allow`. Both call [`check_address`]; nothing else decides this.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Metadata services that sit on otherwise public addresses.
const METADATA_ADDRESSES: [Ipv4Addr; 1] = [
    // Azure's wire server (the instance metadata service itself is 169.254.169.254).
    Ipv4Addr::new(168, 63, 129, 16),
];

/// An address refused by [`check_address`], with the reason in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressRefusal {
    /// The address as it was given.
    pub ip: IpAddr,
    /// Why, e.g. "a private address".
    pub reason: &'static str,
}

/// Decides whether `ip` may be reached. `exempt` is asked about the address and, for an
/// IPv4-mapped IPv6 address, about the IPv4 address it stands for; an exempt address passes
/// whatever its range. Everything else passes unless [`refusal_reason`] names a reason.
pub fn check_address(ip: IpAddr, exempt: impl Fn(IpAddr) -> bool) -> Result<(), AddressRefusal> {
    if exempt(ip) || exempt(canonical(ip)) {
        return Ok(());
    }
    match refusal_reason(ip) {
        None => Ok(()),
        Some(reason) => Err(AddressRefusal { ip, reason }),
    }
}

/// Why an address is refused when nobody exempted it, in words for the error message; `None`
/// for a globally routable address.
pub fn refusal_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the IPv4 address it stands for; any other
/// address unchanged.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// The IPv4 address an IPv6 address carries and routes to: mapped (`::ffff:a.b.c.d`),
/// compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) or 6to4 (`2002:AABB:CCDD::/48`).
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let join = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff {
        return Some(join(s[6], s[7]));
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(s[6] == 0 && s[7] <= 1) {
        // The deprecated compatible form; `::` and `::1` are not IPv4 addresses in disguise.
        return Some(join(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(join(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(join(s[1], s[2]));
    }
    None
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
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if let Some(v4) = embedded_ipv4(ip) {
        let form = if segments[0] == 0x2002 {
            "a 6to4 form of a refused IPv4 address"
        } else if segments[0] == 0x64 {
            "a NAT64 form of a refused IPv4 address"
        } else {
            "an IPv4-mapped form of a refused IPv4 address"
        };
        return v4_reason(v4).map(|_| form);
    }
    let reason = if segments[0] == 0x64 && segments[1] == 0xff9b && segments[2] == 1 {
        // 64:ff9b:1::/48 is NAT64 for local use.
        "a local-use NAT64 address"
    } else if segments[0] == 0x2001 && segments[1] == 0 {
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
        assert!(refused("::ffff:0.0.0.1"));
        assert!(refused("::ffff:0.0.0.0"));
        assert!(!refused("64:ff9b::808:808"));
    }

    #[test]
    fn an_exempt_address_passes_in_either_spelling() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let only_loopback = |ip: IpAddr| ip == loopback;
        assert!(check_address(loopback, only_loopback).is_ok());
        assert!(check_address("::ffff:127.0.0.1".parse().unwrap(), only_loopback).is_ok());
        let refusal = check_address("127.0.0.2".parse().unwrap(), only_loopback).unwrap_err();
        assert_eq!(refusal.reason, "a loopback address");
        assert!(check_address("8.8.8.8".parse().unwrap(), |_| false).is_ok());
    }

    #[test]
    fn embedded_ipv4_addresses_are_found() {
        let embedded = |text: &str| embedded_ipv4(text.parse().unwrap());
        let v4 = |text: &str| Some(text.parse::<Ipv4Addr>().unwrap());
        assert_eq!(embedded("::ffff:10.1.2.3"), v4("10.1.2.3"));
        assert_eq!(embedded("::10.1.2.3"), v4("10.1.2.3"));
        assert_eq!(embedded("64:ff9b::a01:203"), v4("10.1.2.3"));
        assert_eq!(embedded("2002:a01:203::1"), v4("10.1.2.3"));
        assert_eq!(embedded("::1"), None);
        assert_eq!(embedded("::"), None);
        assert_eq!(embedded("2606:4700::1"), None);
    }
}
