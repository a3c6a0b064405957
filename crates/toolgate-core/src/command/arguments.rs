//! Argument text that is refused before anything else looks at it: what only a shell would act
//! on (`$(`, backticks), what no argument should carry (CR, LF, NUL), `file:` URLs, which name
//! local files in a form that path confinement cannot see through, and git's `ext::` and `fd::`
//! remote transports, which run a command or talk over inherited descriptors instead of
//! fetching from a place.

use crate::error::{Error, Result};

/// Refuses `arg` (at `index` in the argument list) when it contains `$(`, a backtick, CR, LF,
/// NUL, a `file:` URL in any case with any number of slashes, or an `ext::` / `fd::` remote.
pub fn check_argument_text(index: usize, arg: &str) -> Result<()> {
    let refused = |what: &str, fix: &str| {
        Err(Error::ArgumentRejected(format!(
            "args[{index}] ({}) contains {what}; {fix}",
            quote(arg)
        )))
    };
    const NO_SHELL: &str =
        "no shell runs the program, so nothing would be substituted: pass the literal value instead";
    if arg.contains('\0') {
        return refused("a NUL byte", "no program argument can hold one");
    }
    if arg.contains('\n') || arg.contains('\r') {
        return refused(
            "a line break",
            "pass one line per argument (or use stdin for multi-line text)",
        );
    }
    if arg.contains("$(") {
        return refused("'$(' (command substitution)", NO_SHELL);
    }
    if arg.contains('`') {
        return refused("a backtick (command substitution)", NO_SHELL);
    }
    if !arg.contains(':') {
        return Ok(());
    }
    let lower = arg.to_ascii_lowercase();
    if contains_scheme(&lower, "file:") {
        return refused(
            "a file: URL",
            "name local files by their path, which is checked against the work directory",
        );
    }
    for transport in ["ext::", "fd::"] {
        if contains_scheme(&lower, transport) {
            return refused(
                &format!("git's '{transport}' remote transport (it runs a command or uses inherited descriptors)"),
                "give a repository URL or a path in the work directory",
            );
        }
    }
    Ok(())
}

/// `scheme` (such as `file:`) at the start of `lower` (lowercase text) or after a character that
/// cannot be part of a scheme name: `profile:x` is not `file:`, but `--url=FILE:///etc` and
/// `git+file:/x` are.
fn contains_scheme(lower: &str, scheme: &str) -> bool {
    lower
        .match_indices(scheme)
        .any(|(at, _)| at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric())
}

/// An argument for an error message: quoted, control characters escaped, long ones shortened.
pub(crate) fn quote(arg: &str) -> String {
    const MAX: usize = 120;
    let escaped: String = arg.escape_debug().collect();
    if escaped.chars().count() > MAX {
        let head: String = escaped.chars().take(MAX).collect();
        format!("'{head}…'")
    } else {
        format!("'{escaped}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(arg: &str) -> String {
        let err = check_argument_text(3, arg).expect_err(arg);
        assert_eq!(err.code(), "ARGUMENT_REJECTED", "{arg}");
        let message = err.to_string();
        assert!(message.contains("args[3]"), "{message}");
        message
    }

    #[test]
    fn substitutions_and_control_characters_are_refused() {
        assert!(rejected("$(id)").contains("$("));
        assert!(rejected("x`id`").contains("backtick"));
        assert!(rejected("a\nb").contains("line break"));
        assert!(rejected("a\rb").contains("line break"));
        assert!(rejected("a\0b").contains("NUL"));
    }

    #[test]
    fn file_urls_are_refused_in_any_case_with_any_slashes() {
        for arg in [
            "file:///etc/passwd",
            "FILE:/etc/passwd",
            "File://etc/passwd",
            "file:etc/passwd",
            "--url=file:////etc/shadow",
            "git+file:///srv/repo",
            "x,file:/etc",
        ] {
            assert!(rejected(arg).contains("file: URL"), "{arg}");
        }
    }

    #[test]
    fn git_command_transports_are_refused() {
        for arg in [
            "ext::sh -c touch% /tmp/pwned",
            "EXT::sh",
            "--repo=ext::x",
            "fd::3",
            "-c remote.x.url=ext::sh",
        ] {
            assert!(rejected(arg).contains("transport"), "{arg}");
        }
        for arg in ["next::x", "text::y", "a::b", "std::fs::read"] {
            check_argument_text(0, arg).unwrap_or_else(|err| panic!("{arg}: {err}"));
        }
    }

    #[test]
    fn ordinary_text_passes() {
        for arg in [
            "profile:dev",
            "$HOME",
            "${x}",
            "a|b",
            "https://example.com/a/b",
            "--format=%h %s",
            "HEAD~1",
            "naïve ünïcode",
            "",
            "dollar$ (paren)",
        ] {
            check_argument_text(0, arg).unwrap_or_else(|err| panic!("{arg}: {err}"));
        }
    }

    #[test]
    fn quoted_arguments_are_escaped_and_shortened() {
        assert_eq!(quote("a\nb"), "'a\\nb'");
        assert!(quote(&"x".repeat(500)).ends_with("…'"));
    }
}
