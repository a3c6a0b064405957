//! Which paths a sandboxed process may reach, resolved when a sandbox is prepared.

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

/// Device files: read, write and ioctl (terminal programs ask `/dev/tty` for its size).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The fixed part of a sandbox's reach, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reach {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Read, write, create, remove.
    pub write: Vec<PathBuf>,
    /// Device files.
    pub devices: Vec<PathBuf>,
    /// Directories under which a program's install prefix is not granted as a whole.
    pub home_areas: Vec<PathBuf>,
}

impl Reach {
    /// The system part plus the work directory and the configured roots (all canonical and
    /// existing; missing system entries are left out).
    pub fn new(
        work_dir: &Path,
        readonly: bool,
        read_roots: &[PathBuf],
        write_roots: &[PathBuf],
    ) -> Self {
        let mut read: Vec<PathBuf> = SYSTEM_ROOTS
            .iter()
            .chain(ETC_ENTRIES)
            .chain(["/proc"].iter())
            .filter_map(|path| existing(Path::new(path)))
            .collect();
        read.extend(read_roots.iter().cloned());
        let mut write = write_roots.to_vec();
        if readonly {
            read.push(work_dir.to_path_buf());
        } else {
            write.push(work_dir.to_path_buf());
        }
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
        Reach {
            read,
            write,
            devices,
            home_areas: home_areas(),
        }
    }

    /// Whether `path` is already readable under this reach.
    pub fn covers(&self, path: &Path) -> bool {
        self.read
            .iter()
            .chain(&self.write)
            .any(|root| path.starts_with(root))
    }

    /// The read roots the directories of a `PATH` need (what a program may run in turn): each
    /// absolute entry's install prefix (see [`Reach::program_roots`]) where not yet covered.
    pub fn search_path_roots(&self, search_path: &OsString) -> Vec<PathBuf> {
        let mut roots = Vec::new();
        let dirs = std::env::split_paths(search_path)
            .filter(|dir| dir.is_absolute())
            .filter_map(|dir| std::fs::canonicalize(dir).ok());
        for dir in dirs {
            self.add_root(&mut roots, self.install_root(&dir));
        }
        roots
    }

    /// The read roots the program needs beyond `known`: its install prefix (the parent of a
    /// `bin` or `sbin` directory, else its own directory), or the file alone when that is
    /// covered otherwise. Inside a home area only the program's directory is granted, never
    /// the prefix: `~/.local`, `~/.cargo` or `~` itself would expose user data.
    pub fn program_roots(&self, program: &Path, known: &[PathBuf]) -> Vec<PathBuf> {
        let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
        let mut roots = Vec::new();
        if let Some(dir) = real.parent() {
            let root = self.install_root(dir);
            if !known.iter().any(|k| root.starts_with(k)) {
                self.add_root(&mut roots, root);
            }
        }
        if !self.covers(&real) && !known.iter().chain(&roots).any(|k| real.starts_with(k)) {
            roots.push(real);
        }
        roots
    }

    fn add_root(&self, roots: &mut Vec<PathBuf>, root: PathBuf) {
        if !self.covers(&root) && !roots.iter().any(|known| root.starts_with(known)) {
            roots.push(root);
        }
    }

    fn install_root(&self, dir: &Path) -> PathBuf {
        let named_bin = matches!(
            dir.file_name().and_then(|name| name.to_str()),
            Some("bin" | "sbin")
        );
        let prefix = match dir.parent() {
            Some(parent) if named_bin && parent != Path::new("/") => parent,
            _ => return dir.to_path_buf(),
        };
        let in_home = self
            .home_areas
            .iter()
            .any(|home| prefix.starts_with(home) || home.starts_with(prefix));
        if in_home {
            dir.to_path_buf()
        } else {
            prefix.to_path_buf()
        }
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

    #[test]
    fn install_prefixes_are_granted_outside_homes_only() {
        let reach = reach();
        assert_eq!(
            reach.install_root(Path::new("/opt/node/bin")),
            Path::new("/opt/node")
        );
        assert_eq!(
            reach.install_root(Path::new("/opt/tool")),
            Path::new("/opt/tool")
        );
        for home_bin in [
            "/home/u/.local/bin",
            "/home/u/.cargo/bin",
            "/home/u/bin",
            "/root/bin",
        ] {
            assert_eq!(
                reach.install_root(Path::new(home_bin)),
                Path::new(home_bin),
                "{home_bin}"
            );
        }
        // A prefix that contains a home (/home/bin -> /home) is not granted either.
        assert_eq!(
            reach.install_root(Path::new("/home/bin")),
            Path::new("/home/bin")
        );
        assert_eq!(reach.install_root(Path::new("/bin")), Path::new("/bin"));
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
        let roots = reach.search_path_roots(&bin.clone().into_os_string());
        assert_eq!(roots, [bin.parent().unwrap()]);
        assert!(reach.program_roots(&bin.join("tool"), &roots).is_empty());
        assert_eq!(
            reach.program_roots(&bin.join("tool"), &[]),
            [bin.parent().unwrap()]
        );
    }
}
