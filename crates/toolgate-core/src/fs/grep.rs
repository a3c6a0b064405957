//! `grep_search`: regex search over a tree, in process, with ripgrep's own crates.
//!
//! The pattern is handed to `grep-regex` as a value, so nothing in it can ever be read as an
//! option (`--pre=sh` is a pattern like any other). Files are searched while the parallel walk
//! finds them (as ripgrep does); the output keeps only the first files in path order that fill
//! `max_results`, so it is the same on every run and memory stays bounded, while every other
//! match is still counted for the truncation marker.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::WalkState;

use super::access::{Access, HeldBack, WalkFilter};
use super::glob::search_base;
use super::pattern::{check_glob, check_max_results, regex_matcher};
use super::special;
use super::text::{display_line, plural, CappedText};
use super::walk::{threads, walker, Cancel, WalkOptions};
use crate::error::{Error, Result};
use crate::limits::{MAX_GREP_CONTEXT, MAX_GREP_FILTERS, MAX_MATCH_LINE_BYTES};
use crate::path::PathValidator;

/// What to search for.
#[derive(Debug, Clone, Default)]
pub struct GrepRequest {
    /// A regular expression (Rust regex syntax, as ripgrep uses); a pattern that starts with
    /// `-` is still a pattern.
    pub pattern: String,
    /// File or directory to search (default: the root).
    pub path: Option<String>,
    /// Only files matching one of these globs (`*.ts`, `src/**/*.rs`), as `rg --glob`.
    pub include: Vec<String>,
    /// Leave out files and directories matching these globs.
    pub exclude: Vec<String>,
    /// Lines of context before and after each match.
    pub context: usize,
    /// Matching lines to show at most.
    pub max_results: usize,
    pub ignore_case: bool,
}

/// What was found.
#[derive(Debug, Clone)]
pub struct GrepOutput {
    /// `path:line:text` for matches, `path-line-text` for context, `--` between groups, and a
    /// final marker when something was left out (or a note when nothing matched).
    pub text: String,
    /// Matching lines in all (shown or not).
    pub total_matches: u64,
    /// Files with at least one match.
    pub files_with_matches: u64,
    pub truncated: bool,
}

/// Searches the files below `path` for `pattern`.
///
/// With path rules, blocked files are never searched, a blocked search path is refused, and
/// files that need a stricter approval than the call had are left out with a note saying so.
pub fn grep<'a>(
    access: impl Into<Access<'a>>,
    request: &GrepRequest,
    cancel: &Cancel,
) -> Result<GrepOutput> {
    let access = access.into();
    let validator = access.validator();
    check_max_results(request.max_results)?;
    if request.context > MAX_GREP_CONTEXT {
        return Err(Error::InvalidInput(format!(
            "context is {}; at most {MAX_GREP_CONTEXT} lines of context are shown",
            request.context
        )));
    }
    check_filters("include", &request.include)?;
    check_filters("exclude", &request.exclude)?;
    let matcher = regex_matcher(&request.pattern, request.ignore_case)?;
    let results = Mutex::new(Results::new(request.max_results as u64));
    let (absolute, level) = access.target(request.path.as_deref().unwrap_or("."))?;
    let filter = access.walk_filter(level);
    let filter = filter.as_ref();
    if absolute.is_file() {
        // Reached through the validator: symlinks on the way stay inside the root.
        Worker::new(validator, request, &matcher, &results, filter).search(&absolute);
    } else {
        let base = search_base(access, request.path.as_deref())?;
        let builder = walk_builder(access, request, &base)?;
        builder.build_parallel().run(|| {
            let mut worker = Worker::new(validator, request, &matcher, &results, filter);
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                if let Ok(entry) = entry {
                    // Symlinks are not followed (as ripgrep does by default).
                    if entry.file_type().is_some_and(|t| t.is_file()) {
                        worker.search(entry.path());
                    }
                }
                WalkState::Continue
            })
        });
    }
    cancel.check("grep_search")?;
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(results.finish(request))
}

/// The include/exclude globs: at most [`MAX_GREP_FILTERS`] each, each within the glob limits.
fn check_filters(field: &str, globs: &[String]) -> Result<()> {
    if globs.len() > MAX_GREP_FILTERS {
        return Err(Error::InvalidInput(format!(
            "{field} has {} globs; at most {MAX_GREP_FILTERS} are accepted. Combine them with {{a,b}} alternatives or search a narrower path",
            globs.len()
        )));
    }
    globs
        .iter()
        .try_for_each(|glob| check_glob(&format!("{field} glob"), glob))
}

