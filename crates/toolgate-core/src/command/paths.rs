//! Path confinement for command arguments.
//!
//! A program's arguments are only text, and the kernel reads any text as a path: `https://x`
//! is the file `x` in a directory called `https:`. So nothing is exempt for its shape (URLs
//! included) and every piece of an argument that a program could use as a path is resolved and
//! must stay inside the work directory or a read root. The candidates of an argument are:
//!
//! - the argument itself;
//! - what follows each `=` and `@`: `--file=/etc/shadow`, `if=/etc/shadow`, curl's
//!   `-d @file`, `-F 'name=<file'`, `--data-urlencode name@file`, httpie's `field:=@file`;
//! - each element of a list separated by `:`, `,`, `;` or `{`, ending there or at `}`
//!   (`--include=src:/etc`, `-Wl,-rpath,/x`, `name=@file;type=text/plain`, curl's
//!   `%output{/x}`), with `scheme://…` kept whole as one element, and what follows an `=` or
//!   `@` in each;
//! - for a single-dash argument, the value attached to a short flag: what follows the first
//!   letter (`-f/etc/x`), and what follows a run of letters when it starts like a path
//!   (`-xvf/etc/x`);
//! - the base of a git URL rewrite, `url.<base>.insteadOf`.
//!
//! Each candidate is also taken with quotes and leading `=`, `@`, `<`, `>` removed, and a value
//! after `=` or `@` also without surrounding blanks.
//! `~` is the real home directory for this check (from `$HOME` and from the password database;
//! the candidate must be allowed under each), and `~user` that user's home.
//!
//! One exception keeps URLs usable: in `scheme://host/…` the piece after the `:` is
//! `//host/…`, which would be the absolute path `/host/…`. It is checked only when `/host`
//! exists (`ftp://etc/passwd`); a host name is not a directory at the root of the file system.
//! The URL as a whole is still checked as the relative path it also is.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use super::arguments::quote;
use crate::error::{Error, Result};
use crate::path::{PathValidator, OUTSIDE_DETAIL};

/// More separators than this in one argument is refused: each makes candidates that cost a
/// look at the file system (long data belongs on stdin or in a file).
const MAX_SEPARATORS: usize = 256;
/// The characters that start new candidates (counted against [`MAX_SEPARATORS`]).
const SEPARATORS: [char; 8] = ['=', '@', '<', ':', ',', ';', '{', '}'];

/// The work directory and the read roots that path arguments may name.
#[derive(Debug, Clone)]
pub(crate) struct Confinement {
    work: PathValidator,
    read_roots: Vec<PathValidator>,
    /// What `~` means to the programs we run: the parent's `$HOME` and the password database's
    /// home of this user (programs use either).
    homes: Vec<PathBuf>,
}

