//! Gitignore-style patterns turned into the paths that exist below a directory.
//!
//! Rules judge names; the kernel and the same-file check need files. A `blocked` path rule
//! (`.env*`) is hidden from processes by mounting over each file it matches, and the file tools
//! refuse another name of one of those files (a hard link) by its device and inode; both need
//! the list of what exists. So is a `sandbox.protect` pattern. This module walks a directory
//! once, judging every entry, and returns what matched.
//!
//! The walk enters every directory (`node_modules`, `.git` and hidden ones included: a blocked
//! `.env` inside `node_modules` must be hidden too), never follows a symlink, does not enter a
//! directory that matched (everything inside it is covered by the directory) and stops after
//! [`MAX_GUARD_WALK_ENTRIES`] entries with an error: a list that silently missed a file would
//! promise what the kernel does not do. A symlink whose name matches is reported by the path it
//! leads to, when that is inside the directory (a process reading the link reads its target).
//!
//! The list is what existed when it was made (when a worker is planned, or a toolset prepared):
//! a file created later is judged by the file tools by its name, but processes see it.

use std::path::{Path, PathBuf};

use super::rules::EntryKind;
use crate::error::Error;
use crate::limits::MAX_GUARD_WALK_ENTRIES;

/// Judges one entry of a walk: its absolute path, its path relative to the walked directory,
/// and its kind; `true` when it matches.
pub type Matcher<'a> = &'a dyn Fn(&Path, &Path, EntryKind) -> bool;

/// One matching path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The absolute path (for a matching symlink: where it leads).
    pub path: PathBuf,
    /// Which matcher matched it (its index).
    pub matcher: usize,
    pub is_dir: bool,
    /// For a matching symlink: its own path (the name that matched).
    pub link: Option<PathBuf>,
}

/// Why a walk stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// The directory walked.
    pub root: PathBuf,
    /// How many entries were judged.
    pub entries: usize,
}

impl TooLarge {
    /// `CONFIG_INVALID` naming what was being expanded (`what`, e.g. `the path rule '.env*'`).
    pub fn into_error(self, what: &str) -> Error {
        Error::ConfigInvalid(format!(
            "{what}: finding the paths it matches for the kernel sandbox stopped after {} entries of '{}' (the limit); the kernel can only hide or protect paths that were found. Anchor the pattern to where the files are (e.g. '/.env' or 'config/.env*' instead of '.env*'), or choose a smaller work directory (sandbox.root)",
            self.entries,
            self.root.display()
        ))
    }
}

/// Walks `root` (an existing, canonical directory) and returns every entry that one of
/// `matchers` matches. A matcher is asked with the absolute path, the path relative to `root`
/// and the entry's kind; a directory it matches is not entered for it. `limit` bounds the
/// entries judged ([`MAX_GUARD_WALK_ENTRIES`] when `None`).
pub fn expand(
    root: &Path,
    matchers: &[Matcher<'_>],
    limit: Option<usize>,
) -> std::result::Result<Vec<Matched>, TooLarge> {
    let limit = limit.unwrap_or(MAX_GUARD_WALK_ENTRIES);
    let mut found = Vec::new();
    if matchers.is_empty() {
        return Ok(found);
    }
    let all: u64 = if matchers.len() >= 64 {
        u64::MAX
    } else {
        (1u64 << matchers.len()) - 1
    };
    // Each directory to visit, with the matchers still looking inside it.
    let mut stack: Vec<(PathBuf, u64)> = vec![(root.to_path_buf(), all)];
    let mut entries = 0usize;
    while let Some((dir, looking)) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue; // unreadable, or removed meanwhile: nothing in it can be found
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > limit {
                return Err(TooLarge {
                    root: root.to_path_buf(),
                    entries: limit,
                });
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let kind = if file_type.is_symlink() {
                EntryKind::Unknown
            } else if file_type.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            let mut still = looking;
            for (index, matcher) in matchers.iter().enumerate().take(64) {
                let bit = 1u64 << index;
                if looking & bit == 0 || !matcher(&path, relative, kind) {
                    continue;
                }
                still &= !bit;
                if file_type.is_symlink() {
                    if let Some(target) = link_target_inside(&path, root) {
                        let is_dir = target.is_dir();
                        found.push(Matched {
                            path: target,
                            matcher: index,
                            is_dir,
                            link: Some(path.clone()),
                        });
                    }
                } else {
                    found.push(Matched {
                        path: path.clone(),
                        matcher: index,
                        is_dir: file_type.is_dir(),
                        link: None,
                    });
                }
            }
            if file_type.is_dir() && still != 0 {
                stack.push((path, still));
            }
        }
    }
    found.sort_by(|a, b| (&a.path, a.matcher).cmp(&(&b.path, b.matcher)));
    found.dedup();
    Ok(found)
}

