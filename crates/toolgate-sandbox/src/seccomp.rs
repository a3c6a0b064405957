//! The seccomp part of the sandbox: system calls a sandboxed process gets an error for.
//!
//! Errors, never a kill, so a program reports its own failure: `EPERM` for what is refused,
//! `ENOSYS` for `clone3` (its flags sit in memory a filter cannot read, so libc is told the call
//! does not exist and falls back to `clone`, whose flags are checked). Only another
//! architecture's system calls kill the process.
//!
//! The filter is assembled here ([`assemble`]), in the launcher's own process, from the policy's
//! network setting: once per one-shot launch, once per network setting in the server. The
//! launcher server installs it in a call's init before the call arrives, and the program
//! inherits it. Installing costs more than the rest of a start: the kernel checks and compiles
//! the program, then runs it for every system call number to cache the ones it always allows.
//! The numbers with a verdict of their own are found by a binary search, so that run takes a
//! dozen instructions per number instead of a walk past every rule (7 times less work than
//! the linear filter `seccompiler` made here before, which the kernel did with interrupts off),
//! and so does every system call a program makes that the cache cannot answer.

use std::collections::BTreeMap;

use crate::plan::Network;

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

/// Terminal ioctls that inject input into, or act on, the terminal of someone else: input
/// injection (`TIOCSTI`, `TIOCLINUX`), and — for a program given the user's terminal
/// (`toolgate sandbox --tty`) — what outlives the program there: its line discipline
/// (`TIOCSETD`: `N_NULL` swallows everything shown after), the foreground job, which stops
/// toolgate's own output (`TIOCSPGRP`, `tcsetpgrp`), exclusive mode, suspended output and its
/// size.
// The casts are needed for musl, whose libc crate declares these request numbers as `c_int`
// (glibc: `c_ulong`); all values are small positive constants.
#[allow(clippy::unnecessary_cast)]
const DENIED_IOCTLS: &[u64] = &[
    libc::TIOCSTI as u64,
    libc::TIOCLINUX as u64,
    libc::TIOCSETD as u64,
    libc::TIOCSPGRP as u64,
    // Also outliving the program on the user's terminal: exclusive mode (every later open
    // fails with EBUSY), output suspended (`tcflow(TCOOFF)`: nothing shown after), its size.
    libc::TIOCEXCL as u64,
    libc::TCXONC as u64,
    libc::TIOCSWINSZ as u64,
];

/// The set-user-ID and set-group-ID mode bits. A file the agent's process makes in the work
/// directory is owned by toolgate's user (root, when toolgate runs as root): with one of these
/// bits it would be a set-ID program for whoever runs it on the host later. No capability is
/// needed to set them on one's own file, and no mount option of the view reaches the host's
/// later use, so every call that sets them is refused, as systemd's `RestrictSUIDSGID=` does.
const SET_ID_BITS: [u32; 2] = [libc::S_ISUID, libc::S_ISGID];

/// The calls that set a mode, with the argument holding it and, for those that take one only
/// when creating, the argument holding their flags: `(number, mode at, flags at)`.
const MODE_SETTING: &[(i64, u8, Option<u8>)] = &[
    (libc::SYS_fchmod, 1, None),
    (libc::SYS_fchmodat, 2, None),
    (SYS_FCHMODAT2, 2, None),
    (libc::SYS_mknodat, 2, None),
    (libc::SYS_openat, 3, Some(2)),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chmod, 1, None),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_mknod, 1, None),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_creat, 1, None),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, 2, Some(1)),
];

/// `fallocate`'s mode bits (linux/falloc.h).
const FALLOC_FL_KEEP_SIZE: libc::c_int = 0x01;
const FALLOC_FL_PUNCH_HOLE: libc::c_int = 0x02;
const FALLOC_FL_INSERT_RANGE: libc::c_int = 0x20;

/// `fchmodat2` (Linux 6.6) and `openat2` (5.6) have the same number on every architecture;
/// not every target of the libc crate names them.
const SYS_FCHMODAT2: i64 = 452;
const SYS_OPENAT2: i64 = 437;

