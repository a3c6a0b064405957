//! `toolgate-sandbox`: runs a program under toolgate's kernel sandbox. toolgate starts it with
//! the prepared policy on its command line; all of the logic is in
//! `toolgate_core::sandbox::launcher_main`.

#[cfg(target_os = "linux")]
fn main() {
    std::process::exit(toolgate_core::sandbox::launcher_main());
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("toolgate-sandbox: the kernel sandbox exists only on Linux");
    std::process::exit(125);
}
