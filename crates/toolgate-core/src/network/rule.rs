//! One entry of `network.allow` or `network.deny`, and what it matches.
//!
//! The grammar:
//! - `example.com`: that host exactly, on any port;
//! - `*.example.com`: its subdomains at any depth (`a.example.com`, `a.b.example.com`), not
//!   `example.com` itself: list both to have both;
//! - `example.com:443`, `*.example.com:443`: the same, on that port only;
//! - `10.0.0.5`, `::1`, `10.0.0.0/8`, `fd00::/8`: an address or range (a CIDR; host bits are
//!   cleared), on any port; `10.0.0.5:80`, `10.0.0.0/8:5432`, `[::1]:8080`, `[fd00::/8]:80`:
//!   on that port. An IPv6 address with a port needs brackets.
//!
//! Hosts are normalised as [`Host::parse`] does (case, trailing dot, IDNA, IPv4 spellings). A
//! name entry matches a connection to that name; an address entry matches a connection to that
//! address and exempts it from the refusal of internal addresses ([`super::address`]). A name
//! that resolves to an address is matched by the name only: allowing `localhost` does not
//! allow `127.0.0.1`.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use super::address::{canonical, embedded_ipv4};
use super::host::{parse_port, printable, split_port, Host};

/// What an entry's host part matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// One host name.
    Name(String),
    /// Every subdomain of a name (not the name itself).
    Subdomains(String),
    /// An address range; a single address is a `/32` or `/128`.
    Net(IpNet),
}

/// One parsed entry: a pattern and an optional port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    pub pattern: Pattern,
    /// `None`: any port.
    pub port: Option<u16>,
}

/// What a valid entry looks like, for every error message.
pub const ENTRY_FORMS: &str = "write a host ('example.com'), '*.example.com' for its subdomains, 'host:port', an IP address or CIDR range ('10.0.0.5', '10.0.0.0/8', '10.0.0.0/8:5432') or '[IPv6]:port'";

impl Rule {
    /// Parses one entry. The error says what is wrong with it and, where it can, the entry
    /// that was meant.
    pub fn parse(entry: &str) -> Result<Rule, String> {
        let text = entry.trim();
        if text.is_empty() {
            return Err("it is empty".into());
        }
        if let Some((_, rest)) = text.split_once("://") {
            let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
            return Err(format!(
                "it is a URL; write only its host: '{}'",
                printable(host)
            ));
        }
        if text == "*" || text == "*.*" {
            return Err(
                "it would match every host; use `network: true` for an open network".into(),
            );
        }
        if text.starts_with('.') {
            return Err(format!(
                "it starts with a dot; write '*{}' for the subdomains",
                printable(text)
            ));
        }
        if text.contains('/') {
            return parse_net(text);
        }
        if let Some(rest) = text.strip_prefix("*.") {
            let (host, port) = split_port(rest)?;
            let port = port.map(parse_port).transpose()?;
            return match Host::parse(host)? {
                Host::Name(name) => Ok(Rule {
                    pattern: Pattern::Subdomains(name),
                    port,
                }),
                Host::Ip(_) => Err("'*.' goes before a host name, not an address".into()),
            };
        }
        if text.contains('*') {
            return Err(
                "'*' may only start an entry, as in '*.example.com' (the subdomains)".into(),
            );
        }
        let (host, port) = split_port(text)?;
        let port = port.map(parse_port).transpose()?;
        Ok(Rule {
            pattern: match Host::parse(host)? {
                Host::Name(name) => Pattern::Name(name),
                Host::Ip(ip) => Pattern::Net(IpNet::from(ip)),
            },
            port,
        })
    }

    /// Whether a connection to `host` on `port` matches this entry. An address entry also
    /// matches the IPv4-mapped IPv6 form of its addresses.
    pub fn matches(&self, host: &Host, port: u16) -> bool {
        if self.port.is_some_and(|only| only != port) {
            return false;
        }
        match (&self.pattern, host) {
            (Pattern::Name(name), Host::Name(host)) => name == host,
            (Pattern::Subdomains(parent), Host::Name(host)) => host
                .strip_suffix(parent.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Pattern::Net(net), Host::Ip(ip)) => net.contains(ip) || net.contains(&canonical(*ip)),
            _ => false,
        }
    }

    /// Whether this is an address entry whose range holds `ip` (or the IPv4 address it maps)
    /// on `port`: what exempts an internal address from refusal.
    pub fn covers_address(&self, ip: IpAddr, port: u16) -> bool {
        self.port.is_none_or(|only| only == port)
            && matches!(&self.pattern, Pattern::Net(net) if net.contains(&ip) || net.contains(&canonical(ip)))
    }

