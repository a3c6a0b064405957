//! Applying a policy to the program's process, in the one-shot launcher and in the launcher
//! server alike.
//!
//! The Landlock ruleset is built before the program's process exists (by the launcher, or by
//! the server from paths it keeps open), so that process only has to: take its standard
//! streams, change to the working directory, `landlock_restrict_self`, install the seccomp
//! filter, restore the signal mask and execute the program. That little is done in a child
//! that shares its parent's memory until it executes (`CLONE_VM | CLONE_VFORK`, as
//! `posix_spawn` does), so starting it copies no page tables. On failure the child ends with
//! the launcher's exit codes (125 setup, 126 cannot execute, 127 not found) after saying why
//! on its stderr.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

use crate::plan::{Confinement, Launch, Network};
use crate::protocol::{
    EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_SETUP_FAILED, LAUNCHER_MESSAGE_PREFIX,
};
use crate::seccomp;

/// The newest Landlock ABI this code knows; older kernels get the subset they support.
const NEWEST_ABI: ABI = ABI::V10;
/// The stack of the program's process until it executes: a few system calls, or for an offered
/// init's call the request's parsing too (see `serve.rs`). Pages are touched only as used;
/// below it a page that faults on overflow.
const CHILD_STACK: usize = 256 * 1024;
const GUARD: usize = 4096;

/// Writes the launcher's own message to stderr and returns `code`.
pub(crate) fn fail(code: i32, message: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "{LAUNCHER_MESSAGE_PREFIX}{message}");
    code
}

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Read and execute.
    Read,
    /// Read, write, create, remove.
    Write,
    /// Read, write and ioctl of a device file.
    Device,
}

/// A Landlock ruleset being filled. It is made with the landlock crate (which works out what
/// this kernel handles); rules are added with the plain system call, since the rights are
/// already fitted to the kernel and to the file's type (the crate would `fstat` every path
/// again, on every call).
pub(crate) struct RulesetBuilder {
    /// `None` where the kernel has no Landlock.
    fd: Option<OwnedFd>,
    read: BitFlags<AccessFs>,
    write: BitFlags<AccessFs>,
    device: BitFlags<AccessFs>,
    file_rights: BitFlags<AccessFs>,
}

/// `struct landlock_path_beneath_attr` (packed, as in the kernel's uapi).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

impl RulesetBuilder {
    /// An empty ruleset handling every right this code knows (the kernel's subset of it); with
    /// the proxy network, TCP connections to the proxy's port are the one network right.
    pub fn new(network: Network) -> Result<Self, String> {
        let all = AccessFs::from_all(NEWEST_ABI);
        let open = network == Network::On;
        // With the network open, path-named unix sockets (a session bus, a container daemon)
        // may be reached like any other service.
        let handled = if open {
            all & !AccessFs::ResolveUnix
        } else {
            all
        };
        let mut scopes: BitFlags<Scope> = Scope::Signal.into();
        if !open {
            scopes |= Scope::AbstractUnixSocket;
        }
        let created = (|| {
            let mut ruleset = Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(handled)?
                .scope(scopes)?;
            if !open {
                ruleset = ruleset.handle_access(AccessNet::from_all(NEWEST_ABI))?;
            }
            let mut created = ruleset.create()?;
            if let Network::Proxy(port) = network {
                created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
            }
            Ok::<_, landlock::RulesetError>(created)
        })()
        .map_err(|err| format!("Landlock could not be applied: {err}"))?;
        // What this kernel handles of what was asked: exactly the rights a rule may name.
        let abi = ABI::from(landlock_abi() as i32);
        let supported = AccessFs::from_all(abi);
        Ok(Self {
            fd: created.into(),
            // Never granted: device nodes made in the work directory would reach raw disks.
            write: handled & supported & !(AccessFs::MakeBlock | AccessFs::MakeChar),
            read: AccessFs::from_read(NEWEST_ABI) & supported,
            device: (AccessFs::ReadFile
                | AccessFs::WriteFile
                | AccessFs::Truncate
                | AccessFs::IoctlDev)
                & supported,
            file_rights: AccessFs::from_file(NEWEST_ABI) & supported,
        })
    }

