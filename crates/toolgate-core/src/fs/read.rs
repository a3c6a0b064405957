//! `file_read` / `read_file`: a window of a text file's lines, streamed, never the whole file;
//! a listing for a directory; a short description for a binary file.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::access::{Access, WalkFilter};
use super::anchor::{self, Dir, Kind, Target};
use super::text::{display_line, human_size, plural, CappedText};
use crate::error::{Error, Result};
use crate::limits::{DEFAULT_READ_BYTES, MAX_LINE_BYTES};
use crate::path::PathValidator;

/// Bytes inspected for NUL to decide whether a file is binary (what git and ripgrep do).
const BINARY_PROBE_BYTES: usize = 8 * 1024;
/// After a cut, the remaining lines are counted when at most this much is left.
const COUNT_REST_UP_TO: u64 = 16 * 1024 * 1024;

/// What to read.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub path: String,
    /// First line (or directory entry) to show, from 1.
    pub offset: u64,
    /// How many lines (or entries) to show at most; output is also capped at 50 KiB.
    pub limit: u64,
    /// Prefix every line with its number (`     7\t...`), as `file_read` does. Without numbers
    /// the text is the file's own, byte for byte (line endings and a missing final newline
    /// included), so that reading a file and writing the text back changes nothing.
    pub line_numbers: bool,
}

impl ReadRequest {
    /// Lines 1 to 2000, numbered.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            offset: 1,
            limit: crate::limits::DEFAULT_READ_LINES as u64,
            line_numbers: true,
        }
    }
}

/// What was found at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Text,
    Directory,
    Binary,
}

impl ReadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReadKind::Text => "text",
            ReadKind::Directory => "directory",
            ReadKind::Binary => "binary",
        }
    }
}

/// The result of a read.
#[derive(Debug, Clone)]
pub struct ReadOutput {
    /// The path relative to the root.
    pub path: String,
    pub kind: ReadKind,
    /// The lines (numbered or not), the listing, or the binary-file note; when cut, it ends
    /// with a `[...]` marker line that says what was left out and how to get it.
    pub text: String,
    pub truncated: bool,
    /// The `offset` that continues where this read stopped.
    pub next_offset: Option<u64>,
    /// Size of the file in bytes (0 for a directory).
    pub size: u64,
    /// The read reached the end of the file and its last line has no final newline. The text
    /// without line numbers shows it by not ending in one; numbered text says
    /// `[no newline at end of file]` on a line of its own.
    pub missing_final_newline: bool,
}

/// Reads a window of a file, or lists a directory. Memory stays bounded by the output caps
/// whatever the file size or line length: the file is streamed through a 64 KiB buffer.
/// With path rules, a blocked path is refused and a listing leaves out blocked entries (and
/// symlinks leading to one).
pub fn read<'a>(access: impl Into<Access<'a>>, request: &ReadRequest) -> Result<ReadOutput> {
    let access = access.into();
    let validator = access.validator();
    if request.offset == 0 || request.limit == 0 {
        return Err(Error::InvalidInput(format!(
            "offset and limit start at 1 (got offset {}, limit {}); offset 1 is the first line",
            request.offset, request.limit
        )));
    }
    let (absolute, level) = access.target(&request.path)?;
    let filter = access.walk_filter(level);
    if absolute == validator.root() {
        let dir = Dir::open(validator, &absolute, false, &mut Vec::new())?;
        return list_directory(validator, &dir, request, filter.as_ref());
    }
    let target = Target::at(validator, absolute, false, &mut Vec::new())?;
    match target.kind()? {
        Kind::Missing => Err(Error::FileNotFound(format!(
            "'{}' does not exist; check the path (glob_search finds files by name)",
            target.relative.display()
        ))),
        Kind::Directory => {
            let dir = Dir::open(validator, &target.absolute, false, &mut Vec::new())?;
            list_directory(validator, &dir, request, filter.as_ref())
        }
        Kind::File => read_file(&target, request, access),
        Kind::Symlink | Kind::Other => {
            let what = target.stat().map_or("a special file", |stat| {
                super::special::describe(rustix::fs::FileType::from_raw_mode(stat.st_mode))
            });
            Err(Error::InvalidInput(format!(
                "'{}' is {what}, not a regular file or directory; file tools only read regular files and list directories",
                target.relative.display()
            )))
        }
    }
}

