//! Output limits and the small formatting helpers every file tool shares.

use std::fmt::Write as _;

use crate::limits::DEFAULT_READ_BYTES;
use crate::limits::DEFAULT_READ_LINES;

/// Text that refuses to grow past a line and byte budget. Lines are pushed whole or not at all,
/// so the caller can say exactly where the output stopped.
#[derive(Debug)]
pub struct CappedText {
    text: String,
    lines: usize,
    max_lines: usize,
    max_bytes: usize,
}

impl CappedText {
    pub fn new(max_lines: usize, max_bytes: usize) -> Self {
        Self {
            text: String::new(),
            lines: 0,
            max_lines,
            max_bytes,
        }
    }

    /// With the default budget (2000 lines, 50 KiB).
    pub fn with_defaults() -> Self {
        Self::new(DEFAULT_READ_LINES, DEFAULT_READ_BYTES)
    }

    /// Appends `line` and a newline, or returns false (and appends nothing) when that would
    /// break the budget.
    pub fn push_line(&mut self, line: &str) -> bool {
        if self.lines >= self.max_lines || self.text.len() + line.len() + 1 > self.max_bytes {
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
        true
    }

    /// Appends `text` as a last line that has no newline (the end of a file that lacks one), or
    /// returns false when that would break the budget.
    pub fn push_unterminated(&mut self, text: &str) -> bool {
        if self.lines >= self.max_lines || self.text.len() + text.len() > self.max_bytes {
            return false;
        }
        self.text.push_str(text);
        self.lines += 1;
        true
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text, with a final marker line appended when one is given (the marker is never cut;
    /// it starts on a line of its own).
    pub fn finish(mut self, marker: Option<String>) -> String {
        if let Some(marker) = marker {
            if !self.text.is_empty() && !self.text.ends_with('\n') {
                self.text.push('\n');
            }
            self.text.push_str(&marker);
            self.text.push('\n');
        }
        self.text
    }
}

/// `bytes` as text: invalid UTF-8 is replaced, and a line longer than `max` bytes is cut at a
/// character boundary with a note saying how much was left out.
pub fn display_line(bytes: &[u8], max: usize) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.len() <= max {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut cut = String::from_utf8_lossy(&bytes[..max]).into_owned();
    // A multi-byte character split at the cut shows as U+FFFD; drop it.
    if cut.ends_with('\u{FFFD}') && std::str::from_utf8(&bytes[..max]).is_err() {
        cut.pop();
    }
    let _ = write!(cut, " … [line cut: {} more bytes]", bytes.len() - max);
    cut
}

/// Sizes the way people read them: `512 B`, `1.2 KiB`, `3.4 MiB`, `1.0 GiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    // 1023.96 KiB would print as "1024.0 KiB": move up a unit before rounding gets there.
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `1 line`, `2 lines`.
pub fn plural(count: u64, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_text_stops_at_whole_lines() {
        let mut text = CappedText::new(2, 100);
        assert!(text.push_line("a"));
        assert!(text.push_line("b"));
        assert!(!text.push_line("c"));
        assert_eq!(text.finish(Some("[cut]".into())), "a\nb\n[cut]\n");

        let mut text = CappedText::new(100, 10);
        assert!(text.push_line("12345"));
        assert!(!text.push_line("12345"));
        assert_eq!(text.finish(None), "12345\n");
    }

    #[test]
    fn long_lines_are_cut_at_character_boundaries() {
        assert_eq!(display_line(b"short\r", 10), "short");
        let line = "é".repeat(10); // 20 bytes
        let cut = display_line(line.as_bytes(), 5);
        assert!(cut.starts_with("éé …"), "{cut}");
        assert!(cut.contains("15 more bytes"), "{cut}");
        assert_eq!(display_line(b"a\xffb", 10), "a\u{FFFD}b");
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(human_size(1 << 30), "1.0 GiB");
        assert_eq!(human_size((1 << 30) - 100), "1.0 GiB");
        assert_eq!(plural(1, "line", "lines"), "1 line");
        assert_eq!(plural(3, "line", "lines"), "3 lines");
    }
}
