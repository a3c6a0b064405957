//! YAML parsing for worker files and `tool.yaml` manifests, with a nesting limit.
//!
//! libyaml (which serde_yaml uses) takes time quadratic in the nesting of flow collections: a
//! document of 16k nested `[` took 1.3 s and 50k over 30 s, while serde_yaml would refuse it
//! only afterwards ("recursion limit exceeded", at 128 levels). A repository's `toolgate-tools`
//! could stall discovery that way. So the text first goes through libyaml's event parser, which
//! stops at the first collection nested deeper than [`MAX_YAML_DEPTH`]: the parser then holds
//! at most that many levels plus the 1024 characters it looks ahead, so the check costs
//! milliseconds whatever the input. Only a document that passes reaches serde_yaml.
//!
//! The check counts what YAML itself counts, so it cannot be fooled by brackets inside quoted
//! strings, comments or block scalars (a hand-written bracket counter can). Syntax errors are
//! left to serde_yaml, whose messages say more.
//!
//! Alias expansion ("billion laughs") needs no check here: serde_yaml refuses a document whose
//! aliases expand past its own repetition limit.

use std::fmt;
use std::mem::MaybeUninit;

use serde::de::DeserializeOwned;

use crate::limits::MAX_YAML_DEPTH;

/// Why a YAML text was refused.
#[derive(Debug)]
pub enum YamlError {
    /// A collection is nested more than [`MAX_YAML_DEPTH`] levels deep; where it starts (from 1).
    TooDeep { line: usize, column: usize },
    /// serde_yaml's error: bad syntax, or a value of the wrong shape.
    Invalid(serde_yaml::Error),
}

impl YamlError {
    /// Line and column (from 1) of the problem, when known.
    pub fn location(&self) -> Option<(usize, usize)> {
        match self {
            YamlError::TooDeep { line, column } => Some((*line, *column)),
            YamlError::Invalid(err) => err.location().map(|at| (at.line(), at.column())),
        }
    }
}

impl fmt::Display for YamlError {
    /// Like serde_yaml's messages, the location comes last (`... at line 3 column 5`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YamlError::TooDeep { line, column } => write!(
                f,
                "YAML nested more than {MAX_YAML_DEPTH} levels deep is refused (sequences and mappings count alike, written with [ and {{ or by indentation); flatten the structure at line {line} column {column}"
            ),
            YamlError::Invalid(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for YamlError {}

/// Parses `text` as one YAML document into `T`, refusing nesting deeper than
/// [`MAX_YAML_DEPTH`] before serde_yaml sees it.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    if let Some((line, column)) = first_too_deep(text, MAX_YAML_DEPTH) {
        return Err(YamlError::TooDeep { line, column });
    }
    serde_yaml::from_str(text).map_err(YamlError::Invalid)
}

/// Where (line, column from 1) each item of the sequences held by the top-level mapping starts,
/// in document order: for `rules: [a, b]` the places of `a` and `b`. Lets a reader that checks
/// items after serde_yaml name the line of the item at fault. Empty after a syntax error.
pub fn top_sequence_item_places(text: &str) -> Vec<(usize, usize)> {
    use unsafe_libyaml::{
        YAML_ALIAS_EVENT, YAML_MAPPING_END_EVENT, YAML_MAPPING_START_EVENT, YAML_SCALAR_EVENT,
        YAML_SEQUENCE_END_EVENT, YAML_SEQUENCE_START_EVENT, YAML_STREAM_END_EVENT,
    };
    let Some(mut parser) = Parser::new(text) else {
        return Vec::new();
    };
    // The kinds of the open collections, outermost first (true: a sequence).
    let mut open: Vec<bool> = Vec::new();
    let mut places = Vec::new();
    while let Some(event) = parser.next() {
        let is_item_start = matches!(
            event.kind,
            YAML_MAPPING_START_EVENT
                | YAML_SEQUENCE_START_EVENT
                | YAML_SCALAR_EVENT
                | YAML_ALIAS_EVENT
        );
        // An item of a sequence that is a value of the top-level mapping: [mapping, sequence].
        if is_item_start && open == [false, true] {
            places.push((event.line + 1, event.column + 1));
        }
        match event.kind {
            YAML_MAPPING_START_EVENT => open.push(false),
            YAML_SEQUENCE_START_EVENT => open.push(true),
            YAML_MAPPING_END_EVENT | YAML_SEQUENCE_END_EVENT => {
                open.pop();
            }
            YAML_STREAM_END_EVENT => break,
            _ => {}
        }
    }
    places
}

/// Where (line, column from 1) the first collection nested deeper than `limit` starts, if any.
/// Stops at the first syntax error (serde_yaml reports it).
fn first_too_deep(text: &str, limit: usize) -> Option<(usize, usize)> {
    let mut parser = Parser::new(text)?;
    let mut depth = 0usize;
    while let Some(event) = parser.next() {
        match event.kind {
            unsafe_libyaml::YAML_SEQUENCE_START_EVENT
            | unsafe_libyaml::YAML_MAPPING_START_EVENT => {
                depth += 1;
                if depth > limit {
                    return Some((event.line + 1, event.column + 1));
                }
            }
            unsafe_libyaml::YAML_SEQUENCE_END_EVENT | unsafe_libyaml::YAML_MAPPING_END_EVENT => {
                depth = depth.saturating_sub(1);
            }
            unsafe_libyaml::YAML_STREAM_END_EVENT => return None,
            _ => {}
        }
    }
    None
}

/// An event's kind and where it starts (from 0).
struct Event {
    kind: unsafe_libyaml::yaml_event_type_t,
    line: usize,
    column: usize,
}

