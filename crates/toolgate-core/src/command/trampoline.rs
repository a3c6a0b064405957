//! Shells and trampolines: programs that would run *another* program chosen by their
//! arguments, which would defeat the allowlist, the argument checks and the rules.
//!
//! They are recognised by name — as asked for and by the real basename after every symlink is
//! resolved, also under versioned or decorated names (`bash5`, `bash-5.2`, `busybox.static`,
//! `su-exec`) — and, where the name says nothing, by the file itself: the engine knows the
//! (device, inode) of every refused program in the usual program directories (so a hard link
//! under an innocent name is still refused, see [`RefusedFiles`]), and a dynamic loader is
//! recognised by its ELF headers ([`is_dynamic_loader`]) whatever it is called.
//!
//! Ordinary development tools (git, make, npm, python, node) are not on the list: what they can
//! do with their own features is for the kernel sandbox to confine, not for a list of names.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

/// (device, inode): which file a path leads to.
pub(crate) type FileId = (u64, u64);

/// Why a program kind is refused.
const SHELL: &str = "it is a shell, and toolgate never runs a shell; ask for the program itself";
const SESSION: &str =
    "it starts a shell in a terminal session, and toolgate never runs a shell; ask for the program itself";
const MULTI_CALL: &str =
    "it is a multi-call binary that contains a shell or a trampoline; allow the individual program instead";
const TRAMPOLINE: &str =
    "it runs another program given in its arguments, which would get around the allowlist; allow the program itself";
const PRIVILEGE: &str =
    "it runs another program with other privileges or as another user, which toolgate never does";
const LATER: &str =
    "it schedules a program to run later, outside this call and its limits, which toolgate never does";
/// The reason for a dynamic loader; also used when one is recognised by its ELF headers.
pub(crate) const LOADER: &str =
    "it is the dynamic loader (or runs it), which runs the program named in its arguments; allow the program itself";

/// How a table name matches a program's basename.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// Also under decorations: what precedes the first `.` or `-`, and without trailing version
    /// digits (`bash5`, `bash-5.2`, `gdb-multiarch`, `valgrind.bin`).
    Decorated,
    /// Only the whole basename, or the basename without trailing version digits: for short or
    /// common words (`at`, `perf`, `i386`) that begin the names of unrelated programs
    /// (`at-spi-bus-launcher`, `i386-linux-gnu-gcc`).
    Exact,
}

use Spelling::{Decorated, Exact};

