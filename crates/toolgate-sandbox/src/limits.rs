//! The limits of a call: how many processes, how much memory, how large its private tmpfs,
//! CPU seconds and file size, and which of them a call ran into.
//!
//! Enforced by what the machine allows, strongest first:
//!
//! - a **cgroup** per call, made by the launcher server, where it may make one: cgroup v1
//!   `pids` and `memory` hierarchies it can write to (root, most containers), or cgroup v2 where
//!   toolgate's own cgroup is delegated to it and holds nothing but toolgate (a systemd unit
//!   or scope with `Delegate=yes`): toolgate and the server then move into a leaf `toolgate`
//!   and each call gets a sibling with `pids.max` and `memory.max`. The whole call counts
//!   together; the counters say which limit was hit. The call's CPU time is its cgroup's
//!   (`cpuacct.usage` in a writable v1 `cpuacct` hierarchy, `cpu.stat`'s `usage_usec` on v2),
//!   which the call's init watches while it waits (see [`CpuWatch`]): past `cpuSeconds` it
//!   kills the whole call.
//! - else **rlimits**, per process: `RLIMIT_NPROC` (counted per user namespace, and each
//!   call has its own, so per call; root is exempt from it), the PID namespace's own `pid_max`
//!   (Linux 6.14, counts the call's processes, whoever runs it, from 301 up), `RLIMIT_DATA` for
//!   memory;
//! - always: `RLIMIT_FSIZE`, `RLIMIT_CPU` (per process: the limit where no cgroup counts the
//!   call's CPU time, and a cheap first stop for a single busy process where one does) and the
//!   size of the private tmpfs.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::Resource;
use crate::tree::Ended;

/// The names of the limits, as configured (`sandbox.limits`) and reported.
pub(crate) const PROCESSES: &str = "processes";
pub(crate) const MEMORY_MB: &str = "memoryMb";
pub(crate) const TMP_MB: &str = "tmpMb";
pub(crate) const CPU_SECONDS: &str = "cpuSeconds";
pub(crate) const FILE_SIZE_MB: &str = "fileSizeMb";

/// The lowest `pid_max` the kernel accepts (`RESERVED_PIDS + 1`).
const PID_MAX_MIN: u64 = 301;
const MIB: u64 = 1024 * 1024;
/// The most memory a used cgroup may still have charged to serve another call (the page cache
/// and kernel objects its call left, mostly reclaimable; a `/bin/true` leaves about 400 KiB),
/// and at most this share of its memory limit: it counts against the next call's `memoryMb`.
/// (Reclaiming it first, `memory.force_empty`, costs more than making a new cgroup.)
const REUSE_MAX_CHARGED: u64 = 2 * MIB;
const REUSE_MAX_CHARGED_SHARE: u64 = 64;
/// How often a call's init reads its cgroup's CPU time at most and at least: every
/// `remaining / CPUs` within these bounds, so that the call cannot pass its limit between two
/// checks by more than what its CPUs do in the shortest one.
const CPU_CHECK_LONGEST: Duration = Duration::from_millis(250);
const CPU_CHECK_SHORTEST: Duration = Duration::from_millis(10);

/// A call's limits (`None`: not limited).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Limits {
    pub processes: Option<u64>,
    pub memory_mb: Option<u64>,
    pub tmp_mb: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub file_size_mb: Option<u64>,
}

impl Limits {
    /// Sets `NAME=VALUE` (a word of `--limit`).
    pub fn set(&mut self, word: &OsString) -> Result<(), String> {
        let text = word
            .to_str()
            .ok_or_else(|| format!("--limit {word:?} is not NAME=VALUE"))?;
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("--limit {text:?} is not NAME=VALUE"))?;
        let value: u64 = value
            .parse()
            .ok()
            .filter(|&value| value > 0)
            .ok_or_else(|| format!("--limit {text:?}: the value is not a positive number"))?;
        let slot = match name {
            PROCESSES => &mut self.processes,
            MEMORY_MB => &mut self.memory_mb,
            TMP_MB => &mut self.tmp_mb,
            CPU_SECONDS => &mut self.cpu_seconds,
            FILE_SIZE_MB => &mut self.file_size_mb,
            other => return Err(format!("--limit: unknown limit '{other}'")),
        };
        *slot = Some(value);
        Ok(())
    }

    /// Sets the per-process limits on this process (inherited by the program): those of
    /// `RLIMIT_FSIZE`, `RLIMIT_CPU`, and where no cgroup counts them, `RLIMIT_NPROC` and
    /// `RLIMIT_DATA`.
    pub fn apply_rlimits(&self, cgroup: Option<&CallCgroup>) -> Result<(), String> {
        let counted = |what: Counted| cgroup.is_some_and(|cgroup| cgroup.counts(what));
        if let Some(processes) = self.processes.filter(|_| !counted(Counted::Processes)) {
            set_rlimit(libc::RLIMIT_NPROC, processes, processes)?;
        }
        if let Some(memory) = self.memory_mb.filter(|_| !counted(Counted::Memory)) {
            let bytes = memory.saturating_mul(MIB);
            set_rlimit(libc::RLIMIT_DATA, bytes, bytes)?;
        }
        if let Some(size) = self.file_size_mb {
            let bytes = size.saturating_mul(MIB);
            set_rlimit(libc::RLIMIT_FSIZE, bytes, bytes)?;
        }
        if let Some(seconds) = self.cpu_seconds {
            // SIGXCPU at the limit, SIGKILL two seconds later for a program that ignores it.
            // Where the cgroup counts the call's CPU time, the init ends the whole call at the
            // limit (named): each process's own limit is then a backstop past it, so that no
            // process dies of it first where only its parent would see (the kernel samples a
            // process's time by ticks, which may run ahead of the cgroup's exact count).
            let soft = if cgroup.is_some_and(|cgroup| cgroup.cpu.is_some()) {
                seconds.saturating_add(1 + seconds / 8)
            } else {
                seconds
            };
            set_rlimit(libc::RLIMIT_CPU, soft, soft.saturating_add(2))?;
        }
        Ok(())
    }

    /// Caps the call's PID namespace (whose `/proc` is mounted at `/proc`) where no cgroup
    /// counts processes: Linux 6.14 gives each PID namespace its own `pid_max`. Returns
    /// whether it did.
    pub fn cap_pid_namespace(&self, cgroup: Option<&CallCgroup>) -> bool {
        let Some(processes) = self.processes else {
            return false;
        };
        if cgroup.is_some_and(|cgroup| cgroup.counts(Counted::Processes)) {
            return false;
        }
        let value = processes.saturating_add(1).max(PID_MAX_MIN);
        std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/sys/kernel/pid_max")
            .and_then(|mut file| file.write_all(value.to_string().as_bytes()))
            .is_ok()
    }
}

