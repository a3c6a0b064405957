//! `toolgate-sandbox`: runs a program under toolgate's kernel sandbox. toolgate starts it with
//! the prepared policy on its command line (or as its server, `--serve`); all of the logic is
//! in [`toolgate_sandbox::launcher_main`].
//!
//! `main` is the C entry point: the launcher runs once per sandboxed call, and std's runtime
//! set-up (which reads `/proc/self/maps` to place a stack guard and installs signal handlers)
//! is start-up time it does not need. Arguments are read from `main`'s own `argv`: without
//! that runtime, `std::env::args_os` is empty under musl, whose C start-up code does not hand
//! `argv` to the hook std uses on glibc (the launcher ships as a static musl executable).

#![cfg_attr(target_os = "linux", no_main)]

// Not `pub`: `#[no_mangle]` alone keeps the symbol for the C start-up code to call, and only
// that code calls it, with the `argv` its contract guarantees.
#[cfg(target_os = "linux")]
#[no_mangle]
extern "C" fn main(argc: std::ffi::c_int, argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    use std::os::unix::ffi::OsStringExt;
    let count = usize::try_from(argc).unwrap_or(0);
    let args = (1..count)
        .map(|index| {
            // SAFETY: the C runtime passes `argc` valid, NUL-terminated strings in `argv`.
            let arg = unsafe { std::ffi::CStr::from_ptr(*argv.add(index)) };
            std::ffi::OsString::from_vec(arg.to_bytes().to_vec())
        })
        .collect();
    // SAFETY: as above; the strings are not read again (the arguments are copied).
    unsafe { blank_command_line(count, argv) };
    toolgate_sandbox::launcher_main(args)
}

/// Blanks the command line's bytes in this process's memory, which is what
/// `/proc/<pid>/cmdline` shows: a call's programs see the launcher (the server, or the one-shot
/// launcher) as their PID 1 or parent, and its arguments name host paths, toolgate's process id
/// and the whole policy. What stays is `toolgate-sandbox` and the word `--serve` (how `ps`, and
/// tests, tell the server), which say nothing of the host.
///
/// # Safety
/// `argv` holds `count` valid, NUL-terminated, writable strings (the C runtime's own).
#[cfg(target_os = "linux")]
unsafe fn blank_command_line(count: usize, argv: *const *const std::ffi::c_char) {
    use toolgate_sandbox::protocol::ARG_SERVE;
    const NAME: &[u8] = b"toolgate-sandbox";
    for index in 0..count {
        // SAFETY: the caller's contract; each string is overwritten within its own length.
        unsafe {
            let arg = (*argv.add(index)).cast_mut();
            let len = libc::strlen(arg);
            if index > 0 && std::ffi::CStr::from_ptr(arg).to_bytes() == ARG_SERVE.as_bytes() {
                continue;
            }
            std::ptr::write_bytes(arg, 0, len);
            if index == 0 && len >= NAME.len() {
                std::ptr::copy_nonoverlapping(NAME.as_ptr(), arg.cast::<u8>(), NAME.len());
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("toolgate-sandbox: the kernel sandbox exists only on Linux");
    std::process::exit(125);
}
