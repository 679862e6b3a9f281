//! The clock of the launch-throughput benchmarks from several threads, shared by
//! `launch_threads` and `diag_launch_threads`: as in `bench/launch_threads_floor.c`, every worker
//! gets ready, all start together, and the time runs from the common start to the last
//! worker's end.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use cuda_safe::{Error, Result};

/// Launches per second of `threads` workers making `launches` launches each. Each worker runs
/// `work` on its own thread; `work` must wait on the barrier it is given twice, once when it is
/// ready (warmed up, or failed: the others must not wait for it) and once more for the clock to
/// start, and return the time its launches were done.
pub fn launches_per_second<W>(threads: usize, launches: u32, work: W) -> Result<f64>
where
    W: Fn(&Barrier) -> Result<Instant> + Clone + Send + 'static,
{
    let ready = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (work, ready) = (work.clone(), ready.clone());
            std::thread::spawn(move || work(&ready))
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