const REFUSED: &[(&str, &str, Spelling)] = &[
    // shells
    ("sh", SHELL, Decorated),
    ("bash", SHELL, Decorated),
    ("rbash", SHELL, Decorated),
    ("zsh", SHELL, Decorated),
    ("dash", SHELL, Decorated),
    ("ash", SHELL, Decorated),
    ("ksh", SHELL, Decorated),
    ("mksh", SHELL, Decorated),
    ("pdksh", SHELL, Decorated),
    ("oksh", SHELL, Decorated),
    ("lksh", SHELL, Decorated),
    ("csh", SHELL, Decorated),
    ("tcsh", SHELL, Decorated),
    ("fish", SHELL, Decorated),
    ("yash", SHELL, Decorated),
    ("posh", SHELL, Decorated),
    ("elvish", SHELL, Decorated),
    ("nu", SHELL, Decorated),
    ("pwsh", SHELL, Decorated),
    ("xonsh", SHELL, Decorated),
    ("osh", SHELL, Decorated),
    ("ysh", SHELL, Decorated),
    ("oils-for-unix", SHELL, Decorated),
    ("execlineb", SHELL, Decorated),
    ("rc", SHELL, Exact),
    ("git-shell", SHELL, Decorated),
    // terminal sessions and multiplexers: each runs a shell
    ("tmux", SESSION, Decorated),
    ("tmate", SESSION, Decorated),
    ("screen", SESSION, Exact),
    ("byobu", SESSION, Decorated),
    ("dtach", SESSION, Decorated),
    ("abduco", SESSION, Decorated),
    ("zellij", SESSION, Decorated),
    ("xterm", SESSION, Decorated),
    ("x-terminal-emulator", SESSION, Decorated),
    ("gnome-terminal", SESSION, Decorated),
    ("konsole", SESSION, Decorated),
    ("xfce4-terminal", SESSION, Decorated),
    ("mate-terminal", SESSION, Decorated),
    ("lxterminal", SESSION, Decorated),
    ("terminator", SESSION, Decorated),
    ("tilix", SESSION, Decorated),
    ("urxvt", SESSION, Decorated),
    ("rxvt", SESSION, Decorated),
    ("alacritty", SESSION, Decorated),
    ("kitty", SESSION, Decorated),
    ("wezterm", SESSION, Decorated),
    // multi-call binaries
    ("busybox", MULTI_CALL, Decorated),
    ("toybox", MULTI_CALL, Decorated),
    ("coreutils", MULTI_CALL, Decorated),
    // the dynamic loader and what runs it (more loader names in `is_loader_name`)
    ("ld.so", LOADER, Exact),
    ("ldd", LOADER, Exact),
    // run a program given in their arguments
    ("env", TRAMPOLINE, Decorated),
    ("xargs", TRAMPOLINE, Decorated),
    ("nohup", TRAMPOLINE, Decorated),
    ("setsid", TRAMPOLINE, Decorated),
    ("timeout", TRAMPOLINE, Decorated),
    ("timelimit", TRAMPOLINE, Decorated),
    ("nice", TRAMPOLINE, Decorated),
    ("ionice", TRAMPOLINE, Decorated),
    ("chroot", TRAMPOLINE, Decorated),
    ("schroot", TRAMPOLINE, Decorated),
    ("dchroot", TRAMPOLINE, Decorated),
    ("arch-chroot", TRAMPOLINE, Decorated),
    ("fakechroot", TRAMPOLINE, Decorated),
    ("fakeroot", TRAMPOLINE, Decorated),
    ("proot", TRAMPOLINE, Decorated),
    ("switch_root", TRAMPOLINE, Decorated),
    ("strace", TRAMPOLINE, Decorated),
    ("ltrace", TRAMPOLINE, Decorated),
    ("uftrace", TRAMPOLINE, Decorated),
    ("gdb", TRAMPOLINE, Decorated),
    ("gdbtui", TRAMPOLINE, Decorated),
    ("gdbserver", TRAMPOLINE, Decorated),
    ("lldb", TRAMPOLINE, Decorated),
    ("rr", TRAMPOLINE, Exact),
    ("perf", TRAMPOLINE, Exact),
    ("valgrind", TRAMPOLINE, Decorated),
    ("heaptrack", TRAMPOLINE, Decorated),
    ("memusage", TRAMPOLINE, Exact),
    ("sotruss", TRAMPOLINE, Decorated),
    ("xtrace", TRAMPOLINE, Exact),
    ("catchsegv", TRAMPOLINE, Decorated),
    ("script", TRAMPOLINE, Decorated),
    ("scriptlive", TRAMPOLINE, Decorated),
    ("socat", TRAMPOLINE, Decorated),
    ("bpftrace", TRAMPOLINE, Decorated),
    ("trace-cmd", TRAMPOLINE, Decorated),
    ("radare2", TRAMPOLINE, Decorated),
    ("r2", TRAMPOLINE, Exact),
    ("stdbuf", TRAMPOLINE, Decorated),
    ("unbuffer", TRAMPOLINE, Decorated),
    ("expect", TRAMPOLINE, Decorated),
    ("empty", TRAMPOLINE, Exact),
    ("luit", TRAMPOLINE, Decorated),
    ("rlwrap", TRAMPOLINE, Decorated),
    ("sshpass", TRAMPOLINE, Decorated),
    ("taskset", TRAMPOLINE, Decorated),
    ("chrt", TRAMPOLINE, Decorated),
    ("schedtool", TRAMPOLINE, Decorated),
    ("choom", TRAMPOLINE, Decorated),
    ("numactl", TRAMPOLINE, Decorated),
    ("cgexec", TRAMPOLINE, Decorated),
    ("cpulimit", TRAMPOLINE, Decorated),
    ("trickle", TRAMPOLINE, Decorated),
    ("nocache", TRAMPOLINE, Decorated),
    ("eatmydata", TRAMPOLINE, Decorated),
    ("faketime", TRAMPOLINE, Decorated),
    ("datefudge", TRAMPOLINE, Decorated),
    ("torsocks", TRAMPOLINE, Decorated),
    ("torify", TRAMPOLINE, Decorated),
    ("proxychains", TRAMPOLINE, Decorated),
    ("tsocks", TRAMPOLINE, Decorated),
    ("unshare", TRAMPOLINE, Decorated),
    ("nsenter", TRAMPOLINE, Decorated),
    ("nsjail", TRAMPOLINE, Decorated),
    ("minijail0", TRAMPOLINE, Decorated),
    ("firejail", TRAMPOLINE, Decorated),
    ("bwrap", TRAMPOLINE, Decorated),
    ("lxc-attach", TRAMPOLINE, Decorated),
    ("lxc-execute", TRAMPOLINE, Decorated),
    ("lxc-unshare", TRAMPOLINE, Decorated),
    ("flatpak-spawn", TRAMPOLINE, Decorated),
    ("flock", TRAMPOLINE, Decorated),
    ("lckdo", TRAMPOLINE, Decorated),
    ("setlock", TRAMPOLINE, Decorated),
    ("with-lock-ex", TRAMPOLINE, Decorated),
    ("lockrun", TRAMPOLINE, Decorated),
    ("watch", TRAMPOLINE, Decorated),
    ("entr", TRAMPOLINE, Exact),
    ("watchexec", TRAMPOLINE, Decorated),
    ("time", TRAMPOLINE, Decorated),
    ("multitime", TRAMPOLINE, Decorated),
    ("hyperfine", TRAMPOLINE, Decorated),
    ("parallel", TRAMPOLINE, Decorated),
    ("sem", TRAMPOLINE, Exact),
    ("niceload", TRAMPOLINE, Decorated),
    ("chronic", TRAMPOLINE, Decorated),
    ("ifne", TRAMPOLINE, Decorated),
    ("pee", TRAMPOLINE, Exact),
    ("mispipe", TRAMPOLINE, Decorated),
    ("zrun", TRAMPOLINE, Decorated),
    ("run-parts", TRAMPOLINE, Decorated),
    ("run-one", TRAMPOLINE, Decorated),
    ("run-this-one", TRAMPOLINE, Decorated),
    ("keep-one-running", TRAMPOLINE, Decorated),
    ("run-one-constantly", TRAMPOLINE, Decorated),
    ("run-one-until-success", TRAMPOLINE, Decorated),
    ("run-one-until-failure", TRAMPOLINE, Decorated),
    ("command", TRAMPOLINE, Exact),
    ("setarch", TRAMPOLINE, Decorated),
    ("ssh-agent", TRAMPOLINE, Decorated),
    ("gpg-agent", TRAMPOLINE, Decorated),
    ("dbus-run-session", TRAMPOLINE, Decorated),
    ("dbus-launch", TRAMPOLINE, Decorated),
    ("xvfb-run", TRAMPOLINE, Decorated),
    ("xinit", TRAMPOLINE, Decorated),
    ("startx", TRAMPOLINE, Decorated),
    ("mpirun", TRAMPOLINE, Decorated),
    ("mpiexec", TRAMPOLINE, Decorated),
    ("orterun", TRAMPOLINE, Decorated),
    ("srun", TRAMPOLINE, Exact),
    ("daemonize", TRAMPOLINE, Decorated),
    ("daemon", TRAMPOLINE, Exact),
    ("start-stop-daemon", TRAMPOLINE, Decorated),
    ("tini", TRAMPOLINE, Decorated),
    ("dumb-init", TRAMPOLINE, Decorated),
    ("catatonit", TRAMPOLINE, Decorated),
    ("envdir", TRAMPOLINE, Decorated),
    ("envuidgid", TRAMPOLINE, Decorated),
    ("softlimit", TRAMPOLINE, Decorated),
    ("pgrphack", TRAMPOLINE, Decorated),
    ("fghack", TRAMPOLINE, Decorated),
    ("prlimit", TRAMPOLINE, Decorated),
    ("setpriv", TRAMPOLINE, Decorated),
    ("capsh", TRAMPOLINE, Decorated),
    ("runcon", TRAMPOLINE, Decorated),
    ("box64", TRAMPOLINE, Decorated),
    ("box86", TRAMPOLINE, Decorated),
    ("fexinterpreter", TRAMPOLINE, Decorated),
    ("fexloader", TRAMPOLINE, Decorated),
    ("wine", TRAMPOLINE, Decorated),
    ("wine64", TRAMPOLINE, Decorated),
    ("systemd-run", TRAMPOLINE, Decorated),
    ("systemd-nspawn", TRAMPOLINE, Decorated),
    ("systemd-cat", TRAMPOLINE, Decorated),
    ("systemd-inhibit", TRAMPOLINE, Decorated),
    ("systemd-notify", TRAMPOLINE, Decorated),
    ("systemd-socket-activate", TRAMPOLINE, Decorated),
    ("systemd-dissect", TRAMPOLINE, Decorated),
    // setarch under its personality names (util-linux links them to setarch)
    ("linux32", TRAMPOLINE, Exact),
    ("linux64", TRAMPOLINE, Exact),
    ("uname26", TRAMPOLINE, Exact),
    ("i386", TRAMPOLINE, Exact),
    ("i486", TRAMPOLINE, Exact),
    ("i586", TRAMPOLINE, Exact),
    ("i686", TRAMPOLINE, Exact),
    ("athlon", TRAMPOLINE, Exact),
    ("x86_64", TRAMPOLINE, Exact),
    ("ia64", TRAMPOLINE, Exact),
    ("ppc", TRAMPOLINE, Exact),
    ("ppc32", TRAMPOLINE, Exact),
    ("ppc64", TRAMPOLINE, Exact),
    ("ppcle", TRAMPOLINE, Exact),
    ("ppc64le", TRAMPOLINE, Exact),
    ("ppc64pseries", TRAMPOLINE, Exact),
    ("ppc64iseries", TRAMPOLINE, Exact),
    ("s390", TRAMPOLINE, Exact),
    ("s390x", TRAMPOLINE, Exact),
    ("sparc", TRAMPOLINE, Exact),
    ("sparc32", TRAMPOLINE, Exact),
    ("sparc32bash", TRAMPOLINE, Exact),
    ("sparc64", TRAMPOLINE, Exact),
    ("mips", TRAMPOLINE, Exact),
    ("mips32", TRAMPOLINE, Exact),
    ("mips64", TRAMPOLINE, Exact),
    ("alpha", TRAMPOLINE, Exact),
    ("alphaev5", TRAMPOLINE, Exact),
    ("alphaev56", TRAMPOLINE, Exact),
    ("alphaev6", TRAMPOLINE, Exact),
    ("alphaev67", TRAMPOLINE, Exact),
    ("arm", TRAMPOLINE, Exact),
    ("armh", TRAMPOLINE, Exact),
    ("armv7l", TRAMPOLINE, Exact),
    ("armv8l", TRAMPOLINE, Exact),
    ("aarch64", TRAMPOLINE, Exact),
    ("arm64", TRAMPOLINE, Exact),
    ("parisc", TRAMPOLINE, Exact),
    ("parisc32", TRAMPOLINE, Exact),
    ("parisc64", TRAMPOLINE, Exact),
    ("loongarch", TRAMPOLINE, Exact),
    ("loongarch64", TRAMPOLINE, Exact),
    // other privileges
    ("sudo", PRIVILEGE, Decorated),
    ("sudoedit", PRIVILEGE, Decorated),
    ("doas", PRIVILEGE, Decorated),
    ("su", PRIVILEGE, Decorated),
    ("ksu", PRIVILEGE, Decorated),
    ("run0", PRIVILEGE, Decorated),
    ("runuser", PRIVILEGE, Decorated),
    ("pkexec", PRIVILEGE, Decorated),
    ("gksu", PRIVILEGE, Decorated),
    ("gksudo", PRIVILEGE, Decorated),
    ("kdesu", PRIVILEGE, Decorated),
    ("kdesudo", PRIVILEGE, Decorated),
    ("beesu", PRIVILEGE, Decorated),
    ("sg", PRIVILEGE, Decorated),
    ("newgrp", PRIVILEGE, Decorated),
    ("gosu", PRIVILEGE, Decorated),
    ("chpst", PRIVILEGE, Decorated),
    ("setuidgid", PRIVILEGE, Decorated),
    // later, outside this call
    ("at", LATER, Exact),
    ("batch", LATER, Exact),
    ("crontab", LATER, Decorated),
];

