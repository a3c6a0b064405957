//! Prints the JSON Schema of worker files (generated from `toolgate_core::worker::WorkerFile`).
//!
//! `cargo run -p toolgate-core --example worker_schema > schemas/worker.schema.json`

fn main() {
    print!("{}", toolgate_core::worker::worker_json_schema());
}
