//! Cost of the sandbox: `/bin/true` through toolgate's `exec`, sandboxed and not, against
//! the one-shot launcher (what `toolgate sandbox` starts per program) and bubblewrap with an
//! equivalent policy, in one run, printed as ratios.
//!
//! ```text
//! cargo build --release -p toolgate-sandbox
//! cargo build --release -p toolgate-core --example sandbox_bench
//! target/release/examples/sandbox_bench [rounds] [only]
//! target/release/examples/sandbox_bench [rounds] layers
//! ```
//!
//! The launcher is found next to this example's directory (`target/release/`), or where
//! `TOOLGATE_SANDBOX_LAUNCHER` says (`npm run bench sandbox` uses the static release build).
//! bubblewrap is skipped with a message when `bwrap` is not installed. `only` (`sandboxed` or
//! `unsandboxed`) runs nothing but those calls, for a profiler. `layers` measures what each
//! layer of a sandboxed call costs instead (`npm run bench sandbox` runs it): calls through the
//! launcher server with everything on, and with the mount view, the IPC namespace, the network
//! namespace, the limits or all four left out (`Sandbox::without_layers`, for measurement
//! only), interleaved call by call with unsandboxed calls, each call followed by 3 ms of idle
//! time (not timed). `only` runs its calls back to back.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_core::exec::{self, ExecRequest};
use toolgate_core::{Sandbox, SandboxPolicy};

/// Runs every variant once per round, `rounds` times (so a busy machine slows all of them
/// alike), and returns each variant's median time per call. `pause` (not timed) follows each
/// call: a call alone, as an agent's tool calls come, rather than back to back.
async fn measure(
    rounds: usize,
    variants: &[&dyn Fn() -> ExecRequest],
    pause: Duration,
) -> Vec<Duration> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..rounds + rounds / 10 + 1 {
        for (variant, make) in variants.iter().enumerate() {
            let request = make();
            let started = Instant::now();
            let out = exec::run(request).await.unwrap();
            let elapsed = started.elapsed();
            assert!(out.success(), "{}", String::from_utf8_lossy(&out.stderr));
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
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

/// Time per call of `calls` calls, `concurrency` at a time.
async fn throughput(
    calls: usize,
    concurrency: usize,
    make: &(dyn Fn() -> ExecRequest + Sync),
) -> Duration {
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    let mut next = 0;
    while next < calls || !running.is_empty() {
        while next < calls && running.len() < concurrency {
            running.spawn(exec::run(make()));
            next += 1;
        }
        let out = running.join_next().await.unwrap().unwrap().unwrap();
        assert!(out.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    started.elapsed() / calls as u32
}

/// CPU time (user + system) used so far by this process, its reaped children, and its launcher
/// server with everything the server reaped (the inits, which reaped the programs).
fn cpu_time() -> Duration {
    let mut total = Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage writes into the zeroed struct we own.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut usage);
            usage
        };
        for time in [usage.ru_utime, usage.ru_stime] {
            total += Duration::new(time.tv_sec as u64, time.tv_usec as u32 * 1000);
        }
    }
    // SAFETY: sysconf takes an integer.
    let tick = Duration::from_secs(1) / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u32;
    for server in servers() {
        let stat = std::fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default();
        let fields: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.split_whitespace()
                    .filter_map(|field| field.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        // utime, stime, cutime, cstime: fields 14 to 17 of stat, 11 to 14 after the name.
        total += tick * fields.iter().skip(10).take(4).sum::<u64>() as u32;
    }
    total
}

/// This process's launcher servers (children running `toolgate-sandbox --serve`).
fn servers() -> Vec<u32> {
    let me = std::process::id().to_string();
    let is_server = |pid: &u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(String::from));
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        parent.as_deref() == Some(me.as_str())
            && cmdline.split(|&b| b == 0).any(|arg| arg == b"--serve")
    };
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
                .filter(is_server)
                .collect()
        })
        .unwrap_or_default()
}

