//! The seccomp part of the sandbox: system calls a sandboxed process gets an error for.
//!
//! Errors, never a kill, so a program reports its own failure: `EPERM` for what is refused,
//! `ENOSYS` for `clone3` (its flags sit in memory a filter cannot read, so libc is told the call
//! does not exist and falls back to `clone`, whose flags are checked). Only another
//! architecture's system calls kill the process.
//!
//! The filter is built by `seccompiler` in the launcher's own process, from the policy's
//! network setting (`clone3`'s `ENOSYS` put in front of its rules: see [`answer_first`]): once
//! per one-shot launch, once per network setting in the server. Its cost is paid off the
//! call's path: the launcher server installs it in a call's init before the call arrives (the
//! kernel runs a new filter for every system call number then, to cache the ones it always
//! allows), and the program inherits it.

use std::collections::BTreeMap;

use crate::plan::Network;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `kexec_file_load`: the libc crate leaves it out for aarch64 musl; the number is the
/// kernel's, the same under every libc.
#[cfg(all(target_arch = "aarch64", target_env = "musl"))]
const SYS_KEXEC_FILE_LOAD: libc::c_long = 294;
#[cfg(not(all(target_arch = "aarch64", target_env = "musl")))]
const SYS_KEXEC_FILE_LOAD: libc::c_long = libc::SYS_kexec_file_load;

/// Refused in every sandbox: other processes' memory, the kernel keyring, mounts and
/// namespaces, kernel-programming interfaces whose bugs are the usual way out, and the
/// administrative calls a root process would otherwise keep.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_kexec_load,
    SYS_KEXEC_FILE_LOAD,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_quotactl,
    libc::SYS_vhangup,
    libc::SYS_syslog,
    libc::SYS_chroot,
    libc::SYS_fanotify_init,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// Namespace flags refused on `clone` (`CLONE_NEWTIME`, 0x80, exists only for `clone3`, where
/// it sits among the exit-signal bits of `clone`; no valid signal has it set).
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    0x80,
];

