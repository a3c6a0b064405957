//! What a person sees of a tool call's input before approving it: the one display rule of every
//! approval surface (the terminal prompt, a deferred run's `pending`, MCP elicitation, the
//! Temporal `toolgate.pending` query).
//!
//! The input is shown whole, once, readably: keys and values as lines (`path: a.txt`), strings
//! as they are (no JSON escaping), text with several lines as an indented block. Nothing that
//! runs may hide in it:
//!
//! - long runs of spaces, and spaces at the start or end of a line, become a visible count
//!   (`⟨4100 spaces⟩`); tabs become `⟨tab⟩`, runs of empty lines `⟨12 empty lines⟩`;
//! - control characters (`⟨ESC⟩`, `⟨CR⟩`, `⟨U+0085⟩`), bidirectional overrides, zero-width and
//!   other invisible characters, and unusual spaces (`⟨U+202E⟩`, `⟨U+200B⟩`, `⟨U+00A0⟩`) are
//!   named, repeated ones counted (`⟨300 × U+200B⟩`);
//! - the marks themselves are escaped where the input contains them (`⟨U+27E8⟩`), so a mark
//!   always means toolgate wrote it.
//!
//! An input whose display is longer than [`MAX_REVIEW_BYTES`] is not reviewable: its first part
//! is shown with a notice giving its size and SHA-256, and no "always" (or saved rule) is
//! offered for it — a person may still approve that one call.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::canonical::canonical_json;
use crate::limits::MAX_REVIEW_BYTES;

/// A space run inside a line longer than this is counted instead of shown.
const LONG_SPACE_RUN: usize = 16;
/// Leading spaces of a line of a text block (indentation) longer than this are counted.
const LONG_INDENT: usize = 64;
/// More consecutive empty lines than this are counted.
const EMPTY_LINES_SHOWN: usize = 2;
const OPEN: char = '⟨';
const CLOSE: char = '⟩';

/// A tool input as a person reviewing an approval request sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InputReview {
    /// The input for a person to read: whole when `reviewable`, else its first part and a notice
    /// with its size and digest. Holds no control character except line feeds.
    pub review: String,
    /// Whether `review` shows the whole input. When false, only a one-time approval may be
    /// given: no "always", no saved rule.
    pub reviewable: bool,
    /// The size of the input as canonical JSON text (keys sorted), in bytes.
    pub input_bytes: usize,
    /// SHA-256 (hex) of the input as canonical JSON text: what a person approved can be matched
    /// with what runs.
    pub input_sha256: String,
}

/// The review of a tool input (see the module documentation).
pub fn review_input(input: &Value) -> InputReview {
    let canonical = canonical_json(input);
    let input_sha256 = sha256_hex(canonical.as_bytes());
    let input_bytes = canonical.len();
    let mut lines = Vec::new();
    render(input, &mut lines);
    let text = lines.join("\n");
    if text.len() <= MAX_REVIEW_BYTES {
        return InputReview {
            review: text,
            reviewable: true,
            input_bytes,
            input_sha256,
        };
    }
    // Cut at a line end where one is near, so the notice starts on its own line.
    let mut cut = MAX_REVIEW_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if let Some(newline) = text[..cut].rfind('\n') {
        if newline > cut / 2 {
            cut = newline;
        }
    }
    let review = format!(
        "{}\n{OPEN}cut: the input is {input_bytes} bytes (sha256 {input_sha256}) and its display is {} bytes, more than the {MAX_REVIEW_BYTES} shown for review; only its first part is above. It may be approved once, never for always or as a saved rule{CLOSE}",
        &text[..cut],
        text.len()
    );
    InputReview {
        review,
        reviewable: false,
        input_bytes,
        input_sha256,
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Text for one line of a sentence (a command, a prefix, a name): shown by the same rule as
/// an input, line breaks named (`⟨LF⟩`), cut after `max_chars` characters with a count of what
/// was left out.
pub fn inline(text: &str, max_chars: usize) -> String {
    let shown = show_line(text, true);
    let count = shown.chars().count();
    if count <= max_chars {
        return shown;
    }
    let kept: String = shown.chars().take(max_chars).collect();
    // Never end inside a mark: drop a mark that was cut open.
    let kept = match (kept.rfind(OPEN), kept.rfind(CLOSE)) {
        (Some(open), close) if close.is_none_or(|close| close < open) => kept[..open].to_string(),
        _ => kept,
    };
    let left = count - kept.chars().count();
    format!("{kept}{OPEN}… {left} more characters{CLOSE}")
}

/// Renders a value as lines (without the indentation of where it is placed).
fn render(value: &Value, lines: &mut Vec<String>) {
    match value {
        Value::Object(map) if map.is_empty() => lines.push("{}".into()),
        Value::Array(items) if items.is_empty() => lines.push("[]".into()),
        Value::Object(map) => {
            for (key, item) in map {
                let key = show_key(key);
                entry(&format!("{key}:"), item, lines);
            }
        }
        Value::Array(items) => {
            for item in items {
                entry("-", item, lines);
            }
        }
        scalar => lines.push(scalar_text(scalar)),
    }
}

/// One `key: value` or `- value` entry: a scalar or a one-line string on the same line, a text
/// block or a collection below it, indented.
fn entry(head: &str, value: &Value, lines: &mut Vec<String>) {
    match value {
        Value::String(text) if text.contains('\n') => {
            lines.push(format!("{head} |"));
            for line in block_lines(text) {
                lines.push(indented(&line));
            }
        }
        Value::Object(map) if !map.is_empty() => {
            lines.push(head.to_string());
            let mut inner = Vec::new();
            render(value, &mut inner);
            lines.extend(inner.iter().map(|line| indented(line)));
        }
        Value::Array(items) if !items.is_empty() => {
            lines.push(head.to_string());
            let mut inner = Vec::new();
            render(value, &mut inner);
            lines.extend(inner.iter().map(|line| indented(line)));
        }
        scalar => lines.push(format!("{head} {}", scalar_text(scalar))),
    }
}

fn indented(line: &str) -> String {
    if line.is_empty() {
        String::new()
    } else {
        format!("  {line}")
    }
}

/// A scalar on one line. A string that would read as another value (`""`, `42`, `true`) is
/// quoted; other strings are shown as they are.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(text) => {
            let looks_like_other = text.is_empty()
                || matches!(
                    serde_json::from_str::<Value>(text),
                    Ok(Value::Number(_) | Value::Bool(_) | Value::Null)
                );
            if looks_like_other {
                format!("\"{}\"", show_line(text, true))
            } else {
                show_line(text, true)
            }
        }
        other => other.to_string(),
    }
}

