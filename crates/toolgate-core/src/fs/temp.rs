//! Names of the hidden files an atomic write makes beside its target, and the sweep that removes
//! the temporary files of writers that died (`kill -9` mid-write left hundreds of MiB behind).
//!
//! A name says who made it: `.<name>.toolgate-<pidns>-<pid>-<start>-<n>.<suffix>`, where
//! `<pidns>` is the inode of the writer's PID namespace, `<pid>` its process id, `<start>` its
//! start time (clock ticks since boot, from `/proc/<pid>/stat`, so a recycled pid is not
//! mistaken for the writer) and `<n>` a counter. A `.tmp` file whose writer is in our PID
//! namespace and no longer runs is stale: nothing will ever rename it.
//!
//! The sweep runs after an atomic write into a directory, at most once per directory every
//! [`SWEEP_INTERVAL`] per process, so a directory of 100,000 entries is listed once, not on
//! every write. Stale files appear only when a process dies, and the next process that writes
//! there sweeps them on its first write.
//!
//! Never removed: temporary files of live writers, of writers in another PID namespace (a
//! container sharing the directory: its pids mean nothing here), and `.orig` files (a patch's
//! copy of an original, which may be the only one left if the patch was killed).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::fs::AtFlags;

/// How often one process sweeps the same directory at most.
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_secs(600);
/// Directories remembered as swept; past this the memory is cleared (and sweeps happen again).
const REMEMBERED_DIRECTORIES: usize = 4096;
/// What comes between the target's name and the writer's identity.
const MARK: &str = ".toolgate-";

/// Who this process is, as written into its temporary names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Writer {
    namespace: u64,
    pid: u32,
    start: u64,
}

static ME: LazyLock<Writer> = LazyLock::new(|| {
    let pid = std::process::id();
    Writer {
        namespace: pid_namespace().unwrap_or(0),
        pid,
        start: start_time(pid).unwrap_or(0),
    }
});

