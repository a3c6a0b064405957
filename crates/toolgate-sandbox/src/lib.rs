//! toolgate's kernel sandbox, the part that runs in its own processes: the `toolgate-sandbox`
//! launcher, its server, the init of every call, and the Landlock and seccomp confinement of
//! the program's process. It knows nothing of toolgate's policies: toolgate-core decides which
//! paths a tool may reach and sends them as a word list (see [`protocol`]); this crate applies
//! exactly that.
//!
//! - [`protocol`] (always built): what toolgate and the launcher say to each other, the
//!   launcher's arguments, exit codes and message prefix, the word-list encoding and the
//!   messages of the launcher server. toolgate-core depends on this crate with
//!   `default-features = false` and gets only this, [`kernel`] and [`cleanup`].
//! - [`kernel`]: what the running kernel offers (Landlock ABI, seccomp filters).
//! - [`cleanup`]: removing a private directory without following symlinks (toolgate at its
//!   exit, the server when toolgate was killed).
//! - Feature `launcher` (on by default, needed by the binary): `launcher` (the one-shot
//!   launcher and `main`), `server` (the launcher server), `plan` (parsing a word list),
//!   `tree` (namespaces, the init that reaps, the subreaper), `confine` (the program's process:
//!   Landlock, `no_new_privs`, seccomp), `seccomp` (compiling the filters), `opened` (the
//!   server's open paths).
//!
//! Layering, top to bottom: `launcher` → `server` → `opened` → `confine` → `plan`, `seccomp`,
//! `tree`, `cleanup`, `kernel` → `protocol`. No module names one above it.

pub mod cleanup;
#[cfg(target_os = "linux")]
pub mod kernel;
pub mod protocol;

#[cfg(all(target_os = "linux", feature = "launcher"))]
mod confine;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod features;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod init;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod isolate;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod launcher;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod limits;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod opened;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod plan;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod seccomp;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod serve;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod server;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod sys;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod tree;
#[cfg(all(target_os = "linux", feature = "launcher"))]
mod view;

#[cfg(all(target_os = "linux", feature = "launcher"))]
pub use launcher::launcher_main;
