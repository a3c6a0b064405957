//! What the launcher is asked to do, as an argument list: the command line of the one-shot
//! launcher, and the same words in the requests of the launcher server. One parser for both.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStringExt;

use crate::limits::Limits;
use crate::protocol::{
    ARG_BEST_EFFORT, ARG_CALL_DIR, ARG_CWD, ARG_DEVICE, ARG_END, ARG_ENV, ARG_HIDE, ARG_LIMIT,
    ARG_NETWORK, ARG_NETWORK_PROXY, ARG_PARENT, ARG_PROTECT, ARG_PROXY_HANDOFF, ARG_READ,
    ARG_REQUIRE_VIEW, ARG_SECCOMP, ARG_TTY, ARG_WITHOUT, ARG_WRITE,
};

const USAGE: &str = "usage: toolgate-sandbox [--parent PID] [--best-effort] [--network | --network-proxy PORT [--proxy-handoff FD]] [--seccomp] [--read PATH]... [--write PATH]... [--device PATH]... [--protect PATH]... [--hide PATH]... [--limit NAME=VALUE]... [--require-view] [--tty] [--call-dir DIR] -- PROGRAM [ARG]...";

/// What the program may reach of the network.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Network {
    /// Nothing: no IP sockets, no connect (a network namespace of its own where possible).
    #[default]
    Off,
    /// Everything the host reaches.
    On,
    /// Only toolgate's egress proxy, listening on `127.0.0.1:PORT` in the call's own network
    /// namespace.
    Proxy(u16),
}

/// Layers a measurement may leave out (`--without`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Without {
    pub view: bool,
    pub ipc: bool,
    pub network_namespace: bool,
    pub limits: bool,
}

/// The policy part: what the program's process may reach.
#[derive(Debug, Default, Clone)]
pub(crate) struct Confinement {
    pub best_effort: bool,
    pub network: Network,
    /// Install the seccomp filters (the launcher compiles them from `network`).
    pub seccomp: bool,
    pub read: Vec<OsString>,
    pub write: Vec<OsString>,
    pub devices: Vec<OsString>,
    pub protect: Vec<OsString>,
    pub hide: Vec<OsString>,
    pub limits: Limits,
    /// Refuse to run where no view can be built.
    pub require_view: bool,
    /// Keep the terminal's session (the one-shot launcher of `toolgate sandbox --tty`).
    pub tty: bool,
    pub without: Without,
}

/// The program part: what to execute, where and with which environment.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub program: CString,
    pub argv: Vec<CString>,
    /// `None`: the launcher's own environment (the one-shot launcher gets the child's).
    pub env: Option<Vec<CString>>,
    /// `None`: the launcher's own working directory.
    pub cwd: Option<CString>,
}

/// A parsed argument list.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub parent: Option<libc::pid_t>,
    pub confinement: Confinement,
    pub env: Option<Vec<CString>>,
    pub cwd: Option<CString>,
    /// The call's private directory (`--call-dir`).
    pub call_dir: Option<OsString>,
    /// The one-shot launcher's inherited socket for handing the proxy's listener to toolgate
    /// (`--proxy-handoff FD`).
    pub proxy_handoff: Option<libc::c_int>,
    /// Present when the list ends with `-- PROGRAM [ARG]...`.
    pub launch: Option<Launch>,
}

