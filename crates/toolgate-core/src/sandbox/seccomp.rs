//! The seccomp part of the sandbox: system calls a sandboxed process gets an error for.
//!
//! Errors, never a kill, so a program reports its own failure: `EPERM` for what is refused,
//! `ENOSYS` for `clone3` (its flags sit in memory a filter cannot read, so libc is told the call
//! does not exist and falls back to `clone`, whose flags are checked). Only another
//! architecture's system calls (a 32-bit program, `int 0x80`) kill the process.
//!
//! The filter is compiled here rather than by a generic compiler because its shape is most of
//! its cost: when a filter is installed the kernel runs it for every system call number to
//! find the ones it always allows (its per-filter cache), and a chain of comparisons makes
//! that hundreds of thousands of steps (≈ 0.2 ms per call on a small VM). This one is a binary
//! search over ranges of system call numbers (≈ 7 comparisons per number), one program with a
//! few short argument checks at its leaves. It is compiled once per prepared sandbox.

use std::collections::BTreeMap;

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
    libc::SYS_kexec_file_load,
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
const NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP
    | 0x80) as u32;

/// Terminal ioctls that inject input into, or act on, the terminal of someone else. (The
/// kernel takes an ioctl's request as 32 bits, so the low half of the argument is the request.)
const DENIED_IOCTLS: [u32; 2] = [libc::TIOCSTI as u32, libc::TIOCLINUX as u32];

/// On x86_64 the x32 ABI reaches the same system calls with this bit set, where the kernel has
/// it enabled. Every x32 call is refused: nothing toolgate runs is an x32 program.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The architecture a filter accepts (`AUDIT_ARCH_*`); others are killed.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xc000_00f3;

/// One instruction of a classic BPF program.
pub(crate) type Instruction = libc::sock_filter;
/// A compiled filter.
pub(crate) type Program = Vec<Instruction>;

/// What the filter does with a system call number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allow,
    Deny,
    NoSys,
    Check(Check),
}

/// The argument checks of the calls allowed only with some arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// `clone` without namespace flags.
    CloneFlags,
    /// `ioctl` but not `TIOCSTI`/`TIOCLINUX`.
    Ioctl,
    /// `socket`/`socketpair` of `AF_UNIX` only.
    UnixDomain,
    /// `sendto` without an address.
    Unaddressed,
}

/// The verdict of every system call number that is not simply allowed.
fn verdicts(network: bool) -> BTreeMap<u32, Verdict> {
    let mut map: BTreeMap<u32, Verdict> = DENIED
        .iter()
        .map(|&nr| (nr as u32, Verdict::Deny))
        .collect();
    map.insert(libc::SYS_clone as u32, Verdict::Check(Check::CloneFlags));
    map.insert(libc::SYS_clone3 as u32, Verdict::NoSys);
    map.insert(libc::SYS_ioctl as u32, Verdict::Check(Check::Ioctl));
    if !network {
        // Only unix sockets can be made (UDP is not covered by Landlock before ABI 10), and
        // none can connect: a path or abstract unix socket of a host service (a container
        // daemon, a session bus) is as much "outside" as a TCP port is.
        map.insert(libc::SYS_socket as u32, Verdict::Check(Check::UnixDomain));
        map.insert(
            libc::SYS_socketpair as u32,
            Verdict::Check(Check::UnixDomain),
        );
        map.insert(libc::SYS_connect as u32, Verdict::Deny);
        map.insert(libc::SYS_sendto as u32, Verdict::Check(Check::Unaddressed));
    }
    map
}

/// The whole number space as ranges `(first number, verdict)`, each up to the next's start.
fn ranges(network: bool) -> Vec<(u32, Verdict)> {
    let mut ranges = vec![(0, Verdict::Allow)];
    let mut push = |start: u32, verdict: Verdict| {
        if ranges.last().is_some_and(|&(_, last)| last == verdict) {
            return;
        }
        if ranges
            .last()
            .is_some_and(|&(last_start, _)| last_start == start)
        {
            ranges.pop();
            if ranges.last().is_some_and(|&(_, last)| last == verdict) {
                return;
            }
        }
        ranges.push((start, verdict));
    };
    for (nr, verdict) in verdicts(network) {
        push(nr, verdict);
        push(nr + 1, Verdict::Allow);
    }
    #[cfg(target_arch = "x86_64")]
    {
        push(X32_SYSCALL_BIT, Verdict::Deny);
        // Above, numbers no ABI has (`syscall(-1)`): the kernel answers ENOSYS itself.
        push(0x8000_0000, Verdict::Allow);
    }
    ranges
}