fn show_key(key: &str) -> String {
    if key.is_empty() {
        "\"\"".into()
    } else {
        show_line(key, true)
    }
}

/// The lines of a text block: each line shown, runs of empty lines counted.
fn block_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut empty = 0usize;
    let flush = |empty: &mut usize, out: &mut Vec<String>| {
        if *empty > EMPTY_LINES_SHOWN {
            out.push(format!("{OPEN}{} empty lines{CLOSE}", *empty));
        } else {
            out.extend(std::iter::repeat_n(String::new(), *empty));
        }
        *empty = 0;
    };
    for line in text.split('\n') {
        if line.is_empty() {
            empty += 1;
            continue;
        }
        flush(&mut empty, &mut out);
        out.push(show_block_line(line));
    }
    flush(&mut empty, &mut out);
    out
}

/// A line of a text block: its indentation kept unless very long.
fn show_block_line(line: &str) -> String {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent == 0 || indent > LONG_INDENT || indent == line.len() {
        return show_line(line, true);
    }
    format!("{}{}", &line[..indent], show_line(&line[indent..], false))
}

/// One line of text (no line feed inside): what is invisible or moves the cursor is named.
/// `mark_leading`: spaces at the start are counted (a value right after `key: `).
fn show_line(line: &str, mark_leading: bool) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut index = 0;
    while index < chars.len() {
        let current = chars[index];
        let mut end = index + 1;
        while end < chars.len() && chars[end] == current {
            end += 1;
        }
        let run = end - index;
        if current == ' ' {
            let at_edge = (index == 0 && mark_leading) || end == chars.len();
            if at_edge || run > LONG_SPACE_RUN {
                let unit = if run == 1 { "space" } else { "spaces" };
                out.push_str(&format!("{OPEN}{run} {unit}{CLOSE}"));
            } else {
                out.extend(std::iter::repeat_n(' ', run));
            }
        } else if let Some(name) = mark_name(current) {
            if run == 1 {
                out.push_str(&format!("{OPEN}{name}{CLOSE}"));
            } else if current == '\t' {
                out.push_str(&format!("{OPEN}{run} tabs{CLOSE}"));
            } else {
                out.push_str(&format!("{OPEN}{run} × {name}{CLOSE}"));
            }
        } else {
            out.extend(std::iter::repeat_n(current, run));
        }
        index = end;
    }
    out
}

/// The name of a character that must not be shown as itself, or `None` for a visible one.
fn mark_name(c: char) -> Option<String> {
    const C0: [&str; 32] = [
        "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "tab", "LF", "VT", "FF",
        "CR", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM",
        "SUB", "ESC", "FS", "GS", "RS", "US",
    ];
    let code = c as u32;
    if code < 0x20 {
        return Some(C0[code as usize].to_string());
    }
    if code == 0x7f {
        return Some("DEL".into());
    }
    if c == OPEN || c == CLOSE || invisible(c) {
        return Some(format!("U+{code:04X}"));
    }
    None
}

/// Characters a terminal shows as nothing, as a blank, or that reorder or change what is
/// around them: C1 controls, unusual spaces and line separators, bidirectional controls,
/// zero-width and other format characters, fillers, variation selectors, tags.
pub(crate) fn invisible(c: char) -> bool {
    let code = c as u32;
    (c.is_whitespace() && c != ' ')
        || c.is_control()
        || matches!(
            code,
            0x00AD
                | 0x034F
                | 0x061C
                | 0x115F
                | 0x1160
                | 0x17B4
                | 0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x206F
                | 0x2800
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFFB
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
        )
}

#[cfg(test)]
mod tests;
