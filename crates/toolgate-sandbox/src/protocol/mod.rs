//! What toolgate and its launcher say to each other: the launcher's command line (also the
//! word list of a server request), its exit codes and message prefix, and (on Linux) the
//! messages of the launcher server ([`wire`]).
//!
//! A policy and a call travel as words: `[--parent PID] [--best-effort] [--network |
//! --network-proxy PORT] [--seccomp] [--read PATH]... [--write PATH]... [--device PATH]...
//! [--protect PATH]... [--hide PATH]... [--limit NAME=VALUE]... [--require-view] [--tty]
//! [--call-dir DIR] [--proxy-handoff FD] [--cwd DIR] [--env K=V]... [-- PROGRAM [ARG]...]`, on the one-shot
//! launcher's command line or, joined by [`words::join`], in a server request.

pub mod kind;
#[cfg(target_os = "linux")]
pub mod offer;
#[cfg(target_os = "linux")]
pub mod wire;
pub mod words;

/// toolgate's pid: the launcher (or server) ends when it does.
pub const ARG_PARENT: &str = "--parent";
/// Run with what the kernel offers instead of failing where it lacks Landlock or seccomp.
pub const ARG_BEST_EFFORT: &str = "--best-effort";
/// Allow network access (without it: no TCP bind or connect, only unix sockets, no connect).
pub const ARG_NETWORK: &str = "--network";
/// Install the seccomp filters; the launcher compiles them itself, for the policy's
/// `--network`. (Launchers before the protocol's version 2 took a compiled filter as the
/// value and refuse this form, so an old launcher never runs a policy without its filters.)
pub const ARG_SECCOMP: &str = "--seccomp";
/// A path to read and execute (a directory: everything under it).
pub const ARG_READ: &str = "--read";
/// A path to read, write, create in and remove from.
pub const ARG_WRITE: &str = "--write";
/// A device file to read, write and ioctl.
pub const ARG_DEVICE: &str = "--device";
/// The launcher's probe: prints `key=value` words (see [`probe`]) and exits.
pub const ARG_PROBE: &str = "--probe";
/// The network through toolgate's egress proxy only: the call gets a network namespace of
/// its own with `lo` up and a listener on `127.0.0.1:PORT` (handed to toolgate), may connect
/// to that port only, and cannot resolve names itself.
pub const ARG_NETWORK_PROXY: &str = "--network-proxy";
/// The one-shot launcher's: with `--network-proxy`, the descriptor (inherited, a unix
/// `SOCK_SEQPACKET` socket whose other end toolgate holds) over which the call's init hands
/// the proxy's listener to toolgate (`LISTENER` + [fd]) and waits for `HANDED_OFF` before the
/// program starts. The launcher server hands its calls' listeners over the call's socket.
pub const ARG_PROXY_HANDOFF: &str = "--proxy-handoff";
/// A path every process sees read-only, also inside a writable root (its view mounts it
/// read-only over itself).
pub const ARG_PROTECT: &str = "--protect";
/// A path replaced by an empty read-only node in the view: unreadable, unwritable,
/// unlinkable.
pub const ARG_HIDE: &str = "--hide";
/// One limit, `NAME=VALUE`: `processes`, `memoryMb`, `tmpMb`, `cpuSeconds`, `fileSizeMb`.
pub const ARG_LIMIT: &str = "--limit";
/// Refuse to run without the view (a promised guarantee needs it: protected or hidden
/// paths inside reachable roots, the proxy network).
pub const ARG_REQUIRE_VIEW: &str = "--require-view";
/// The one-shot launcher keeps the terminal's session (the program may use the terminal it
/// was given); without it the program has a session of its own and no controlling terminal.
pub const ARG_TTY: &str = "--tty";
/// The call's private directory (its `HOME` and `TMPDIR` are `home/` and `tmp/` in it): in
/// the view, a tmpfs of the call's own is mounted on its parent and it is made there.
pub const ARG_CALL_DIR: &str = "--call-dir";
/// Leave out one layer (`view`, `ipc`, `network-namespace`, `limits`): for measuring what
/// each costs; toolgate never sends it.
pub const ARG_WITHOUT: &str = "--without";
/// Ends the options; the program and its arguments follow.
pub const ARG_END: &str = "--";
/// The program's working directory (a server request; the one-shot launcher keeps its own).
pub const ARG_CWD: &str = "--cwd";
/// One `NAME=value` of the program's environment (a server request; the one-shot launcher
/// passes its own environment on).
pub const ARG_ENV: &str = "--env";
/// Start as the launcher server, the socket on stdin: `--serve --parent PID [--clean DIR]`.
pub const ARG_SERVE: &str = "--serve";
/// The server's: a directory to remove when toolgate is gone (its private directories).
pub const ARG_CLEAN: &str = "--clean";

/// Exit code of the launcher when the sandbox could not be set up (nothing ran).
pub const EXIT_SETUP_FAILED: i32 = 125;
/// Exit code of the launcher when the program could not be executed.
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit code of the launcher when the program was not found.
pub const EXIT_NOT_FOUND: i32 = 127;
/// How every message of the launcher's own starts on stderr.
pub const LAUNCHER_MESSAGE_PREFIX: &str = "toolgate-sandbox: ";

/// How the one-shot launcher says, on the last line of stderr (after the prefix), which
/// limits the call ran into (comma-separated names).
pub const LIMIT_REPORT: &str = "the call ran into its limit: ";

/// The port of the egress proxy's listener inside a call's network namespace.
pub const PROXY_PORT: u16 = 3128;

/// The keys of the launcher's `--probe` output (`key=0|1`, and `cgroups=TEXT` last).
pub mod probe {
    /// User namespaces can be made (with capabilities in them).
    pub const USER_NAMESPACES: &str = "user_namespaces";
    /// A PID namespace can be made.
    pub const PID_NAMESPACE: &str = "pid_namespace";
    /// A view (mount namespace, bind mounts, a new root) can be built.
    pub const VIEW: &str = "view";
    /// A new `/proc` can be mounted in the view (else the host's is bound).
    pub const FRESH_PROC: &str = "fresh_proc";
    /// A network namespace can be made.
    pub const NETWORK_NAMESPACE: &str = "network_namespace";
    /// How limits are enforced (the rest of the line).
    pub const CGROUPS: &str = "cgroups";
}
