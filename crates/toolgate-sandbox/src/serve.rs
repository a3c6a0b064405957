//! In a call's init, once it is ready: takes its one call, starts the program, and reports
//! how the program ended on the call's socket.
//!
//! A call comes one of two ways:
//!
//! - **Assigned** by the server (`ASSIGN` + the call's socket and streams): the init clones
//!   the program's process, which applies the ruleset and executes (`Program::spawn`).
//! - **Offered** to toolgate (`OFFERED kind` + the call's socket; see
//!   `protocol::offer`): the init starts the program's process at once, ahead of the call,
//!   sharing its memory as `vfork` does (the init sleeps until that process executes or exits,
//!   interruptibly: see `ChildStack::vfork_asleep`). That process applies the call's Landlock ruleset, takes toolgate's `CALL` +
//!   streams on the call's socket itself, checks that the call is of the init's kind, renames
//!   the call's directory into place and executes. A call sent straight to an offered init thus
//!   wakes one process, not two, and costs no `clone` on its path. How far the process got it
//!   says in the shared memory: it took a call (then it executed, or died trying), no call came,
//!   or the call failed before executing (reported on the call's socket by that process). Once
//!   it took a call and the init resumes, the init tells the server `TAKEN`, while the program
//!   runs.
//!
//! Either way the init then waits for the program; as PID 1 of the call's namespace it ends
//! and reaps everything else in it before it reports (or, as a subreaper, kills every leftover
//! descendant).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::confine::{restrict_self, ChildStack, Program};
use crate::init::Prepared;
use crate::plan::{Confinement, Launch, Plan};
use crate::protocol::kind::CallKind;
use crate::protocol::wire::{self, Reader};
use crate::protocol::words;
use crate::protocol::EXIT_SETUP_FAILED;
use crate::sys::poll_in;
use crate::tree::{cpu_time, kill_descendants, reap, watch_step, Ended, Watch};

/// How far an offered init's program process got, as it says in memory it shares with its
/// init. Waiting for a call (also: it died before one came).
const WAITING: u8 = 0;
/// It took a call: it then executed the program, or died trying (a failed `execve` is the
/// program's exit status, as for an assigned call).
const CALLED: u8 = 1;
/// No call came (toolgate let the offer go, or the request was malformed).
const NO_CALL: u8 = 2;
/// The call failed before its program executed, and that was reported on the call's socket.
const REPORTED: u8 = 3;

/// An init that is ready: what it serves its call with.
pub(crate) struct Init<'a> {
    /// Its socket to the server.
    pub socket: BorrowedFd<'a>,
    /// PID 1 of the call's PID namespace (else a subreaper).
    pub namespace: bool,
    pub prepared: &'a Prepared,
    pub rules: &'a Confinement,
    pub devnull: BorrowedFd<'a>,
    /// The signal mask the program starts with.
    pub mask: &'a libc::sigset_t,
    /// The open-file limit to give the program back.
    pub files: libc::rlimit,
}

/// A call's request, taken apart.
struct Call {
    /// The call's socket: the report goes there.
    socket: OwnedFd,
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

impl Init<'_> {
    /// Waits for the call, runs it, reports. `Err` when there was no call to run.
    pub fn serve(&self, stack: ChildStack) -> Result<(), ()> {
        let message = wire::recv(self.socket, true).map_err(|_| ())?;
        match message.bytes.first() {
            Some(&wire::ASSIGN) => self.serve_assigned(message, &stack),
            Some(&wire::OFFERED) => self.serve_offered(message, &stack),
            _ => Err(()), // end of file: the server is gone or dropped this init
        }
    }

    /// A call the server assigned: `ASSIGN` + [call socket, stdout, stderr, (stdin)].
    fn serve_assigned(&self, message: wire::Message, stack: &ChildStack) -> Result<(), ()> {
        let (call, plan) = take_call(message, None)?;
        // An init without a view gets its ruleset now, built by the server meanwhile.
        let ruleset = if self.prepared.ruleset.is_some() {
            Ok(None)
        } else {
            let rules = wire::recv(self.socket, true).map_err(|_| ())?;
            match rules.bytes.split_first() {
                Some((&wire::RULES, _)) => Ok(rules.fds.into_iter().next()),
                Some((&wire::FAILED, message)) => {
                    Err(String::from_utf8_lossy(message).into_owned())
                }
                _ => return Err(()),
            }
        };
        let launch = self.launch(plan).and_then(|launch| Ok((launch, ruleset?)));
        let (launch, per_call_ruleset) = match launch {
            Ok(ready) => ready,
            Err(message) => {
                report_failure(call.socket.as_fd(), &message);
                return Ok(());
            }
        };
        if !self.hand_listener(call.socket.as_fd()) {
            return Ok(()); // toolgate is gone
        }
        let ruleset = self.prepared.ruleset.as_ref().or(per_call_ruleset.as_ref());
        let program = self
            .program(ruleset.map(AsFd::as_fd), &launch, &call)
            .spawn(stack);
        let Call {
            socket,
            stdin,
            stdout,
            stderr,
            ..
        } = call;
        drop((stdin, stdout, stderr, per_call_ruleset));
        match program {
            Ok(program) => self.report(socket.as_fd(), program),
            Err(err) => report_failure(socket.as_fd(), &format!("clone: {err}")),
        }
        Ok(())
    }

