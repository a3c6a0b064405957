//! Shells and trampolines: programs that would run *another* program chosen by their
//! arguments, which would defeat the allowlist, the argument checks and the rules.
//!
//! They are recognised by name, both as asked for and by the real basename after every symlink
//! is resolved, and also under versioned or decorated names (`bash5`, `bash-5.2`,
//! `busybox.static`, `su-exec`).

use std::path::Path;

/// Why a program kind is refused.
const SHELL: &str = "it is a shell, and toolgate never runs a shell; ask for the program itself";
const MULTI_CALL: &str =
    "it is a multi-call binary that contains a shell; allow the individual program instead";
const TRAMPOLINE: &str =
    "it runs another program given in its arguments, which would get around the allowlist; allow the program itself";
const PRIVILEGE: &str =
    "it runs another program with other privileges or as another user, which toolgate never does";

const REFUSED: &[(&str, &str)] = &[
    ("sh", SHELL),
    ("bash", SHELL),
    ("rbash", SHELL),
    ("zsh", SHELL),
    ("dash", SHELL),
    ("ash", SHELL),
    ("ksh", SHELL),
    ("mksh", SHELL),
    ("pdksh", SHELL),
    ("oksh", SHELL),
    ("lksh", SHELL),
    ("csh", SHELL),
    ("tcsh", SHELL),
    ("fish", SHELL),
    ("yash", SHELL),
    ("posh", SHELL),
    ("elvish", SHELL),
    ("nu", SHELL),
    ("pwsh", SHELL),
    ("xonsh", SHELL),
    ("git-shell", SHELL),
    ("busybox", MULTI_CALL),
    ("toybox", MULTI_CALL),
    ("env", TRAMPOLINE),
    ("xargs", TRAMPOLINE),
    ("nohup", TRAMPOLINE),
    ("setsid", TRAMPOLINE),
    ("timeout", TRAMPOLINE),
    ("nice", TRAMPOLINE),
    ("ionice", TRAMPOLINE),
    ("chroot", TRAMPOLINE),
    ("strace", TRAMPOLINE),
    ("ltrace", TRAMPOLINE),
    ("script", TRAMPOLINE),
    ("stdbuf", TRAMPOLINE),
    ("taskset", TRAMPOLINE),
    ("chrt", TRAMPOLINE),
    ("unshare", TRAMPOLINE),
    ("nsenter", TRAMPOLINE),
    ("flock", TRAMPOLINE),
    ("watch", TRAMPOLINE),
    ("time", TRAMPOLINE),
    ("parallel", TRAMPOLINE),
    ("unbuffer", TRAMPOLINE),
    ("systemd-run", TRAMPOLINE),
    ("firejail", TRAMPOLINE),
    ("bwrap", TRAMPOLINE),
    ("prlimit", TRAMPOLINE),
    ("setpriv", TRAMPOLINE),
    ("capsh", TRAMPOLINE),
    ("runcon", TRAMPOLINE),
    ("numactl", TRAMPOLINE),
    ("start-stop-daemon", TRAMPOLINE),
    ("sudo", PRIVILEGE),
    ("doas", PRIVILEGE),
    ("su", PRIVILEGE),
    ("runuser", PRIVILEGE),
    ("pkexec", PRIVILEGE),
    ("sg", PRIVILEGE),
    ("newgrp", PRIVILEGE),
    ("gosu", PRIVILEGE),
    ("chpst", PRIVILEGE),
];

/// The reason `name` (a program name or a path; only its last component counts) is refused,
/// or `None` when it is an ordinary program.
pub fn refusal_reason(name: &str) -> Option<&'static str> {
    let base = Path::new(name)
        .file_name()
        .map(|base| base.to_string_lossy().to_ascii_lowercase())?;
    let reason = name_forms(&base).find_map(|form| {
        REFUSED
            .iter()
            .find(|(refused, _)| *refused == form)
            .map(|(_, reason)| *reason)
    });
    reason
}

/// The name as given, and with decorations removed: what follows the first `.` or `-`, and
/// trailing version digits (`bash5`, `ksh93`, `bash-5.2`, `busybox.static`, `su-exec`).
fn name_forms(base: &str) -> impl Iterator<Item = &str> {
    let before_dot = base.split('.').next().unwrap_or(base);
    let before_dash = before_dot.split('-').next().unwrap_or(before_dot);
    [base, before_dot, before_dash]
        .into_iter()
        .flat_map(|form| [form, strip_version(form)])
        .filter(|form| !form.is_empty())
}

fn strip_version(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_' || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_and_trampolines_are_refused_under_every_spelling() {
        for name in [
            "sh",
            "bash",
            "zsh",
            "dash",
            "ksh",
            "csh",
            "tcsh",
            "fish",
            "busybox",
            "env",
            "xargs",
            "sudo",
            "doas",
            "su",
            "nohup",
            "setsid",
            "timeout",
            "nice",
            "chroot",
            "strace",
            "script",
            "bash5",
            "bash-5.2",
            "ksh93",
            "busybox.static",
            "su-exec",
            "/usr/bin/env",
            "/bin/BASH",
            "python-and-bash-no",
            "zsh-5.9",
            "pwsh7",
        ] {
            if name == "python-and-bash-no" {
                assert_eq!(refusal_reason(name), None, "{name}");
                continue;
            }
            assert!(refusal_reason(name).is_some(), "{name} should be refused");
        }
    }

    #[test]
    fn ordinary_programs_pass() {
        for name in [
            "git",
            "jq",
            "ls",
            "envsubst",
            "shred",
            "sha256sum",
            "scriptreplay",
            "python3",
            "timeoutx",
            "gitx",
            "/usr/bin/git",
            "node",
            "cargo",
            "rg",
            "kubectl",
            "ssh",
        ] {
            assert_eq!(refusal_reason(name), None, "{name} should pass");
        }
    }

    #[test]
    fn reasons_say_what_kind_of_program_it_is() {
        assert!(refusal_reason("bash").unwrap().contains("shell"));
        assert!(refusal_reason("xargs").unwrap().contains("another program"));
        assert!(refusal_reason("sudo").unwrap().contains("privileges"));
        assert!(refusal_reason("busybox").unwrap().contains("multi-call"));
    }
}
