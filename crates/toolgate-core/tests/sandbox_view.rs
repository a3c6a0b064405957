//! Attack tests of issue 22, classes 1, 3, 4 and 5, through core's `Sandbox` and the launcher
//! server: the view (nothing outside the writable roots can change in any way; what is not
//! granted does not exist), protected and hidden paths, no terminal, no host IPC. Several
//! variants per class, each run as a real program; every denial is the program's own error.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::{installed, text, view_available, Fixture};
use toolgate_core::exec::{self, ExecOutput};
use toolgate_core::SandboxPolicy;

const PYTHON: &str = "/usr/bin/python3";

/// Everything about a file a change could touch.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: i64,
    nlink: u64,
    size: u64,
    content: Vec<u8>,
    xattrs: Vec<String>,
}

fn stat(path: &Path) -> Stat {
    let meta = std::fs::symlink_metadata(path).unwrap();
    let mut xattrs = Vec::new();
    let mut buffer = vec![0u8; 4096];
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: llistxattr writes at most buffer.len() bytes into the buffer we own.
    let n = unsafe { libc::llistxattr(name.as_ptr(), buffer.as_mut_ptr().cast(), buffer.len()) };
    if n > 0 {
        xattrs = buffer[..n as usize]
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
    }
    Stat {
        mode: meta.mode(),
        uid: meta.uid(),
        gid: meta.gid(),
        mtime: meta.mtime(),
        nlink: meta.nlink(),
        size: meta.size(),
        content: if meta.is_file() {
            std::fs::read(path).unwrap()
        } else {
            Vec::new()
        },
        xattrs,
    }
}

/// The fixture plus `root/readable/` (a read root) holding a root-owned copy of python3 and a
/// stand-in for `~/.ssh/id_rsa`.
struct View {
    f: Fixture,
    readable: PathBuf,
    python_copy: PathBuf,
    key: PathBuf,
}

