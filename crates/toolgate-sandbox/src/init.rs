//! A call's init, the part the launcher server's inits and the one-shot launcher's share:
//! entering (or building) the view, the call's `/proc` and private tmpfs, the proxy's
//! listener, limits, the Landlock ruleset, giving up capabilities, the call's private
//! directory, and which limits a call ran into.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::confine::{Grant, RulesetBuilder};
use crate::limits::{CallCgroup, CgroupFiles, CpuWatch, Limits};
use crate::plan::{Confinement, Network};
use crate::tree::Ended;
use crate::{isolate, sys, view};

/// The name of a served init's spare call directory in the call's tmpfs (toolgate's call
/// directories are named `toolgate-call-<random>`).
const SPARE_CALL_DIR: &str = ".toolgate-call-spare";

/// What an init holds for its call, set up ahead of it.
#[derive(Default)]
pub(crate) struct Prepared {
    /// The call's Landlock ruleset, when it could be built ahead (an init with a view).
    pub ruleset: Option<OwnedFd>,
    /// The call's private tmpfs, mounted at `private_dir` in the view.
    pub tmp: Option<OwnedFd>,
    pub private_dir: Option<OsString>,
    /// A call directory made ahead in the call's tmpfs (by a served init), renamed to the
    /// call's own name when the call comes: one system call on its path instead of three.
    pub spare_call_dir: Option<PathBuf>,
    /// The egress proxy's listener in the call's network namespace.
    pub listener: Option<OwnedFd>,
    pub cgroup: Option<CgroupFiles>,
    /// The call's own mount namespace (a copy of the view), handed to the server with
    /// `READY`: while the server holds it, the init's exit does not tear it down, which
    /// would keep toolgate waiting (tens of microseconds idle, a millisecond on a busy machine:
    /// the kernel waits for an RCU grace period); the server drops it after the call.
    pub mount_namespace: Option<OwnedFd>,
}

impl Prepared {
    /// The descriptors the init keeps.
    pub fn fds(&self) -> Vec<libc::c_int> {
        let mut fds: Vec<libc::c_int> = [
            &self.ruleset,
            &self.tmp,
            &self.listener,
            &self.mount_namespace,
        ]
        .into_iter()
        .flatten()
        .map(AsRawFd::as_raw_fd)
        .collect();
        if let Some(cgroup) = &self.cgroup {
            fds.extend(cgroup.fds());
        }
        fds
    }

    /// Makes the call's private directory `call_dir` (with `home/` and `tmp/`) in the call's
    /// tmpfs, which is mounted on it or on its parent. Nothing to do without a view: the server
    /// made it (see [`make_host_call_dir`]).
    pub fn make_call_dir(&self, call_dir: Option<&OsStr>) -> Result<(), String> {
        let (Some(private_dir), Some(call_dir)) = (&self.private_dir, call_dir) else {
            return Ok(());
        };
        let call_dir = Path::new(call_dir);
        let mut dirs = vec![call_dir.join("home"), call_dir.join("tmp")];
        if call_dir.parent() == Some(Path::new(private_dir)) {
            if let Some(spare) = &self.spare_call_dir {
                if std::fs::rename(spare, call_dir).is_ok() {
                    return Ok(());
                }
            }
            dirs.insert(0, call_dir.to_path_buf());
        } else if call_dir != Path::new(private_dir) {
            return Err(format!(
                "the call's directory '{}' is not in the private directory '{}'",
                call_dir.display(),
                Path::new(private_dir).display()
            ));
        }
        make_dirs(&dirs)
    }

    /// Takes the CPU time the call's cgroup counted so far as the call's start (once the init
    /// is set up).
    pub fn mark_cpu_start(&mut self) {
        if let Some(cgroup) = &mut self.cgroup {
            cgroup.mark_cpu_start();
        }
    }

    /// The watch of the call's CPU time, for a call with `cpuSeconds` whose cgroup counts it.
    pub fn cpu_watch(&self, limits: &Limits) -> Option<CpuWatch<'_>> {
        self.cgroup.as_ref()?.cpu_watch(limits)
    }

    /// Which limits the call ran into, once its program ended.
    pub fn limits_hit(&self, limits: &Limits, ended: &Ended) -> Vec<&'static str> {
        crate::limits::limits_hit(
            limits,
            ended,
            self.cgroup.as_ref(),
            self.tmp.as_ref().map(AsFd::as_fd),
        )
    }
}

use std::os::unix::fs::DirBuilderExt;

/// Makes a call's private directory `call_dir` with `home/` and `tmp/` where the call has no
/// view of its own (toolgate names it, and leaves the making to the launcher).
pub(crate) fn make_host_call_dir(call_dir: &OsStr) -> Result<(), String> {
    let call_dir = Path::new(call_dir);
    make_dirs(&[
        call_dir.to_path_buf(),
        call_dir.join("home"),
        call_dir.join("tmp"),
    ])
}

/// Makes each directory in turn, mode 0700.
fn make_dirs(dirs: &[std::path::PathBuf]) -> Result<(), String> {
    for dir in dirs {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|err| format!("making '{}': {err}", dir.display()))?;
    }
    Ok(())
}

/// The view a served init enters: made once per view by the server.
pub(crate) struct ViewHandles<'a> {
    pub mount: BorrowedFd<'a>,
    /// The network namespace calls without network share (none: the call makes its own, or
    /// stays in the host's).
    pub network: Option<BorrowedFd<'a>>,
    pub fresh_proc: bool,
    pub private_dir: Option<&'a OsStr>,
}