/// libyaml's event parser over a borrowed text. The parser lives in a `Box` because libyaml
/// keeps pointers into it (its input buffer) between calls, so it must not move.
struct Parser<'text> {
    parser: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>>,
    _text: std::marker::PhantomData<&'text str>,
}

impl<'text> Parser<'text> {
    fn new(text: &'text str) -> Option<Parser<'text>> {
        let mut parser = Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit());
        // SAFETY: `parser` points to writable memory for a parser, which `yaml_parser_initialize`
        // initialises; on failure it is left uninitialised and never used (nothing to free).
        // The input pointer stays valid while the parser exists: the parser borrows `text` for
        // `'text`, and is deleted in `drop`.
        unsafe {
            if unsafe_libyaml::yaml_parser_initialize(parser.as_mut_ptr()).fail {
                return None;
            }
            unsafe_libyaml::yaml_parser_set_input_string(
                parser.as_mut_ptr(),
                text.as_ptr(),
                text.len() as u64,
            );
        }
        Some(Parser {
            parser,
            _text: std::marker::PhantomData,
        })
    }

    /// The next event, or `None` after a syntax error.
    fn next(&mut self) -> Option<Event> {
        let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; `yaml_parser_parse` initialises `event`
        // when it succeeds, and only then is it read and deleted (freeing what it owns).
        unsafe {
            if unsafe_libyaml::yaml_parser_parse(self.parser.as_mut_ptr(), event.as_mut_ptr()).fail
            {
                return None;
            }
            let event = event.assume_init_mut();
            let next = Event {
                kind: event.type_,
                line: event.start_mark.line as usize,
                column: event.start_mark.column as usize,
            };
            unsafe_libyaml::yaml_event_delete(event);
            Some(next)
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: a `Parser` exists only once `yaml_parser_initialize` succeeded.
        unsafe { unsafe_libyaml::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Generous: the check takes milliseconds; without it 50k levels took over 30 seconds.
    const FAST: Duration = Duration::from_secs(5);

    fn nested(form: &str, depth: usize) -> String {
        match form {
            "flow sequence" => format!("key: {}{}\n", "[".repeat(depth), "]".repeat(depth)),
            "flow mapping" => format!("key: {}x{}\n", "{a: ".repeat(depth), "}".repeat(depth)),
            "flow, unclosed" => format!("key: {}", "[".repeat(depth)),
            "block sequence" => format!("key:\n{}x\n", "- ".repeat(depth)),
            "block mapping" => {
                let mut text = String::from("key:\n");
                for level in 1..=depth {
                    text.push_str(&" ".repeat(level));
                    text.push_str("a:\n");
                }
                text
            }
            _ => unreachable!(),
        }
    }

    fn refused(text: &str) -> YamlError {
        let started = Instant::now();
        let err = from_str::<serde_yaml::Value>(text).unwrap_err();
        assert!(started.elapsed() < FAST, "took {:?}", started.elapsed());
        err
    }

    #[test]
    fn deep_nesting_in_every_form_is_refused_quickly_with_its_place() {
        for form in [
            "flow sequence",
            "flow mapping",
            "flow, unclosed",
            "block sequence",
        ] {
            for depth in [101, 16_000, 50_000, 1_000_000] {
                let err = refused(&nested(form, depth));
                assert!(
                    matches!(err, YamlError::TooDeep { line: 1..=2, .. }),
                    "{form} {depth}: {err}"
                );
                let message = err.to_string();
                assert!(message.contains("more than 100 levels"), "{message}");
                assert!(message.contains(" at line "), "{message}");
            }
        }
        // Indented mappings: 2,000 levels is already 2 MB of indentation.
        for depth in [101, 2_000] {
            let err = refused(&nested("block mapping", depth));
            assert!(
                matches!(
                    err,
                    YamlError::TooDeep {
                        line: 101,
                        column: 101
                    }
                ),
                "{depth}: {err}"
            );
        }
    }

    #[test]
    fn nesting_up_to_the_limit_parses_and_brackets_in_text_do_not_count() {
        let depth = MAX_YAML_DEPTH - 1; // the top-level mapping is one level
        let value: serde_yaml::Value = from_str(&nested("flow sequence", depth)).unwrap();
        assert!(value.get("key").is_some());
        let text = format!(
            "quoted: '{0}'\ndouble: \"{0}\"\nblock: |\n  {0}\n# {0}\nplain: a{0}\n",
            "[".repeat(50_000)
        );
        let value: serde_yaml::Value = from_str(&text).unwrap();
        assert_eq!(value["quoted"].as_str().unwrap().len(), 50_000);
    }

    #[test]
    fn syntax_errors_and_wrong_shapes_keep_serde_yaml_messages() {
        let err = from_str::<serde_yaml::Value>("a: [1, 2\nb: c\n").unwrap_err();
        assert!(matches!(err, YamlError::Invalid(_)), "{err}");
        assert!(err.location().is_some());
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Shape {
            name: String,
        }
        let err = from_str::<Shape>("name: [1]\n").unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }

    #[test]
    fn alias_bombs_are_refused_by_serde_yaml() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..=9 {
            let refs = vec![format!("*a{}", level - 1); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let started = Instant::now();
        let err = from_str::<serde_yaml::Value>(&text).unwrap_err();
        assert!(started.elapsed() < FAST, "took {:?}", started.elapsed());
        assert!(err.to_string().contains("repetition limit"), "{err}");
    }

    #[test]
    fn items_of_top_level_sequences_are_placed() {
        let text =
            "version: 1\nrules:\n  - a: 1\n    b: [x]\n  - plain\n  -\n    c: 2\nother: [p, q]\n";
        assert_eq!(
            top_sequence_item_places(text),
            vec![(3, 5), (5, 5), (7, 5), (8, 9), (8, 12)]
        );
        assert!(top_sequence_item_places("- a\n- b\n").is_empty());
    }
}
