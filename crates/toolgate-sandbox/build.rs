//! Links the launcher statically on musl also when a build turns `crt-static` off: the release
//! build (scripts/build-release.sh) compiles it in one cargo run with the Node addon, which must
//! link musl dynamically, so the two share their compiled dependencies. A static launcher runs
//! on any Linux of its architecture, glibc or musl, without a dynamic loader.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let musl = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "musl");
    let crt_static = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|feature| feature == "crt-static"));
    if musl && !crt_static {
        println!("cargo:rustc-link-arg-bins=-static");
    }
}