fn set_rlimit(resource: Resource, soft: u64, hard: u64) -> Result<(), String> {
    let limit = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(format!(
            "setting a resource limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// What a cgroup counts for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    Processes,
    Memory,
}

/// Where the server makes the calls' cgroups.
#[derive(Debug)]
pub(crate) enum Cgroups {
    /// cgroup v1: the server's directories in the `pids` and `memory` hierarchies, and in the
    /// `cpuacct` one where it can be written (the call's CPU time; else `RLIMIT_CPU` alone).
    V1 {
        pids: PathBuf,
        memory: PathBuf,
        cpu: Option<PathBuf>,
    },
    /// cgroup v2: the delegated cgroup whose children get `pids` and `memory`; `server` is the
    /// server's pid, which its calls' cgroups are named after.
    V2 {
        parent: PathBuf,
        server: libc::pid_t,
    },
    /// None can be made; why.
    Unavailable(String),
}

impl Cgroups {
    /// Finds where this server (pid `server`, child of toolgate `toolgate`) may make cgroups,
    /// and prepares it.
    pub fn prepare(server: libc::pid_t, toolgate: libc::pid_t) -> Cgroups {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        if let (Some(pids), Some(memory)) = (
            v1_dir(&mounts, &own, "pids"),
            v1_dir(&mounts, &own, "memory"),
        ) {
            sweep(&pids, server);
            sweep(&memory, server);
            let name = format!("{SERVER_PREFIX}{server}");
            let cpu = v1_dir(&mounts, &own, "cpuacct").and_then(|cpu| {
                if cpu == pids || cpu == memory {
                    // Mounted together with one of them: the same directory.
                    return Some(cpu.join(&name));
                }
                sweep(&cpu, server);
                let cpu = cpu.join(&name);
                std::fs::create_dir(&cpu).is_ok().then_some(cpu)
            });
            let (pids, memory) = (pids.join(&name), memory.join(&name));
            return match (std::fs::create_dir(&pids), std::fs::create_dir(&memory)) {
                (Ok(()), Ok(())) => Cgroups::V1 { pids, memory, cpu },
                (a, b) => {
                    let _ = std::fs::remove_dir(&pids);
                    let _ = std::fs::remove_dir(&memory);
                    if let Some(cpu) = &cpu {
                        let _ = std::fs::remove_dir(cpu);
                    }
                    let err = a
                        .err()
                        .or(b.err())
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    Cgroups::Unavailable(format!(
                        "the cgroup v1 pids and memory hierarchies cannot be written ({err})"
                    ))
                }
            };
        }
        match v2_dir(&mounts, &own) {
            Some(dir) => match delegate_v2(&dir, server, toolgate) {
                Ok(()) => {
                    sweep(&dir, server);
                    Cgroups::V2 {
                        parent: dir,
                        server,
                    }
                }
                Err(why) => Cgroups::Unavailable(why),
            },
            None => Cgroups::Unavailable(
                "no cgroup v1 pids and memory hierarchies nor cgroup v2 are mounted".into(),
            ),
        }
    }

    /// A cgroup for call number `number` with `limits`, ready for its init; `None` when no
    /// cgroup can be made (or none is needed).
    pub fn for_call(&self, number: u64, limits: &Limits) -> Result<Option<CallCgroup>, String> {
        let counted = limits.processes.is_some() || limits.memory_mb.is_some();
        if !counted && (limits.cpu_seconds.is_none() || !self.counts_cpu()) {
            return Ok(None);
        }
        let name = format!("call-{number}");
        let cgroup = match self {
            Cgroups::Unavailable(_) => return Ok(None),
            Cgroups::V1 { pids, memory, cpu } => {
                let cpu = cpu.as_ref().filter(|_| limits.cpu_seconds.is_some());
                let cgroup = CallCgroup {
                    version: 1,
                    pids: counted.then(|| pids.join(&name)),
                    memory: counted.then(|| memory.join(&name)),
                    cpu: cpu.map(|cpu| cpu.join(&name)),
                    limits: *limits,
                };
                for (made, dir) in cgroup.dirs().into_iter().enumerate() {
                    if let Err(err) = std::fs::create_dir(dir) {
                        for dir in cgroup.dirs().into_iter().take(made) {
                            let _ = std::fs::remove_dir(dir);
                        }
                        return Err(format!("making the cgroup '{}': {err}", dir.display()));
                    }
                }
                cgroup
            }
            Cgroups::V2 { parent, server } => {
                let dir = parent.join(format!("{SERVER_PREFIX}{server}-{name}"));
                std::fs::create_dir(&dir)
                    .map_err(|err| format!("making the cgroup '{}': {err}", dir.display()))?;
                CallCgroup {
                    version: 2,
                    pids: Some(dir.clone()),
                    memory: Some(dir.clone()),
                    // `cpu.stat` is in every cgroup v2, the cpu controller enabled or not.
                    cpu: limits.cpu_seconds.map(|_| dir),
                    limits: *limits,
                }
            }
        };
        if let Err(err) = cgroup.configure(limits) {
            cgroup.remove();
            return Err(err);
        }
        Ok(Some(cgroup))
    }

    /// What [`Cgroups::prepare`] would find, without changing anything (v1: a directory made
    /// and removed; v2: its conditions looked at), in words.
    pub fn probe(own: libc::pid_t, toolgate: libc::pid_t) -> String {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        if let (Some(pids), Some(memory)) = (
            v1_dir(&mounts, &cgroups, "pids"),
            v1_dir(&mounts, &cgroups, "memory"),
        ) {
            let name = format!("{SERVER_PREFIX}probe-{own}");
            let writable = |dir: &PathBuf| {
                let made = std::fs::create_dir(dir.join(&name)).is_ok();
                let _ = std::fs::remove_dir(dir.join(&name));
                made
            };
            if writable(&pids) && writable(&memory) {
                let cpu = v1_dir(&mounts, &cgroups, "cpuacct")
                    .filter(|cpu| *cpu == pids || *cpu == memory || writable(cpu));
                return Cgroups::V1 { pids, memory, cpu }.describe();
            }
        }
        let Some(dir) = v2_dir(&mounts, &cgroups) else {
            return Cgroups::Unavailable(
                "no cgroup v1 pids and memory hierarchies nor cgroup v2 are mounted".into(),
            )
            .describe();
        };
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        let has = |text: &str, name: &str| text.split_whitespace().any(|word| word == name);
        let available = read("cgroup.controllers");
        let enabled = read("cgroup.subtree_control");
        let members = read("cgroup.procs");
        let alone = members
            .split_whitespace()
            .filter_map(|pid| pid.parse::<libc::pid_t>().ok())
            .all(|pid| pid == own || pid == toolgate);
        let writable = std::fs::metadata(dir.join("cgroup.subtree_control"))
            .is_ok_and(|meta| !meta.permissions().readonly());
        if has(&available, "pids")
            && has(&available, "memory")
            && writable
            && ((has(&enabled, "pids") && has(&enabled, "memory")) || alone)
        {
            return Cgroups::V2 {
                parent: dir,
                server: own,
            }
            .describe();
        }
        let why = if !has(&available, "pids") || !has(&available, "memory") {
            format!(
                "toolgate's cgroup v2 '{}' is not given the pids and memory controllers",
                dir.display()
            )
        } else {
            format!("toolgate's cgroup v2 '{}' holds other processes too or is not writable (run toolgate in a cgroup of its own delegated to it, e.g. systemd-run --user --scope -p Delegate=yes)", dir.display())
        };
        Cgroups::Unavailable(why).describe()
    }

    /// How limits are enforced here, for `toolgate check --sandbox`: `cgroup v1 (pids,
    /// memory, cpuacct)`, `cgroup v2 (pids, memory, cpu)` or `rlimits (why no cgroup)`, and
    /// whether `cpuSeconds` bounds the whole call or each process.
    pub fn describe(&self) -> String {
        const PER_CALL: &str = "cpuSeconds per call";
        const PER_PROCESS: &str = "cpuSeconds per process (RLIMIT_CPU)";
        match self {
            Cgroups::V1 { cpu: Some(_), .. } => {
                format!("cgroup v1 (pids, memory, cpuacct); {PER_CALL}")
            }
            Cgroups::V1 { cpu: None, .. } => format!(
                "cgroup v1 (pids, memory); {PER_PROCESS}: no writable cgroup v1 cpuacct hierarchy"
            ),
            Cgroups::V2 { .. } if self.counts_cpu() => {
                format!("cgroup v2 (pids, memory, cpu.stat); {PER_CALL}")
            }
            Cgroups::V2 { .. } => {
                format!("cgroup v2 (pids, memory); {PER_PROCESS}: no cpu.stat")
            }
            Cgroups::Unavailable(why) => format!("rlimits ({why}); {PER_PROCESS}"),
        }
    }

    /// Whether the calls' cgroups count their CPU time (`cpuSeconds` per call).
    fn counts_cpu(&self) -> bool {
        match self {
            Cgroups::V1 { cpu, .. } => cpu.is_some(),
            Cgroups::V2 { parent, .. } => parent.join("cpu.stat").exists(),
            Cgroups::Unavailable(_) => false,
        }
    }

    /// Removes the server's own directories (cgroup v1; they are empty once every call is).
    pub fn remove(&self) {
        if let Cgroups::V1 { pids, memory, cpu } = self {
            let _ = std::fs::remove_dir(pids);
            let _ = std::fs::remove_dir(memory);
            if let Some(cpu) = cpu {
                let _ = std::fs::remove_dir(cpu);
            }
        }
    }
}

/// How every cgroup a server makes beside others starts: `toolgate-sandbox-{pid}` (v1, its
/// calls' `call-{n}` inside), `toolgate-sandbox-{pid}-call-{n}` (v2, its calls beside
/// toolgate's leaf) and `toolgate-sandbox-probe-{pid}` (v1, `toolgate check --sandbox`).
const SERVER_PREFIX: &str = "toolgate-sandbox-";

/// Removes from `parent` the cgroups of servers that are gone. A server that is killed
/// (`SIGKILL`, the OOM killer) removes nothing: without this every such server left its
/// directories behind for good, and on cgroup v2 the next server of the same toolgate, whose
/// calls are numbered from one again, would have found its first call's name taken. A pid in
/// a name that is not running, or is this server's own (used again), is gone. `rmdir` removes
/// only a cgroup without processes and children, so a call still ending is left alone (the
/// next server's sweep takes it).
pub(crate) fn sweep(parent: &Path, own: libc::pid_t) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(server_of) else {
            continue;
        };
        if pid != own && Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let dir = entry.path();
        // v1: the calls' cgroups inside go first.
        if let Ok(calls) = std::fs::read_dir(&dir) {
            for call in calls.flatten() {
                if call
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("call-"))
                {
                    let _ = std::fs::remove_dir(call.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&dir);
    }
}

/// The server pid a cgroup's name `name` was made for (see [`SERVER_PREFIX`]); `None` for any
/// other name.
fn server_of(name: &str) -> Option<libc::pid_t> {
    let rest = name.strip_prefix(SERVER_PREFIX)?;
    let rest = rest.strip_prefix("probe-").unwrap_or(rest);
    let (pid, call) = rest.split_once('-').unwrap_or((rest, ""));
    let numeric = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let call_ok = call.is_empty() || call.strip_prefix("call-").is_some_and(numeric);
    (numeric(pid) && call_ok)
        .then(|| pid.parse().ok())
        .flatten()
}

/// The directory of this process's cgroup in the v1 hierarchy of `controller`.
fn v1_dir(mounts: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let mount = mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut right = right.split_whitespace();
        if right.next()? != "cgroup" {
            return None;
        }
        let options = right.nth(1)?;
        options
            .split(',')
            .any(|option| option == controller)
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|name| name == controller)
            .then(|| path.to_string())
    })?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// The directory of this process's cgroup v2.