/// The shared walker with the request's include/exclude globs (ripgrep's `--glob` semantics).
fn walk_builder(
    access: Access<'_>,
    request: &GrepRequest,
    base: &Path,
) -> Result<ignore::WalkBuilder> {
    let mut builder = walker(access, base, WalkOptions::default());
    builder.threads(threads());
    if !request.include.is_empty() || !request.exclude.is_empty() {
        let mut overrides = OverrideBuilder::new(base);
        for glob in &request.include {
            overrides
                .add(glob)
                .map_err(|err| bad_glob("include", glob, &err))?;
        }
        for glob in &request.exclude {
            overrides
                .add(&format!("!{glob}"))
                .map_err(|err| bad_glob("exclude", glob, &err))?;
        }
        let overrides = overrides
            .build()
            .map_err(|err| bad_glob("include/exclude", "", &err))?;
        builder.overrides(overrides);
    }
    Ok(builder)
}

fn bad_glob(field: &str, glob: &str, err: &ignore::Error) -> Error {
    Error::InvalidInput(format!("{field} glob '{glob}' is not valid: {err}"))
}

/// One output line of a file's results.
enum Line {
    Match(String),
    Context(String),
    Break,
}

/// The results of one file: every matching line counted, the first ones kept as text.
#[derive(Default)]
struct FileResult {
    matches: u64,
    /// Matching lines kept in `lines`.
    kept: u64,
    lines: Vec<Line>,
}

/// Collects a file's results; `keep` is how many matching lines to keep as text.
struct FileSink<'a> {
    validator: &'a PathValidator,
    path: &'a Path,
    /// The path as shown (relative to the root), made at the first match.
    shown: Option<String>,
    keep: u64,
    result: FileResult,
}