impl View {
    fn new() -> Option<Self> {
        if !view_available() || !installed(PYTHON) {
            eprintln!("skipped: no view or no python3 here");
            return None;
        }
        let f = Fixture::new();
        let readable = f.root.join("readable");
        std::fs::create_dir_all(readable.join(".ssh")).unwrap();
        let python_copy = readable.join("python3");
        std::fs::copy(PYTHON, &python_copy).unwrap();
        std::fs::set_permissions(&python_copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = readable.join(".ssh/id_rsa");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        Some(Self {
            f,
            readable,
            python_copy,
            key,
        })
    }

    fn policy(&self) -> SandboxPolicy {
        let mut policy = self.f.policy();
        policy.read = vec![self.readable.clone()];
        policy
    }

    /// A request with a plain `PATH` (the test process's may lead into a home, whose path to
    /// a granted `bin` directory would then exist in the view).
    fn request(&self, policy: SandboxPolicy, program: &str, args: &[&str]) -> exec::ExecRequest {
        let mut request = self.f.request_with(policy, program, args);
        request.env.retain(|(name, _)| name != "PATH");
        request.env.push(("PATH".into(), "/usr/bin:/bin".into()));
        request
    }

    async fn sh(&self, policy: SandboxPolicy, script: &str) -> ExecOutput {
        exec::run(self.request(policy, "/bin/sh", &["-c", script]))
            .await
            .unwrap()
    }

    async fn python(&self, policy: SandboxPolicy, code: &str) -> ExecOutput {
        exec::run(self.request(policy, PYTHON, &["-c", code]))
            .await
            .unwrap()
    }
}

fn failed_with(out: &ExecOutput, what: &str, needles: &[&str]) {
    assert_ne!(
        out.exit_code,
        Some(0),
        "{what}: it worked: {}",
        text(&out.stdout)
    );
    let stderr = text(&out.stderr);
    assert!(
        needles.iter().any(|needle| stderr.contains(needle)),
        "{what}: expected one of {needles:?}, got: {stderr}"
    );
}

const READ_ONLY: &[&str] = &["Read-only file system", "EROFS", "Errno 30"];

/// Class 1: chmod (the setuid copy of python3, the key), chown, utime, setxattr, hard links and
/// renames into and out of read roots fail; nothing about the files changes.
#[tokio::test(flavor = "multi_thread")]
async fn metadata_outside_the_writable_roots_cannot_change() {
    let Some(v) = View::new() else { return };
    let copy = v.python_copy.display().to_string();
    let key = v.key.display().to_string();
    let before = [
        stat(&v.python_copy),
        stat(&v.key),
        stat(Path::new("/etc/passwd")),
    ];
    let scripts = [
        format!("chmod 4755 {copy}"),
        format!("chmod u+s {copy}"),
        format!("chmod 644 {key}"),
        format!("chmod 777 {}", v.readable.join(".ssh").display()),
        "chmod 666 /etc/passwd".to_string(),
        format!("chown 65534 {copy}"),
        format!("chgrp 65534 {key}"),
        format!("touch -d 2001-01-01 {key}"),
        format!("touch -m {copy}"),
        "touch /etc/passwd".to_string(),
        format!("ln -s {key} key-link && chmod 644 key-link"),
        format!("ln {key} ./key-hardlink"),
        "ln /etc/passwd ./passwd-hardlink".to_string(),
        format!("mv {key} ./moved-key"),
        format!("mv in.txt {}/planted.txt", v.readable.display()),
        format!("cp in.txt {}/planted.txt", v.readable.display()),
        format!("truncate -s 0 {key}"),
        format!("rm -f {key}"),
    ];
    for script in &scripts {
        let out = v.sh(v.policy(), script).await;
        failed_with(
            &out,
            script,
            &[
                "Read-only file system",
                "cross-device",
                "Operation not permitted",
            ],
        );
    }
    let pythons = [
        format!("import os; os.chmod('{copy}', 0o4755)"),
        format!("import os; os.chmod('{key}', 0o644)"),
        format!("import os; os.utime('{key}', (0, 0))"),
        format!("import os; os.setxattr('{key}', 'user.planted', b'1')"),
        format!("import os; os.setxattr('{copy}', 'security.capability', b'\\x01\\x00\\x00\\x02' + bytes(16))"),
        format!("import os; os.chown('{copy}', 65534, 65534)"),
        format!("import os; os.link('{key}', 'hard')"),
        format!("import os; os.rename('{key}', 'stolen')"),
        "import os; os.chmod('/etc/passwd', 0o666)".to_string(),
        "import os; os.setxattr('/usr/bin/env', 'user.x', b'1')".to_string(),
        "import os; os.utime('/usr/bin/env', (0, 0))".to_string(),
    ];
    for code in &pythons {
        let out = v.python(v.policy(), code).await;
        failed_with(
            &out,
            code,
            &[
                "Errno 30",
                "Errno 18",
                "Errno 1]",
                "Read-only",
                "cross-device",
            ],
        );
    }
    let after = [
        stat(&v.python_copy),
        stat(&v.key),
        stat(Path::new("/etc/passwd")),
    ];
    assert_eq!(before, after, "a file outside the writable roots changed");
    assert!(!v.readable.join("planted.txt").exists());
    assert!(!v.f.work.join("key-hardlink").exists());
    assert!(!v.f.work.join("passwd-hardlink").exists());
}

/// Class 1 in a read-only work directory, and for an executable tool's `description` at
/// discovery (the same policy: read-only work directory, no write roots).
#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_work_directory_keeps_its_metadata() {
    let Some(v) = View::new() else { return };
    let file = v.f.work.join("in.txt");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = stat(&file);
    let mut policy = v.policy();
    policy.readonly = true;
    for script in [
        "chmod 1755 in.txt",
        "chmod 600 in.txt",
        "touch -d 2001-01-01 in.txt",
        "chown 65534 in.txt",
        "ln in.txt hard",
        "mv in.txt other",
        "echo x >> in.txt",
        "rm in.txt",
        "mkdir sub",
    ] {
        let out = v.sh(policy.clone(), script).await;
        failed_with(&out, script, READ_ONLY);
    }
    for code in [
        "import os; os.setxattr('in.txt', 'user.x', b'1')",
        "import os; os.utime('in.txt', (0, 0))",
        "import os; os.chmod('.', 0o777)",
    ] {
        let out = v.python(policy.clone(), code).await;
        failed_with(&out, code, &["Errno 30"]);
    }
    assert_eq!(stat(&file), before);
    assert_eq!(common::listing(&v.f.work), ["in.txt"]);
}

