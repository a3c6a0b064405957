//! What a few programs do to their arguments before they use them, where that would get past
//! the argument checks: the checks see the text the model wrote, the program acts on what it
//! makes of it.
//!
//! - **curl** expands URL globs (`{a,b}`, `[a-z]`) unless `-g`/`--globoff` is given, so
//!   `{fil}e:///etc/passwd` and `[f-f]ile:///etc/passwd` become `file:///etc/passwd`. An
//!   argument is refused when some expansion of it starts with the `file:` scheme. curl also
//!   builds arguments from variables (`--variable` + `--expand-url '{{v}}'`), reads more options
//!   from a file (`-K`/`--config`, `-K -` from stdin), and can be told to take schemeless URLs
//!   (`--proto-default file`) or redirects (`--proto-redir`) as local files: all refused.
//! - **wget** reads more commands from `--config FILE` (`output_document = /elsewhere`): refused.
//!
//! Other programs that read options or URLs from files (git's config files, `.curlrc`,
//! `.wgetrc`) or run commands through their own features are left to the kernel sandbox; see
//! docs/security.md.

use std::path::Path;

use super::arguments::quote;
use super::program::Program;
use super::trampoline::FileId;
use crate::error::{Error, Result};

/// A program whose own argument handling is checked here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Curl,
    Wget,
}

impl Family {
    const ALL: [(Family, &'static str); 2] = [(Family::Curl, "curl"), (Family::Wget, "wget")];
}

/// The files of the programs checked here, by (device, inode), so a hard link under another
/// name is still recognised.
#[derive(Debug, Clone, Default)]
pub(crate) struct Families {
    ids: Vec<(FileId, Family)>,
}

impl Families {
    /// Looks for each program's name in `dirs`.
    pub fn find<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> Self {
        use std::os::unix::fs::MetadataExt;
        let mut ids = Vec::new();
        for dir in dirs {
            for (family, name) in Family::ALL {
                if let Ok(meta) = std::fs::metadata(dir.join(name)) {
                    let id = (meta.dev(), meta.ino());
                    if !ids.contains(&(id, family)) {
                        ids.push((id, family));
                    }
                }
            }
        }
        Self { ids }
    }

    /// The family of `program`: by the name it is run under, by its real basename (version
    /// and decorations removed: `curl-8`, `wget2`) or by its file.
    pub fn of(&self, program: &Program) -> Option<Family> {
        let names = [program.path.as_path(), program.real.as_path()];
        for (family, name) in Family::ALL {
            let named = names.iter().any(|path| {
                path.file_name()
                    .map(|base| base.to_string_lossy().to_ascii_lowercase())
                    .is_some_and(|base| {
                        let stem = base.split(['.', '-']).next().unwrap_or(&base);
                        stem.trim_end_matches(|c: char| c.is_ascii_digit()) == name
                    })
            });
            if named {
                return Some(family);
            }
        }
        let id = program.id?;
        self.ids
            .iter()
            .find(|(known, _)| *known == id)
            .map(|(_, family)| *family)
    }
}

/// Refuses the arguments `family` would turn into something the other checks cannot see.
pub(crate) fn check(family: Family, args: &[String]) -> Result<()> {
    match family {
        Family::Curl => check_curl(args),
        Family::Wget => check_wget(args),
    }
}

fn refused(index: usize, arg: &str, why: &str) -> Error {
    Error::ArgumentRejected(format!("args[{index}] ({}) {why}", quote(arg)))
}

/// curl's short options that take a value: in a cluster (`-sSo`), what follows one of them is
/// its value, not more options.
const CURL_SHORT_WITH_VALUE: &str = "AbcCdDeEFhHKmoPQrtTuUwxXyYz";

fn check_curl(args: &[String]) -> Result<()> {
    for (index, arg) in args.iter().enumerate() {
        if curl_glob_makes_file_url(arg) {
            return Err(refused(
                index,
                arg,
                "is a curl URL glob that expands to a file: URL; name local files by their path, or write the URL without {} and [] before its ':'",
            ));
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.to_ascii_lowercase();
            // curl accepts an unambiguous prefix of a long option (`--conf` is `--config`).
            if name.len() >= 4 && "config".starts_with(name.as_str()) {
                return Err(refused(
                    index,
                    arg,
                    "makes curl read more options from a file, which toolgate cannot check; pass the options as arguments",
                ));
            }
            if name.starts_with("expand") {
                return Err(refused(
                    index,
                    arg,
                    "makes curl expand {{variables}} in it, which toolgate cannot check; pass the value itself",
                ));
            }
            if name.len() > "proto".len() && name.starts_with("proto-") {
                let value = args.get(index + 1).map(|v| v.to_ascii_lowercase());
                let value = value.as_deref().unwrap_or("");
                let default = "proto-default".starts_with(name.as_str());
                if value.contains("file") || (!default && value.contains("all")) {
                    return Err(refused(
                        index,
                        arg,
                        "would let curl treat URLs as local files; name local files by their path",
                    ));
                }
            }
        } else if let Some(cluster) = arg.strip_prefix('-') {
            for letter in cluster.chars() {
                if letter == 'K' {
                    return Err(refused(
                        index,
                        arg,
                        "makes curl read more options from a file (-K), which toolgate cannot check; pass the options as arguments",
                    ));
                }
                if CURL_SHORT_WITH_VALUE.contains(letter) {
                    break;
                }
            }
        }
    }
    Ok(())
}

fn check_wget(args: &[String]) -> Result<()> {
    for (index, arg) in args.iter().enumerate() {
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long).to_ascii_lowercase();
            // wget accepts an unambiguous prefix of a long option (`--conf=x` is `--config=x`).
            if name.len() >= 4 && "config".starts_with(name.as_str()) {
                return Err(refused(
                    index,
                    arg,
                    "makes wget read more commands from a file, which toolgate cannot check; pass them as arguments (-e)",
                ));
            }
        }
    }
    Ok(())
}

