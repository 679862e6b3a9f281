//! `async/benches/completion_threads.rs` on cuda-async 0.5.0: awaited launches per second from
//! 8 tasks on 8 streams against 8 blocking threads on 8 streams. Each task, on a tokio runtime
//! of 8 workers, schedules the empty kernel's launch operation on its own stream
//! (`SingleStream`) and awaits it, 20,000 times after 1,000 warm-ups; each thread runs the
//! same operation with `sync_on` (queued, then `cuStreamSynchronize`) as often. Figures, with
//! the `cuda_async_` prefix: `awaited_launches_per_s_8_tasks`,
//! `blocking_launches_per_s_8_threads` (medians) and `awaited_over_blocking_8_threads`, the
//! median per-pair ratio, the pairs run A B B A, as ours.

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use cuda_async::device_operation::DeviceOp;
use cuda_async::scheduling_policies::SingleStream;
use cuda_async_lab::figures::{fig, fig1, median};
use cuda_async_lab::kernels::Kernels;
use cuda_async_lab::{Result, device, kernels, launches};
use cuda_core::Stream;

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
    let context = device::open()?;
    let kernels = Arc::new(kernels::completion(&context)?);
    let streams = (0..WORKERS)
        .map(|_| device::stream(&context))
        .collect::<Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .build()?;
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
    fig1(
        "awaited_launches_per_s_8_tasks",
        median(&mut awaited),
        "1/s",
    );
    fig1(
        "blocking_launches_per_s_8_threads",
        median(&mut blocking),
        "1/s",
    );
    fig(
        "awaited_over_blocking_8_threads",
        median(&mut ratios),
        "ratio",
    );
    println!("DONE");
    Ok(())
}

/// Launches per second of 8 tasks, each awaiting every launch on its own stream.
fn tasks(
    runtime: &tokio::runtime::Runtime,
    kernels: &Arc<Kernels>,
    streams: &[Arc<Stream>],
) -> Result<f64> {
    runtime.block_on(async {
        let start = Arc::new(tokio::sync::Barrier::new(WORKERS + 1));
        let mut running = tokio::task::JoinSet::new();
        for stream in streams {
            let (kernels, start) = (kernels.clone(), start.clone());
            let policy = SingleStream::from_stream(stream.clone());
            running.spawn(async move {
                for _ in 0..WARMUP {
                    launches::empty(&kernels).schedule(&policy)?.await?;
                }
                start.wait().await;
                for _ in 0..LAUNCHES {
                    launches::empty(&kernels).schedule(&policy)?.await?;
                }
                Ok::<Instant, cuda_async::error::DeviceError>(Instant::now())
            });
        }
        start.wait().await;
        let begun = Instant::now();
        let mut end = begun;
        while let Some(joined) = running.join_next().await {
            end = end.max(joined??);
        }
        Ok(WORKERS as f64 * f64::from(LAUNCHES) / (end - begun).as_secs_f64())
    })
}

/// Launches per second of 8 threads, each running every launch with `sync_on` on its own
/// stream.
fn threads(kernels: &Arc<Kernels>, streams: &[Arc<Stream>]) -> Result<f64> {
    let start = Arc::new(Barrier::new(WORKERS + 1));
    let workers: Vec<_> = streams
        .iter()
        .map(|stream| {
            let (kernels, stream, start) = (kernels.clone(), stream.clone(), start.clone());
            std::thread::spawn(move || -> Result<Instant> {
                let warm = (0..WARMUP)
                    .try_for_each(|_| launches::empty(&kernels).sync_on(&stream).map(drop));
                start.wait();
                warm?;
                for _ in 0..LAUNCHES {
                    launches::empty(&kernels).sync_on(&stream)?;
                }
                Ok(Instant::now())
            })
        })
        .collect();
    start.wait();
    let begun = Instant::now();
    let mut end = begun;
    for worker in workers {
        let finished = worker.join().map_err(|_| "a launching thread panicked")??;
        end = end.max(finished);
    }
    Ok(WORKERS as f64 * f64::from(LAUNCHES) / (end - begun).as_secs_f64())
}
