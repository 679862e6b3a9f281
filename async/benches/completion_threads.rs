//! Awaited launches per second from 8 tasks on 8 streams against 8 blocking threads on 8
//! streams (its name has `threads`, so the runner pins it to several cores, as
//! `launch_threads`): each task, on a tokio runtime of 8 workers, launches an empty kernel on
//! its own stream and awaits `stream.completion()`, 20,000 times; each thread launches and
//! calls `stream.sync()` as often. Figures: `awaited_launches_per_s_8_tasks`,
//! `blocking_launches_per_s_8_threads` (medians) and `awaited_over_blocking_8_threads`, the
//! median per-pair ratio of the rates, the pairs run A B B A (goal: at least 0.9).

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::Instant;

#[allow(dead_code)] // Shared with `completion`, which uses what this one does not.
#[path = "common/completion_kit.rs"]
mod kit;

use cuda_safe::{Device, Error, Result, Stream};
use cuda_safe_async::Reactor;
use cuda_safe_async::prelude::*;
use kit::{Kernels, kernels, launch_empty, median};

const WORKERS: usize = 8;
const LAUNCHES: u32 = 20_000;
const WARMUP: u32 = 1_000;
const PAIRS: usize = 4;

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
    let device = Device::new(0)?;
    let kernels = Arc::new(kernels(&device)?);
    let streams: Vec<Stream> = (0..WORKERS)
        .map(|_| device.create_stream(Default::default()))
        .collect::<Result<_>>()?;
    let _reactor = Reactor::shared();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .build()
        .map_err(|error| Error::invalid_argument(format!("no tokio runtime: {error}")))?;
    let (mut awaited, mut blocking, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..PAIRS {
        let (a, b) = if pair % 2 == 0 {
            let a = tasks(&runtime, &kernels, &streams)?;
            (a, threads(&kernels, &streams)?)
        } else {
            let b = threads(&kernels, &streams)?;
            (tasks(&runtime, &kernels, &streams)?, b)
        };
        awaited.push(a);
        blocking.push(b);
        ratios.push(a / b);
    }
    println!(
        "FIG awaited_launches_per_s_8_tasks {:.1} 1/s",
        median(&mut awaited)
    );
    println!(
        "FIG blocking_launches_per_s_8_threads {:.1} 1/s",
        median(&mut blocking)
    );
    println!(
        "FIG awaited_over_blocking_8_threads {:.4} ratio",
        median(&mut ratios)
    );
    println!("DONE");
    Ok(())
}

/// Launches per second of 8 tasks, each awaiting every launch on its own stream.
fn tasks(
    runtime: &tokio::runtime::Runtime,
    kernels: &Arc<Kernels>,
    streams: &[Stream],
) -> Result<f64> {
    runtime.block_on(async {
        let start = Arc::new(tokio::sync::Barrier::new(WORKERS + 1));
        let mut running = tokio::task::JoinSet::new();
        for stream in streams {
            let (kernels, stream, start) = (kernels.clone(), stream.clone(), start.clone());
            running.spawn(async move {
                for _ in 0..WARMUP {
                    launch_empty(&kernels, &stream)?;
                    stream.completion().await?;
                }
                start.wait().await;
                for _ in 0..LAUNCHES {
                    launch_empty(&kernels, &stream)?;
                    stream.completion().await?;
                }
                Ok::<Instant, Error>(Instant::now())
            });
        }
        start.wait().await;
        let begun = Instant::now();
        let mut end = begun;
        while let Some(joined) = running.join_next().await {
            let finished = joined.map_err(|_| Error::invalid_argument("a task panicked"))??;
            end = end.max(finished);
        }
        Ok(WORKERS as f64 * f64::from(LAUNCHES) / (end - begun).as_secs_f64())
    })
}

/// Launches per second of 8 threads, each syncing every launch on its own stream.
fn threads(kernels: &Arc<Kernels>, streams: &[Stream]) -> Result<f64> {
    let start = Arc::new(Barrier::new(WORKERS + 1));
    let workers: Vec<_> = streams
        .iter()
        .map(|stream| {
            let (kernels, stream, start) = (kernels.clone(), stream.clone(), start.clone());
            std::thread::spawn(move || -> Result<Instant> {
                let warm = (0..WARMUP).try_for_each(|_| {
                    launch_empty(&kernels, &stream)?;
                    stream.sync()
                });
                start.wait();
                warm?;
                for _ in 0..LAUNCHES {
                    launch_empty(&kernels, &stream)?;
                    stream.sync()?;
                }
                Ok(Instant::now())
            })
        })
        .collect();
    start.wait();
    let begun = Instant::now();
    let mut end = begun;
    for worker in workers {
        let finished = worker
            .join()
            .map_err(|_| Error::invalid_argument("a launching thread panicked"))??;
        end = end.max(finished);
    }
    Ok(WORKERS as f64 * f64::from(LAUNCHES) / (end - begun).as_secs_f64())
}