/// qemu's tools that are not user-mode emulators (every other `qemu-*` runs a foreign
/// program given in its arguments).
const QEMU_TOOLS: &[&str] = &[
    "qemu-img",
    "qemu-io",
    "qemu-nbd",
    "qemu-edid",
    "qemu-ga",
    "qemu-keymap",
    "qemu-pr-helper",
    "qemu-storage-daemon",
    "qemu-system",
    "qemu-bridge-helper",
    "qemu-vmsr-helper",
];

/// The programs of a single-binary coreutils: run under one of these names, it *is* that
/// program (the trampolines among them are refused by their own names).
const COREUTILS_PROGRAMS: &[&str] = &[
    "[",
    "arch",
    "b2sum",
    "base32",
    "base64",
    "basename",
    "basenc",
    "cat",
    "chcon",
    "chgrp",
    "chmod",
    "chown",
    "chroot",
    "cksum",
    "comm",
    "cp",
    "csplit",
    "cut",
    "date",
    "dd",
    "df",
    "dir",
    "dircolors",
    "dirname",
    "du",
    "echo",
    "env",
    "expand",
    "expr",
    "factor",
    "false",
    "fmt",
    "fold",
    "groups",
    "head",
    "hostid",
    "hostname",
    "id",
    "install",
    "join",
    "kill",
    "link",
    "ln",
    "logname",
    "ls",
    "md5sum",
    "mkdir",
    "mkfifo",
    "mknod",
    "mktemp",
    "more",
    "mv",
    "nice",
    "nl",
    "nohup",
    "nproc",
    "numfmt",
    "od",
    "paste",
    "pathchk",
    "pinky",
    "pr",
    "printenv",
    "printf",
    "ptx",
    "pwd",
    "readlink",
    "realpath",
    "rm",
    "rmdir",
    "runcon",
    "seq",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "shred",
    "shuf",
    "sleep",
    "sort",
    "split",
    "stat",
    "stdbuf",
    "stty",
    "sum",
    "sync",
    "tac",
    "tail",
    "tee",
    "test",
    "timeout",
    "touch",
    "tr",
    "true",
    "truncate",
    "tsort",
    "tty",
    "uname",
    "unexpand",
    "uniq",
    "unlink",
    "uptime",
    "users",
    "vdir",
    "wc",
    "who",
    "whoami",
    "yes",
];