/// The flags with which `open`/`openat` take a mode: `O_CREAT`, and `O_TMPFILE` (its own bit,
/// without the `O_DIRECTORY` it is spelled with).
const CREATING_FLAGS: [u32; 2] = [
    libc::O_CREAT as u32,
    (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32,
];

/// Refuses setting a set-ID bit (see [`SET_ID_BITS`]) through any call that sets a mode, and
/// `openat2`, whose mode sits in a structure a filter cannot read (`ENOSYS`: libraries that
/// use it fall back to `openat`).
fn refuse_set_id_modes(rules: &mut Rules) {
    for &(nr, mode_at, flags_at) in MODE_SETTING {
        let mut when = Vec::new();
        for bit in SET_ID_BITS {
            let mode = condition(
                mode_at,
                Check::MaskedEq {
                    mask: bit,
                    value: bit,
                },
            );
            match flags_at {
                None => when.push(vec![mode]),
                Some(flags_at) => when.extend(CREATING_FLAGS.iter().map(|&flag| {
                    vec![
                        condition(
                            flags_at,
                            Check::MaskedEq {
                                mask: flag,
                                value: flag,
                            },
                        ),
                        mode,
                    ]
                })),
            }
        }
        rules.insert(nr, refused_when(when));
    }
    rules.insert(SYS_OPENAT2, always(libc::ENOSYS));
}

/// On x86_64 the x32 ABI reaches the same system calls with this bit set, where the kernel has
/// it enabled; there every refused number is refused in that form too.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The `AUDIT_ARCH_*` value of the architecture the filter is for (linux/audit.h).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: Option<u32> = Some(0xc000_003e);
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: Option<u32> = Some(0xc000_00b7);
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: Option<u32> = Some(0xc000_00f3);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const AUDIT_ARCH: Option<u32> = None;

/// One instruction of a classic BPF program.
pub(crate) type Instruction = libc::sock_filter;
/// A compiled filter.
pub(crate) type Program = Vec<Instruction>;

/// A check of one argument of a system call.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// Its low 32 bits equal the value (the kernel reads an `int` or a flag word as 32 bits:
    /// high bits set do not get past).
    Eq(u32),
    /// Its low 32 bits differ from the value.
    Ne(u32),
    /// Its low 32 bits with `mask` applied equal `value`.
    MaskedEq { mask: u32, value: u32 },
    /// Some of its 64 bits are set (a pointer that is not null).
    NonZero,
}

/// A check of argument `arg` (0 to 5).
#[derive(Clone, Copy, Debug)]
struct Condition {
    arg: u8,
    check: Check,
}

/// When a system call is refused.
#[derive(Clone, Debug)]
enum When {
    Always,
    /// When every condition of one of the rules holds.
    AnyOf(Vec<Vec<Condition>>),
}

/// A system call's verdict: refused with `errno` when `when` says so, else allowed.
#[derive(Clone, Debug)]
struct Refusal {
    errno: i32,
    when: When,
}

/// The verdict of every system call number that has one; every other number is allowed.
type Rules = BTreeMap<i64, Refusal>;

/// The filters of a sandbox with the network `network`: one program.
pub(crate) fn compile(network: Network) -> Result<Vec<Program>, String> {
    programs(network, x32_enabled())
}

