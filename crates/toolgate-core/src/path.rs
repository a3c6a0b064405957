//! Confining paths to a root directory, symlinks included.
//!
//! The root is canonicalised once. A candidate path is resolved component by component: every
//! symlink met on the way is followed (up to [`MAX_SYMLINK_HOPS`]), `..` pops the already
//! resolved prefix, and components that do not exist yet are appended as written, so a path
//! that is about to be created is judged by where it *would* land. The result must be the root
//! or lie below it, compared component-wise (`/work/app2` is not inside `/work/app`).
//!
//! A refusal never tells the caller anything about what lies outside the root: every path that
//! lands outside — or fails to resolve once the walk has been outside (a symlink loop, an
//! unreadable link) — gets the same `PATH_OUTSIDE_ROOT` message, which names only the path as
//! the caller gave it and the root. Whether the outside target exists, is missing, is a
//! symlink or a loop makes no difference to the message.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Linux's `SYMLOOP_MAX`-like bound: more hops than this is a loop.
const MAX_SYMLINK_HOPS: usize = 40;
/// Linux `PATH_MAX`, including the terminating NUL.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// The one detail every `PATH_OUTSIDE_ROOT` refusal of a resolved path carries: it says how a
/// path can land outside without saying where this one went.
pub(crate) const OUTSIDE_DETAIL: &str = " (once '..' and symlinks are followed)";

/// Resolves paths against a root and refuses any that would land outside it.
#[derive(Debug, Clone)]
pub struct PathValidator {
    root: PathBuf,
}

impl PathValidator {
    /// Creates a validator for `root`, which must be an existing directory. The root may itself
    /// be reached through symlinks; it is canonicalised here, once.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let given = root.as_ref();
        check_path_text(&given.to_string_lossy(), given.as_os_str(), true)?;
        let root = std::fs::canonicalize(given).map_err(|err| {
            Error::ConfigInvalid(format!(
                "root '{}' cannot be used: {err}; give an existing directory",
                given.display()
            ))
        })?;
        if !root.is_dir() {
            return Err(Error::ConfigInvalid(format!(
                "root '{}' is not a directory; give an existing directory",
                given.display()
            )));
        }
        Ok(Self { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative paths are taken from the root) to an absolute path with every
    /// symlink followed, and refuses it with `PATH_OUTSIDE_ROOT` unless it is inside the root.
    /// `~` is an ordinary file name here, never the home directory.
    pub fn resolve(&self, path: impl AsRef<Path>) -> Result<PathBuf> {
        self.resolve_checked(path.as_ref(), true)
    }

    /// [`resolve`](Self::resolve) without the `PATH_MAX` limit on the text: for command
    /// arguments, which a program may shorten before it opens them, so a long one is still
    /// judged by where its components lead.
    pub(crate) fn resolve_any_length(&self, path: &Path) -> Result<PathBuf> {
        self.resolve_checked(path, false)
    }

    fn resolve_checked(&self, path: &Path, limit_length: bool) -> Result<PathBuf> {
        check_path_text(&path.to_string_lossy(), path.as_os_str(), limit_length)?;
        match resolve_beneath(&self.root, path) {
            Ok(resolved) => Ok(resolved),
            Err(Unresolved::Outside) => Err(self.outside(&path.display().to_string())),
            Err(Unresolved::Inside(reason)) => Err(Error::InvalidInput(format!(
                "path '{}' cannot be resolved: {reason}",
                path.display()
            ))),
        }
    }

    /// The `PATH_OUTSIDE_ROOT` refusal of `path` (the caller's text): the same message whatever
    /// lies outside.
    pub fn outside(&self, path: &str) -> Error {
        Error::PathOutsideRoot {
            path: path.to_string(),
            root: self.root.clone(),
            detail: OUTSIDE_DETAIL.to_string(),
        }
    }

    /// Like [`resolve`](Self::resolve), but also returns the path relative to the root, for
    /// messages and listings. The root itself is `.`.
    pub fn resolve_relative(&self, path: impl AsRef<Path>) -> Result<(PathBuf, PathBuf)> {
        let absolute = self.resolve(path)?;
        let relative = self.relative(&absolute);
        Ok((absolute, relative))
    }

    /// The path of an already resolved `absolute` path relative to the root (`.` for the root).
    pub fn relative(&self, absolute: &Path) -> PathBuf {
        match absolute.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            Err(_) => absolute.to_path_buf(),
        }
    }
}