/// The table as a map from name to (reason, spelling), built once.
fn table() -> &'static HashMap<&'static str, (&'static str, Spelling)> {
    static TABLE: OnceLock<HashMap<&'static str, (&'static str, Spelling)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        REFUSED
            .iter()
            .map(|(name, reason, spelling)| (*name, (*reason, *spelling)))
            .collect()
    })
}

/// Every name on the list, for tests that look for installed programs.
#[cfg(test)]
pub(crate) fn listed_names() -> impl Iterator<Item = &'static str> {
    REFUSED.iter().map(|(name, _, _)| *name)
}

/// The reason `name` (a program name or a path; only its last component counts) is refused,
/// or `None` when it is an ordinary program.
pub fn refusal_reason(name: &str) -> Option<&'static str> {
    let base = Path::new(name)
        .file_name()
        .map(|base| base.to_string_lossy().to_ascii_lowercase())?;
    if is_loader_name(&base) {
        return Some(LOADER);
    }
    if is_qemu_user_emulator(&base) {
        return Some(TRAMPOLINE);
    }
    let exact = [base.as_str(), strip_version(&base)];
    let found = exact
        .into_iter()
        .chain(decorated_forms(&base))
        .enumerate()
        .find_map(|(at, form)| {
            table()
                .get(form)
                .filter(|(_, spelling)| at < exact.len() || *spelling == Decorated)
                .map(|(reason, _)| *reason)
        });
    found
}

