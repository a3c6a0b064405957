//! Version managers (pyenv, rbenv, nodenv, asdf, mise, proto): their `shims` directory on
//! `PATH` is how `python3` or `ruby` are found, and a shim runs the manager from its root. What
//! of that root a sandboxed process may read is decided here, once, for the policy and for
//! `toolgate check --sandbox`.

use std::path::{Path, PathBuf};

/// The roots of the version managers whose `shims` directory is on `search_path` (pyenv's
/// `~/.pyenv`, rbenv's `~/.rbenv`, nodenv, asdf, mise…): a shim is a script that runs the
/// manager from its root, which finds the real interpreter under it. A root is the nearest
/// folder above the `shims` directory that holds a manager's installs (`versions`, `installs`
/// or `tools`); a `shims` directory without one is not a version manager's and grants nothing.
/// Never `/`, a home directory or `/home` itself.
pub fn version_manager_roots(search_path: &std::ffi::OsStr) -> Vec<PathBuf> {
    roots_of_shims(search_path, &home_directories())
}

/// What of each [version manager root](version_manager_roots) is readable: the parts its
/// shims use ([`VERSION_MANAGER_PARTS`], [`VERSION_MANAGER_HOOKS`] and the `<name>.d` hook
/// folder named after the root), never the root
/// itself, which may hold anything else.
pub fn version_manager_parts(search_path: &std::ffi::OsStr) -> Vec<PathBuf> {
    version_manager_roots(search_path)
        .iter()
        .flat_map(|root| parts_of_manager(root))
        .collect()
}

/// The folders (and the global `version` file) of a version manager's root its shims read:
/// the manager's own code (`bin`, `libexec`, `lib`), its plugins, the shims, the installed
/// versions (pyenv/rbenv/nodenv `versions`, asdf/mise `installs`, proto `tools`).
const VERSION_MANAGER_PARTS: &[&str] = &[
    "bin", "libexec", "lib", "plugins", "shims", "versions", "installs", "tools", "version",
];

/// The hook folders of the *env managers (pyenv, rbenv, nodenv and their kin), which their
/// `exec` runs on every shim.
const VERSION_MANAGER_HOOKS: &[&str] = &[
    "pyenv.d", "rbenv.d", "nodenv.d", "goenv.d", "jenv.d", "plenv.d", "phpenv.d", "luaenv.d",
];

/// What marks a folder as a version manager's root: where its installed versions are.
const VERSION_MANAGER_INSTALLS: &[&str] = &["versions", "installs", "tools"];

fn parts_of_manager(root: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = VERSION_MANAGER_PARTS
        .iter()
        .map(|part| root.join(part))
        .filter(|path| path.symlink_metadata().is_ok())
        .collect();
    // The hook folders the *env managers run before a version: the known ones (`pyenv.d`,
    // also in a root named otherwise) and the one named after the root (`~/.xenv`: `xenv.d`).
    // Only those: any other `*.d` folder of the root may hold anything (`credentials.d`).
    let own = root
        .file_name()
        .map(|name| format!("{}.d", name.to_string_lossy().trim_start_matches('.')));
    let hooks = VERSION_MANAGER_HOOKS
        .iter()
        .map(|hooks| hooks.to_string())
        .chain(own.filter(|own| !VERSION_MANAGER_HOOKS.contains(&own.as_str())));
    parts.extend(
        hooks
            .map(|hooks| root.join(hooks))
            .filter(|path| path.symlink_metadata().is_ok_and(|meta| meta.is_dir())),
    );
    parts
}

fn home_directories() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = vec![PathBuf::from("/root")];
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        homes.extend(std::fs::canonicalize(&home).ok());
        homes.push(home);
    }
    homes
}

/// [`version_manager_roots`] with the home directories given.
pub(crate) fn roots_of_shims(search_path: &std::ffi::OsStr, homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for entry in std::env::split_paths(search_path) {
        if !entry.is_absolute() || entry.file_name().is_none_or(|name| name != "shims") {
            continue;
        }
        // A `shims` folder a sandboxed process may have made (or pointed) grants nothing.
        if super::paths::chosen_by_a_process(&entry, &[]) {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&entry) else {
            continue;
        };
        let is_home = |dir: &Path| {
            dir == Path::new("/")
                || dir == Path::new("/home")
                || dir.parent() == Some(Path::new("/home"))
                || homes.iter().any(|home| home == dir)
        };
        // The nearest folder above that holds installed versions (a plugin's shims, such as
        // pyenv-virtualenv's `plugins/<name>/shims`, run the manager above them), below any
        // home directory.
        let Some(root) = real
            .ancestors()
            .skip(1)
            .take_while(|dir| !is_home(dir))
            .find(|dir| {
                VERSION_MANAGER_INSTALLS
                    .iter()
                    .any(|installs| dir.join(installs).is_dir())
            })
            .map(Path::to_path_buf)
        else {
            continue;
        };
        if !roots.iter().any(|known| root.starts_with(known)) {
            roots.retain(|known| !known.starts_with(&root));
            roots.push(root);
        }
    }
    roots
}
