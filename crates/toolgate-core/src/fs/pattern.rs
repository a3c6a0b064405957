//! Model-supplied globs and regular expressions, checked against the limits in
//! [`crate::limits`] before globset or the regex engine sees them, and compiled so that a
//! pattern too big to compile is an error, never a panic.
//!
//! globset's `Glob::compile_matcher` panics when the regex it generates does not compile (a
//! 400,000-character glob did, aborting Node); its `{…}` nesting is translated recursively. So
//! globs are length- and nesting-checked first, and compiled through `GlobSet::build`, which
//! returns compilation errors instead of panicking.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};

use crate::error::{Error, Result};
use crate::limits::{
    MAX_GLOB_BRACE_DEPTH, MAX_GLOB_BYTES, MAX_REGEX_BYTES, MAX_REGEX_COMPILED_BYTES,
    MAX_REGEX_DFA_BYTES, MAX_REGEX_NESTING, MAX_SEARCH_RESULTS,
};

/// A compiled glob that cannot panic while matching.
#[derive(Debug, Clone)]
pub(crate) struct GlobPattern(GlobSet);

impl GlobPattern {
    /// Compiles a glob that [`check_glob`] accepted (or a part of one); `label` names it in
    /// errors, e.g. `pattern 'src/**/[.ts'`.
    pub fn compile(label: &str, glob: &str) -> Result<GlobPattern> {
        let parsed = parse_glob(glob).map_err(|reason| {
            Error::InvalidInput(format!("{label} is not a valid glob: {reason}"))
        })?;
        let set = GlobSetBuilder::new().add(parsed).build().map_err(|err| {
            Error::InvalidInput(format!(
                "{label} is too complex to match with ({}); use a simpler glob",
                first_line(&err.to_string())
            ))
        })?;
        Ok(GlobPattern(set))
    }

    /// Like [`compile`](Self::compile), for a piece of an already checked glob; `None` when the piece is
    /// not a glob of its own (half of a `{a/b,c}` alternative, say).
    pub fn piece(glob: &str) -> Option<GlobPattern> {
        let parsed = parse_glob(glob).ok()?;
        GlobSetBuilder::new()
            .add(parsed)
            .build()
            .ok()
            .map(GlobPattern)
    }

    pub fn is_match(&self, path: impl AsRef<Path>) -> bool {
        self.0.is_match(path)
    }
}

fn parse_glob(glob: &str) -> std::result::Result<Glob, globset::ErrorKind> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| err.kind().clone())
}