fn v2_dir(mounts: &str, own: &str) -> Option<PathBuf> {
    let mount = mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let path = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?
        .to_string();
    Some(mount.join(path.trim_start_matches('/')))
}

/// Makes cgroup v2 `dir` able to give `pids` and `memory` to children: possible only when it
/// holds no process but toolgate and this server (a cgroup with processes cannot), which
/// then move into a leaf `toolgate` below it.
fn delegate_v2(dir: &Path, server: libc::pid_t, toolgate: libc::pid_t) -> Result<(), String> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let available = read("cgroup.controllers");
    let has = |text: &str, name: &str| text.split_whitespace().any(|word| word == name);
    if !has(&available, "pids") || !has(&available, "memory") {
        return Err(format!(
            "toolgate's cgroup v2 '{}' is not given the pids and memory controllers",
            dir.display()
        ));
    }
    let enabled = read("cgroup.subtree_control");
    if has(&enabled, "pids") && has(&enabled, "memory") {
        return Ok(());
    }
    let members: Vec<libc::pid_t> = read("cgroup.procs")
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect();
    if members.iter().any(|pid| *pid != server && *pid != toolgate) {
        return Err(format!(
            "toolgate's cgroup v2 '{}' holds other processes too (a cgroup with processes cannot give controllers to children; run toolgate in a cgroup of its own delegated to it, e.g. systemd-run --user --scope -p Delegate=yes)",
            dir.display()
        ));
    }
    let leaf = dir.join("toolgate");
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|err| format!("writing '{}': {err}", path.display()))
    };
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(format!("making the cgroup '{}': {err}", leaf.display())),
    }
    for pid in members {
        write(leaf.join("cgroup.procs"), &pid.to_string())?;
    }
    write(dir.join("cgroup.subtree_control"), "+pids +memory")
}