/// [`expand`], plus every other name below `root` of a matched file (a hard link), matched by
/// the same matcher: what the kernel must protect or hide. (The file tools use [`expand`]: they
/// refuse another name by its device and inode, saying which file it is.)
pub fn expand_with_other_names(
    root: &Path,
    matchers: &[Matcher<'_>],
    limit: Option<usize>,
) -> std::result::Result<Vec<Matched>, TooLarge> {
    let mut found = expand(root, matchers, limit)?;
    let seeds: Vec<PathBuf> = found.iter().map(|matched| matched.path.clone()).collect();
    for other in other_names(root, &seeds, limit)? {
        found.push(Matched {
            path: other.path,
            matcher: found[other.seed].matcher,
            is_dir: false,
            link: None,
        });
    }
    found.sort_by(|a, b| (&a.path, a.matcher).cmp(&(&b.path, b.matcher)));
    found.dedup();
    Ok(found)
}

/// Another name of a file (a hard link), found by [`other_names`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherName {
    /// The other name, below the walked directory.
    pub path: PathBuf,
    /// The index of the seed it was found for.
    pub seed: usize,
    /// The file it is another name of (the seed, or a file inside the seed directory).
    pub of: PathBuf,
}

/// A hard link is the same file under another name: a link made before the list (by a person,
/// an earlier run) would give a process the content of a hidden file, or a way to change a
/// protected one, under a name no pattern matches. So this finds every other name below `root`
/// of a regular file with more than one link among `seeds` (a file, or every file inside a
/// directory; seeds may lie outside `root`). Only when such a file exists is `root`
/// walked, with an `lstat` per regular file; a seed's own path (and what is inside a
/// seed directory) is not reported. At most `limit` entries
/// ([`MAX_GUARD_WALK_ENTRIES`] when `None`) are looked at in each of the two passes.
pub fn other_names(
    root: &Path,
    seeds: &[PathBuf],
    limit: Option<usize>,
) -> std::result::Result<Vec<OtherName>, TooLarge> {
    use std::collections::{HashMap, HashSet};
    use std::os::unix::fs::MetadataExt;

    let limit = limit.unwrap_or(MAX_GUARD_WALK_ENTRIES);
    let too_large = || TooLarge {
        root: root.to_path_buf(),
        entries: limit,
    };
    // (device, inode) of every seed file with other names: its seed and its path.
    let mut linked: HashMap<(u64, u64), (usize, PathBuf)> = HashMap::new();
    let mut entries = 0usize;
    for (seed, path) in seeds.iter().enumerate() {
        let mut pending = vec![path.clone()];
        while let Some(path) = pending.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                let Ok(listing) = std::fs::read_dir(&path) else {
                    continue;
                };
                for entry in listing.flatten() {
                    entries += 1;
                    if entries > limit {
                        return Err(too_large());
                    }
                    pending.push(entry.path());
                }
            } else if meta.is_file() && meta.nlink() > 1 {
                linked.insert((meta.dev(), meta.ino()), (seed, path));
            }
        }
    }
    let mut found = Vec::new();
    if linked.is_empty() {
        return Ok(found);
    }
    // A seed covers itself and everything inside it.
    let known: HashSet<&PathBuf> = seeds.iter().collect();
    let mut stack = vec![root.to_path_buf()];
    entries = 0;
    while let Some(dir) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > limit {
                return Err(too_large());
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if known.contains(&path) {
                continue;
            }
            if file_type.is_dir() {
                stack.push(path);
            } else if file_type.is_file() {
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                if let Some((seed, of)) = linked.get(&(meta.dev(), meta.ino())) {
                    found.push(OtherName {
                        path,
                        seed: *seed,
                        of: of.clone(),
                    });
                }
            }
        }
    }
    Ok(found)
}

