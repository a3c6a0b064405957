//! `directory_tree`: a drawing of the tree below a directory, with sizes.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Mutex;

use ignore::WalkState;

use super::access::Access;
use super::glob::search_base;
use super::text::{human_size, plural, CappedText};
use super::walk::{threads, walker, Cancel, Collector, WalkOptions};
use crate::approval::Decision;
use crate::error::{Error, Result};
use crate::limits::MAX_TREE_DEPTH;
#[cfg(test)]
use crate::path::PathValidator;

/// Files from this size up show their size.
const SHOW_SIZE_FROM: u64 = 1024;

/// What to draw.
#[derive(Debug, Clone)]
pub struct TreeRequest {
    /// Directory to draw (default: the root).
    pub path: Option<String>,
    /// Levels below `path` to show (1 = its entries only).
    pub max_depth: usize,
}

/// The drawing.
#[derive(Debug, Clone)]
pub struct TreeOutput {
    /// `path/` then `├── name` lines (directories end in `/`, files from 1 KiB show their size,
    /// directories below `max_depth` say how many entries they hold), a summary line, and a
    /// marker when cut.
    pub text: String,
    pub directories: u64,
    pub files: u64,
    pub truncated: bool,
}

struct Entry {
    name: OsString,
    kind: EntryKind,
}

enum EntryKind {
    Directory,
    /// Its size is read when it is drawn: a tree cut at 2000 lines needs few of them.
    File,
    Symlink(String),
}

/// Directory path (as bytes, cheap to hash) to its entries.
type Children = HashMap<OsString, Vec<Entry>>;

/// Draws the tree below `path` down to `max_depth` levels, skipping dotfiles, the usual
/// dependency and build directories, and what .gitignore ignores.
///
/// With path rules, blocked entries (and symlinks leading to one) are neither drawn nor counted.
pub fn tree<'a>(
    access: impl Into<Access<'a>>,
    request: &TreeRequest,
    cancel: &Cancel,
) -> Result<TreeOutput> {
    let access = access.into();
    let validator = access.validator();
    if request.max_depth == 0 || request.max_depth > MAX_TREE_DEPTH {
        return Err(Error::InvalidInput(format!(
            "max_depth is {}; it must be from 1 to {MAX_TREE_DEPTH}. Draw a subdirectory to see deeper levels",
            request.max_depth
        )));
    }
    let base = search_base(access, request.path.as_deref())?;
    let children = collect(access, &base, request.max_depth, cancel)?;
    let mut drawing = Drawing {
        children: &children,
        out: CappedText::with_defaults(),
        max_depth: request.max_depth,
        directories: 0,
        files: 0,
        cut: false,
    };
    let shown = validator.relative(&base).display().to_string();
    drawing
        .out
        .push_line(&format!("{}/", shown.trim_end_matches('/')));
    drawing.draw(&base, "", 1);
    let total: usize = children
        .iter()
        .filter(|(dir, _)| depth_of(&base, Path::new(dir)) < request.max_depth)
        .map(|(_, entries)| entries.len())
        .sum();
    let drawn = (drawing.directories + drawing.files) as usize;
    let Drawing {
        mut out,
        directories,
        files,
        cut,
        ..
    } = drawing;
    let summary = format!(
        "{}, {}",
        plural(directories, "directory", "directories"),
        plural(files, "file", "files")
    );
    let marker = if cut {
        Some(format!(
            "{summary} shown; [truncated: {} more entries not shown. Call directory_tree on a subdirectory or lower max_depth]",
            total.saturating_sub(drawn)
        ))
    } else {
        out.push_line("");
        Some(summary)
    };
    Ok(TreeOutput {
        text: out.finish(marker),
        directories,
        files,
        truncated: cut,
    })
}

fn depth_of(base: &Path, dir: &Path) -> usize {
    dir.strip_prefix(base)
        .map_or(0, |rel| rel.components().count())
}