/// One call's cgroup (its directory in each hierarchy).
#[derive(Debug)]
pub(crate) struct CallCgroup {
    version: u8,
    pids: Option<PathBuf>,
    memory: Option<PathBuf>,
    /// Where its CPU time is read (made for calls with `cpuSeconds` only).
    cpu: Option<PathBuf>,
    /// The limits written into it.
    limits: Limits,
}

impl CallCgroup {
    /// Whether it was made for calls with `limits` (the ones a cgroup enforces, and whether
    /// it counts CPU time: the value of `cpuSeconds` is the init's to watch, against the CPU
    /// time it finds when the call starts).
    pub fn serves(&self, limits: &Limits) -> bool {
        (
            self.limits.processes,
            self.limits.memory_mb,
            self.limits.cpu_seconds.is_some(),
        ) == (
            limits.processes,
            limits.memory_mb,
            limits.cpu_seconds.is_some(),
        )
    }

    /// Its directories, each once (on cgroup v2, and for v1 hierarchies mounted together,
    /// they are one).
    fn dirs(&self) -> Vec<&PathBuf> {
        let mut dirs: Vec<&PathBuf> = Vec::with_capacity(3);
        for dir in self.pids.iter().chain(&self.memory).chain(&self.cpu) {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        dirs
    }

    /// Once the processes of its call are gone: whether it can serve another call as if it
    /// were new (making and removing one costs more CPU than a short call's program): no
    /// process is left in it, none of its counters moved (no limit was hit: the counters only
    /// grow, and a call's init reads them as its own), and little memory stays charged (see
    /// [`REUSE_MAX_CHARGED`]).
    pub fn emptied(&self) -> bool {
        let read = |dir: &Path, name: &str| std::fs::read_to_string(dir.join(name)).ok();
        if self
            .dirs()
            .iter()
            .any(|dir| read(dir, "cgroup.procs").is_none_or(|procs| !procs.trim().is_empty()))
        {
            return false;
        }
        if let Some(dir) = &self.memory {
            let usage = if self.version == 1 {
                "memory.usage_in_bytes"
            } else {
                "memory.current"
            };
            let most = self.limits.memory_mb.map_or(REUSE_MAX_CHARGED, |mb| {
                (mb.saturating_mul(MIB) / REUSE_MAX_CHARGED_SHARE).min(REUSE_MAX_CHARGED)
            });
            let charged = read(dir, usage).and_then(|text| text.trim().parse::<u64>().ok());
            if charged.is_none_or(|bytes| bytes > most) {
                return false;
            }
        }
        self.open().is_ok_and(|files| files.hit().is_empty())
    }

    fn counts(&self, what: Counted) -> bool {
        match what {
            Counted::Processes => self.pids.is_some(),
            Counted::Memory => self.memory.is_some(),
        }
    }

    fn configure(&self, limits: &Limits) -> Result<(), String> {
        let write = |dir: &Path, name: &str, value: String| {
            let path = dir.join(name);
            std::fs::write(&path, value)
                .map_err(|err| format!("writing '{}': {err}", path.display()))
        };
        if let (Some(dir), Some(processes)) = (&self.pids, limits.processes) {
            write(dir, "pids.max", processes.to_string())?;
        }
        if let (Some(dir), Some(memory)) = (&self.memory, limits.memory_mb) {
            let bytes = memory.saturating_mul(MIB).to_string();
            if self.version == 1 {
                write(dir, "memory.limit_in_bytes", bytes.clone())?;
                // With swap accounting, swap counts too (the limit is memory and swap together).
                if dir.join("memory.memsw.limit_in_bytes").exists() {
                    write(dir, "memory.memsw.limit_in_bytes", bytes)?;
                }
            } else {
                write(dir, "memory.max", bytes)?;
                if dir.join("memory.swap.max").exists() {
                    write(dir, "memory.swap.max", "0".into())?;
                }
            }
        }
        Ok(())
    }

    /// Moves the calling process (an init that has not started anything yet) into the
    /// cgroup. The init does it itself, not the server: a move waits for an RCU grace period
    /// in the kernel (milliseconds on cgroup v1), which would hold up the server's next request.
    pub fn enter(&self) -> Result<(), String> {
        for dir in self.dirs() {
            let path = dir.join("cgroup.procs");
            // `0`: the writing process.
            std::fs::write(&path, "0")
                .map_err(|err| format!("moving the call into '{}': {err}", path.display()))?;
        }
        Ok(())
    }

    /// The counters' files, opened for the init to read after it left this view of the file
    /// system.
    pub fn open(&self) -> Result<CgroupFiles, String> {
        // The counters' files, opened ahead: reading them is then all a call's report costs.
        let open = |dir: &Option<PathBuf>, file: &str| -> Result<Option<OwnedFd>, String> {
            dir.as_ref()
                .map(|dir| {
                    let path = dir.join(file);
                    rustix::fs::open(
                        &path,
                        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                        rustix::fs::Mode::empty(),
                    )
                    .map_err(|err| format!("opening '{}': {err}", path.display()))
                })
                .transpose()
        };
        let (memory_file, memory_keys) = if self.version == 1 {
            ("memory.oom_control", ["oom_kill", "under_oom"])
        } else {
            ("memory.events", ["oom_kill", "oom"])
        };
        let cpu_file = if self.version == 1 {
            "cpuacct.usage"
        } else {
            "cpu.stat"
        };
        // Only for a call with `cpuSeconds`: no other call reads it.
        // Not readable (an old kernel's cgroup v2 without `cpu.stat`): `RLIMIT_CPU` alone.
        let cpu = match self.limits.cpu_seconds {
            Some(_) => open(&self.cpu, cpu_file).ok().flatten(),
            None => None,
        };
        Ok(CgroupFiles {
            pids_events: open(&self.pids, "pids.events")?,
            memory_events: open(&self.memory, memory_file)?,
            memory_keys,
            cpu: cpu.map(|file| CpuUsage {
                file,
                version: self.version,
                start: 0,
            }),
        })
    }

    /// Removes the cgroup (once its processes are gone).
    pub fn remove(&self) {
        for dir in self.dirs() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// A call's CPU time as its cgroup counts it, every process of the call together, those that
/// ended included: `cpuacct.usage` (nanoseconds, cgroup v1) or `cpu.stat`'s `usage_usec`
/// (cgroup v2).
pub(crate) struct CpuUsage {
    file: OwnedFd,
    version: u8,
    /// The count when the call started (a cgroup that serves another call counts on).
    start: u64,
}

impl CpuUsage {
    /// The count now, in nanoseconds.
    fn read(&self) -> Option<u64> {
        let mut bytes = [0u8; 1024];
        let n = rustix::io::pread(self.file.as_fd(), &mut bytes, 0).ok()?;
        let text = std::str::from_utf8(&bytes[..n]).ok()?;
        parse_cpu_usage(self.version, text)
    }
}

/// The CPU time in `text`, the content of `cpuacct.usage` (cgroup v1) or `cpu.stat` (v2), in
/// nanoseconds.
fn parse_cpu_usage(version: u8, text: &str) -> Option<u64> {
    if version == 1 {
        return text.trim().parse().ok();
    }
    text.lines().find_map(|line| {
        let value = line.strip_prefix("usage_usec ")?;
        value
            .trim()
            .parse::<u64>()
            .ok()
            .map(|us| us.saturating_mul(1000))
    })
}

/// Watches a call's CPU time (its cgroup's) against its `cpuSeconds`, for its init to check
/// while it waits for the call's processes.
pub(crate) struct CpuWatch<'a> {
    usage: &'a CpuUsage,
    limit: Duration,
    /// The CPUs the call may run on: how fast its CPU time can grow.
    cpus: u32,
}

impl crate::tree::Watch for CpuWatch<'_> {
    /// Reads the call's CPU time: `None` once it reached the limit, else how long to wait
    /// before the next check.
    fn check(&mut self) -> Option<Duration> {
        let Some(now) = self.usage.read() else {
            return Some(CPU_CHECK_LONGEST); // not readable: RLIMIT_CPU still stops each process
        };
        let used = Duration::from_nanos(now.saturating_sub(self.usage.start));
        next_cpu_check(used, self.limit, self.cpus)
    }
}

/// When to check again a call that used `used` of `limit`, on `cpus` CPUs (`None`: it is over).
fn next_cpu_check(used: Duration, limit: Duration, cpus: u32) -> Option<Duration> {
    let remaining = limit.checked_sub(used).filter(|left| !left.is_zero())?;
    Some((remaining / cpus.max(1)).clamp(CPU_CHECK_SHORTEST, CPU_CHECK_LONGEST))
}

/// How many CPUs this process (and the call it starts) may run on.
fn usable_cpus() -> u32 {
    // SAFETY: an all-zero cpu_set_t is an empty set; sched_getaffinity writes into the one we
    // own, at most its size.
    let count = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return 1;
        }
        libc::CPU_COUNT(&set)
    };
    u32::try_from(count).unwrap_or(1).max(1)
}