fn read_file(target: &Target, request: &ReadRequest, access: Access<'_>) -> Result<ReadOutput> {
    let file = target.open_read()?;
    let meta = file
        .metadata()
        .map_err(|err| Error::io("reading", &target.absolute, err))?;
    if let Some(guards) = access.guards() {
        // Judged again on what was opened: a hard link swapped in since the check is refused.
        guards.check_identity(&request.path, &target.absolute, &meta, false)?;
    }
    let size = meta.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let probe = reader
        .fill_buf()
        .map_err(|err| Error::io("reading", &target.absolute, err))?;
    let path = target.relative.display().to_string();
    if probe[..probe.len().min(BINARY_PROBE_BYTES)].contains(&0) {
        let what = binary_kind(probe).map_or(String::new(), |kind| format!(", {kind}"));
        return Ok(ReadOutput {
            text: format!(
                "'{path}' is a binary file ({}{what}); its bytes are not shown as text.\n",
                human_size(size)
            ),
            path,
            kind: ReadKind::Binary,
            truncated: false,
            next_offset: None,
            size,
            missing_final_newline: false,
        });
    }
    let mut window = LineWindow::new(request);
    stream_lines(&mut reader, &mut window)
        .map_err(|err| Error::io("reading", &target.absolute, err))?;
    window.finish(path, size, &mut reader)
}

/// Collects the requested window of lines while the file streams past.
struct LineWindow<'r> {
    request: &'r ReadRequest,
    out: CappedText,
    /// Number of the line being read, from 1.
    line: u64,
    /// Bytes of a line shown whole at most: MAX_LINE_BYTES with line numbers, the whole
    /// output budget without (where the text must be the file's own).
    line_limit: usize,
    /// Bytes of the current line kept for display (at most `line_limit` + 1).
    current: Vec<u8>,
    /// Total bytes of the current line, kept or not.
    current_len: u64,
    /// Byte offset where the current line starts.
    line_start: u64,
    position: u64,
    shown: u64,
    /// Set when the window is full: the line that would come next and where it starts.
    stopped_at: Option<(u64, u64)>,
    /// The last line shown had no newline (it was the end of the file).
    unterminated: bool,
}

impl<'r> LineWindow<'r> {
    fn new(request: &'r ReadRequest) -> Self {
        Self {
            request,
            out: CappedText::with_defaults(),
            line_limit: if request.line_numbers {
                MAX_LINE_BYTES
            } else {
                DEFAULT_READ_BYTES
            },
            line: 1,
            current: Vec::new(),
            current_len: 0,
            line_start: 0,
            position: 0,
            shown: 0,
            stopped_at: None,
            unterminated: false,
        }
    }

    fn wanted(&self) -> bool {
        self.line >= self.request.offset
    }

