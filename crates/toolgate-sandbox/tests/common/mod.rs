//! What the launcher's own tests share: the real `toolgate-sandbox` binary, a work directory
//! with a secret next to it, and a policy written out by hand as the launcher's words (the
//! system paths a shell needs, the work directory), so nothing of toolgate-core is involved.

#![allow(dead_code)] // each test binary uses its own subset

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The text of every secret outside the work directory.
pub const SECRET: &str = "TOP-SECRET-9d41a2";

/// The launcher cargo built for these tests.
pub fn launcher() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolgate-sandbox"))
}

/// Whether this kernel can confine at all; prints why a test is skipped when it cannot.
pub fn kernel_can_confine() -> bool {
    let abi = toolgate_sandbox::kernel::landlock_abi();
    let seccomp = toolgate_sandbox::kernel::seccomp_filters();
    if abi == 0 || !seccomp {
        eprintln!(
            "skipped: this kernel lacks Landlock (ABI {abi}) or seccomp filters ({seccomp}); the launcher's denials cannot be checked here"
        );
        return false;
    }
    true
}

/// `root/` holds `secret.txt`, `outside/secret.txt` and the work directory `work/`.
pub struct Fixture {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub work: PathBuf,
    pub outside: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let work = root.join("work");
        let outside = root.join("outside");
        std::fs::create_dir(&work).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(root.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::write(work.join("in.txt"), "line one\nline two\n").unwrap();
        Self {
            _root: dir,
            root,
            work,
            outside,
        }
    }

    pub fn secret(&self) -> String {
        self.root.join("secret.txt").display().to_string()
    }

    /// The words of a policy: the system runtime and `/proc` readable, `/dev/null` a device,
    /// the work directory writable (readable only with `readonly`), and `extra` words.
    pub fn policy(&self, readonly: bool, extra: &[&str]) -> Vec<OsString> {
        let mut words: Vec<OsString> = Vec::new();
        for root in [
            "/usr",
            "/bin",
            "/sbin",
            "/lib",
            "/lib32",
            "/lib64",
            "/etc/ld.so.cache",
            "/etc/passwd",
            "/etc/group",
            "/etc/nsswitch.conf",
            "/proc",
        ] {
            words.push("--read".into());
            words.push(root.into());
        }
        words.push("--device".into());
        words.push("/dev/null".into());
        words.push(if readonly { "--read" } else { "--write" }.into());
        words.push(self.work.clone().into());
        words.extend(extra.iter().map(OsString::from));
        words
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether `program` is installed (absolute path, or on this process's PATH); prints why a
/// test is skipped when it is not.
pub fn installed(program: &str) -> bool {
    let found = if program.starts_with('/') {
        Path::new(program).exists()
    } else {
        std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
            .unwrap_or(false)
    };
    if !found {
        eprintln!("skipped: '{program}' is not installed on this machine");
    }
    found
}

/// Whether the launcher builds views here (a mount namespace of the call's own): then a path
/// outside the policy does not exist for the program (`ENOENT`), else Landlock refuses it.
pub fn view_available() -> bool {
    let out = std::process::Command::new(launcher())
        .arg("--probe")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|line| line == "view=1")
}

/// A unique `sleep` argument (`30.004217`): a sandboxed process running `sleep` with it is
/// found on the host by [`processes_with`] (inside its PID namespace it cannot learn its host
/// pid).
pub fn sleep_marker(seconds: u32) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{seconds}.{:03}{unique:03}", std::process::id() % 1000)
}

/// The live processes with `marker` as an argument.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline
            .split(|&byte| byte == 0)
            .any(|arg| arg == marker.as_bytes())
            && !process_is_gone(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Shell lines that wait until `sleep MARKER` runs (in the `/proc` the script sees).
pub fn wait_inside_for(marker: &str) -> String {
    format!(
        "found() {{ for p in /proc/[0-9]*/cmdline; do [ \"$(tr '\\0' ' ' < \"$p\" 2>/dev/null)\" = 'sleep {marker} ' ] && return 0; done; return 1; }}\nuntil found; do sleep 0.01; done"
    )
}

/// A pid is gone when it no longer exists or is a zombie.
pub fn process_is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `seconds` for `check` to hold.
pub fn eventually(seconds: u64, check: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    check()
}

/// A command that runs the launcher with `args` under the seccomp filter of
/// `tests/helpers/restricted_launcher.py`'s `mode` (a machine that refuses some namespaces or
/// system calls, simulated by a real kernel refusal; the helper executes the launcher in its
/// own process). `None` (with the reason printed) where `python3` is not installed.
pub fn restricted(mode: &str) -> Option<std::process::Command> {
    if !installed("/usr/bin/python3") {
        return None;
    }
    let helper =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/helpers/restricted_launcher.py");
    let mut command = std::process::Command::new("/usr/bin/python3");
    command.arg(helper).arg(mode).arg(launcher());
    Some(command)
}