/// Terminal ioctls that inject input into, or act on, the terminal of someone else.
// The casts are needed for musl, whose libc crate declares these request numbers as `c_int`
// (glibc: `c_ulong`); both values are small positive constants.
#[allow(clippy::unnecessary_cast)]
const DENIED_IOCTLS: &[u64] = &[libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// On x86_64 the x32 ABI reaches the same system calls with this bit set, where the kernel has
/// it enabled; there every refused number is refused in that form too.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// One instruction of a classic BPF program.
pub(crate) type Instruction = libc::sock_filter;
/// A compiled filter.
pub(crate) type Program = Vec<Instruction>;

/// The filters of a sandbox with the network `network`: one program, `ENOSYS` for `clone3`
/// and `EPERM` for what the main rules refuse.
pub(crate) fn compile(network: Network) -> Result<Vec<Program>, String> {
    programs(network, x32_enabled())
}

fn programs(network: Network, x32: bool) -> Result<Vec<Program>, String> {
    let main = build(aliased(main_rules(network)?, x32), libc::EPERM)?;
    // clone3 and, where x32 runs, its x32 alias.
    let clone3: Vec<i64> = aliased(BTreeMap::from([(libc::SYS_clone3, Vec::new())]), x32)
        .into_keys()
        .collect();
    Ok(vec![answer_first(&clone3, libc::ENOSYS, main)?])
}

/// `main` (a seccompiler program) with the system calls `numbers` answered `errno` before its
/// rules. seccompiler gives every rule of a filter the same action, so `clone3`'s `ENOSYS` was a
/// second filter; one filter is installed (checked, translated and JIT-compiled by the kernel,
/// in every call's init) and run per system call once instead of twice.
///
/// The check goes right after seccompiler's architecture check (load the architecture, jump
/// over the kill when it is ours, kill), which this requires: another architecture's system
/// calls are still killed first, and the numbers are compared only as this architecture's.
/// Classic BPF jumps only forward and relative to the next instruction, so the rest of
/// `main`, moved down as a whole, keeps its meaning.
fn answer_first(numbers: &[i64], errno: i32, main: Program) -> Result<Program, String> {
    const LOAD_WORD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JUMP_EQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JUMP_ALWAYS: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
    const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    /// `seccomp_data`: the system call number, then the architecture.
    const NR_AT: u32 = 0;
    const ARCH_AT: u32 = 4;
    let statement = |code: u16, k: u32| Instruction {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let prologue = main.get(..3).unwrap_or_default();
    let shaped = matches!(
        prologue,
        [load, check, kill]
            if (load.code, load.k) == (LOAD_WORD, ARCH_AT)
                && (check.code, check.jt, check.jf) == (JUMP_EQ, 1, 0)
                && (kill.code, kill.k) == (RETURN, libc::SECCOMP_RET_KILL_PROCESS)
    );
    let count = u8::try_from(numbers.len())
        .ok()
        .filter(|&count| count < u8::MAX);
    let (true, Some(count)) = (shaped, count) else {
        return Err(
            "the seccomp filter does not start with the architecture check it was built with"
                .into(),
        );
    };
    let mut program = Vec::with_capacity(main.len() + numbers.len() + 3);
    program.extend_from_slice(prologue);
    program.push(statement(LOAD_WORD, NR_AT));
    // Equal: to the return after the last comparison and the jump over it.
    for (index, &number) in (0u8..).zip(numbers) {
        program.push(Instruction {
            code: JUMP_EQ,
            jt: count - index,
            jf: 0,
            k: number as u32,
        });
    }
    program.push(statement(JUMP_ALWAYS, 1));
    program.push(statement(
        RETURN,
        libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA),
    ));
    program.extend_from_slice(&main[3..]);
    Ok(program)
}

/// Whether this kernel runs x32 system calls (asked with a harmless `getpid`).
#[cfg(target_arch = "x86_64")]
fn x32_enabled() -> bool {
    // SAFETY: getpid takes no arguments; without x32 the call fails with ENOSYS.
    unsafe { libc::syscall(X32_SYSCALL_BIT | libc::SYS_getpid) >= 0 }
}

#[cfg(not(target_arch = "x86_64"))]
fn x32_enabled() -> bool {
    false
}

fn aliased(rules: BTreeMap<i64, Vec<SeccompRule>>, x32: bool) -> BTreeMap<i64, Vec<SeccompRule>> {
    if x32 {
        with_x32_aliases(rules)
    } else {
        rules
    }
}

fn main_rules(network: Network) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &nr in DENIED {
        rules.insert(nr, Vec::new());
    }
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| rule(0, SeccompCmpOp::MaskedEq(flag as u64), flag as u64))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    let ioctl_rules = DENIED_IOCTLS
        .iter()
        .map(|&request| rule(1, SeccompCmpOp::Eq, request))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    if matches!(network, Network::Proxy(_)) {
        // TCP to toolgate's proxy (Landlock allows its port only) and unix and netlink
        // sockets: no UDP, raw or packet sockets, no other family.
        let not_allowed = SeccompRule::new(
            [
                libc::AF_UNIX,
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
            ]
            .iter()
            .map(|&family| condition(0, SeccompCmpOp::Ne, family as u64))
            .collect::<Result<Vec<_>, _>>()?,
        )
        .map_err(|err| err.to_string())?;
        let mut socket = vec![not_allowed];
        for family in [libc::AF_INET, libc::AF_INET6] {
            for kind in NOT_STREAM {
                socket.push(
                    SeccompRule::new(vec![
                        condition(0, SeccompCmpOp::Eq, family as u64)?,
                        condition(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), kind as u64)?,
                    ])
                    .map_err(|err| err.to_string())?,
                );
            }
        }
        rules.insert(libc::SYS_socket, socket);
        let not_unix = rule(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
        rules.insert(libc::SYS_socketpair, vec![not_unix]);
    }
    if network == Network::Off {
        // Only unix sockets can be made (UDP is not covered by Landlock before ABI 10), and
        // none can connect: a path or abstract unix socket of a host service (a container
        // daemon, a session bus) is as much "outside" as a TCP port is.
        let not_unix = rule(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
        rules.insert(libc::SYS_socket, vec![not_unix.clone()]);
        rules.insert(libc::SYS_socketpair, vec![not_unix]);
        rules.insert(libc::SYS_connect, Vec::new());
        // `sendto` with an address is a connect of its own (the address is a pointer: all 64
        // bits are compared).
        let addressed = SeccompRule::new(vec![SeccompCondition::new(
            4,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::Ne,
            0,
        )
        .map_err(|err| err.to_string())?])
        .map_err(|err| err.to_string())?;
        rules.insert(libc::SYS_sendto, vec![addressed]);
    }
    Ok(rules)
}