    fn take(&mut self, bytes: &[u8]) {
        if self.wanted() && self.current.len() <= self.line_limit {
            let room = self.line_limit + 1 - self.current.len();
            self.current
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        self.current_len += bytes.len() as u64;
        self.position += bytes.len() as u64;
    }

    /// Ends the current line (its newline, if any, already consumed). Returns false once the
    /// window is full.
    fn end_line(&mut self, newline: bool) -> bool {
        if self.wanted() {
            // The line as it is in the file, `\r` included; invalid UTF-8 is replaced.
            let shown = if self.current_len as usize > self.current.len() {
                // The kept prefix was cut at line_limit + 1; say how long the line was.
                let mut cut = display_line(&self.current[..self.line_limit], self.line_limit);
                cut.push_str(&format!(
                    " … [line cut: {} more bytes]",
                    self.current_len - self.line_limit as u64
                ));
                cut
            } else {
                String::from_utf8_lossy(&self.current).into_owned()
            };
            let pushed = if self.request.line_numbers {
                self.out.push_line(&format!("{:>6}\t{shown}", self.line))
            } else if newline {
                self.out.push_line(&shown)
            } else {
                self.out.push_unterminated(&shown)
            };
            if !pushed {
                self.stopped_at = Some((self.line, self.line_start));
                return false;
            }
            self.unterminated = !newline;
            self.shown += 1;
        }
        self.line += 1;
        self.current.clear();
        self.current_len = 0;
        if newline {
            self.position += 1;
        }
        self.line_start = self.position;
        if self.shown == self.request.limit {
            self.stopped_at = Some((self.line, self.line_start));
            return false;
        }
        true
    }

    fn finish(self, path: String, size: u64, rest: &mut impl Read) -> Result<ReadOutput> {
        let first = self.request.offset;
        let mut next_offset = None;
        let mut marker = None;
        match self.stopped_at {
            Some((next, start)) if start < size => {
                let remaining = size - start;
                let last = next - 1;
                let more = if remaining <= COUNT_REST_UP_TO {
                    // When the byte cap stopped the window, the line it refused was already
                    // consumed from the reader: count it too.
                    let lines = count_rest(rest)? + u64::from(self.position > start);
                    format!(
                        "{lines} more {} ({}) after line {last}",
                        if lines == 1 { "line" } else { "lines" },
                        human_size(remaining)
                    )
                } else {
                    format!("{} more after line {last}", human_size(remaining))
                };
                marker = Some(format!(
                    "[truncated: showed lines {first}-{last} of '{path}'; {more}. Call again with offset={next} to continue]"
                ));
                next_offset = Some(next);
            }
            _ => {
                let total = self.line - 1;
                if self.shown == 0 && first > 1 && first > total {
                    return Err(Error::InvalidInput(format!(
                        "offset {first} is past the end of '{path}', which has {}; use an offset from 1 to {}",
                        plural(total, "line", "lines"),
                        total.max(1)
                    )));
                }
            }
        }
        let missing_final_newline = next_offset.is_none() && self.unterminated;
        if missing_final_newline && self.request.line_numbers {
            marker = Some("[no newline at end of file]".into());
        }
        let empty = self.out.is_empty();
        let mut text = self.out.finish(marker);
        if empty && self.request.line_numbers {
            text = format!("(the file '{path}' is empty)\n");
        }
        Ok(ReadOutput {
            path,
            kind: ReadKind::Text,
            text,
            truncated: next_offset.is_some(),
            next_offset,
            size,
            missing_final_newline,
        })
    }
}

/// Feeds the reader's bytes to the window, one buffer at a time, until the window is full or
/// the file ends. Lines of any length pass through without being held in memory.
fn stream_lines(reader: &mut impl BufRead, window: &mut LineWindow) -> std::io::Result<()> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if window.current_len > 0 {
                window.end_line(false);
            }
            return Ok(());
        }
        let (used, line_ended) = match memchr::memchr(b'\n', buf) {
            Some(at) => {
                window.take(&buf[..at]);
                (at + 1, true)
            }
            None => {
                let len = buf.len();
                window.take(buf);
                (len, false)
            }
        };
        reader.consume(used);
        if line_ended && !window.end_line(true) {
            return Ok(());
        }
    }
}

/// Counts the lines left in the reader: newlines, plus one for a last line without one.
fn count_rest(reader: &mut impl Read) -> Result<u64> {
    let mut lines = 0u64;
    let mut last = b'\n';
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|err| Error::io("reading", "(rest of file)", err))?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        last = buf[n - 1];
    }
    Ok(lines + u64::from(last != b'\n'))
}

/// A name for common binary formats, from their magic bytes.
fn binary_kind(head: &[u8]) -> Option<&'static str> {
    const MAGIC: [(&[u8], &str); 10] = [
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, kind)| *kind)
}