/// Refuses text that no file system call would treat as the caller intends. `limit_length`
/// applies the kernel's `PATH_MAX`.
fn check_path_text(display: &str, raw: &OsStr, limit_length: bool) -> Result<()> {
    let bytes = raw.as_bytes();
    if bytes.is_empty() {
        return Err(Error::InvalidInput(
            "the path is empty; give a file or directory path".into(),
        ));
    }
    if bytes.contains(&0) {
        return Err(Error::InvalidInput(format!(
            "path '{}' contains a NUL byte, which no file name can hold",
            display.replace('\0', "\\0")
        )));
    }
    if limit_length && bytes.len() >= PATH_MAX {
        return Err(Error::InvalidInput(format!(
            "path is {} bytes long; the limit is {} bytes",
            bytes.len(),
            PATH_MAX - 1
        )));
    }
    Ok(())
}

/// Why a path did not resolve to a place inside the root.
enum Unresolved {
    /// It lands outside, or failed after the walk had been outside: nothing more may be said.
    Outside,
    /// It failed while the walk stayed inside the root (or on the root's own ancestors); the
    /// reason names only places inside the root.
    Inside(String),
}

/// Resolves `path` against `root` the way the kernel would, except that missing components are
/// kept as written instead of failing, and refuses a result outside `root`.
fn resolve_beneath(root: &Path, path: &Path) -> std::result::Result<PathBuf, Unresolved> {
    let mut hops = 0usize;
    // A relative path starts at `root`, which is canonical (no symlinks, exists), so its own
    // components need no inspection: only what lies below it is walked.
    let mut resolved = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        root.to_path_buf()
    };
    // Where the walk stands. Once it has stood anywhere but inside the root or on one of its
    // ancestors, every failure is reported as "outside", so failures cannot describe what is
    // there.
    let mut place = if path.is_absolute() {
        Place::of(root, &resolved)
    } else {
        Place::Inside
    };
    let mut been_outside = false;
    // Components still to walk, in reverse so that pushing a symlink's target is cheap.
    let mut pending: Vec<Cow<'_, OsStr>> = components_of(path).map(Cow::Borrowed).collect();
    pending.reverse();
    // Once a component is missing, nothing below it can exist or be a symlink.
    let mut missing_depth: Option<usize> = None;

    while let Some(component) = pending.pop() {
        if component.as_bytes() == b".." {
            resolved.pop();
            if let Some(depth) = missing_depth {
                if resolved.components().count() < depth {
                    missing_depth = None;
                }
            }
            place = Place::of(root, &resolved);
            been_outside |= place == Place::Outside;
            continue;
        }
        resolved.push(&component);
        // Below the root or below an outside place nothing changes; from an ancestor of the
        // root a step can lead in, stay on the way, or leave.
        if place == Place::Ancestor {
            place = Place::of(root, &resolved);
            been_outside |= place == Place::Outside;
        }
        if missing_depth.is_some() {
            continue;
        }
        let failed = |reason: String| {
            if been_outside {
                Unresolved::Outside
            } else {
                Unresolved::Inside(reason)
            }
        };
        match std::fs::symlink_metadata(&resolved) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(failed(format!(
                        "more than {MAX_SYMLINK_HOPS} symlinks were followed (a symlink loop?)"
                    )));
                }
                let target = std::fs::read_link(&resolved).map_err(|err| {
                    failed(format!(
                        "cannot read symlink '{}': {err}",
                        shown(root, &resolved)
                    ))
                })?;
                resolved.pop();
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                place = Place::of(root, &resolved);
                let at = pending.len();
                pending.extend(components_of(&target).map(|c| Cow::Owned(c.to_os_string())));
                pending[at..].reverse();
            }
            Ok(_) => {}
            Err(err)
                if err.kind() == std::io::ErrorKind::NotFound
                    || matches!(
                        err.raw_os_error(),
                        Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG)
                    ) =>
            {
                // Missing, below a file, or a name no directory can hold: nothing is there.
                missing_depth = Some(resolved.components().count());
            }
            Err(err) => {
                return Err(failed(format!(
                    "cannot inspect '{}': {err}",
                    shown(root, &resolved)
                )))
            }
        }
    }
    if place == Place::Inside {
        Ok(resolved)
    } else {
        Err(Unresolved::Outside)
    }
}

/// Where a path stands relative to the root.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The root or below it.
    Inside,
    /// On the way to the root (`/`, `/srv` for the root `/srv/app`).
    Ancestor,
    /// Anywhere else.
    Outside,
}