/// Where the symlink `link` leads, when that exists inside `root`.
fn link_target_inside(link: &Path, root: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(link)
        .ok()
        .filter(|target| target.starts_with(root) && target != root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Decision;
    use crate::fs::rules::{PathRule, PathRules};

    fn rules(list: &[(&str, Decision)]) -> PathRules {
        let list: Vec<PathRule> = list
            .iter()
            .map(|(pattern, approval)| PathRule {
                pattern: pattern.to_string(),
                approval: *approval,
            })
            .collect();
        PathRules::new(&list, "approval.paths", false).unwrap()
    }

    fn blocked_by(rules: &PathRules) -> impl Fn(&Path, &Path, EntryKind) -> bool + '_ {
        move |_, relative, kind| {
            rules
                .decide(relative, kind)
                .is_some_and(|rule| rule.approval == Decision::Blocked)
        }
    }

    fn names(root: &Path, found: &[Matched]) -> Vec<String> {
        found
            .iter()
            .map(|m| m.path.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn blocked_names_are_found_at_every_depth_including_skipped_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for file in [
            ".env",
            "src/.env.local",
            "node_modules/pkg/.env",
            ".git/.env",
            "src/app.ts",
            ".env.example",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::create_dir_all(root.join("secrets/deep")).unwrap();
        std::fs::write(root.join("secrets/deep/key"), "k").unwrap();
        let r = rules(&[
            (".env*", Decision::Blocked),
            (".env.example", Decision::PreApproved),
            ("/secrets/", Decision::Blocked),
            ("src/**", Decision::Ask),
        ]);
        let judge = blocked_by(&r);
        let found = expand(&root, &[&judge], None).unwrap();
        assert_eq!(
            names(&root, &found),
            [
                ".env",
                ".git/.env",
                "node_modules/pkg/.env",
                "secrets",
                "src/.env.local"
            ]
        );
        // The blocked directory is reported once, not entered.
        assert!(found
            .iter()
            .any(|m| m.is_dir && m.path.ends_with("secrets")));
    }

    #[test]
    fn a_matching_symlink_is_reported_by_its_target_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("real.txt"), "secret").unwrap();
        std::os::unix::fs::symlink("real.txt", root.join(".env")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join(".env.outside")).unwrap();
        let r = rules(&[(".env*", Decision::Blocked)]);
        let judge = blocked_by(&r);
        let found = expand(&root, &[&judge], None).unwrap();
        assert_eq!(names(&root, &found), ["real.txt"]);
    }

    #[test]
    fn other_names_of_a_matched_file_are_matched_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join(".env"), "TOKEN=1\n").unwrap();
        std::fs::write(root.join("secrets/key"), "KEY=1\n").unwrap();
        std::fs::write(root.join("plain.txt"), "x\n").unwrap();
        // Other names: of a matched file, of a file inside a matched directory.
        std::fs::hard_link(root.join(".env"), root.join("notes.txt")).unwrap();
        std::fs::hard_link(root.join("secrets/key"), root.join("src/deep/key.txt")).unwrap();
        // A hard-linked file nothing matches stays out.
        std::fs::hard_link(root.join("plain.txt"), root.join("plain2.txt")).unwrap();
        let judge = |_: &Path, relative: &Path, _: EntryKind| {
            relative == Path::new(".env") || relative == Path::new("secrets")
        };
        assert_eq!(
            names(&root, &expand(&root, &[&judge], None).unwrap()),
            [".env", "secrets"]
        );
        let found = expand_with_other_names(&root, &[&judge], None).unwrap();
        assert_eq!(
            names(&root, &found),
            [".env", "notes.txt", "secrets", "src/deep/key.txt"]
        );
        assert!(found.iter().all(|matched| matched.matcher == 0));
    }

    #[test]
    fn the_walk_stops_at_its_limit_with_an_error_naming_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for index in 0..20 {
            std::fs::write(root.join(format!("f{index}")), "x").unwrap();
        }
        let r = rules(&[(".env*", Decision::Blocked)]);
        let judge = blocked_by(&r);
        let stopped = expand(&root, &[&judge], Some(10)).unwrap_err();
        assert_eq!(stopped.entries, 10);
        let err = stopped.into_error("the path rule '.env*'");
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("Anchor the pattern"), "{err}");
        assert!(expand(&root, &[&judge], Some(20)).unwrap().is_empty());
    }

    #[test]
    fn several_matchers_are_judged_in_one_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("config")).unwrap();
        std::fs::write(root.join("config/.env"), "x").unwrap();
        std::fs::write(root.join("config/app.yaml"), "x").unwrap();
        let hide = rules(&[(".env", Decision::Blocked)]);
        let protect = rules(&[("config/", Decision::Blocked)]);
        let (hide, protect) = (blocked_by(&hide), blocked_by(&protect));
        let found = expand(&root, &[&hide, &protect], None).unwrap();
        let pairs: Vec<(String, usize)> = found
            .iter()
            .map(|m| {
                (
                    m.path.strip_prefix(&root).unwrap().display().to_string(),
                    m.matcher,
                )
            })
            .collect();
        // The protected directory is entered for the other matcher.
        assert_eq!(
            pairs,
            [("config".to_string(), 1), ("config/.env".to_string(), 0)]
        );
    }

    #[test]
    fn the_walk_s_quick_judgement_agrees_with_the_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for file in [
            ".env",
            "README.md",
            "src/.env.local",
            "src/app.ts",
            "src/keep/.env.example",
            "secrets/a",
            "secrets/open/b",
            "docs/x.md",
            "node_modules/p/.env",
            "build/out/y",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        use Decision::{Ask, Blocked, PreApproved};
        let sets: Vec<PathRules> = vec![
            rules(&[(".env*", Blocked), (".env.example", PreApproved)]),
            rules(&[("**", Blocked), ("src/**", PreApproved), ("docs/", Ask)]),
            rules(&[("/secrets/", Blocked), ("secrets/open/**", PreApproved)]),
            rules(&[
                ("build/", Blocked),
                ("*.md", Blocked),
                ("src/keep/", Blocked),
            ]),
        ];
        for set in &sets {
            let full = blocked_by(set);
            let quick = |_: &Path, relative: &Path, kind| set.blocks_in_walk(relative, kind);
            assert_eq!(
                expand(&root, &[&full], None).unwrap(),
                expand(&root, &[&quick], None).unwrap()
            );
        }
    }
}
