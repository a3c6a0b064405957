//! Host names and addresses as the policy compares them: one spelling for each.
//!
//! A host is parsed once, the way a browser parses the host of a URL (WHATWG URL, through the
//! `url` crate): IDNA maps a Unicode name to its ASCII (punycode) form, so `exаmple.com` with a
//! Cyrillic `а` becomes `xn--exmple-4nf.com` and never equals `example.com`; upper case is
//! lowered; every IPv4 spelling (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) becomes the
//! address it means, so it is judged as that address and never as a name. One trailing dot is
//! removed. Refused outright: NUL and other control bytes, white space, percent escapes,
//! userinfo, anything but letters, digits, `-`, `_` and `.` in the ASCII result, empty or
//! over-long labels, and names that end in a number but are no IPv4 address.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// The longest host text accepted before parsing (a DNS name is at most 253 bytes; a Unicode
/// name is longer before IDNA, but not this long).
pub const MAX_HOST_TEXT: usize = 1024;

/// A destination host, normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name: lower-case ASCII, IDNA applied, no trailing dot.
    Name(String),
    /// An IP address.
    Ip(IpAddr),
}

impl Host {
    /// Parses and normalises a host: a name, an IPv4 address in any spelling, an IPv6 address
    /// with or without brackets. The error says what is wrong, in words.
    pub fn parse(text: &str) -> Result<Host, String> {
        if text.is_empty() {
            return Err("the host is empty".into());
        }
        if text.len() > MAX_HOST_TEXT {
            return Err(format!("the host is longer than {MAX_HOST_TEXT} bytes"));
        }
        if let Some(bad) = text
            .chars()
            .find(|c| c.is_control() || c.is_whitespace() || *c == '\u{feff}')
        {
            return Err(format!(
                "the host contains the character {}, which no host name has",
                describe_char(bad)
            ));
        }
        if let Some(inner) = text.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or("an IPv6 address opened with '[' must close with ']'")?;
            return inner
                .parse::<Ipv6Addr>()
                .map(|ip| Host::Ip(IpAddr::V6(ip)))
                .map_err(|_| format!("'{inner}' is not an IPv6 address"));
        }
        if text.contains(':') {
            return text
                .parse::<Ipv6Addr>()
                .map(|ip| Host::Ip(IpAddr::V6(ip)))
                .map_err(|_| "a host has no ':' unless it is an IPv6 address".to_string());
        }
        if let Some(bad) = text
            .chars()
            .find(|c| c.is_ascii() && !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(format!(
                "the host contains {}, which no host name has",
                describe_char(bad)
            ));
        }
        let parsed = url::Host::parse(text)
            .map_err(|err| format!("it is not a valid host name or IP address ({err})"))?;
        match parsed {
            url::Host::Ipv4(ip) => Ok(Host::Ip(IpAddr::V4(ip))),
            url::Host::Ipv6(ip) => Ok(Host::Ip(IpAddr::V6(ip))),
            url::Host::Domain(name) => {
                // One trailing dot (after IDNA, which maps a Unicode full stop to '.')
                // names the root: the same host without it.
                let name = name.strip_suffix('.').unwrap_or(&name).to_string();
                check_ascii_name(&name)?;
                Ok(Host::Name(name))
            }
        }
    }

    /// The IP address, for an address.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Ip(ip) => Some(*ip),
            Host::Name(_) => None,
        }
    }

    /// `host:port` as a client writes it (`[::1]:80` for IPv6).
    pub fn with_port(&self, port: u16) -> String {
        match self {
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
            other => format!("{other}:{port}"),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Parses `host:port`, `[v6]:port`, or (with a `default_port`) a host alone.
pub fn parse_authority(text: &str, default_port: Option<u16>) -> Result<(Host, u16), String> {
    let (host, port) = split_port(text)?;
    let port = match (port, default_port) {
        (Some(port), _) => parse_port(port)?,
        (None, Some(port)) => port,
        (None, None) => return Err(format!("'{}' has no port", printable(text))),
    };
    Ok((Host::parse(host)?, port))
}

/// Splits `host:port` (`[v6]:port`) into host and port text; a bare IPv6 address has no port.
pub(crate) fn split_port(text: &str) -> Result<(&str, Option<&str>), String> {
    if text.starts_with('[') {
        let close = text
            .find(']')
            .ok_or("an IPv6 address opened with '[' must close with ']'")?;
        let rest = &text[close + 1..];
        return match rest.strip_prefix(':') {
            Some(port) => Ok((&text[..=close], Some(port))),
            None if rest.is_empty() => Ok((text, None)),
            None => Err(format!(
                "'{}' has text after the IPv6 address; write '[address]:port'",
                printable(text)
            )),
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, port) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, Some(port)))
        }
        _ => Ok((text, None)),
    }
}

/// A TCP port: 1 to 65535, decimal digits only.
pub(crate) fn parse_port(text: &str) -> Result<u16, String> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{}' is not a port; give a number from 1 to 65535",
            printable(text)
        ));
    }
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!(
            "port {} is out of range; give a number from 1 to 65535",
            printable(text)
        )),
    }
}

