//! The Node.js binding of toolgate-core: type conversions and forwarding, nothing else.
//! Doc comments on `#[napi]` items become the JSDoc of the generated `binding.d.ts`.
//!
//! Every entry point catches panics (see [`error`]), reads options objects through the core's
//! strict reader ([`js_value`]) and reports failures as structured errors.

mod approval;
mod builtins;
mod command;
mod constants;
mod enums;
mod error;
mod executables;
mod files;
mod js_value;
mod mcp;
mod network;
mod path;
mod permissions;
mod process;
mod run;
mod sandbox;
mod worker;

/// The runtime that runs every process's pipes, exit watch and timer. Processes are also
/// started on it (not on the JavaScript thread, which `posix_spawn` would block until the child
/// has exec'd), so starts proceed in parallel. One worker per core, at most four: the work is
/// I/O, and each hand-off between threads costs latency.
#[napi_derive::module_init]
fn init() {
    // Panics are caught at every entry point and reported as INTERNAL_ERROR; the default hook
    // would also print the whole payload (which can hold a 400 KB pattern) to stderr.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("a panic without a message");
        let short: String = message.chars().take(300).collect();
        let place = info
            .location()
            .map(|at| format!(" at {}:{}", at.file(), at.line()))
            .unwrap_or_default();
        eprintln!("toolgate: internal error{place}: {short}");
    }));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("toolgate-io")
        .enable_all()
        .build()
        .expect("the toolgate I/O runtime starts");
    napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
}
