//! The Node.js binding of toolgate-core: type conversions and forwarding, nothing else.
//! Doc comments on `#[napi]` items become the JSDoc of the generated `binding.d.ts`.
//!
//! Every entry point catches panics (see [`error`]), reads options objects through the core's
//! strict reader ([`js_value`]) and reports failures as structured errors.

mod approval;
mod command;
mod constants;
mod enums;
mod error;
mod executables;
mod files;
mod js_value;
mod path;
mod process;
mod worker;

/// The runtime that runs every process's pipes, exit watch and timer. Processes are also
/// started on it (not on the JavaScript thread, which `posix_spawn` would block until the child
/// has exec'd), so starts proceed in parallel. One worker per core, at most four: the work is
/// I/O, and each hand-off between threads costs latency.
#[napi_derive::module_init]
fn init() {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("toolgate-io")
        .enable_all()
        .build()
        .expect("the toolgate I/O runtime starts");
    napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
}
