//! The one child-environment policy: what a process toolgate starts for a tool (`cli_execute`,
//! `shell`, executable tools and their discovery) receives from toolgate's own environment.
//!
//! Copied when set: `PATH` (absolute entries only), `LANG` and every `LC_*`, `TZ`, `USER`,
//! `LOGNAME`, the proxy variables and an explicit passthrough list. Nothing else, so secrets in
//! the parent's environment stay where they are.
//!
//! `HOME`, `TMPDIR` and every `XDG_*` variable are toolgate's: with
//! [`ExecRequest::private_dirs`](super::ExecRequest::private_dirs) exec points them into an
//! empty per-call directory, and they can never be passed through (a `HOME` that is the work
//! directory, or the user's real one, turns files there into program configuration).
//!
//! Relative `PATH` entries (`.`, an empty entry, `bin`, `node_modules/.bin`) are dropped: the
//! child's working directory is the work directory, where the model writes files, so such an
//! entry would let a file it wrote named `git` run in place of the real program, also for a
//! command policy that resolves allowlisted names on this `PATH`. A program in the work
//! directory can still be run by its path (`./bin/tool`) where the policy allows that.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// `PATH` for the child when the parent has none, or none with an absolute entry.
pub const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The proxy variables, in both spellings programs read (the network module's list: the same
/// names a call's own proxy replaces).
pub const PROXY_VARIABLES: &[&str] = crate::network::REPLACED_VARIABLES;

/// Variables copied from the parent besides `PATH`, the `LC_*` family and the proxies.
const BASE_VARIABLES: &[&str] = &["LANG", "TZ", "USER", "LOGNAME"];

/// Variables toolgate sets itself for a call; never copied, never passed through.
pub const RESERVED_VARIABLES: &[&str] = &["HOME", "TMPDIR"];

/// Whether `name` belongs to toolgate ([`RESERVED_VARIABLES`] and every `XDG_*`).
pub fn is_reserved(name: &str) -> bool {
    RESERVED_VARIABLES.contains(&name) || name.starts_with("XDG_")
}

/// Checks a passthrough list when a tool is configured. `setting` names the option in the
/// message (`env_passthrough`, `executables.env_passthrough`). Errors are `CONFIG_INVALID`.
pub fn check_passthrough(setting: &str, names: &[String]) -> Result<()> {
    for name in names {
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(Error::ConfigInvalid(format!(
                "{setting}: '{}' is not a variable name; use letters, digits and '_' (like GITHUB_TOKEN)",
                name.escape_debug()
            )));
        }
        if is_reserved(name) {
            return Err(Error::ConfigInvalid(format!(
                "{setting} cannot contain {name}: HOME, TMPDIR and XDG_* are set by toolgate to a private, empty directory for each call; remove it"
            )));
        }
    }
    Ok(())
}

/// The child's environment, read from this process now. Names in `passthrough` that
/// [`check_passthrough`] would refuse are never copied (check the list when the tool is built
/// to report them).
pub fn child_environment(passthrough: &[String]) -> Vec<(OsString, OsString)> {
    child_environment_from(std::env::vars_os(), passthrough)
}

/// [`child_environment`] from the given parent environment.
pub fn child_environment_from(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    let mut path = None;
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    for (name, value) in parent {
        let Some(text) = name.to_str() else { continue };
        if text == "PATH" {
            path = Some(value);
            continue;
        }
        let copied = BASE_VARIABLES.contains(&text)
            || text.starts_with("LC_")
            || PROXY_VARIABLES.contains(&text)
            || passthrough.iter().any(|wanted| wanted == text);
        if copied && !is_reserved(text) && !env.iter().any(|(known, _)| known == &name) {
            env.push((name, value));
        }
    }
    env.insert(0, ("PATH".into(), absolute_path_entries(path.as_deref())));
    env
}

