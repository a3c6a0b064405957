//! `file_edit`: replace an exact piece of text, once (or everywhere when asked), and show the
//! change as a unified diff.

use std::io::Read;
use std::time::Duration;

use super::access::Access;
use super::anchor::{Kind, Target};
use super::lock::WriteLock;
use super::text::{human_size, plural, CappedText};
use super::write::check_content_size;
use crate::error::{Error, Result};
use crate::limits::MAX_EDIT_FILE_BYTES;
#[cfg(test)]
use crate::path::PathValidator;

/// How often an edit is made again when another program changes the file meanwhile.
const EDIT_ATTEMPTS: usize = 3;
/// Lines of unchanged context around each change in the diff.
const DIFF_CONTEXT: usize = 3;

/// What to change.
#[derive(Debug, Clone)]
pub struct EditRequest {
    pub path: String,
    /// Text to find, exactly (whitespace and indentation included).
    pub old_text: String,
    pub new_text: String,
    /// Replace every match instead of requiring exactly one.
    pub replace_all: bool,
}

/// The result of an edit.
#[derive(Debug, Clone)]
pub struct EditOutput {
    /// The path relative to the root.
    pub path: String,
    pub replacements: u64,
    /// Unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks with context lines),
    /// capped like every output, with a marker when cut.
    pub diff: String,
}

/// Replaces `old_text` with `new_text` in the file. `old_text` must occur exactly once unless
/// `replace_all`; otherwise the error says how many matches there were and what to do. A file
/// with CRLF line endings also matches an `old_text` written with LF. The file is rewritten
/// atomically and keeps its permissions.
///
/// Edits of one file by this process take turns (see `lock`). When another program changes the
/// file between the read and the rename, nothing is written and the edit is made again on the
/// new content (up to three times): the replacement is defined by the text, so it
/// applies to the new content as well, and fails with the usual "not found" error (saying the
/// file changed) when the other program removed `old_text`.
/// With path rules, a blocked path is refused.
pub fn edit<'a>(access: impl Into<Access<'a>>, request: &EditRequest) -> Result<EditOutput> {
    let access = access.into();
    let (absolute, _) = access.target_to_change(&request.path)?;
    let target = Target::at(access.validator(), absolute, false, &mut Vec::new())?;
    let path = target.relative.display().to_string();
    check_request(request, &path)?;
    let _lock = WriteLock::acquire([target.absolute.clone()]);
    for attempt in 0..EDIT_ATTEMPTS {
        let original = read_text(&target, &path)?;
        let mode = target.stat()?.st_mode & 0o7777;
        let (updated, replacements) = replace(&original, request, &path).map_err(|err| {
            if attempt == 0 {
                return err;
            }
            match err {
                Error::InvalidInput(message) => Error::InvalidInput(format!(
                    "{message}. Note: another program changed '{path}' while it was being edited; read it again"
                )),
                other => other,
            }
        })?;
        if target.write_atomic_unless_changed(
            updated.as_bytes(),
            Some(mode),
            original.as_bytes(),
        )? {
            return Ok(EditOutput {
                diff: unified_diff(&original, &updated, &path),
                path,
                replacements,
            });
        }
    }
    Err(Error::ToolFailed(format!(
        "'{path}' changed {EDIT_ATTEMPTS} times while it was being edited: another program keeps writing it. Nothing was written; try again once it is no longer being written"
    )))
}

fn check_request(request: &EditRequest, path: &str) -> Result<()> {
    if request.old_text.is_empty() {
        return Err(Error::InvalidInput(format!(
            "old_text is empty; give the exact text to replace in '{path}' (to create or overwrite a whole file use file_write)"
        )));
    }
    if request.old_text == request.new_text {
        return Err(Error::InvalidInput(
            "old_text and new_text are the same, so nothing would change; give the new text in new_text".into(),
        ));
    }
    check_content_size("old_text", request.old_text.len())?;
    check_content_size("new_text", request.new_text.len())
}