/// The entries of every directory down to `max_depth`, plus the entries one level deeper
/// (only counted, to say how much a deep directory holds).
fn collect(access: Access<'_>, base: &Path, max_depth: usize, cancel: &Cancel) -> Result<Children> {
    let found = Mutex::new(Vec::new());
    let options = WalkOptions {
        hidden: false,
        max_depth: Some(max_depth + 1),
    };
    let validator = access.validator();
    let filter = access.walk_filter(Decision::Blocked);
    let filter = filter.as_ref();
    walker(access, base, options)
        .threads(threads())
        .build_parallel()
        .run(|| {
            let mut collector = Collector::new(&found);
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if entry.depth() == 0 {
                    return WalkState::Continue;
                }
                let Some(file_type) = entry.file_type() else {
                    return WalkState::Continue;
                };
                let kind = if file_type.is_dir() {
                    EntryKind::Directory
                } else if file_type.is_symlink() {
                    let target = std::fs::read_link(entry.path())
                        .map(|t| t.display().to_string())
                        .unwrap_or_default();
                    match validator.resolve(entry.path()) {
                        Ok(resolved) if filter.is_some_and(|f| f.target_blocked(&resolved)) => {
                            return WalkState::Continue;
                        }
                        Ok(_) => EntryKind::Symlink(target),
                        Err(_) => EntryKind::Symlink("(outside the root)".into()),
                    }
                } else if file_type.is_file() {
                    EntryKind::File
                } else {
                    // FIFOs, sockets and devices are not files a tool can use.
                    return WalkState::Continue;
                };
                let parent = entry
                    .path()
                    .parent()
                    .unwrap_or(base)
                    .as_os_str()
                    .to_os_string();
                let name = entry.file_name().to_os_string();
                collector.push((parent, Entry { name, kind }));
                WalkState::Continue
            })
        });
    cancel.check("directory_tree")?;
    let mut children = Children::new();
    for (parent, entry) in found.into_inner().unwrap_or_else(|e| e.into_inner()) {
        children.entry(parent).or_default().push(entry);
    }
    for entries in children.values_mut() {
        entries.sort_by(|a, b| {
            let a_dir = !matches!(a.kind, EntryKind::Directory);
            let b_dir = !matches!(b.kind, EntryKind::Directory);
            (a_dir, &a.name).cmp(&(b_dir, &b.name))
        });
    }
    Ok(children)
}

struct Drawing<'a> {
    children: &'a Children,
    out: CappedText,
    max_depth: usize,
    directories: u64,
    files: u64,
    cut: bool,
}