    /// Whether this is an address entry that reaches `ip` in any form: the address itself or
    /// the IPv4 address it embeds (mapped, compatible, NAT64, 6to4). Deny entries use this, so
    /// that no spelling of a denied address gets past them.
    pub fn reaches_address(&self, ip: IpAddr, port: u16) -> bool {
        if self.port.is_some_and(|only| only != port) {
            return false;
        }
        let Pattern::Net(net) = &self.pattern else {
            return false;
        };
        net.contains(&ip)
            || match ip {
                IpAddr::V6(v6) => embedded_ipv4(v6).is_some_and(|v4| net.contains(&IpAddr::V4(v4))),
                IpAddr::V4(_) => false,
            }
    }

    /// Whether every connection this entry matches is also matched by `wider`.
    pub fn within(&self, wider: &Rule) -> bool {
        let port_within = match (wider.port, self.port) {
            (None, _) => true,
            (Some(wide), Some(narrow)) => wide == narrow,
            (Some(_), None) => false,
        };
        let pattern_within = match (&self.pattern, &wider.pattern) {
            (Pattern::Name(a), Pattern::Name(b)) => a == b,
            (Pattern::Name(a), Pattern::Subdomains(b)) => is_subdomain(a, b),
            (Pattern::Subdomains(a), Pattern::Subdomains(b)) => a == b || is_subdomain(a, b),
            (Pattern::Net(a), Pattern::Net(b)) => b.contains(a),
            _ => false,
        };
        port_within && pattern_within
    }
}

fn is_subdomain(name: &str, parent: &str) -> bool {
    name.strip_suffix(parent)
        .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
}

/// `a.b.c.d/len`, `a.b.c.d/len:port`, `v6/len`, `[v6/len]:port`, `[v6]/len:port`.
fn parse_net(text: &str) -> Result<Rule, String> {
    let (body, port) = if let Some(inner) = text.strip_prefix('[') {
        let close = inner
            .find(']')
            .ok_or("an IPv6 range opened with '[' must close with ']'")?;
        let (range, after) = (&inner[..close], &inner[close + 1..]);
        if let Some(port) = after.strip_prefix(':') {
            (range.to_string(), Some(port))
        } else if let Some(rest) = after.strip_prefix('/') {
            // `[v6]/len` or `[v6]/len:port`
            let (len, port) = match rest.split_once(':') {
                Some((len, port)) => (len, Some(port)),
                None => (rest, None),
            };
            (format!("{range}/{len}"), port)
        } else if after.is_empty() {
            (range.to_string(), None)
        } else {
            return Err(format!(
                "'{}' is not a range; {ENTRY_FORMS}",
                printable(text)
            ));
        }
    } else {
        let (address, len) = text.split_once('/').unwrap_or((text, ""));
        match len.split_once(':') {
            Some((len, port)) if !address.contains(':') => (format!("{address}/{len}"), Some(port)),
            Some(_) => {
                return Err("an IPv6 range with a port needs brackets: '[fd00::/8]:80'".into())
            }
            None => (text.to_string(), None),
        }
    };
    let port = port.map(parse_port).transpose()?;
    let net = body.parse::<IpNet>().map_err(|_| {
        format!(
            "'{}' is not a CIDR range (an address, '/', a prefix length: '10.0.0.0/8', 'fd00::/8')",
            printable(&body)
        )
    })?;
    Ok(Rule {
        pattern: Pattern::Net(net.trunc()),
        port,
    })
}

