//! `grep_search`: regex search over a tree, in process, with ripgrep's own crates.
//!
//! The pattern is handed to `grep-regex` as a value, so nothing in it can ever be read as an
//! option (`--pre=sh` is a pattern like any other). Files are walked with the shared skip
//! rules, then searched in parallel; results are put together in path order, so the output
//! is the same on every run.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::WalkState;

use super::glob::search_base;
use super::text::{display_line, plural, CappedText, MAX_MATCH_LINE_BYTES};
use super::walk::{threads, walker, Cancel, Collector, WalkOptions};
use crate::error::{Error, Result};
use crate::path::PathValidator;

/// Files searched ahead of the first one whose results are not yet in the output; bounds the
/// memory held by out-of-order results.
const WINDOW: usize = 1024;
/// Context lines allowed on each side of a match.
const MAX_CONTEXT: usize = 20;

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
pub fn grep(validator: &PathValidator, request: &GrepRequest, cancel: &Cancel) -> Result<GrepOutput> {
    if request.max_results == 0 {
        return Err(Error::InvalidInput("max_results must be at least 1".into()));
    }
    if request.context > MAX_CONTEXT {
        return Err(Error::InvalidInput(format!(
            "context is {}; at most {MAX_CONTEXT} lines of context are shown",
            request.context
        )));
    }
    let matcher = build_matcher(request)?;
    let files = files_to_search(validator, request, cancel)?;
    let search = Search {
        validator,
        request,
        matcher: &matcher,
        files: &files,
        cancel,
    };
    let collected = search.run()?;
    Ok(collected.finish(validator, request))
}

fn build_matcher(request: &GrepRequest) -> Result<RegexMatcher> {
    if request.pattern.is_empty() {
        return Err(Error::InvalidInput(
            "pattern is empty; give a regular expression to search for".into(),
        ));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(request.ignore_case)
        .line_terminator(Some(b'\n'))
        .build(&request.pattern)
        .map_err(|err| {
            Error::InvalidInput(format!(
                "pattern is not a valid regular expression: {err}\nEscape special characters such as ( [ {{ . * + ? | \\ with a backslash to search for them literally"
            ))
        })
}

/// Every regular file to search, in path order.
fn files_to_search(
    validator: &PathValidator,
    request: &GrepRequest,
    cancel: &Cancel,
) -> Result<Vec<PathBuf>> {
    let absolute = validator.resolve(request.path.as_deref().unwrap_or("."))?;
    if absolute.is_file() {
        // Reached through the validator: symlinks on the way stay inside the root.
        return Ok(vec![absolute]);
    }
    let base = search_base(validator, request.path.as_deref())?;
    let mut builder = walker(validator, &base, WalkOptions::default());
    if !request.include.is_empty() || !request.exclude.is_empty() {
        let mut overrides = OverrideBuilder::new(&base);
        for glob in &request.include {
            overrides.add(glob).map_err(|err| bad_glob("include", glob, &err))?;
        }
        for glob in &request.exclude {
            overrides
                .add(&format!("!{glob}"))
                .map_err(|err| bad_glob("exclude", glob, &err))?;
        }
        let overrides = overrides.build().map_err(|err| bad_glob("include/exclude", "", &err))?;
        builder.overrides(overrides);
    }
    let found = Mutex::new(Vec::new());
    builder.threads(threads()).build_parallel().run(|| {
        let mut collector = Collector::new(&found);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            if let Ok(entry) = entry {
                // Symlinks are not followed (as ripgrep does by default).
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    collector.push(entry.into_path());
                }
            }
            WalkState::Continue
        })
    });
    cancel.check("grep_search")?;
    let mut files = found.into_inner().unwrap_or_else(|e| e.into_inner());
    files.sort_unstable();
    Ok(files)
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
    lines: Vec<Line>,
}

/// Collects a file's results; `keep` is how many matching lines to keep as text.
struct FileSink<'a> {
    path: &'a str,
    keep: u64,
    result: FileResult,
}

