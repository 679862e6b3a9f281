//! `async/examples/inference_server.rs` on cuda-async 0.5.0: the same kernel (`infer`, as PTX),
//! request size (256 words), request count and rounds (1,000 and 5 by default), the same
//! checked results and `FIG` lines (with the `cuda_async_` prefix). Each request is one
//! composed operation (upload, launch, download: `server.rs`) served:
//!
//! - `await_tokio_2`: as a task on a tokio runtime of 2 workers, on stream `i % 32`;
//! - `composed_tokio_2`: the same on a shared `StreamPoolRoundRobin` of 32 streams;
//! - `default_tokio_2`: the same awaited as it is, on the worker's default policy (cuda-async
//!   makes 4 streams for each thread; ours has no such row);
//! - `blocking_threads`: by as many OS threads, each running its operation with `sync_on`;
//! - `sync_2_threads`: by 2 threads, each serving its share one by one with `sync_on`.
//!
//! `cuda_async_server [REQUESTS] [ROUNDS]`.

use std::process::ExitCode;

use cuda_async_lab::{Result, device, kernels};

mod server;
mod staging;
mod ways;

use server::{Lane, STREAMS, Server, WORDS};
use ways::{measure, on_threads, on_tokio, on_two_syncing_threads};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"));
    let requests = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(5);
    let context = device::open()?;
    let server = Server::new(&context, kernels::infer(&context)?)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    println!(
        "cuda-async 0.5.0: {requests} concurrent requests of {WORDS} words over {STREAMS} \
         streams, median of {rounds} rounds:"
    );
    println!(
        "{:<38} {:>12} {:>10} {:>10} {:>9}",
        "way", "requests/s", "p50 (ms)", "p99 (ms)", "checked"
    );
    let tokio_ways = [
        (
            "await_tokio_2",
            "tokio, 2 workers, on stream i % 32",
            Lane::Fixed,
        ),
        (
            "composed_tokio_2",
            "tokio, 2 workers, round-robin pool",
            Lane::Pool,
        ),
        (
            "default_tokio_2",
            "tokio, 2 workers, each thread's pool",
            Lane::ThreadDefault,
        ),
    ];
    for (name, label, lane) in tokio_ways {
        measure(name, label, rounds, requests, || {
            on_tokio(&server, &runtime, requests, lane)
        })?;
    }
    measure(
        "blocking_threads",
        &format!("{requests} blocking OS threads, sync_on"),
        rounds,
        requests,
        || on_threads(&server, requests),
    )?;
    measure(
        "sync_2_threads",
        "2 threads calling sync_on()",
        rounds,
        requests,
        || on_two_syncing_threads(&server, requests),
    )?;
    Ok(())
}