/// Whether `base` is a multi-call binary that becomes the program it is run as
/// (`coreutils`), and `asked` (the basename it is run under) is one of its ordinary programs.
fn runs_as_its_program(refused_base: &str, asked: &str) -> bool {
    let refused = refused_base.to_ascii_lowercase();
    let is_coreutils = [refused.as_str(), strip_version(&refused)]
        .into_iter()
        .chain(decorated_forms(&refused))
        .any(|form| form == "coreutils");
    let asked = asked.to_ascii_lowercase();
    is_coreutils && COREUTILS_PROGRAMS.contains(&asked.as_str()) && refusal_reason(&asked).is_none()
}

/// The reason a program is refused when it resolves to a file whose basename is `real_base`,
/// run under the basename `asked_base`: `refusal_reason(real_base)`, except for a multi-call
/// binary run under the name of one of its ordinary programs.
pub(crate) fn refusal_reason_as(real_base: &str, asked_base: &str) -> Option<&'static str> {
    let reason = refusal_reason(real_base)?;
    if runs_as_its_program(real_base, asked_base) {
        None
    } else {
        Some(reason)
    }
}

/// The dynamic loader's names: `ld.so`, `ld-linux-x86-64.so.2`, `ld-linux.so.2`,
/// `ld-musl-x86_64.so.1`, `ld-2.31.so`, `ld64.so.2`, `ld-elf.so.1`; and musl's `libc.so`,
/// which is its loader.
fn is_loader_name(base: &str) -> bool {
    base == "ld.so"
        || base.starts_with("ld.so.")
        || ((base.starts_with("ld-") || base.starts_with("ld64.")) && base.contains(".so"))
        || base == "libc.so"
        || base.starts_with("libc.musl-")
}

