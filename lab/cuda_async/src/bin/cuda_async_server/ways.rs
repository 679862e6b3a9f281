//! The ways of serving a round, and the measure of each, as `async/examples/inference_server.rs`
//! has them: every request arrives at the round's start and its latency runs to its checked
//! result; a warm-up round, then the median rate of `rounds` rounds and the p50 and p99 of all
//! their latencies; every result checked.

use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use cuda_async_lab::Result;
use cuda_async_lab::figures::{fig1, quantile};

use crate::server::{Lane, Server};

/// One round's requests per second, each request's latency, and how many were right.
pub struct Round {
    per_second: f64,
    latencies: Vec<Duration>,
    correct: usize,
}

fn round_of(start: Instant, results: Vec<(Duration, bool)>) -> Round {
    let total = start.elapsed();
    Round {
        per_second: results.len() as f64 / total.as_secs_f64(),
        correct: results.iter().filter(|(_, right)| *right).count(),
        latencies: results.into_iter().map(|(latency, _)| latency).collect(),
    }
}

/// Every request as a task on `runtime` (2 workers), on `lane`.
pub fn on_tokio(
    server: &Server,
    runtime: &tokio::runtime::Runtime,
    requests: usize,
    lane: Lane,
) -> Result<Round> {
    runtime.block_on(async {
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for id in 0..requests {
            let server = server.clone();
            tasks.spawn(async move {
                let right = server.serve(id, lane).await?;
                Ok::<_, cuda_async_lab::Error>((start.elapsed(), right))
            });
        }
        let mut results = Vec::with_capacity(requests);
        while let Some(joined) = tasks.join_next().await {
            results.push(joined??);
        }
        Ok(round_of(start, results))
    })
}

/// Each request on a blocking thread of its own (all started before the clock).
pub fn on_threads(server: &Server, requests: usize) -> Result<Round> {
    let go = Arc::new(Barrier::new(requests + 1));
    let start = Arc::new(OnceLock::<Instant>::new());
    let threads = (0..requests)
        .map(|id| {
            let (server, go, start) = (server.clone(), go.clone(), start.clone());
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    go.wait();
                    let right = server.serve_blocking(id);
                    let began = start.get().copied().unwrap_or_else(Instant::now);
                    right.map(|right| (began.elapsed(), right))
                })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let began = Instant::now();
    let _ = start.set(began);
    go.wait();
    let mut results = Vec::with_capacity(requests);
    for thread in threads {
        results.push(thread.join().map_err(|_| "a request thread panicked")??);
    }
    Ok(round_of(began, results))
}

/// The requests split between 2 threads, each serving its share one by one, blocking.
pub fn on_two_syncing_threads(server: &Server, requests: usize) -> Result<Round> {
    let start = Instant::now();
    let halves: Vec<_> = (0..2)
        .map(|half| {
            let server = server.clone();
            std::thread::spawn(move || -> Result<Vec<(Duration, bool)>> {
                let mut served = Vec::with_capacity(requests / 2 + 1);
                for id in (half..requests).step_by(2) {
                    let right = server.serve_blocking(id)?;
                    served.push((start.elapsed(), right));
                }
                Ok(served)
            })
        })
        .collect();
    let mut results = Vec::with_capacity(requests);
    for half in halves {
        results.extend(half.join().map_err(|_| "a serving thread panicked")??);
    }
    Ok(round_of(start, results))
}

/// Runs `way` for a warm-up round and `rounds` more; prints its row and `FIG` lines.
pub fn measure(
    name: &str,
    label: &str,
    rounds: usize,
    requests: usize,
    mut way: impl FnMut() -> Result<Round>,
) -> Result<()> {
    way()?;
    let (mut rates, mut latencies, mut correct) = (Vec::new(), Vec::new(), 0);
    for _ in 0..rounds {
        let round = way()?;
        rates.push(round.per_second);
        latencies.extend(round.latencies);
        correct += round.correct;
    }
    if correct != rounds * requests {
        return Err(format!(
            "{label}: {} of {} results were wrong",
            rounds * requests - correct,
            rounds * requests
        )
        .into());
    }
    rates.sort_by(f64::total_cmp);
    latencies.sort();
    let rate = rates.get(rates.len() / 2).copied().unwrap_or(f64::NAN);
    let (p50, p99) = (quantile(&latencies, 0.50), quantile(&latencies, 0.99));
    println!(
        "{label:<38} {rate:>12.0} {:>10.3} {:>10.3} {correct:>9}",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    fig1(&format!("server_{name}_requests_per_s"), rate, "1/s");
    fig1(&format!("server_{name}_p50"), p50.as_secs_f64() * 1e6, "us");
    fig1(&format!("server_{name}_p99"), p99.as_secs_f64() * 1e6, "us");
    Ok(())
}