/// CPU time per call of `calls` sequential calls.
async fn cpu_per_call(calls: usize, make: &dyn Fn() -> ExecRequest) -> Duration {
    let before = cpu_time();
    for _ in 0..calls {
        let out = exec::run(make()).await.unwrap();
        assert!(out.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    cpu_time().saturating_sub(before) / calls as u32
}

fn micros(d: Duration) -> String {
    format!("{:7.0} µs", d.as_secs_f64() * 1e6)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "?".into())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("rounds must be a number"))
        .unwrap_or(300);
    let only = std::env::args().nth(2);
    let load_before = load_average();
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
    let launcher = sandbox.launcher().expect("a launcher").to_path_buf();
    // The policy's share of a call on toolgate's side: the launcher's arguments for it (the
    // server gets the same words).
    let program = Path::new("/bin/true");
    let policy_started = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(sandbox.command(program, &work, &env, &[]));
    }
    let policy_share = policy_started.elapsed() / rounds as u32;

    let plain = || ExecRequest::new("/bin/true", &work).env(env.clone());
    let private = || plain().private_dirs();
    let sandboxed = || plain().sandbox(Arc::clone(&sandbox));
    if only.as_deref() == Some("layers") {
        return layers(rounds, &work, &env).await;
    }
    if let Some(only) = only {
        let variant: &dyn Fn() -> ExecRequest = match only.as_str() {
            "sandboxed" => &sandboxed,
            "unsandboxed" => &plain,
            other => panic!("only 'sandboxed' or 'unsandboxed', not {other:?}"),
        };
        let time = measure(rounds, &[variant], Duration::ZERO).await[0];
        println!("{only}: {}", micros(time));
        return;
    }
    // The one-shot launcher, started per call (as `toolgate sandbox` does), with a fixed
    // writable directory in place of a private one.
    let call_dir = tempfile::tempdir().expect("a temp dir");
    let (_, oneshot_args) = sandbox
        .command(program, call_dir.path(), &env, &[])
        .unwrap();
    let oneshot = || {
        ExecRequest::new(&launcher, &work)
            .args(oneshot_args.iter().cloned())
            .env(env.clone())
    };
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
    let mut variants: Vec<&dyn Fn() -> ExecRequest> = vec![&plain, &private, &sandboxed, &oneshot];
    if have_bwrap {
        variants.push(&bwrap);
    }
    let times = measure(rounds, &variants, Duration::ZERO).await;
    let (unsandboxed, private_time, sandboxed_time, oneshot_time) =
        (times[0], times[1], times[2], times[3]);
    let bwrap = times.get(4).copied();
    let cpu_plain = cpu_per_call(rounds, &plain).await;
    let cpu_private = cpu_per_call(rounds, &private).await;
    let cpu_sandboxed = cpu_per_call(rounds, &sandboxed).await;
    let concurrent_plain = throughput(rounds, 32, &plain).await;
    let concurrent_sandboxed = throughput(rounds, 32, &sandboxed).await;

    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("sandbox_bench: /bin/true through exec, {rounds} interleaved rounds, median per call");
    println!(
        "  load average before / after          {load_before} / {}",
        load_average()
    );
    println!(
        "  call directories under               {}",
        exec::private_dirs_root().display()
    );
    println!(
        "  launcher                             {}",
        launcher.display()
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
        "  exec, unsandboxed                    {}",
        micros(unsandboxed)
    );
    println!(
        "  exec, private HOME/TMPDIR only       {}",
        micros(private_time)
    );
    println!(
        "  exec, sandboxed (launcher server)    {}",
        micros(sandboxed_time)
    );
    println!(
        "  exec of the one-shot launcher        {}  (toolgate sandbox; no private dirs)",
        micros(oneshot_time)
    );
    if let Some(bwrap) = bwrap {
        println!("  exec of bwrap (equivalent policy)    {}", micros(bwrap));
    }
    println!(
        "  CPU per call, all processes: unsandboxed {} / private dirs {} / sandboxed {}",
        micros(cpu_plain),
        micros(cpu_private),
        micros(cpu_sandboxed)
    );
    println!(
        "  32 at a time, per call: unsandboxed {} / sandboxed {}",
        micros(concurrent_plain),
        micros(concurrent_sandboxed)
    );
    println!("ratios");
    println!(
        "  policy share of a sandboxed call     {:.1} %  (target < 5 %)",
        100.0 * ratio(policy_share, sandboxed_time)
    );
    println!(
        "  sandboxed / unsandboxed exec         {:.2}x  (target <= 1.5x)",
        ratio(sandboxed_time, unsandboxed)
    );
    println!(
        "  sandboxed / private-dirs-only exec   {:.2}x",
        ratio(sandboxed_time, private_time)
    );
    println!(
        "  one-shot launcher / sandboxed        {:.2}x",
        ratio(oneshot_time, sandboxed_time)
    );
    if let Some(bwrap) = bwrap {
        println!(
            "  bwrap / sandboxed                    {:.2}x  (target >= 4x faster than bwrap)",
            ratio(bwrap, sandboxed_time)
        );
    }
    println!(
        "  32 at a time: sandboxed / unsandboxed {:.2}x",
        ratio(concurrent_sandboxed, concurrent_plain)
    );
}

