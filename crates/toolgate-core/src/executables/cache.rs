//! The description cache: what each protocol tool answered to `description`, keyed by the
//! tool's real path and its (size, mtime, inode) — plus the device and ctime, so that a file
//! swapped in from another disk or edited with its mtime reset is still noticed. An unchanged
//! tool is therefore never spawned again for discovery.
//!
//! It lives in `$XDG_CACHE_HOME/toolgate/executable-tools.json` (or `~/.cache/toolgate/`).
//! Only good descriptions are kept: a broken tool is asked again next time, so fixing what it
//! depends on (an installed module, a file it reads) is seen without touching the tool. A cache
//! that cannot be read or parsed is ignored and rebuilt. Writes merge with what another process
//! may have written meanwhile and replace the file atomically (temp file + rename), so a reader
//! never sees half a file.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs::Metadata;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::protocol::Description;

/// The cache file inside the cache directory.
pub const CACHE_FILE: &str = "executable-tools.json";
/// Bump when the format or the meaning of an entry changes; older files are then rebuilt.
/// 2: input schemas are checked with linear-time patterns, so descriptions learnt under the
/// backtracking engine are asked (and judged) again.
const FORMAT_VERSION: u32 = 2;
/// A cache file larger than this is treated as corrupt.
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// The identity of a file's content as `stat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub size: u64,
    pub mtime_sec: i64,
    pub mtime_nsec: i64,
    pub inode: u64,
    pub device: u64,
    pub ctime_sec: i64,
    pub ctime_nsec: i64,
}

