//! One writer at a time per file inside this process.
//!
//! The AI SDK runs a model's parallel tool calls concurrently, so two `file_edit` calls on one
//! file used to read the same content and the second rename silently dropped the first edit.
//! Every write tool (write, edit, patch, delete; both toolsets run this code) holds a
//! [`WriteLock`] on each file it changes from before it reads until after it renames.
//!
//! A file is identified by its real path inside the root, as the [`PathValidator`] resolves it:
//! symlinks and `..` are resolved, so every spelling of one file (`a/../b`, `./b`, a link to it)
//! takes the same lock. A patch takes the locks of all its files at once, so two patches that
//! touch the same files in a different order cannot deadlock.
//!
//! [`PathValidator`]: crate::PathValidator

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Condvar, LazyLock, Mutex, PoisonError};

/// Files some writer of this process holds, and a signal for when one is released.
struct Table {
    busy: Mutex<HashSet<PathBuf>>,
    released: Condvar,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    busy: Mutex::new(HashSet::new()),
    released: Condvar::new(),
});

/// Exclusive write access to a set of files until dropped.
#[derive(Debug)]
pub(crate) struct WriteLock {
    paths: Vec<PathBuf>,
}

impl WriteLock {
    /// Waits until no other writer of this process holds any of `paths`, then holds them all.
    pub fn acquire(paths: impl IntoIterator<Item = PathBuf>) -> WriteLock {
        let mut paths: Vec<PathBuf> = paths.into_iter().collect();
        paths.sort();
        paths.dedup();
        let mut busy = TABLE.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while paths.iter().any(|path| busy.contains(path)) {
            busy = TABLE
                .released
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        busy.extend(paths.iter().cloned());
        WriteLock { paths }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let mut busy = TABLE.busy.lock().unwrap_or_else(PoisonError::into_inner);
        for path in &self.paths {
            busy.remove(path);
        }
        drop(busy);
        TABLE.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn holders_of_one_path_take_turns_and_other_paths_are_free() {
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (inside, most) = (inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _lock = WriteLock::acquire([PathBuf::from("/lock-test/one")]);
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        // A different path is never blocked by them.
        let other = WriteLock::acquire([PathBuf::from("/lock-test/other")]);
        drop(other);
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn sets_taken_in_opposite_orders_do_not_deadlock() {
        let (a, b) = (PathBuf::from("/lock-test/a"), PathBuf::from("/lock-test/b"));
        let threads: Vec<_> = (0..2)
            .map(|turn| {
                let (a, b) = (a.clone(), b.clone());
                std::thread::spawn(move || {
                    for _ in 0..500 {
                        let order = if turn == 0 {
                            [a.clone(), b.clone()]
                        } else {
                            [b.clone(), a.clone()]
                        };
                        let _lock = WriteLock::acquire(order);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        // Released: both can be taken again.
        let _both = WriteLock::acquire([a, b]);
    }
}
