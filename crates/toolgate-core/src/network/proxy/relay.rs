//! Moving bytes: a tunnel both ways, or one HTTP message body framed exactly (so nothing past
//! its end is forwarded). Every byte is counted; a connection silent both ways for the idle
//! timeout is closed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bytes read at a time: large enough that a fast download costs few system calls.
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

    /// Reads, giving up only when the whole connection has been idle for the timeout (the
    /// other direction may be busy while this one waits).
    pub(crate) async fn read<R: AsyncRead + Unpin>(
        &self,
        reader: &mut R,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        loop {
            let wait = self
                .idle
                .saturating_sub(self.idle_for())
                .max(Duration::from_millis(10));
            match tokio::time::timeout(wait, reader.read(buf)).await {
                Ok(result) => {
                    let n = result?;
                    self.touch();
                    return Ok(n);
                }
                Err(_) if self.idle_for() >= self.idle => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no bytes either way for {} s", self.idle.as_secs()),
                    ))
                }
                Err(_) => {}
            }
        }
    }
}

async fn write_counted<W: AsyncWrite + Unpin>(
    writer: &mut W,
    bytes: &[u8],
    counter: Option<&AtomicU64>,
) -> std::io::Result<()> {
    writer.write_all(bytes).await?;
    if let Some(counter) = counter {
        counter.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Copies `reader` to `writer` until end of file, then shuts the writer down. `counter`
/// counts what was read (so, for a download, bytes received from the destination).
pub(crate) async fn pump<R, W>(
    reader: &mut R,
    writer: &mut W,
    counter: &AtomicU64,
    activity: &Activity,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; BUFFER_BYTES];
    loop {
        let n = activity.read(reader, &mut buf).await?;
        if n == 0 {
            let _ = writer.shutdown().await;
            return Ok(());
        }
        counter.fetch_add(n as u64, Ordering::Relaxed);
        writer.write_all(&buf[..n]).await?;
    }
}

/// A tunnel: both directions until both have ended, or until either fails.
pub(crate) async fn tunnel<CR, CW, SR, SW>(
    client_read: &mut CR,
    client_write: &mut CW,
    server_read: &mut SR,
    server_write: &mut SW,
    up: &AtomicU64,
    down: &AtomicU64,
    idle: Duration,
) where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    SR: AsyncRead + Unpin,
    SW: AsyncWrite + Unpin,
{
    let activity = Activity::new(idle);
    let upload = pump(client_read, server_write, up, &activity);
    let download = pump(server_read, client_write, down, &activity);
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
/// as far as `framing` says. Bytes past the end are never sent. `count_written` counts what
/// reached `writer` (an upload), `count_read` what came from `reader` (a download).
pub(crate) async fn body<R, W>(
    already: &[u8],
    reader: &mut R,
    writer: &mut W,
    framing: Framing,
    count_written: Option<&AtomicU64>,
    count_read: Option<&AtomicU64>,
    activity: &Activity,
) -> Result<(), String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let io = |err: std::io::Error| err.to_string();
    let mut buf = vec![0u8; BUFFER_BYTES];
    match framing {
        Framing::None => Ok(()),
        Framing::Length(mut remaining) => {
            let first = (remaining.min(already.len() as u64)) as usize;
            write_counted(writer, &already[..first], count_written)
                .await
                .map_err(io)?;
            remaining -= first as u64;
            while remaining > 0 {
                let n = activity.read(reader, &mut buf).await.map_err(io)?;
                if n == 0 {
                    return Err(format!(
                        "the body ended {remaining} bytes before its Content-Length"
                    ));
                }
                if let Some(counter) = count_read {
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                }
                let take = (remaining.min(n as u64)) as usize;
                write_counted(writer, &buf[..take], count_written)
                    .await
                    .map_err(io)?;
                remaining -= take as u64;
            }
            Ok(())
        }
        Framing::UntilClose => {
            write_counted(writer, already, count_written)
                .await
                .map_err(io)?;
            loop {
                let n = activity.read(reader, &mut buf).await.map_err(io)?;
                if n == 0 {
                    return Ok(());
                }
                if let Some(counter) = count_read {
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                }
                write_counted(writer, &buf[..n], count_written)
                    .await
                    .map_err(io)?;
            }
        }
        Framing::Chunked => {
            let mut scanner = ChunkedScanner::default();
            let used = scanner.scan(already)?;
            write_counted(writer, &already[..used], count_written)
                .await
                .map_err(io)?;
            while !scanner.done() {
                let n = activity.read(reader, &mut buf).await.map_err(io)?;
                if n == 0 {
                    return Err("the chunked body ended before its last chunk".into());
                }
                if let Some(counter) = count_read {
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                }
                let used = scanner.scan(&buf[..n])?;
                write_counted(writer, &buf[..used], count_written)
                    .await
                    .map_err(io)?;
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
