//! What the running kernel offers, probed once per process.

use std::sync::OnceLock;

/// The kernel features the sandbox is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSupport {
    /// The Landlock ABI version (0: no Landlock, kernel < 5.13 or not enabled at boot).
    pub landlock_abi: u32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
}

impl KernelSupport {
    /// What an `enforce` sandbox needs and this kernel lacks, in words; empty when nothing.
    pub fn missing_for_enforce(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.landlock_abi == 0 {
            missing.push("Landlock (Linux 5.13 or later with 'landlock' in the lsm= boot list)");
        }
        if !self.seccomp {
            missing.push("seccomp filters (CONFIG_SECCOMP_FILTER)");
        }
        missing
    }

    /// What a sandbox on this kernel does without, for the one best-effort warning.
    pub fn degraded_features(&self) -> Vec<&'static str> {
        let mut missing = self.missing_for_enforce();
        if (1..4).contains(&self.landlock_abi) {
            missing.push("Landlock TCP rules (Linux 6.7; seccomp still refuses IP sockets)");
        }
        if (1..6).contains(&self.landlock_abi) {
            missing.push("Landlock signal and abstract-socket scoping (Linux 6.12)");
        }
        missing
    }
}

/// The kernel's support, probed on first use (two system calls) and remembered.
pub fn kernel_support() -> KernelSupport {
    static SUPPORT: OnceLock<KernelSupport> = OnceLock::new();
    *SUPPORT.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> KernelSupport {
    KernelSupport {
        landlock_abi: toolgate_sandbox::kernel::landlock_abi(),
        seccomp: toolgate_sandbox::kernel::seccomp_filters(),
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> KernelSupport {
    KernelSupport {
        landlock_abi: 0,
        seccomp: false,
    }
}
