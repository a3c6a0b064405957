//! Which paths a sandboxed process may reach, resolved when a sandbox is prepared, and why
//! each is granted (for `toolgate check --sandbox`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The system runtime: read and execute.
const SYSTEM_ROOTS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix/store",
    // Only the CPU topology of /sys: libc and language runtimes size thread pools from it.
    "/sys/devices/system/cpu",
];

/// The `/etc` entries programs need: the loader cache, certificates, name resolution, users
/// and groups, time zone, alternatives, locale aliases and a few system-wide program defaults. Not
/// `/etc/shadow`, `/etc/ssh`, `/etc/sudoers` or anything else.
const ETC_ENTRIES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/alternatives",
    "/etc/locale.alias",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/terminfo",
    "/etc/inputrc",
    "/etc/gitconfig",
    "/etc/perl",
    "/etc/python3",
    "/etc/os-release",
];

/// Device files: read, write and ioctl. Not `/dev/tty`: a tool's process has no terminal
/// (`toolgate sandbox --tty` adds it).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The parts of an install prefix a runtime needs besides its `bin`: its libraries, helper
/// programs and data (`/opt/node/lib/node_modules`, `/opt/perl/lib/perl5`, `share/`). Never the
/// prefix itself, which may hold anything.
const PREFIX_PARTS: &[&str] = &["lib", "lib32", "lib64", "libexec", "share"];

/// How many symlinks a name may lead through (the kernel's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// The first symlink `name` leads through that lies inside one of `roots` (not a root itself),
/// following symlinks one name at a time as the kernel does; `None` when there is none (or the
/// name loops: resolving it fails anyway).
pub(crate) fn link_inside(name: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let mut real = PathBuf::from("/");
    let mut rest = reversed_names(name);
    let mut hops = 0;
    while let Some(part) = rest.pop() {
        if part == ".." {
            real.pop();
            continue;
        }
        let next = real.join(&part);
        let Ok(target) = std::fs::read_link(&next) else {
            real = next; // not a symlink (or missing: nothing further to follow)
            continue;
        };
        if roots
            .iter()
            .any(|root| next.starts_with(root) && next != *root)
        {
            return Some(next);
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return None;
        }
        if target.is_absolute() {
            real = PathBuf::from("/");
        }
        rest.extend(reversed_names(&target));
    }
    None
}

/// The names of `path` (`..` kept, `.` and the root left out), last first.
fn reversed_names(path: &Path) -> Vec<std::ffi::OsString> {
    path.components()
        .rev()
        .filter_map(|part| match part {
            std::path::Component::Normal(part) => Some(part.to_os_string()),
            std::path::Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantKind {
    Read,
    Write,
    Device,
    Protected,
    Hidden,
}

impl GrantKind {
    /// The word `toolgate check --sandbox` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            GrantKind::Read => "read",
            GrantKind::Write => "write",
            GrantKind::Device => "device",
            GrantKind::Protected => "protected",
            GrantKind::Hidden => "hidden",
        }
    }
}

/// One path a sandbox grants, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub kind: GrantKind,
    pub why: String,
}

/// The fixed part of a sandbox's reach, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reach {
    /// Read and execute, canonical (what a path is checked against).
    pub read: Vec<PathBuf>,
    /// The same, by the names programs use (`/bin`, `/etc/resolv.conf`): what the launcher
    /// mounts in the view (following the symlinks, which it recreates) and grants.
    pub read_names: Vec<PathBuf>,
    /// Read, write, create, remove.
    pub write: Vec<PathBuf>,
    /// Device files.
    pub devices: Vec<PathBuf>,
    /// Directories under which a program's install prefix is not granted as a whole.
    pub home_areas: Vec<PathBuf>,
    /// Where a sandboxed process or a file tool may have written, also when this sandbox may
    /// not: the work directory (read-only here, writable for another toolset or the file
    /// tools) and the write roots. With [`writable_elsewhere`], what no grant is taken from.
    pub untrusted: Vec<PathBuf>,
}

/// Every directory a sandbox prepared in this process lets processes write, and every work
/// directory of a sandbox's scope (the file tools and other toolsets write it): a symlink in
/// one may have been pointed anywhere (by another toolset of the same worker, the worker calling
/// this one).
fn writable_anywhere() -> &'static std::sync::Mutex<Vec<PathBuf>> {
    static WRITABLE: std::sync::OnceLock<std::sync::Mutex<Vec<PathBuf>>> =
        std::sync::OnceLock::new();
    WRITABLE.get_or_init(Default::default)
}