/// The absolute entries of `path`, or [`FALLBACK_PATH`] when there are none.
pub fn absolute_path_entries(path: Option<&OsStr>) -> OsString {
    let kept: Vec<PathBuf> = path
        .map(|path| {
            std::env::split_paths(path)
                .filter(|entry| entry.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    if kept.is_empty() {
        return FALLBACK_PATH.into();
    }
    std::env::join_paths(kept).unwrap_or_else(|_| FALLBACK_PATH.into())
}

/// Points the child at its call's egress proxy (network by host), listening on `proxy` as
/// the child reaches it: the variables of [`crate::network::proxy_environment`] replace any
/// proxy variable copied from toolgate's own environment.
pub fn set_proxy(env: &mut Vec<(OsString, OsString)>, proxy: std::net::SocketAddr) {
    env.retain(|(name, _)| {
        !crate::network::REPLACED_VARIABLES
            .iter()
            .any(|replaced| name.as_bytes() == replaced.as_bytes())
    });
    for (name, value) in crate::network::proxy_environment(proxy) {
        set(env, name, value.into());
    }
}

/// The value of `name` in `env`.
pub fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
    env.iter()
        .find(|(key, _)| key.as_bytes() == name.as_bytes())
        .map(|(_, value)| value)
}

/// Sets `name` to `value` in `env`, replacing an earlier value.
pub(crate) fn set(env: &mut Vec<(OsString, OsString)>, name: &str, value: OsString) {
    match env
        .iter_mut()
        .find(|(key, _)| key.as_bytes() == name.as_bytes())
    {
        Some((_, old)) => *old = value,
        None => env.push((name.into(), value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_the_policy_variables_and_the_passthrough_list_are_copied() {
        let env = child_environment_from(
            parent(&[
                ("PATH", "/usr/bin:/bin"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("LC_TIME", "en_GB.UTF-8"),
                ("TZ", "UTC"),
                ("USER", "u"),
                ("LOGNAME", "u"),
                ("https_proxy", "http://proxy:3128"),
                ("NO_PROXY", "localhost"),
                ("AWS_SECRET_ACCESS_KEY", "hunter2"),
                ("OPENAI_API_KEY", "sk-secret"),
                ("GITHUB_TOKEN", "ghp_x"),
                ("HOME", "/home/u"),
                ("TMPDIR", "/home/u/tmp"),
                ("XDG_CONFIG_HOME", "/home/u/.config"),
                ("LD_PRELOAD", "/evil.so"),
                ("GIT_CONFIG_GLOBAL", "/home/u/x"),
                ("LCX", "not LC_"),
            ]),
            &["GITHUB_TOKEN".into(), "UNSET_VAR".into()],
        );
        assert_eq!(
            names(&env),
            [
                "PATH",
                "LANG",
                "LC_ALL",
                "LC_TIME",
                "TZ",
                "USER",
                "LOGNAME",
                "https_proxy",
                "NO_PROXY",
                "GITHUB_TOKEN"
            ]
        );
        assert_eq!(lookup(&env, "GITHUB_TOKEN").unwrap(), "ghp_x");
    }

    #[test]
    fn reserved_names_are_never_copied_even_when_listed() {
        let env = child_environment_from(
            parent(&[
                ("HOME", "/home/u"),
                ("XDG_DATA_HOME", "/d"),
                ("TMPDIR", "/t"),
            ]),
            &["HOME".into(), "XDG_DATA_HOME".into(), "TMPDIR".into()],
        );
        assert_eq!(names(&env), ["PATH"]);
    }

    #[test]
    fn relative_path_entries_are_dropped_and_an_empty_path_falls_back() {
        let env = child_environment_from(
            parent(&[("PATH", ".:bin::node_modules/.bin:/usr/bin:/bin")]),
            &[],
        );
        assert_eq!(lookup(&env, "PATH").unwrap(), "/usr/bin:/bin");
        for path in [None, Some(""), Some(".:bin")] {
            let pairs: Vec<(OsString, OsString)> = path
                .map(|p| vec![("PATH".into(), p.into())])
                .unwrap_or_default();
            let env = child_environment_from(pairs, &[]);
            assert_eq!(lookup(&env, "PATH").unwrap(), FALLBACK_PATH, "{path:?}");
        }
    }

    #[test]
    fn passthrough_names_are_checked_when_configured() {
        for bad in [
            "",
            "A=B",
            "1ABC",
            "A B",
            "A\0",
            "HOME",
            "TMPDIR",
            "XDG_RUNTIME_DIR",
            "XDG_",
        ] {
            let err = check_passthrough("env_passthrough", &[bad.into()]).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{bad:?}");
            assert!(err.to_string().contains("env_passthrough"), "{err}");
        }
        let err = check_passthrough("env_passthrough", &["HOME".into()]).unwrap_err();
        assert!(err.to_string().contains("HOME"), "{err}");
        check_passthrough("x", &["GITHUB_TOKEN".into(), "_A1".into(), "PATH".into()]).unwrap();
    }

    #[test]
    fn the_process_environment_is_read_through_the_same_policy() {
        // SAFETY: a name no other test reads or writes.
        unsafe { std::env::set_var("TOOLGATE_ENV_POLICY_SECRET", "hunter2") };
        let env = child_environment(&[]);
        assert!(lookup(&env, "TOOLGATE_ENV_POLICY_SECRET").is_none());
        assert!(lookup(&env, "HOME").is_none());
        assert!(lookup(&env, "PATH").is_some());
    }

    #[test]
    fn a_call_with_a_proxy_gets_ours_and_never_the_parents() {
        let mut env = child_environment_from(
            parent(&[
                ("PATH", "/usr/bin"),
                ("https_proxy", "http://corporate:3128"),
                ("FTP_PROXY", "http://corporate:21"),
                ("NO_PROXY", "internal.corp"),
            ]),
            &[],
        );
        set_proxy(&mut env, "127.0.0.1:40000".parse().unwrap());
        assert_eq!(
            lookup(&env, "https_proxy").unwrap(),
            "http://127.0.0.1:40000"
        );
        assert_eq!(lookup(&env, "NO_PROXY").unwrap(), "");
        assert!(lookup(&env, "FTP_PROXY").is_none());
        assert_eq!(lookup(&env, "PATH").unwrap(), "/usr/bin");
    }

    #[test]
    fn set_replaces_or_appends() {
        let mut env = parent(&[("A", "1")]);
        set(&mut env, "A", "2".into());
        set(&mut env, "B", "3".into());
        assert_eq!(env, parent(&[("A", "2"), ("B", "3")]));
    }
}