/// One line per entry: type, size, name (directories end in `/`, symlinks show their target).
/// Directories first, then everything else, each alphabetically; hidden entries included.
fn list_directory(
    validator: &PathValidator,
    dir: &Dir,
    request: &ReadRequest,
    filter: Option<&WalkFilter>,
) -> Result<ReadOutput> {
    let path = validator.relative(&dir.path).display().to_string();
    let mut listing = rustix::fs::Dir::read_from(dir.fd())
        .map_err(|errno| anchor::io_error("listing", &dir.path, errno))?;
    let mut entries = Vec::new();
    while let Some(entry) = listing.read() {
        let entry = entry.map_err(|errno| anchor::io_error("listing", &dir.path, errno))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = std::ffi::OsStr::from_bytes(name).to_os_string();
        let stat = rustix::fs::statat(dir.fd(), &name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
        let Ok(stat) = stat else { continue }; // removed while we listed
        let kind = anchor::kind_of(rustix::fs::FileType::from_raw_mode(stat.st_mode));
        let path = dir.path.join(&name);
        if filter.is_some_and(|filter| {
            hidden(validator, filter, &path, kind)
                || (kind == Kind::File && filter.hides_file(&path, stat.st_ino))
        }) {
            continue;
        }
        entries.push((kind, name, stat.st_size as u64));
    }
    entries.sort_by(|a, b| (a.0 != Kind::Directory, &a.1).cmp(&(b.0 != Kind::Directory, &b.1)));
    let total = entries.len() as u64;
    let mut out = CappedText::with_defaults();
    let mut next = None;
    let start = request.offset.saturating_sub(1) as usize;
    if start > 0 && start >= entries.len() {
        return Err(Error::InvalidInput(format!(
            "offset {} is past the end of directory '{path}', which has {}",
            request.offset,
            plural(total, "entry", "entries")
        )));
    }
    for (index, (kind, raw_name, size)) in entries.iter().enumerate().skip(start) {
        let name = raw_name.to_string_lossy();
        let line = match kind {
            Kind::Directory => format!("dir   {:>10}  {name}/", "-"),
            Kind::File => format!("file  {:>10}  {name}", human_size(*size)),
            Kind::Symlink => {
                let target = rustix::fs::readlinkat(dir.fd(), raw_name.as_os_str(), Vec::new())
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("link  {:>10}  {name} -> {target}", "-")
            }
            Kind::Other | Kind::Missing => format!("other {:>10}  {name}", "-"),
        };
        if (index - start) as u64 == request.limit || !out.push_line(&line) {
            next = Some(index as u64 + 1);
            break;
        }
    }
    let header = format!(
        "directory '{path}': {}\n",
        plural(total, "entry", "entries")
    );
    let marker = next.map(|n| {
        format!(
            "[truncated: showed entries {}-{} of {total}; call again with offset={n} for the rest]",
            request.offset,
            n - 1
        )
    });
    Ok(ReadOutput {
        text: header + &out.finish(marker),
        path,
        kind: ReadKind::Directory,
        truncated: next.is_some(),
        next_offset: next,
        size: 0,
        missing_final_newline: false,
    })
}

/// Whether a path rule hides the entry at `path`: it is blocked, or a symlink whose target is.
fn hidden(validator: &PathValidator, filter: &WalkFilter, path: &Path, kind: Kind) -> bool {
    let symlink = kind == Kind::Symlink;
    filter.is_blocked(path, kind == Kind::Directory, symlink)
        || (symlink
            && validator
                .resolve(path)
                .is_ok_and(|target| filter.target_blocked(&target)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::{Seek, SeekFrom, Write};

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    fn req(path: &str, offset: u64, limit: u64) -> ReadRequest {
        ReadRequest {
            offset,
            limit,
            ..ReadRequest::new(path)
        }
    }

    #[test]
    fn reads_numbered_lines_and_marks_the_cut() {
        let (dir, v) = setup();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("a.txt"), body).unwrap();
        let all = read(&v, &ReadRequest::new("a.txt")).unwrap();
        assert_eq!(all.kind, ReadKind::Text);
        assert!(all.text.starts_with("     1\tline 1\n     2\tline 2\n"));
        assert!(!all.truncated);
        assert!(!all.text.contains("[truncated"));

        let window = read(&v, &req("a.txt", 3, 2)).unwrap();
        assert_eq!(
            window.text,
            "     3\tline 3\n     4\tline 4\n[truncated: showed lines 3-4 of 'a.txt'; 6 more lines (43 B) after line 4. Call again with offset=5 to continue]\n"
        );
        assert_eq!(window.next_offset, Some(5));

        let tail = read(&v, &req("a.txt", 9, 5)).unwrap();
        assert_eq!(tail.text, "     9\tline 9\n    10\tline 10\n");
        let exact = read(&v, &req("a.txt", 9, 2)).unwrap();
        assert!(!exact.truncated, "{}", exact.text);
    }

    fn exact(path: &str, offset: u64, limit: u64) -> ReadRequest {
        ReadRequest {
            line_numbers: false,
            ..req(path, offset, limit)
        }
    }

    #[test]
    fn a_last_line_without_newline_and_crlf_are_read_as_they_are() {
        let (dir, v) = setup();
        std::fs::write(dir.path().join("a.txt"), "one\r\ntwo").unwrap();
        let out = read(&v, &ReadRequest::new("a.txt")).unwrap();
        assert_eq!(
            out.text,
            "     1\tone\r\n     2\ttwo\n[no newline at end of file]\n"
        );
        assert!(out.missing_final_newline);
        let raw = read(&v, &exact("a.txt", 1, 2000)).unwrap();
        assert_eq!(raw.text, "one\r\ntwo");
        assert!(raw.missing_final_newline);
        // A window that stops before the last line says nothing about it.
        let first = read(&v, &req("a.txt", 1, 1)).unwrap();
        assert!(!first.missing_final_newline && first.truncated);
        assert!(!first.text.contains("no newline"), "{}", first.text);
        let last = read(&v, &exact("a.txt", 2, 1)).unwrap();
        assert_eq!(last.text, "two");
        assert!(last.missing_final_newline && !last.truncated);
    }

    #[test]
    fn reading_then_writing_back_changes_no_byte() {
        let (dir, v) = setup();
        let long_line = format!("{}\n", "z".repeat(10_000));
        let cases: [(&str, &[u8]); 10] = [
            ("no-final-newline", b"a\nb"),
            ("final-newline", b"a\nb\n"),
            ("crlf", b"a\r\nb\r\n"),
            ("crlf-no-final", b"a\r\nb"),
            ("mixed", b"a\r\nb\nc\r"),
            ("empty", b""),
            ("only-newline", b"\n"),
            ("only-crlf", b"\r\n"),
            ("blank-lines", b"\n\n\nx\n\n"),
            ("long-line", long_line.as_bytes()),
        ];
        for (name, bytes) in cases {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            let out = read(&v, &exact(name, 1, 2000)).unwrap();
            assert!(!out.truncated, "{name}");
            assert_eq!(
                out.missing_final_newline,
                !bytes.is_empty() && !bytes.ends_with(b"\n"),
                "{name}"
            );
            crate::fs::write(&v, name, out.text.as_bytes()).unwrap();
            assert_eq!(
                std::fs::read(dir.path().join(name)).unwrap(),
                bytes,
                "{name}"
            );
        }
        // Windows read one after the other add up to the file.
        let body: Vec<u8> = (0..25)
            .flat_map(|i| {
                format!("line {i}{}", if i % 3 == 0 { "\r\n" } else { "\n" }).into_bytes()
            })
            .chain(*b"tail")
            .collect();
        std::fs::write(dir.path().join("windows"), &body).unwrap();
        let mut joined = String::new();
        let mut offset = 1;
        loop {
            let out = read(&v, &exact("windows", offset, 7)).unwrap();
            let Some(next) = out.next_offset else {
                joined.push_str(&out.text);
                break;
            };
            let marker = out.text.rfind("[truncated:").unwrap();
            joined.push_str(&out.text[..marker]);
            offset = next;
        }
        assert_eq!(joined.as_bytes(), body.as_slice());
    }

    #[test]
    fn offsets_past_the_end_and_zero_are_invalid_input() {
        let (dir, v) = setup();
        std::fs::write(dir.path().join("a.txt"), "1\n2\n3\n").unwrap();
        let err = read(&v, &req("a.txt", 10, 5)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("has 3 lines"), "{err}");
        assert_eq!(
            read(&v, &req("a.txt", 0, 5)).unwrap_err().code(),
            "INVALID_INPUT"
        );
        std::fs::write(dir.path().join("empty"), "").unwrap();
        let empty = read(&v, &ReadRequest::new("empty")).unwrap();
        assert!(empty.text.contains("is empty"));
    }

    #[test]
    fn output_is_capped_at_50_kib_and_long_lines_are_cut() {
        let (dir, v) = setup();
        let line = "x".repeat(1000);
        let body: String = (0..200).map(|_| format!("{line}\n")).collect();
        std::fs::write(dir.path().join("wide.txt"), body).unwrap();
        let out = read(&v, &ReadRequest::new("wide.txt")).unwrap();
        assert!(out.text.len() <= 50 * 1024 + 300);
        assert!(out.truncated);
        let next = out.next_offset.unwrap();
        assert!(next > 40 && next < 60, "{next}");
        assert!(out.text.contains(&format!("offset={next}")));

        std::fs::write(
            dir.path().join("long.txt"),
            format!("{}\nend\n", "y".repeat(100_000)),
        )
        .unwrap();
        let out = read(&v, &ReadRequest::new("long.txt")).unwrap();
        assert!(
            out.text.contains("[line cut: 98000 more bytes]"),
            "{}",
            &out.text[out.text.len() - 200..]
        );
        assert!(out.text.ends_with("     2\tend\n"));
    }

    #[test]
    fn binary_files_are_described_not_dumped() {
        let (dir, v) = setup();
        std::fs::write(dir.path().join("img.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
        let out = read(&v, &ReadRequest::new("img.png")).unwrap();
        assert_eq!(out.kind, ReadKind::Binary);
        assert!(
            out.text.contains("binary file (16 B, PNG image)"),
            "{}",
            out.text
        );
        assert!(!out.text.contains("IHDR"));
    }

    #[test]
    fn directories_are_listed_with_type_size_and_name() {
        let (dir, v) = setup();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.txt"), vec![b'a'; 2048]).unwrap();
        std::fs::write(dir.path().join(".env"), "x").unwrap();
        std::os::unix::fs::symlink("b.txt", dir.path().join("link")).unwrap();
        let out = read(&v, &ReadRequest::new(".")).unwrap();
        assert_eq!(out.kind, ReadKind::Directory);
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(lines[0], "directory '.': 4 entries");
        assert!(lines[1].starts_with("dir") && lines[1].ends_with("sub/"));
        assert!(lines[2].ends_with("1 B  .env"), "{}", lines[2]);
        assert!(lines[3].ends_with("2.0 KiB  b.txt"), "{}", lines[3]);
        assert!(lines[4].ends_with("link -> b.txt"), "{}", lines[4]);
        let page = read(&v, &req(".", 2, 2)).unwrap();
        assert!(page.text.contains("offset=4"), "{}", page.text);
    }

    #[test]
    fn a_huge_sparse_file_streams_in_bounded_memory() {
        let (dir, v) = setup();
        let path = dir.path().join("huge.log");
        let mut file = File::create(&path).unwrap();
        for i in 1..=1000 {
            writeln!(file, "header line {i}").unwrap();
        }
        file.seek(SeekFrom::Start(256 * 1024 * 1024)).unwrap();
        file.write_all(b"\ntail line A\ntail line B\n").unwrap();
        drop(file);
        let head = read(&v, &req("huge.log", 1, 3)).unwrap();
        assert!(
            head.text.contains("256.0 MiB more after line 3"),
            "{}",
            head.text
        );
        // Line 1001 is 256 MiB of NUL bytes; stepping over it must not buffer it.
        let tail = read(&v, &req("huge.log", 1002, 10)).unwrap();
        assert_eq!(tail.text, "  1002\ttail line A\n  1003\ttail line B\n");
        let giant = read(&v, &req("huge.log", 1001, 1)).unwrap();
        assert!(giant.text.contains("[line cut:"), "{}", &giant.text[..100]);
    }

    #[test]
    fn missing_files_and_refusals_have_their_codes() {
        let (dir, v) = setup();
        let err = read(&v, &ReadRequest::new("nope.txt")).unwrap_err();
        assert_eq!(err.code(), "FILE_NOT_FOUND");
        assert!(err.to_string().contains("nope.txt"));
        assert_eq!(
            read(&v, &ReadRequest::new("../x")).unwrap_err().code(),
            "PATH_OUTSIDE_ROOT"
        );
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("pw")).unwrap();
        assert_eq!(
            read(&v, &ReadRequest::new("pw")).unwrap_err().code(),
            "PATH_OUTSIDE_ROOT"
        );
    }
}