/// Notes the directories a sandbox lets its processes write (see [`writable_anywhere`]).
pub(crate) fn note_writable(roots: &[PathBuf]) {
    let mut known = writable_anywhere()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for root in roots {
        if !known.contains(root) {
            // Past the cap the oldest goes: a long-lived process keeps the recent ones.
            if known.len() >= MAX_NOTED_WRITABLE {
                known.remove(0);
            }
            known.push(root.clone());
        }
    }
}

/// The directories any sandbox of this process lets processes write, as noted so far.
fn writable_elsewhere() -> Vec<PathBuf> {
    writable_anywhere()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Whether `name` is inside, or leads through a symlink inside, one of `own` or a directory any
/// sandbox of this process lets processes write (see [`note_writable`]).
pub(crate) fn chosen_by_a_process(name: &Path, own: &[PathBuf]) -> bool {
    let mut untrusted = own.to_vec();
    untrusted.extend(writable_elsewhere());
    untrusted.iter().any(|root| name.starts_with(root)) || link_inside(name, &untrusted).is_some()
}

/// The first symlink `name` leads through inside one of `own` or a directory any sandbox of
/// this process lets processes write.
pub(crate) fn link_inside_writable(name: &Path, own: &[PathBuf]) -> Option<PathBuf> {
    let mut untrusted = own.to_vec();
    untrusted.extend(writable_elsewhere());
    link_inside(name, &untrusted)
}

/// How many writable directories of other sandboxes are remembered (the most recent ones).
const MAX_NOTED_WRITABLE: usize = 4096;

impl Reach {
    /// The system part plus the work directory and the configured roots (all canonical and
    /// existing; missing system entries are left out).
    pub fn new(
        work_dir: &Path,
        readonly: bool,
        read_roots: &[PathBuf],
        write_roots: &[PathBuf],
    ) -> Self {
        let system = SYSTEM_ROOTS
            .iter()
            .chain(ETC_ENTRIES)
            .chain(["/proc"].iter());
        let mut read_names: Vec<PathBuf> = system
            .clone()
            .map(PathBuf::from)
            .filter(|path| path.symlink_metadata().is_ok() && path.exists())
            .collect();
        read_names.extend(read_roots.iter().cloned());
        if readonly {
            read_names.push(work_dir.to_path_buf());
        }
        let mut read: Vec<PathBuf> = system
            .filter_map(|path| existing(Path::new(path)))
            .collect();
        read.extend(read_roots.iter().cloned());
        let mut write = write_roots.to_vec();
        if readonly {
            read.push(work_dir.to_path_buf());
        } else {
            write.push(work_dir.to_path_buf());
        }
        let mut untrusted = write_roots.to_vec();
        untrusted.push(work_dir.to_path_buf());
        let devices = DEVICES
            .iter()
            .map(Path::new)
            .filter(|path| path.exists())
            .map(Path::to_path_buf)
            .collect();
        dedup(&mut read);
        dedup(&mut write);
        let all_read = read.clone();
        read.retain(|path| {
            !all_read
                .iter()
                .any(|other| other != path && path.starts_with(other))
        });
        dedup(&mut read_names);
        Reach {
            read,
            read_names,
            write,
            devices,
            home_areas: home_areas(),
            untrusted,
        }
    }

    /// Whether `name` is inside, or leads through a symlink inside, a directory a sandboxed
    /// process may have written: what it stands for is then chosen by whoever wrote there.
    pub fn chosen_by_a_process(&self, name: &Path) -> bool {
        chosen_by_a_process(name, &self.untrusted)
    }

    /// The fixed grants with their reasons; `managers` are the roots of the version managers
    /// whose parts are among the read roots.
    pub fn grants(&self, policy: &super::SandboxPolicy, managers: &[PathBuf]) -> Vec<Grant> {
        let mut grants = Vec::new();
        for name in &self.read_names {
            let manager = managers.iter().find(|root| name.starts_with(root));
            let why = if *name == policy.work_dir {
                "the work directory (read-only: readonly)".to_string()
            } else if let Some(root) = manager.filter(|_| policy.read.contains(name)) {
                format!(
                    "a part of the version manager '{}' its shims on PATH use",
                    root.display()
                )
            } else if policy.read.contains(name) {
                "a read root (sandbox.read, or cli_execute's readRoots)".to_string()
            } else if name.starts_with("/etc") {
                "an /etc entry programs need (loader cache, certificates, name resolution, users, time zone)".to_string()
            } else if name == Path::new("/proc") {
                "the call's own /proc (its PID namespace)".to_string()
            } else {
                "the system runtime".to_string()
            };
            grants.push(Grant {
                path: name.clone(),
                kind: GrantKind::Read,
                why,
            });
        }
        for path in &self.write {
            let why = if *path == policy.work_dir {
                "the work directory"
            } else {
                "a write root (sandbox.write)"
            };
            grants.push(Grant {
                path: path.clone(),
                kind: GrantKind::Write,
                why: why.into(),
            });
        }
        for path in &self.devices {
            grants.push(Grant {
                path: path.clone(),
                kind: GrantKind::Device,
                why: "a device file every program may use".into(),
            });
        }
        grants
    }

    /// The grants the directories of a `PATH` add, with their reasons.
    pub fn search_path_grants(&self, search_path: &OsString) -> Vec<Grant> {
        let mut grants = Vec::new();
        let mut known: Vec<PathBuf> = Vec::new();
        for dir in std::env::split_paths(search_path).filter(|dir| dir.is_absolute()) {
            let Ok(real) = std::fs::canonicalize(&dir) else {
                continue;
            };
            for (root, why) in self.install_roots(&real) {
                if self.covers(&root) || known.iter().any(|k| root.starts_with(k)) {
                    continue;
                }
                known.push(root.clone());
                grants.push(Grant {
                    path: root,
                    kind: GrantKind::Read,
                    why: format!("'{}' is on PATH: {why}", dir.display()),
                });
            }
        }
        grants
    }

    /// Whether `path` is already readable under this reach.
    pub fn covers(&self, path: &Path) -> bool {
        self.read
            .iter()
            .chain(&self.write)
            .any(|root| path.starts_with(root))
    }

    /// The read roots the directories of a `PATH` need (what a program may run in turn): each
    /// absolute entry's directory and the runtime parts of its install prefix (see
    /// [`Reach::program_roots`]) where not yet covered.
    ///
    /// An entry reached through a symlink is also given by its name, so that the view
    /// recreates the way to it (programs look each other up by that name).
    pub fn search_path_roots(&self, search_path: &OsString) -> Vec<PathBuf> {
        let mut roots = Vec::new();
        for name in std::env::split_paths(search_path).filter(|dir| dir.is_absolute()) {
            // Inside a directory a sandboxed process may write (this sandbox's, another's, the
            // work directory also when read-only here) an entry gets no grant, and one that
            // goes through a symlink there must not: a process can point that symlink anywhere
            // (`.venv/bin -> /etc`) before this sandbox uses it.
            if self.chosen_by_a_process(&name) {
                continue;
            }
            let Ok(dir) = std::fs::canonicalize(&name) else {
                continue;
            };
            let mut added = false;
            for (root, _) in self.install_roots(&dir) {
                let before = roots.len();
                self.add_root(&mut roots, root);
                added |= roots.len() > before;
            }
            if dir != name
                && (added || self.covers(&dir))
                && !roots.contains(&name)
                && !self.read_names.contains(&name)
            {
                roots.push(name);
            }
        }
        roots
    }

    /// The read roots the program needs beyond `known`: its directory and, for a `bin` or
    /// `sbin` directory outside a home area, the parts of the install prefix a runtime needs
    /// ([`PREFIX_PARTS`]); or the file alone when that is covered otherwise. Never the prefix
    /// itself: a copy of `perl` in `<dir>/bin` does not make `<dir>/outside` readable.
    pub fn program_roots(&self, program: &Path, known: &[PathBuf]) -> Vec<PathBuf> {
        self.program_grants(program, known)
            .into_iter()
            .map(|(root, _)| root)
            .collect()
    }

    /// [`Reach::program_roots`] with the reason of each.
    pub fn program_grants(
        &self,
        program: &Path,
        known: &[PathBuf],
    ) -> Vec<(PathBuf, &'static str)> {
        let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        let covered = |path: &Path| self.covers(path) || known.iter().any(|k| path.starts_with(k));
        let mut grants: Vec<(PathBuf, &'static str)> = Vec::new();
        // Where the directory and its prefix are covered, so is every root `install_roots`
        // could give (this is every call of a program of the system's, like `/usr/bin/true`):
        // nothing to look up on disk.
        let dir = real
            .parent()
            .filter(|dir| !(covered(dir) && dir.parent().is_none_or(covered)));
        if let Some(dir) = dir {
            for (root, why) in self.install_roots(dir) {
                if !known.iter().any(|k| root.starts_with(k))
                    && !self.covers(&root)
                    && !grants.iter().any(|(granted, _)| root.starts_with(granted))
                {
                    grants.push((root, why));
                }
            }
        }
        // The name it is run by, when a symlink is on the way (the view recreates it).
        if real != program && program.is_absolute() && !known.iter().any(|k| k == program) {
            grants.push((
                program.to_path_buf(),
                "the name the program is run by (a symlink)",
            ));
        }
        // The program itself: a file (never a directory named as a program).
        if !self.covers(&real)
            && !known
                .iter()
                .chain(grants.iter().map(|(root, _)| root))
                .any(|k| real.starts_with(k))
            && real.is_file()
        {
            grants.push((real, "the program itself"));
        }
        grants
    }

    fn add_root(&self, roots: &mut Vec<PathBuf>, root: PathBuf) {
        if !self.covers(&root) && !roots.iter().any(|known| root.starts_with(known)) {
            roots.push(root);
        }
    }

    /// A program directory's grants and why: for a `bin` or `sbin` directory, the directory
    /// itself and, outside a home area, the existing runtime parts of its prefix. Any other
    /// directory gets nothing (the program is granted alone): a folder a program sits in
    /// (`$HOME/perl`, `/opt/app/report`) may hold anything else, keys and passwords included.
    fn install_roots(&self, dir: &Path) -> Vec<(PathBuf, &'static str)> {
        let named_bin = matches!(
            dir.file_name().and_then(|name| name.to_str()),
            Some("bin" | "sbin")
        );
        if !named_bin {
            return Vec::new();
        }
        let mut roots = vec![(dir.to_path_buf(), "the directory of programs")];
        let prefix = match dir.parent() {
            Some(parent) if parent != Path::new("/") => parent,
            _ => return roots,
        };
        let in_home = self
            .home_areas
            .iter()
            .any(|home| prefix.starts_with(home) || home.starts_with(prefix));
        if in_home {
            return roots;
        }
        for part in PREFIX_PARTS {
            // Only a real directory of the prefix, never one a symlink takes elsewhere.
            let path = prefix.join(part);
            if path.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
                roots.push((
                    path,
                    "a part of its install prefix a runtime needs (lib, libexec, share)",
                ));
            }
        }
        roots
    }
}

fn existing(path: &Path) -> Option<PathBuf> {
    // Symlinked entries (/bin -> usr/bin, /etc/resolv.conf -> /run/...) are granted where they
    // lead, which is what the kernel checks.
    std::fs::canonicalize(path).ok()
}

fn dedup(paths: &mut Vec<PathBuf>) {
    let mut seen = Vec::with_capacity(paths.len());
    paths.retain(|path| {
        if seen.contains(path) {
            false
        } else {
            seen.push(path.clone());
            true
        }
    });
}

/// Where users keep their own files: `$HOME`, the password database's home of this user,
/// `/root` and `/home`.
fn home_areas() -> Vec<PathBuf> {
    let mut areas = vec![PathBuf::from("/root"), PathBuf::from("/home")];
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        if home.is_absolute() && home != Path::new("/") {
            areas.push(std::fs::canonicalize(&home).unwrap_or(home));
        }
    }
    if let Some(home) = password_home() {
        areas.push(home);
    }
    dedup(&mut areas);
    areas
}

