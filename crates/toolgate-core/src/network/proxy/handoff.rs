//! Taking the listener a one-shot launcher's init hands over (`--proxy-handoff`): one message,
//! `LISTENER` + [fd], on toolgate's end of a socket pair whose other end only that launcher
//! inherited, answered with `HANDED_OFF` once the listener is checked and registered.
//!
//! Nothing has a name: no path or abstract address exists that the program (or anything else)
//! could connect to, and the launcher's init closes its end before the program starts. The
//! descriptor received is checked to be what a call's init makes ([`check_listener`]): a
//! listening IPv4 TCP socket on `127.0.0.1:port`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
#[cfg(test)]
use std::os::fd::BorrowedFd;
use std::os::fd::{AsFd, OwnedFd};

use rustix::net::sockopt;
use tokio::io::unix::AsyncFd;
use toolgate_sandbox::protocol::wire;

/// toolgate's end of a handoff socket pair, watched by the proxy's runtime.
pub(super) struct Handoff {
    socket: AsyncFd<OwnedFd>,
    port: u16,
}

impl Handoff {
    /// Watches `socket` (call inside the proxy's runtime).
    pub(super) fn new(socket: OwnedFd, port: u16) -> io::Result<Self> {
        rustix::io::ioctl_fionbio(&socket, true)?;
        // SAFETY: the `OwnedFd` moves into the `AsyncFd`, which keeps it open (and the same
        // descriptor) until it is dropped.
        let socket =
            unsafe { AsyncFd::register_with_interest(socket, tokio::io::Interest::READABLE) }
                .map_err(|err| err.into_parts().1)?;
        Ok(Self { socket, port })
    }

    /// Waits for the one message, checks the listener it carries, makes it non-blocking and answers
    /// `HANDED_OFF`. An error for anything else; the socket closes either way.
    pub(super) async fn receive(self) -> io::Result<StdListener> {
        let message = loop {
            let mut ready = self.socket.readable().await?;
            match wire::recv(self.socket.get_ref().as_fd(), false) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => ready.clear_ready(),
                received => break received?,
            }
        };
        let wire::Message { bytes, mut fds } = message;
        if bytes != [wire::LISTENER] || fds.len() != 1 {
            return Err(invalid(if bytes.is_empty() {
                "the launcher ended before handing over the listener"
            } else {
                "the launcher sent something other than one listener"
            }));
        }
        let listener = fds.remove(0);
        check_listener(&listener, self.port)?;
        let listener = StdListener::from(listener);
        listener.set_nonblocking(true)?;
        wire::send(self.socket.get_ref().as_fd(), &[wire::HANDED_OFF], &[])?;
        Ok(listener)
    }
}