/// Length, NUL and `{…}` nesting limits of a glob, checked before globset parses it.
pub(crate) fn check_glob(what: &str, glob: &str) -> Result<()> {
    if glob.len() > MAX_GLOB_BYTES {
        return Err(Error::InvalidInput(format!(
            "{what} is {} bytes long; a glob may have at most {MAX_GLOB_BYTES} bytes. Use a shorter glob (for example '**/*.ts') and narrow the search with path",
            glob.len()
        )));
    }
    if glob.contains('\0') {
        return Err(Error::InvalidInput(format!(
            "{} contains a NUL character, which no file path can contain; remove it",
            label(what, glob)
        )));
    }
    let mut depth = 0usize;
    let mut escaped = false;
    for c in glob.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '{' => {
                depth += 1;
                if depth > MAX_GLOB_BRACE_DEPTH {
                    return Err(Error::InvalidInput(format!(
                        "{} nests {{…}} alternatives more than {MAX_GLOB_BRACE_DEPTH} deep; flatten them (e.g. '{{a,b,c}}' instead of '{{a,{{b,{{c}}}}}}')",
                        label(what, glob)
                    )));
                }
            }
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Builds the grep matcher: the pattern's length and the regex engine's nesting, compiled-size
/// and DFA-cache limits are all bounded, so a pathological pattern fails to compile quickly.
pub(crate) fn regex_matcher(pattern: &str, ignore_case: bool) -> Result<RegexMatcher> {
    if pattern.is_empty() {
        return Err(Error::InvalidInput(
            "pattern is empty; give a regular expression to search for".into(),
        ));
    }
    if pattern.len() > MAX_REGEX_BYTES {
        return Err(Error::InvalidInput(format!(
            "pattern is {} bytes long; a regular expression may have at most {MAX_REGEX_BYTES} bytes. Search for a shorter, more specific pattern, or run several searches",
            pattern.len()
        )));
    }
    if pattern.contains('\0') {
        return Err(Error::InvalidInput(
            "pattern contains a NUL character; files containing NUL bytes are binary and never searched, so remove it".into(),
        ));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .nest_limit(MAX_REGEX_NESTING)
        .size_limit(MAX_REGEX_COMPILED_BYTES)
        .dfa_size_limit(MAX_REGEX_DFA_BYTES)
        .build(pattern)
        .map_err(|err| regex_error(pattern, &err.to_string()))
}

/// The regex engine's error, short: its `error:` line (its message also repeats the pattern
/// with a caret under the problem, which is only kept for short patterns).
fn regex_error(pattern: &str, message: &str) -> Error {
    let reason = message
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .unwrap_or_else(|| first_line(message));
    let lowered = reason.to_lowercase();
    if lowered.contains("size limit") || lowered.contains("nested") {
        return Error::InvalidInput(format!(
            "pattern is too complex to search with: {reason}. The limits are {MAX_REGEX_NESTING} levels of nesting and {} MiB compiled; use fewer or smaller counted repetitions such as {{1000}}, or a simpler pattern",
            MAX_REGEX_COMPILED_BYTES >> 20
        ));
    }
    let detail = if pattern.len() <= 200 {
        message
    } else {
        reason
    };
    Error::InvalidInput(format!(
        "pattern is not a valid regular expression: {detail}\nEscape special characters such as ( [ {{ . * + ? | \\ with a backslash to search for them literally"
    ))
}

/// `max_results` of a search: from 1 to [`MAX_SEARCH_RESULTS`].
pub(crate) fn check_max_results(max_results: usize) -> Result<()> {
    if max_results == 0 || max_results > MAX_SEARCH_RESULTS {
        return Err(Error::InvalidInput(format!(
            "max_results is {max_results}; it must be from 1 to {MAX_SEARCH_RESULTS} (the output shows at most {MAX_SEARCH_RESULTS} lines). Narrow the search to see other results"
        )));
    }
    Ok(())
}

/// `pattern 'src/*.ts'`: a field and its glob (cut to 200 characters) for messages.
pub(crate) fn label(what: &str, glob: &str) -> String {
    format!("{what} '{}'", shown(glob))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// A glob as shown in messages: at most 200 characters.
fn shown(glob: &str) -> String {
    match glob.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &glob[..cut]),
        None => glob.to_string(),
    }
}

/// The components of a glob, without empty and `.` ones.
pub(crate) fn components(pattern: &str) -> Vec<&str> {
    pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// How many of `components` are the literal directories the glob starts with (never the last).
pub(crate) fn literal_components(components: &[&str]) -> usize {
    components
        .iter()
        .take(components.len().saturating_sub(1))
        .take_while(|c| !c.contains(['*', '?', '[', ']', '{', '}', '\\']))
        .count()
}

/// The literal directories `pattern` starts with (`src/lib` of `src/lib/**/*.ts`): the
/// directory its walk starts from, below the search path. `None` when it starts with a
/// wildcard.
pub(crate) fn literal_prefix(pattern: &str) -> Option<PathBuf> {
    let components = components(pattern);
    let literal = literal_components(&components);
    (literal > 0).then(|| components[..literal].iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Generous: these fail in milliseconds; what this catches (a pattern compiled or matched
    /// exponentially) takes minutes. A loaded machine running a debug build (a full test run
    /// beside other work) once took over 5 s here.
    const FAST: Duration = Duration::from_secs(30);

    /// What glob_search does with its pattern.
    fn compile(glob: &str) -> Result<GlobPattern> {
        check_glob("pattern", glob)?;
        GlobPattern::compile(&label("pattern", glob), glob)
    }

    fn timed<T>(run: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = run();
        assert!(started.elapsed() < FAST, "took {:?}", started.elapsed());
        out
    }

    fn glob_error(glob: &str) -> String {
        let err = timed(|| compile(glob)).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{err}");
        err.to_string()
    }

    #[test]
    fn huge_empty_nul_and_deeply_nested_globs_are_refused_quickly() {
        assert!(glob_error(&"a".repeat(400_000)).contains("at most 4096 bytes"));
        assert!(glob_error(&"a**".repeat(10_000)).contains("at most 4096 bytes"));
        assert!(glob_error("src/\0.ts").contains("NUL"));
        let braces = |depth: usize| format!("{}z{}", "{a,".repeat(depth), "}".repeat(depth));
        for depth in [11, 100, 1000] {
            assert!(
                glob_error(&braces(depth)).contains("more than 10 deep"),
                "{depth}"
            );
        }
        // Escaped braces are literal characters, not nesting.
        assert!(compile(&"\\{".repeat(50)).is_ok());
        assert!(compile(&braces(10)).is_ok());
        assert!(glob_error("src/[").contains("not a valid glob"));
        // Shown patterns are cut, so an error is never 400 KB long.
        assert!(glob_error(&format!("{}\0", "b".repeat(4000))).len() < 400);
    }

    #[test]
    fn the_largest_allowed_globs_compile_or_fail_quickly() {
        for glob in [
            "a**".repeat(1365),
            "*?".repeat(2048),
            "[a-z]".repeat(819),
            "{a,b,c,d,e,f,g,h}".repeat(240),
            format!("{}z{}", "{a,".repeat(10), "}".repeat(10)).repeat(100),
            "**/".repeat(1365),
        ] {
            let compiled = timed(|| compile(&glob));
            if let Err(err) = compiled {
                assert_eq!(err.code(), "INVALID_INPUT", "{err}");
            }
        }
        // Matching stays cheap on ordinary paths (a path as long as the glob takes milliseconds).
        let matcher = compile(&"a*".repeat(2000)).unwrap();
        assert!(!timed(|| matcher.is_match("a".repeat(200) + "b")));
    }

    #[test]
    fn pathological_regexes_fail_quickly_with_the_limit() {
        let error = |pattern: &str| {
            let err = timed(|| regex_matcher(pattern, false)).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{pattern:.40}: {err}");
            err.to_string()
        };
        assert!(error("").contains("empty"));
        assert!(error(&"a".repeat(400_000)).contains("at most 8192 bytes"));
        assert!(error("a\0b").contains("NUL"));
        assert!(error("a{1000}{1000}").contains("too complex"));
        assert!(error("(?:a{100}){100}{100}").contains("too complex"));
        assert!(error(r"\w{500}{50}").contains("too complex"));
        let nested = format!("{}a{}", "(".repeat(4000), ")".repeat(4000));
        assert!(error(&nested).contains("too complex"));
        assert!(error(&format!("{}a{}", "[".repeat(200), "]".repeat(200))).contains("too complex"));
        assert!(
            error(&format!("{}a{}", "(?:".repeat(101), ")".repeat(101))).contains("too complex")
        );
        assert!(error("(unclosed").contains("not a valid regular expression"));
        // A long invalid pattern is not echoed back whole.
        let long_invalid = format!("{}(", "a".repeat(8000));
        assert!(error(&long_invalid).len() < 400);
        // Large but reasonable patterns still work.
        let names: Vec<String> = (0..500).map(|i| format!("ident{i}")).collect();
        assert!(timed(|| regex_matcher(&names.join("|"), true)).is_ok());
        assert!(timed(|| regex_matcher("a{1000}", false)).is_ok());
    }

    #[test]
    fn max_results_has_both_bounds() {
        assert!(check_max_results(1).is_ok());
        assert!(check_max_results(MAX_SEARCH_RESULTS).is_ok());
        for bad in [0, MAX_SEARCH_RESULTS + 1, usize::MAX] {
            let err = check_max_results(bad).unwrap_err();
            assert!(err.to_string().contains("from 1 to 2000"), "{err}");
        }
    }
}