impl Fingerprint {
    /// The fingerprint of a file from its metadata (symlinks followed by the caller).
    pub fn of(meta: &Metadata) -> Self {
        Self {
            size: meta.size(),
            mtime_sec: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            inode: meta.ino(),
            device: meta.dev(),
            ctime_sec: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    fingerprint: Fingerprint,
    description: Description,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: BTreeMap<String, Entry>,
}

/// The toolgate cache directory: `$XDG_CACHE_HOME/toolgate`, else `$HOME/.cache/toolgate`.
/// `None` when neither is usable (XDG requires an absolute path).
pub fn default_cache_dir() -> Option<PathBuf> {
    cache_dir_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`default_cache_dir`] for given values of `XDG_CACHE_HOME` and `HOME`.
pub fn cache_dir_from(xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute =
        |value: Option<OsString>| value.map(PathBuf::from).filter(|path| path.is_absolute());
    absolute(xdg_cache_home)
        .or_else(|| absolute(home).map(|home| home.join(".cache")))
        .map(|base| base.join("toolgate"))
}

/// Descriptions by real path, read from and written to one cache file.
#[derive(Debug, Default)]
pub struct DescriptionCache {
    file: Option<PathBuf>,
    entries: BTreeMap<String, Entry>,
    /// What this process added (`Some`) or found stale (`None`) since loading.
    changes: BTreeMap<String, Option<Entry>>,
}

impl DescriptionCache {
    /// A cache that keeps nothing.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Opens the cache in `dir` (its file need not exist). A file that cannot be read or
    /// parsed counts as empty and is replaced on the next [`save`](Self::save).
    pub fn open(dir: &Path) -> Self {
        let file = dir.join(CACHE_FILE);
        let entries = read_entries(&file);
        Self {
            file: Some(file),
            entries,
            changes: BTreeMap::new(),
        }
    }

    /// The cache file, when the cache is enabled.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The cached description of the tool at `real_path`, if its fingerprint still matches.
    pub fn get(&self, real_path: &Path, fingerprint: &Fingerprint) -> Option<&Description> {
        let key = real_path.to_str()?;
        self.entries
            .get(key)
            .filter(|entry| &entry.fingerprint == fingerprint)
            .map(|entry| &entry.description)
    }

    /// Remembers a good description.
    pub fn put(&mut self, real_path: &Path, fingerprint: Fingerprint, description: Description) {
        if self.file.is_none() {
            return;
        }
        let Some(key) = real_path.to_str() else {
            return; // JSON keys are text; a non-UTF-8 path is simply not cached
        };
        let entry = Entry {
            fingerprint,
            description,
        };
        self.entries.insert(key.to_string(), entry.clone());
        self.changes.insert(key.to_string(), Some(entry));
    }

    /// Drops entries for files directly inside `directories` that are not in `seen` (the tool
    /// was removed, or is no longer a good tool).
    pub fn forget_unseen(&mut self, directories: &[PathBuf], seen: &HashSet<PathBuf>) {
        let stale: Vec<String> = self
            .entries
            .keys()
            .filter(|key| {
                let path = Path::new(key.as_str());
                path.parent()
                    .is_some_and(|parent| directories.iter().any(|dir| dir == parent))
                    && !seen.contains(path)
            })
            .cloned()
            .collect();
        for key in stale {
            self.entries.remove(&key);
            self.changes.insert(key, None);
        }
    }

    /// Whether [`save`](Self::save) has anything to write.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// Writes this process's changes, merged into whatever the file holds now. Does nothing
    /// when nothing changed. Errors (a read-only home, a full disk) are returned for the caller
    /// to ignore: the cache only saves time.
    pub fn save(&mut self) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        if self.changes.is_empty() {
            return Ok(());
        }
        let mut current = read_entries(file);
        for (key, change) in std::mem::take(&mut self.changes) {
            match change {
                Some(entry) => current.insert(key, entry),
                None => current.remove(&key),
            };
        }
        let dir = file.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let text = serde_json::to_vec(&CacheFile {
            version: FORMAT_VERSION,
            entries: current,
        })
        .map_err(std::io::Error::other)?;
        let temp = dir.join(format!(
            ".{CACHE_FILE}.{}.{}.tmp",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let written = (|| {
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)?;
            out.write_all(&text)?;
            std::fs::rename(&temp, file)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written
    }
}

fn read_entries(file: &Path) -> BTreeMap<String, Entry> {
    let Ok(meta) = std::fs::metadata(file) else {
        return BTreeMap::new();
    };
    if !meta.is_file() || meta.len() > MAX_CACHE_BYTES {
        return BTreeMap::new();
    }
    std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<CacheFile>(&bytes).ok())
        .filter(|cache| cache.version == FORMAT_VERSION)
        .map(|cache| cache.entries)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executables::test_support::Scratch;
    use serde_json::json;

    fn description(name: &str) -> Description {
        Description {
            name: name.into(),
            description: "d".into(),
            input_schema: crate::executables::schema_text(&json!({"type": "object"})),
        }
    }

    fn fingerprint_of(path: &Path) -> Fingerprint {
        Fingerprint::of(&std::fs::metadata(path).unwrap())
    }

    #[test]
    fn the_cache_dir_follows_xdg_then_home() {
        let dir = cache_dir_from(Some("/x/cache".into()), Some("/home/u".into()));
        assert_eq!(dir, Some(PathBuf::from("/x/cache/toolgate")));
        let dir = cache_dir_from(None, Some("/home/u".into()));
        assert_eq!(dir, Some(PathBuf::from("/home/u/.cache/toolgate")));
        // XDG says a relative value is to be ignored.
        let dir = cache_dir_from(Some("rel".into()), Some("/home/u".into()));
        assert_eq!(dir, Some(PathBuf::from("/home/u/.cache/toolgate")));
        assert_eq!(cache_dir_from(None, None), None);
    }

    #[test]
    fn entries_survive_a_reopen_and_only_match_the_same_fingerprint() {
        let scratch = Scratch::new();
        let tool = scratch.path().join("tool");
        std::fs::write(&tool, "v1").unwrap();
        let cache_dir = scratch.path().join("cache");
        let mut cache = DescriptionCache::open(&cache_dir);
        cache.put(&tool, fingerprint_of(&tool), description("t"));
        cache.save().unwrap();

        let reopened = DescriptionCache::open(&cache_dir);
        assert_eq!(
            reopened.get(&tool, &fingerprint_of(&tool)).unwrap().name,
            "t"
        );
        let mode = std::fs::metadata(cache_dir.join(CACHE_FILE))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        std::fs::write(&tool, "v2").unwrap(); // same size, new mtime/ctime
        assert!(reopened.get(&tool, &fingerprint_of(&tool)).is_none());
    }

    #[test]
    fn a_corrupt_or_foreign_cache_file_is_ignored_and_replaced() {
        let scratch = Scratch::new();
        let tool = scratch.path().join("tool");
        std::fs::write(&tool, "x").unwrap();
        let cache_dir = scratch.dir("cache");
        for garbage in [
            &b"{not json"[..],
            br#"{"version": 999, "entries": {}}"#,
            br#"{"version": 2, "entries": {"/a": {"fingerprint": 5}}}"#,
            br#"{"version": 1, "entries": {}}"#,
            b"\0\0\0",
        ] {
            std::fs::write(cache_dir.join(CACHE_FILE), garbage).unwrap();
            let mut cache = DescriptionCache::open(&cache_dir);
            assert!(cache.get(&tool, &fingerprint_of(&tool)).is_none());
            cache.put(&tool, fingerprint_of(&tool), description("t"));
            cache.save().unwrap();
            let text = std::fs::read_to_string(cache_dir.join(CACHE_FILE)).unwrap();
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(parsed["version"], FORMAT_VERSION);
            assert!(DescriptionCache::open(&cache_dir)
                .get(&tool, &fingerprint_of(&tool))
                .is_some());
        }
    }

    #[test]
    fn saves_merge_with_entries_written_by_another_process() {
        let scratch = Scratch::new();
        let cache_dir = scratch.path().join("cache");
        let a = scratch.path().join("a");
        let b = scratch.path().join("b");
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let mut first = DescriptionCache::open(&cache_dir);
        let mut second = DescriptionCache::open(&cache_dir);
        first.put(&a, fingerprint_of(&a), description("a"));
        second.put(&b, fingerprint_of(&b), description("b"));
        first.save().unwrap();
        second.save().unwrap();
        let merged = DescriptionCache::open(&cache_dir);
        assert!(merged.get(&a, &fingerprint_of(&a)).is_some());
        assert!(merged.get(&b, &fingerprint_of(&b)).is_some());
        let leftovers: Vec<_> = std::fs::read_dir(&cache_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != CACHE_FILE)
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn unseen_tools_of_scanned_directories_are_forgotten_and_others_kept() {
        let scratch = Scratch::new();
        let scanned = scratch.dir("scanned");
        let other = scratch.dir("other");
        let (gone, kept, elsewhere) = (scanned.join("gone"), scanned.join("kept"), other.join("x"));
        for path in [&gone, &kept, &elsewhere] {
            std::fs::write(path, "x").unwrap();
        }
        let cache_dir = scratch.path().join("cache");
        let mut cache = DescriptionCache::open(&cache_dir);
        for path in [&gone, &kept, &elsewhere] {
            cache.put(path, fingerprint_of(path), description("t"));
        }
        cache.save().unwrap();
        let mut cache = DescriptionCache::open(&cache_dir);
        cache.forget_unseen(
            std::slice::from_ref(&scanned),
            &HashSet::from([kept.clone()]),
        );
        cache.save().unwrap();
        let cache = DescriptionCache::open(&cache_dir);
        assert!(cache.get(&gone, &fingerprint_of(&gone)).is_none());
        assert!(cache.get(&kept, &fingerprint_of(&kept)).is_some());
        assert!(cache.get(&elsewhere, &fingerprint_of(&elsewhere)).is_some());
    }

    #[test]
    fn a_disabled_cache_keeps_nothing_and_writes_nothing() {
        let scratch = Scratch::new();
        let tool = scratch.path().join("tool");
        std::fs::write(&tool, "x").unwrap();
        let mut cache = DescriptionCache::disabled();
        cache.put(&tool, fingerprint_of(&tool), description("t"));
        assert!(cache.get(&tool, &fingerprint_of(&tool)).is_none());
        cache.save().unwrap();
        assert!(cache.file().is_none());
    }
}