/// Whether `fd` is what a call's init hands over: a listening IPv4 TCP socket bound to
/// `127.0.0.1:port` (in whichever network namespace it was made).
pub(super) fn check_listener(fd: &OwnedFd, port: u16) -> io::Result<()> {
    let listening = sockopt::socket_acceptconn(fd)?;
    let kind = sockopt::socket_type(fd)?;
    let domain = sockopt::socket_domain(fd)?;
    let protocol = sockopt::socket_protocol(fd)?;
    let expected = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let bound = rustix::net::getsockname(fd)?;
    let bound = SocketAddr::try_from(bound).ok();
    if listening
        && kind == rustix::net::SocketType::STREAM
        && domain == rustix::net::AddressFamily::INET
        && protocol == Some(rustix::net::ipproto::TCP)
        && bound == Some(expected)
    {
        Ok(())
    } else {
        Err(invalid(
            "the descriptor handed over is not a TCP listener on the proxy's address",
        ))
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{CallContext, HostPolicy, NetworkPolicy, Proxy, ProxyConfig};
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    fn pair() -> (OwnedFd, OwnedFd) {
        crate::sandbox::handoff_socket_pair().unwrap()
    }

    /// A call that allows no host (every connection is refused and recorded).
    fn call() -> CallContext {
        CallContext::new(
            "c1",
            "mcp server s",
            NetworkPolicy::new(HostPolicy::default()),
        )
    }

    /// What the launcher's end reads next: `Some(bytes)`, or `None` at the end of the stream.
    fn next(launcher: &OwnedFd) -> Option<Vec<u8>> {
        rustix::net::sockopt::set_socket_timeout(
            launcher,
            rustix::net::sockopt::Timeout::Recv,
            Some(Duration::from_secs(10)),
        )
        .unwrap();
        let message = wire::recv(launcher.as_fd(), true).unwrap();
        (!message.bytes.is_empty()).then_some(message.bytes)
    }

    #[test]
    fn one_listener_is_taken_answered_and_served_then_the_socket_closes() {
        let proxy = Proxy::start(ProxyConfig::default()).unwrap();
        let (ours, launcher) = pair();
        let (listener, port) = loopback_listener();
        let handle = proxy.serve_handoff(ours, port, call()).unwrap();
        assert_eq!(
            handle.local_addr(),
            SocketAddr::from((Ipv4Addr::LOCALHOST, port))
        );
        wire::send(launcher.as_fd(), &[wire::LISTENER], &[listener.as_fd()]).unwrap();
        drop(listener);
        assert_eq!(next(&launcher), Some(vec![wire::HANDED_OFF]));
        // Exactly one: the proxy's end is closed after the handoff, a second listener goes
        // nowhere.
        assert_eq!(next(&launcher), None);
        // The listener is served with the call's policy: a request is refused and recorded.
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        client
            .write_all(b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
            .unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = [0u8; 12];
        client.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"HTTP/1.1 403");
        let records = handle.finish_blocking();
        assert_eq!(records.len(), 1, "{records:?}");
        assert!(records[0].refused());
    }

    #[test]
    fn anything_but_one_proper_listener_ends_the_handoff_unanswered() {
        let proxy = Proxy::start(ProxyConfig::default()).unwrap();
        let (listener, port) = loopback_listener();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let wrong: Vec<(&[u8], Vec<BorrowedFd<'_>>)> = vec![
            (&[wire::LISTENER], vec![udp.as_fd()]),
            (&[wire::LISTENER], vec![]),
            (&[wire::LISTENER], vec![listener.as_fd(), listener.as_fd()]),
            (&[wire::EXITED], vec![listener.as_fd()]),
            (&[wire::LISTENER, 0], vec![listener.as_fd()]),
        ];
        for (bytes, fds) in wrong {
            let (ours, launcher) = pair();
            let handle = proxy.serve_handoff(ours, port, call()).unwrap();
            wire::send(launcher.as_fd(), bytes, &fds).unwrap();
            assert_eq!(next(&launcher), None, "{bytes:?} with {} fds", fds.len());
            assert!(handle.finish_blocking().is_empty());
        }
        // A listener on another port than the call's.
        let (ours, launcher) = pair();
        let other = port.checked_add(1).unwrap_or(1);
        let handle = proxy.serve_handoff(ours, other, call()).unwrap();
        wire::send(launcher.as_fd(), &[wire::LISTENER], &[listener.as_fd()]).unwrap();
        assert_eq!(next(&launcher), None);
        drop(handle);
    }

    #[test]
    fn a_launcher_that_ends_before_handing_over_ends_the_wait() {
        let proxy = Proxy::start(ProxyConfig::default()).unwrap();
        let (ours, launcher) = pair();
        let handle = proxy.serve_handoff(ours, 3128, call()).unwrap();
        assert!(!handle.ended());
        drop(launcher);
        // The end of the stream ends the handoff by itself, long before its timeout.
        let deadline = Instant::now() + crate::network::HANDOFF_TIMEOUT / 2;
        while !handle.ended() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(handle.ended(), "still waiting for a launcher that is gone");
        assert!(handle.finish_blocking().is_empty());
    }

    /// A listener on 127.0.0.1 (a free port) and its port.
    fn loopback_listener() -> (OwnedFd, u16) {
        let listener = StdListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        (OwnedFd::from(listener), port)
    }

    #[test]
    fn only_a_listening_tcp_socket_on_the_proxy_address_is_taken() {
        let (listener, port) = loopback_listener();
        check_listener(&listener, port).unwrap();
        // Another port, a connected socket, a UDP socket, a unix socket: refused.
        assert!(check_listener(&listener, port.wrapping_add(1).max(1)).is_err());
        let connected = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert!(check_listener(&OwnedFd::from(connected), port).is_err());
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp_port = udp.local_addr().unwrap().port();
        assert!(check_listener(&OwnedFd::from(udp), udp_port).is_err());
        let (unix, _) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(check_listener(&OwnedFd::from(unix), port).is_err());
        // A TCP socket bound but not listening.
        let bound = rustix::net::socket(
            rustix::net::AddressFamily::INET,
            rustix::net::SocketType::STREAM,
            None,
        )
        .unwrap();
        rustix::net::bind(&bound, &SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let bound_port = SocketAddr::try_from(rustix::net::getsockname(&bound).unwrap())
            .unwrap()
            .port();
        assert!(check_listener(&bound, bound_port).is_err());
    }
}