    /// Grants `fd` (a directory, or a file when `directory` is false).
    pub fn add(&mut self, fd: BorrowedFd<'_>, directory: bool, grant: Grant) -> Result<(), String> {
        let Some(ruleset) = &self.fd else {
            return Ok(());
        };
        let rights = match grant {
            Grant::Read => self.read,
            Grant::Write => self.write,
            Grant::Device => self.device,
        };
        let rights = if directory {
            rights
        } else {
            rights & self.file_rights
        };
        if rights.is_empty() {
            return Ok(());
        }
        let attr = PathBeneathAttr {
            allowed_access: rights.bits(),
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: landlock_add_rule reads the attribute struct we own, for a ruleset fd and a
        // path fd we hold.
        let added = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0,
            )
        };
        if added != 0 {
            return Err(format!(
                "Landlock could not be applied: adding a rule failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Opens `path` and grants it; a path that does not exist (any more) is not granted.
    pub fn add_path(&mut self, path: &OsString, grant: Grant) -> Result<(), String> {
        match open_path(path) {
            Some((fd, directory)) => self.add(fd.as_fd(), directory, grant),
            None => Ok(()),
        }
    }

    /// The ruleset, or `None` where the kernel has no Landlock: an error unless `best_effort`.
    pub fn finish(self, best_effort: bool) -> Result<Option<OwnedFd>, String> {
        let fd = self.fd;
        if fd.is_none() && !best_effort {
            return Err("Landlock is not available on this kernel; run with sandbox: 'best-effort' or sandbox: false to go without it".into());
        }
        Ok(fd)
    }
}

/// This kernel's Landlock ABI, asked once per process.
fn landlock_abi() -> u32 {
    static ABI: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *ABI.get_or_init(crate::kernel::landlock_abi)
}

/// Opens `path` for reference only (`O_PATH`, close-on-exec; symlinks followed, as Landlock
/// grants what a path leads to) and says whether it is a directory. `None` when it does not
/// exist or cannot be opened.
pub(crate) fn open_path(path: &OsString) -> Option<(OwnedFd, bool)> {
    let fd = rustix::fs::open(
        path.as_os_str(),
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let directory = is_directory(fd.as_fd());
    Some((fd, directory))
}

/// Asks the already open path, rather than looking the name up a second time.
pub(crate) fn is_directory(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: fstat on an fd we hold (O_PATH fds support it), writing into a zeroed stat.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_raw_fd(), &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFDIR
    }
}

/// The stack the program's process runs on until it executes (mapped ahead by a waiting init).
pub(crate) struct ChildStack {
    base: *mut libc::c_void,
}

impl ChildStack {
    pub fn new() -> std::io::Result<Self> {
        // SAFETY: a private anonymous mapping of our own, its lowest page made inaccessible;
        // it is unmapped on drop.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                GUARD + CHILD_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let stack = Self { base };
            if libc::mprotect(base, GUARD, libc::PROT_NONE) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping: where a downward-growing stack starts.
        unsafe { self.base.cast::<u8>().add(GUARD + CHILD_STACK).cast() }
    }

    /// Runs `child` in a new process that shares this one's memory, on this stack
    /// (`CLONE_VM | CLONE_VFORK`): this process is suspended until that one executes a program
    /// or exits, which `child` must end with (it never returns: its `c_int` is only there to
    /// take a `!`). Returns its pid. (The caller is single threaded.)
    pub fn vfork<F: FnMut() -> libc::c_int>(&self, mut child: F) -> std::io::Result<libc::pid_t> {
        // SAFETY: CLONE_VFORK: we are suspended until the child executes or exits.
        unsafe { self.clone_vm(&mut child, libc::CLONE_VFORK) }
    }

    /// As [`vfork`](Self::vfork), for a child that may wait long before it executes (an
    /// offered init's program process waits for its call): the kernel's `vfork` wait is
    /// uninterruptible, which would show this process as `D` and add one to the load average
    /// all that time. Instead this process sleeps interruptibly in a `read` of a close-on-exec
    /// pipe whose write end only the child holds: it reaches end of file when the child has
    /// executed or exited, each of which leaves this memory first. Between the `clone` and
    /// that end this process makes only system calls that touch no memory the child uses.
    pub fn vfork_asleep<F: FnMut() -> libc::c_int>(
        &self,
        mut child: F,
    ) -> std::io::Result<libc::pid_t> {
        let mut ends = [0; 2];
        // SAFETY: pipe2 writes two fds into the array we own; each is then owned once.
        let (ours, theirs) = unsafe {
            if libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1]))
        };
        // SAFETY: the child holds its copy of `theirs`, which closes when it executes or
        // exits; we wait for that below before anything here is used again.
        let pid = unsafe { self.clone_vm(&mut child, 0) };
        drop(theirs);
        let mut byte = [0u8; 1];
        loop {
            // rustix makes the system call itself: no errno, which the child's libc shares.
            match rustix::io::read(&ours, &mut byte) {
                Ok(0) => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
        }
        pid
    }

    /// `clone(CLONE_VM | extra)` of `child` on this stack.
    ///
    /// # Safety
    /// Until the child has executed or exited, the caller must not use what the child uses
    /// (it is suspended with `CLONE_VFORK`, or waits as `vfork_asleep` does).
    unsafe fn clone_vm<F: FnMut() -> libc::c_int>(
        &self,
        child: &mut F,
        extra: libc::c_int,
    ) -> std::io::Result<libc::pid_t> {
        extern "C" fn run<F: FnMut() -> libc::c_int>(child: *mut libc::c_void) -> libc::c_int {
            // SAFETY: `child` is the `&mut F` passed to clone below, alive because the parent
            // waits until this process executes or exits.
            let child = unsafe { &mut *child.cast::<F>() };
            child()
        }
        // SAFETY: CLONE_VM: the child runs on its own stack in our memory, and leaves it only
        // by execve or _exit, while the caller does not use what it touches (see above); the
        // stack grows down from its top.
        let pid = unsafe {
            libc::clone(
                run::<F>,
                self.top(),
                libc::CLONE_VM | extra | libc::SIGCHLD,
                (child as *mut F).cast(),
            )
        };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(pid)
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; no process runs on it any more (the child of
        // `vfork` has executed or exited before clone returned).
        unsafe { libc::munmap(self.base, GUARD + CHILD_STACK) };
    }
}

/// Everything the program's process needs, prepared before it exists.
pub(crate) struct Program<'a> {
    pub ruleset: Option<BorrowedFd<'a>>,
    /// Filters to install (none when the parent has them already: they are inherited).
    pub seccomp: &'a [seccomp::Program],
    pub best_effort: bool,
    pub launch: &'a Launch,
    /// The signal mask the program starts with.
    pub mask: &'a libc::sigset_t,
    /// Standard streams to install as fds 0, 1 and 2 (each above 2, so installing one never
    /// overwrites another); `None`: keep ours.
    pub stdio: Option<[BorrowedFd<'a>; 3]>,
    /// The open-file limit to give back, when ours was raised.
    pub files: Option<libc::rlimit>,
}

impl Program<'_> {
    /// Starts the program's process on `stack`; returns its pid. (The caller is single
    /// threaded.)
    pub fn spawn(&self, stack: &ChildStack) -> std::io::Result<libc::pid_t> {
        stack.vfork(|| self.exec())
    }

    /// In the program's process (started by `spawn`, or by an offered init ahead of its call:
    /// see `serve.rs`): applies the streams, limits, working directory and confinement, and
    /// executes. Never returns.
    pub fn exec(&self) -> ! {
        let code = match self.enter() {
            Ok(()) => {
                let launch = self.launch;
                // SAFETY: restoring the caller's mask; then execv/execve with NUL-terminated
                // strings and NULL-terminated arrays built from CStrings that live until the
                // call.
                unsafe {
                    libc::sigprocmask(libc::SIG_SETMASK, self.mask, std::ptr::null_mut());
                    let mut argv: Vec<*const libc::c_char> =
                        launch.argv.iter().map(|arg| arg.as_ptr()).collect();
                    argv.push(std::ptr::null());
                    match &launch.env {
                        Some(env) => {
                            let mut envp: Vec<*const libc::c_char> =
                                env.iter().map(|var| var.as_ptr()).collect();
                            envp.push(std::ptr::null());
                            libc::execve(launch.program.as_ptr(), argv.as_ptr(), envp.as_ptr());
                        }
                        None => {
                            libc::execv(launch.program.as_ptr(), argv.as_ptr());
                        }
                    }
                }
                let err = std::io::Error::last_os_error();
                let program = String::from_utf8_lossy(launch.program.as_bytes());
                if err.raw_os_error() == Some(libc::ENOENT) {
                    fail(EXIT_NOT_FOUND, &format!("'{program}' was not found: {err}"))
                } else {
                    fail(
                        EXIT_CANNOT_EXECUTE,
                        &format!("'{program}' could not be executed: {err}"),
                    )
                }
            }
            Err((code, message)) => fail(code, &message),
        };
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(code) }
    }