/// `qemu-<arch>` and `qemu-<arch>-static`: user-mode emulators that run a program.
fn is_qemu_user_emulator(base: &str) -> bool {
    base.starts_with("qemu-") && !QEMU_TOOLS.iter().any(|tool| base.starts_with(tool))
}

/// The name with decorations removed: what precedes the first `.` or `-`, with and without
/// trailing version digits (`bash5`, `ksh93`, `bash-5.2`, `busybox.static`, `su-exec`).
fn decorated_forms(base: &str) -> impl Iterator<Item = &str> {
    let before_dot = base.split('.').next().unwrap_or(base);
    let before_dash = before_dot.split('-').next().unwrap_or(before_dot);
    [before_dot, before_dash]
        .into_iter()
        .flat_map(|form| [form, strip_version(form)])
        .filter(|form| !form.is_empty())
}

fn strip_version(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_' || c == '-' || c == '.')
}

/// Whether the file at `path` is a dynamic loader, whatever it is called: an ELF shared object
/// (`ET_DYN`) that names itself (`DT_SONAME`, as libraries do) but asks for no interpreter
/// (`PT_INTERP`, as every dynamically linked program does). That is what `ld.so` and musl's
/// `libc.so` are; ordinary programs have an interpreter, static ones no `DT_SONAME`. Only the
/// ELF header, the program headers and the dynamic section are read.
pub(crate) fn is_dynamic_loader(path: &Path) -> bool {
    std::fs::File::open(path)
        .ok()
        .and_then(|file| elf::names_itself_without_interpreter(&file))
        .unwrap_or(false)
}

mod elf {
    //! Just enough ELF to tell a dynamic loader from a program.
    use std::fs::File;
    use std::os::unix::fs::FileExt;

    const PT_DYNAMIC: u32 = 2;
    const PT_INTERP: u32 = 3;
    const ET_DYN: u16 = 3;
    const DT_NULL: u64 = 0;
    const DT_SONAME: u64 = 14;
    /// More program headers or a larger dynamic section than any real loader has.
    const MAX_TABLE_BYTES: u64 = 64 * 1024;

    struct Layout {
        wide: bool,
        little: bool,
    }

    impl Layout {
        fn u16(&self, bytes: &[u8], at: usize) -> Option<u16> {
            let raw: [u8; 2] = bytes.get(at..at + 2)?.try_into().ok()?;
            Some(if self.little {
                u16::from_le_bytes(raw)
            } else {
                u16::from_be_bytes(raw)
            })
        }

        fn u32(&self, bytes: &[u8], at: usize) -> Option<u32> {
            let raw: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
            Some(if self.little {
                u32::from_le_bytes(raw)
            } else {
                u32::from_be_bytes(raw)
            })
        }

        /// A word: 8 bytes in a 64-bit file, 4 in a 32-bit one.
        fn word(&self, bytes: &[u8], at: usize) -> Option<u64> {
            if !self.wide {
                return self.u32(bytes, at).map(u64::from);
            }
            let raw: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
            Some(if self.little {
                u64::from_le_bytes(raw)
            } else {
                u64::from_be_bytes(raw)
            })
        }
    }

    fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
        if len > MAX_TABLE_BYTES {
            return None;
        }
        let mut buffer = vec![0u8; len as usize];
        file.read_exact_at(&mut buffer, offset).ok()?;
        Some(buffer)
    }

    /// `Some(true)` for an `ET_DYN` file with `DT_SONAME` and no `PT_INTERP`; `None` when it is
    /// not an ELF file or cannot be read.
    pub(super) fn names_itself_without_interpreter(file: &File) -> Option<bool> {
        let header = read_at(file, 0, 64).or_else(|| read_at(file, 0, 52))?;
        if header.get(..4)? != b"\x7fELF" {
            return None;
        }
        let layout = Layout {
            wide: header[4] == 2,
            little: header[5] == 1,
        };
        if layout.u16(&header, 16)? != ET_DYN {
            return Some(false);
        }
        let (phoff, entsize, count) = if layout.wide {
            (
                layout.word(&header, 32)?,
                layout.u16(&header, 54)?,
                layout.u16(&header, 56)?,
            )
        } else {
            (
                layout.word(&header, 28)?,
                layout.u16(&header, 42)?,
                layout.u16(&header, 44)?,
            )
        };
        let headers = read_at(file, phoff, u64::from(entsize) * u64::from(count))?;
        let mut dynamic = None;
        for index in 0..usize::from(count) {
            let at = index * usize::from(entsize);
            match layout.u32(&headers, at)? {
                PT_INTERP => return Some(false),
                PT_DYNAMIC => {
                    let (offset, size) = if layout.wide {
                        (
                            layout.word(&headers, at + 8)?,
                            layout.word(&headers, at + 32)?,
                        )
                    } else {
                        (
                            layout.word(&headers, at + 4)?,
                            layout.word(&headers, at + 16)?,
                        )
                    };
                    dynamic = Some((offset, size));
                }
                _ => {}
            }
        }
        let Some((offset, size)) = dynamic else {
            return Some(false);
        };
        let entries = read_at(file, offset, size)?;
        let entry_size = if layout.wide { 16 } else { 8 };
        for at in (0..entries.len().saturating_sub(entry_size - 1)).step_by(entry_size) {
            match layout.word(&entries, at)? {
                DT_NULL => break,
                DT_SONAME => return Some(true),
                _ => {}
            }
        }
        Some(false)
    }
}