impl Confinement {
    /// `read_roots` are taken as given: absolute, or relative to `work_dir`. Each must be an
    /// existing directory.
    pub fn new(work_dir: &Path, read_roots: &[PathBuf]) -> Result<Self> {
        let work = PathValidator::new(work_dir)
            .map_err(|err| Error::ConfigInvalid(format!("work directory: {err}")))?;
        let read_roots = read_roots
            .iter()
            .map(|root| {
                PathValidator::new(work.root().join(root)).map_err(|err| {
                    Error::ConfigInvalid(format!("read_roots entry '{}': {err}", root.display()))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut homes = Vec::new();
        for home in [
            std::env::var_os("HOME").map(PathBuf::from),
            password_home(None),
        ]
        .into_iter()
        .flatten()
        {
            if home.is_absolute() && !homes.contains(&home) {
                homes.push(home);
            }
        }
        Ok(Self {
            work,
            read_roots,
            homes,
        })
    }

    /// The canonical work directory.
    pub fn work_dir(&self) -> &Path {
        self.work.root()
    }

    /// The canonical read roots.
    pub fn read_roots(&self) -> impl Iterator<Item = &Path> {
        self.read_roots.iter().map(PathValidator::root)
    }

    /// Refuses `arg` with `PATH_OUTSIDE_ROOT` when one of its candidates lands outside the work
    /// directory and every read root.
    pub fn check_argument(&self, index: usize, arg: &str) -> Result<()> {
        if arg.matches(SEPARATORS).nth(MAX_SEPARATORS).is_some() {
            return Err(Error::ArgumentRejected(format!(
                "args[{index}] ({}) has more than {MAX_SEPARATORS} of = @ < : , ; {{ }}, each of which starts a piece that could name a file: too many to check; pass long data on stdin or in a file",
                quote(arg)
            )));
        }
        for candidate in candidates_of(arg) {
            if candidate.url_authority && !names_a_root_entry(candidate.text) {
                continue;
            }
            if candidate.text.starts_with('~') {
                for path in self.paths_of(candidate.text) {
                    self.check_path(index, arg, candidate.text, &path)?;
                }
            } else {
                self.check_path(index, arg, candidate.text, Path::new(candidate.text))?;
            }
        }
        Ok(())
    }

    /// The candidate as paths: one per meaning of a leading `~` (absolute), else the candidate
    /// as written (relative ones are taken from the work directory).
    fn paths_of(&self, candidate: &str) -> Vec<PathBuf> {
        if let Some(rest) = candidate.strip_prefix('~') {
            let (user, tail) = match rest.find('/') {
                Some(slash) => (&rest[..slash], rest[slash + 1..].trim_start_matches('/')),
                None => (rest, ""),
            };
            if user.is_empty() {
                return self.homes.iter().map(|home| home.join(tail)).collect();
            }
            if let Some(home) = password_home(Some(user)) {
                return vec![home.join(tail)];
            }
            // An unknown user: no program can expand it, so it is the literal name it reads as.
        }
        vec![PathBuf::from(candidate)]
    }

    /// Checks one path; a relative `path` is taken from the work directory. The refusal names
    /// only the caller's text and the configured roots, never where the path leads.
    fn check_path(&self, index: usize, arg: &str, candidate: &str, path: &Path) -> Result<()> {
        match self.work.resolve_any_length(path) {
            Ok(_) => return Ok(()),
            Err(Error::PathOutsideRoot { .. }) => {}
            Err(err) => {
                return Err(Error::ArgumentRejected(format!(
                    "args[{index}] ({}): {err}",
                    quote(arg)
                )))
            }
        }
        let absolute = self.work.root().join(path);
        if self
            .read_roots
            .iter()
            .any(|root| root.resolve_any_length(&absolute).is_ok())
        {
            return Ok(());
        }
        let roots = if self.read_roots.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self
                .read_roots()
                .map(|root| format!("'{}'", root.display()))
                .collect();
            format!(" nor in a read root ({})", list.join(", "))
        };
        let seen_as = if candidate == arg {
            format!(" (args[{index}])")
        } else {
            format!(" (part of args[{index}] {})", quote(arg))
        };
        Err(Error::PathOutsideRoot {
            path: candidate.to_string(),
            root: self.work.root().to_path_buf(),
            detail: format!("{OUTSIDE_DETAIL}{seen_as}{roots}; every piece of an argument that could name a file is confined to the work directory"),
        })
    }
}

/// Whether `//host/…` names something that exists at the root of the file system (`/host`),
/// or has no host at all (`///etc`, `//../x`): then it is checked as the path it also is.
fn names_a_root_entry(authority: &str) -> bool {
    let host = authority
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    authority.starts_with("///")
        || matches!(host, "" | "." | "..")
        || std::fs::symlink_metadata(Path::new("/").join(host)).is_ok()
}

/// One piece of an argument that could name a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate<'a> {
    pub text: &'a str,
    /// `//host/…` right after `scheme:`: checked only when `/host` exists.
    pub url_authority: bool,
}

/// The candidates of `arg`, deduplicated, in order.
struct Collector<'a> {
    list: Vec<Candidate<'a>>,
}

impl<'a> Collector<'a> {
    /// Adds `text` as written and, if different, without quotes and leading prefix operators
    /// (`@file`, `<file`, `=@file`, `>>file`, `"file"`).
    fn add(&mut self, text: &'a str, url_authority: bool) {
        self.push(text, url_authority);
        let mut bare = text;
        loop {
            let next = bare
                .trim_start_matches(['=', '@', '<', '>'])
                .trim_matches(['"', '\'']);
            if next == bare {
                break;
            }
            bare = next;
        }
        self.push(bare, url_authority && bare == text);
    }

