//! Path confinement for command arguments.
//!
//! A program's arguments are only text, so every piece of an argument that could be a path is
//! treated as one. The candidates of an argument are:
//!
//! - the argument itself;
//! - what follows each `=` (`--file=/etc/shadow`, `if=/etc/shadow`, `-Dkey=/x`);
//! - for a single-dash argument, the value attached to a short flag: what follows the first
//!   letter (`-f/etc/x`), and what follows a run of letters when it starts like a path
//!   (`-xvf/etc/x`);
//! - what follows a leading `@` (response files, `curl -d @/etc/passwd`);
//! - each element of a `:` or `,` separated list (`--include=/work/a:/etc`).
//!
//! A candidate is path-like when it starts with `/`, `~` or `.`, or contains a `/`; URLs
//! (`scheme://…`) are not paths. Each path-like candidate is resolved against the work
//! directory with every symlink followed ([`PathValidator`]) and must land inside it or inside a
//! read root. A bare word (`main`, `leak`) is a path too when a symlink of that name exists in
//! the work directory: a checked-out repository can hold `leak -> /etc/shadow`, and `cat leak`
//! must not read it. `~` is the real home directory for this check (from `$HOME` and from the password
//! database; the candidate must be allowed under each), and `~user` that user's home.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use super::arguments::quote;
use crate::error::{Error, Result};
use crate::path::PathValidator;

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

    /// Refuses `arg` with `PATH_OUTSIDE_ROOT` when one of its path-like candidates lands outside
    /// the work directory and every read root.
    pub fn check_argument(&self, index: usize, arg: &str) -> Result<()> {
        let candidates = candidates_of(arg);
        for candidate in candidates.path_like {
            for absolute in self.absolute_forms(candidate) {
                self.check_path(index, arg, candidate, &absolute)?;
            }
        }
        for word in candidates.bare {
            let is_symlink = std::fs::symlink_metadata(self.work.root().join(word))
                .is_ok_and(|meta| meta.file_type().is_symlink());
            if is_symlink {
                self.check_path(index, arg, word, Path::new(word))?;
            }
        }
        Ok(())
    }

    /// The candidate as paths: one per meaning of a leading `~` (absolute), else the candidate
    /// as written (relative ones are taken from the work directory).
    fn absolute_forms(&self, candidate: &str) -> Vec<PathBuf> {
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

    /// Checks one path; a relative `path` is taken from the work directory.
    fn check_path(&self, index: usize, arg: &str, candidate: &str, path: &Path) -> Result<()> {
        let outside = match self.work.resolve(path) {
            Ok(_) => return Ok(()),
            Err(Error::PathOutsideRoot { detail, .. }) => detail,
            Err(err) => {
                return Err(Error::ArgumentRejected(format!(
                    "args[{index}] ({}): {err}",
                    quote(arg)
                )))
            }
        };
        let absolute = self.work.root().join(path);
        if self
            .read_roots
            .iter()
            .any(|root| root.resolve(&absolute).is_ok())
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
            String::new()
        } else {
            format!(" (the path in args[{index}] {})", quote(arg))
        };
        Err(Error::PathOutsideRoot {
            path: candidate.to_string(),
            root: self.work.root().to_path_buf(),
            detail: format!("{outside}{seen_as}{roots}; arguments that look like paths are confined to the work directory"),
        })
    }
}

/// The pieces of an argument: the path-like ones, always confined, and the bare words, confined
/// when a symlink of that name exists in the work directory.
#[derive(Debug, Default)]
pub(crate) struct Candidates<'a> {
    pub path_like: Vec<&'a str>,
    pub bare: Vec<&'a str>,
}

/// The path-like pieces of `arg`, deduplicated, in order.
#[cfg(test)]
pub(crate) fn path_candidates(arg: &str) -> Vec<&str> {
    candidates_of(arg).path_like
}

/// The pieces of `arg` that could name a file, deduplicated, in order.
pub(crate) fn candidates_of(arg: &str) -> Candidates<'_> {
    let mut bases = vec![arg];
    for (at, _) in arg.match_indices('=') {
        bases.push(&arg[at + 1..]);
    }
    if let Some(flags) = arg.strip_prefix('-').filter(|rest| !rest.starts_with('-')) {
        if flags.len() > 1 && flags.is_char_boundary(1) {
            bases.push(&flags[1..]);
        }
        let letters = flags.len()
            - flags
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let value = &flags[letters..];
        if letters > 0 && value.starts_with(['/', '~', '.']) {
            bases.push(value);
        }
    }

    let mut candidates = Candidates::default();
    for base in bases {
        let (pieces, has_url) = list_pieces(base);
        // A base with a URL inside (`--url=https://x/../..`) is not one path; its pieces are
        // looked at instead, the URL left out.
        if !has_url {
            add_candidate(&mut candidates, base);
        }
        for piece in pieces {
            add_candidate(&mut candidates, piece);
        }
    }
    candidates
}

