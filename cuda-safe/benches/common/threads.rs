//! The clock of the launch-throughput benchmark from several threads (`launch_threads`): as in
//! `bench/floors/launch_threads_floor.c`, every worker gets ready, all start together, and the
//! time runs from the common start to the last worker's end.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use cuda_safe::{Error, Result};

/// Launches per worker per repeat, as in `bench/floors/launch_threads_floor.c`.
pub const LAUNCHES: u32 = 20_000;
/// Launches per worker before the clock starts, as in the floor.
pub const WARMUP: u32 = 1_000;
/// Repeats per thread count; the figure is their median, as in the floor.
pub const REPEATS: usize = 5;

/// Launches per second of `threads` workers making `launches` launches each. Each worker, on
/// its own thread, calls `prepare` (its stream, and the warm-up), waits for the others and the
/// common start, then calls `run` with what `prepare` made; the clock stops for it when `run`
/// returns, before what `prepare` made is dropped. A worker whose `prepare` fails still takes
/// part in the start, so that the others are not left waiting, and its error is returned.
pub fn launches_per_second<T, P, R>(
    threads: usize,
    launches: u32,
    prepare: P,
    run: R,
) -> Result<f64>
where
    P: Fn() -> Result<T> + Clone + Send + 'static,
    R: Fn(&T) -> Result<()> + Clone + Send + 'static,
{
    let ready = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (prepare, run, ready) = (prepare.clone(), run.clone(), ready.clone());
            std::thread::spawn(move || -> Result<Instant> {
                let prepared = prepare();
                ready.wait(); // everyone is ready (or failed)
                ready.wait(); // the clock starts
                let prepared = prepared?;
                run(&prepared)?;
                let end = Instant::now();
                drop(prepared);
                Ok(end)
            })
        })
        .collect();
    ready.wait();
    let start = Instant::now();
    ready.wait();
    let mut end = start;
    for worker in workers {
        let finished = worker
            .join()
            .map_err(|_| Error::invalid_argument("a launching thread panicked"))??;
        end = end.max(finished);
    }
    Ok(threads as f64 * f64::from(launches) / (end - start).as_secs_f64())
}