fn programs(network: Network, x32: bool) -> Result<Vec<Program>, String> {
    let mut rules = main_rules(network);
    rules.insert(libc::SYS_clone3, always(libc::ENOSYS));
    Ok(vec![assemble(&aliased(rules, x32))?])
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

fn aliased(rules: Rules, x32: bool) -> Rules {
    if x32 {
        with_x32_aliases(rules)
    } else {
        rules
    }
}

fn always(errno: i32) -> Refusal {
    Refusal {
        errno,
        when: When::Always,
    }
}

/// `EPERM` when any of `rules` holds.
fn refused_when(rules: Vec<Vec<Condition>>) -> Refusal {
    Refusal {
        errno: libc::EPERM,
        when: When::AnyOf(rules),
    }
}

fn condition(arg: u8, check: Check) -> Condition {
    Condition { arg, check }
}

fn main_rules(network: Network) -> Rules {
    let mut rules = Rules::new();
    for &nr in DENIED {
        rules.insert(nr, always(libc::EPERM));
    }
    let namespaces = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = flag as u32;
            vec![condition(
                0,
                Check::MaskedEq {
                    mask: flag,
                    value: flag,
                },
            )]
        })
        .collect();
    rules.insert(libc::SYS_clone, refused_when(namespaces));
    let ioctls = DENIED_IOCTLS
        .iter()
        .map(|&request| vec![condition(1, Check::Eq(request as u32))])
        .collect();
    rules.insert(libc::SYS_ioctl, refused_when(ioctls));
    refuse_set_id_modes(&mut rules);
    // `fallocate` keeping the size reserves disk past a file's end, and inserting a range
    // grows the file, where `fileSizeMb` (RLIMIT_FSIZE, checked against a size set by a write
    // or a truncate) does not look: a small file could hold the disk. Refused as unsupported
    // (callers fall back to writing); punching holes and collapsing ranges free space and
    // stay allowed.
    let keep_size = (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) as u32;
    let insert_range = FALLOC_FL_INSERT_RANGE as u32;
    rules.insert(
        libc::SYS_fallocate,
        Refusal {
            errno: libc::EOPNOTSUPP,
            when: When::AnyOf(vec![
                vec![condition(
                    1,
                    Check::MaskedEq {
                        mask: keep_size,
                        value: FALLOC_FL_KEEP_SIZE as u32,
                    },
                )],
                vec![condition(
                    1,
                    Check::MaskedEq {
                        mask: insert_range,
                        value: insert_range,
                    },
                )],
            ]),
        },
    );
    let not_unix = vec![condition(0, Check::Ne(libc::AF_UNIX as u32))];
    let unix_datagram: Vec<Vec<Condition>> = UNIX_DATAGRAM
        .iter()
        .map(|&kind| {
            vec![condition(
                1,
                Check::MaskedEq {
                    mask: SOCK_TYPE_MASK,
                    value: kind as u32,
                },
            )]
        })
        .collect();
    if matches!(network, Network::Proxy(_)) {
        // TCP to toolgate's proxy (Landlock allows its port only) and netlink sockets: no UDP,
        // raw or packet sockets, no other family. No unix socket by `socket` either: `connect`
        // must stay open for TCP, and Landlock (before ABI 9) does not stop a unix `connect` to
        // a host service's socket in the view (the work directory, a read root); pairs made by
        // `socketpair` reach nobody else, datagram pairs excepted (see the network off).
        let other_family = [libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK]
            .iter()
            .map(|&family| condition(0, Check::Ne(family as u32)))
            .collect();
        let mut socket = vec![other_family];
        for family in [libc::AF_INET, libc::AF_INET6] {
            for kind in NOT_STREAM {
                socket.push(vec![
                    condition(0, Check::Eq(family as u32)),
                    condition(
                        1,
                        Check::MaskedEq {
                            mask: SOCK_TYPE_MASK,
                            value: kind as u32,
                        },
                    ),
                ]);
            }
        }
        rules.insert(libc::SYS_socket, refused_when(socket));
        let mut pairs = vec![not_unix];
        pairs.extend(unix_datagram);
        rules.insert(libc::SYS_socketpair, refused_when(pairs));
    } else if network == Network::Off {
        // Only unix sockets can be made (UDP is not covered by Landlock before ABI 10), and
        // none can connect: a path or abstract unix socket of a host service (a container
        // daemon, a session bus) is as much "outside" as a TCP port is. Nor datagram ones
        // (`SOCK_RAW` is a datagram socket for unix): a datagram socket sends to any address
        // given with each message, also when made by `socketpair`, and `sendmsg` keeps its
        // address where a filter cannot read it (in the message header).
        let mut unix_only = vec![not_unix];
        unix_only.extend(unix_datagram);
        rules.insert(libc::SYS_socket, refused_when(unix_only.clone()));
        rules.insert(libc::SYS_socketpair, refused_when(unix_only));
        rules.insert(libc::SYS_connect, always(libc::EPERM));
        // `sendto` with an address is a connect of its own (the address is a pointer: all 64
        // bits are compared).
        rules.insert(
            libc::SYS_sendto,
            refused_when(vec![vec![condition(4, Check::NonZero)]]),
        );
    }
    rules
}

