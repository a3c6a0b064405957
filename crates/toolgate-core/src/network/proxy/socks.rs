//! SOCKS5 (RFC 1928) for TCP that is not HTTP: no authentication, `CONNECT` to a domain name,
//! an IPv4 or an IPv6 address. `BIND` and `UDP ASSOCIATE` are refused with "command not
//! supported"; a refusal by the policy is "connection not allowed by ruleset" (the record
//! names host, port and reason).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::connect::open;
use super::relay;
use super::session::{socks_reply, Refusal, Session};
use crate::network::host::Host;
use crate::network::record::Protocol;

const VERSION: u8 = 0x05;
const NO_AUTHENTICATION: u8 = 0x00;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CONNECT: u8 = 0x01;
const IPV4: u8 = 0x01;
const DOMAIN: u8 = 0x03;
const IPV6: u8 = 0x04;

pub(crate) async fn serve(mut client: TcpStream, mut buf: Vec<u8>, session: &mut Session) {
    session.protocol = Protocol::Socks5;
    let deadline = tokio::time::Instant::now() + session.call.config.head_timeout;
    // Greeting: VER NMETHODS METHODS…
    if fill(&mut client, &mut buf, 2, deadline).await.is_err() {
        return;
    }
    let methods_end = 2 + buf[1] as usize;
    if fill(&mut client, &mut buf, methods_end, deadline)
        .await
        .is_err()
    {
        return;
    }
    if !buf[2..methods_end].contains(&NO_AUTHENTICATION) {
        let _ = client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await;
        session.bad_request("the SOCKS5 client offered no method without authentication".into());
        return;
    }
    if client
        .write_all(&[VERSION, NO_AUTHENTICATION])
        .await
        .is_err()
    {
        return;
    }
    buf.drain(..methods_end);

    // Request: VER CMD RSV ATYP DST.ADDR DST.PORT
    if fill(&mut client, &mut buf, 5, deadline).await.is_err() {
        return;
    }
    let (command, address_type) = (buf[1], buf[3]);
    if buf[0] != VERSION || buf[2] != 0 {
        let refusal = session
            .bad_request("the SOCKS5 request is malformed (version or reserved byte)".into());
        reply(&mut client, refusal.socks).await;
        return;
    }
    let address_len = match address_type {
        IPV4 => 4,
        IPV6 => 16,
        DOMAIN => 1 + buf[4] as usize,
        other => {
            let refusal = session.bad_request_with(
                format!("SOCKS5 address type {other} is not offered"),
                socks_reply::ADDRESS_TYPE_NOT_SUPPORTED,
            );
            reply(&mut client, refusal.socks).await;
            return;
        }
    };
    let request_end = 4 + address_len + 2;
    if fill(&mut client, &mut buf, request_end, deadline)
        .await
        .is_err()
    {
        return;
    }
    let address = &buf[4..4 + address_len];
    let port = u16::from_be_bytes([buf[request_end - 2], buf[request_end - 1]]);
    let host = match address_type {
        IPV4 => Ok(Host::Ip(IpAddr::V4(Ipv4Addr::new(
            address[0], address[1], address[2], address[3],
        )))),
        IPV6 => {
            let octets: [u8; 16] = address.try_into().unwrap_or([0; 16]);
            Ok(Host::Ip(IpAddr::V6(Ipv6Addr::from(octets))))
        }
        _ => {
            let name = &address[1..];
            match std::str::from_utf8(name) {
                Ok(text) => {
                    session.raw_target(text, port);
                    Host::parse(text).map_err(|why| format!("the host is not valid: {why}"))
                }
                Err(_) => {
                    session.raw_target(&String::from_utf8_lossy(name), port);
                    Err("the host is not valid text".to_string())
                }
            }
        }
    };
    let host = match host {
        Ok(host) => host,
        Err(what) => {
            let refusal = session.bad_request_with(what, socks_reply::NOT_ALLOWED);
            reply(&mut client, refusal.socks).await;
            return;
        }
    };
    session.target(&host, port);
    if command != CONNECT {
        let name = match command {
            0x02 => "BIND",
            0x03 => "UDP ASSOCIATE",
            _ => "this",
        };
        let refusal = session.bad_request_with(
            format!("the SOCKS5 command {name} is not offered; only CONNECT"),
            socks_reply::COMMAND_NOT_SUPPORTED,
        );
        reply(&mut client, refusal.socks).await;
        return;
    }
    if port == 0 {
        let refusal = session.bad_request("port 0 cannot be connected to".into());
        reply(&mut client, refusal.socks).await;
        return;
    }
    let mut server = match open(session, &host, port).await {
        Ok(server) => server,
        Err(Refusal { socks, .. }) => {
            reply(&mut client, socks).await;
            return;
        }
    };
    reply(&mut client, 0x00).await;
    let rest = buf.split_off(request_end);
    if !rest.is_empty() {
        if server.write_all(&rest).await.is_err() {
            return;
        }
        session
            .up
            .fetch_add(rest.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
    relay::tunnel(
        &client,
        &server,
        &session.up,
        &session.down,
        session.call.config.idle_timeout,
    )
    .await;
}

/// Reads until `buf` holds at least `len` bytes.
async fn fill(
    client: &mut TcpStream,
    buf: &mut Vec<u8>,
    len: usize,
    deadline: tokio::time::Instant,
) -> Result<(), ()> {
    while buf.len() < len {
        match tokio::time::timeout_at(deadline, client.read_buf(buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return Err(()),
        }
    }
    Ok(())
}

/// VER REP RSV ATYP BND.ADDR BND.PORT, with an unspecified bound address.
async fn reply(client: &mut TcpStream, code: u8) {
    let _ = client
        .write_all(&[VERSION, code, 0, IPV4, 0, 0, 0, 0, 0, 0])
        .await;
    if code != 0 {
        let _ = client.shutdown().await;
    }
}