    fn push(&mut self, text: &'a str, url_authority: bool) {
        if text.is_empty() {
            return;
        }
        match self.list.iter_mut().find(|known| known.text == text) {
            // Also a plain candidate: checked as a path whatever the URL reading says.
            Some(known) => known.url_authority &= url_authority,
            None => self.list.push(Candidate {
                text,
                url_authority,
            }),
        }
    }

    /// Adds what follows each `=` and `@` in `text`, without surrounding blanks (wget's
    /// `-e 'output_document = /x'`). A `<` right after `=` or at the start is removed by
    /// [`add`](Self::add); elsewhere it is text such as `a<b>`.
    fn add_values(&mut self, text: &'a str) {
        for (at, _) in text.match_indices(['=', '@']) {
            let value = &text[at + 1..];
            self.add(value, false);
            self.add(value.trim(), false);
        }
    }
}

/// The pieces of `arg` that could name a file.
pub(crate) fn candidates_of(arg: &str) -> Vec<Candidate<'_>> {
    let mut out = Collector { list: Vec::new() };
    out.add(arg, false);
    out.add_values(arg);
    if let Some(flags) = arg.strip_prefix('-').filter(|rest| !rest.starts_with('-')) {
        if flags.len() > 1 && flags.is_char_boundary(1) {
            out.add(&flags[1..], false);
        }
        let letters = flags.len()
            - flags
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let value = &flags[letters..];
        if letters > 0 && value.starts_with(['/', '~', '.']) {
            out.add(value, false);
        }
    }
    if let Some(base) = url_rewrite_base(arg) {
        out.add(base, false);
    }
    for piece in list_pieces(arg) {
        out.add(piece.text, piece.url_authority);
        out.add_values(piece.text);
    }
    out.list
}

/// The elements of a list separated by `:`, `,`, `;` or `{`, each ending at the next of these or
/// at `}` (what follows a `}` is the text around a group, not an element: in
/// `https://x/{a,b}/y` the elements are `a` and `b`). The piece after `scheme:` that starts
/// with `//` is marked as a URL authority, and the whole `scheme://…` up to the next separator
/// other than `:` is an element too (`a,ftp://x` is `a` and `ftp://x`).
fn list_pieces(arg: &str) -> Vec<Candidate<'_>> {
    let mut pieces = Vec::new();
    // Where the current element starts; `None` after a `}`, until the next separator.
    let mut start = Some(0);
    let mut authority_next = false;
    for (at, separator) in arg.match_indices([':', ',', ';', '{', '}']) {
        let Some(from) = start else {
            start = (separator != "}").then_some(at + 1);
            authority_next = false;
            continue;
        };
        let piece = &arg[from..at];
        pieces.push(Candidate {
            text: piece,
            url_authority: authority_next,
        });
        let scheme = scheme_at_end(piece);
        authority_next = separator == ":" && arg[at + 1..].starts_with("//") && scheme.is_some();
        if let (true, Some(scheme)) = (authority_next, scheme) {
            let end = arg[at..]
                .find([',', ';', '{', '}'])
                .map_or(arg.len(), |offset| at + offset);
            pieces.push(Candidate {
                text: &arg[from + scheme..end],
                url_authority: false,
            });
        }
        start = (separator != "}").then_some(at + 1);
    }
    if let Some(from) = start {
        pieces.push(Candidate {
            text: &arg[from..],
            url_authority: authority_next,
        });
    }
    pieces
}

/// Where the RFC 3986 scheme name that `text` ends with starts (`https`, `git+ssh`,
/// `--url=ftp`), or `None`.
fn scheme_at_end(text: &str) -> Option<usize> {
    // After the last character that cannot be in a scheme (which may take several bytes).
    let start = text
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let scheme = text[start..].trim_start_matches(|c: char| !c.is_ascii_alphabetic());
    (!scheme.is_empty()).then(|| text.len() - scheme.len())
}

