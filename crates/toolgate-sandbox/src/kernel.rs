//! What the running kernel offers the sandbox, asked with plain system calls (no Landlock or
//! seccomp library needed, so toolgate-core asks the same way without the launcher's code).

/// The Landlock ABI version of this kernel (0: no Landlock, kernel < 5.13 or not enabled at
/// boot).
pub fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the call only
    // returns the ABI version (or -1 with ENOSYS/EOPNOTSUPP); it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(abi).unwrap_or(0)
}

/// Whether seccomp filters can be installed (CONFIG_SECCOMP_FILTER).
pub fn seccomp_filters() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointers; it fails with EINVAL without CONFIG_SECCOMP.
    let seccomp_mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    // SAFETY: a null filter makes SECCOMP_SET_MODE_FILTER fail with EFAULT when filters are
    // supported and EINVAL when they are not; nothing is installed either way.
    let filter = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            std::ptr::null::<libc::c_void>(),
        )
    };
    seccomp_mode >= 0
        && filter == -1
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each answer agrees with another way of asking the kernel.
    #[test]
    fn the_answers_agree_with_the_kernel() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        if status.contains("Seccomp_filters:") {
            assert!(seccomp_filters(), "{status}");
        }
        // A real ruleset (handling only `execute`) can be made exactly where there is an ABI.
        let attr: u64 = 1; // LANDLOCK_ACCESS_FS_EXECUTE
                           // SAFETY: the kernel reads `size` bytes of `attr`, which lives across the call; a
                           // returned fd is ours and closed right away.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const u64,
                std::mem::size_of::<u64>(),
                0,
            )
        };
        assert_eq!(
            fd >= 0,
            landlock_abi() >= 1,
            "ruleset {fd}, ABI {}",
            landlock_abi()
        );
        if fd >= 0 {
            // SAFETY: closing the fd just made.
            unsafe { libc::close(fd as libc::c_int) };
        }
    }
}
