//! The sandbox launcher for tests that run programs under the sandbox (shared by the unit
//! tests, through `src/test_support.rs`, and the integration tests in `tests/`).
//!
//! `cargo test --workspace` builds it into `target/<profile>/`, where the core looks for it
//! beside a test binary (`target/<profile>/deps/`); `cargo test -p toolgate-core` does not, since
//! it is another package's binary. Then it is built here, once per test process, into a target
//! directory of its own (`target/<profile>/toolgate-sandbox-for-tests/`: a nested cargo on the
//! running `cargo test`'s target directory would wait for the lock it holds), and
//! `TOOLGATE_SANDBOX_LAUNCHER` points the core at it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable the core reads (`toolgate_core::sandbox::LAUNCHER_ENV`).
const LAUNCHER_ENV: &str = "TOOLGATE_SANDBOX_LAUNCHER";

/// The launcher the sandboxes of this test process use: `TOOLGATE_SANDBOX_LAUNCHER` when set,
/// else the one cargo built beside the test binaries, else one built now. Call it before
/// preparing a sandbox that must run programs. Panics, saying how to build the launcher, when
/// it can be neither found nor built.
pub fn launcher() -> &'static Path {
    static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
    LAUNCHER.get_or_init(find_or_build)
}

fn find_or_build() -> PathBuf {
    if let Some(explicit) = std::env::var_os(LAUNCHER_ENV).filter(|value| !value.is_empty()) {
        return PathBuf::from(explicit);
    }
    let exe = std::env::current_exe().expect("the test binary has a path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps/");
    let beside = profile_dir.join("toolgate-sandbox");
    if beside.is_file() {
        return beside;
    }
    let built = build(profile_dir);
    // SAFETY: set once per process, before this process's sandboxes look for the launcher;
    // std's environment lock orders it with every read through `std::env`, and no test reads
    // this variable through libc.
    unsafe { std::env::set_var(LAUNCHER_ENV, &built) };
    built
}

/// Builds the launcher with the profile of these tests into a target directory of its own.
fn build(profile_dir: &Path) -> PathBuf {
    let profile_name = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("debug");
    let profile = if profile_name == "debug" {
        "dev"
    } else {
        profile_name
    };
    let target_dir = profile_dir.join("toolgate-sandbox-for-tests");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolgate-sandbox/Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "the sandbox launcher was not built (`cargo build -p toolgate-sandbox`); building it into {}",
        target_dir.display()
    );
    let status = std::process::Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "--bin",
            "toolgate-sandbox",
            "--profile",
            profile,
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .status();
    let built = target_dir.join(profile_name).join("toolgate-sandbox");
    match status {
        Ok(status) if status.success() && built.is_file() => built,
        other => panic!(
            "the sandbox launcher could not be built ({other:?}, with {cargo:?}): build it with \
             `cargo build -p toolgate-sandbox` (or `cargo test --workspace`), or set \
             {LAUNCHER_ENV} to its path, and run the tests again"
        ),
    }
}
