//! A long-lived stdio server's guarded paths, repaired between its tool calls too.
//!
//! The view cannot mount over a protected path that does not exist yet (a `.git` in a work
//! directory inside a repository, `toolgate.permissions.yaml`), so what a process creates there
//! is removed after the process's call. A server writes whenever it likes, also between its
//! calls, and git or toolgate on the host would find such a file meanwhile: a thread of the
//! server's launch checks the paths every [`WATCH_INTERVAL`] and keeps the repairs' messages
//! for the next tool call's result. A server that makes such paths again and again would win
//! that race most of the time: when [`STOP_AFTER_CHECKS`] checks in a row had to repair, its
//! process group is killed.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sandbox::{GuardSnapshot, Sandbox};

/// How often a server's guarded paths are checked between its calls.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(100);
/// Messages kept for the next call at most (a server that keeps planting says so anyway).
const MAX_PENDING: usize = 64;
/// Checks in a row that had to repair, after which the server is stopped: configuration made
/// once may be a tool's mistake, made again within 0.1 s of each removal it is a loop.
pub const STOP_AFTER_CHECKS: usize = 3;

/// What the watching thread and the after-call check share.
struct Shared {
    sandbox: Arc<Sandbox>,
    before: GuardSnapshot,
    /// Repairs not reported yet; `None` once the watch stops. One repair at a time.
    pending: Mutex<Option<Vec<String>>>,
    stopped: Condvar,
    /// The server's process group, once started, and the repairs so far.
    server: Mutex<Server>,
}

#[derive(Default)]
struct Server {
    group: Option<i32>,
    /// Checks in a row that repaired something.
    streak: usize,
    killed: bool,
}

/// The guarded paths of one server: repaired on demand and by a thread meanwhile.
pub(super) struct GuardWatch {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for GuardWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardWatch").finish_non_exhaustive()
    }
}

impl GuardWatch {
    /// Starts watching the guarded paths of `sandbox` against their states `before` (no thread
    /// when it guards nothing, or when one cannot be started: the after-call check remains).
    pub(super) fn start(sandbox: Arc<Sandbox>, before: GuardSnapshot) -> Self {
        let watched = !sandbox.guarded_paths_are_empty();
        let shared = Arc::new(Shared {
            sandbox,
            before,
            pending: Mutex::new(Some(Vec::new())),
            stopped: Condvar::new(),
            server: Mutex::new(Server::default()),
        });
        let thread = watched
            .then(|| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name("toolgate-mcp-guards".into())
                    .spawn(move || watch(&shared))
                    .ok()
            })
            .flatten();
        Self { shared, thread }
    }

    /// Repairs now and returns every repair since the last call of this, the thread's too.
    pub(super) fn repair(&self) -> Vec<String> {
        let mut pending = lock(&self.shared.pending);
        let mut messages = pending.as_mut().map(std::mem::take).unwrap_or_default();
        messages.extend(self.shared.sandbox.repair_guarded(&self.shared.before));
        messages
    }

    /// The server's process group (its launcher's pid, the group leader), to stop it with.
    pub(super) fn set_process_group(&self, group: i32) {
        if group > 1 {
            lock(&self.shared.server).group = Some(group);
        }
    }
}

impl Shared {
    /// One more check of the watch, which repaired `repairs` paths: after
    /// [`STOP_AFTER_CHECKS`] such checks in a row, kills the server's process group (once) and
    /// says so.
    fn count(&self, repairs: usize) -> Option<String> {
        let mut server = lock(&self.server);
        server.streak = if repairs == 0 { 0 } else { server.streak + 1 };
        if server.streak < STOP_AFTER_CHECKS || server.killed {
            return None;
        }
        let group = server.group?;
        server.killed = true;
        // SAFETY: kill has no memory effects; the group is the server's launcher's own.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        Some(format!(
            "toolgate: the MCP server made protected configuration again at {} checks in a row, each time after it was removed; the server was stopped",
            server.streak
        ))
    }
}

/// The thread: a repair every [`WATCH_INTERVAL`] until the watch stops.
fn watch(shared: &Shared) {
    let mut pending = lock(&shared.pending);
    loop {
        pending = shared
            .stopped
            .wait_timeout(pending, WATCH_INTERVAL)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        let Some(kept) = pending.as_mut() else {
            return;
        };
        let repaired = shared.sandbox.repair_guarded(&shared.before);
        let stopped = shared.count(repaired.len());
        for message in stopped.into_iter().chain(repaired) {
            if kept.len() < MAX_PENDING {
                kept.push(message);
            }
        }
    }
}

impl Drop for GuardWatch {
    fn drop(&mut self) {
        lock(&self.shared.pending).take();
        self.shared.stopped.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
