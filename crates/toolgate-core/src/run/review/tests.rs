use super::*;
use serde_json::json;

fn shown(input: Value) -> String {
    review_input(&input).review
}

/// Nothing in a review moves the cursor, clears, recolours or reorders a terminal.
fn assert_safe(text: &str) {
    for c in text.chars() {
        assert!(
            c == '\n' || !(c.is_control() || invisible(c)),
            "U+{:04X} reached the review: {text:?}",
            c as u32
        );
    }
}

#[test]
fn inputs_are_shown_once_readably_without_json_escaping() {
    let text =
        shown(json!({ "path": "notes/a.txt", "content": "approved with a\nsecond \"line\"\n" }));
    assert_eq!(
        text,
        "path: notes/a.txt\ncontent: |\n  approved with a\n  second \"line\"\n"
    );
    let text = shown(
        json!({ "command": "git commit -m 'a b'", "timeout": 5, "dry": false, "n": "42", "e": "" }),
    );
    assert_eq!(
        text,
        "command: git commit -m 'a b'\ntimeout: 5\ndry: false\nn: \"42\"\ne: \"\""
    );
    let text = shown(json!({ "ops": [{ "action": "add", "path": "x" }, "y", []], "meta": {} }));
    assert_eq!(
        text,
        "ops:\n  -\n    action: add\n    path: x\n  - y\n  - []\nmeta: {}"
    );
    assert_eq!(shown(json!("just text")), "just text");
    assert_eq!(shown(json!(null)), "null");
}

#[test]
fn whitespace_padding_cannot_hide_what_follows() {
    let tail = ";import os;os.remove('x')";
    for (pad, mark) in [
        (" ".repeat(4100), "⟨4100 spaces⟩"),
        ("\t".repeat(300), "⟨300 tabs⟩"),
        ("\u{a0}".repeat(500), "⟨500 × U+00A0⟩"),
        ("\u{2028}".repeat(64), "⟨64 × U+2028⟩"),
        ("\u{3000}".repeat(9), "⟨9 × U+3000⟩"),
        ("\u{200b}".repeat(1000), "⟨1000 × U+200B⟩"),
        ("\r".repeat(3), "⟨3 × CR⟩"),
    ] {
        let command = format!("python3 -c \"print('hello'){pad}{tail}\"");
        let review = review_input(&json!({ "command": command }));
        assert!(review.reviewable);
        assert!(review.review.contains(mark), "{mark}: {}", review.review);
        assert!(review.review.contains(tail), "{mark}: {}", review.review);
        assert!(review.review.len() < 200, "{mark}: {}", review.review);
        assert_safe(&review.review);
    }
    // thousands of newlines in a text block are counted, and what follows is shown
    let content = format!("hello{}rm -rf /", "\n".repeat(5000));
    let review = shown(json!({ "content": content }));
    assert!(
        review.contains("⟨4999 empty lines⟩\n  rm -rf /"),
        "{review}"
    );
    // a short run of spaces inside a line and indentation stay as they are
    let review = shown(json!({ "content": "def f():\n    return  1\n" }));
    assert!(review.contains("\n      return  1"), "{review}");
    // spaces at the edges of a value are counted (they would be invisible)
    assert_eq!(shown(json!({ "a": " x " })), "a: ⟨1 space⟩x⟨1 space⟩");
    assert_eq!(shown(json!({ "a": "   " })), "a: ⟨3 spaces⟩");
    assert_eq!(shown(json!({ "a": "x\ny  " })), "a: |\n  x\n  y⟨2 spaces⟩");
}

#[test]
fn control_and_invisible_characters_are_named() {
    for (text, mark) in [
        (
            "\u{1b}]52;c;ZWNobyBoaQ==\u{7}",
            "⟨ESC⟩]52;c;ZWNobyBoaQ==⟨BEL⟩",
        ),
        ("\u{1b}[2J\u{1b}[H", "⟨ESC⟩[2J⟨ESC⟩[H"),
        ("\u{1b}]0;title\u{7}", "⟨ESC⟩]0;title⟨BEL⟩"),
        ("safe\u{202e}txt.exe", "safe⟨U+202E⟩txt.exe"),
        (
            "a\u{200d}b\u{2066}c\u{feff}d",
            "a⟨U+200D⟩b⟨U+2066⟩c⟨U+FEFF⟩d",
        ),
        ("\u{9b}2J", "⟨U+009B⟩2J"),
        ("del\u{7f}", "del⟨DEL⟩"),
        ("nul\u{0}", "nul⟨NUL⟩"),
        ("tag\u{e0041}", "tag⟨U+E0041⟩"),
        ("x\ry", "x⟨CR⟩y"),
    ] {
        let review = shown(json!({ "command": text }));
        assert_eq!(review, format!("command: {mark}"), "{text:?}");
        assert_safe(&review);
        // keys too
        let review = shown(json!({ text: 1 }));
        assert_safe(&review);
    }
    // a literal mark in the input cannot pass for one toolgate wrote
    assert_eq!(
        shown(json!({ "a": "⟨4100 spaces⟩" })),
        "a: ⟨U+27E8⟩4100 spaces⟨U+27E9⟩"
    );
    // lines of a block end with CR named
    assert_eq!(shown(json!({ "a": "x\r\ny" })), "a: |\n  x⟨CR⟩\n  y");
}

#[test]
fn inputs_too_long_to_review_say_so_with_size_and_digest() {
    let content = "a".repeat(MAX_REVIEW_BYTES + 10);
    let review = review_input(&json!({ "content": content, "tail": "os.remove" }));
    assert!(!review.reviewable);
    assert!(review.review.len() < MAX_REVIEW_BYTES + 400);
    assert!(
        review
            .review
            .contains(&format!("the input is {} bytes", review.input_bytes)),
        "{}",
        &review.review[review.review.len() - 300..]
    );
    assert!(review.review.contains(&review.input_sha256));
    assert!(review.review.contains("never for always"));
    assert_eq!(review.input_sha256.len(), 64);
    // control characters expand the display: the limit is on what is shown
    let review = review_input(&json!({ "c": "\u{1b}x".repeat(MAX_REVIEW_BYTES / 4) }));
    assert!(!review.reviewable);
    assert_safe(&review.review);
    // the digest is of the canonical JSON: key order does not change it
    let one = review_input(&json!({ "a": 1, "b": "x" }));
    let two = review_input(&serde_json::from_str::<Value>(r#"{"b":"x","a":1}"#).unwrap());
    assert_eq!(one.input_sha256, two.input_sha256);
    assert_eq!(one.input_bytes, r#"{"a":1,"b":"x"}"#.len());
    assert_eq!(
        one.input_sha256,
        sha256_hex(br#"{"a":1,"b":"x"}"#),
        "the digest of the canonical text"
    );
}

#[test]
fn inline_text_is_named_and_cut_with_a_count() {
    assert_eq!(inline("rm -rf build", 200), "rm -rf build");
    assert_eq!(inline("a\nb", 200), "a⟨LF⟩b");
    let long = format!("echo {}", "x".repeat(300));
    let shown = inline(&long, 100);
    assert!(shown.ends_with("⟨… 205 more characters⟩"), "{shown}");
    // a cut never leaves a mark half open
    let shown = inline(&format!("{}\u{1b}{}", "x".repeat(98), "y".repeat(50)), 100);
    assert!(!shown.contains("⟨E"), "{shown}");
    assert!(shown.ends_with("more characters⟩"), "{shown}");
    assert_safe(&inline("\u{1b}[2J\u{202e}", 10));
}