/// The elements of a `:` or `,` separated list, without URLs (`scheme://` up to the next
/// `,`), and whether a URL was left out.
fn list_pieces(base: &str) -> (Vec<&str>, bool) {
    let bytes = base.as_bytes();
    let mut pieces = Vec::new();
    let mut has_url = false;
    let mut start = 0;
    let mut at = 0;
    while at <= bytes.len() {
        let separator = at == bytes.len() || matches!(bytes[at], b',' | b':');
        if !separator {
            at += 1;
            continue;
        }
        let piece = &base[start..at];
        if at < bytes.len() && bytes[at] == b':' && base[at + 1..].starts_with("//") {
            let scheme_start = piece
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
                .map_or(0, |i| i + 1);
            let scheme =
                piece[scheme_start..].trim_start_matches(|c: char| !c.is_ascii_alphabetic());
            if !scheme.is_empty() {
                has_url = true;
                pieces.push(&piece[..piece.len() - scheme.len()]);
                at = base[at..].find(',').map_or(bytes.len(), |comma| at + comma);
                start = at + 1;
                at += 1;
                continue;
            }
        }
        pieces.push(piece);
        start = at + 1;
        at += 1;
    }
    (pieces, has_url)
}

/// Adds `candidate`, and what follows a leading `@`, unless empty, a URL or already present.
fn add_candidate<'a>(candidates: &mut Candidates<'a>, candidate: &'a str) {
    for form in [candidate, candidate.strip_prefix('@').unwrap_or("")] {
        if form.is_empty() || is_url(form) {
            continue;
        }
        let list = if is_path_like(form) {
            &mut candidates.path_like
        } else {
            &mut candidates.bare
        };
        if !list.contains(&form) {
            list.push(form);
        }
    }
}

fn is_path_like(text: &str) -> bool {
    text.starts_with(['/', '~', '.']) || text.contains('/')
}

/// `scheme://…` with an RFC 3986 scheme name.
fn is_url(text: &str) -> bool {
    let Some((scheme, _)) = text.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
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

    #[test]
    fn candidates_cover_flags_lists_and_response_files() {
        assert_eq!(
            path_candidates("--file=/etc/shadow"),
            ["--file=/etc/shadow", "/etc/shadow"]
        );
        assert_eq!(path_candidates("-f/etc/x"), ["-f/etc/x", "/etc/x"]);
        assert!(path_candidates("-xvf/etc/x").contains(&"/etc/x"));
        assert!(path_candidates("if=/etc/shadow").contains(&"/etc/shadow"));
        assert!(path_candidates("@/etc/passwd").contains(&"/etc/passwd"));
        assert!(path_candidates("--path=a:/etc").contains(&"/etc"));
        assert!(path_candidates("--files=a,~/x").contains(&"~/x"));
        assert!(path_candidates("--a=b=/etc/x").contains(&"/etc/x"));
        assert!(path_candidates("HEAD~1").is_empty());
        assert!(path_candidates("--namespace=default").is_empty());
        assert!(path_candidates("https://example.com/a/b").is_empty());
        assert!(path_candidates("--url=https://example.com/../../..").is_empty());
        let mixed = path_candidates("--path=/etc:https://x/../..");
        assert!(
            mixed.contains(&"/etc") && !mixed.iter().any(|c| c.contains("..")),
            "{mixed:?}"
        );
        assert_eq!(path_candidates("a/b,https://x/y,/etc"), ["a/b", "/etc"]);
        assert_eq!(path_candidates("origin/main"), ["origin/main"]);
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
            "--namespace=default",
            "https://example.com/a/b",
            "new/file.txt",
            "-Isrc",
            "-I./src",
            "--out=build/x",
            "git@github.com:org/repo.git",
            "-n5",
            "~nosuchuser12345/x",
        ] {
            c.check_argument(0, arg)
                .unwrap_or_else(|err| panic!("{arg}: {err}"));
        }
        let inside = f.work.join("src").display().to_string();
        c.check_argument(0, &inside).unwrap();
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
            c.check_argument(0, arg)
                .unwrap_or_else(|err| panic!("{arg}: {err}"));
        }
    }

    #[test]
    fn symlinks_are_followed() {
        let f = fixture();
        symlink(&f.outside, f.work.join("escape")).unwrap();
        symlink(f.work.join("src"), f.work.join("inner")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        let message = refused(&c, "escape/secret");
        assert!(message.contains("symlink"), "{message}");
        refused(&c, "--out=escape/x");
        c.check_argument(0, "inner/x").unwrap();
    }

    #[test]
    fn read_roots_extend_what_may_be_named() {
        let f = fixture();
        std::fs::create_dir(f.work.join("vendor-docs")).unwrap();
        let c = Confinement::new(&f.work, &[f.docs.clone(), PathBuf::from("vendor-docs")]).unwrap();
        c.check_argument(0, &f.docs.join("guide.md").display().to_string())
            .unwrap();
        c.check_argument(0, "../docs/guide.md").unwrap();
        let message = refused(&c, &f.outside.display().to_string());
        assert!(message.contains("read root"), "{message}");
        let err = Confinement::new(&f.work, &[PathBuf::from("missing")]).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("read_roots"), "{err}");
    }

    #[test]
    fn unresolvable_paths_are_argument_errors() {
        let f = fixture();
        symlink("b", f.work.join("a")).unwrap();
        symlink("a", f.work.join("b")).unwrap();
        let c = Confinement::new(&f.work, &[]).unwrap();
        let err = c.check_argument(2, "a/x").unwrap_err();
        assert_eq!(err.code(), "ARGUMENT_REJECTED");
        assert!(err.to_string().contains("args[2]"), "{err}");
    }
}
