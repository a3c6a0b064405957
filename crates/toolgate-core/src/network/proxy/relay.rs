//! Moving bytes: a tunnel both ways, or one HTTP message body framed exactly (so nothing past
//! its end is forwarded). Every byte is counted; a connection silent both ways for the idle
//! timeout is closed.
//!
//! On Linux the bytes of a tunnel or of a body whose length is known go from socket to socket
//! through a pipe with `splice(2)`, never copied through the proxy's memory: the proxy then
//! uses about a third of the CPU a copying relay does. What stays is the kernel's work for the
//! second TCP connection (about as much again as the direct download's, shared by the proxy,
//! the server and the client): on a machine without a free core a proxied download is slower
//! than a direct one by that much (docs/sandbox.md, "Cost"). Chunked bodies are read (their
//! framing must be followed) and copied.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

/// Bytes read at a time when copying.
const BUFFER_BYTES: usize = 64 * 1024;

/// Longest chunk-size line (with extensions) and the most trailer bytes of a chunked body.
const MAX_CHUNK_LINE: usize = 4 * 1024;
const MAX_TRAILER_BYTES: usize = 64 * 1024;

/// When either direction last moved a byte.
pub(crate) struct Activity {
    started: Instant,
    last_ms: AtomicU64,
    idle: Duration,
}

impl Activity {
    pub(crate) fn new(idle: Duration) -> Self {
        Self {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
            idle,
        }
    }

    fn touch(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }

