//! The messages between toolgate and its launcher server, over unix `SOCK_SEQPACKET` sockets
//! (each message arrives whole, with the file descriptors it carries).
//!
//! A request's body (a word list, see [`super::words`]) follows its fixed fields in the message, or
//! comes in a memfd when it is large (flag `BODY_IN_MEMFD`, the memfd is the last fd).
//!
//! On the server's socket, server → toolgate: `READY version` once, when it is set up (a
//! launcher of another version is not used as a server). toolgate → server:
//! - `POLICY id flags body`: remember a prepared policy;
//! - `FORGET id`: the policy's `Sandbox` is gone;
//! - `QUIT`: toolgate replaced this server (its calls are over; end of file alone means
//!   toolgate exited);
//! - `SPAWN policy flags body` + [call socket, stdout, stderr, stdin?]: start a program.
//!
//! server → toolgate: `OFFER policy epoch pid flags body` + [call socket, pidfd, epoch,
//! inotify]: a waiting init, set up for one kind of call, for toolgate to send its next call of
//! that kind to directly (`CALL flags body` + [stdout, stderr, stdin?] on the call's socket), once
//! it has checked the init's view is still fresh (see `protocol::offer`).
//!
//! On a waiting init's socket: init → server: `READY` once it is set up (or `FAILED message`:
//! it could not be, and exits); server → init: `ASSIGN flags body` + [call socket, stdout,
//! stderr, stdin?]: this call is yours; then, for an init without a view of its own, `RULES` +
//! [ruleset?] (or `FAILED message`): its Landlock ruleset, built while the init prepares. Or
//! server → init `OFFERED kind` + [call socket]: it is offered to toolgate, its call (or the end
//! of file: toolgate let it go) comes on that socket; init → server `TAKEN` once its program
//! runs.
//!
//! On the call's own socket (a socketpair per call; toolgate keeps one end):
//! - server → toolgate: `STARTED pid` + [pidfd] or `FAILED code message` (not for a call sent
//!   to an offered init: toolgate has both from the offer);
//! - the call's init → toolgate: `LISTENER` + [the egress proxy's listening socket] (a call
//!   with the proxy network, before its program starts), then one last message: `EXITED status
//!   limits` (the program's wait status, and the limits the call ran into, comma-separated) or
//!   `FAILED`. `EXITED` comes only once every process of the call is gone (an init in a PID
//!   namespace kills and reaps the rest first), so toolgate takes any message after `STARTED`
//!   (and the listener) as the call's end, without waiting for the init's own exit;
//! - toolgate closing its end: the call is over; the server kills what is left and reaps.
//!
//! On the one-shot launcher's handoff socket (`--proxy-handoff FD`, a socketpair toolgate
//! made; the launcher inherits one end): init → toolgate `LISTENER` + [the proxy's listener],
//! toolgate → init `HANDED_OFF`; then both ends are closed.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// toolgate → server: `POLICY id flags body`, remember a policy (its words) under `id`.
pub const POLICY: u8 = 1;
/// toolgate → server: `FORGET id`, the policy is no longer used.
pub const FORGET: u8 = 2;
/// toolgate → server: `SPAWN policy flags body` + fds, start a call (its words).
pub const SPAWN: u8 = 3;
/// toolgate → server: toolgate replaced this server; quit, leave its directories alone.
pub const QUIT: u8 = 4;
/// server → toolgate: `READY version`, set up and serving.
pub const READY: u8 = 5;
/// server → a waiting init: `ASSIGN flags body` + fds, this call is yours.
pub const ASSIGN: u8 = 6;
/// server → init: `RULES` + [ruleset fd], the call's Landlock ruleset.
pub const RULES: u8 = 7;
/// server → toolgate, on the server's socket: `OFFER policy epoch pid flags body` + [call
/// socket, pidfd, epoch memfd, inotify fd], a waiting init for toolgate's next call of its kind
/// (see `protocol::offer`).
pub const OFFER: u8 = 8;
/// server → a waiting init: `OFFERED kind` + [call socket], you are offered to toolgate; your
/// call comes on this socket.
pub const OFFERED: u8 = 9;
/// toolgate → an offered init, on the call's socket: `CALL flags body` + [stdout, stderr,
/// stdin?], this call is yours.
pub const CALL: u8 = 14;
/// an offered init → server: `TAKEN`, its call's program runs.
pub const TAKEN: u8 = 16;