// Classic BPF opcodes (linux/bpf_common.h) and offsets in `struct seccomp_data`.
const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JUMP_EQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JUMP_GE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JUMP_SET: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RETURN: u16 = 0x06; // BPF_RET | BPF_K
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

/// The low 32 bits of argument `index` (all supported architectures are little endian).
const fn arg_low(index: u32) -> u32 {
    16 + 8 * index
}

/// Where a jump goes, resolved once the program's layout is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    At(usize),
    Next,
    Return(Return),
    Check(Check),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Return {
    Allow,
    Deny,
    NoSys,
    Kill,
}

enum Op {
    Load(u32),
    Jump {
        code: u16,
        k: u32,
        yes: Label,
        no: Label,
    },
    Return(Return),
}

fn verdict_label(verdict: Verdict) -> Label {
    match verdict {
        Verdict::Allow => Label::Return(Return::Allow),
        Verdict::Deny => Label::Return(Return::Deny),
        Verdict::NoSys => Label::Return(Return::NoSys),
        Verdict::Check(check) => Label::Check(check),
    }
}

/// Emits a binary search over `ranges` (the system call number is loaded) and returns where
/// it starts; a single range is its verdict, with no code.
fn search(ranges: &[(u32, Verdict)], code: &mut Vec<Op>) -> Label {
    if let [(_, verdict)] = ranges {
        return verdict_label(*verdict);
    }
    let middle = ranges.len() / 2;
    let at = code.len();
    code.push(Op::Return(Return::Kill)); // replaced below, once both halves are placed
    let below = search(&ranges[..middle], code);
    let above = search(&ranges[middle..], code);
    code[at] = Op::Jump {
        code: JUMP_GE,
        k: ranges[middle].0,
        yes: above,
        no: below,
    };
    Label::At(at)
}

fn check_code(check: Check) -> Vec<Op> {
    let deny = Label::Return(Return::Deny);
    let allow = Label::Return(Return::Allow);
    let jump = |code, k, yes, no| Op::Jump { code, k, yes, no };
    match check {
        Check::CloneFlags => vec![
            Op::Load(arg_low(0)),
            jump(JUMP_SET, NAMESPACE_FLAGS, deny, allow),
        ],
        Check::Ioctl => vec![
            Op::Load(arg_low(1)),
            jump(JUMP_EQ, DENIED_IOCTLS[0], deny, Label::Next),
            jump(JUMP_EQ, DENIED_IOCTLS[1], deny, allow),
        ],
        Check::UnixDomain => vec![
            Op::Load(arg_low(0)),
            jump(JUMP_EQ, libc::AF_UNIX as u32, allow, deny),
        ],
        // The address is a pointer: both halves must be zero.
        Check::Unaddressed => vec![
            Op::Load(arg_low(4)),
            jump(JUMP_EQ, 0, Label::Next, deny),
            Op::Load(arg_low(4) + 4),
            jump(JUMP_EQ, 0, allow, deny),
        ],
    }
}

