//! Cost of the sandbox: `/bin/true` through toolgate's `exec`, sandboxed and not, against
//! bubblewrap with an equivalent policy, in one run, printed as ratios.
//!
//! ```text
//! cargo build --release -p toolgate-sandbox
//! cargo run --release -p toolgate-sandbox --example sandbox_bench [rounds]
//! ```
//!
//! The launcher is found next to this example's directory (`target/release/`), so build it
//! first. bubblewrap is skipped with a message when `bwrap` is not installed.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_core::exec::{self, ExecRequest};
use toolgate_core::{Sandbox, SandboxPolicy};

/// Runs every variant once per round, `rounds` times (so a busy machine slows all of them
/// alike), and returns each variant's median time per call.
async fn measure(rounds: usize, variants: &[&dyn Fn() -> ExecRequest]) -> Vec<Duration> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..rounds + rounds / 10 + 1 {
        for (variant, make) in variants.iter().enumerate() {
            let request = make();
            let started = Instant::now();
            let out = exec::run(request).await.unwrap();
            let elapsed = started.elapsed();
            assert!(out.success(), "{}", String::from_utf8_lossy(&out.stderr));
            if round > rounds / 10 {
                samples[variant].push(elapsed); // the first tenth warms up
            }
        }
    }
    samples
        .into_iter()
        .map(|mut times| {
            times.sort();
            times[times.len() / 2]
        })
        .collect()
}

fn micros(d: Duration) -> String {
    format!("{:7.0} µs", d.as_secs_f64() * 1e6)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("rounds must be a number"))
        .unwrap_or(300);
    let work = tempfile::tempdir().expect("a temp dir");
    let work = std::fs::canonicalize(work.path()).unwrap();
    let env = toolgate_core::exec::env::child_environment(&[]);

    let prepared = Instant::now();
    let sandbox = match Sandbox::prepare(SandboxPolicy::new(&work)) {
        Ok(sandbox) => Arc::new(sandbox),
        Err(err) => {
            eprintln!(
                "{err}\n(build the launcher first: cargo build --release -p toolgate-sandbox)"
            );
            std::process::exit(1);
        }
    };
    let prepare_time = prepared.elapsed();
    // The policy's share of a call on toolgate's side: the launcher's arguments for it.
    let program = Path::new("/bin/true");
    let policy_started = Instant::now();
    for _ in 0..calls {
        std::hint::black_box(sandbox.command(program, &work, &env, &[]));
    }
    let policy_share = policy_started.elapsed() / calls as u32;

    let plain = || ExecRequest::new("/bin/true", &work).env(env.clone());
    let private = || plain().private_dirs();
    let sandboxed = || plain().sandbox(Arc::clone(&sandbox));
    let work_arg = work.display().to_string();
    let bwrap = || {
        ExecRequest::new("/usr/bin/bwrap", &work)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--bind",
                &work_arg,
                &work_arg,
                "--unshare-net",
                "--unshare-pid",
                "--die-with-parent",
                "/bin/true",
            ])
            .env(env.clone())
    };
    let have_bwrap = Path::new("/usr/bin/bwrap").exists();
    if !have_bwrap {
        eprintln!("bwrap is not installed (apt-get install -y bubblewrap): no bubblewrap baseline");
    }
    let mut variants: Vec<&dyn Fn() -> ExecRequest> = vec![&plain, &private, &sandboxed];
    if have_bwrap {
        variants.push(&bwrap);
    }
    let times = measure(calls, &variants).await;
    let (unsandboxed, private, sandboxed) = (times[0], times[1], times[2]);
    let bwrap = times.get(3).copied();

    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("sandbox_bench: /bin/true through exec, {calls} interleaved rounds, median per call");
    println!(
        "  call directories under               {}",
        exec::private_dirs_root().display()
    );
    println!(
        "  Sandbox::prepare (once per tool)     {}",
        micros(prepare_time)
    );
    println!(
        "  launcher arguments (policy, per call) {}",
        micros(policy_share)
    );
    println!(
        "  launcher                             {}",
        sandbox
            .launcher()
            .map_or("-".into(), |l| l.display().to_string())
    );
    println!(
        "  exec, unsandboxed                    {}",
        micros(unsandboxed)
    );
    println!("  exec, private HOME/TMPDIR only       {}", micros(private));
    println!(
        "  exec, sandboxed (default policy)     {}",
        micros(sandboxed)
    );
    if let Some(bwrap) = bwrap {
        println!("  exec of bwrap (equivalent policy)    {}", micros(bwrap));
    }
    println!("ratios");
    println!(
        "  policy share of a sandboxed call     {:.1} %  (target < 5 %)",
        100.0 * ratio(policy_share, sandboxed)
    );
    println!(
        "  sandboxed / private-dirs-only exec   {:.2}x  (the launcher alone)",
        ratio(sandboxed, private)
    );
    println!(
        "  sandboxed / unsandboxed exec         {:.2}x  (target <= 1.5x)",
        ratio(sandboxed, unsandboxed)
    );
    if let Some(bwrap) = bwrap {
        println!(
            "  bwrap / sandboxed                    {:.2}x  (target >= 4x faster than bwrap)",
            ratio(bwrap, sandboxed)
        );
    }
}
