//! Links the launcher statically on musl also when a build turns `crt-static` off (napi does
//! for the musl addon, which must link musl dynamically; were the launcher ever built in the
//! same cargo run, it would inherit that). A static launcher runs on any Linux of its
//! architecture, glibc or musl, without a dynamic loader.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let musl = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "musl");
    let crt_static = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|feature| feature == "crt-static"));
    if musl && !crt_static {
        println!("cargo:rustc-link-arg-bins=-static");
    }
}