impl Plan {
    /// Parses `args`. A program (`-- PROGRAM ...`) is required when `program` is true and
    /// refused otherwise (a policy registered with the server names none).
    pub fn parse(args: impl IntoIterator<Item = OsString>, program: bool) -> Result<Self, String> {
        let mut plan = Plan::default();
        let mut args = args.into_iter();
        let mut ended = false;
        while let Some(arg) = args.next() {
            let mut value = || {
                args.next()
                    .ok_or_else(|| format!("{} needs a value; {USAGE}", arg.to_string_lossy()))
            };
            let rules = &mut plan.confinement;
            match arg.to_str() {
                Some(ARG_END) => {
                    ended = true;
                    break;
                }
                Some(ARG_PARENT) => {
                    let text = value()?;
                    let pid = text
                        .to_str()
                        .and_then(|t| t.parse().ok())
                        .filter(|&pid: &libc::pid_t| pid > 0);
                    plan.parent =
                        Some(pid.ok_or_else(|| format!("--parent {text:?} is not a process id"))?);
                }
                Some(ARG_BEST_EFFORT) => rules.best_effort = true,
                Some(ARG_NETWORK) => rules.network = Network::On,
                Some(ARG_NETWORK_PROXY) => {
                    let text = value()?;
                    let port = text
                        .to_str()
                        .and_then(|t| t.parse().ok())
                        .filter(|&port: &u16| port > 0)
                        .ok_or_else(|| format!("--network-proxy {text:?} is not a port"))?;
                    rules.network = Network::Proxy(port);
                }
                Some(ARG_READ) => rules.read.push(value()?),
                Some(ARG_WRITE) => rules.write.push(value()?),
                Some(ARG_DEVICE) => rules.devices.push(value()?),
                Some(ARG_PROTECT) => rules.protect.push(value()?),
                Some(ARG_HIDE) => rules.hide.push(value()?),
                Some(ARG_LIMIT) => rules.limits.set(&value()?)?,
                Some(ARG_REQUIRE_VIEW) => rules.require_view = true,
                Some(ARG_TTY) => rules.tty = true,
                Some(ARG_WITHOUT) => {
                    let layer = value()?;
                    let without = &mut rules.without;
                    match layer.to_str() {
                        Some("view") => without.view = true,
                        Some("ipc") => without.ipc = true,
                        Some("network-namespace") => without.network_namespace = true,
                        Some("limits") => without.limits = true,
                        _ => return Err(format!("--without {layer:?}: no such layer (view, ipc, network-namespace, limits)")),
                    }
                }
                Some(ARG_CALL_DIR) => plan.call_dir = Some(value()?),
                Some(ARG_PROXY_HANDOFF) => {
                    let text = value()?;
                    let fd = text
                        .to_str()
                        .and_then(|t| t.parse().ok())
                        .filter(|&fd: &libc::c_int| fd > 2)
                        .ok_or_else(|| {
                            format!("--proxy-handoff {text:?} is not an inherited descriptor (3 or more)")
                        })?;
                    plan.proxy_handoff = Some(fd);
                }
                Some(ARG_SECCOMP) => rules.seccomp = true,
                Some(ARG_CWD) => plan.cwd = Some(c_string(value()?)?),
                Some(ARG_ENV) => plan
                    .env
                    .get_or_insert_with(Vec::new)
                    .push(c_string(value()?)?),
                _ => return Err(format!("unknown argument {arg:?}; {USAGE}")),
            }
        }
        if !program {
            return if ended {
                Err("a policy names no program".into())
            } else {
                Ok(plan)
            };
        }
        if !ended {
            return Err(format!("no program given; {USAGE}"));
        }
        let mut argv = args.map(c_string);
        let program = argv
            .next()
            .ok_or_else(|| format!("no program given; {USAGE}"))??;
        let argv = std::iter::once(Ok(program.clone()))
            .chain(argv)
            .collect::<Result<_, _>>()?;
        plan.launch = Some(Launch {
            program,
            argv,
            env: plan.env.take(),
            cwd: plan.cwd.take(),
        });
        Ok(plan)
    }
}

fn c_string(arg: OsString) -> Result<CString, String> {
    CString::new(arg.into_vec()).map_err(|_| "an argument contains a NUL byte".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn launches_policies_and_their_errors() {
        let plan = Plan::parse(
            words(&[
                "--parent",
                "12",
                "--read",
                "/usr",
                "--write",
                "/w",
                "--env",
                "A=1",
                "--cwd",
                "/w",
                "--",
                "/bin/echo",
                "hi",
            ]),
            true,
        )
        .unwrap();
        assert_eq!(plan.parent, Some(12));
        assert_eq!(plan.confinement.read, ["/usr"]);
        let launch = plan.launch.unwrap();
        assert_eq!(launch.argv, [c"/bin/echo", c"hi"]);
        assert_eq!(launch.env.unwrap(), [c"A=1"]);
        assert_eq!(launch.cwd.as_deref(), Some(c"/w"));

        let policy = Plan::parse(
            words(&["--network", "--seccomp", "--device", "/dev/null"]),
            false,
        )
        .unwrap();
        let rules = &policy.confinement;
        assert!(rules.network == Network::On && rules.seccomp && !rules.best_effort);
        assert_eq!(rules.devices, ["/dev/null"]);
        assert!(policy.launch.is_none());

        let policy = Plan::parse(
            words(&[
                "--network-proxy",
                "3128",
                "--protect",
                "/w/worker.yaml",
                "--hide",
                "/w/.env",
                "--limit",
                "processes=10",
                "--require-view",
                "--without",
                "ipc",
                "--call-dir",
                "/t/p/c",
                "--proxy-handoff",
                "3",
            ]),
            false,
        )
        .unwrap();
        let rules = &policy.confinement;
        assert_eq!(rules.network, Network::Proxy(3128));
        assert_eq!(rules.protect, ["/w/worker.yaml"]);
        assert_eq!(rules.hide, ["/w/.env"]);
        assert_eq!(rules.limits.processes, Some(10));
        assert!(rules.require_view && rules.without.ipc && !rules.without.view);
        assert_eq!(policy.proxy_handoff, Some(3));
        assert_eq!(
            policy.call_dir.as_deref(),
            Some(std::ffi::OsStr::new("/t/p/c"))
        );
        for (list, program, needle) in [
            (&["--", "/bin/true"][..], false, "names no program"),
            (&["--read", "/usr"][..], true, "no program given"),
            (&["--read"][..], true, "needs a value"),
            (&["--bogus"][..], true, "unknown argument"),
            (&["--parent", "0", "--", "x"][..], true, "not a process id"),
            (&["--network-proxy", "0"][..], false, "not a port"),
            (
                &["--proxy-handoff", "1"][..],
                false,
                "not an inherited descriptor",
            ),
            (
                &["--proxy-handoff", "x"][..],
                false,
                "not an inherited descriptor",
            ),
            (&["--limit", "cpu=1"][..], false, "unknown limit"),
            (&["--without", "seccomp"][..], false, "no such layer"),
        ] {
            let err = Plan::parse(words(list), program).unwrap_err();
            assert!(err.contains(needle), "{list:?}: {err}");
        }
    }
}