/// The version of this protocol, sent with `READY`: toolgate uses a server only when it
/// speaks the same version (else the one-shot launcher).
pub const VERSION: u8 = 5;
/// server → toolgate: `STARTED pid` + [pidfd], the call's init runs.
pub const STARTED: u8 = 10;
/// `FAILED code message` (to toolgate) or `FAILED message` (to an init): it did not start.
pub const FAILED: u8 = 11;
/// init → toolgate: `EXITED status limits`, the program's wait status and the limits the call
/// ran into (comma-separated, maybe none), once nothing of the call runs.
pub const EXITED: u8 = 12;
/// init → toolgate: `LISTENER` + [fd], the egress proxy's listener in the call's network
/// namespace.
pub const LISTENER: u8 = 13;
/// toolgate → the one-shot launcher's init, on the handoff socket (`--proxy-handoff`): the
/// listener was taken and is served; the program may start.
pub const HANDED_OFF: u8 = 15;

/// Flag of `SPAWN` and `ASSIGN`: a stdin fd comes last (before a body's memfd).
pub const HAS_STDIN: u8 = 1;
/// Flag of `POLICY`, `SPAWN` and `ASSIGN`: the body is in a memfd, the last fd.
pub const BODY_IN_MEMFD: u8 = 2;
/// Where the flags byte of a `POLICY` or `SPAWN` request is (after the tag and the id).
pub const REQUEST_FLAGS_AT: usize = 9;

/// The most descriptors one message carries.
pub const MAX_FDS: usize = 6;
/// The largest body sent inside a message (an argument list with a usual environment is far
/// smaller; receiving buffers are this big, so it is not larger).
const MAX_INLINE: usize = 8 * 1024;
/// The largest message (a `FAILED` message's text is cut to fit).
pub const MAX_MESSAGE: usize = MAX_INLINE + 64;
/// The largest request body read from a memfd (argument and environment lists are far
/// smaller: the kernel allows 2 MiB of them for a program).
pub const MAX_BODY: u64 = 64 << 20;

/// Sends one message; never raises SIGPIPE (a gone peer is `EPIPE`).
pub fn send(socket: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    send_flagged(socket, bytes, fds, SendFlags::empty())
}

fn send_flagged(
    socket: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
    flags: SendFlags,
) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    loop {
        match rustix::net::sendmsg(
            socket,
            &[IoSlice::new(bytes)],
            &mut control,
            flags | SendFlags::NOSIGNAL,
        ) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(err) => return Err(err.into()),
        }
    }
}

/// One received message: its bytes (empty at end of stream) and descriptors.
pub struct Message {
    /// The message; empty at end of stream.
    pub bytes: Vec<u8>,
    /// The descriptors it carried, in order.
    pub fds: Vec<OwnedFd>,
}

/// Receives one message (descriptors arrive close-on-exec). `wait: false` returns
/// `WouldBlock` when none is there.
pub fn recv(socket: BorrowedFd<'_>, wait: bool) -> io::Result<Message> {
    let mut buffer = vec![0u8; MAX_MESSAGE];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut flags = RecvFlags::CMSG_CLOEXEC;
    if !wait {
        flags |= RecvFlags::DONTWAIT;
    }
    let received = loop {
        match rustix::net::recvmsg(
            socket,
            &mut [IoSliceMut::new(&mut buffer)],
            &mut control,
            flags,
        ) {
            Ok(received) => break received,
            Err(rustix::io::Errno::INTR) => continue,
            Err(err) => return Err(err.into()),
        }
    };
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    buffer.truncate(received.bytes);
    Ok(Message { bytes: buffer, fds })
}

/// [`send_with_body`] without waiting: a full socket is `WouldBlock`.
pub fn send_with_body_nowait(
    socket: BorrowedFd<'_>,
    head: Vec<u8>,
    flags_at: usize,
    body: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    send_body(socket, head, flags_at, body, fds, SendFlags::DONTWAIT)
}

/// Sends `head`, then `body` in the message (or in a memfd, flagged in `head[flags_at]`, when
/// it is large), with `fds`.
pub fn send_with_body(
    socket: BorrowedFd<'_>,
    head: Vec<u8>,
    flags_at: usize,
    body: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    send_body(socket, head, flags_at, body, fds, SendFlags::empty())
}