/// The filter for a sandbox with or without network access.
pub(crate) fn compile(network: bool) -> Result<Program, String> {
    let mut code = vec![
        Op::Load(ARCH_OFFSET),
        Op::Jump {
            code: JUMP_EQ,
            k: AUDIT_ARCH,
            yes: Label::Next,
            no: Label::Return(Return::Kill),
        },
        Op::Load(NR_OFFSET),
    ];
    let ranges = ranges(network);
    let start = search(&ranges, &mut code);
    debug_assert_eq!(start, Label::At(3));
    let mut checks: Vec<(Check, usize)> = Vec::new();
    for &(_, verdict) in &ranges {
        if let Verdict::Check(check) = verdict {
            if !checks.iter().any(|(known, _)| *known == check) {
                checks.push((check, code.len()));
                code.extend(check_code(check));
            }
        }
    }
    let returns: Vec<(Return, usize)> = [Return::Allow, Return::Deny, Return::NoSys, Return::Kill]
        .into_iter()
        .enumerate()
        .map(|(index, ret)| (ret, code.len() + index))
        .collect();
    code.extend(returns.iter().map(|&(ret, _)| Op::Return(ret)));

    let position = |label: Label, from: usize| -> Result<u8, String> {
        let target = match label {
            Label::At(at) => at,
            Label::Next => from + 1,
            Label::Return(ret) => returns
                .iter()
                .find(|(r, _)| *r == ret)
                .map(|(_, at)| *at)
                .ok_or("a return is missing")?,
            Label::Check(check) => checks
                .iter()
                .find(|(c, _)| *c == check)
                .map(|(_, at)| *at)
                .ok_or("a check is missing")?,
        };
        target
            .checked_sub(from + 1)
            .and_then(|offset| u8::try_from(offset).ok())
            .ok_or_else(|| {
                format!("the seccomp filter has a jump out of reach ({from} to {target})")
            })
    };
    code.iter()
        .enumerate()
        .map(|(at, op)| {
            Ok(match *op {
                Op::Load(offset) => instruction(LOAD_WORD, 0, 0, offset),
                Op::Jump { code, k, yes, no } => {
                    instruction(code, position(yes, at)?, position(no, at)?, k)
                }
                Op::Return(ret) => instruction(RETURN, 0, 0, return_value(ret)),
            })
        })
        .collect()
}

fn return_value(ret: Return) -> u32 {
    match ret {
        Return::Allow => libc::SECCOMP_RET_ALLOW,
        Return::Deny => libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        Return::NoSys => libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        Return::Kill => libc::SECCOMP_RET_KILL_PROCESS,
    }
}