impl fmt::Display for Rule {
    /// The entry in its normal spelling: what messages and records quote.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.pattern {
            Pattern::Name(name) => name.clone(),
            Pattern::Subdomains(name) => format!("*.{name}"),
            Pattern::Net(net) if net.prefix_len() == net.max_prefix_len() => net.addr().to_string(),
            Pattern::Net(net) => net.to_string(),
        };
        match (self.port, &self.pattern) {
            (None, _) => f.write_str(&host),
            (Some(port), Pattern::Net(IpNet::V6(_))) => write!(f, "[{host}]:{port}"),
            (Some(port), _) => write!(f, "{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        Rule::parse(text).unwrap_or_else(|err| panic!("{text}: {err}"))
    }

    fn host(text: &str) -> Host {
        Host::parse(text).unwrap()
    }

    #[test]
    fn entries_parse_to_their_normal_spelling() {
        for (entry, normal) in [
            ("example.com", "example.com"),
            ("Example.COM.", "example.com"),
            ("*.Example.com", "*.example.com"),
            ("example.com:443", "example.com:443"),
            ("*.example.com:443", "*.example.com:443"),
            ("bücher.de", "xn--bcher-kva.de"),
            ("10.0.0.5", "10.0.0.5"),
            ("10.0.0.5:80", "10.0.0.5:80"),
            ("0x7f.1", "127.0.0.1"),
            ("10.1.2.3/8", "10.0.0.0/8"),
            ("10.0.0.0/8:5432", "10.0.0.0/8:5432"),
            ("::1", "::1"),
            ("[::1]", "::1"),
            ("[::1]:8080", "[::1]:8080"),
            ("fd00::/8", "fd00::/8"),
            ("[fd00::/8]:80", "[fd00::/8]:80"),
            ("[fd00::]/8:80", "[fd00::/8]:80"),
            ("  example.com ", "example.com"),
        ] {
            assert_eq!(rule(entry).to_string(), normal, "{entry}");
        }
    }

    #[test]
    fn malformed_entries_say_what_is_wrong() {
        for (entry, says) in [
            ("", "empty"),
            (
                "https://example.com/x",
                "write only its host: 'example.com'",
            ),
            ("*", "network: true"),
            ("*.*", "network: true"),
            (".example.com", "'*.example.com'"),
            ("a.*.com", "'*' may only start"),
            ("*example.com", "'*' may only start"),
            ("**.example.com", "'*' may only start"),
            ("*.10.0.0.1", "not an address"),
            ("example.com:0", "out of range"),
            ("example.com:65536", "out of range"),
            ("example.com:http", "not a port"),
            ("exa mple.com", "U+0020"),
            ("exa\0mple.com", "NUL"),
            ("10.0.0.0/33", "not a CIDR"),
            ("fd00::/8:80", "needs brackets"),
            ("10.0.0.0/8:x", "not a port"),
            ("a/b", "not a CIDR"),
            ("::1:80:x", "':'"),
            ("1.2.3.4.5", "not a valid host"),
        ] {
            let err = Rule::parse(entry).unwrap_err();
            assert!(err.contains(says), "{entry:?}: {err}");
        }
    }

    #[test]
    fn names_match_exactly_and_subdomains_exclude_the_apex() {
        let exact = rule("example.com");
        assert!(exact.matches(&host("example.com"), 443));
        assert!(exact.matches(&host("EXAMPLE.com."), 80));
        assert!(!exact.matches(&host("a.example.com"), 443));
        assert!(!exact.matches(&host("badexample.com"), 443));
        assert!(!exact.matches(&host("ex\u{0430}mple.com"), 443));
        let subs = rule("*.example.com");
        assert!(subs.matches(&host("a.example.com"), 443));
        assert!(subs.matches(&host("a.b.example.com"), 443));
        assert!(!subs.matches(&host("example.com"), 443));
        assert!(!subs.matches(&host("badexample.com"), 443));
        assert!(!subs.matches(&host("a.example.com.evil.test"), 443));
        // A name entry never matches an address, nor the other way round.
        assert!(!rule("127.0.0.1").matches(&host("localhost"), 80));
        assert!(!rule("localhost").matches(&host("127.0.0.1"), 80));
    }

    #[test]
    fn ports_narrow_an_entry() {
        let on_443 = rule("example.com:443");
        assert!(on_443.matches(&host("example.com"), 443));
        assert!(!on_443.matches(&host("example.com"), 80));
        let range = rule("10.0.0.0/8:5432");
        assert!(range.matches(&host("10.1.2.3"), 5432));
        assert!(!range.matches(&host("10.1.2.3"), 5433));
        assert!(range.covers_address("10.9.9.9".parse().unwrap(), 5432));
        assert!(!range.covers_address("10.9.9.9".parse().unwrap(), 22));
    }

    #[test]
    fn address_entries_see_through_ipv6_forms() {
        let loopback = rule("127.0.0.1");
        assert!(loopback.matches(&host("[::ffff:127.0.0.1]"), 80));
        assert!(loopback.covers_address("::ffff:127.0.0.1".parse().unwrap(), 80));
        // Allowing is exact (mapped only); denying reaches every embedding.
        assert!(!loopback.covers_address("64:ff9b::7f00:1".parse().unwrap(), 80));
        assert!(loopback.reaches_address("64:ff9b::7f00:1".parse().unwrap(), 80));
        assert!(loopback.reaches_address("2002:7f00:1::".parse().unwrap(), 80));
        assert!(loopback.reaches_address("::127.0.0.1".parse().unwrap(), 80));
        assert!(!rule("example.com").covers_address("127.0.0.1".parse().unwrap(), 80));
    }

    #[test]
    fn within_compares_entries() {
        assert!(rule("a.example.com:443").within(&rule("*.example.com")));
        assert!(rule("*.a.example.com").within(&rule("*.example.com")));
        assert!(!rule("example.com").within(&rule("*.example.com")));
        assert!(!rule("example.com").within(&rule("example.com:443")));
        assert!(rule("10.1.0.0/16").within(&rule("10.0.0.0/8")));
        assert!(!rule("10.0.0.0/8").within(&rule("10.1.0.0/16")));
        assert!(!rule("10.0.0.1").within(&rule("localhost")));
    }
}