/// A call's cgroup counters (the files its limits are reported from), open.
pub(crate) struct CgroupFiles {
    pids_events: Option<OwnedFd>,
    memory_events: Option<OwnedFd>,
    /// The keys of `memory_events` that count an out-of-memory kill (they differ between
    /// cgroup v1 and v2).
    memory_keys: [&'static str; 2],
    /// The call's CPU time (a call with `cpuSeconds` only).
    cpu: Option<CpuUsage>,
}

impl CgroupFiles {
    /// The descriptors to keep open in the init.
    pub fn fds(&self) -> Vec<libc::c_int> {
        self.pids_events
            .iter()
            .chain(&self.memory_events)
            .chain(self.cpu.as_ref().map(|cpu| &cpu.file))
            .map(AsRawFd::as_raw_fd)
            .collect()
    }

    /// Takes the CPU time the cgroup counted so far as the call's start: what an init used
    /// setting itself up, and calls the cgroup served before, are not the call's.
    pub fn mark_cpu_start(&mut self) {
        if let Some(cpu) = &mut self.cpu {
            cpu.start = cpu.read().unwrap_or(0);
        }
    }

    /// A watch of the call's CPU time against `limits.cpu_seconds`, where the cgroup counts it
    /// (else `None`: `RLIMIT_CPU` alone, per process).
    pub fn cpu_watch(&self, limits: &Limits) -> Option<CpuWatch<'_>> {
        let seconds = limits.cpu_seconds?;
        Some(CpuWatch {
            usage: self.cpu.as_ref()?,
            limit: Duration::from_secs(seconds),
            cpus: usable_cpus(),
        })
    }

