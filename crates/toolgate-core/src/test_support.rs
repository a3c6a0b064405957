//! Helpers shared by the unit tests of several modules.

use std::time::Duration;

#[path = "../tests/common/launcher.rs"]
mod launcher;

pub use launcher::launcher;

/// A pid is gone when it no longer exists or is a zombie nobody has reaped yet (PID 1 in a
/// container may not reap); either way it runs no code.
pub fn process_is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to two seconds for `pid` to be gone.
pub async fn wait_until_gone(pid: u32) -> bool {
    for _ in 0..100 {
        if process_is_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