fn password_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = vec![0 as libc::c_char; 4096];
    // SAFETY: getpwuid_r writes into the zeroed passwd and the buffer we own and sets `found`
    // to point at the passwd or to null.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::geteuid(),
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        );
        if rc != 0 || found.is_null() || entry.pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr(entry.pw_dir).to_bytes();
        let dir = Path::new(std::ffi::OsStr::from_bytes(dir));
        (dir.is_absolute() && dir != Path::new("/")).then(|| dir.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        let work = tempfile::tempdir().unwrap();
        let mut reach = Reach::new(
            &std::fs::canonicalize(work.path()).unwrap(),
            false,
            &[],
            &[],
        );
        reach.home_areas = vec![PathBuf::from("/home/u"), PathBuf::from("/root")];
        reach
    }

    #[test]
    fn the_system_is_readable_and_private_places_are_not() {
        let reach = reach();
        assert!(reach.covers(Path::new("/usr/bin/git")));
        assert!(reach.covers(&std::fs::canonicalize("/etc/passwd").unwrap()));
        for private in [
            "/etc/shadow",
            "/root/.ssh/id_rsa",
            "/home/u/.aws",
            "/tmp/x",
            "/var/log",
        ] {
            assert!(!reach.covers(Path::new(private)), "{private}");
        }
        assert!(reach.devices.contains(&PathBuf::from("/dev/null")));
    }

    fn roots(reach: &Reach, dir: &Path) -> Vec<PathBuf> {
        reach
            .install_roots(dir)
            .into_iter()
            .map(|(root, _)| root)
            .collect()
    }

    #[test]
    fn install_prefixes_give_their_runtime_parts_outside_homes_only() {
        let mut reach = reach();
        let prefix = tempfile::tempdir().unwrap();
        let prefix = std::fs::canonicalize(prefix.path()).unwrap();
        for dir in ["bin", "lib", "libexec", "share", "outside", "include"] {
            std::fs::create_dir(prefix.join(dir)).unwrap();
        }
        std::os::unix::fs::symlink("/etc", prefix.join("lib64")).unwrap();
        assert_eq!(
            roots(&reach, &prefix.join("bin")),
            [
                prefix.join("bin"),
                prefix.join("lib"),
                prefix.join("libexec"),
                prefix.join("share")
            ],
            "never the prefix, its other directories, or a part that is a symlink"
        );
        // A folder that is not a `bin`: nothing of it; a program there is granted alone, as
        // is one directly in a home or in the prefix itself.
        std::fs::write(prefix.join("outside/secret.txt"), "secret").unwrap();
        for program in ["outside/report", "perl", "lib/helper"] {
            let program = prefix.join(program);
            std::fs::copy("/bin/true", &program).unwrap();
            let dir = program.parent().unwrap();
            assert!(roots(&reach, dir).is_empty(), "{}", dir.display());
            assert_eq!(
                reach.program_roots(&program, &[]),
                std::slice::from_ref(&program)
            );
        }
        assert!(reach
            .search_path_roots(&prefix.join("outside").into_os_string())
            .is_empty());
        reach.home_areas.push(prefix.clone());
        let in_home = prefix.join("perl");
        assert_eq!(
            reach.program_roots(&in_home, &[]),
            std::slice::from_ref(&in_home)
        );
        assert_eq!(roots(&reach, &prefix.join("bin")), [prefix.join("bin")]);
        for home_bin in [
            "/home/u/.local/bin",
            "/home/u/.cargo/bin",
            "/home/u/bin",
            "/root/bin",
            // A prefix that contains a home (/home/bin -> /home) is not used either.
            "/home/bin",
        ] {
            assert_eq!(
                roots(&reach, Path::new(home_bin)),
                [PathBuf::from(home_bin)],
                "{home_bin}"
            );
        }
        assert_eq!(roots(&reach, Path::new("/bin")), [PathBuf::from("/bin")]);
    }

    #[test]
    fn program_roots_add_only_what_is_not_covered() {
        let reach = reach();
        assert!(reach
            .program_roots(Path::new("/usr/bin/env"), &[])
            .is_empty());
        assert!(reach
            .search_path_roots(&"/usr/bin:/bin:relative/bin".into())
            .is_empty());
        let tools = tempfile::tempdir().unwrap();
        let bin = std::fs::canonicalize(tools.path()).unwrap().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("tool"), "").unwrap();
        std::fs::create_dir(bin.parent().unwrap().join("lib")).unwrap();
        let lib = bin.parent().unwrap().join("lib");
        let roots = reach.search_path_roots(&bin.clone().into_os_string());
        assert_eq!(roots, [bin.clone(), lib.clone()]);
        assert!(reach.program_roots(&bin.join("tool"), &roots).is_empty());
        assert_eq!(
            reach.program_roots(&bin.join("tool"), &[]),
            [bin.clone(), lib.clone()]
        );
        assert_eq!(
            reach.program_grants(&bin.join("tool"), &[]),
            [
                (bin.clone(), "the directory of programs"),
                (
                    lib,
                    "a part of its install prefix a runtime needs (lib, libexec, share)"
                )
            ]
        );
        // A program outside a bin directory: its file alone, by its real path and by the
        // symlink it is run by.
        let loose = bin.parent().unwrap().join("loose");
        std::fs::create_dir(&loose).unwrap();
        std::fs::write(loose.join("tool"), "").unwrap();
        std::os::unix::fs::symlink(loose.join("tool"), loose.join("alias")).unwrap();
        assert_eq!(
            reach.program_grants(&loose.join("alias"), &[]),
            [
                (
                    loose.join("alias"),
                    "the name the program is run by (a symlink)"
                ),
                (loose.join("tool"), "the program itself")
            ]
        );
    }
}