/// The content with the request's replacement made, and how many replacements that was.
fn replace(original: &str, request: &EditRequest, path: &str) -> Result<(String, u64)> {
    let (mut old_text, mut new_text) = (request.old_text.clone(), request.new_text.clone());
    let mut matches = count_matches(original, &old_text);
    if matches == 0
        && original.contains("\r\n")
        && old_text.contains('\n')
        && !old_text.contains("\r\n")
    {
        old_text = old_text.replace('\n', "\r\n");
        new_text = new_text.replace('\n', "\r\n");
        matches = count_matches(original, &old_text);
    }
    if matches == 0 {
        return Err(Error::InvalidInput(not_found_message(
            original,
            &request.old_text,
            path,
        )));
    }
    if matches > 1 && !request.replace_all {
        let lines = match_lines(original, &old_text, 5);
        return Err(Error::InvalidInput(format!(
            "old_text matches {matches} times in '{path}' (at lines {lines}); include more surrounding lines in old_text so that it matches exactly once, or set replace_all to true to replace every match"
        )));
    }
    // The size after the edit, checked before it is built: replacing a 1-byte text by a large
    // one everywhere would otherwise ask for more memory than exists.
    let size = (new_text.len() as u64)
        .checked_sub(old_text.len() as u64)
        .map_or(Some(original.len() as u64), |growth| {
            growth
                .checked_mul(matches as u64)
                .and_then(|grown| grown.checked_add(original.len() as u64))
        });
    if size.is_none_or(|size| size > MAX_EDIT_FILE_BYTES) {
        return Err(Error::InvalidInput(format!(
            "this edit would make '{path}' larger than {} ({matches} replacements); files that large are not edited in memory. Replace fewer matches at a time, or write the file with file_write",
            human_size(MAX_EDIT_FILE_BYTES)
        )));
    }
    let updated = if request.replace_all {
        original.replace(&old_text, &new_text)
    } else {
        original.replacen(&old_text, &new_text, 1)
    };
    Ok((updated, matches as u64))
}

