//! The environment a command's child receives: PATH, LANG, HOME (= the work directory), the
//! proxy variables and an explicit passthrough list, each only when set. Nothing else from the
//! parent's environment reaches the child, so secrets in it stay where they are.
//!
//! The environment is read once, when the tool is built (on the caller's thread, so that no
//! other thread reads the environment while JavaScript may change it).

use std::ffi::OsString;
use std::path::Path;

use crate::error::{Error, Result};

/// PATH for the child when the parent has none.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

const PROXY_VARIABLES: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "ftp_proxy",
    "all_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "FTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
];

/// Builds the child's environment from this process's environment.
pub(crate) fn child_environment(
    work_dir: &Path,
    passthrough: &[String],
) -> Result<Vec<(OsString, OsString)>> {
    for name in passthrough {
        check_name(name)?;
    }
    let mut env: Vec<(OsString, OsString)> = vec![
        (
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| FALLBACK_PATH.into()),
        ),
        ("HOME".into(), work_dir.as_os_str().to_owned()),
    ];
    let copied = std::iter::once("LANG")
        .chain(PROXY_VARIABLES.iter().copied())
        .chain(passthrough.iter().map(String::as_str));
    for name in copied {
        if env.iter().any(|(key, _)| key == name) {
            continue;
        }
        if let Some(value) = std::env::var_os(name) {
            env.push((name.into(), value));
        }
    }
    Ok(env)
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(Error::ConfigInvalid(format!(
            "env_passthrough entry '{}' is not a variable name; give names like GITHUB_TOKEN",
            name.escape_debug()
        )));
    }
    if name == "HOME" {
        return Err(Error::ConfigInvalid(
            "env_passthrough cannot contain HOME: the child's HOME is always the work directory; remove it".into(),
        ));
    }
    Ok(())
}

/// The value of `name` in `env`.
pub(crate) fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
    env.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_documented_variables_and_the_passthrough_list_are_copied() {
        // Variables no other test reads, so setting them here cannot disturb parallel tests.
        std::env::set_var("TOOLGATE_ENV_TEST_SECRET", "hunter2");
        std::env::set_var("TOOLGATE_ENV_TEST_TOKEN", "t0k3n");
        let env = child_environment(
            Path::new("/work"),
            &[
                "TOOLGATE_ENV_TEST_TOKEN".into(),
                "TOOLGATE_ENV_TEST_UNSET".into(),
                "PATH".into(),
            ],
        )
        .unwrap();
        assert_eq!(lookup(&env, "HOME").unwrap(), "/work");
        assert!(lookup(&env, "PATH").is_some());
        assert_eq!(lookup(&env, "TOOLGATE_ENV_TEST_TOKEN").unwrap(), "t0k3n");
        assert!(lookup(&env, "TOOLGATE_ENV_TEST_SECRET").is_none());
        assert!(lookup(&env, "TOOLGATE_ENV_TEST_UNSET").is_none());
        assert_eq!(env.iter().filter(|(key, _)| key == "PATH").count(), 1);
        let allowed = ["PATH", "HOME", "LANG", "TOOLGATE_ENV_TEST_TOKEN"];
        for (key, _) in &env {
            let key = key.to_string_lossy();
            assert!(
                allowed.contains(&key.as_ref()) || PROXY_VARIABLES.contains(&key.as_ref()),
                "unexpected variable {key}"
            );
        }
    }

    #[test]
    fn bad_passthrough_names_are_config_errors() {
        for name in ["", "A=B", "HOME"] {
            let err = child_environment(Path::new("/w"), &[name.into()]).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{name}");
        }
    }
}