/// The type bits of `socket`'s second argument (the rest are `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u32 = 0xf;
/// The socket types a unix socket is a datagram socket with (`SOCK_RAW` is made one), and
/// the rest that are not stream or sequenced-packet sockets (the kernel refuses those for unix
/// sockets itself).
const UNIX_DATAGRAM: [libc::c_int; 5] = [
    libc::SOCK_DGRAM,
    libc::SOCK_RAW,
    libc::SOCK_RDM,
    6,  // SOCK_DCCP
    10, // SOCK_PACKET
];
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
fn with_x32_aliases(mut rules: Rules) -> Rules {
    // x32 has its own numbers for a few calls whose arguments differ in layout.
    const X32_SPECIFIC: &[(i64, i64)] = &[
        (libc::SYS_ioctl, 514),
        (libc::SYS_ptrace, 521),
        (libc::SYS_process_vm_readv, 539),
        (libc::SYS_process_vm_writev, 540),
    ];
    let aliases: Vec<(i64, Refusal)> = rules
        .iter()
        .flat_map(|(&nr, refusal)| {
            let specific = X32_SPECIFIC
                .iter()
                .filter(move |(native, _)| *native == nr)
                .map(|(_, x32)| *x32);
            std::iter::once(nr)
                .chain(specific)
                .map(move |alias| (alias | X32_SYSCALL_BIT, refusal.clone()))
        })
        .collect();
    rules.extend(aliases);
    rules
}

#[cfg(not(target_arch = "x86_64"))]
fn with_x32_aliases(rules: Rules) -> Rules {
    rules
}

// Classic BPF (linux/filter.h, linux/bpf_common.h): the instructions the filter is made of.
const LOAD_WORD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const AND: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const JUMP_ALWAYS: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const JUMP_EQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JUMP_GE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RETURN: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
/// Where `seccomp_data` holds the system call number, the architecture and the arguments.
const NR_AT: u32 = 0;
const ARCH_AT: u32 = 4;
const ARGS_AT: u32 = 16;
/// Where in an argument's 64 bits its low and high halves are.
#[cfg(target_endian = "little")]
const HALVES: (u32, u32) = (0, 4);
#[cfg(target_endian = "big")]
const HALVES: (u32, u32) = (4, 0);
/// The longest program the kernel takes.
const MAX_INSTRUCTIONS: usize = 4096;
/// How many numbers the search compares one by one, at its leaves.
const LEAF: usize = 4;

