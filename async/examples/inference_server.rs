//! An inference server's loop on the completion futures: a tokio runtime of 2 worker threads
//! serves 1,000 concurrent requests, each uploading a small input, launching a kernel,
//! downloading the output and awaiting it; then as composed operations (upload, launch,
//! download in one future) on a pool of the same streams; then the same requests are served by 1,000 blocking
//! OS threads, and by 2 threads calling `sync()`. Every result is checked. Prints, for each way,
//! requests per second and the p50 and p99 latency (every request arrives at the round's start,
//! and its latency runs to its checked result), the median of 5 rounds after a warm-up, and
//! the same as `FIG` lines.
//!
//! `cargo run --release --example inference_server [REQUESTS] [ROUNDS]` (1,000 and 5 by default).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cuda_safe::{
    CodeKind, Device, DeviceMemoryResource, Error, Kernel, LaunchConfig, Program, ProgramOptions,
    Result, Stream, launch,
};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{PoolPolicy, Reactor, StreamPool, op};

/// Words per request's input and output.
const WORDS: usize = 256;
/// Streams the requests share (request `i` runs on stream `i % STREAMS`).
const STREAMS: usize = 32;

const SOURCE: &str = r#"
extern "C" __global__ void infer(const unsigned* x, unsigned* y, unsigned a, unsigned b, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
"#;

/// What every way shares: the kernel, the memory pool, the streams.
#[derive(Clone)]
struct Server {
    kernel: Kernel,
    pool: DeviceMemoryResource,
    streams: Arc<Vec<Stream>>,
    /// The same streams as a pool, for the composed requests.
    lanes: StreamPool,
}

/// Request `id`'s input, and the output the model must give for it.
fn request(id: usize) -> (Vec<u32>, Vec<u32>) {
    let input: Vec<u32> = (0..WORDS as u32).map(|j| j ^ (id as u32)).collect();
    let output = input
        .iter()
        .map(|x| x.wrapping_mul(3).wrapping_add(id as u32))
        .collect();
    (input, output)
}

impl Server {
    fn stream(&self, id: usize) -> &Stream {
        &self.streams[id % STREAMS]
    }

    /// Queues the model on `x` into `y` for request `id`.
    fn infer(&self, id: usize, x: &cuda_safe::Buffer, y: &mut cuda_safe::Buffer) -> Result<()> {
        let config = LaunchConfig::for_num_elements(WORDS, 256)?;
        // SAFETY: `infer` reads WORDS words of `x` and writes WORDS of `y`, which both hold.
        unsafe {
            launch(
                self.stream(id),
                &config,
                &self.kernel,
                (x, y, 3u32, id as u32, WORDS),
            )
        }
    }

    /// One request, awaited: upload, launch, download.
    async fn serve_async(&self, id: usize) -> Result<bool> {
        let (input, expected) = request(id);
        let stream = self.stream(id);
        let mut x = self.pool.allocate_array::<u32>(WORDS, stream)?;
        let mut y = self.pool.allocate_array::<u32>(WORDS, stream)?;
        let uploaded = x.upload_async(&input);
        self.infer(id, &x, &mut y)?;
        let output = y.to_vec_async::<u32>().await?;
        uploaded.await?;
        Ok(output == expected)
    }

    /// One request as one composed operation on the pool's next stream: nothing is queued
    /// until the first poll, then the upload, the launch and the download, and one wait.
    async fn serve_composed(&self, id: usize) -> Result<bool> {
        let (input, expected) = request(id);
        let x = self.pool.allocate_array::<u32>(WORDS, &self.lanes.next())?;
        let y = self.pool.allocate_array::<u32>(WORDS, &self.lanes.next())?;
        let kernel = self.kernel.clone();
        let (_x, (_y, values)) = op::upload(x, input)
            .then(move |x| {
                op::on_stream((x, y), move |(x, y), s| {
                    let config = LaunchConfig::for_num_elements(WORDS, 256)?;
                    // SAFETY: `infer` reads WORDS words of `x` and writes WORDS of `y`, which
                    // both hold.
                    unsafe { s.launch(&config, &kernel, (&*x, &mut *y, 3u32, id as u32, WORDS)) }
                })
            })
            .then(|(x, y)| op::download::<u32>(y).then(move |fetched| op::value((x, fetched))))
            .run(&self.lanes)
            .await?;
        Ok(values.to_vec()? == expected)
    }

    /// One request, blocking: upload and wait, launch, download and wait.
    fn serve_blocking(&self, id: usize) -> Result<bool> {
        let (input, expected) = request(id);
        let stream = self.stream(id);
        let x = self.pool.allocate_from_host(&input, stream)?;
        let mut y = self.pool.allocate_array::<u32>(WORDS, stream)?;
        self.infer(id, &x, &mut y)?;
        Ok(y.to_vec::<u32>()? == expected)
    }
}

/// One round's requests per second, each request's latency, and how many were right.
struct Round {
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

/// Every request as a task on a tokio runtime of 2 workers.
fn on_tokio(server: &Server, runtime: &tokio::runtime::Runtime, requests: usize) -> Result<Round> {
    runtime.block_on(async {
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for id in 0..requests {
            let server = server.clone();
            tasks.spawn(async move {
                let right = server.serve_async(id).await?;
                Ok::<_, Error>((start.elapsed(), right))
            });
        }
        let mut results = Vec::with_capacity(requests);
        while let Some(joined) = tasks.join_next().await {
            results.push(joined.map_err(|_| Error::invalid_argument("a request task panicked"))??);
        }
        Ok(round_of(start, results))
    })
}

/// Every request as a composed operation, a task on a tokio runtime of 2 workers.
fn on_tokio_composed(
    server: &Server,
    runtime: &tokio::runtime::Runtime,
    requests: usize,
) -> Result<Round> {
    runtime.block_on(async {
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for id in 0..requests {
            let server = server.clone();
            tasks.spawn(async move {
                let right = server.serve_composed(id).await?;
                Ok::<_, Error>((start.elapsed(), right))
            });
        }
        let mut results = Vec::with_capacity(requests);
        while let Some(joined) = tasks.join_next().await {
            results.push(joined.map_err(|_| Error::invalid_argument("a request task panicked"))??);
        }
        Ok(round_of(start, results))
    })
}

/// Each request on a blocking thread of its own (all started before the clock).
fn on_threads(server: &Server, requests: usize) -> Result<Round> {
    let go = Arc::new(Barrier::new(requests + 1));
    let start = Arc::new(std::sync::OnceLock::<Instant>::new());
    let threads: Vec<_> = (0..requests)
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
                .map_err(|error| Error::invalid_argument(format!("no thread: {error}")))
        })
        .collect::<Result<_>>()?;
    let began = Instant::now();
    let _ = start.set(began);
    go.wait();
    let mut results = Vec::with_capacity(requests);
    for thread in threads {
        results.push(
            thread
                .join()
                .map_err(|_| Error::invalid_argument("a request thread panicked"))??,
        );
    }
    Ok(round_of(began, results))
}

