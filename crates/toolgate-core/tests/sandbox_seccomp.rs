//! The seccomp filter as the kernel runs it: every refused system call and every argument
//! check, made for real by a program in the sandbox, under each network setting. Each call is
//! also made outside the sandbox, where it must fail differently (or succeed): an `EPERM`
//! inside then is the filter's, not a missing capability's. The filter's program is checked
//! against its rules in `toolgate-sandbox` (an interpreter, every number); this checks that the
//! kernel reads it the same way (offsets, halves of an argument, jumps).

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod common;

use std::collections::BTreeMap;

use common::{installed, text, Fixture};
use toolgate_core::exec::{self, env, ExecRequest};
use toolgate_core::sandbox::NetworkMode;

/// The calls, with arguments that do nothing where they are allowed (bad descriptors, null
/// pointers, impossible values) and are safe for a root process outside the sandbox. Prints
/// `name result errno` per call.
const CALLS: &str = r#"
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
null = os.open('/dev/null', os.O_RDONLY)
pair_fds = (ctypes.c_int * 2)()
pair = ctypes.addressof(pair_fds)
def call(name, nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(L(nr), *[L(a) for a in args])
    print(name, 0 if rc >= 0 else rc, errno.errorcode.get(ctypes.get_errno(), 'none') if rc < 0 else 'none')
    if rc > 2 and name.startswith('socket'):
        os.close(rc)
nobody = 0x3ffffe
call('ptrace', 101, 2, nobody, 0, 0)
call('process_vm_readv', 310, nobody, 0, 0, 0, 0, 0)
call('process_vm_writev', 311, nobody, 0, 0, 0, 0, 0)
call('add_key', 248, 0, 0, 0, 0, 0)
call('request_key', 249, 0, 0, 0, 0)
call('unshare_nothing', 272, 0)
call('setns', 308, -1, 0)
call('umount2', 166, 0, 0)
call('chroot', 161, 0)
call('perf_event_open', 298, 0, 0, -1, -1, 0)
call('userfaultfd', 323, -1)
call('io_uring_setup', 425, 1, 0)
call('io_uring_enter', 426, -1, 0, 0, 0, 0, 0)
call('io_uring_register', 427, -1, 0, 0, 0)
call('finit_module', 313, -1, 0, 0)
call('delete_module', 176, 0, 0)
call('swapoff', 168, 0)
call('clock_settime', 227, 0, 0)
call('fanotify_init', 300, -1, 0)
call('open_by_handle_at', 304, -1, 0, 0)
call('ioperm', 173, 0x10000, 1, 0)
call('clone3', 435, 0, 0)
call('socket_inet_stream', 41, 2, 1, 0)
call('socket_inet6_dgram', 41, 10, 2, 0)
call('socket_netlink', 41, 16, 3, 0)
call('socket_unix', 41, 1, 1, 0)
call('socketpair_inet', 53, 2, 1, 0, 0)
call('socket_unix_dgram', 41, 1, 2, 0)
call('socket_unix_raw', 41, 1, 3 | 0x80000, 0)
call('socketpair_unix_dgram', 53, 1, 2, 0, pair)
call('socketpair_unix_stream', 53, 1, 1, 0, pair)
call('connect', 42, -1, 0, 0)
call('sendto_address_low', 44, -1, 0, 0, 0, 0x10, 16)
call('sendto_address_high', 44, -1, 0, 0, 0, 0x7fff00000000, 16)
call('sendto_no_address', 44, -1, 0, 0, 0, 0, 0)
call('ioctl_tiocsti', 16, null, 0x5412, 0)
call('ioctl_tiocsti_high_bits', 16, null, 0xffffffff00005412, 0)
call('ioctl_tioclinux', 16, null, 0x541c, 0)
call('ioctl_tiocsetd', 16, null, 0x5423, 0)
call('ioctl_tiocspgrp', 16, null, 0x5410, 0)
call('ioctl_tiocgwinsz', 16, null, 0x5413, 0)
"#;

/// What the filter answers each call with under `network`: `None` where it lets the call
/// through.
fn refusal(name: &str, network: NetworkMode) -> Option<&'static str> {
    let refused_network = network == NetworkMode::Off;
    match name {
        "clone3" => Some("ENOSYS"),
        "socket_unix" | "socketpair_unix_stream" | "sendto_no_address" | "ioctl_tiocgwinsz" => None,
        "socket_inet_stream"
        | "socket_netlink"
        | "socketpair_inet"
        | "socket_unix_dgram"
        | "socket_unix_raw"
        | "socketpair_unix_dgram"
        | "connect"
        | "sendto_address_low"
        | "sendto_address_high"
        | "socket_inet6_dgram" => refused_network.then_some("EPERM"),
        _ => Some("EPERM"),
    }
}

