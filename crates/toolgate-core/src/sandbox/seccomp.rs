//! The seccomp part of the sandbox: system calls a sandboxed process gets an error for.
//!
//! Errors, never a kill, so a program reports its own failure: `EPERM` for what is refused,
//! `ENOSYS` for `clone3` (its flags sit in memory a filter cannot read, so libc is told the call
//! does not exist and falls back to `clone`, whose flags are checked). The programs are compiled
//! once per prepared sandbox and handed to the launcher as hex, so a call pays only for loading.

use std::collections::BTreeMap;

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
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

/// Namespace flags refused on `clone`.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    0x80, // CLONE_NEWTIME
];

/// Terminal ioctls that inject input into, or act on, the terminal of someone else.
// The casts are needed for musl, whose libc crate declares these request numbers as `c_int`
// (glibc: `c_ulong`); both values are small positive constants.
#[allow(clippy::unnecessary_cast)]
const DENIED_IOCTLS: &[u64] = &[libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// On x86_64 the x32 ABI reaches the same system calls with this bit set, where the kernel
/// has it enabled; there every refused number is refused in that form too. (Most kernels have
/// it off; the aliases double the filter, which the kernel then checks and caches per call.)
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The two compiled filters: the main one (`EPERM`) and the `clone3` one (`ENOSYS`).
pub(crate) fn compile(network: bool) -> Result<Vec<BpfProgram>, String> {
    let x32 = x32_enabled();
    let main = build(aliased(main_rules(network)?, x32), libc::EPERM)?;
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    let clone3 = build(aliased(clone3, x32), libc::ENOSYS)?;
    Ok(vec![main, clone3])
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

fn main_rules(network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
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
    if !network {
        // Only unix sockets can be made (UDP is not covered by Landlock before ABI 10), and
        // none can connect: a path or abstract unix socket of a host service (a container
        // daemon, a session bus) is as much "outside" as a TCP port is.
        let not_unix = rule(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
        rules.insert(libc::SYS_socket, vec![not_unix.clone()]);
        rules.insert(libc::SYS_socketpair, vec![not_unix]);
        rules.insert(libc::SYS_connect, Vec::new());
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

fn rule(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, String> {
    let condition = SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
        .map_err(|err| err.to_string())?;
    SeccompRule::new(vec![condition]).map_err(|err| err.to_string())
}

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

fn build(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, String> {
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
    filter
        .try_into()
        .map_err(|err: seccompiler::BackendError| err.to_string())
}

/// A compiled program as hex, 16 digits per instruction (code, jt, jf, k; little endian).
pub(crate) fn encode(program: &[sock_filter]) -> String {
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
pub(crate) fn decode(text: &[u8]) -> Option<BpfProgram> {
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
            Some(sock_filter {
                code: u16::from_le_bytes([bytes[0], bytes[1]]),
                jt: bytes[2],
                jf: bytes[3],
                k: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_compile_and_survive_the_hex_round_trip() {
        for network in [false, true] {
            let programs = compile(network).unwrap();
            assert_eq!(programs.len(), 2);
            for program in programs {
                let text = encode(&program);
                let back = decode(text.as_bytes()).unwrap();
                assert_eq!(back.len(), program.len());
                for (a, b) in back.iter().zip(&program) {
                    assert_eq!((a.code, a.jt, a.jf, a.k), (b.code, b.jt, b.jf, b.k));
                }
            }
        }
        assert!(decode(b"").is_none());
        assert!(decode(b"0123").is_none());
        assert!(decode(b"zz00000000000000").is_none());
    }

    #[test]
    fn network_rules_exist_only_without_network() {
        let closed = main_rules(false).unwrap();
        let open = main_rules(true).unwrap();
        for nr in [libc::SYS_socket, libc::SYS_connect, libc::SYS_socketpair] {
            assert!(closed.contains_key(&nr));
            assert!(!open.contains_key(&nr));
        }
        for rules in [&closed, &open] {
            assert!(rules[&libc::SYS_ptrace].is_empty(), "unconditional");
            assert_eq!(rules[&libc::SYS_clone].len(), NAMESPACE_FLAGS.len());
        }
        #[cfg(target_arch = "x86_64")]
        {
            let aliased = aliased(closed.clone(), true);
            assert!(aliased.contains_key(&(libc::SYS_ptrace | X32_SYSCALL_BIT)));
            assert!(aliased.contains_key(&(521 | X32_SYSCALL_BIT)), "x32 ptrace");
            assert_eq!(super::aliased(closed.clone(), false), closed);
        }
    }
}