fn read_text(target: &Target, path: &str) -> Result<String> {
    match target.kind()? {
        Kind::File => {}
        Kind::Missing => {
            return Err(Error::FileNotFound(format!(
                "'{path}' does not exist; use file_write to create it"
            )))
        }
        _ => {
            return Err(Error::InvalidInput(format!(
                "'{path}' is not a regular file; only files can be edited"
            )))
        }
    }
    let file = target.open_read()?;
    let size = file
        .metadata()
        .map_err(|err| Error::io("reading", &target.absolute, err))?
        .len();
    if size > MAX_EDIT_FILE_BYTES {
        return Err(Error::InvalidInput(format!(
            "'{path}' is {} bytes; files over {MAX_EDIT_FILE_BYTES} bytes are not edited in memory. Use file_write to replace it",
            size
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    (&file)
        .take(MAX_EDIT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| Error::io("reading", &target.absolute, err))?;
    String::from_utf8(bytes).map_err(|_| {
        Error::InvalidInput(format!(
            "'{path}' is not UTF-8 text, so it cannot be edited as text; use file_write to replace it"
        ))
    })
}

fn count_matches(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// Line numbers (from 1) of the first `max` matches, e.g. `3, 10, 25` or `3, 10, … (12 in all)`.
fn match_lines(haystack: &str, needle: &str, max: usize) -> String {
    let mut lines = Vec::new();
    let mut line = 1;
    let mut last = 0;
    let mut total = 0;
    for (at, _) in haystack.match_indices(needle) {
        line += haystack[last..at].matches('\n').count();
        last = at;
        total += 1;
        if lines.len() < max {
            lines.push(line.to_string());
        }
    }
    let mut text = lines.join(", ");
    if total > max {
        text.push_str(&format!(", … ({total} in all)"));
    }
    text
}

/// Says that nothing matched and, when the first line of `old_text` occurs with different
/// whitespace, where to look.
fn not_found_message(original: &str, old_text: &str, path: &str) -> String {
    let mut message = format!(
        "old_text was not found in '{path}'. It must match the file exactly, including whitespace, indentation and line breaks; read the file again and copy the text from it"
    );
    let first = old_text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty());
    if let Some(first) = first {
        let near: Vec<String> = original
            .lines()
            .enumerate()
            .filter(|(_, line)| line.trim() == first)
            .take(5)
            .map(|(index, _)| (index + 1).to_string())
            .collect();
        if !near.is_empty() {
            message.push_str(&format!(
                ". The first line of old_text appears (ignoring surrounding whitespace) at line {}; the text after it or its whitespace differs",
                near.join(", ")
            ));
        }
    }
    message
}

/// A unified diff with `DIFF_CONTEXT` lines of context, capped at 2000 lines / 50 KiB.
pub(crate) fn unified_diff(old: &str, new: &str, path: &str) -> String {
    let diff = similar::TextDiff::configure()
        .timeout(Duration::from_secs(2))
        .diff_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(DIFF_CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let mut out = CappedText::with_defaults();
    let mut lines = text.lines();
    let mut shown = 0u64;
    for line in lines.by_ref() {
        if !out.push_line(line) {
            break;
        }
        shown += 1;
    }
    let rest = text.lines().count() as u64 - shown;
    let marker = (rest > 0).then(|| {
        format!(
            "[diff truncated: {} not shown; the file was written in full, read it with file_read to see the rest]",
            plural(rest, "more line", "more lines")
        )
    });
    out.finish(marker)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn setup(content: &str) -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.rs"), content).unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    fn req(old: &str, new: &str, all: bool) -> EditRequest {
        EditRequest {
            path: "f.rs".into(),
            old_text: old.into(),
            new_text: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn a_unique_match_is_replaced_and_the_diff_is_real() {
        let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let (dir, v) = setup(&body);
        std::fs::set_permissions(
            dir.path().join("f.rs"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        let out = edit(&v, &req("line 10\n", "line ten\nline 10.5\n", false)).unwrap();
        assert_eq!(out.replacements, 1);
        assert_eq!(
            out.diff,
            "--- a/f.rs\n+++ b/f.rs\n@@ -7,7 +7,8 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n+line 10.5\n line 11\n line 12\n line 13\n"
        );
        let now = std::fs::read_to_string(dir.path().join("f.rs")).unwrap();
        assert!(now.contains("line 9\nline ten\nline 10.5\nline 11\n"));
        let mode = std::fs::metadata(dir.path().join("f.rs"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn several_matches_need_context_or_replace_all() {
        let (dir, v) = setup("let a = 1;\nlet b = 1;\nlet c = 1;\n");
        let err = edit(&v, &req("= 1;", "= 2;", false)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        let message = err.to_string();
        assert!(message.contains("matches 3 times"), "{message}");
        assert!(message.contains("lines 1, 2, 3"), "{message}");
        assert!(message.contains("replace_all"), "{message}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
            "let a = 1;\nlet b = 1;\nlet c = 1;\n"
        );

        let out = edit(&v, &req("= 1;", "= 2;", true)).unwrap();
        assert_eq!(out.replacements, 3);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
            "let a = 2;\nlet b = 2;\nlet c = 2;\n"
        );
    }

    #[test]
    fn no_match_says_so_and_points_near_a_whitespace_difference() {
        let (_dir, v) = setup("fn main() {\n    println!(\"hi\");\n}\n");
        let err = edit(&v, &req("fn main() {\n  println!(\"hi\");", "x", false)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        let message = err.to_string();
        assert!(message.contains("was not found in 'f.rs'"), "{message}");
        assert!(message.contains("at line 1"), "{message}");
        assert_eq!(
            edit(&v, &req("", "x", false)).unwrap_err().code(),
            "INVALID_INPUT"
        );
        assert_eq!(
            edit(&v, &req("main", "main", false)).unwrap_err().code(),
            "INVALID_INPUT"
        );
    }

    #[test]
    fn crlf_files_match_lf_old_text_and_keep_crlf() {
        let (dir, v) = setup("a\r\nb\r\nc\r\n");
        edit(&v, &req("a\nb\n", "a\nB\n", false)).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
            "a\r\nB\r\nc\r\n"
        );
    }

    #[test]
    fn missing_binary_and_outside_files_are_refused() {
        let (dir, v) = setup("x");
        let missing = EditRequest {
            path: "nope.rs".into(),
            ..req("a", "b", false)
        };
        assert_eq!(edit(&v, &missing).unwrap_err().code(), "FILE_NOT_FOUND");
        std::fs::write(dir.path().join("bin"), b"\xff\xfe\x00a").unwrap();
        let binary = EditRequest {
            path: "bin".into(),
            ..req("a", "b", false)
        };
        assert_eq!(edit(&v, &binary).unwrap_err().code(), "INVALID_INPUT");
        let outside = EditRequest {
            path: "../f.rs".into(),
            ..req("a", "b", false)
        };
        assert_eq!(edit(&v, &outside).unwrap_err().code(), "PATH_OUTSIDE_ROOT");
    }

    #[test]
    fn large_diffs_are_capped_with_a_marker() {
        let old: String = (0..5000).map(|i| format!("{i}\n")).collect();
        let new: String = (0..5000).map(|i| format!("{i}!\n")).collect();
        let diff = unified_diff(&old, &new, "x");
        assert!(diff.lines().count() <= 2001);
        assert!(
            diff.contains("[diff truncated:"),
            "{}",
            &diff[diff.len() - 200..]
        );
    }
}
