//! `toolgate-sandbox`: runs a program under toolgate's kernel sandbox. toolgate starts it with
//! the prepared policy on its command line; all of the logic is in
//! `toolgate_core::sandbox::launcher_main`.
//!
//! `main` is the C entry point: the launcher runs once per sandboxed call, and std's runtime
//! set-up (which reads `/proc/self/maps` to place a stack guard and installs signal handlers)
//! is start-up time it does not need. Arguments are still read with `std::env::args_os`.

#![cfg_attr(target_os = "linux", no_main)]

#[cfg(target_os = "linux")]
#[no_mangle]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    toolgate_core::sandbox::launcher_main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("toolgate-sandbox: the kernel sandbox exists only on Linux");
    std::process::exit(125);
}