/// The requests split between 2 threads, each serving its share one by one with `sync()`.
fn on_two_syncing_threads(server: &Server, requests: usize) -> Result<Round> {
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
        results.extend(
            half.join()
                .map_err(|_| Error::invalid_argument("a serving thread panicked"))??,
        );
    }
    Ok(round_of(start, results))
}

/// The value at quantile `q` of sorted `values`.
fn quantile(values: &[Duration], q: f64) -> Duration {
    let index = ((values.len() as f64 - 1.0) * q).round() as usize;
    values.get(index).copied().unwrap_or_default()
}

/// Runs `way` for a warm-up round and `rounds` more; prints its row and `FIG` lines.
fn measure(
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
        return Err(Error::invalid_argument(format!(
            "{label}: {} of {} results were wrong",
            rounds * requests - correct,
            rounds * requests
        )));
    }
    rates.sort_by(f64::total_cmp);
    latencies.sort();
    let rate = rates[rates.len() / 2];
    let (p50, p99) = (quantile(&latencies, 0.50), quantile(&latencies, 0.99));
    println!(
        "{label:<34} {rate:>12.0} {:>10.3} {:>10.3} {correct:>9}",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    println!("FIG server_{name}_requests_per_s {rate:.1} 1/s");
    println!("FIG server_{name}_p50 {:.1} us", p50.as_secs_f64() * 1e6);
    println!("FIG server_{name}_p99 {:.1} us", p99.as_secs_f64() * 1e6);
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"));
    let requests = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(5);
    let device = Device::new(0)?;
    device.set_current()?;
    let kernel = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("infer")?;
    let streams = (0..STREAMS)
        .map(|_| device.create_stream(Default::default()))
        .collect::<Result<Vec<_>>>()?;
    let lanes = StreamPool::with_streams(streams.clone(), PoolPolicy::RoundRobin)?;
    let server = Server {
        kernel,
        pool: device.default_memory_resource()?,
        streams: Arc::new(streams),
        lanes,
    };
    // A server holds the reactor for its life: its thread and caches stay warm.
    let _reactor = Reactor::shared();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .map_err(|error| Error::invalid_argument(format!("no tokio runtime: {error}")))?;
    println!(
        "{requests} concurrent requests of {WORDS} words over {STREAMS} streams, median of \
         {rounds} rounds:"
    );
    println!(
        "{:<34} {:>12} {:>10} {:>10} {:>9}",
        "way", "requests/s", "p50 (ms)", "p99 (ms)", "checked"
    );
    measure(
        "await_tokio_2",
        "tokio, 2 workers, awaiting",
        rounds,
        requests,
        || on_tokio(&server, &runtime, requests),
    )?;
    measure(
        "composed_tokio_2",
        "tokio, 2 workers, composed on a pool",
        rounds,
        requests,
        || on_tokio_composed(&server, &runtime, requests),
    )?;
    measure(
        "blocking_threads",
        &format!("{requests} blocking OS threads"),
        rounds,
        requests,
        || on_threads(&server, requests),
    )?;
    measure(
        "sync_2_threads",
        "2 threads calling sync()",
        rounds,
        requests,
        || on_two_syncing_threads(&server, requests),
    )?;
    Ok(())
}