    /// Waits for `ready` (a socket becoming readable or writable), giving up only when the
    /// whole connection has been idle for the timeout: the other direction may be busy while
    /// this one waits.
    async fn wait<F, Fut>(&self, mut ready: F) -> io::Result<()>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = io::Result<()>>,
    {
        loop {
            let wait = self
                .idle
                .saturating_sub(self.idle_for())
                .max(Duration::from_millis(10));
            match tokio::time::timeout(wait, ready()).await {
                Ok(result) => return result,
                Err(_) if self.idle_for() >= self.idle => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no bytes either way for {} s", self.idle.as_secs()),
                    ))
                }
                Err(_) => {}
            }
        }
    }

    /// Reads what `stream` has (0 at its end).
    pub(crate) async fn read(&self, stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.wait(|| stream.readable()).await?;
            match stream.try_read(buf) {
                Ok(n) => {
                    self.touch();
                    return Ok(n);
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Writes all of `bytes`.
    pub(crate) async fn write_all(&self, stream: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            self.wait(|| stream.writable()).await?;
            match stream.try_write(bytes) {
                Ok(n) => {
                    self.touch();
                    bytes = &bytes[n..];
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

/// Ends the sending side of `stream` (the peer reads end of file).
pub(crate) fn shutdown_write(stream: &TcpStream) {
    let _ = rustix::net::shutdown(stream, rustix::net::Shutdown::Write);
}

/// Moves bytes from `from` to `to` until `from` ends or, with a `limit`, that many have moved;
/// returns how many moved. `counter` counts them.
pub(crate) async fn transfer(
    from: &TcpStream,
    to: &TcpStream,
    limit: Option<u64>,
    counter: &AtomicU64,
    activity: &Activity,
) -> io::Result<u64> {
    #[cfg(target_os = "linux")]
    {
        if let Ok(mut pipe) = splice::Pipe::new() {
            return pipe.transfer(from, to, limit, counter, activity).await;
        }
    }
    copy(from, to, limit, counter, activity).await
}

/// [`transfer`] through the proxy's memory.
async fn copy(
    from: &TcpStream,
    to: &TcpStream,
    limit: Option<u64>,
    counter: &AtomicU64,
    activity: &Activity,
) -> io::Result<u64> {
    let mut buf = vec![0u8; BUFFER_BYTES];
    let mut moved = 0u64;
    loop {
        let room = limit.map_or(buf.len() as u64, |limit| {
            (limit - moved).min(buf.len() as u64)
        });
        if room == 0 {
            return Ok(moved);
        }
        let n = activity.read(from, &mut buf[..room as usize]).await?;
        if n == 0 {
            return Ok(moved);
        }
        counter.fetch_add(n as u64, Ordering::Relaxed);
        activity.write_all(to, &buf[..n]).await?;
        moved += n as u64;
    }
}

#[cfg(target_os = "linux")]
mod splice {
    use std::io;
    use std::os::fd::OwnedFd;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::pipe::{
        fcntl_getpipe_size, fcntl_setpipe_size, pipe_with, splice, PipeFlags, SpliceFlags,
    };
    use tokio::io::Interest;
    use tokio::net::TcpStream;

    use super::Activity;

    /// The capacity a pipe grows to once a transfer proves big: what one `splice` moves at
    /// most. Measured (`npm run bench network`): from 256 KiB to 1 MiB the proxy's own CPU per
    /// 100 MB falls by a third (fewer, larger splices), though the kernel's work for the
    /// second connection, shared by every party, stays.
    pub(super) const PIPE_BYTES: usize = 1024 * 1024;

    /// Bytes a transfer moves through the default pipe (64 KiB) before it asks for a bigger
    /// one: most connections are small, and pipe memory counts against the user's budget
    /// (`/proc/sys/fs/pipe-user-pages-soft`), past which new pipes get only a page or two.
    const GROW_AFTER: u64 = 1024 * 1024;

    pub(super) struct Pipe {
        read: OwnedFd,
        write: OwnedFd,
        capacity: usize,
        grown: bool,
    }

    impl Pipe {
        pub(super) fn new() -> io::Result<Pipe> {
            let (read, write) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
            let capacity = fcntl_getpipe_size(&write).unwrap_or(64 * 1024);
            Ok(Pipe {
                read,
                write,
                capacity,
                grown: false,
            })
        }

        /// What one `splice` moves at most now.
        #[cfg(test)]
        pub(super) fn capacity(&self) -> usize {
            self.capacity
        }

        /// Asks for a bigger pipe (only while it is empty); refused past the user's pipe
        /// budget or `/proc/sys/fs/pipe-max-size`, when the current size stays.
        fn grow(&mut self) {
            self.grown = true;
            let _ = fcntl_setpipe_size(&self.write, PIPE_BYTES);
            if let Ok(capacity) = fcntl_getpipe_size(&self.write) {
                self.capacity = capacity;
            }
        }

        pub(super) async fn transfer(
            &mut self,
            from: &TcpStream,
            to: &TcpStream,
            limit: Option<u64>,
            counter: &AtomicU64,
            activity: &Activity,
        ) -> io::Result<u64> {
            let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
            let mut moved = 0u64;
            loop {
                if !self.grown && moved >= GROW_AFTER {
                    self.grow();
                }
                let room = limit.map_or(self.capacity as u64, |limit| {
                    (limit - moved).min(self.capacity as u64)
                });
                if room == 0 {
                    return Ok(moved);
                }
                // Socket to pipe: the pipe is empty here, so only the socket can block.
                let n = loop {
                    activity.wait(|| from.readable()).await?;
                    match from.try_io(Interest::READABLE, || {
                        splice(from, None, &self.write, None, room as usize, flags)
                            .map_err(io::Error::from)
                    }) {
                        Ok(n) => break n,
                        Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                        Err(err) => return Err(err),
                    }
                };
                if n == 0 {
                    return Ok(moved);
                }
                activity.touch();
                counter.fetch_add(n as u64, Ordering::Relaxed);
                // Pipe to socket, until the pipe is empty again.
                let mut left = n;
                while left > 0 {
                    activity.wait(|| to.writable()).await?;
                    match to.try_io(Interest::WRITABLE, || {
                        splice(&self.read, None, to, None, left, flags).map_err(io::Error::from)
                    }) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(sent) => {
                            activity.touch();
                            left -= sent;
                        }
                        Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                        Err(err) => return Err(err),
                    }
                }
                moved += n as u64;
            }
        }
    }
}

/// A tunnel: both directions until both have ended, or until either fails.
pub(crate) async fn tunnel(
    client: &TcpStream,
    server: &TcpStream,
    up: &AtomicU64,
    down: &AtomicU64,
    idle: Duration,
) {
    let activity = Activity::new(idle);
    let upload = async {
        let result = transfer(client, server, None, up, &activity).await;
        shutdown_write(server);
        result
    };
    let download = async {
        let result = transfer(server, client, None, down, &activity).await;
        shutdown_write(client);
        result
    };
    tokio::pin!(upload, download);
    let (mut upload_done, mut download_done) = (false, false);
    while !(upload_done && download_done) {
        tokio::select! {
            result = &mut upload, if !upload_done => {
                if result.is_err() { return; }
                upload_done = true;
            }
            result = &mut download, if !download_done => {
                if result.is_err() { return; }
                download_done = true;
            }
        }
    }
}

/// How an HTTP message's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// Sends one body: `already` (bytes read with the head) first, then from `reader`, exactly
/// as far as `framing` says. Bytes past the end are never sent. `counter` counts the body's
/// bytes sent.
pub(crate) async fn body(
    already: &[u8],
    reader: &TcpStream,
    writer: &TcpStream,
    framing: Framing,
    counter: &AtomicU64,
    activity: &Activity,
) -> Result<(), String> {
    let io = |err: io::Error| err.to_string();
    match framing {
        Framing::None => Ok(()),
        Framing::Length(length) => {
            let first = (length.min(already.len() as u64)) as usize;
            activity
                .write_all(writer, &already[..first])
                .await
                .map_err(io)?;
            counter.fetch_add(first as u64, Ordering::Relaxed);
            let remaining = length - first as u64;
            let moved = transfer(reader, writer, Some(remaining), counter, activity)
                .await
                .map_err(io)?;
            if moved < remaining {
                return Err(format!(
                    "the body ended {} bytes before its Content-Length",
                    remaining - moved
                ));
            }
            Ok(())
        }
        Framing::UntilClose => {
            activity.write_all(writer, already).await.map_err(io)?;
            counter.fetch_add(already.len() as u64, Ordering::Relaxed);
            transfer(reader, writer, None, counter, activity)
                .await
                .map_err(io)?;
            Ok(())
        }
        Framing::Chunked => {
            let mut scanner = ChunkedScanner::default();
            let used = scanner.scan(already)?;
            activity
                .write_all(writer, &already[..used])
                .await
                .map_err(io)?;
            counter.fetch_add(used as u64, Ordering::Relaxed);
            let mut buf = vec![0u8; BUFFER_BYTES];
            while !scanner.done() {
                let n = activity.read(reader, &mut buf).await.map_err(io)?;
                if n == 0 {
                    return Err("the chunked body ended before its last chunk".into());
                }
                let used = scanner.scan(&buf[..n])?;
                activity.write_all(writer, &buf[..used]).await.map_err(io)?;
                counter.fetch_add(used as u64, Ordering::Relaxed);
            }
            Ok(())
        }
    }
}

/// Follows `Transfer-Encoding: chunked` byte by byte, strictly (CRLF line ends, hex sizes,
/// bounded lines), to find where the body ends.
#[derive(Debug, Default)]
pub(crate) struct ChunkedScanner {
    state: ChunkState,
    line: usize,
    size: u64,
    digits: usize,
    trailer: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    Trailer,
    TrailerLf,
    FinalLf,
    Done,
}

impl ChunkedScanner {
    pub(crate) fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// How many of `bytes` belong to the body (all, unless it ends inside them).
    pub(crate) fn scan(&mut self, bytes: &[u8]) -> Result<usize, String> {
        let mut at = 0;
        while at < bytes.len() && self.state != ChunkState::Done {
            if self.state == ChunkState::Data {
                let take = (self.size.min((bytes.len() - at) as u64)) as usize;
                self.size -= take as u64;
                at += take;
                if self.size == 0 {
                    self.state = ChunkState::DataCr;
                }
                continue;
            }
            let byte = bytes[at];
            at += 1;
            self.state = match (self.state, byte) {
                (ChunkState::Size, b'\r') if self.digits > 0 => ChunkState::SizeLf,
                (ChunkState::Size, b';') if self.digits > 0 => ChunkState::Extension,
                (ChunkState::Size, digit) if digit.is_ascii_hexdigit() => {
                    self.digits += 1;
                    if self.digits > 15 {
                        return Err("a chunk size is too large".into());
                    }
                    self.size =
                        self.size * 16 + u64::from((digit as char).to_digit(16).unwrap_or(0));
                    ChunkState::Size
                }
                (ChunkState::Extension, b'\r') => ChunkState::SizeLf,
                (ChunkState::Extension, b'\n' | 0) => {
                    return Err("a chunk extension has a bare LF or NUL".into())
                }
                (ChunkState::Extension, _) => {
                    self.line += 1;
                    if self.line > MAX_CHUNK_LINE {
                        return Err("a chunk-size line is too long".into());
                    }
                    ChunkState::Extension
                }
                (ChunkState::SizeLf, b'\n') => {
                    self.line = 0;
                    self.digits = 0;
                    if self.size == 0 {
                        ChunkState::TrailerStart
                    } else {
                        ChunkState::Data
                    }
                }
                (ChunkState::DataCr, b'\r') => ChunkState::DataLf,
                (ChunkState::DataLf, b'\n') => ChunkState::Size,
                (ChunkState::TrailerStart, b'\r') => ChunkState::FinalLf,
                (ChunkState::Trailer, b'\r') => ChunkState::TrailerLf,
                (ChunkState::TrailerStart | ChunkState::Trailer, b'\n' | 0) => {
                    return Err("a trailer line has a bare LF or NUL".into())
                }
                (ChunkState::TrailerStart | ChunkState::Trailer, _) => {
                    self.trailer += 1;
                    if self.trailer > MAX_TRAILER_BYTES {
                        return Err("the trailer is too long".into());
                    }
                    ChunkState::Trailer
                }
                (ChunkState::TrailerLf, b'\n') => ChunkState::TrailerStart,
                (ChunkState::FinalLf, b'\n') => ChunkState::Done,
                (state, byte) => {
                    return Err(format!(
                        "the chunked body is malformed (byte 0x{byte:02x} where {})",
                        match state {
                            ChunkState::Size => "a hex chunk size was expected",
                            ChunkState::DataCr | ChunkState::DataLf => "CRLF should end the chunk",
                            _ => "a line end was expected",
                        }
                    ))
                }
            };
        }
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Two connected sockets.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    #[tokio::test]
    async fn transfers_stop_exactly_at_their_limit_both_ways() {
        for spliced in [true, false] {
            // source_writer -> from ... to -> sink_reader
            let (mut source_writer, from) = pair().await;
            let (to, mut sink_reader) = pair().await;
            let payload = vec![7u8; 3 * 1024 * 1024 + 11];
            let extra = b"never sent";
            let writer = tokio::spawn(async move {
                source_writer.write_all(&payload).await.unwrap();
                source_writer.write_all(extra).await.unwrap();
                source_writer
            });
            let counter = AtomicU64::new(0);
            let activity = Activity::new(Duration::from_secs(10));
            let limit = Some(3 * 1024 * 1024 + 11);
            let moved = if spliced {
                transfer(&from, &to, limit, &counter, &activity)
                    .await
                    .unwrap()
            } else {
                copy(&from, &to, limit, &counter, &activity).await.unwrap()
            };
            assert_eq!(moved, 3 * 1024 * 1024 + 11);
            assert_eq!(counter.load(Ordering::Relaxed), moved);
            shutdown_write(&to);
            let mut received = Vec::new();
            sink_reader.read_to_end(&mut received).await.unwrap();
            assert_eq!(received.len() as u64, moved, "spliced: {spliced}");
            assert!(received.iter().all(|&byte| byte == 7));
            drop(writer.await.unwrap());
        }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_pipe_grows_only_once_a_transfer_is_big() {
        for (size, grows) in [(10 * 1024, false), (3 * 1024 * 1024, true)] {
            let (mut source_writer, from) = pair().await;
            let (to, mut sink_reader) = pair().await;
            let writer = tokio::spawn(async move {
                source_writer.write_all(&vec![1u8; size]).await.unwrap();
            });
            let reader = tokio::spawn(async move {
                let mut received = Vec::new();
                sink_reader.read_to_end(&mut received).await.unwrap();
                received.len()
            });
            let mut pipe = splice::Pipe::new().unwrap();
            let before = pipe.capacity();
            let counter = AtomicU64::new(0);
            let activity = Activity::new(Duration::from_secs(10));
            let moved = pipe
                .transfer(&from, &to, Some(size as u64), &counter, &activity)
                .await
                .unwrap();
            shutdown_write(&to);
            writer.await.unwrap();
            assert_eq!(moved, size as u64);
            assert_eq!(reader.await.unwrap(), size);
            let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .unwrap_or(0);
            if grows && max >= splice::PIPE_BYTES {
                assert_eq!(pipe.capacity(), splice::PIPE_BYTES, "{size} bytes");
            } else if !grows {
                assert_eq!(
                    pipe.capacity(),
                    before,
                    "{size} bytes keep the default pipe"
                );
            }
        }
    }

    fn scan_all(body: &[u8]) -> Result<(usize, bool), String> {
        let mut scanner = ChunkedScanner::default();
        let used = scanner.scan(body)?;
        Ok((used, scanner.done()))
    }

    #[test]
    fn a_chunked_body_ends_where_its_last_chunk_says() {
        let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n";
        let (used, done) = scan_all(body).unwrap();
        assert!(done);
        assert_eq!(
            &body[..used],
            b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
        );
        let trailers = b"3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-Other: 2\r\n\r\nrest";
        let (used, done) = scan_all(trailers).unwrap();
        assert!(done);
        assert_eq!(used, trailers.len() - 4);
    }

    #[test]
    fn a_chunked_body_is_followed_across_reads() {
        let body = b"a\r\n0123456789\r\n0\r\n\r\n";
        let mut scanner = ChunkedScanner::default();
        let mut used = 0;
        for byte in body.chunks(1) {
            used += scanner.scan(byte).unwrap();
        }
        assert!(scanner.done());
        assert_eq!(used, body.len());
    }

    #[test]
    fn malformed_chunked_bodies_are_refused() {
        for bad in [
            &b"5\nhello\r\n0\r\n\r\n"[..],
            b"5\r\nhello\n0\r\n\r\n",
            b"5\r\nhelloX\r\n0\r\n\r\n",
            b"-5\r\nhello\r\n",
            b" 5\r\nhello\r\n",
            b"\r\n",
            b"ffffffffffffffffff\r\n",
            b"0\r\nX: a\nY: b\r\n\r\n",
            b"0\r\n\n",
            b"5;a\nb\r\n",
        ] {
            assert!(scan_all(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
