//! Confining paths to a root directory, symlinks included.
//!
//! The root is canonicalised once. A candidate path is resolved component by component: every
//! symlink met on the way is followed (up to [`MAX_SYMLINK_HOPS`]), `..` pops the already
//! resolved prefix, and components that do not exist yet are appended as written, so a path
//! that is about to be created is judged by where it *would* land. The result must be the root
//! or lie below it, compared component-wise (`/work/app2` is not inside `/work/app`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Linux's `SYMLOOP_MAX`-like bound: more hops than this is a loop.
const MAX_SYMLINK_HOPS: usize = 40;
/// Linux `PATH_MAX`, including the terminating NUL.
const PATH_MAX: usize = libc::PATH_MAX as usize;

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
        check_path_text(&given.to_string_lossy(), given.as_os_str())?;
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
        let path = path.as_ref();
        check_path_text(&path.to_string_lossy(), path.as_os_str())?;
        let resolved = resolve_beneath(&self.root, path).map_err(|reason| {
            Error::InvalidInput(format!(
                "path '{}' cannot be resolved: {reason}",
                path.display()
            ))
        })?;
        if resolved.starts_with(&self.root) {
            return Ok(resolved.path);
        }
        let detail = match resolved.symlink {
            Some((link, target)) => format!(
                " (it goes through the symlink '{}' -> '{}', which resolves to '{}')",
                link.display(),
                target.display(),
                resolved.path.display()
            ),
            None => format!(" (it resolves to '{}')", resolved.path.display()),
        };
        Err(Error::PathOutsideRoot {
            path: path.display().to_string(),
            root: self.root.clone(),
            detail,
        })
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

/// Refuses text that no file system call would treat as the caller intends.
fn check_path_text(display: &str, raw: &OsStr) -> Result<()> {
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
    if bytes.len() >= PATH_MAX {
        return Err(Error::InvalidInput(format!(
            "path is {} bytes long; the limit is {} bytes",
            bytes.len(),
            PATH_MAX - 1
        )));
    }
    Ok(())
}

/// The outcome of a resolution: the final path and the last symlink followed (for messages).
struct Resolved {
    path: PathBuf,
    symlink: Option<(PathBuf, PathBuf)>,
}

impl Resolved {
    fn starts_with(&self, root: &Path) -> bool {
        self.path.starts_with(root)
    }
}

/// Resolves `path` against `base` the way the kernel would, except that missing components are
/// kept as written instead of failing.
fn resolve_beneath(base: &Path, path: &Path) -> std::result::Result<Resolved, String> {
    let mut last_symlink = None;
    let mut hops = 0usize;
    // A relative path starts at `base`, which is canonical (no symlinks, exists), so its own
    // components need no inspection: only what lies below it is walked.
    let mut resolved = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    // Components still to walk, in reverse so that pushing a symlink's target is cheap.
    let mut pending: Vec<std::ffi::OsString> = components_of(path);
    pending.reverse();
    // Once a component is missing, nothing below it can exist or be a symlink.
    let mut missing_depth: Option<usize> = None;

    while let Some(component) = pending.pop() {
        if component == ".." {
            resolved.pop();
            if let Some(depth) = missing_depth {
                if resolved.components().count() < depth {
                    missing_depth = None;
                }
            }
            continue;
        }
        resolved.push(&component);
        if missing_depth.is_some() {
            continue;
        }
        match std::fs::symlink_metadata(&resolved) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(format!(
                        "more than {MAX_SYMLINK_HOPS} symlinks were followed (a symlink loop?)"
                    ));
                }
                let target = std::fs::read_link(&resolved).map_err(|err| {
                    format!("cannot read symlink '{}': {err}", resolved.display())
                })?;
                last_symlink = Some((resolved.clone(), target.clone()));
                resolved.pop();
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                let mut target_components = components_of(&target);
                target_components.reverse();
                pending.extend(target_components);
            }
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                missing_depth = Some(resolved.components().count());
            }
            Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => {
                missing_depth = Some(resolved.components().count());
            }
            Err(err) => return Err(format!("cannot inspect '{}': {err}", resolved.display())),
        }
    }
    Ok(Resolved {
        path: resolved,
        symlink: last_symlink,
    })
}

/// The normal and `..` components of a path; `.` and the root are dropped.
fn components_of(path: &Path) -> Vec<std::ffi::OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
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
        assert!(err.to_string().contains("symlink"), "{err}");
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
    fn a_missing_root_is_a_config_error() {
        let err = PathValidator::new("/definitely/not/here").unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