impl Place {
    fn of(root: &Path, path: &Path) -> Place {
        if path.starts_with(root) {
            Place::Inside
        } else if root.starts_with(path) {
            Place::Ancestor
        } else {
            Place::Outside
        }
    }
}

/// `path` for a message about a failure inside the root: relative to the root.
fn shown(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        // An ancestor of the root: the caller's own path led there, and it holds the root.
        Err(_) => path.display().to_string(),
    }
}

/// The normal and `..` components of a path; `.` and the root are dropped.
fn components_of(path: &Path) -> impl Iterator<Item = &OsStr> {
    path.components().filter_map(|component| match component {
        Component::Normal(name) => Some(name),
        Component::ParentDir => Some(OsStr::new("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("app");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        Fixture {
            _dir: dir,
            root,
            outside,
        }
    }

    fn assert_outside(result: Result<PathBuf>) {
        match result {
            Err(err) => assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{err}"),
            Ok(path) => panic!("expected PATH_OUTSIDE_ROOT, got {}", path.display()),
        }
    }

    #[test]
    fn plain_paths_inside_the_root_resolve() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        assert_eq!(
            v.resolve("src/main.rs").unwrap(),
            f.root.join("src/main.rs")
        );
        assert_eq!(v.resolve(".").unwrap(), f.root);
        assert_eq!(
            v.resolve("src/../src/./main.rs").unwrap(),
            f.root.join("src/main.rs")
        );
        assert_eq!(v.resolve(f.root.join("src")).unwrap(), f.root.join("src"));
        assert_eq!(v.relative(&f.root), PathBuf::from("."));
    }

    #[test]
    fn dot_dot_traversal_is_refused() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        assert_outside(v.resolve("../outside/secret.txt"));
        assert_outside(v.resolve("src/../../outside"));
        assert_outside(v.resolve("missing/../../../etc/passwd"));
        assert_outside(v.resolve(".."));
    }

    #[test]
    fn absolute_paths_outside_are_refused() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        assert_outside(v.resolve("/etc/passwd"));
        assert_outside(v.resolve("/"));
        assert_outside(v.resolve(f.outside.join("secret.txt")));
    }

    #[test]
    fn a_sibling_sharing_the_root_prefix_is_outside() {
        let f = fixture();
        let sibling = f.root.with_file_name("app2");
        std::fs::create_dir(&sibling).unwrap();
        let v = PathValidator::new(&f.root).unwrap();
        assert_outside(v.resolve(&sibling));
        assert_outside(v.resolve("../app2/x"));
    }

    #[test]
    fn symlinked_file_and_directory_pointing_outside_are_refused() {
        let f = fixture();
        symlink(f.outside.join("secret.txt"), f.root.join("leak.txt")).unwrap();
        symlink(&f.outside, f.root.join("leakdir")).unwrap();
        let v = PathValidator::new(&f.root).unwrap();
        let err = v.resolve("leak.txt").unwrap_err();
        assert_eq!(err.code(), "PATH_OUTSIDE_ROOT");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert_outside(v.resolve("leakdir/secret.txt"));
        assert_outside(v.resolve("leakdir"));
        assert_outside(v.resolve("leakdir/new-file"));
    }

    #[test]
    fn relative_symlinks_inside_the_root_are_followed() {
        let f = fixture();
        symlink("src/main.rs", f.root.join("main-link")).unwrap();
        symlink("../src", f.root.join("src/self")).unwrap();
        let v = PathValidator::new(&f.root).unwrap();
        assert_eq!(v.resolve("main-link").unwrap(), f.root.join("src/main.rs"));
        assert_eq!(
            v.resolve("src/self/main.rs").unwrap(),
            f.root.join("src/main.rs")
        );
        // link/.. is the parent of the link's target, as the kernel resolves it
        symlink(&f.outside, f.root.join("out")).unwrap();
        assert_outside(v.resolve("out/../outside"));
    }

    #[test]
    fn dangling_symlink_pointing_outside_is_refused_and_nothing_is_created() {
        let f = fixture();
        let target = f.outside.join("created-by-attacker");
        symlink(&target, f.root.join("dangling")).unwrap();
        let v = PathValidator::new(&f.root).unwrap();
        assert_outside(v.resolve("dangling"));
        assert!(!target.exists());
    }

    #[test]
    fn symlink_loops_are_an_error_not_a_hang() {
        let f = fixture();
        symlink("b", f.root.join("a")).unwrap();
        symlink("a", f.root.join("b")).unwrap();
        let v = PathValidator::new(&f.root).unwrap();
        let err = v.resolve("a/x").unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("symlink"), "{err}");
    }

    #[test]
    fn a_root_reached_through_a_symlink_works() {
        let f = fixture();
        let link = f.outside.join("root-link");
        symlink(&f.root, &link).unwrap();
        let v = PathValidator::new(&link).unwrap();
        assert_eq!(v.root(), f.root.as_path());
        assert_eq!(
            v.resolve("src/main.rs").unwrap(),
            f.root.join("src/main.rs")
        );
        assert_eq!(
            v.resolve(link.join("src/main.rs")).unwrap(),
            f.root.join("src/main.rs")
        );
        assert_outside(v.resolve(link.join("../secret.txt")));
    }

    #[test]
    fn nested_paths_that_do_not_exist_yet_are_allowed() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        assert_eq!(
            v.resolve("a/b/c/d.txt").unwrap(),
            f.root.join("a/b/c/d.txt")
        );
        assert_eq!(v.resolve("a/b/../c").unwrap(), f.root.join("a/c"));
        // a missing component below a file is still judged by where it would land
        assert_eq!(
            v.resolve("src/main.rs/x").unwrap(),
            f.root.join("src/main.rs/x")
        );
    }

    #[test]
    fn tilde_is_literal() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        assert_eq!(v.resolve("~").unwrap(), f.root.join("~"));
        assert_eq!(
            v.resolve("~/.ssh/id_rsa").unwrap(),
            f.root.join("~/.ssh/id_rsa")
        );
    }

    #[test]
    fn nul_bytes_empty_and_overlong_paths_are_invalid_input() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        assert_eq!(
            v.resolve("src\0/../../etc").unwrap_err().code(),
            "INVALID_INPUT"
        );
        assert_eq!(v.resolve("").unwrap_err().code(), "INVALID_INPUT");
        let long = "a/".repeat(PATH_MAX);
        let err = v.resolve(&long).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("limit"));
    }

    #[test]
    fn refusals_say_the_same_whatever_lies_outside() {
        let f = fixture();
        let outside = &f.outside;
        std::fs::create_dir(outside.join("dir")).unwrap();
        symlink(outside.join("loop-b"), outside.join("loop-a")).unwrap();
        symlink(outside.join("loop-a"), outside.join("loop-b")).unwrap();
        let links = [
            ("existing", outside.join("secret.txt")),
            ("missing", outside.join("no-such-file")),
            ("to-dir", outside.join("dir")),
            ("dangling-chain", outside.join("loop-a")),
            ("etc", PathBuf::from("/etc/passwd")),
        ];
        for (name, target) in &links {
            symlink(target, f.root.join(name)).unwrap();
        }
        let v = PathValidator::new(&f.root).unwrap();
        let mut asked: Vec<String> = links.iter().map(|(name, _)| name.to_string()).collect();
        asked.extend(
            [
                "../outside/secret.txt",
                "../outside/no-such-file",
                "../outside/loop-a/x",
                "../outside/dir/../secret.txt",
                "src/../../outside",
                "/etc/passwd",
                "existing/x",
                "to-dir/new",
            ]
            .map(String::from),
        );
        asked.push(outside.join("loop-a").display().to_string());
        let mut shapes = std::collections::BTreeSet::new();
        for path in &asked {
            let err = v.resolve(path).unwrap_err();
            assert_eq!(err.code(), "PATH_OUTSIDE_ROOT", "{path}: {err}");
            let message = err.to_string();
            for secret in ["secret.txt", "no-such-file", "loop-b", "passwd", "outside/"] {
                if !path.contains(secret) {
                    assert!(!message.contains(secret), "{path}: {message}");
                }
            }
            shapes.insert(message.replace(&format!("'{path}'"), "'<path>'"));
        }
        assert_eq!(shapes.len(), 1, "{shapes:#?}");
    }

    #[test]
    fn a_long_argument_is_judged_by_its_components() {
        let f = fixture();
        let v = PathValidator::new(&f.root).unwrap();
        let long = format!("{}../../outside", "a/../".repeat(PATH_MAX));
        assert_eq!(v.resolve(&long).unwrap_err().code(), "INVALID_INPUT");
        assert_outside(v.resolve_any_length(Path::new(&long)));
        let name = "n".repeat(300);
        assert_eq!(
            v.resolve_any_length(Path::new(&name)).unwrap(),
            f.root.join(&name)
        );
    }

    #[test]
    fn a_missing_root_is_a_config_error() {
        let err = PathValidator::new("/definitely/not/here").unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