    fn enter(&self) -> Result<(), (i32, String)> {
        // SAFETY: dup2 of fds we hold onto 0..2 (the sources are all above 2); setrlimit and
        // chdir read the values we own.
        unsafe {
            if let Some(stdio) = &self.stdio {
                for (target, fd) in stdio.iter().enumerate() {
                    libc::dup2(fd.as_raw_fd(), target as libc::c_int);
                }
            }
            null_streams_from_the_view();
            if let Some(files) = &self.files {
                libc::setrlimit(libc::RLIMIT_NOFILE, files);
            }
            if let Some(cwd) = &self.launch.cwd {
                if libc::chdir(cwd.as_ptr()) != 0 {
                    let err = std::io::Error::last_os_error();
                    return Err((
                        EXIT_CANNOT_EXECUTE,
                        format!(
                            "the working directory '{}' cannot be used: {err}",
                            String::from_utf8_lossy(cwd.as_bytes())
                        ),
                    ));
                }
            }
        }
        self.confine()
            .map_err(|message| (EXIT_SETUP_FAILED, message))
    }

    fn confine(&self) -> Result<(), String> {
        restrict_self(self.ruleset)?;
        install_filters(self.seccomp, self.best_effort)
    }
}

/// Standard streams that are the host's `/dev/null` (opened outside the view, where its mount
/// is writable) become the view's: the program owns that node when toolgate runs as its
/// owner, and `fchmod`, `fchown` or `futimens` on the inherited descriptor would change the
/// host's `/dev/null` for everybody. Opened here, in the view's read-only mount, those fail
/// with `EROFS`. Without a view the same path is the host's node again: nothing changes.
fn null_streams_from_the_view() {
    const NULL_DEVICE: libc::dev_t = libc::makedev(1, 3);
    for target in 0..3 {
        // SAFETY: fstat into a zeroed stat we own; open of a NUL-terminated literal; dup2 and
        // close of fds we hold.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(target, &mut stat) != 0
                || stat.st_mode & libc::S_IFMT != libc::S_IFCHR
                || stat.st_rdev != NULL_DEVICE
            {
                continue;
            }
            let access = libc::fcntl(target, libc::F_GETFL) & libc::O_ACCMODE;
            let view = libc::open(c"/dev/null".as_ptr(), access | libc::O_CLOEXEC);
            if view >= 0 {
                libc::dup2(view, target);
                libc::close(view);
            }
        }
    }
}

