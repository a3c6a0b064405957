//! Benchmark baseline: the cheapest way Rust itself runs a program and collects its output, a
//! loop over `std::process::Command::output()`. Used by `npm run bench` (tests/bench/exec.ts).
//!
//! Usage: spawn_baseline <program> <calls> <concurrency>
//! Prints the wall time in milliseconds for all calls.

use std::process::Command;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: spawn_baseline <program> <calls> <concurrency>";
    let program = args.next().expect(usage);
    let calls: usize = args.next().expect(usage).parse().expect(usage);
    let concurrency: usize = args.next().expect(usage).parse().expect(usage);

    let started = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..concurrency {
            let program = &program;
            let share = calls / concurrency + usize::from(worker < calls % concurrency);
            scope.spawn(move || {
                for _ in 0..share {
                    let output = Command::new(program).output().expect("spawn");
                    assert!(output.status.success());
                }
            });
        }
    });
    println!("{}", started.elapsed().as_secs_f64() * 1000.0);
}