/// A fresh hidden name beside `target`: `.<target>.toolgate-<pidns>-<pid>-<start>-<n>.<suffix>`.
/// The target's name is cut to 64 bytes so the whole stays well below NAME_MAX.
pub(crate) fn hidden_name(target: &OsStr, suffix: &str) -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let me = *ME;
    let bytes = target.as_bytes();
    let mut name = OsString::from(".");
    name.push(OsStr::from_bytes(&bytes[..bytes.len().min(64)]));
    name.push(format!(
        "{MARK}{}-{}-{}-{}.{suffix}",
        me.namespace,
        me.pid,
        me.start,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    name
}

/// Removes the stale temporary files in the directory open as `dir` (at `path`), unless this
/// process swept it recently. Failures are ignored: the sweep is housekeeping, never a reason
/// for a write to fail.
pub(crate) fn sweep_if_due(dir: BorrowedFd<'_>, path: &Path) {
    /// A directory: device, inode and path.
    type Directory = (u64, u64, PathBuf);
    static SWEPT: LazyLock<Mutex<HashMap<Directory, Instant>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let Ok(stat) = rustix::fs::fstat(dir) else {
        return;
    };
    // Inode numbers are reused once a directory is removed: the path tells a new one apart.
    let key = (stat.st_dev, stat.st_ino, path.to_path_buf());
    {
        let mut swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
        if swept
            .get(&key)
            .is_some_and(|last| last.elapsed() < SWEEP_INTERVAL)
        {
            return;
        }
        if swept.len() >= REMEMBERED_DIRECTORIES {
            swept.clear();
        }
        swept.insert(key, Instant::now());
    }
    sweep(dir);
}

/// Removes every `.tmp` file in the directory open as `dir` whose writer is dead. Returns how
/// many were removed.
pub(crate) fn sweep(dir: BorrowedFd<'_>) -> usize {
    let Ok(mut listing) = rustix::fs::Dir::read_from(dir) else {
        return 0;
    };
    let mut removed = 0;
    while let Some(Ok(entry)) = listing.read() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        let Some(writer) = stale_writer(name) else {
            continue;
        };
        if !is_alive(writer) && rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The writer named in a temporary file's name, if `name` is one of ours.
fn stale_writer(name: &OsStr) -> Option<Writer> {
    let name = std::str::from_utf8(name.as_bytes()).ok().or_else(|| {
        // The target's part may be any bytes; only the identity after the mark must be text.
        let bytes = name.as_bytes();
        let at = bytes
            .windows(MARK.len())
            .rposition(|w| w == MARK.as_bytes())?;
        std::str::from_utf8(&bytes[at..]).ok()
    })?;
    if !name.starts_with('.') && !name.starts_with(MARK) {
        return None;
    }
    let identity = name.rsplit_once(MARK)?.1.strip_suffix(".tmp")?;
    let mut fields = identity.split('-').map(str::parse::<u64>);
    let (Some(Ok(namespace)), Some(Ok(pid)), Some(Ok(start)), Some(Ok(_)), None) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return None;
    };
    Some(Writer {
        namespace,
        pid: u32::try_from(pid).ok()?,
        start,
    })
}

/// Whether the writer may still rename its file. Unknown cases count as alive.
fn is_alive(writer: Writer) -> bool {
    let me = *ME;
    if writer.namespace != me.namespace || me.namespace == 0 || writer == me {
        return true;
    }
    match std::fs::read(format!("/proc/{}/stat", writer.pid)) {
        // Another process now has that pid when its start time differs.
        Ok(stat) => parse_start_time(&stat).is_none_or(|start| start == writer.start),
        Err(err) => err.kind() != std::io::ErrorKind::NotFound,
    }
}

/// Start time of a process in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
fn start_time(pid: u32) -> Option<u64> {
    parse_start_time(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_start_time(stat: &[u8]) -> Option<u64> {
    // The command name (field 2) may contain spaces and parentheses: fields are counted after
    // its last ')'. The next field is 3 (state), so field 22 is the 20th after it.
    let after = &stat[stat.iter().rposition(|&b| b == b')')? + 1..];
    let field = std::str::from_utf8(after)
        .ok()?
        .split_ascii_whitespace()
        .nth(19)?;
    field.parse().ok()
}

fn pid_namespace() -> Option<u64> {
    std::fs::metadata("/proc/self/ns/pid")
        .ok()
        .map(|meta| meta.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_writer_and_are_read_back() {
        let name = hidden_name(OsStr::new("notes.txt"), "tmp");
        let text = name.to_str().unwrap();
        assert!(text.starts_with(".notes.txt.toolgate-"), "{text}");
        let writer = stale_writer(&name).unwrap();
        assert_eq!(writer, *ME);
        assert!(ME.start > 0 && ME.namespace > 0, "{:?}", *ME);
        assert!(is_alive(writer));
        // `.orig` copies and other people's dotfiles are never candidates.
        assert!(stale_writer(&hidden_name(OsStr::new("x"), "orig")).is_none());
        for other in [
            ".env",
            ".x.toolgate-1-2.tmp",
            ".x.toolgate-a-b-c-d.tmp",
            "x.tmp",
        ] {
            assert!(stale_writer(OsStr::new(other)).is_none(), "{other}");
        }
        // A long or non-UTF-8 target name still yields a readable identity.
        let long = OsStr::from_bytes(&[0xff; 300]);
        let name = hidden_name(long, "tmp");
        assert!(name.len() < 200);
        assert_eq!(stale_writer(&name), Some(*ME));
    }

    #[test]
    fn a_recycled_pid_or_a_dead_one_is_not_the_writer() {
        let me = *ME;
        let recycled = Writer {
            start: me.start + 1,
            ..me
        };
        assert!(!is_alive(recycled));
        let gone = Writer {
            pid: u32::MAX - 1,
            ..me
        };
        assert!(!is_alive(gone));
        let elsewhere = Writer {
            namespace: me.namespace + 1,
            ..gone
        };
        assert!(
            is_alive(elsewhere),
            "another namespace's pids mean nothing here"
        );
    }

    #[test]
    fn start_times_are_read_past_odd_command_names() {
        let stat = b"42 (a) b (c) d) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time(b"42 (x) S 1"), None);
    }
}