/// A rule on the low 32 bits of argument `arg` (the kernel takes these arguments as 32 bits).
fn rule(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, String> {
    SeccompRule::new(vec![condition(arg, op, value)?]).map_err(|err| err.to_string())
}

fn condition(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|err| err.to_string())
}

/// The type bits of `socket`'s second argument (the rest are `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;
/// Socket types other than `SOCK_STREAM`: datagram, raw, RDM, sequenced packets, DCCP, packet.
const NOT_STREAM: [libc::c_int; 6] = [
    libc::SOCK_DGRAM,
    libc::SOCK_RAW,
    libc::SOCK_RDM,
    libc::SOCK_SEQPACKET,
    6,  // SOCK_DCCP
    10, // SOCK_PACKET (obsolete, still accepted by the kernel)
];

#[cfg(target_arch = "x86_64")]
fn with_x32_aliases(mut rules: BTreeMap<i64, Vec<SeccompRule>>) -> BTreeMap<i64, Vec<SeccompRule>> {
    // x32 has its own numbers for a few calls whose arguments differ in layout.
    const X32_SPECIFIC: &[(i64, i64)] = &[
        (libc::SYS_ioctl, 514),
        (libc::SYS_ptrace, 521),
        (libc::SYS_process_vm_readv, 539),
        (libc::SYS_process_vm_writev, 540),
    ];
    let aliases: Vec<(i64, Vec<SeccompRule>)> = rules
        .iter()
        .flat_map(|(&nr, rule)| {
            let specific = X32_SPECIFIC
                .iter()
                .filter(move |(native, _)| *native == nr)
                .map(|(_, x32)| *x32);
            std::iter::once(nr)
                .chain(specific)
                .map(move |alias| (alias | X32_SYSCALL_BIT, rule.clone()))
        })
        .collect();
    rules.extend(aliases);
    rules
}

#[cfg(not(target_arch = "x86_64"))]
fn with_x32_aliases(rules: BTreeMap<i64, Vec<SeccompRule>>) -> BTreeMap<i64, Vec<SeccompRule>> {
    rules
}

fn build(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<Program, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|err| {
        format!(
            "seccomp filters are not available for {}: {err}",
            std::env::consts::ARCH
        )
    })?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|err| err.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|err: seccompiler::BackendError| err.to_string())?;
    Ok(program
        .into_iter()
        .map(|ins| Instruction {
            code: ins.code,
            jt: ins.jt,
            jf: ins.jf,
            k: ins.k,
        })
        .collect())
}