fn instruction(code: u16, jt: u8, jf: u8, k: u32) -> Instruction {
    Instruction { code, jt, jf, k }
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

/// A compiled program as hex, 16 digits per instruction (code, jt, jf, k; little endian).
pub(crate) fn encode(program: &[Instruction]) -> String {
    let mut text = String::with_capacity(program.len() * 16);
    for instruction in program {
        let mut bytes = [0u8; 8];
        bytes[..2].copy_from_slice(&instruction.code.to_le_bytes());
        bytes[2] = instruction.jt;
        bytes[3] = instruction.jf;
        bytes[4..].copy_from_slice(&instruction.k.to_le_bytes());
        for byte in bytes {
            text.push(char::from(HEX[usize::from(byte >> 4)]));
            text.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    text
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The inverse of [`encode`]; `None` for text that is not a whole program.
pub(crate) fn decode(text: &[u8]) -> Option<Program> {
    if text.is_empty() || text.len() % 16 != 0 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    text.chunks_exact(16)
        .map(|chunk| {
            let mut bytes = [0u8; 8];
            for (byte, pair) in bytes.iter_mut().zip(chunk.chunks_exact(2)) {
                *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
            }
            Some(instruction(
                u16::from_le_bytes([bytes[0], bytes[1]]),
                bytes[2],
                bytes[3],
                u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            ))
        })
        .collect()
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

    /// Runs `program` the way the kernel does, for the instructions this compiler emits.
    fn run(program: &[Instruction], call: &Call) -> u32 {
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
                JUMP_EQ | JUMP_GE | JUMP_SET => {
                    let taken = match ins.code {
                        JUMP_EQ => accumulator == ins.k,
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

    fn call(nr: i64, args: [u64; 6]) -> Call {
        Call {
            arch: AUDIT_ARCH,
            nr: nr as u32,
            args,
        }
    }

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    #[test]
    fn every_system_call_number_gets_its_verdict() {
        for network in [false, true] {
            let program = compile(network).unwrap();
            let verdicts = verdicts(network);
            for nr in 0..1024u32 {
                let expected = match verdicts.get(&nr) {
                    None => ALLOW,
                    Some(Verdict::Deny) => EPERM,
                    Some(Verdict::NoSys) => ENOSYS,
                    Some(Verdict::Allow | Verdict::Check(_)) => continue,
                };
                assert_eq!(
                    run(&program, &call(i64::from(nr), [0; 6])),
                    expected,
                    "nr {nr}"
                );
            }
            for &nr in DENIED {
                assert_eq!(run(&program, &call(nr, [0; 6])), EPERM, "denied {nr}");
            }
            // Another architecture is killed.
            let foreign = Call {
                arch: 0x4000_0003,
                nr: 1,
                args: [0; 6],
            };
            assert_eq!(run(&program, &foreign), libc::SECCOMP_RET_KILL_PROCESS);
            #[cfg(target_arch = "x86_64")]
            {
                for nr in [0, 39, 101, 521, 1023] {
                    let x32 = call(i64::from(X32_SYSCALL_BIT | nr), [0; 6]);
                    assert_eq!(run(&program, &x32), EPERM, "x32 {nr}");
                }
                assert_eq!(run(&program, &call(-1, [0; 6])), ALLOW, "unknown numbers");
            }
        }
    }

    #[test]
    fn argument_checks_refuse_exactly_what_they_name() {
        let closed = compile(false).unwrap();
        let open = compile(true).unwrap();
        let clone = libc::SYS_clone;
        let thread_flags = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        for program in [&closed, &open] {
            assert_eq!(
                run(program, &call(clone, [thread_flags, 0, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(
                run(program, &call(clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0])),
                ALLOW
            );
            for flag in [
                libc::CLONE_NEWNS,
                libc::CLONE_NEWUSER,
                libc::CLONE_NEWPID,
                libc::CLONE_NEWNET,
                libc::CLONE_NEWIPC,
                libc::CLONE_NEWUTS,
                libc::CLONE_NEWCGROUP,
            ] {
                let flags = flag as u64 | libc::SIGCHLD as u64;
                assert_eq!(
                    run(program, &call(clone, [flags, 0, 0, 0, 0, 0])),
                    EPERM,
                    "{flag:#x}"
                );
            }
            let ioctl = libc::SYS_ioctl;
            for request in DENIED_IOCTLS {
                let high_bits = u64::from(request) | 0xffff_ffff_0000_0000;
                for value in [u64::from(request), high_bits] {
                    assert_eq!(run(program, &call(ioctl, [1, value, 0, 0, 0, 0])), EPERM);
                }
            }
            assert_eq!(
                run(program, &call(ioctl, [1, libc::TIOCGWINSZ, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(run(program, &call(libc::SYS_clone3, [0; 6])), ENOSYS);
        }
        let unix = libc::AF_UNIX as u64;
        let inet = libc::AF_INET as u64;
        let some_address = [3, 0, 0, 0, 0x7fff_0000_1000, 16];
        let high_address = [3, 0, 0, 0, 0x7fff_0000_0000, 16];
        for (program, network) in [(&closed, false), (&open, true)] {
            let refused = if network { ALLOW } else { EPERM };
            assert_eq!(
                run(program, &call(libc::SYS_socket, [unix, 1, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(
                run(program, &call(libc::SYS_socket, [inet, 1, 0, 0, 0, 0])),
                refused
            );
            assert_eq!(
                run(program, &call(libc::SYS_socketpair, [inet, 1, 0, 0, 0, 0])),
                refused
            );
            assert_eq!(
                run(program, &call(libc::SYS_connect, [3, 0, 0, 0, 0, 0])),
                refused
            );
            assert_eq!(
                run(program, &call(libc::SYS_sendto, [3, 0, 0, 0, 0, 0])),
                ALLOW
            );
            assert_eq!(run(program, &call(libc::SYS_sendto, some_address)), refused);
            assert_eq!(run(program, &call(libc::SYS_sendto, high_address)), refused);
        }
    }

    #[test]
    fn the_filter_is_a_short_search() {
        for network in [false, true] {
            let program = compile(network).unwrap();
            assert!(program.len() < 160, "{} instructions", program.len());
            let text = encode(&program);
            let back = decode(text.as_bytes()).unwrap();
            assert_eq!(back.len(), program.len());
            for (a, b) in back.iter().zip(&program) {
                assert_eq!((a.code, a.jt, a.jf, a.k), (b.code, b.jt, b.jf, b.k));
            }
        }
        assert!(decode(b"").is_none());
        assert!(decode(b"0123").is_none());
        assert!(decode(b"zz00000000000000").is_none());
    }
}