impl FileSink<'_> {
    fn keeping(&self) -> bool {
        self.result.matches <= self.keep
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> std::io::Result<bool> {
        self.result.matches += 1;
        if self.keeping() {
            let line = found.line_number().unwrap_or(0);
            let text = display_line(trim_newline(found.bytes()), MAX_MATCH_LINE_BYTES);
            self.result
                .lines
                .push(Line::Match(format!("{}:{line}:{text}", self.path)));
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> std::io::Result<bool> {
        if self.keeping() {
            let line = context.line_number().unwrap_or(0);
            let text = display_line(trim_newline(context.bytes()), MAX_MATCH_LINE_BYTES);
            self.result
                .lines
                .push(Line::Context(format!("{}-{line}-{text}", self.path)));
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

struct Search<'a> {
    validator: &'a PathValidator,
    request: &'a GrepRequest,
    matcher: &'a RegexMatcher,
    files: &'a [PathBuf],
    cancel: &'a Cancel,
}

/// The output as it is put together, file by file in path order.
struct Collected {
    out: CappedText,
    shown: u64,
    total: u64,
    files_with_matches: u64,
    /// Set once the output is full: matches after this are only counted.
    full: bool,
    /// Index of the next file whose result goes into the output.
    next: usize,
    pending: std::collections::BTreeMap<usize, FileResult>,
    failure: Option<Error>,
}

impl Search<'_> {
    fn run(&self) -> Result<Collected> {
        let state = Mutex::new(Collected {
            out: CappedText::with_defaults(),
            shown: 0,
            total: 0,
            files_with_matches: 0,
            full: false,
            next: 0,
            pending: Default::default(),
            failure: None,
        });
        let window_moved = Condvar::new();
        let next_file = AtomicUsize::new(0);
        // Files at or after this index only need counting: the output is already full.
        let count_only_from = AtomicUsize::new(usize::MAX);
        let workers = threads().min(self.files.len()).max(1);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| self.worker(&state, &window_moved, &next_file, &count_only_from));
            }
        });
        self.cancel.check("grep_search")?;
        let mut collected = state.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(err) = collected.failure.take() {
            return Err(err);
        }
        Ok(collected)
    }

    fn worker(
        &self,
        state: &Mutex<Collected>,
        window_moved: &Condvar,
        next_file: &AtomicUsize,
        count_only_from: &AtomicUsize,
    ) {
        let context = self.request.context;
        let mut with_context = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(context)
            .after_context(context)
            .build();
        let mut counting = SearcherBuilder::new()
            .line_number(false)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        loop {
            let index = next_file.fetch_add(1, Ordering::Relaxed);
            if index >= self.files.len() || self.cancel.is_cancelled() {
                return;
            }
            {
                let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
                while index >= guard.next + WINDOW && !self.cancel.is_cancelled() {
                    guard = window_moved.wait(guard).unwrap_or_else(|e| e.into_inner());
                }
            }
            let path = &self.files[index];
            let shown = self.validator.relative(path).display().to_string();
            let count_only = index >= count_only_from.load(Ordering::Relaxed);
            let mut sink = FileSink {
                path: &shown,
                keep: if count_only { 0 } else { self.request.max_results as u64 },
                result: FileResult::default(),
            };
            let searcher = if count_only { &mut counting } else { &mut with_context };
            // O_NOFOLLOW: a file swapped for a symlink after the walk is skipped, not followed.
            let outcome = File::options()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .and_then(|file| searcher.search_file(self.matcher, &file, &mut sink));
            // Unreadable files are skipped, as ripgrep does (it reports them on stderr).
            let result = if outcome.is_ok() { sink.result } else { FileResult::default() };
            let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
            guard.pending.insert(index, result);
            let before = guard.next;
            guard.drain(self.request);
            if guard.full {
                count_only_from.fetch_min(guard.next, Ordering::Relaxed);
            }
            if guard.next != before {
                window_moved.notify_all();
            }
        }
    }
}

impl Collected {
    /// Moves every result that is next in path order into the output.
    fn drain(&mut self, request: &GrepRequest) {
        while let Some(result) = self.pending.remove(&self.next) {
            self.next += 1;
            self.total += result.matches;
            if result.matches > 0 {
                self.files_with_matches += 1;
            }
            if self.full || result.matches == 0 {
                continue;
            }
            if request.context > 0 && !self.out.is_empty() && !self.out.push_line("--") {
                self.full = true;
                continue;
            }
            for line in result.lines {
                let pushed = match line {
                    Line::Match(text) => {
                        if self.shown == request.max_results as u64 {
                            self.full = true;
                            break;
                        }
                        let pushed = self.out.push_line(&text);
                        if pushed {
                            self.shown += 1;
                        }
                        pushed
                    }
                    Line::Context(text) => self.out.push_line(&text),
                    Line::Break => self.out.push_line("--"),
                };
                if !pushed {
                    self.full = true;
                    break;
                }
            }
        }
    }