/// What a served init sets up.
pub(crate) struct ServedInit<'a> {
    pub rules: &'a Confinement,
    pub view: Option<ViewHandles<'a>>,
    /// The init is in a new network namespace of its own (the proxy network).
    pub own_network: bool,
    pub cgroup: Option<&'a CallCgroup>,
    /// The paths of the ruleset, open in the server (an init with a view builds its ruleset
    /// ahead of its call; one without gets it per call).
    pub grants: &'a [(BorrowedFd<'a>, bool, Grant)],
}

/// In a served init, ahead of its call: everything above, in this order (each step needs
/// the capabilities or the file system of the one before).
pub(crate) fn prepare_served(setup: &ServedInit<'_>) -> Result<Prepared, String> {
    let rules = setup.rules;
    if let Some(cgroup) = setup.cgroup {
        cgroup.enter()?;
    }
    own_cgroup_namespace();
    let mut prepared = Prepared {
        cgroup: setup.cgroup.map(CallCgroup::open).transpose()?,
        ..Prepared::default()
    };
    if setup.own_network {
        prepared.listener = own_network(rules.network)?;
    } else if let Some(network) = setup.view.as_ref().and_then(|view| view.network) {
        sys::enter(network, libc::CLONE_NEWNET)
            .map_err(|err| format!("entering the view's network namespace: {err}"))?;
    }
    let mut proc_root = None;
    if let Some(view) = &setup.view {
        let proc = view
            .fresh_proc
            .then(view::new_proc)
            .transpose()
            .map_err(|err| format!("mounting the call's /proc: {err}"))?;
        let tmp = match view.private_dir {
            Some(_) => Some(
                view::new_private_tmpfs(rules.limits.tmp_mb.unwrap_or(0))
                    .map_err(|err| format!("mounting the call's private tmpfs: {err}"))?,
            ),
            None => None,
        };
        sys::enter(view.mount, libc::CLONE_NEWNS)
            .map_err(|err| format!("entering the view: {err}"))?;
        sys::unshare(libc::CLONE_NEWNS).map_err(|err| format!("copying the view: {err}"))?;
        if let Some(proc) = &proc {
            sys::attach_at(proc.as_fd(), c"/proc")
                .map_err(|err| format!("mounting the call's /proc: {err}"))?;
        }
        view::mask_proc_files(proc.is_some())
            .map_err(|err| format!("masking host files of /proc: {err}"))?;
        if let (Some(tmp), Some(dir)) = (&tmp, view.private_dir) {
            let dir = sys::c_path(dir).map_err(|err| err.to_string())?;
            sys::attach_at(tmp.as_fd(), &dir)
                .map_err(|err| format!("mounting the call's private tmpfs: {err}"))?;
        }
        prepared.private_dir = view.private_dir.map(OsStr::to_os_string);
        if let Some(dir) = view.private_dir {
            let spare = Path::new(dir).join(SPARE_CALL_DIR);
            let made = make_dirs(&[spare.clone(), spare.join("home"), spare.join("tmp")]);
            prepared.spare_call_dir = made.is_ok().then_some(spare);
        }
        prepared.tmp = tmp;
        // Not being able to hand it over only costs time.
        prepared.mount_namespace = sys::own_namespace(c"mnt").ok();
        proc_root = proc;
    }
    let limits = if rules.without.limits {
        Limits::default()
    } else {
        rules.limits
    };
    if proc_root.is_some() {
        limits.cap_pid_namespace(setup.cgroup);
    }
    own_user_namespace(&limits)?;
    limits.apply_rlimits(setup.cgroup)?;
    if setup.view.is_some() {
        let mut builder = RulesetBuilder::new(rules.network)?;
        for (fd, directory, grant) in setup.grants {
            builder.add(*fd, *directory, *grant)?;
        }
        if let Some(proc) = &proc_root {
            builder.add(proc.as_fd(), true, Grant::Read)?;
        }
        if let Some(tmp) = &prepared.tmp {
            builder.add(tmp.as_fd(), true, Grant::Write)?;
        }
        prepared.ruleset = builder.finish(rules.best_effort)?;
    }
    isolate::drop_capabilities().map_err(|err| format!("giving up capabilities: {err}"))?;
    prepared.mark_cpu_start();
    Ok(prepared)
}

/// A cgroup namespace rooted at the call's cgroup (where it has one): `/proc/self/cgroup` shows
/// `/`, not the host's cgroup path and the launcher's pid in its name. Without one (no right
/// to make it) the call only learns those names.
pub(crate) fn own_cgroup_namespace() {
    let _ = sys::unshare(libc::CLONE_NEWCGROUP);
}

/// In a new network namespace: `lo` up, and the proxy's listener for the proxy network.
pub(crate) fn own_network(network: Network) -> Result<Option<OwnedFd>, String> {
    isolate::loopback_up().map_err(|err| format!("bringing up the loopback interface: {err}"))?;
    match network {
        Network::Proxy(port) => isolate::proxy_listener(port)
            .map(Some)
            .map_err(|err| format!("listening on 127.0.0.1:{port} for the egress proxy: {err}")),
        _ => Ok(None),
    }
}

/// A user namespace of the call's own, where `RLIMIT_NPROC` then counts the call's processes
/// only (it counts per user and user namespace). Root is exempt from that limit, so root
/// needs none.
fn own_user_namespace(limits: &Limits) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if limits.processes.is_none() || unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    if crate::tree::enter_user_namespace(0) {
        Ok(())
    } else {
        Err(format!(
            "making the call's user namespace: {}",
            std::io::Error::last_os_error()
        ))
    }
}