fn results(out: &[u8]) -> BTreeMap<String, (String, String)> {
    text(out)
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            (
                parts[0].to_string(),
                (parts[1].to_string(), parts[2].to_string()),
            )
        })
        .collect()
}

async fn run(f: &Fixture, sandboxed: Option<NetworkMode>) -> BTreeMap<String, (String, String)> {
    let request = match sandboxed {
        Some(network) => {
            let mut policy = f.policy();
            policy.network = network;
            f.request_with(policy, "/usr/bin/python3", &["-c", CALLS])
        }
        None => ExecRequest::new("/usr/bin/python3", &f.work)
            .args(["-c", CALLS])
            .env(env::child_environment(&[])),
    };
    let out = exec::run(request).await.unwrap();
    assert!(out.success(), "{}", text(&out.stderr));
    let results = results(&out.stdout);
    assert_eq!(
        results.len(),
        CALLS.matches("\ncall(").count(),
        "{results:?}"
    );
    results
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kernel_gives_every_call_the_filters_answer() {
    if !installed("/usr/bin/python3") {
        eprintln!("python3 is not installed: the seccomp calls are not made");
        return;
    }
    let f = Fixture::new();
    let outside = run(&f, None).await;
    for network in [NetworkMode::Off, NetworkMode::On] {
        let inside = run(&f, Some(network)).await;
        let (mut refused, mut proven) = (0, 0);
        for (name, (_, errno)) in &inside {
            let (_, outside_errno) = &outside[name];
            match refusal(name, network) {
                Some(expected) => {
                    assert_eq!(errno, expected, "{network:?} {name}: {inside:?}");
                    refused += 1;
                    // Outside the sandbox the same call fails otherwise or succeeds (as root;
                    // without root some fail with EPERM there too, and prove nothing): the
                    // answer inside is the filter's.
                    proven += usize::from(outside_errno != expected);
                }
                None => assert_ne!(errno, "EPERM", "{network:?} {name}: {inside:?}"),
            }
        }
        let minimum = if is_root() { refused } else { refused.min(12) };
        assert!(
            proven >= minimum,
            "{network:?}: only {proven} refusals differ from outside: {outside:?}"
        );
    }
}

/// Whether this test runs as root (where every refused call fails otherwise outside).
fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Every way of giving a file a set-user-ID or set-group-ID bit, made by a program in the
/// sandbox on files in its work directory (which outlive the call and are owned by toolgate's
/// user): each fails with `EPERM` and leaves no such bit; the same modes without those bits
/// work. Prints `name errno-or-ok` per call.
const SET_ID_CALLS: &str = r#"
import ctypes, errno, os, stat
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
AT_FDCWD = -100
def call(name, nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(L(nr), *[a if isinstance(a, bytes) else L(a) for a in args])
    print(name, 'ok' if rc >= 0 else errno.errorcode.get(ctypes.get_errno(), '?'))
    if rc > 2 and name.startswith(('open', 'creat')):
        os.close(rc)
for name in ('a', 'b', 'c', 'd'):
    open(name, 'w').close()
fd = os.open('b', os.O_RDONLY)
call('chmod_suid', 90, b'a', 0o4755)
call('chmod_sgid', 90, b'a', 0o2755)
call('fchmod_suid', 91, fd, 0o4755)
call('fchmodat_sgid', 268, AT_FDCWD, b'c', 0o2711)
call('fchmodat2_suid', 452, AT_FDCWD, b'd', 0o4700, 0)
call('open_creat_suid', 2, b'e', os.O_CREAT | os.O_WRONLY, 0o4755)
call('openat_creat_sgid', 257, AT_FDCWD, b'f', os.O_CREAT | os.O_WRONLY, 0o2755)
call('openat_tmpfile_suid', 257, AT_FDCWD, b'.', os.O_TMPFILE | os.O_RDWR, 0o4755)
call('creat_suid', 85, b'g', 0o4755)
call('mknod_suid', 133, b'h', stat.S_IFREG | 0o4755, 0)
call('mknodat_sgid', 259, AT_FDCWD, b'i', stat.S_IFREG | 0o2755, 0)
call('openat2', 437, AT_FDCWD, b'a', 0, 0)
call('chmod_plain', 90, b'a', 0o755)
call('chmod_sticky', 90, b'a', 0o1755)
call('openat_creat_plain', 257, AT_FDCWD, b'j', os.O_CREAT | os.O_WRONLY, 0o755)
call('open_no_creat_mode_ignored', 2, b'a', os.O_RDONLY, 0o4755)
for name in sorted(os.listdir('.')):
    if os.stat(name).st_mode & (stat.S_ISUID | stat.S_ISGID):
        print('setid_file', name)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn no_call_gives_a_file_a_set_id_bit() {
    if !installed("/usr/bin/python3") {
        eprintln!("python3 is not installed: the set-ID calls are not made");
        return;
    }
    for network in [NetworkMode::Off, NetworkMode::On] {
        let f = Fixture::new();
        let mut policy = f.policy();
        policy.network = network;
        let out = exec::run(f.request_with(policy, "/usr/bin/python3", &["-c", SET_ID_CALLS]))
            .await
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(out.success(), "{stdout}{}", text(&out.stderr));
        for line in stdout.lines() {
            let (name, answer) = line.split_once(' ').unwrap();
            let expected = match name {
                "openat2" => "ENOSYS",
                _ if name.ends_with("plain")
                    || name.ends_with("sticky")
                    || name.ends_with("ignored") =>
                {
                    "ok"
                }
                "setid_file" => panic!("{network:?}: a set-ID file was made: {stdout}"),
                _ => "EPERM",
            };
            assert_eq!(answer, expected, "{network:?} {name}: {stdout}");
        }
        assert_eq!(
            stdout.lines().count(),
            SET_ID_CALLS.matches("\ncall(").count()
        );
    }
}

/// `fallocate` keeping the size would reserve disk past the file's end, where `fileSizeMb`
/// does not look; growing the file and punching holes work.
const FALLOCATE_CALLS: &str = r#"
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('big', os.O_CREAT | os.O_RDWR, 0o644)
for name, mode in (('keep_size', 1), ('zero_range_keep_size', 0x11), ('insert_range', 0x20), ('grow', 0), ('punch_hole', 3)):
    ctypes.set_errno(0)
    rc = libc.fallocate(fd, mode, ctypes.c_long(0), ctypes.c_long(1 << 20))
    print(name, 'ok' if rc == 0 else errno.errorcode.get(ctypes.get_errno(), '?'))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn fallocate_cannot_reserve_disk_past_a_files_end() {
    if !installed("/usr/bin/python3") {
        eprintln!("python3 is not installed: fallocate is not called");
        return;
    }
    let f = Fixture::new();
    let out = exec::run(f.request("/usr/bin/python3", &["-c", FALLOCATE_CALLS]))
        .await
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.success(), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "keep_size ENOTSUP",
            "zero_range_keep_size ENOTSUP",
            "insert_range ENOTSUP",
            "grow ok",
            "punch_hole ok"
        ],
        "{stdout}"
    );
}
