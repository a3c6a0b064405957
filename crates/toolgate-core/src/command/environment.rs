//! The environment a command's child receives: the one child-environment policy of
//! [`crate::exec::env`] (PATH with absolute entries only, LANG/LC_*, TZ, USER/LOGNAME, the
//! proxy variables and the passthrough list), read once when the tool is built (on the
//! caller's thread, so that no other thread reads the environment while JavaScript may change
//! it).
//!
//! `HOME`, `TMPDIR` and the XDG directories are not in it: every call gets a private, empty
//! one from exec ([`crate::exec::ExecRequest::private_dirs`]), never the work directory, so
//! that dotfiles the model writes there (`.curlrc`, `.gitconfig`) configure nothing.

use std::ffi::OsString;

use crate::error::Result;
use crate::exec::env;

/// Builds the child's environment from this process's environment; `CONFIG_INVALID` for a
/// passthrough name that is not a variable name or is one of toolgate's own (HOME, TMPDIR,
/// XDG_*).
pub(crate) fn child_environment(passthrough: &[String]) -> Result<Vec<(OsString, OsString)>> {
    env::check_passthrough("env_passthrough", passthrough)?;
    Ok(env::child_environment(passthrough))
}

/// The value of `name` in `env`.
pub(crate) fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
    env::lookup(env, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_applies_the_one_policy() {
        // Variables no other test reads, so setting them here cannot disturb parallel tests.
        std::env::set_var("TOOLGATE_ENV_TEST_SECRET", "hunter2");
        std::env::set_var("TOOLGATE_ENV_TEST_TOKEN", "t0k3n");
        let env = child_environment(&[
            "TOOLGATE_ENV_TEST_TOKEN".into(),
            "TOOLGATE_ENV_TEST_UNSET".into(),
            "PATH".into(),
        ])
        .unwrap();
        assert!(
            lookup(&env, "HOME").is_none(),
            "exec sets a private HOME per call"
        );
        assert_eq!(lookup(&env, "TOOLGATE_ENV_TEST_TOKEN").unwrap(), "t0k3n");
        assert!(lookup(&env, "TOOLGATE_ENV_TEST_SECRET").is_none());
        assert!(lookup(&env, "TOOLGATE_ENV_TEST_UNSET").is_none());
        assert_eq!(env.iter().filter(|(key, _)| key == "PATH").count(), 1);
        let path = lookup(&env, "PATH").unwrap();
        assert!(std::env::split_paths(path).all(|entry| entry.is_absolute()));
    }

    #[test]
    fn bad_passthrough_names_are_config_errors() {
        for name in ["", "A=B", "HOME", "TMPDIR", "XDG_CONFIG_HOME"] {
            let err = child_environment(&[name.into()]).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{name}");
        }
    }
}