fn check_ascii_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the host is empty".into());
    }
    if name.len() > 253 {
        return Err("the host name is longer than 253 bytes".into());
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err("the host name has an empty label ('..')".into());
        }
        if label.len() > 63 {
            return Err(format!(
                "the label '{label}' is longer than 63 bytes, the limit of DNS"
            ));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "the label '{}' has characters no host name has",
                printable(label)
            ));
        }
    }
    Ok(())
}

fn describe_char(c: char) -> String {
    match c {
        '\0' => "a NUL byte".into(),
        c if c.is_control() || c.is_whitespace() || !c.is_ascii_graphic() && c.is_ascii() => {
            format!("U+{:04X}", c as u32)
        }
        c => format!("'{c}'"),
    }
}

/// Text from a client or a configuration, safe to quote in a message: control characters are
/// escaped and long text is cut.
pub fn printable(text: &str) -> String {
    const LIMIT: usize = 120;
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == LIMIT {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> Host {
        Host::Name(text.into())
    }

    fn ip(text: &str) -> Host {
        Host::Ip(text.parse().unwrap())
    }

    #[test]
    fn names_are_lowered_and_lose_one_trailing_dot() {
        assert_eq!(Host::parse("Example.COM").unwrap(), name("example.com"));
        assert_eq!(Host::parse("example.com.").unwrap(), name("example.com"));
        assert_eq!(Host::parse("LOCALHOST.").unwrap(), name("localhost"));
        assert_eq!(Host::parse("a_b.example").unwrap(), name("a_b.example"));
        assert!(Host::parse("example.com..").is_err());
        assert!(Host::parse(".example.com").is_err());
    }

    #[test]
    fn unicode_names_are_compared_in_ascii() {
        assert_eq!(Host::parse("bücher.de").unwrap(), name("xn--bcher-kva.de"));
        // A Cyrillic 'а' is another name than the Latin one.
        let homograph = Host::parse("ex\u{0430}mple.com").unwrap();
        assert_ne!(homograph, name("example.com"));
        assert_eq!(homograph, name("xn--exmple-4nf.com"));
        // Full-width letters and the ideographic full stop mean the ASCII ones.
        assert_eq!(
            Host::parse("ｅｘａｍｐｌｅ。com").unwrap(),
            name("example.com")
        );
    }

    #[test]
    fn every_ipv4_spelling_is_the_address_it_means() {
        for spelling in [
            "127.0.0.1",
            "2130706433",
            "0177.0.0.1",
            "0x7f.1",
            "0x7f000001",
            "127.1",
            "0177.0.0.01",
            "127.0.0.1.",
            "１２７.０.０.１",
            "127。0。0。1",
        ] {
            assert_eq!(
                Host::parse(spelling).unwrap(),
                ip("127.0.0.1"),
                "{spelling}"
            );
        }
        assert_eq!(
            Host::parse("[::ffff:127.0.0.1]").unwrap(),
            ip("::ffff:127.0.0.1")
        );
        assert_eq!(Host::parse("::1").unwrap(), ip("::1"));
        // Ends in a number but is no address: refused, never a name.
        for bad in [
            "1.2.3.4.5",
            "example.123",
            "256.0.0.1",
            "0x100000000",
            "09.1.1.1",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts_with_bytes_no_host_has_are_refused() {
        for bad in [
            "",
            "exa\0mple.com",
            "example.com\0.evil",
            "exa mple.com",
            "example.com\r\nX: y",
            "ex%61mple.com",
            "user@example.com",
            "example.com/path",
            "exam*ple.com",
            "[::1",
            "[fe80::1%25eth0]",
            "host:80",
            "\u{feff}example.com",
            &"a".repeat(64),
            &format!("{}.com", "a.".repeat(130)),
            &"a".repeat(MAX_HOST_TEXT + 1),
        ] {
            assert!(Host::parse(bad).is_err(), "{}", printable(bad));
        }
        let message = Host::parse("exa\0mple.com").unwrap_err();
        assert!(message.contains("NUL"), "{message}");
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            parse_authority("Example.com:8080", None).unwrap(),
            (name("example.com"), 8080)
        );
        assert_eq!(
            parse_authority("[::1]:443", None).unwrap(),
            (ip("::1"), 443)
        );
        assert_eq!(parse_authority("example.com", Some(80)).unwrap().1, 80);
        assert_eq!(parse_authority("[::1]", Some(80)).unwrap(), (ip("::1"), 80));
        for bad in [
            "example.com",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+80",
            "example.com:8O",
            "[::1]x:80",
            "a:b:c",
        ] {
            assert!(parse_authority(bad, None).is_err(), "{bad}");
        }
        assert_eq!(ip("::1").with_port(80), "[::1]:80");
        assert_eq!(name("a.test").with_port(80), "a.test:80");
    }

    #[test]
    fn printable_escapes_control_characters() {
        assert_eq!(printable("a\0b\r\n"), "a\\u{0}b\\u{d}\\u{a}");
        assert!(printable(&"x".repeat(500)).ends_with('…'));
    }
}