/// Whether some expansion of curl's URL globbing turns `arg` into a `file:` URL.
///
/// The scheme of an expansion is what precedes its first `:`. When no glob precedes the first
/// `:` of the text, every expansion has that literal scheme and the plain `file:` check sees it.
/// Otherwise the text is run through a matcher for `file:` (leading blanks allowed, any case)
/// that takes every branch of `{a,b}` and every character of `[x-y]` at once, so the cost stays
/// linear however many expansions there are.
pub(crate) fn curl_glob_makes_file_url(arg: &str) -> bool {
    let first_glob = arg.find(['{', '[']);
    let first_colon = arg.find(':');
    match (first_glob, first_colon) {
        (Some(glob), Some(colon)) if glob < colon => {}
        _ => return false,
    }
    let mut states = Matcher::start();
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                let mut alternatives = Vec::new();
                let mut current = String::new();
                for inner in chars.by_ref() {
                    match inner {
                        '}' => break,
                        ',' => alternatives.push(std::mem::take(&mut current)),
                        other => current.push(other),
                    }
                }
                alternatives.push(current);
                let mut next = Matcher::none();
                for alternative in &alternatives {
                    let mut branch = states;
                    for inner in alternative.chars() {
                        branch = branch.step(|want| want.eq_ignore_ascii_case(&inner));
                    }
                    next = next.union(branch);
                }
                states = next;
            }
            '[' => {
                let mut range = String::new();
                for inner in chars.by_ref() {
                    if inner == ']' {
                        break;
                    }
                    range.push(inner);
                }
                // `[a-z]`, `[a-z:2]` (with a step), `[01-10]`: any character in the range.
                let span = range.split(':').next().unwrap_or("");
                let mut ends = span.chars().filter(|c| *c != '-');
                let (low, high) = match (ends.next(), span.chars().last()) {
                    (Some(low), Some(high)) => (low, high),
                    _ => return true,
                };
                states = states.step(|want| {
                    let (low, high) = (low.to_ascii_lowercase(), high.to_ascii_lowercase());
                    (low..=high).contains(&want.to_ascii_lowercase())
                        || (high..=low).contains(&want.to_ascii_lowercase())
                });
            }
            '\\' => {
                let escaped = chars.next().unwrap_or('\\');
                states = states.step(|want| want.eq_ignore_ascii_case(&escaped));
            }
            other => states = states.step(|want| want.eq_ignore_ascii_case(&other)),
        }
        if states.matched() {
            return true;
        }
        if states.is_empty() {
            return false;
        }
    }
    false
}

/// The set of positions reached in `"file:"` (as bits), plus "still in leading blanks".
#[derive(Clone, Copy)]
struct Matcher {
    positions: u8,
}