impl FileSink<'_> {
    fn keeping(&self) -> bool {
        self.result.matches <= self.keep && self.keep > 0
    }

    fn shown(&mut self) -> &str {
        let (validator, path) = (self.validator, self.path);
        self.shown
            .get_or_insert_with(|| validator.relative(path).display().to_string())
    }

    fn push(&mut self, separator: char, line: Option<u64>, bytes: &[u8], matched: bool) {
        let text = display_line(trim_newline(bytes), MAX_MATCH_LINE_BYTES);
        let line = line.unwrap_or(0);
        let formatted = format!("{}{separator}{line}{separator}{text}", self.shown());
        self.result.lines.push(if matched {
            self.result.kept += 1;
            Line::Match(formatted)
        } else {
            Line::Context(formatted)
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> std::io::Result<bool> {
        self.result.matches += 1;
        if self.keeping() {
            self.push(':', found.line_number(), found.bytes(), true);
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> std::io::Result<bool> {
        if self.keeping() {
            self.push('-', context.line_number(), context.bytes(), false);
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> std::io::Result<bool> {
        if self.keeping() {
            self.result.lines.push(Line::Break);
        }
        Ok(true)
    }
}

fn trim_newline(bytes: &[u8]) -> &[u8] {
    bytes.strip_suffix(b"\n").unwrap_or(bytes)
}

/// A search thread: its own searchers, the shared matcher and results.
struct Worker<'a> {
    validator: &'a PathValidator,
    /// Path rules: files needing more approval than the call had are not searched.
    filter: Option<&'a WalkFilter>,
    matcher: &'a RegexMatcher,
    results: &'a Mutex<Results>,
    max_results: u64,
    /// Line numbers and context, for files whose lines may be shown.
    showing: Searcher,
    /// No context, for files that can only be counted.
    counting: Searcher,
}

impl<'a> Worker<'a> {
    fn new(
        validator: &'a PathValidator,
        request: &GrepRequest,
        matcher: &'a RegexMatcher,
        results: &'a Mutex<Results>,
        filter: Option<&'a WalkFilter>,
    ) -> Self {
        let showing = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(request.context)
            .after_context(request.context)
            .build();
        let counting = SearcherBuilder::new()
            .line_number(false)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        Self {
            validator,
            filter,
            matcher,
            results,
            max_results: request.max_results as u64,
            showing,
            counting,
        }
    }

    fn search(&mut self, path: &Path) {
        if let Some(decided) = self.filter.and_then(|filter| filter.held_back(path)) {
            lock(self.results).held_back.add(&decided);
            return;
        }
        let show = lock(self.results).may_show(path);
        let mut sink = FileSink {
            validator: self.validator,
            path,
            shown: None,
            keep: if show { self.max_results } else { 0 },
            result: FileResult::default(),
        };
        let searcher = if show {
            &mut self.showing
        } else {
            &mut self.counting
        };
        // A file swapped for a symlink after the walk is skipped, not followed; one swapped for
        // a FIFO, socket or device is opened without blocking and skipped, never read.
        let filter = self.filter;
        let outcome = special::open_regular_path(path).and_then(|file| match file {
            // The same file as a hidden one (a hard link) is judged on the opened descriptor.
            Some(file) if filter.is_some_and(|filter| filter.hides_open(path, &file)) => Ok(()),
            Some(file) => searcher.search_file(self.matcher, &file, &mut sink),
            None => Ok(()),
        });
        // Unreadable files are skipped, as ripgrep does (it reports them on stderr).
        if outcome.is_ok() && sink.result.matches > 0 {
            lock(self.results).add(path.to_path_buf(), sink.result);
        }
    }
}

fn lock(results: &Mutex<Results>) -> std::sync::MutexGuard<'_, Results> {
    results.lock().unwrap_or_else(|e| e.into_inner())
}

/// The first files in path order whose kept matches fill `max`, and counts of everything.
struct Results {
    max: u64,
    kept: BTreeMap<PathBuf, FileResult>,
    kept_matches: u64,
    total: u64,
    files_with_matches: u64,
    /// Files not searched because they need approval.
    held_back: HeldBack,
}

impl Results {
    fn new(max: u64) -> Self {
        Self {
            max,
            kept: BTreeMap::new(),
            kept_matches: 0,
            total: 0,
            files_with_matches: 0,
            held_back: HeldBack::default(),
        }
    }

    /// Whether a file at `path` could still appear in the output (otherwise it is only counted).
    fn may_show(&self, path: &Path) -> bool {
        self.kept_matches < self.max
            || self
                .kept
                .last_key_value()
                .is_some_and(|(last, _)| path < last.as_path())
    }

    fn add(&mut self, path: PathBuf, result: FileResult) {
        self.total += result.matches;
        self.files_with_matches += 1;
        if result.kept == 0 || !self.may_show(&path) {
            return;
        }
        self.kept_matches += result.kept;
        self.kept.insert(path, result);
        // Drop the last file while the ones before it already fill the output.
        while let Some((_, last)) = self.kept.last_key_value() {
            if self.kept_matches - last.kept < self.max {
                break;
            }
            self.kept_matches -= last.kept;
            self.kept.pop_last();
        }
    }

    fn finish(self, request: &GrepRequest) -> GrepOutput {
        let mut out = CappedText::with_defaults();
        let mut shown = 0u64;
        'files: for (index, result) in self.kept.into_values().enumerate() {
            if request.context > 0 && index > 0 && !out.push_line("--") {
                break;
            }
            for line in result.lines {
                let pushed = match line {
                    Line::Match(text) => {
                        if shown == self.max {
                            break 'files;
                        }
                        let pushed = out.push_line(&text);
                        shown += u64::from(pushed);
                        pushed
                    }
                    Line::Context(text) => out.push_line(&text),
                    Line::Break => out.push_line("--"),
                };
                if !pushed {
                    break 'files;
                }
            }
        }
        let truncated = self.total > shown;
        let marker = if self.total == 0 {
            Some(format!(
                "No matches for /{}/ in '{}'{}.",
                request.pattern,
                request.path.as_deref().unwrap_or("."),
                if request.ignore_case {
                    " (ignoring case)"
                } else {
                    ""
                }
            ))
        } else if truncated {
            Some(format!(
                "[truncated: showed {shown} of {} in {}; {} not shown. Narrow the pattern, set path or include, or raise max_results]",
                plural(self.total, "matching line", "matching lines"),
                plural(self.files_with_matches, "file", "files"),
                self.total - shown
            ))
        } else {
            None
        };
        let marker = match (marker, self.held_back.note()) {
            (Some(marker), Some(note)) => Some(format!("{marker}\n{note}")),
            (marker, note) => marker.or(note),
        };
        GrepOutput {
            text: out.finish(marker),
            total_matches: self.total,
            files_with_matches: self.files_with_matches,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("src/a.rs", "fn alpha() {}\nlet x = 1;\nfn beta() {}\n"),
            ("src/b.rs", "// TODO: one\nfn gamma() {}\n"),
            ("src/c.ts", "const y = '--pre=sh';\nconst z = '--files';\n"),
            ("node_modules/m/i.js", "fn alpha() {}\n"),
            ("build/out.rs", "fn alpha() {}\n"),
            ("ignored.rs", "fn alpha() {}\n"),
            (".hidden/h.rs", "fn alpha() {}\n"),
        ];
        for (name, body) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "ignored.rs\n").unwrap();
        std::fs::write(dir.path().join("bin.dat"), b"fn alpha\0\x01\x02").unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    fn request(pattern: &str) -> GrepRequest {
        GrepRequest {
            pattern: pattern.into(),
            max_results: 50,
            ..GrepRequest::default()
        }
    }

    fn run(v: &PathValidator, request: &GrepRequest) -> GrepOutput {
        grep(v, request, &Cancel::default()).unwrap()
    }

    #[test]
    fn matches_are_path_line_text_in_path_order_with_skip_rules() {
        let (_dir, v) = setup();
        let out = run(&v, &request(r"fn \w+\(\)"));
        assert_eq!(
            out.text,
            "src/a.rs:1:fn alpha() {}\nsrc/a.rs:3:fn beta() {}\nsrc/b.rs:2:fn gamma() {}\n"
        );
        assert_eq!((out.total_matches, out.files_with_matches), (3, 2));
    }

    #[test]
    fn context_lines_use_dashes_and_groups_are_separated() {
        let (_dir, v) = setup();
        let out = run(
            &v,
            &GrepRequest {
                context: 1,
                ..request("fn (alpha|gamma)")
            },
        );
        assert_eq!(
            out.text,
            "src/a.rs:1:fn alpha() {}\nsrc/a.rs-2-let x = 1;\n--\nsrc/b.rs-1-// TODO: one\nsrc/b.rs:2:fn gamma() {}\n"
        );
        let body: String = (1..=20)
            .map(|i| {
                if i == 3 || i == 15 {
                    "hit\n".to_string()
                } else {
                    format!("l{i}\n")
                }
            })
            .collect();
        std::fs::write(v.root().join("src/gap.txt"), body).unwrap();
        let out = run(
            &v,
            &GrepRequest {
                context: 1,
                path: Some("src/gap.txt".into()),
                ..request("hit")
            },
        );
        assert_eq!(
            out.text,
            "src/gap.txt-2-l2\nsrc/gap.txt:3:hit\nsrc/gap.txt-4-l4\n--\nsrc/gap.txt-14-l14\nsrc/gap.txt:15:hit\nsrc/gap.txt-16-l16\n"
        );
    }

    #[test]
    fn option_like_patterns_are_searched_literally() {
        let (_dir, v) = setup();
        assert_eq!(
            run(&v, &request("--pre=sh")).text,
            "src/c.ts:1:const y = '--pre=sh';\n"
        );
        assert_eq!(
            run(&v, &request("--files")).text,
            "src/c.ts:2:const z = '--files';\n"
        );
        let none = run(&v, &request("-e"));
        assert_eq!(none.total_matches, 0);
        assert!(
            none.text.starts_with("No matches for /-e/"),
            "{}",
            none.text
        );
    }

    #[test]
    fn include_exclude_ignore_case_and_limits() {
        let (_dir, v) = setup();
        let ts = run(
            &v,
            &GrepRequest {
                include: vec!["*.ts".into()],
                ..request("const")
            },
        );
        assert_eq!(ts.total_matches, 2);
        let no_b = run(
            &v,
            &GrepRequest {
                exclude: vec!["b.rs".into()],
                ..request("fn")
            },
        );
        assert!(!no_b.text.contains("b.rs"), "{}", no_b.text);
        let upper = run(
            &v,
            &GrepRequest {
                ignore_case: true,
                ..request("FN ALPHA")
            },
        );
        assert_eq!(upper.total_matches, 1);
        let capped = run(
            &v,
            &GrepRequest {
                max_results: 2,
                ..request("fn")
            },
        );
        assert_eq!(
            capped
                .text
                .lines()
                .filter(|l| l.starts_with("src/"))
                .count(),
            2
        );
        assert!(capped.truncated);
        assert!(
            capped
                .text
                .contains("[truncated: showed 2 of 3 matching lines in 2 files; 1 not shown."),
            "{}",
            capped.text
        );
    }

    #[test]
    fn bad_regexes_and_escapes_are_refused() {
        let (dir, v) = setup();
        let err = grep(&v, &request("fn ("), &Cancel::default()).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("unclosed group"), "{err}");
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.rs"), "fn alpha() {}\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.rs"), dir.path().join("leak.rs"))
            .unwrap();
        for path in ["..", "out", "leak.rs", "/etc", "src/../.."] {
            let err = grep(
                &v,
                &GrepRequest {
                    path: Some(path.into()),
                    ..request("alpha")
                },
                &Cancel::default(),
            )
            .unwrap_err();
            assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{path}");
        }
        // The walk from the root does not follow either link.
        let all = run(&v, &request("alpha"));
        assert_eq!(all.text, "src/a.rs:1:fn alpha() {}\n");
    }

    #[test]
    fn oversized_and_pathological_inputs_are_refused_before_the_search() {
        let (_dir, v) = setup();
        let started = std::time::Instant::now();
        let refused = |request: GrepRequest, says: &str| {
            let err = grep(&v, &request, &Cancel::default()).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT", "{err}");
            assert!(err.to_string().contains(says), "{err}");
        };
        refused(request(&"a".repeat(400_000)), "at most 8192 bytes");
        refused(request("a{1000}{1000}"), "too complex");
        refused(
            request(&format!("{}x{}", "(".repeat(5000), ")".repeat(5000))),
            "at most",
        );
        refused(request("fn\0\0"), "NUL");
        let with = |include: Vec<String>, exclude: Vec<String>| GrepRequest {
            include,
            exclude,
            ..request("alpha")
        };
        refused(
            with(vec!["a".repeat(400_000)], vec![]),
            "include glob is 400000 bytes",
        );
        refused(with(vec![], vec!["*\0.rs\0".into()]), "exclude glob");
        let braces = format!("{}rs{}", "{a,".repeat(1000), "}".repeat(1000));
        refused(with(vec![braces], vec![]), "more than 10 deep");
        refused(with(vec!["*.rs".into(); 101], vec![]), "at most 100");
        for max_results in [0, 2001, usize::MAX] {
            refused(
                GrepRequest {
                    max_results,
                    ..request("alpha")
                },
                "from 1 to 2000",
            );
        }
        refused(
            GrepRequest {
                context: usize::MAX,
                ..request("alpha")
            },
            "at most 20",
        );
        // Generous: these are refused in milliseconds; a hang or a compile of seconds fails.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn odd_patterns_and_filters_are_answered_not_panicked_on() {
        let (_dir, v) = setup();
        for pattern in [
            "(",
            ")",
            "[",
            "\\",
            "a{",
            "{1}",
            "(?P<",
            "\\p{Nope}",
            "x{2,1}",
            "^$",
            "(?i)",
            "é",
        ] {
            if let Err(err) = grep(&v, &request(pattern), &Cancel::default()) {
                assert_eq!(err.code(), "INVALID_INPUT", "{pattern}: {err}");
            }
        }
        for glob in ["", "!", "{", "[", "\\", "**", "!**", "/"] {
            let request = GrepRequest {
                include: vec![glob.into()],
                exclude: vec![glob.into()],
                ..request("alpha")
            };
            if let Err(err) = grep(&v, &request, &Cancel::default()) {
                assert_eq!(err.code(), "INVALID_INPUT", "{glob}: {err}");
            }
        }
    }

    #[test]
    fn a_cancelled_search_stops_with_an_error() {
        let (_dir, v) = setup();
        let cancel = Cancel::default();
        cancel.cancel();
        let err = grep(&v, &request("fn"), &cancel).unwrap_err();
        assert!(err.to_string().contains("cancelled"));
    }

    #[test]
    fn many_files_keep_path_order_and_count_past_the_limit() {
        let (dir, v) = setup();
        for i in 0..3000 {
            let sub = dir.path().join(format!("many/{:02}", i % 37));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(
                sub.join(format!("f{i:04}.txt")),
                format!("needle {i}\nhay\n"),
            )
            .unwrap();
        }
        let out = run(
            &v,
            &GrepRequest {
                path: Some("many".into()),
                max_results: 10,
                ..request("needle")
            },
        );
        assert_eq!(out.total_matches, 3000);
        let shown: Vec<&str> = out.text.lines().take(10).collect();
        let mut sorted = shown.clone();
        sorted.sort();
        assert_eq!(shown, sorted);
        assert!(
            shown[0].starts_with("many/00/f0000.txt:1:needle 0"),
            "{}",
            shown[0]
        );
        assert!(out.text.contains("2990 not shown"), "{}", out.text);
    }
}