/// The usual program directories, looked at besides the child's PATH.
pub(crate) const PROGRAM_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/libexec",
    "/usr/local/libexec",
];

/// The files of refused programs found in the program directories, by (device, inode): what
/// recognises a hard link to a shell or trampoline under any name.
#[derive(Debug, Default, Clone)]
pub(crate) struct RefusedFiles {
    by_id: HashMap<FileId, (String, PathBuf)>,
}

impl RefusedFiles {
    /// Scans `dirs` (each once per change of the directory: the scans are shared by every tool
    /// in the process and redone when a directory's modification time changes).
    pub fn scan<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> Self {
        static SCANS: OnceLock<Mutex<HashMap<PathBuf, DirScan>>> = OnceLock::new();
        let scans = SCANS.get_or_init(Default::default);
        let mut by_id = HashMap::new();
        for dir in dirs {
            let Ok(meta) = std::fs::metadata(dir) else {
                continue;
            };
            let modified = meta.modified().ok();
            let found = {
                let cached = scans.lock().ok().and_then(|scans| {
                    scans
                        .get(dir)
                        .filter(|scan| scan.modified == modified && modified.is_some())
                        .map(|scan| scan.found.clone())
                });
                match cached {
                    Some(found) => found,
                    None => {
                        let found = scan_dir(dir);
                        if let Ok(mut scans) = scans.lock() {
                            scans.insert(
                                dir.to_path_buf(),
                                DirScan {
                                    modified,
                                    found: found.clone(),
                                },
                            );
                        }
                        found
                    }
                }
            };
            for (id, name, path) in found {
                by_id.entry(id).or_insert((name, path));
            }
        }
        Self { by_id }
    }

    /// The refused program (its basename and path) that is the same file as `id`.
    pub fn get(&self, id: FileId) -> Option<(&str, &Path)> {
        self.by_id
            .get(&id)
            .map(|(name, path)| (name.as_str(), path.as_path()))
    }
}

#[derive(Debug)]
struct DirScan {
    modified: Option<SystemTime>,
    found: Vec<(FileId, String, PathBuf)>,
}

