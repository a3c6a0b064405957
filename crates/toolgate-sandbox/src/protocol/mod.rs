//! What toolgate and its launcher say to each other: the launcher's command line (also the
//! word list of a server request), its exit codes and message prefix, and (on Linux) the
//! messages of the launcher server ([`wire`]).
//!
//! A policy and a call travel as words: `[--parent PID] [--best-effort] [--network]
//! [--seccomp] [--read PATH]... [--write PATH]... [--device PATH]... [--cwd DIR] [--env
//! K=V]... [-- PROGRAM [ARG]...]`, on the one-shot launcher's command line or, joined by
//! [`words::join`], in a server request.

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
/// The launcher's probe: prints `user_namespaces=0|1 pid_namespace=0|1` and exits.
pub const ARG_PROBE: &str = "--probe";
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