/// Class 5: outside the runtime and the roots nothing exists: stat, readlink and
/// inotify_add_watch on the host's /home, /root, /tmp and the work directory's siblings fail
/// with ENOENT, a name created later cannot be learned, and the call's /proc shows only the
/// call's processes.
#[tokio::test(flavor = "multi_thread")]
async fn nothing_outside_the_runtime_and_the_roots_is_in_the_view() {
    let Some(v) = View::new() else { return };
    let marker = v.f.root.join("host-file");
    std::fs::write(&marker, "x").unwrap();
    std::os::unix::fs::symlink("/etc/shadow", v.f.root.join("host-link")).unwrap();
    let host_tmp = tempfile::NamedTempFile::new().unwrap();
    // Where toolgate keeps its call directories (/dev/shm or /tmp) exists, as the way to the
    // call's own tmpfs; what else is there does not.
    let shm = tempfile::NamedTempFile::new_in("/dev/shm").ok();
    let mut probes = vec![
        "/root".to_string(),
        "/home".to_string(),
        "/etc/shadow".to_string(),
        "/var/log".to_string(),
        "/run".to_string(),
        host_tmp.path().display().to_string(),
        marker.display().to_string(),
        v.f.root.join("host-link").display().to_string(),
        v.f.outside.display().to_string(),
        v.f.root.join("secret.txt").display().to_string(),
    ];
    probes.extend(shm.as_ref().map(|file| file.path().display().to_string()));
    for path in &probes {
        let code = format!(
            "import os, ctypes, sys\n\
             try:\n    os.stat({path:?}); print('stat worked'); sys.exit(1)\n\
             except FileNotFoundError: pass\n\
             try:\n    os.readlink({path:?}); print('readlink worked'); sys.exit(1)\n\
             except FileNotFoundError: pass\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             fd = libc.inotify_init()\n\
             if libc.inotify_add_watch(fd, {path:?}.encode(), 0xfff) >= 0: print('watch worked'); sys.exit(1)\n\
             if ctypes.get_errno() != 2: print('errno', ctypes.get_errno()); sys.exit(1)\n"
        );
        let out = v.python(v.policy(), &code).await;
        assert!(
            out.success(),
            "{path}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    // The work directory's parent holds nothing but the way to it.
    let parent = v.f.work.parent().unwrap().display().to_string();
    let out = v
        .python(
            v.policy(),
            &format!("import os\nfor name in ['secret.txt', 'outside', 'readable/../secret.txt']:\n    print(name, os.path.lexists(os.path.join({parent:?}, name)))"),
        )
        .await;
    assert_eq!(
        text(&out.stdout),
        "secret.txt False\noutside False\nreadable/../secret.txt False\n",
        "{}",
        text(&out.stderr)
    );
    // Only the call's processes are in its /proc.
    let out = v
        .sh(
            v.policy(),
            "ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '",
        )
        .await;
    let listing = text(&out.stdout);
    let count: usize = listing.lines().next().unwrap().trim().parse().unwrap();
    assert!(count <= 4, "{listing}");
    assert!(!listing.contains("cargo"), "{listing}");
}

/// Class 5: the call's own IPC namespace: a host SysV segment and queue cannot be reached, and
/// what the call makes does not outlive it.
#[tokio::test(flavor = "multi_thread")]
async fn host_sysv_ipc_is_out_of_reach_and_the_calls_own_goes_with_it() {
    let Some(v) = View::new() else { return };
    let key: libc::key_t = 0x7467_0000 + (std::process::id() as libc::key_t & 0xffff);
    // SAFETY: shmget/msgget/semget with a fresh key; removed at the end of the test.
    let (shm, msg, sem) = unsafe {
        (
            libc::shmget(key, 4096, libc::IPC_CREAT | 0o666),
            libc::msgget(key, libc::IPC_CREAT | 0o666),
            libc::semget(key, 1, libc::IPC_CREAT | 0o666),
        )
    };
    assert!(shm >= 0 && msg >= 0 && sem >= 0);
    let code = format!(
        "import ctypes, sys\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         found = [libc.shmget({key}, 0, 0), libc.msgget({key}, 0), libc.semget({key}, 0, 0)]\n\
         print(found)\n\
         sys.exit(0 if all(x == -1 for x in found) else 1)\n"
    );
    let out = v.python(v.policy(), &code).await;
    assert!(out.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    if installed("ipcs") {
        let out = v.sh(v.policy(), "ipcs -m; ipcs -q; ipcs -s").await;
        assert!(
            !text(&out.stdout).contains(&format!("{key:#010x}")),
            "{}",
            text(&out.stdout)
        );
    }
    // Made inside, gone with the call.
    let inner = key + 1;
    let code = format!(
        "import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.shmget({inner}, 4096, 0o1666), libc.msgget({inner}, 0o1666))"
    );
    let out = v.python(v.policy(), &code).await;
    assert!(out.success(), "{}", text(&out.stderr));
    // SAFETY: lookups and removal of the test's own segments.
    unsafe {
        assert_eq!(
            libc::shmget(inner, 0, 0),
            -1,
            "the call's segment is on the host"
        );
        assert_eq!(
            libc::msgget(inner, 0),
            -1,
            "the call's queue is on the host"
        );
        libc::shmctl(shm, libc::IPC_RMID, std::ptr::null_mut());
        libc::msgctl(msg, libc::IPC_RMID, std::ptr::null_mut());
        libc::semctl(sem, 0, libc::IPC_RMID);
    }
}

/// Class 4: no terminal: `/dev/tty` cannot be opened, the call is its own session with no
/// controlling terminal, `tcsetpgrp` and terminal ioctls on its streams fail, `TIOCSTI` is
/// refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_has_no_terminal() {
    let Some(v) = View::new() else { return };
    let code = "import os, sys, fcntl, termios, ctypes\n\
         for path in ['/dev/tty', '/dev/pts/0', '/dev/ptmx', '/dev/console']:\n\
         \x20   try:\n\
         \x20       os.open(path, os.O_RDWR); print('opened', path); sys.exit(1)\n\
         \x20   except OSError as e: print(path, e.errno)\n\
         stat = open('/proc/self/stat').read().rsplit(')', 1)[1].split()\n\
         print('tty_nr', stat[4])\n\
         assert stat[4] == '0', stat\n\
         for fd in [0, 1, 2]:\n\
         \x20   try:\n\
         \x20       os.tcsetpgrp(fd, os.getpgrp()); print('tcsetpgrp worked'); sys.exit(1)\n\
         \x20   except OSError as e: print('tcsetpgrp', fd, e.errno)\n\
         \x20   try:\n\
         \x20       fcntl.ioctl(fd, termios.TIOCSTI, b'x'); print('TIOCSTI worked'); sys.exit(1)\n\
         \x20   except OSError as e: print('TIOCSTI', fd, e.errno)\n\
         \x20   try:\n\
         \x20       fcntl.ioctl(fd, termios.TIOCSCTTY, 1); print('TIOCSCTTY worked'); sys.exit(1)\n\
         \x20   except OSError as e: print('TIOCSCTTY', fd, e.errno)\n\
         print('sid', os.getsid(0), 'pgrp', os.getpgrp())\n";
    let out = v.python(v.policy(), code).await;
    let stdout = text(&out.stdout);
    assert!(out.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("/dev/tty 2"), "{stdout}");
    assert!(
        stdout.contains("TIOCSTI 0 1"),
        "seccomp refuses TIOCSTI: {stdout}"
    );
    // The session is the call's: its leader is the call's init, PID 1 of its namespace.
    assert!(stdout.contains("sid 1 pgrp 1"), "{stdout}");
}

/// Class 3, hidden paths: an empty read-only node of the same type in their place: nothing
/// to read, write or link; a hard link is `EXDEV`.
#[tokio::test(flavor = "multi_thread")]
async fn hidden_paths_cannot_be_read_written_or_linked() {
    let Some(v) = View::new() else { return };
    let w = &v.f.work;
    std::fs::write(w.join(".env"), "API_KEY=sk-secret\n").unwrap();
    std::fs::write(w.join(".env.local"), "API_KEY=sk-secret\n").unwrap();
    std::fs::create_dir(w.join("secrets")).unwrap();
    std::fs::write(w.join("secrets/token"), "sk-secret").unwrap();
    let mut policy = v.policy();
    policy.hide = vec![".env".into(), w.join(".env.local"), "secrets".into()];
    for script in [
        "cat .env",
        "cat ./.env.local",
        "cat secrets/token",
        "ls secrets",
        "cp .env copy && cat copy",
        "cat ../work/.env",
        "python3 -c 'print(open(\".env\").read())'",
        "grep -r sk- .",
        "cp --reflink=auto .env reflinked; cat reflinked",
    ] {
        let out = v.sh(policy.clone(), script).await;
        assert!(
            !text(&out.stdout).contains("sk-secret"),
            "{script}: {}",
            text(&out.stdout)
        );
    }
    for script in [
        "ln .env notes.txt",
        "ln .env.local notes2.txt",
        "echo x > .env",
        "echo x >> secrets/token",
        "touch secrets/new",
        "rm .env",
        "mv .env moved",
        "mv secrets gone",
        "chmod 777 .env",
    ] {
        let out = v.sh(policy.clone(), script).await;
        failed_with(
            &out,
            script,
            &[
                "Read-only",
                "cross-device",
                "Device or resource busy",
                "No such file",
                "Directory nonexistent",
            ],
        );
    }
    let out = v
        .python(policy.clone(), "import os; os.link('.env', 'linked')")
        .await;
    failed_with(&out, "os.link", &["Errno 18"]);
    assert_eq!(
        std::fs::read_to_string(w.join(".env")).unwrap(),
        "API_KEY=sk-secret\n"
    );
    assert!(!w.join("notes.txt").exists() && !w.join("linked").exists());
    assert_eq!(
        std::fs::read_to_string(w.join("secrets/token")).unwrap(),
        "sk-secret"
    );
}

/// Class 2/3: toolgate removes what a call made at a missing protected or hidden path without
/// following a symlink on the way. A call that put a symlink to a directory outside in place
/// of a missing (or moved-away) directory on the way would otherwise have had toolgate, on the
/// host, remove the file of that name there; it is the symlink that is removed.
#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_planted_on_the_way_to_a_guarded_path_is_removed_not_followed() {
    let Some(v) = View::new() else { return };
    let w = &v.f.work;
    let outside = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside.path()).unwrap();
    let files = [
        "app.yaml",
        "scripts/keep.sh",
        "missing.yaml",
        "c.yaml",
        ".env",
        "link.yaml",
    ];
    for file in files {
        let path = outside.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "keep me").unwrap();
    }
    std::fs::create_dir(w.join("existing")).unwrap();
    std::fs::create_dir(w.join("sub")).unwrap();
    std::fs::write(w.join("worker.yaml"), "name: main\n").unwrap();
    std::os::unix::fs::symlink("../worker.yaml", w.join("sub/link.yaml")).unwrap();
    let mut policy = v.policy();
    policy.protect = vec![
        "config/app.yaml".into(),
        "deploy/scripts".into(),
        "existing/missing.yaml".into(),
        "a/b/c.yaml".into(),
        "sub/link.yaml".into(),
    ];
    policy.hide = vec!["conf/.env".into()];
    let o = outside.display();
    for (script, link) in [
        (format!("ln -s {o} config"), "config"),
        (format!("ln -s {o} deploy"), "deploy"),
        (
            format!("mv existing existing2 && ln -s {o} existing"),
            "existing",
        ),
        (format!("mkdir a && ln -s {o} a/b"), "a/b"),
        (format!("ln -s {o} conf"), "conf"),
        (format!("ln -s {o}/ config"), "config"),
        (format!("ln -s {o}/scripts/.. deploy"), "deploy"),
    ] {
        let out = v.sh(policy.clone(), &script).await;
        assert!(out.success(), "{script}: {}", text(&out.stderr));
        for file in files {
            assert_eq!(
                std::fs::read_to_string(outside.join(file)).ok().as_deref(),
                Some("keep me"),
                "{script}: toolgate changed {file} outside"
            );
        }
        let planted = w.join(link);
        assert!(
            planted.symlink_metadata().is_err(),
            "{script}: the symlink {link} is still there"
        );
        assert!(
            out.protected
                .iter()
                .any(|message| message.contains("symlink") && message.contains(link)),
            "{script}: {:?}",
            out.protected
        );
        if w.join("existing2").exists() {
            std::fs::rename(w.join("existing2"), w.join("existing")).unwrap();
        }
        let _ = std::fs::remove_dir(w.join("a"));
    }
    // The directory of a protected symlink (which no mount can pin) moved away: the symlink
    // in its place is removed; the link itself is where the call moved it.
    let out = v
        .sh(policy.clone(), &format!("mv sub sub2 && ln -s {o} sub"))
        .await;
    assert!(out.success(), "{}", text(&out.stderr));
    assert!(w.join("sub").symlink_metadata().is_err());
    assert!(
        out.protected.iter().any(|m| m.contains("symlink")),
        "{:?}",
        out.protected
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("link.yaml")).unwrap(),
        "keep me"
    );
}