/// Sets no_new_privs and applies the Landlock `ruleset` (when there is one) to this process.
pub(crate) fn restrict_self(ruleset: Option<BorrowedFd<'_>>) -> Result<(), String> {
    // SAFETY: prctl with integer arguments; landlock_restrict_self takes a ruleset fd we hold
    // and flags.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(format!(
                "no_new_privs could not be set: {}",
                std::io::Error::last_os_error()
            ));
        }
        if let Some(ruleset) = ruleset {
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) != 0 {
                return Err(format!(
                    "Landlock could not be applied: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    Ok(())
}

/// The filters a policy asks for (none without `--seccomp`), compiled for its network
/// setting; a failure to compile is an error unless `best_effort` (the program then runs
/// without them).
pub(crate) fn filters_of(rules: &Confinement) -> Result<Vec<seccomp::Program>, String> {
    if !rules.seccomp {
        return Ok(Vec::new());
    }
    match seccomp::compile(rules.network) {
        Ok(filters) => Ok(filters),
        Err(_) if rules.best_effort => Ok(Vec::new()),
        Err(message) => Err(format!(
            "the seccomp filter could not be compiled: {message}"
        )),
    }
}

/// Installs `filters` on this process; a failure is an error unless `best_effort`.
pub(crate) fn install_filters(
    filters: &[seccomp::Program],
    best_effort: bool,
) -> Result<(), String> {
    for program in filters {
        if let Err(err) = seccomp::install(program) {
            if !best_effort {
                return Err(format!("the seccomp filter could not be installed: {err}"));
            }
        }
    }
    Ok(())
}
