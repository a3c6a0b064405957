//! The variables that send a call's programs to its proxy: the standard proxy variables in
//! both spellings and what the common clients read besides.
//!
//! One port serves HTTP (`CONNECT` and absolute-form requests) and SOCKS5, so every variable
//! names the same address. `NO_PROXY` is emptied: inside the sandbox nothing is reached
//! directly, loopback included (the proxy judges `127.0.0.1` like any address).

use std::net::SocketAddr;

/// Variables that must not come from toolgate's own environment when a call has a proxy: the
/// parent's proxy would otherwise be named where ours is meant.
pub const REPLACED_VARIABLES: &[&str] = &[
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

/// The child's proxy variables for a proxy listening on `proxy` (as the child reaches it).
///
/// | variable | read by |
/// |---|---|
/// | `http_proxy`, `https_proxy` (lower case) | curl (which ignores upper-case `HTTP_PROXY`), git, wget, Python, pip, uv |
/// | `HTTP_PROXY`, `HTTPS_PROXY` | Node with `NODE_USE_ENV_PROXY=1`, Go, Rust (reqwest), Deno, most others |
/// | `ALL_PROXY`, `all_proxy` (`socks5h://`: the proxy resolves names) | curl and others for any TCP |
/// | `NO_PROXY`, `no_proxy` (empty) | everyone: nothing bypasses the proxy |
/// | `NODE_USE_ENV_PROXY=1` | Node ≥ 24 (and 22.21): `fetch` and `http` use the variables |
/// | `npm_config_proxy`, `npm_config_https_proxy`, `npm_config_noproxy` | npm, npx (also when a project's `.npmrc` names another proxy) |
/// | `YARN_HTTP_PROXY`, `YARN_HTTPS_PROXY` | Yarn ≥ 2 |
/// | `PIP_PROXY` | pip (also for a `pip.conf` that names another) |
pub fn proxy_environment(proxy: SocketAddr) -> Vec<(&'static str, String)> {
    let http = format!("http://{proxy}");
    let socks = format!("socks5h://{proxy}");
    let mut vars = Vec::new();
    for name in [
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
    ] {
        vars.push((name, http.clone()));
    }
    for name in ["ALL_PROXY", "all_proxy"] {
        vars.push((name, socks.clone()));
    }
    for name in ["NO_PROXY", "no_proxy", "npm_config_noproxy"] {
        vars.push((name, String::new()));
    }
    vars.push(("NODE_USE_ENV_PROXY", "1".into()));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_is_pointed_at_the_one_port() {
        let vars = proxy_environment("127.0.0.1:3128".parse().unwrap());
        let get = |name: &str| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.as_str())
        };
        for name in [
            "http_proxy",
            "HTTPS_PROXY",
            "npm_config_https_proxy",
            "PIP_PROXY",
        ] {
            assert_eq!(get(name), Some("http://127.0.0.1:3128"), "{name}");
        }
        assert_eq!(get("ALL_PROXY"), Some("socks5h://127.0.0.1:3128"));
        assert_eq!(get("NO_PROXY"), Some(""));
        assert_eq!(get("no_proxy"), Some(""));
        assert_eq!(get("NODE_USE_ENV_PROXY"), Some("1"));
        // Every standard variable that could name another proxy is replaced.
        for name in REPLACED_VARIABLES {
            assert!(
                get(name).is_some() || name.to_ascii_lowercase().starts_with("ftp"),
                "{name}"
            );
        }
    }
}
