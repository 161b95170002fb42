//! xtask's end-to-end tests, one test binary: `cargo test` runs test binaries one after
//! another, and most of these drive one process at a time (bench-all, a Slurm cluster, an
//! embedding server), each on one of this machine's cores. In one binary the harness runs them
//! side by side, and the shared helpers (`common`) are linked once.
//!
//! One file a subject, as before: `cargo test -p xtask --test end_to_end soak::` runs one.

mod common;

#[path = "bench_all.rs"]
mod bench_all;
#[path = "cost_ceiling.rs"]
mod cost_ceiling;
#[path = "metrics_throughput.rs"]
mod metrics_throughput;
#[path = "model_families.rs"]
mod model_families;
#[path = "remote_server.rs"]
mod remote_server;
#[path = "slurm.rs"]
mod slurm;
#[path = "soak.rs"]
mod soak;