fn statement(code: u16, k: u32) -> Instruction {
    Instruction {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction { code, jt, jf, k }
}

/// The filter of `rules`: another architecture's system calls kill the process; the number is
/// looked up by a binary search; a number with a verdict jumps to its block (its rules, each
/// ending in its refusal, then an allow), every other number is allowed where the search ends.
fn assemble(rules: &Rules) -> Result<Program, String> {
    let arch = AUDIT_ARCH.ok_or_else(|| {
        format!(
            "seccomp filters are not available for {}",
            std::env::consts::ARCH
        )
    })?;
    let numbers = rules
        .keys()
        .map(|&nr| u32::try_from(nr).map_err(|_| format!("system call number {nr} is negative")))
        .collect::<Result<Vec<u32>, String>>()?;
    let blocks = rules.values().map(block).collect::<Result<Vec<_>, _>>()?;
    let mut program = vec![
        statement(LOAD_WORD, ARCH_AT),
        jump(JUMP_EQ, arch, 1, 0),
        statement(RETURN, libc::SECCOMP_RET_KILL_PROCESS),
        statement(LOAD_WORD, NR_AT),
    ];
    let mut to_blocks = Vec::new();
    search(&numbers, 0, &mut program, &mut to_blocks);
    let mut starts = Vec::with_capacity(blocks.len());
    for block in &blocks {
        starts.push(program.len());
        program.extend_from_slice(block);
    }
    for (at, index) in to_blocks {
        program[at].k = (starts[index] - (at + 1)) as u32;
    }
    if program.len() > MAX_INSTRUCTIONS {
        return Err(format!(
            "the seccomp filter has {} instructions, more than the kernel takes",
            program.len()
        ));
    }
    Ok(program)
}

/// Appends a binary search for the number in the accumulator among `numbers` (sorted; their
/// blocks are numbered from `first`). Each jump to a block is left to fill in: its place and
/// the block go to `to_blocks`.
fn search(
    numbers: &[u32],
    first: usize,
    program: &mut Program,
    to_blocks: &mut Vec<(usize, usize)>,
) {
    if numbers.len() <= LEAF {
        for (offset, &nr) in numbers.iter().enumerate() {
            program.push(jump(JUMP_EQ, nr, 0, 1));
            to_blocks.push((program.len(), first + offset));
            program.push(statement(JUMP_ALWAYS, 0));
        }
        program.push(statement(RETURN, libc::SECCOMP_RET_ALLOW));
        return;
    }
    // At or above the middle number: a jump to the upper half, which follows the lower one
    // (classic BPF jumps only forward; `JA` reaches further than a conditional jump).
    let middle = numbers.len() / 2;
    program.push(jump(JUMP_GE, numbers[middle], 0, 1));
    let to_upper = program.len();
    program.push(statement(JUMP_ALWAYS, 0));
    search(&numbers[..middle], first, program, to_blocks);
    program[to_upper].k = (program.len() - (to_upper + 1)) as u32;
    search(&numbers[middle..], first + middle, program, to_blocks);
}

/// The block of one system call: its refusal, or its rules each followed by the refusal (a
/// condition that does not hold jumps past it, to the next rule), then an allow.
fn block(refusal: &Refusal) -> Result<Program, String> {
    let refuse = statement(
        RETURN,
        libc::SECCOMP_RET_ERRNO | (refusal.errno as u32 & libc::SECCOMP_RET_DATA),
    );
    let When::AnyOf(rules) = &refusal.when else {
        return Ok(vec![refuse]);
    };
    let mut program = Vec::new();
    for conditions in rules {
        // Built from the end: a failing condition jumps over the rest of its rule.
        let mut rule = vec![refuse];
        for condition in conditions.iter().rev() {
            let mut code = condition_code(condition, rule.len())?;
            code.append(&mut rule);
            rule = code;
        }
        program.append(&mut rule);
    }
    program.push(statement(RETURN, libc::SECCOMP_RET_ALLOW));
    Ok(program)
}

/// The check of `condition`, followed by `rest` instructions of its rule that a failing check
/// jumps over.
fn condition_code(condition: &Condition, rest: usize) -> Result<Program, String> {
    let at = ARGS_AT + 8 * u32::from(condition.arg);
    let (low, high) = (at + HALVES.0, at + HALVES.1);
    // From the jump at `from` of a check `len` long: past the rest of the rule.
    let fail = |from: usize, len: usize| {
        u8::try_from(len + rest - (from + 1))
            .map_err(|_| "a seccomp rule is too long to jump over".to_string())
    };
    Ok(match condition.check {
        Check::Eq(value) => vec![
            statement(LOAD_WORD, low),
            jump(JUMP_EQ, value, 0, fail(1, 2)?),
        ],
        Check::Ne(value) => vec![
            statement(LOAD_WORD, low),
            jump(JUMP_EQ, value, fail(1, 2)?, 0),
        ],
        Check::MaskedEq { mask, value } => vec![
            statement(LOAD_WORD, low),
            statement(AND, mask),
            jump(JUMP_EQ, value, 0, fail(2, 3)?),
        ],
        // Holds at once when the low half is not 0; else when the high half is not.
        Check::NonZero => vec![
            statement(LOAD_WORD, low),
            jump(JUMP_EQ, 0, 0, 2),
            statement(LOAD_WORD, high),
            jump(JUMP_EQ, 0, fail(3, 4)?, 0),
        ],
    })
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

    /// Runs one program the way the kernel does (for the instructions the filter is made of).
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
                JUMP_EQ | JUMP_GE => pc += conditional_jump(ins, accumulator),
                RETURN => return ins.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    /// How far a `JEQ` or `JGE` instruction jumps with `accumulator`.
    fn conditional_jump(ins: Instruction, accumulator: u32) -> usize {
        let taken = match ins.code {
            JUMP_EQ => accumulator == ins.k,
            _ => accumulator >= ins.k,
        };
        usize::from(if taken { ins.jt } else { ins.jf })
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
            arch: OURS,
            nr: nr as u32,
            args,
        }
    }

    /// This architecture's `AUDIT_ARCH_*`.
    const OURS: u32 = match AUDIT_ARCH {
        Some(arch) => arch,
        None => 0,
    };

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    /// System call numbers with argument checks or an own verdict, per network setting.
    fn special(network: Network) -> Vec<i64> {
        let mut numbers = vec![
            libc::SYS_clone,
            libc::SYS_clone3,
            libc::SYS_ioctl,
            SYS_OPENAT2,
        ];
        numbers.extend(MODE_SETTING.iter().map(|&(nr, _, _)| nr));
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
    fn set_id_bits_are_refused_in_every_call_that_sets_a_mode() {
        let suid = libc::S_ISUID as u64;
        let sgid = libc::S_ISGID as u64;
        let creat = libc::O_CREAT as u64;
        let tmpfile = libc::O_TMPFILE as u64;
        for network in [Network::Off, Network::On, Network::Proxy(3128)] {
            let programs = compile(network).unwrap();
            for &(nr, mode_at, flags_at) in MODE_SETTING {
                let with = |mode: u64, flags: u64| {
                    let mut args = [0u64; 6];
                    args[mode_at as usize] = mode;
                    if let Some(at) = flags_at {
                        args[at as usize] = flags;
                    }
                    run(&programs, &call(nr, args))
                };
                for creating in [creat, tmpfile | libc::O_RDWR as u64] {
                    for mode in [suid | 0o755, sgid | 0o755, suid | sgid | 0o4777, 0o6000] {
                        assert_eq!(with(mode, creating), EPERM, "nr {nr} mode {mode:o}");
                        // High bits of the argument do not hide the low ones.
                        assert_eq!(with(mode | 0xffff_0000_0000_0000, creating), EPERM);
                    }
                    for mode in [0o755, 0o1777, 0o777, 0] {
                        assert_eq!(with(mode, creating), ALLOW, "nr {nr} mode {mode:o}");
                    }
                }
                if flags_at.is_some() {
                    // Without O_CREAT/O_TMPFILE the mode argument is not read: not refused.
                    assert_eq!(with(suid | 0o755, libc::O_RDONLY as u64), ALLOW, "nr {nr}");
                }
            }
            assert_eq!(run(&programs, &call(SYS_OPENAT2, [0; 6])), ENOSYS);
            let unsupported = libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32;
            let fallocate = |mode: u64| {
                run(
                    &programs,
                    &call(libc::SYS_fallocate, [3, mode, 0, 1 << 30, 0, 0]),
                )
            };
            for mode in [0x01, 0x01 | 0x10, 0x01 | 0x0100_0000_0000] {
                assert_eq!(fallocate(mode), unsupported, "mode {mode:#x}");
            }
            assert_eq!(fallocate(0x20), unsupported, "insert range");
            // Growing the file (checked against RLIMIT_FSIZE), punching holes, collapsing and
            // zeroing ranges stay allowed.
            for mode in [0x00, 0x01 | 0x02, 0x10, 0x08] {
                assert_eq!(fallocate(mode), ALLOW, "mode {mode:#x}");
            }
        }
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
            let seqpacket = (libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC) as u64;
            for call_nr in [libc::SYS_socket, libc::SYS_socketpair] {
                assert_eq!(
                    run(programs, &call(call_nr, [unix, seqpacket, 0, 0, 0, 0])),
                    ALLOW
                );
                for kind in [
                    libc::SOCK_DGRAM,
                    libc::SOCK_RAW,
                    libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                ] {
                    assert_eq!(
                        run(programs, &call(call_nr, [unix, kind as u64, 0, 0, 0, 0])),
                        refused,
                        "a unix datagram socket ({call_nr}, {kind})"
                    );
                }
            }
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
        // No unix socket can be made to connect with (pairs only, and no datagram pairs).
        for kind in [libc::SOCK_STREAM, libc::SOCK_DGRAM, libc::SOCK_SEQPACKET] {
            assert_eq!(socket(libc::AF_UNIX, kind), EPERM, "unix {kind}");
        }
        let pair = |kind: i32| {
            run(
                &programs,
                &call(
                    libc::SYS_socketpair,
                    [libc::AF_UNIX as u64, kind as u64, 0, 0, 0, 0],
                ),
            )
        };
        assert_eq!(pair(libc::SOCK_STREAM), ALLOW);
        assert_eq!(pair(libc::SOCK_SEQPACKET), ALLOW);
        assert_eq!(pair(libc::SOCK_DGRAM), EPERM);
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

    /// How many instructions the kernel runs for `nr` when it builds its cache of the numbers a
    /// filter always allows (`seccomp_cache_prepare`): it follows the program while it knows
    /// the data (the number and the architecture) and stops at an argument or a return.
    fn cache_walk(program: &[Instruction], nr: u32) -> usize {
        let mut accumulator = 0u32;
        let mut pc = 0usize;
        for steps in 1.. {
            let ins = program[pc];
            pc += 1;
            match ins.code {
                LOAD_WORD if ins.k == NR_AT => accumulator = nr,
                LOAD_WORD if ins.k == ARCH_AT => accumulator = OURS,
                JUMP_ALWAYS => pc += ins.k as usize,
                JUMP_EQ | JUMP_GE => pc += conditional_jump(ins, accumulator),
                _ => return steps, // an argument, or a verdict
            }
        }
        unreachable!()
    }

    #[test]
    fn every_number_is_decided_in_a_few_instructions() {
        for network in [Network::Off, Network::On, Network::Proxy(3128)] {
            for x32 in [false, true] {
                let programs = programs(network, x32).unwrap();
                let program = &programs[0];
                let longest = (0..1024u32)
                    .chain((0..1024u32).map(|nr| nr | 0x4000_0000))
                    .map(|nr| cache_walk(program, nr))
                    .max()
                    .unwrap();
                // Architecture check (3) + the number (1) + the search (2 per level, about 6
                // levels, and up to 4 comparisons at a leaf) + a verdict: a linear filter took
                // over 100 (240 with x32).
                assert!(
                    longest <= 24,
                    "{network:?} x32 {x32}: {longest} instructions"
                );
                assert!(program.len() < MAX_INSTRUCTIONS);
            }
        }
    }

    /// The verdict `rules` give a call, read straight from them.
    fn expected(rules: &Rules, call: &Call) -> u32 {
        let Some(refusal) = rules.get(&i64::from(call.nr)) else {
            return ALLOW;
        };
        let holds = |condition: &Condition| {
            let arg = call.args[usize::from(condition.arg)];
            let low = arg as u32;
            match condition.check {
                Check::Eq(value) => low == value,
                Check::Ne(value) => low != value,
                Check::MaskedEq { mask, value } => low & mask == value,
                Check::NonZero => arg != 0,
            }
        };
        let refused = match &refusal.when {
            When::Always => true,
            When::AnyOf(rules) => rules.iter().any(|rule| rule.iter().all(holds)),
        };
        if refused {
            libc::SECCOMP_RET_ERRNO | refusal.errno as u32
        } else {
            ALLOW
        }
    }

    #[test]
    fn the_program_gives_every_call_the_verdict_of_its_rules() {
        // xorshift: the same arguments every run.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Values the rules compare with, and their neighbours in both halves.
        let interesting: Vec<u64> = [0u64, 1, 2, 3, 5, 10, 16, 0x80, 0x2000_0000, 0x5412, 0x541c]
            .iter()
            .flat_map(|&v| [v, v | 0x1_0000_0000, v.wrapping_sub(1)])
            .chain(NAMESPACE_FLAGS.iter().map(|&flag| flag as u64))
            .collect();
        for network in [Network::Off, Network::On, Network::Proxy(3128)] {
            for x32 in [false, true] {
                let mut rules = main_rules(network);
                rules.insert(libc::SYS_clone3, always(libc::ENOSYS));
                let rules = aliased(rules, x32);
                let program = assemble(&rules).unwrap();
                let numbers: Vec<u32> = (0..1024u32)
                    .chain(rules.keys().map(|&nr| nr as u32))
                    .chain(rules.keys().map(|&nr| nr as u32 + 1))
                    .chain(rules.keys().map(|&nr| (nr as u32).wrapping_sub(1)))
                    .collect();
                for nr in numbers {
                    let rounds = if rules.contains_key(&i64::from(nr)) {
                        400
                    } else {
                        2
                    };
                    for _ in 0..rounds {
                        let mut args = [0u64; 6];
                        for arg in &mut args {
                            *arg = match next() % 3 {
                                0 => interesting[(next() % interesting.len() as u64) as usize],
                                1 => next() & 0xffff,
                                _ => next(),
                            };
                        }
                        let call = call(i64::from(nr), args);
                        assert_eq!(
                            run_one(&program, &call),
                            expected(&rules, &call),
                            "{network:?} x32 {x32} nr {nr:#x} args {args:x?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_rule_too_long_to_jump_over_is_refused() {
        let long = vec![condition(0, Check::Ne(1)); 130];
        let rules = Rules::from([(libc::SYS_socket, refused_when(vec![long]))]);
        let err = assemble(&rules).unwrap_err();
        assert!(err.contains("too long"), "{err}");
    }
}