    /// An init offered to toolgate: `OFFERED kind` + [call socket]. The program's process is
    /// started now and takes the call itself (see the module's documentation).
    fn serve_offered(&self, message: wire::Message, stack: &ChildStack) -> Result<(), ()> {
        let kind = CallKind::of_offered(&message.bytes[1..]);
        let socket = message.fds.into_iter().next().ok_or(())?;
        // Written by the program's process (it shares this memory); read once it has executed
        // or exited.
        let outcome = AtomicU8::new(WAITING);
        let child = stack
            .vfork_asleep(|| self.take_offered(&kind, socket.as_raw_fd(), &outcome))
            .map_err(|_| ())?;
        match outcome.load(Ordering::SeqCst) {
            CALLED => {}
            said => {
                reap(child);
                return if said == REPORTED { Ok(()) } else { Err(()) };
            }
        }
        // The server learns its offer was taken (its next init of this kind follows).
        let _ = wire::send(self.socket, &[wire::TAKEN], &[]);
        self.report(socket.as_fd(), child);
        Ok(())
    }

    /// In the program's process of an offered init: takes toolgate's call on `socket` and
    /// executes it, or says in `outcome` why not and exits. Never returns.
    ///
    /// It applies the call's Landlock ruleset first, while no call is there yet: what it does
    /// before executing (reading the call, renaming the call's directory in the private tmpfs,
    /// which the ruleset grants) is within it. Should that fail, the program's start applies
    /// the ruleset again and reports the failure as for any call.
    fn take_offered(&self, kind: &CallKind, socket: RawFd, outcome: &AtomicU8) -> ! {
        // SAFETY: this process has its own copy of the init's descriptors: closing it here
        // leaves the init's open.
        let socket = unsafe { OwnedFd::from_raw_fd(socket) };
        // An offered init always has its ruleset built ahead (it has a view).
        let ruleset = self.prepared.ruleset.as_ref().map(AsFd::as_fd);
        let restricted = restrict_self(ruleset).is_ok();
        let call = match wire::recv(socket.as_fd(), true) {
            Ok(request) if request.bytes.first() == Some(&wire::CALL) => {
                outcome.store(CALLED, Ordering::SeqCst);
                take_call(request, Some((kind, socket)))
            }
            _ => Err(()), // end of file: toolgate let this init go
        };
        let said = match call {
            Err(()) => NO_CALL,
            Ok((call, plan)) => match self.launch(plan) {
                Err(message) => {
                    report_failure(call.socket.as_fd(), &message);
                    REPORTED
                }
                Ok(_) if !self.hand_listener(call.socket.as_fd()) => NO_CALL,
                Ok(launch) => {
                    let ruleset = if restricted { None } else { ruleset };
                    self.program(ruleset, &launch, &call).exec()
                }
            },
        };
        outcome.store(said, Ordering::SeqCst);
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(0) }
    }

    /// The call's program, once its directory is made.
    fn launch(&self, plan: Result<Plan, String>) -> Result<Launch, String> {
        let plan = plan?;
        self.prepared.make_call_dir(plan.call_dir.as_deref())?;
        plan.launch.ok_or_else(|| "no program given".into())
    }

    /// Hands the proxy's listener to toolgate where the call has one; false when toolgate is
    /// gone.
    fn hand_listener(&self, socket: BorrowedFd<'_>) -> bool {
        match &self.prepared.listener {
            Some(listener) => wire::send(socket, &[wire::LISTENER], &[listener.as_fd()]).is_ok(),
            None => true,
        }
    }

    fn program<'a>(
        &'a self,
        ruleset: Option<BorrowedFd<'a>>,
        launch: &'a Launch,
        call: &'a Call,
    ) -> Program<'a> {
        let stdin = call.stdin.as_ref().map_or(self.devnull, AsFd::as_fd);
        Program {
            ruleset,
            seccomp: &[], // installed in this init already, and inherited
            best_effort: false,
            launch,
            mask: self.mask,
            stdio: Some([stdin, call.stdout.as_fd(), call.stderr.as_fd()]),
            files: Some(self.files),
        }
    }

    /// Waits for `program` and reports how it ended (with the limits it ran into) on the
    /// call's `socket`.
    fn report(&self, socket: BorrowedFd<'_>, program: libc::pid_t) {
        let limits = if self.rules.without.limits {
            Default::default()
        } else {
            self.rules.limits
        };
        // The call's CPU time, watched while it runs (a call with `cpuSeconds` whose cgroup
        // counts it).
        let mut cpu_watch = self.prepared.cpu_watch(&limits);
        let watch = cpu_watch.as_mut().map(|watch| watch as &mut dyn Watch);
        let ended = if self.namespace {
            // Everything else in the namespace goes before the report, so that toolgate can
            // take the report as the end of the call's whole tree without waiting for this
            // init's own exit (its address space and namespaces are torn down after).
            crate::tree::reap_until_watched(program, watch).map(|ended| Ended {
                orphans: ended.orphans.and(crate::tree::end_pid_namespace()),
                ..ended
            })
        } else {
            subreaper_wait(program, socket, watch)
        };
        let Some(ended) = ended else {
            return;
        };
        let hit = self.prepared.limits_hit(&limits, &ended);
        let mut report = wire::tagged_i32(wire::EXITED, ended.status).to_vec();
        report.extend_from_slice(hit.join(",").as_bytes());
        let _ = wire::send(socket, &report, &[]);
    }
}

