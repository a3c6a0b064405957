//! `glob_search`: files whose path matches a glob, newest first.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ignore::WalkState;

use super::access::Access;
use super::anchor::Dir;
use super::pattern::{
    check_glob, check_max_results, components, label, literal_components, GlobPattern,
};
use super::text::{plural, CappedText};
use super::walk::{bytes_below, threads, walker_pruned, Cancel, Collector, WalkOptions};
use crate::approval::Decision;
use crate::error::{Error, Result};
#[cfg(test)]
use crate::path::PathValidator;

/// What to look for.
#[derive(Debug, Clone)]
pub struct GlobRequest {
    /// A glob relative to `path`: `*` and `?` stay within one path component, `**` spans any
    /// number of directories, `{a,b}` and `[abc]` work as in a shell.
    pub pattern: String,
    /// Directory to search (default: the root).
    pub path: Option<String>,
    pub max_results: usize,
}

/// The files found.
#[derive(Debug, Clone)]
pub struct GlobOutput {
    /// A header line, one path (relative to the root) per line, newest first, and a marker
    /// when results were left out.
    pub text: String,
    /// The paths shown, newest first.
    pub files: Vec<String>,
    /// How many files matched in all.
    pub total: usize,
    pub truncated: bool,
}

/// Finds files matching `pattern` below `path`, honouring .gitignore and skipping the usual
/// dependency and build directories; results are sorted by modification time, newest first.
///
/// With path rules, blocked files are never listed (nor symlinks leading to one), and a search
/// path or literal prefix that is blocked is refused.
pub fn glob<'a>(
    access: impl Into<Access<'a>>,
    request: &GlobRequest,
    cancel: &Cancel,
) -> Result<GlobOutput> {
    check_max_results(request.max_results)?;
    let access = access.into();
    let validator = access.validator();
    let plan = Plan::new(&request.pattern)?;
    let base = search_base(access, request.path.as_deref())?;
    let start = if plan.prefix.as_os_str().is_empty() {
        base.clone()
    } else {
        // The literal prefix is a path too: it must stay inside the root, symlinks included,
        // and path rules judge it like the search path.
        let spelled = Path::new(request.path.as_deref().unwrap_or(".")).join(&plan.prefix);
        access.target(&spelled.to_string_lossy())?.0
    };
    let mut found = Vec::new();
    if start.is_dir() {
        found = walk_matches(access, &start, &plan, cancel)?;
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let shown_base = validator.relative(&base).display().to_string();
    let mut out = CappedText::with_defaults();
    let header = if total == 0 {
        let mut none = format!("No files match '{}' in '{shown_base}'.", request.pattern);
        if !request.pattern.contains('/') && !request.pattern.starts_with("**") {
            none.push_str(&format!(
                " A pattern without '/' only matches in that directory itself; use '**/{}' to search every subdirectory.",
                request.pattern
            ));
        }
        none
    } else {
        format!(
            "{} '{}' in '{shown_base}' (newest first):",
            plural(total as u64, "file matches", "files match"),
            request.pattern
        )
    };
    out.push_line(&header);
    let mut files = Vec::new();
    for (_, path) in found.into_iter() {
        if files.len() == request.max_results || !out.push_line(&path) {
            break;
        }
        files.push(path);
    }
    let left_out = total - files.len();
    let marker = (left_out > 0).then(|| {
        format!(
            "[truncated: showed the {} newest of {total} matches; {left_out} more not shown. Narrow the pattern or the path, or raise max_results]",
            files.len()
        )
    });
    Ok(GlobOutput {
        text: out.finish(marker),
        truncated: left_out > 0,
        files,
        total,
    })
}

/// The directory a search starts from: the root, or `path` when given (which must be a
/// directory inside the root, and not blocked by a path rule).
pub(crate) fn search_base(access: Access<'_>, path: Option<&str>) -> Result<PathBuf> {
    let validator = access.validator();
    let (absolute, _) = access.target(path.unwrap_or("."))?;
    // Opening it walks from the root without following symlinks: it is really inside.
    Dir::open(validator, &absolute, false, &mut Vec::new()).map_err(|err| match err {
        Error::FileNotFound(_) => Error::FileNotFound(format!(
            "directory '{}' does not exist; give a directory inside the root",
            path.unwrap_or(".")
        )),
        other => other,
    })?;
    Ok(absolute)
}

/// A pattern split into the literal directories it starts with and the glob for the rest.
struct Plan {
    prefix: PathBuf,
    matcher: GlobPattern,
    /// One matcher per directory level before the first `**`: a directory at that depth that
    /// does not match cannot hold a match, so the walk does not enter it.
    levels: Arc<Vec<GlobPattern>>,
    /// Depth below the prefix the walk needs, when the glob has no `**`.
    max_depth: Option<usize>,
    hidden: bool,
}

impl Plan {
    fn new(pattern: &str) -> Result<Plan> {
        if pattern.is_empty() {
            return Err(Error::InvalidInput(
                "pattern is empty; give a glob such as '**/*.ts'".into(),
            ));
        }
        check_glob("pattern", pattern)?;
        if pattern.starts_with('/') {
            return Err(Error::InvalidInput(format!(
                "pattern '{pattern}' is absolute; patterns are relative to the search path (use 'path' to pick a directory)"
            )));
        }
        let components = components(pattern);
        if components.contains(&"..") {
            return Err(Error::InvalidInput(format!(
                "pattern '{pattern}' contains '..'; patterns cannot climb out of the search path (use 'path' instead)"
            )));
        }
        let literal = literal_components(&components);
        let prefix: PathBuf = components[..literal].iter().collect();
        let rest = components[literal..].join("/");
        let matcher = GlobPattern::compile(&label("pattern", pattern), &rest)?;
        let rest_components: Vec<&str> = components[literal..].to_vec();
        let mut levels = Vec::new();
        for component in &rest_components[..rest_components.len().saturating_sub(1)] {
            match GlobPattern::piece(component) {
                Some(level) if !component.contains("**") => levels.push(level),
                _ => break,
            }
        }
        let max_depth = (!rest.contains("**")).then(|| components.len() - literal);
        let hidden = components.iter().any(|c| c.starts_with('.'));
        Ok(Plan {
            prefix,
            matcher,
            levels: Arc::new(levels),
            max_depth,
            hidden,
        })
    }
}

fn walk_matches(
    access: Access<'_>,
    start: &Path,
    plan: &Plan,
    cancel: &Cancel,
) -> Result<Vec<(SystemTime, String)>> {
    let found = Mutex::new(Vec::new());
    let options = WalkOptions {
        hidden: plan.hidden,
        max_depth: plan.max_depth,
    };
    let levels = plan.levels.clone();
    let enter = move |entry: &ignore::DirEntry| {
        levels
            .get(entry.depth() - 1)
            .is_none_or(|level| level.is_match(entry.file_name()))
    };
    let validator = access.validator();
    let filter = access.walk_filter(Decision::Blocked);
    let filter = filter.as_ref();
    walker_pruned(access, start, options, enter)
        .threads(threads())
        .build_parallel()
        .run(|| {
            let mut collector = Collector::new(&found);
            Box::new(
                move |entry: std::result::Result<ignore::DirEntry, ignore::Error>| {
                    if cancel.is_cancelled() {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    let Some(file_type) = entry.file_type() else {
                        return WalkState::Continue;
                    };
                    // Directories are walked, not listed; FIFOs, sockets and devices are not
                    // files a tool can use.
                    if !file_type.is_file() && !file_type.is_symlink() {
                        return WalkState::Continue;
                    }
                    let Some(relative) = bytes_below(entry.path(), start) else {
                        return WalkState::Continue;
                    };
                    if !plan
                        .matcher
                        .is_match(Path::new(OsStr::from_bytes(relative)))
                    {
                        return WalkState::Continue;
                    }
                    // A symlink is listed only when it leads to a file inside the root that
                    // no path rule blocks.
                    if file_type.is_symlink() {
                        match validator.resolve(entry.path()) {
                            Ok(target)
                                if target.is_file()
                                    && !filter.is_some_and(|f| f.target_blocked(&target)) => {}
                            _ => return WalkState::Continue,
                        }
                    }
                    let modified = std::fs::metadata(entry.path())
                        .and_then(|m| m.modified())
                        .unwrap_or(SystemTime::UNIX_EPOCH);
                    let shown = bytes_below(entry.path(), validator.root()).unwrap_or_default();
                    collector.push((modified, String::from_utf8_lossy(shown).into_owned()));
                    WalkState::Continue
                },
            )
        });
    cancel.check("glob_search")?;
    Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            "src/a.ts",
            "src/deep/er/b.ts",
            "src/c.js",
            "lib/src/d.ts",
            "top.ts",
            "node_modules/m/index.ts",
            "dist/out.ts",
            ".github/w.yml",
            "ignored/x.ts",
        ];
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, file).unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    fn run(v: &PathValidator, pattern: &str, path: Option<&str>) -> GlobOutput {
        let request = GlobRequest {
            pattern: pattern.into(),
            path: path.map(Into::into),
            max_results: 100,
        };
        glob(v, &request, &Cancel::default()).unwrap()
    }

    fn sorted(mut files: Vec<String>) -> Vec<String> {
        files.sort();
        files
    }

    #[test]
    fn double_star_respects_the_literal_prefix() {
        let (_dir, v) = setup();
        assert_eq!(
            sorted(run(&v, "src/**/*.ts", None).files),
            ["src/a.ts", "src/deep/er/b.ts"]
        );
        assert_eq!(
            sorted(run(&v, "**/*.ts", None).files),
            ["lib/src/d.ts", "src/a.ts", "src/deep/er/b.ts", "top.ts"]
        );
        assert_eq!(run(&v, "*.ts", None).files, ["top.ts"]);
        assert_eq!(run(&v, "src/*.ts", None).files, ["src/a.ts"]);
        assert_eq!(
            sorted(run(&v, "src/*.{ts,js}", None).files),
            ["src/a.ts", "src/c.js"]
        );
        assert_eq!(run(&v, "*.ts", Some("src")).files, ["src/a.ts"]);
        assert_eq!(
            run(&v, "**/*.yml", None).total,
            0,
            "hidden dirs need a dot in the pattern"
        );
        assert_eq!(run(&v, ".github/*.yml", None).files, [".github/w.yml"]);
        // Directory levels before ** prune the walk but still match what they should.
        assert_eq!(run(&v, "s*/**/*.ts", None).total, 2);
        assert_eq!(run(&v, "*/src/*.ts", None).files, ["lib/src/d.ts"]);
        assert_eq!(
            sorted(run(&v, "{src,lib}/**/*.ts", None).files),
            ["lib/src/d.ts", "src/a.ts", "src/deep/er/b.ts"]
        );
    }

    #[test]
    fn results_are_newest_first_and_capped_with_a_marker() {
        let (dir, v) = setup();
        let old = SystemTime::now() - Duration::from_secs(3600);
        for (i, name) in ["src/a.ts", "src/deep/er/b.ts", "lib/src/d.ts", "top.ts"]
            .iter()
            .enumerate()
        {
            let file = std::fs::File::options()
                .write(true)
                .open(dir.path().join(name))
                .unwrap();
            file.set_modified(old + Duration::from_secs(i as u64 * 60))
                .unwrap();
        }
        let out = run(&v, "**/*.ts", None);
        assert_eq!(
            out.files,
            ["top.ts", "lib/src/d.ts", "src/deep/er/b.ts", "src/a.ts"]
        );
        assert!(out
            .text
            .starts_with("4 files match '**/*.ts' in '.' (newest first):\ntop.ts\n"));
        let capped = glob(
            &v,
            &GlobRequest {
                pattern: "**/*.ts".into(),
                path: None,
                max_results: 2,
            },
            &Cancel::default(),
        )
        .unwrap();
        assert_eq!(capped.files, ["top.ts", "lib/src/d.ts"]);
        assert!(capped.text.contains("2 more not shown"), "{}", capped.text);
    }

    #[test]
    fn bad_patterns_and_escapes_are_refused() {
        let (dir, v) = setup();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.ts"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.ts"), dir.path().join("leak.ts"))
            .unwrap();
        let request = |pattern: &str, path: Option<&str>| GlobRequest {
            pattern: pattern.into(),
            path: path.map(Into::into),
            max_results: 10,
        };
        let code = |r: GlobRequest| glob(&v, &r, &Cancel::default()).unwrap_err().code();
        assert_eq!(code(request("../*", None)), "INVALID_INPUT");
        assert_eq!(code(request("/etc/*", None)), "INVALID_INPUT");
        assert_eq!(code(request("src/[", None)), "INVALID_INPUT");
        let started = std::time::Instant::now();
        let message = |r: GlobRequest| glob(&v, &r, &Cancel::default()).unwrap_err().to_string();
        assert!(message(request(&"a".repeat(400_000), None)).contains("at most 4096 bytes"));
        assert!(message(request(&"a**".repeat(10_000), None)).contains("at most 4096 bytes"));
        assert!(message(request("src/\0*.ts\0", None)).contains("NUL"));
        let braces = format!("src/{}z{}", "{a,".repeat(1000), "}".repeat(1000));
        assert!(message(request(&braces, None)).contains("more than 10 deep"));
        assert!(message(request("src/[", None)).contains("pattern 'src/['"));
        for max_results in [0, 2001, usize::MAX] {
            let too_many = GlobRequest {
                max_results,
                ..request("*", None)
            };
            assert!(message(too_many).contains("from 1 to 2000"));
        }
        assert!(started.elapsed() < Duration::from_secs(10), "did not hang");
        assert_eq!(code(request("*", Some(".."))), "PATH_OUTSIDE_ROOT");
        assert_eq!(code(request("*", Some("out"))), "PATH_OUTSIDE_ROOT");
        assert_eq!(code(request("out/*.ts", None)), "PATH_OUTSIDE_ROOT");
        assert_eq!(code(request("*", Some("/etc"))), "PATH_OUTSIDE_ROOT");
        // The walk never follows the directory link, and a file link leading outside is left out.
        let all = run(&v, "**/*.ts", None);
        assert!(
            !all.files
                .iter()
                .any(|f| f.contains("secret") || f == "leak.ts"),
            "{:?}",
            all.files
        );
    }

    #[test]
    fn odd_patterns_are_answered_not_panicked_on() {
        let (_dir, v) = setup();
        for pattern in [
            ".",
            "./",
            "/",
            "**",
            "{",
            "}",
            "{,}",
            "[!]",
            "[",
            "]",
            "\\",
            "a\\",
            "*{",
            "{a,b",
            "a}}",
            "**/**/**",
            "./../",
            "\u{FFFD}",
            "é*",
            "\u{1F600}/**",
        ] {
            let request = GlobRequest {
                pattern: pattern.into(),
                path: None,
                max_results: 10,
            };
            if let Err(err) = glob(&v, &request, &Cancel::default()) {
                assert_eq!(err.code(), "INVALID_INPUT", "{pattern}: {err}");
            }
        }
    }

    #[test]
    fn no_match_suggests_double_star() {
        let (_dir, v) = setup();
        let out = run(&v, "*.js", None);
        assert_eq!(out.total, 0);
        assert!(out.text.contains("use '**/*.js'"), "{}", out.text);
    }
}