fn send_body(
    socket: BorrowedFd<'_>,
    mut head: Vec<u8>,
    flags_at: usize,
    body: &[u8],
    fds: &[BorrowedFd<'_>],
    flags: SendFlags,
) -> io::Result<()> {
    if body.len() <= MAX_INLINE {
        head.extend_from_slice(body);
        return send_flagged(socket, &head, fds, flags);
    }
    head[flags_at] |= BODY_IN_MEMFD;
    let memfd = memfd(body)?;
    let mut fds = fds.to_vec();
    fds.push(memfd.as_fd());
    send_flagged(socket, &head, &fds, flags)
}

/// The body of a message sent with [`send_with_body`]: `rest` after the fixed fields, or the
/// content of the last fd (which is taken from `fds`).
pub fn take_body(rest: &[u8], flags: u8, fds: &mut Vec<OwnedFd>) -> io::Result<Vec<u8>> {
    if flags & BODY_IN_MEMFD == 0 {
        return Ok(rest.to_vec());
    }
    let memfd = fds
        .pop()
        .ok_or_else(|| io::Error::other("the request's body is missing"))?;
    read_memfd(&memfd)
}

/// A copy of `bytes` in an anonymous memory file, to pass a request of any size.
fn memfd(bytes: &[u8]) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(c"toolgate-request", rustix::fs::MemfdFlags::CLOEXEC)?;
    let mut written = 0;
    while written < bytes.len() {
        match rustix::io::write(&fd, &bytes[written..]) {
            Ok(n) => written += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(fd)
}

/// The whole content of a memfd made by [`memfd`].
fn read_memfd(fd: &OwnedFd) -> io::Result<Vec<u8>> {
    let size = rustix::fs::fstat(fd)?.st_size as u64;
    if size > MAX_BODY {
        return Err(io::Error::other(format!(
            "the request is {size} bytes; at most {MAX_BODY} are accepted"
        )));
    }
    let mut bytes = vec![0u8; size as usize];
    let mut read = 0;
    while read < bytes.len() {
        match rustix::io::pread(fd, &mut bytes[read..], read as u64) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
    bytes.truncate(read);
    Ok(bytes)
}

/// The head of a `POLICY` or `SPAWN` request: the tag, the policy id and the flags byte (at
/// [`REQUEST_FLAGS_AT`]); send it with [`send_with_body`].
pub fn request_head(tag: u8, id: u64, flags: u8) -> Vec<u8> {
    let mut head = Vec::with_capacity(REQUEST_FLAGS_AT + 1);
    head.push(tag);
    head.extend_from_slice(&id.to_le_bytes());
    head.push(flags);
    head
}

/// `FORGET id`.
pub fn forget(id: u64) -> [u8; 9] {
    let mut bytes = [FORGET, 0, 0, 0, 0, 0, 0, 0, 0];
    bytes[1..].copy_from_slice(&id.to_le_bytes());
    bytes
}

/// A connected pair of `SOCK_SEQPACKET` unix sockets, close-on-exec.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?)
}

/// A pidfd for `pid` (Linux 5.3), close-on-exec.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Whether `fd` is readable (or hung up) right now, without waiting.
pub fn ready(fd: BorrowedFd<'_>) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd we own.
    unsafe { libc::poll(&mut poll, 1, 0) > 0 }
}

/// The tag of a message and its fixed-size fields.
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads `bytes` from the start.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The next byte.
    pub fn u8(&mut self) -> Option<u8> {
        let (&first, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(first)
    }

    /// The next 8 bytes, little endian.
    pub fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.bytes.split_first_chunk::<8>()?;
        self.bytes = rest;
        Some(u64::from_le_bytes(*head))
    }

    /// The next 4 bytes, little endian.
    pub fn i32(&mut self) -> Option<i32> {
        let (head, rest) = self.bytes.split_first_chunk::<4>()?;
        self.bytes = rest;
        Some(i32::from_le_bytes(*head))
    }

    /// What is left.
    pub fn rest(self) -> &'a [u8] {
        self.bytes
    }
}

/// `tag` followed by a 32-bit value.
pub fn tagged_i32(tag: u8, value: i32) -> [u8; 5] {
    let mut bytes = [tag, 0, 0, 0, 0];
    bytes[1..].copy_from_slice(&value.to_le_bytes());
    bytes
}