    /// The CPU time the call used so far, where its cgroup counts it.
    fn cpu_used(&self) -> Option<Duration> {
        let cpu = self.cpu.as_ref()?;
        Some(Duration::from_nanos(cpu.read()?.saturating_sub(cpu.start)))
    }

    /// Which limits the counters say were hit.
    fn hit(&self) -> Vec<&'static str> {
        let mut hit = Vec::new();
        if let Some(file) = &self.pids_events {
            if counters(file.as_fd(), &["max"])[0] > 0 {
                hit.push(PROCESSES);
            }
        }
        if let Some(file) = &self.memory_events {
            let killed: u64 = counters(file.as_fd(), &self.memory_keys).iter().sum();
            if killed > 0 {
                hit.push(MEMORY_MB);
            }
        }
        hit
    }
}

/// The values of `keys` in a flat-keyed cgroup file (`key value` lines), read once from its
/// start; 0 for each one absent.
fn counters<const N: usize>(file: BorrowedFd<'_>, keys: &[&str; N]) -> [u64; N] {
    let mut bytes = vec![0u8; 4096];
    let text = rustix::io::pread(file, &mut bytes, 0)
        .ok()
        .and_then(|n| {
            bytes.truncate(n);
            String::from_utf8(bytes).ok()
        })
        .unwrap_or_default();
    keys.map(|key| {
        text.lines()
            .find_map(|line| {
                let (name, value) = line.split_once(' ')?;
                (name == key).then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0)
    })
}

/// Which limits a call ran into, once its program ended with `status` having used `cpu`
/// seconds: the cgroup's counters, a full private tmpfs (`tmp`), the call's init's kill when
/// the call's CPU time passed its limit, and the signals of `RLIMIT_CPU` and `RLIMIT_FSIZE`
/// (or a kill past the CPU limit).
pub(crate) fn limits_hit(
    limits: &Limits,
    ended: &Ended,
    cgroup: Option<&CgroupFiles>,
    tmp: Option<BorrowedFd<'_>>,
) -> Vec<&'static str> {
    let mut hit = cgroup.map(CgroupFiles::hit).unwrap_or_default();
    let (status, cpu) = (ended.status, ended.cpu);
    let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
    // The program, or an orphan its init reaped (a process whose parent reaped it is not
    // seen: the kernel tells only the parent; see docs/sandbox.md).
    // Also a process its parent reaped, ended by its own `RLIMIT_CPU` (`SIGXCPU` at the same
    // number of seconds): its time is in the call's, which then reached the limit too.
    let call_cpu = cgroup.and_then(CgroupFiles::cpu_used);
    if limits.cpu_seconds.is_some_and(|seconds| {
        ended.over_cpu
            || signal == Some(libc::SIGXCPU)
            || (signal == Some(libc::SIGKILL) && cpu.as_secs() >= seconds)
            || ended.orphans.cpu
            || ended.orphans.killed_cpu.as_secs() >= seconds
            || call_cpu.is_some_and(|used| used >= Duration::from_secs(seconds))
    }) {
        hit.push(CPU_SECONDS);
    }
    if limits.file_size_mb.is_some() && (signal == Some(libc::SIGXFSZ) || ended.orphans.file_size) {
        hit.push(FILE_SIZE_MB);
    }
    if limits.tmp_mb.is_some() && tmp.and_then(crate::sys::free_blocks) == Some(0) {
        hit.push(TMP_MB);
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_words_are_checked() {
        let mut limits = Limits::default();
        for word in [
            "processes=64",
            "memoryMb=256",
            "tmpMb=16",
            "cpuSeconds=5",
            "fileSizeMb=1",
        ] {
            limits.set(&OsString::from(word)).unwrap();
        }
        assert_eq!(
            limits,
            Limits {
                processes: Some(64),
                memory_mb: Some(256),
                tmp_mb: Some(16),
                cpu_seconds: Some(5),
                file_size_mb: Some(1),
            }
        );
        for (word, needle) in [
            ("processes", "NAME=VALUE"),
            ("processes=0", "positive"),
            ("processes=-1", "positive"),
            ("swap=1", "unknown limit 'swap'"),
        ] {
            let err = limits.set(&OsString::from(word)).unwrap_err();
            assert!(err.contains(needle), "{word}: {err}");
        }
    }

    #[test]
    fn the_cpu_time_of_a_cgroup_is_read_in_nanoseconds() {
        assert_eq!(parse_cpu_usage(1, "1234567890\n"), Some(1_234_567_890));
        assert_eq!(
            parse_cpu_usage(
                2,
                "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 0\n"
            ),
            Some(2_500_000_000)
        );
        assert_eq!(parse_cpu_usage(2, "user_usec 5\n"), None);
        assert_eq!(parse_cpu_usage(1, ""), None);
    }

    #[test]
    fn the_cpu_time_is_checked_sooner_as_it_nears_the_limit() {
        let ms = Duration::from_millis;
        let limit = Duration::from_secs(2);
        // Far from it: at the longest interval.
        assert_eq!(next_cpu_check(ms(0), limit, 2), Some(CPU_CHECK_LONGEST));
        // Closer: no sooner than its CPUs could reach it.
        assert_eq!(next_cpu_check(ms(1800), limit, 2), Some(ms(100)));
        assert_eq!(
            next_cpu_check(ms(1800), limit, 64),
            Some(CPU_CHECK_SHORTEST)
        );
        // At or past it: over.
        assert_eq!(next_cpu_check(limit, limit, 2), None);
        assert_eq!(next_cpu_check(ms(2500), limit, 2), None);
        assert_eq!(next_cpu_check(ms(1999), limit, 0), Some(CPU_CHECK_SHORTEST));
    }

    #[test]
    fn check_says_whether_cpu_seconds_bounds_the_call_or_each_process() {
        let v1 = |cpu: Option<&str>| Cgroups::V1 {
            pids: "/p".into(),
            memory: "/m".into(),
            cpu: cpu.map(PathBuf::from),
        };
        assert_eq!(
            v1(Some("/c")).describe(),
            "cgroup v1 (pids, memory, cpuacct); cpuSeconds per call"
        );
        assert!(v1(None).describe().starts_with(
            "cgroup v1 (pids, memory); cpuSeconds per process (RLIMIT_CPU): no writable"
        ));
        assert_eq!(
            Cgroups::Unavailable("no cgroup v2".into()).describe(),
            "rlimits (no cgroup v2); cpuSeconds per process (RLIMIT_CPU)"
        );
        let calls = Limits {
            processes: Some(8),
            cpu_seconds: Some(1),
            ..Limits::default()
        };
        // A cgroup serves calls that watch their CPU time or calls that do not, not both.
        let cgroup = CallCgroup {
            version: 1,
            pids: Some("/p/call-1".into()),
            memory: Some("/m/call-1".into()),
            cpu: Some("/p/call-1".into()),
            limits: calls,
        };
        assert_eq!(
            cgroup.dirs(),
            [Path::new("/p/call-1"), Path::new("/m/call-1")]
        );
        assert!(cgroup.serves(&Limits {
            cpu_seconds: Some(30),
            ..calls
        }));
        assert!(!cgroup.serves(&Limits {
            cpu_seconds: None,
            ..calls
        }));
    }

    #[test]
    fn cgroup_directories_are_found_in_mountinfo() {
        let mounts = "32 31 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                      35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let own = "8:pids:/\n4:memory:/a/b\n0::/user.slice/x.scope\n";
        assert_eq!(
            v1_dir(mounts, own, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            v1_dir(mounts, own, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
        );
        assert_eq!(v1_dir(mounts, own, "cpu"), None);
        assert_eq!(
            v2_dir(mounts, own),
            Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice/x.scope"))
        );
    }

    #[test]
    fn only_names_of_server_cgroups_give_a_pid() {
        for (name, pid) in [
            ("toolgate-sandbox-123", Some(123)),
            ("toolgate-sandbox-123-call-7", Some(123)),
            ("toolgate-sandbox-probe-45", Some(45)),
            ("toolgate", None),
            ("toolgate-sandbox-", None),
            ("toolgate-sandbox-12x", None),
            ("toolgate-sandbox-123-call-", None),
            ("toolgate-sandbox-123-calls-1", None),
            ("toolgate-sandbox-123-call-1-x", None),
            ("toolgate-sandbox-probe-", None),
            ("user.slice", None),
        ] {
            assert_eq!(server_of(name), pid, "{name}");
        }
    }

    /// The sweep on plain directories (a cgroup's `rmdir` also refuses one with children).
    #[test]
    fn the_sweep_removes_what_gone_servers_left_and_nothing_else() {
        let parent = tempfile::tempdir().unwrap();
        let dir = |name: &str| parent.path().join(name);
        // A pid that is not running: a child that was reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        // Running: this test's parent. This test's own pid stands for the server's: running,
        // yet its name can only be a pid used again.
        // SAFETY: getppid takes nothing and cannot fail.
        let alive = unsafe { libc::getppid() };
        let own = std::process::id() as libc::pid_t;
        for name in [
            format!("toolgate-sandbox-{gone}/call-1"),
            format!("toolgate-sandbox-{gone}/call-2"),
            format!("toolgate-sandbox-{gone}-call-3"),
            format!("toolgate-sandbox-probe-{gone}"),
            format!("toolgate-sandbox-{own}/call-1"),
            format!("toolgate-sandbox-{alive}/call-1"),
            format!("toolgate-sandbox-{alive}-call-1"),
            "toolgate/inside".into(),
            format!("toolgate-sandbox-{gone}-x"),
        ] {
            std::fs::create_dir_all(dir(&name)).unwrap();
        }
        // A gone server's directory that holds something other than calls stays.
        std::fs::create_dir_all(dir(&format!("toolgate-sandbox-{gone}-call-4/child"))).unwrap();
        sweep(parent.path(), own);
        let mut left: Vec<String> = std::fs::read_dir(parent.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected = vec![
            format!("toolgate-sandbox-{alive}"),
            format!("toolgate-sandbox-{alive}-call-1"),
            "toolgate".to_string(),
            format!("toolgate-sandbox-{gone}-x"),
            format!("toolgate-sandbox-{gone}-call-4"),
        ];
        expected.sort();
        assert_eq!(left, expected);
        assert!(dir(&format!("toolgate-sandbox-{alive}/call-1")).is_dir());
    }
}