fn scan_dir(dir: &Path) -> Vec<(FileId, String, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        if refusal_reason(text).is_none() {
            continue;
        }
        let path = entry.path();
        if let Ok(meta) = std::fs::metadata(&path) {
            if meta.is_file() {
                found.push(((meta.dev(), meta.ino()), text.to_string(), path));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_and_trampolines_are_refused_under_every_spelling() {
        for name in [
            "sh",
            "bash",
            "zsh",
            "dash",
            "ksh",
            "csh",
            "tcsh",
            "fish",
            "busybox",
            "env",
            "xargs",
            "sudo",
            "doas",
            "su",
            "nohup",
            "setsid",
            "timeout",
            "nice",
            "chroot",
            "strace",
            "script",
            "bash5",
            "bash-5.2",
            "ksh93",
            "busybox.static",
            "su-exec",
            "/usr/bin/env",
            "/bin/BASH",
            "zsh-5.9",
            "pwsh7",
            "setarch",
            "linux32",
            "linux64",
            "i386",
            "x86_64",
            "uname26",
            "choom",
            "ssh-agent",
            "dbus-run-session",
            "run-parts",
            "ld.so",
            "ld-linux-x86-64.so.2",
            "/lib64/ld-linux-x86-64.so.2",
            "ld-linux.so.2",
            "ld-musl-x86_64.so.1",
            "ld-2.31.so",
            "ld64.so.2",
            "libc.musl-x86_64.so.1",
            "ldd",
            "gdb-multiarch",
            "valgrind.bin",
            "perf_5.10",
            "qemu-x86_64-static",
            "qemu-aarch64",
            "fakeroot-sysv",
            "proxychains4",
            "tmux",
            "at",
            "crontab",
            "coreutils",
        ] {
            assert!(refusal_reason(name).is_some(), "{name} should be refused");
        }
    }

    #[test]
    fn ordinary_programs_pass() {
        for name in [
            "git",
            "jq",
            "ls",
            "envsubst",
            "shred",
            "sha256sum",
            "scriptreplay",
            "python3",
            "timeoutx",
            "gitx",
            "/usr/bin/git",
            "node",
            "cargo",
            "rg",
            "kubectl",
            "ssh",
            "python-and-bash-no",
            "ld",
            "ld.bfd",
            "ld.gold",
            "ldconfig",
            "x86_64-linux-gnu-gcc",
            "i386-elf-objdump",
            "arm-none-eabi-gcc",
            "at-spi-bus-launcher",
            "perf-tool",
            "screenfetch",
            "qemu-img",
            "qemu-system-x86_64",
            "make",
            "npm",
            "libc.so.6",
        ] {
            assert_eq!(refusal_reason(name), None, "{name} should pass");
        }
    }

    #[test]
    fn reasons_say_what_kind_of_program_it_is() {
        assert!(refusal_reason("bash").unwrap().contains("shell"));
        assert!(refusal_reason("xargs").unwrap().contains("another program"));
        assert!(refusal_reason("sudo").unwrap().contains("privileges"));
        assert!(refusal_reason("busybox").unwrap().contains("multi-call"));
        assert!(refusal_reason("ld.so").unwrap().contains("dynamic loader"));
        assert!(refusal_reason("at").unwrap().contains("later"));
        assert!(refusal_reason("tmux").unwrap().contains("terminal"));
    }

    #[test]
    fn coreutils_run_as_one_of_its_programs_is_that_program() {
        assert_eq!(refusal_reason_as("coreutils", "ls"), None);
        assert_eq!(refusal_reason_as("coreutils", "cat"), None);
        assert!(refusal_reason_as("coreutils", "coreutils").is_some());
        assert!(refusal_reason_as("coreutils", "innocent").is_some());
        assert!(refusal_reason_as("coreutils", "env").is_some());
        assert!(refusal_reason_as("busybox", "ls").is_some());
        assert!(refusal_reason_as("bash", "ls").is_some());
    }

    #[test]
    fn the_dynamic_loader_is_recognised_by_its_headers() {
        let candidates = [
            "/lib64/ld-linux-x86-64.so.2",
            "/lib/ld-linux-aarch64.so.1",
            "/lib/ld-musl-x86_64.so.1",
            "/usr/bin/ld.so",
        ];
        let Some(loader) = candidates.iter().map(Path::new).find(|path| path.exists()) else {
            eprintln!("skipped: no dynamic loader found at {candidates:?}");
            return;
        };
        assert!(is_dynamic_loader(loader), "{}", loader.display());
        for program in ["/bin/ls", "/bin/true", "/usr/bin/env"] {
            assert!(!is_dynamic_loader(Path::new(program)), "{program}");
        }
        // A script and a missing file are not loaders.
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert!(!is_dynamic_loader(&script));
        assert!(!is_dynamic_loader(&dir.path().join("missing")));
        // A copy under an innocent name is still the loader.
        let copy = dir.path().join("innocent");
        std::fs::copy(loader, &copy).unwrap();
        assert!(is_dynamic_loader(&copy));
    }

    #[test]
    fn hard_links_to_refused_programs_are_known_by_their_file() {
        use std::os::unix::fs::MetadataExt;
        let Ok(bash) = std::fs::canonicalize("/bin/bash") else {
            eprintln!("skipped: /bin/bash is not installed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("innocent");
        if std::fs::hard_link(&bash, &link).is_err() {
            eprintln!("skipped: cannot hard-link {}", bash.display());
            return;
        }
        let refused = RefusedFiles::scan([bash.parent().unwrap()]);
        let meta = std::fs::metadata(&link).unwrap();
        let (name, _) = refused.get((meta.dev(), meta.ino())).unwrap();
        assert!(refusal_reason(name).is_some(), "{name}");
    }
}