/// Takes a call's request apart: its streams, its socket (the first descriptor of `ASSIGN`;
/// for an offered init, the one it was offered with) and its plan, which for an offered
/// init must be of the init's `kind`.
fn take_call(
    message: wire::Message,
    offered: Option<(&CallKind, OwnedFd)>,
) -> Result<(Call, Result<Plan, String>), ()> {
    let mut reader = Reader::new(&message.bytes);
    reader.u8();
    let flags = reader.u8().unwrap_or(0);
    let mut fds = message.fds;
    let body = wire::take_body(reader.rest(), flags, &mut fds);
    let stdin = if flags & wire::HAS_STDIN != 0 {
        fds.pop()
    } else {
        None
    };
    let (Some(stderr), Some(stdout)) = (fds.pop(), fds.pop()) else {
        return Err(());
    };
    let (socket, kind) = match offered {
        Some((kind, socket)) => (socket, Some(kind)),
        None => (fds.pop().ok_or(())?, None),
    };
    if !fds.is_empty() {
        return Err(());
    }
    let plan = body
        .map_err(|err| format!("reading the request: {err}"))
        .and_then(|body| Plan::parse(words::split(&body), true))
        .and_then(|plan| match kind {
            // toolgate chose this init for the call's kind: its view must be that kind's.
            Some(kind)
                if *kind != CallKind::new(&plan.confinement.read, plan.call_dir.as_deref()) =>
            {
                Err("the call is not of the kind its offered init was made for".into())
            }
            _ => Ok(plan),
        });
    let call = Call {
        socket,
        stdin,
        stdout,
        stderr,
    };
    Ok((call, plan))
}

/// In a subreaper init: waits for the program, or for toolgate to close the call's socket;
/// either way kills every leftover descendant. Returns how the program ended if it exited.
/// A `watch` is checked meanwhile; when it says the call is over its limit, the call is killed.
fn subreaper_wait(
    program: libc::pid_t,
    socket: BorrowedFd<'_>,
    mut watch: Option<&mut dyn Watch>,
) -> Option<Ended> {
    let Ok(program_fd) = wire::pidfd_open(program) else {
        let ended = crate::tree::reap_until_watched(program, watch);
        let orphans = kill_descendants();
        return ended.map(|ended| Ended {
            orphans: ended.orphans.and(orphans),
            ..ended
        });
    };
    let mut over = false;
    let mut next = std::time::Instant::now();
    loop {
        let timeout = match watch.as_deref_mut() {
            Some(watch) => {
                crate::tree::poll_timeout(watch_step(program, watch, &mut over, &mut next))
            }
            None => -1,
        };
        let mut polls = [poll_in(program_fd.as_fd()), poll_in(socket)];
        // SAFETY: poll reads and writes the array we own.
        let ready = unsafe { libc::poll(polls.as_mut_ptr(), 2, timeout) };
        if ready < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if polls[0].revents != 0 || ready < 0 {
            let mut status = 0;
            // SAFETY: wait4 of our own child into values we own.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            let reaped = unsafe { libc::wait4(program, &mut status, 0, &mut usage) } == program;
            let orphans = kill_descendants();
            return reaped.then(|| Ended {
                status,
                cpu: cpu_time(&usage),
                orphans,
                over_cpu: over,
            });
        }
        if polls[1].revents != 0 {
            // SAFETY: kill of our own unreaped child.
            unsafe { libc::kill(program, libc::SIGKILL) };
            kill_descendants();
            return None;
        }
    }
}

/// Tells toolgate on the call's `socket` that the call failed before its program ran.
pub(crate) fn report_failure(socket: BorrowedFd<'_>, message: &str) {
    let mut bytes = vec![wire::FAILED];
    bytes.extend_from_slice(&EXIT_SETUP_FAILED.to_le_bytes());
    let room = wire::MAX_MESSAGE - bytes.len();
    let mut end = message.len().min(room);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    bytes.extend_from_slice(&message.as_bytes()[..end]);
    let _ = wire::send(socket, &bytes, &[]);
}