/// Class 2/3, protected paths: read-only for every process inside the writable work
/// directory, whatever the route (symlink, `..`, rename, hard link, rm -rf of a parent, renaming
/// a parent); a missing one that a call creates is removed after it.
#[tokio::test(flavor = "multi_thread")]
async fn protected_paths_cannot_be_changed_replaced_or_created() {
    let Some(v) = View::new() else { return };
    let w = &v.f.work;
    std::fs::write(w.join("worker.yaml"), "name: main\n").unwrap();
    std::fs::create_dir_all(w.join("tools/lib")).unwrap();
    std::fs::write(w.join("tools/lib/tools.ts"), "export const x = 1;\n").unwrap();
    std::fs::create_dir_all(w.join(".git")).unwrap();
    std::fs::write(w.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir(w.join("toolgate-tools")).unwrap();
    let mut policy = v.policy();
    policy.protect = vec![
        "worker.yaml".into(),
        "tools/lib/tools.ts".into(),
        ".git/config".into(),
        ".git/hooks".into(),
        "toolgate-tools".into(),
        "toolgate.permissions.yaml".into(),
    ];
    let before: Vec<Stat> = ["worker.yaml", "tools/lib/tools.ts", ".git/config"]
        .iter()
        .map(|p| stat(&w.join(p)))
        .collect();
    for script in [
        "echo 'sandbox: { mode: off }' >> worker.yaml",
        "echo x > worker.yaml",
        ": > tools/lib/tools.ts",
        "sed -i s/1/2/ tools/lib/tools.ts",
        "chmod 777 worker.yaml",
        "touch -d 2001-01-01 worker.yaml",
        "ln -s worker.yaml link.yaml && echo x > link.yaml",
        "echo x > tools/../worker.yaml",
        "echo x > ./tools/lib/../lib/tools.ts",
        "mv worker.yaml old.yaml",
        "rm worker.yaml",
        "ln worker.yaml hard.yaml",
        "mv tools tools2",
        "mv tools/lib tools/lib2",
        "rm -rf tools",
        "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config",
        "git config core.fsmonitor evil",
        "echo 'evil' > .git/hooks/pre-commit",
        "mkdir -p .git/hooks/x",
        "touch toolgate-tools/planted",
        "mv .git .git-old",
    ] {
        let out = v.sh(policy.clone(), script).await;
        assert_ne!(out.exit_code, Some(0), "{script}: it worked");
    }
    let after: Vec<Stat> = ["worker.yaml", "tools/lib/tools.ts", ".git/config"]
        .iter()
        .map(|p| stat(&w.join(p)))
        .collect();
    assert_eq!(before, after, "a protected file changed");
    assert!(
        w.join(".git/hooks").is_dir(),
        "made to be mounted read-only"
    );
    assert!(!w.join(".git/hooks/pre-commit").exists());
    assert!(!w.join("toolgate-tools/planted").exists());
    assert!(w.join("tools/lib/tools.ts").exists() && !w.join("tools2").exists());

    // Creating a protected path that does not exist yet: removed after the call, and said.
    let out = v
        .sh(
            policy.clone(),
            "echo 'default: preApproved' > toolgate.permissions.yaml",
        )
        .await;
    assert!(out.success(), "{}", text(&out.stderr));
    assert!(!w.join("toolgate.permissions.yaml").exists());
    assert_eq!(out.protected.len(), 1, "{:?}", out.protected);
    assert!(
        text(&out.stderr).contains("toolgate.permissions.yaml")
            && text(&out.stderr).contains("protected")
    );
    // Everything else in the work directory stays writable.
    let out = v
        .sh(policy, "echo ok > notes.txt && mkdir -p tools/new && echo y > tools/lib/other.ts && cat notes.txt")
        .await;
    assert_eq!(text(&out.stdout), "ok\n", "{}", text(&out.stderr));
}