/// `<base>` in git's `url.<base>.insteadOf` / `url.<base>.pushInsteadOf` (any case): a URL or
/// path that git uses in place of the one it is given.
fn url_rewrite_base(arg: &str) -> Option<&str> {
    let lower = arg.to_ascii_lowercase();
    let start = lower
        .match_indices("url.")
        .find(|(at, _)| *at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric())?
        .0
        + "url.".len();
    let end = [".insteadof", ".pushinsteadof"]
        .iter()
        .filter_map(|key| lower[start..].rfind(key).map(|at| start + at))
        .min()?;
    Some(&arg[start..end])
}

/// The home directory of `user` (or of the current user) from the password database.
fn password_home(user: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let name = match user {
        Some(user) => Some(std::ffi::CString::new(user).ok()?),
        None => None,
    };
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: passwd is plain old data; the *_r calls fill it and point its strings into
    // `buffer`, which outlives every use below.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe {
        match &name {
            Some(name) => libc::getpwnam_r(
                name.as_ptr(),
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut result,
            ),
            None => libc::getpwuid_r(
                libc::getuid(),
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut result,
            ),
        }
    };
    if rc != 0 || result.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpw*_r succeeded, so pw_dir is a NUL-terminated string inside `buffer`.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    dir.is_absolute().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _dir: tempfile::TempDir,
        work: PathBuf,
        docs: PathBuf,
        outside: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let work = base.join("work");
        let docs = base.join("docs");
        let outside = base.join("outside");
        for d in [&work, &docs, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::create_dir_all(work.join("src")).unwrap();
        std::fs::write(outside.join("secret"), "secret").unwrap();
        Fixture {
            _dir: dir,
            work,
            docs,
            outside,
        }
    }

    fn refused(confinement: &Confinement, arg: &str) -> String {
        let err = confinement.check_argument(1, arg).expect_err(arg);
        assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{arg}: {err}");
        err.to_string()
    }

    fn passes(confinement: &Confinement, arg: &str) {
        confinement
            .check_argument(0, arg)
            .unwrap_or_else(|err| panic!("{arg}: {err}"));
    }

    fn texts(arg: &str) -> Vec<&str> {
        candidates_of(arg).into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn lists_with_multibyte_characters_before_a_separator_are_read_without_panicking() {
        for arg in [
            "print('hello')\u{a0}\u{a0};import os",
            "\u{2028}:x",
            "é,f",
            "a\u{3000}https://x",
            "日本:語",
        ] {
            let _ = texts(arg);
            assert_eq!(
                scheme_at_end(&arg[..arg.find([':', ',', ';']).unwrap_or(arg.len())]).is_some(),
                arg.contains("https"),
                "{arg}"
            );
        }
    }

    #[test]
    fn candidates_cover_flags_lists_prefixes_and_response_files() {
        assert_eq!(
            texts("--file=/etc/shadow"),
            ["--file=/etc/shadow", "/etc/shadow"]
        );
        assert!(texts("-f/etc/x").contains(&"/etc/x"));
        assert!(texts("-xvf/etc/x").contains(&"/etc/x"));
        assert!(texts("if=/etc/shadow").contains(&"/etc/shadow"));
        assert!(texts("@/etc/passwd").contains(&"/etc/passwd"));
        assert!(texts("--path=a:/etc").contains(&"/etc"));
        assert!(texts("--files=a,~/x").contains(&"~/x"));
        assert!(texts("--a=b=/etc/x").contains(&"/etc/x"));
        assert!(texts("name=<../x").contains(&"../x"));
        assert!(texts("name=@../x;type=text/plain").contains(&"../x"));
        assert!(texts(r#"name=@"../x";filename=y"#).contains(&"../x"));
        assert!(texts("field:=@../x.json").contains(&"../x.json"));
        assert!(texts("name@../x").contains(&"../x"));
        assert!(texts("%output{>>/x}").contains(&"/x"));
        assert!(texts("url./srv/repo/.insteadOf=foo").contains(&"/srv/repo/"));
        assert!(texts("-d@../x").contains(&"../x"));
        assert!(texts("output_document = /etc/x").contains(&"/etc/x"));
        let url: Vec<_> = candidates_of("https://example.com/a/b")
            .into_iter()
            .filter(|c| c.url_authority)
            .map(|c| c.text)
            .collect();
        assert_eq!(url, ["//example.com/a/b"]);
    }

    #[test]
    fn paths_inside_the_work_directory_pass() {
        let f = fixture();
        let c = Confinement::new(&f.work, &[]).unwrap();
        for arg in [
            "src",
            "./src/main.rs",
            "src/../README",
            ".",
            "origin/main",
            "HEAD~1",
            "HEAD@{1}",
            "--namespace=default",
            "https://example.com/a/b",
            "http://localhost:8080/x?y=1&z=2",
            "https://user@host.example:8443/a",
            "http://[::1]:8080/",
            "http://127.0.0.1:9/{a,b}/[1-2].png",
            "%{http_code}/%{size_download}",
            "git clone https://host/x.git",
            "https://host/x.git",
            "git@github.com:org/repo.git",
            "ssh://git@host/org/x.git",
            "user@host",
            "a@b.c",
            "new/file.txt",
            "-Isrc",
            "-I./src",
            "--out=build/x",
            "-n5",
            "~nosuchuser12345/x",
            "--format=%h %s",
            "-F",
            "name=@src/main.rs;type=text/plain",
            r#"{"key":"value","n":[1,2]}"#,
            "12:30",
            "name=<b>bold</b>",
            "a<b",
            "fix: /etc/hosts is parsed again",
            "X-Path: /usr/local",
            "Co-authored-by: A <a@b.example>",
        ] {
            passes(&c, arg);
        }
        passes(&c, &f.work.join("src").display().to_string());
    }

    #[test]
    fn traversal_absolute_and_flag_embedded_paths_are_refused() {
        let f = fixture();
        let c = Confinement::new(&f.work, &[]).unwrap();
        for arg in [
            "foo/../../x",
            "../sibling",
            "/home/other/.ssh/id_rsa",
            "--file=/etc/shadow",
            "-f/etc/x",
            "-xvf/etc/passwd",
            "if=/etc/shadow",
            "@/etc/passwd",
            "--path=src:/etc",
            "a,/etc/passwd",
            "..",
            "/",
            "~root/.ssh",
            "-I../x",
        ] {
            refused(&c, arg);
        }
        let message = refused(&c, "--file=/etc/shadow");
        assert!(message.contains("'/etc/shadow'"), "{message}");
        assert!(message.contains("args[1]"), "{message}");
    }

    #[test]
    fn url_shaped_arguments_are_paths_too() {
        let f = fixture();
        std::fs::create_dir(f.work.join("https:")).unwrap();
        symlink("/", f.work.join("ftp:")).unwrap();
        symlink(&f.outside, f.work.join("x:")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        for arg in [
            "https://../../outside/secret",
            "x://../../outside/f",
            "y://../../outside/f",
            "ftp://etc/passwd",
            "ftp://x",
            "x://secret",
            "--url=https://../../outside/secret",
            "src:https://../../x",
            "a,ftp://etc",
            "a,x://secret",
            "--files=a;x://secret;b",
            "gopher://tmp/x",
            "any:///etc/passwd",
            "scheme://../x",
        ] {
            refused(&c, arg);
        }
        // Ordinary URLs still pass: their host is not a directory at the root.
        for arg in ["https://example.com/a/b", "https://github.com/org/x.git"] {
            passes(&c, arg);
        }
    }

    #[test]
    fn prefix_and_path_forms_are_confined() {
        let f = fixture();
        symlink(f.outside.join("secret"), f.work.join("leak")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        for arg in [
            "name=<../outside/secret",
            "name=@../outside/secret",
            "name=@../outside/secret;type=text/plain",
            r#"name=@"../outside/secret";filename=x"#,
            "@../outside/secret",
            "-d@../outside/secret",
            "--data=@/etc/passwd",
            "name@../outside/secret",
            "name@/etc/passwd",
            "field=@../outside/secret",
            "field:=@/etc/passwd",
            "field=<leak",
            "<leak",
            "%output{/tmp/x}",
            "%output{>>../x}",
            "url./srv/repo/.insteadOf=foo",
            "url.../outside/.pushInsteadOf=origin",
            "output_document = /etc/cron.d/x",
        ] {
            refused(&c, arg);
        }
    }

    #[test]
    fn tilde_is_the_real_home() {
        let f = fixture();
        let c = Confinement::new(&f.work, &[]).unwrap();
        if c.homes.iter().all(|home| !home.starts_with(&f.work)) {
            refused(&c, "~/.ssh/id_rsa");
            refused(&c, "~");
            refused(&c, "--key=~/.aws/credentials");
        }
    }

    #[test]
    fn bare_words_naming_a_symlink_out_are_refused() {
        let f = fixture();
        symlink(f.outside.join("secret"), f.work.join("leak")).unwrap();
        symlink(f.work.join("src"), f.work.join("main")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        for arg in ["leak", "--file=leak", "-fleak", "@leak", "a,leak", "x:leak"] {
            refused(&c, arg);
        }
        for arg in ["main", "--branch=main", "nothing-here", "origin"] {
            passes(&c, arg);
        }
    }

    #[test]
    fn symlinks_are_followed() {
        let f = fixture();
        symlink(&f.outside, f.work.join("escape")).unwrap();
        symlink(f.work.join("src"), f.work.join("inner")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        refused(&c, "escape/secret");
        refused(&c, "--out=escape/x");
        passes(&c, "inner/x");
    }

    #[test]
    fn refusals_name_only_the_argument_and_say_the_same_whatever_lies_outside() {
        let f = fixture();
        let o = &f.outside;
        std::fs::create_dir(o.join("dir")).unwrap();
        symlink(o.join("loop-b"), o.join("loop-a")).unwrap();
        symlink(o.join("loop-a"), o.join("loop-b")).unwrap();
        for (name, target) in [
            ("l-existing", o.join("secret")),
            ("l-missing", o.join("missing")),
            ("l-dir", o.join("dir")),
            ("l-loop", o.join("loop-a")),
        ] {
            symlink(target, f.work.join(name)).unwrap();
        }
        let c = Confinement::new(&f.work, &[]).unwrap();
        let mut shapes = std::collections::BTreeSet::new();
        for arg in [
            "l-existing",
            "l-missing",
            "l-dir",
            "l-loop",
            "l-dir/x",
            "l-loop/x",
            "../outside/secret",
            "../outside/missing",
            "../outside/loop-a/x",
            "/etc/passwd",
        ] {
            let message = refused(&c, arg);
            for leak in ["outside/", "secret\'", "loop-b", "missing\'", "/dir"] {
                if !arg.contains(leak.trim_end_matches('\'')) {
                    assert!(!message.contains(leak), "{arg}: {message}");
                }
            }
            shapes.insert(message.replace(&format!("'{arg}'"), "'<arg>'"));
        }
        assert_eq!(shapes.len(), 1, "{shapes:#?}");
    }

    #[test]
    fn read_roots_extend_what_may_be_named() {
        let f = fixture();
        std::fs::create_dir(f.work.join("vendor-docs")).unwrap();
        let c = Confinement::new(&f.work, &[f.docs.clone(), PathBuf::from("vendor-docs")]).unwrap();
        passes(&c, &f.docs.join("guide.md").display().to_string());
        passes(&c, "../docs/guide.md");
        let message = refused(&c, &f.outside.display().to_string());
        assert!(message.contains("read root"), "{message}");
        let err = Confinement::new(&f.work, &[PathBuf::from("missing")]).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("read_roots"), "{err}");
    }

    #[test]
    fn unresolvable_paths_inside_are_argument_errors() {
        let f = fixture();
        symlink("b", f.work.join("a")).unwrap();
        symlink("a", f.work.join("b")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        let err = c.check_argument(2, "a/x").unwrap_err();
        assert_eq!(err.code(), "ARGUMENT_REJECTED");
        assert!(err.to_string().contains("args[2]"), "{err}");
    }

    #[test]
    fn long_arguments_are_limited_not_slow() {
        let f = fixture();
        let c = Confinement::new(&f.work, &[]).unwrap();
        let err = c.check_argument(0, &"a=".repeat(300)).unwrap_err();
        assert_eq!(err.code(), "ARGUMENT_REJECTED");
        assert!(err.to_string().contains("stdin"), "{err}");
        passes(&c, &"x".repeat(100_000));
        let long_climb = format!("{}../../outside/secret", "a/../".repeat(2000));
        refused(&c, &long_climb);
    }
}