    fn finish(self, validator: &PathValidator, request: &GrepRequest) -> GrepOutput {
        let truncated = self.total > self.shown;
        let marker = if self.total == 0 {
            let place = request.path.as_deref().unwrap_or(".");
            let _ = validator;
            Some(format!(
                "No matches for /{}/ in '{place}'{}.",
                request.pattern,
                if request.ignore_case { " (ignoring case)" } else { "" }
            ))
        } else if truncated {
            Some(format!(
                "[truncated: showed {} of {} in {}; {} not shown. Narrow the pattern, set path or include, or raise max_results]",
                self.shown,
                plural(self.total, "matching line", "matching lines"),
                plural(self.files_with_matches, "file", "files"),
                self.total - self.shown
            ))
        } else {
            None
        };
        GrepOutput {
            text: self.out.finish(marker),
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
        let out = run(&v, &GrepRequest { context: 1, ..request("fn (alpha|gamma)") });
        assert_eq!(
            out.text,
            "src/a.rs:1:fn alpha() {}\nsrc/a.rs-2-let x = 1;\n--\nsrc/b.rs-1-// TODO: one\nsrc/b.rs:2:fn gamma() {}\n"
        );
        let body: String = (1..=20).map(|i| if i == 3 || i == 15 { "hit\n".to_string() } else { format!("l{i}\n") }).collect();
        std::fs::write(v.root().join("src/gap.txt"), body).unwrap();
        let out = run(&v, &GrepRequest { context: 1, path: Some("src/gap.txt".into()), ..request("hit") });
        assert_eq!(
            out.text,
            "src/gap.txt-2-l2\nsrc/gap.txt:3:hit\nsrc/gap.txt-4-l4\n--\nsrc/gap.txt-14-l14\nsrc/gap.txt:15:hit\nsrc/gap.txt-16-l16\n"
        );
    }

    #[test]
    fn option_like_patterns_are_searched_literally() {
        let (_dir, v) = setup();
        assert_eq!(run(&v, &request("--pre=sh")).text, "src/c.ts:1:const y = '--pre=sh';\n");
        assert_eq!(run(&v, &request("--files")).text, "src/c.ts:2:const z = '--files';\n");
        let none = run(&v, &request("-e"));
        assert_eq!(none.total_matches, 0);
        assert!(none.text.starts_with("No matches for /-e/"), "{}", none.text);
    }

    #[test]
    fn include_exclude_ignore_case_and_limits() {
        let (_dir, v) = setup();
        let ts = run(&v, &GrepRequest { include: vec!["*.ts".into()], ..request("const") });
        assert_eq!(ts.total_matches, 2);
        let no_b = run(&v, &GrepRequest { exclude: vec!["b.rs".into()], ..request("fn") });
        assert!(!no_b.text.contains("b.rs"), "{}", no_b.text);
        let upper = run(&v, &GrepRequest { ignore_case: true, ..request("FN ALPHA") });
        assert_eq!(upper.total_matches, 1);
        let capped = run(&v, &GrepRequest { max_results: 2, ..request("fn") });
        assert_eq!(capped.text.lines().filter(|l| l.starts_with("src/")).count(), 2);
        assert!(capped.truncated);
        assert!(
            capped.text.contains("[truncated: showed 2 of 3 matching lines in 2 files; 1 not shown."),
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
        std::os::unix::fs::symlink(outside.path().join("secret.rs"), dir.path().join("leak.rs")).unwrap();
        for path in ["..", "out", "leak.rs", "/etc", "src/../.."] {
            let err = grep(&v, &GrepRequest { path: Some(path.into()), ..request("alpha") }, &Cancel::default()).unwrap_err();
            assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{path}");
        }
        // The walk from the root does not follow either link.
        let all = run(&v, &request("alpha"));
        assert_eq!(all.text, "src/a.rs:1:fn alpha() {}\n");
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
            std::fs::write(sub.join(format!("f{i:04}.txt")), format!("needle {i}\nhay\n")).unwrap();
        }
        let out = run(&v, &GrepRequest { path: Some("many".into()), max_results: 10, ..request("needle") });
        assert_eq!(out.total_matches, 3000);
        let shown: Vec<&str> = out.text.lines().take(10).collect();
        let mut sorted = shown.clone();
        sorted.sort();
        assert_eq!(shown, sorted);
        assert!(shown[0].starts_with("many/00/f0000.txt:1:needle 0"), "{}", shown[0]);
        assert!(out.text.contains("2990 not shown"), "{}", out.text);
    }
}