impl Matcher {
    const TARGET: &'static [char] = &['f', 'i', 'l', 'e', ':'];
    /// Bit 6: before the scheme, where blanks may still come.
    const LEADING: u8 = 1 << 6;

    fn start() -> Self {
        Self {
            positions: 1 | Self::LEADING,
        }
    }

    fn none() -> Self {
        Self { positions: 0 }
    }

    fn union(self, other: Self) -> Self {
        Self {
            positions: self.positions | other.positions,
        }
    }

    fn matched(self) -> bool {
        self.positions & (1 << Self::TARGET.len()) != 0
    }

    fn is_empty(self) -> bool {
        self.positions == 0
    }

    /// Advances every position by one character for which `accepts(wanted)` holds.
    fn step(self, accepts: impl Fn(char) -> bool) -> Self {
        let mut next = 0u8;
        if self.positions & Self::LEADING != 0 && accepts(' ') {
            next |= 1 | Self::LEADING;
        }
        if self.positions & Self::LEADING != 0 && accepts('\t') {
            next |= 1 | Self::LEADING;
        }
        for (at, want) in Self::TARGET.iter().enumerate() {
            if self.positions & (1 << at) != 0 && accepts(*want) {
                next |= 1 << (at + 1);
            }
        }
        // A completed match stays completed.
        next |= self.positions & (1 << Self::TARGET.len());
        Self { positions: next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn curl_globs_that_spell_file_are_found() {
        for arg in [
            "{fil}e:///etc/passwd",
            "[f-f]ile:///etc/passwd",
            "{http://x,fi}le:///etc/passwd",
            "fi{l,x}e:/etc/passwd",
            "fil{e:,x}///etc/passwd",
            "[e-g][h-j][k-m][d-f]:///etc/passwd",
            "{F}ILE:///etc/passwd",
            " {f}ile:///etc/passwd",
            "[a-z:2]ile:///x",
            "f[i]le:///x",
        ] {
            assert!(curl_glob_makes_file_url(arg), "{arg}");
        }
    }

    #[test]
    fn other_globs_and_json_pass() {
        for arg in [
            "https://example.com/{a,b}/[1-10].png",
            "{http,https}://example.com/",
            "[a-c]ttp://x",
            r#"{"key":"value","path":"/x"}"#,
            "[1,2,3]",
            "file-list.txt",
            "{fil}x:///etc",
            "x{fil}e:///etc",
            "no colon {at} all",
        ] {
            assert!(!curl_glob_makes_file_url(arg), "{arg}");
        }
    }

    #[test]
    fn curl_options_that_read_or_build_arguments_are_refused() {
        for list in [
            &["-K", "cfg"][..],
            &["-sK", "cfg"],
            &["-sSK-"],
            &["--config", "cfg"],
            &["--conf", "cfg"],
            &["--expand-url", "{{v}}"],
            &["--proto-default", "file", "etc/passwd"],
            &["--proto-def", "FILE", "x"],
            &["--proto-redir", "=all", "https://x"],
            &["--proto-redir", "+file", "https://x"],
            &["-o", "out", "{fil}e:///etc/passwd"],
        ] {
            let err = check(Family::Curl, &args(list)).expect_err(&format!("{list:?}"));
            assert_eq!(err.code(), "ARGUMENT_REJECTED");
            assert!(err.to_string().contains("args["), "{err}");
        }
        for list in [
            &["-sS", "https://example.com"][..],
            &["-d", r#"{"a":1}"#, "https://x"],
            &["-oK", "https://x"],
            &["-HK: v", "https://x"],
            &["--proto", "=https", "https://x"],
            &["--proto-redir", "=https", "https://x"],
            &["--compressed", "https://x"],
        ] {
            check(Family::Curl, &args(list)).unwrap_or_else(|err| panic!("{list:?}: {err}"));
        }
    }

    #[test]
    fn wget_config_files_are_refused() {
        for arg in ["--config=x", "--config", "--conf=x", "--CONFIG=x"] {
            assert!(check(Family::Wget, &args(&[arg, "u"])).is_err(), "{arg}");
        }
        check(
            Family::Wget,
            &args(&["--content-disposition", "-O", "x", "u"]),
        )
        .unwrap();
    }
}