impl Drawing<'_> {
    fn draw(&mut self, dir: &Path, indent: &str, depth: usize) {
        let Some(entries) = self.children.get(dir.as_os_str()) else {
            return;
        };
        for (index, entry) in entries.iter().enumerate() {
            if self.cut {
                return;
            }
            let last = index + 1 == entries.len();
            let branch = if last { "└── " } else { "├── " };
            let path = dir.join(&entry.name);
            let name = entry.name.to_string_lossy();
            let label = match &entry.kind {
                EntryKind::Directory => {
                    let inside = self.children.get(path.as_os_str()).map_or(0, Vec::len);
                    if depth == self.max_depth && inside > 0 {
                        format!(
                            "{name}/ ({} not shown)",
                            plural(inside as u64, "entry", "entries")
                        )
                    } else {
                        format!("{name}/")
                    }
                }
                EntryKind::File => match std::fs::symlink_metadata(&path).map(|m| m.len()) {
                    Ok(size) if size >= SHOW_SIZE_FROM => format!("{name} ({})", human_size(size)),
                    _ => name.into_owned(),
                },
                EntryKind::Symlink(target) => format!("{name} -> {target}"),
            };
            if !self.out.push_line(&format!("{indent}{branch}{label}")) {
                self.cut = true;
                return;
            }
            match entry.kind {
                EntryKind::Directory => {
                    self.directories += 1;
                    if depth < self.max_depth {
                        let deeper = format!("{indent}{}", if last { "    " } else { "│   " });
                        self.draw(&path, &deeper, depth + 1);
                    }
                }
                _ => self.files += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathValidator) {
        let dir = tempfile::tempdir().unwrap();
        let files: [(&str, usize); 8] = [
            ("src/main.rs", 10),
            ("src/fs/read.rs", 3000),
            ("src/fs/deep/er/x.rs", 1),
            ("README.md", 2048),
            ("node_modules/m/i.js", 1),
            (".env", 1),
            ("build/out", 1),
            (".git/config", 1),
        ];
        for (name, size) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, vec![b'x'; size]).unwrap();
        }
        let validator = PathValidator::new(dir.path()).unwrap();
        (dir, validator)
    }

    fn run(v: &PathValidator, path: Option<&str>, max_depth: usize) -> TreeOutput {
        let request = TreeRequest {
            path: path.map(Into::into),
            max_depth,
        };
        tree(v, &request, &Cancel::default()).unwrap()
    }

    #[test]
    fn max_depth_is_bounded_on_both_sides() {
        let (_dir, v) = setup();
        for max_depth in [0, MAX_TREE_DEPTH + 1, usize::MAX] {
            let request = TreeRequest {
                path: None,
                max_depth,
            };
            let err = tree(&v, &request, &Cancel::default()).unwrap_err();
            assert_eq!(err.code(), "INVALID_INPUT");
            assert!(err.to_string().contains("from 1 to 64"), "{err}");
        }
        let deepest = TreeRequest {
            path: None,
            max_depth: MAX_TREE_DEPTH,
        };
        assert!(tree(&v, &deepest, &Cancel::default()).is_ok());
    }

    #[test]
    fn draws_directories_first_with_sizes_from_one_kib() {
        let (_dir, v) = setup();
        let out = run(&v, None, 3);
        assert_eq!(
            out.text,
            "./\n├── src/\n│   ├── fs/\n│   │   ├── deep/ (1 entry not shown)\n│   │   └── read.rs (2.9 KiB)\n│   └── main.rs\n└── README.md (2.0 KiB)\n\n3 directories, 3 files\n"
        );
        let shallow = run(&v, Some("src"), 1);
        assert_eq!(
            shallow.text,
            "src/\n├── fs/ (2 entries not shown)\n└── main.rs\n\n1 directory, 1 file\n"
        );
    }

    #[test]
    fn big_trees_are_cut_with_a_marker() {
        let (dir, v) = setup();
        for i in 0..2500 {
            std::fs::write(dir.path().join(format!("src/f{i:04}")), "x").unwrap();
        }
        let out = run(&v, None, 3);
        assert!(out.truncated);
        assert!(out.text.lines().count() <= 2001);
        assert!(
            out.text.contains("more entries not shown"),
            "{}",
            &out.text[out.text.len() - 300..]
        );
    }

    #[test]
    fn escapes_are_refused_and_links_are_not_followed() {
        let (dir, v) = setup();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("README.md", dir.path().join("readme-link")).unwrap();
        for path in ["..", "out", "/etc"] {
            let request = TreeRequest {
                path: Some(path.into()),
                max_depth: 2,
            };
            assert_eq!(
                tree(&v, &request, &Cancel::default()).unwrap_err().code(),
                "PATH_OUTSIDE_ROOT"
            );
        }
        let out = run(&v, None, 5);
        assert!(
            out.text.contains("out -> (outside the root)"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("readme-link -> README.md"),
            "{}",
            out.text
        );
        assert!(!out.text.contains("secret"));
        assert_eq!(
            tree(
                &v,
                &TreeRequest {
                    path: None,
                    max_depth: 0
                },
                &Cancel::default()
            )
            .unwrap_err()
            .code(),
            "INVALID_INPUT"
        );
    }
}