/// Installs `program` on the calling thread (setting `no_new_privs`, which an unprivileged
/// filter needs and which is part of the sandbox anyway).
pub(crate) fn install(program: &[Instruction]) -> std::io::Result<()> {
    let len =
        u16::try_from(program.len()).map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?;
    let fprog = libc::sock_fprog {
        len,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: prctl takes integers; seccomp reads `fprog` and the `len` instructions it points
    // to, which live until the call returns (the kernel copies them).
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &fprog as *const libc::sock_fprog,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel sees of a system call.
    struct Call {
        arch: u32,
        nr: u32,
        args: [u64; 6],
    }

    // Classic BPF opcodes (linux/bpf_common.h) that seccompiler emits.
    const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_ALWAYS: u16 = 0x05; // BPF_JMP | BPF_JA
    const JUMP_EQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JUMP_GT: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    const JUMP_GE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const JUMP_SET: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
    const AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K

    /// Runs one program the way the kernel does (for the instructions above).
    fn run_one(program: &[Instruction], call: &Call) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&call.nr.to_le_bytes());
        data[4..8].copy_from_slice(&call.arch.to_le_bytes());
        for (index, arg) in call.args.iter().enumerate() {
            data[16 + 8 * index..24 + 8 * index].copy_from_slice(&arg.to_le_bytes());
        }
        let mut accumulator = 0u32;
        let mut pc = 0usize;
        loop {
            let ins = program[pc];
            pc += 1;
            match ins.code {
                LOAD_WORD => {
                    let at = ins.k as usize;
                    accumulator = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                AND => accumulator &= ins.k,
                JUMP_ALWAYS => pc += ins.k as usize,
                JUMP_EQ | JUMP_GT | JUMP_GE | JUMP_SET => {
                    let taken = match ins.code {
                        JUMP_EQ => accumulator == ins.k,
                        JUMP_GT => accumulator > ins.k,
                        JUMP_GE => accumulator >= ins.k,
                        _ => accumulator & ins.k != 0,
                    };
                    pc += usize::from(if taken { ins.jt } else { ins.jf });
                }
                RETURN => return ins.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    /// The verdict of every program together: the kernel takes the strictest action.
    fn run(programs: &[Program], call: &Call) -> u32 {
        programs
            .iter()
            .map(|program| run_one(program, call))
            .min_by_key(|&verdict| (verdict & libc::SECCOMP_RET_ACTION_FULL) as i32)
            .unwrap()
    }

    fn call(nr: i64, args: [u64; 6]) -> Call {
        Call {
            arch: AUDIT_ARCH,
            nr: nr as u32,
            args,
        }
    }

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xc000_003e;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xc000_00b7;
    #[cfg(target_arch = "riscv64")]
    const AUDIT_ARCH: u32 = 0xc000_00f3;

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    /// System call numbers with argument checks or an own verdict, per network setting.
    fn special(network: Network) -> Vec<i64> {
        let mut numbers = vec![libc::SYS_clone, libc::SYS_clone3, libc::SYS_ioctl];
        if network != Network::On {
            numbers.extend([
                libc::SYS_socket,
                libc::SYS_socketpair,
                libc::SYS_connect,
                libc::SYS_sendto,
            ]);
        }
        numbers
    }

    #[test]
    fn every_system_call_number_gets_its_verdict() {
        for network in [Network::Off, Network::On, Network::Proxy(3128)] {
            let programs = compile(network).unwrap();
            for nr in 0..1024i64 {
                if special(network).contains(&nr) {
                    continue;
                }
                let expected = if DENIED.contains(&nr) { EPERM } else { ALLOW };
                assert_eq!(run(&programs, &call(nr, [0; 6])), expected, "nr {nr}");
            }
            assert_eq!(programs.len(), 1, "one filter to install");
            // Another architecture is killed, also for the numbers answered before the rules.
            for nr in [1, libc::SYS_clone3 as u32] {
                let foreign = Call {
                    arch: 0x4000_0003,
                    nr,
                    args: [0; 6],
                };
                assert_eq!(run(&programs, &foreign), libc::SECCOMP_RET_KILL_PROCESS);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_aliases_are_refused_where_x32_exists() {
        let programs = programs(Network::Off, true).unwrap();
        let x32 = |nr: i64| call(X32_SYSCALL_BIT | nr, [0; 6]);
        for nr in [
            libc::SYS_ptrace,
            521,
            539,
            540,
            libc::SYS_bpf,
            libc::SYS_connect,
        ] {
            assert_eq!(run(&programs, &x32(nr)), EPERM, "x32 {nr}");
        }
        assert_eq!(run(&programs, &x32(libc::SYS_clone3)), ENOSYS);
        assert_eq!(run(&programs, &x32(libc::SYS_getpid)), ALLOW);
        let inet = libc::AF_INET as u64;
        assert_eq!(
            run(
                &programs,
                &call(X32_SYSCALL_BIT | libc::SYS_socket, [inet, 1, 0, 0, 0, 0])
            ),
            EPERM
        );
    }

    #[test]
    fn argument_checks_refuse_exactly_what_they_name() {
        let closed = compile(Network::Off).unwrap();
        let open = compile(Network::On).unwrap();
        let clone = libc::SYS_clone;
        let thread_flags = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        for programs in [&closed, &open] {
            assert_eq!(
                run(programs, &call(clone, [thread_flags, 0, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(
                run(
                    programs,
                    &call(clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0])
                ),
                ALLOW
            );
            for &flag in NAMESPACE_FLAGS {
                let flags = flag as u64 | thread_flags;
                assert_eq!(
                    run(programs, &call(clone, [flags, 0, 0, 0, 0, 0])),
                    EPERM,
                    "{flag:#x}"
                );
            }
            let ioctl = libc::SYS_ioctl;
            for &request in DENIED_IOCTLS {
                assert_eq!(run(programs, &call(ioctl, [1, request, 0, 0, 0, 0])), EPERM);
                // The kernel reads the request as 32 bits: high bits do not get it past.
                let high_bits = request | 0xffff_ffff_0000_0000;
                assert_eq!(
                    run(programs, &call(ioctl, [1, high_bits, 0, 0, 0, 0])),
                    EPERM
                );
            }
            // The request's type is per libc (c_ulong on glibc, c_int on musl).
            #[allow(clippy::unnecessary_cast)]
            let window_size = libc::TIOCGWINSZ as u64;
            assert_eq!(
                run(programs, &call(ioctl, [1, window_size, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(run(programs, &call(libc::SYS_clone3, [0; 6])), ENOSYS);
        }
        let unix = libc::AF_UNIX as u64;
        let inet = libc::AF_INET as u64;
        let some_address = [3, 0, 0, 0, 0x7fff_0000_1000, 16];
        let high_address = [3, 0, 0, 0, 0x7fff_0000_0000, 16];
        for (programs, network) in [(&closed, false), (&open, true)] {
            let refused = if network { ALLOW } else { EPERM };
            assert_eq!(
                run(programs, &call(libc::SYS_socket, [unix, 1, 0, 0, 0, 0])),
                ALLOW
            );
            for family in [inet, libc::AF_INET6 as u64, libc::AF_NETLINK as u64] {
                assert_eq!(
                    run(programs, &call(libc::SYS_socket, [family, 1, 0, 0, 0, 0])),
                    refused
                );
            }
            assert_eq!(
                run(programs, &call(libc::SYS_socketpair, [inet, 1, 0, 0, 0, 0])),
                refused
            );
            assert_eq!(
                run(programs, &call(libc::SYS_connect, [3, 0, 0, 0, 0, 0])),
                refused
            );
            assert_eq!(
                run(programs, &call(libc::SYS_sendto, [3, 0, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(
                run(programs, &call(libc::SYS_sendto, some_address)),
                refused
            );
            assert_eq!(
                run(programs, &call(libc::SYS_sendto, high_address)),
                refused
            );
        }
    }

    #[test]
    fn the_proxy_network_allows_tcp_and_unix_sockets_only() {
        let programs = compile(Network::Proxy(3128)).unwrap();
        let socket = |family: i32, kind: i32| {
            run(
                &programs,
                &call(libc::SYS_socket, [family as u64, kind as u64, 0, 0, 0, 0]),
            )
        };
        let stream = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
        for family in [libc::AF_INET, libc::AF_INET6] {
            assert_eq!(socket(family, stream), ALLOW);
            assert_eq!(socket(family, libc::SOCK_STREAM), ALLOW);
            for kind in [
                libc::SOCK_DGRAM,
                libc::SOCK_RAW,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            ] {
                assert_eq!(socket(family, kind), EPERM, "{family} {kind}");
            }
        }
        assert_eq!(socket(libc::AF_UNIX, libc::SOCK_DGRAM), ALLOW);
        assert_eq!(socket(libc::AF_NETLINK, libc::SOCK_RAW), ALLOW);
        for family in [
            libc::AF_PACKET,
            libc::AF_VSOCK,
            libc::AF_BLUETOOTH,
            libc::AF_ALG,
        ] {
            assert_eq!(socket(family, libc::SOCK_STREAM), EPERM, "{family}");
        }
        assert_eq!(
            run(&programs, &call(libc::SYS_connect, [3, 0, 0, 0, 0, 0])),
            ALLOW
        );
        let inet = libc::AF_INET as u64;
        assert_eq!(
            run(
                &programs,
                &call(libc::SYS_socketpair, [inet, 1, 0, 0, 0, 0])
            ),
            EPERM
        );
    }

    #[test]
    fn the_first_answers_need_the_architecture_check_they_follow() {
        let main = build(
            aliased(main_rules(Network::Off).unwrap(), false),
            libc::EPERM,
        )
        .unwrap();
        let several = [libc::SYS_clone3, libc::SYS_getpid, libc::SYS_getppid];
        let program = answer_first(&several, libc::ENOSYS, main.clone()).unwrap();
        for nr in several {
            assert_eq!(run_one(&program, &call(nr, [0; 6])), ENOSYS, "nr {nr}");
        }
        assert_eq!(run_one(&program, &call(libc::SYS_gettid, [0; 6])), ALLOW);
        assert_eq!(run_one(&program, &call(libc::SYS_ptrace, [0; 6])), EPERM);
        // A program that does not start with the architecture check is refused, not changed.
        let err = answer_first(&several, libc::ENOSYS, main[3..].to_vec()).unwrap_err();
        assert!(err.contains("architecture"), "{err}");
        assert!(answer_first(&several, libc::ENOSYS, Vec::new()).is_err());
    }
}