/// What each layer of a sandboxed call costs: the median per call with every layer, and with
/// each left out, through the launcher server (the path every call takes), interleaved call
/// by call with each other and with unsandboxed calls. Printed as one line per variant and
/// the differences; the CPU time per call of every process involved follows.
/// The idle time after each call of the `layers` mode.
const LAYER_PAUSE: Duration = Duration::from_millis(3);

async fn layers(rounds: usize, work: &Path, env: &[(std::ffi::OsString, std::ffi::OsString)]) {
    const LAYERS: [(&str, &[&str]); 6] = [
        ("every layer (what calls get)", &[]),
        ("without the mount view", &["view"]),
        ("without the IPC namespace", &["ipc"]),
        ("without the network namespace", &["network-namespace"]),
        ("without the limits (cgroup, rlimits)", &["limits"]),
        (
            "without all four",
            &["view", "ipc", "network-namespace", "limits"],
        ),
    ];
    let sandboxes: Vec<Arc<Sandbox>> = LAYERS
        .iter()
        .map(|(_, left_out)| {
            let sandbox = Sandbox::prepare(SandboxPolicy::new(work)).unwrap_or_else(|err| {
                eprintln!(
                    "{err}\n(build the launcher first: cargo build --release -p toolgate-sandbox)"
                );
                std::process::exit(1);
            });
            Arc::new(sandbox.without_layers(left_out))
        })
        .collect();
    let plain = || ExecRequest::new("/bin/true", work).env(env.to_vec());
    let makers: Vec<Box<dyn Fn() -> ExecRequest>> = sandboxes
        .iter()
        .map(|sandbox| {
            let sandbox = Arc::clone(sandbox);
            Box::new(move || plain().sandbox(Arc::clone(&sandbox))) as Box<dyn Fn() -> ExecRequest>
        })
        .collect();
    let mut variants: Vec<&dyn Fn() -> ExecRequest> = vec![&plain];
    variants.extend(
        makers
            .iter()
            .map(|make| make.as_ref() as &dyn Fn() -> ExecRequest),
    );
    let load_before = load_average();
    // Each call alone (the launcher server makes a kind's next init when its call ends; back to
    // back, that work would land on the next variant's call).
    let times = measure(rounds, &variants, LAYER_PAUSE).await;
    let mut cpu = Vec::new();
    for make in &variants {
        cpu.push(cpu_per_call(rounds.min(300), *make).await);
    }
    println!(
        "sandbox_bench layers: /bin/true through exec and the launcher server, {rounds} interleaved rounds, median per call (load {load_before} / {})",
        load_average()
    );
    println!(
        "  {:<48} {}  CPU {}",
        "exec, unsandboxed",
        micros(times[0]),
        micros(cpu[0])
    );
    let all = times[1];
    for (index, (name, _)) in LAYERS.iter().enumerate() {
        let time = times[index + 1];
        let delta = if index == 0 {
            String::new()
        } else {
            format!(
                "  the layer costs {:+6.0} µs ({:+4.0} µs CPU)",
                (all.as_secs_f64() - time.as_secs_f64()) * 1e6,
                (cpu[1].as_secs_f64() - cpu[index + 1].as_secs_f64()) * 1e6
            )
        };
        println!(
            "  {:<48} {}  CPU {}  {:.2}x unsandboxed{delta}",
            format!("sandboxed, {name}"),
            micros(time),
            micros(cpu[index + 1]),
            time.as_secs_f64() / times[0].as_secs_f64()
        );
    }
}
