//! The article's SAXPY cycle (`out = a * x + y`: upload x and y, the kernel, download out) as a
//! CUDA graph: captured once from a stream, instantiated, then replayed 1,000 times, each time
//! with a new `a` set in the executable's kernel node, and each result checked against the CPU.
//! It prints the cost of one replay beside the same cycle queued as stream operations, timed the
//! same way.
//!
//! Here the two cost about the same: 12 MiB of copies over PCIe take the time, and the host's
//! enqueue cost, which a graph cuts from four calls to one, is a few microseconds of it. A graph
//! pays off where launches are many and small (the `graph` benchmark's chain of 100 tiny
//! kernels replays several times faster than it launches one by one); this example shows the
//! mechanics: capture, instantiate, update a node, replay.
//!
//! ```text
//! cargo run --release -p cuda-safe --example graphs
//! ```
//!
//! With no driver or GPU it prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{
    CaptureMode, CodeKind, Device, Graph, LaunchConfig, PinnedMemoryResource, Program,
    ProgramOptions, Result, launch,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float alpha, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = alpha * x[idx] + y[idx];
}
"#;

/// Elements per array.
const N: usize = 1 << 20;
/// Replays, each with its own `a`.
const REPLAYS: usize = 1000;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Deterministic pseudo-random floats in [-1, 1).
fn random_floats(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// The largest difference between `out` and `alpha * x + y`.
fn worst_error(out: &[f32], x: &[f32], y: &[f32], alpha: f32) -> f32 {
    out.iter()
        .zip(x.iter().zip(y))
        .map(|(&o, (&a, &b))| (o - (alpha * a + b)).abs())
        .fold(0f32, |worst, error| {
            if error.is_nan() {
                f32::INFINITY
            } else {
                worst.max(error)
            }
        })
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let pinned = PinnedMemoryResource::new(&device)?;
    let saxpy = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel("saxpy")?;

    // Every buffer the graph replays is declared before it, so it is dropped after it.
    let (x_host, y_host) = (random_floats(N, 1), random_floats(N, 2));
    let host_x = pinned.allocate_from_host(&x_host, &stream)?;
    let host_y = pinned.allocate_from_host(&y_host, &stream)?;
    let mut host_out = pinned.allocate_zeroed::<f32>(N, &stream)?;
    let mut x = pool.allocate_array::<f32>(N, &stream)?;
    let mut y = pool.allocate_array::<f32>(N, &stream)?;
    let mut out = pool.allocate_array::<f32>(N, &stream)?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    let n = i32::try_from(N).map_err(|_| cuda_safe::Error::invalid_argument("N fits an int"))?;

    // The cycle, captured once.
    let mut saxpy_node = None;
    let started = Instant::now();
    // SAFETY: every buffer used outlives the graph and its executable (declared before them);
    // saxpy reads n floats of x and y and writes n floats of out, all of which hold N = n.
    let graph = unsafe {
        Graph::capture(&stream, CaptureMode::ThreadLocal, |capture| {
            x.copy_from(&host_x)?;
            y.copy_from(&host_y)?;
            saxpy_node = Some(capture.launch(&config, &saxpy, (1.0f32, &x, &y, &mut out, n))?);
            host_out.copy_from(&out)?;
            Ok(())
        })?
    };
    let node = saxpy_node.ok_or_else(|| cuda_safe::Error::invalid_argument("no SAXPY node"))?;
    let mut exec = graph.instantiate()?;
    exec.upload(&stream)?;
    stream.sync()?;
    let built = started.elapsed();

    // 1,000 replays, a new `a` each time, each checked.
    let mut worst = 0f32;
    let mut replaying = std::time::Duration::ZERO;
    for replay in 0..REPLAYS {
        let alpha = 0.5 + replay as f32 / 250.0;
        let started = Instant::now();
        // SAFETY: as above, with another alpha.
        unsafe { exec.set_kernel_args(&node, (alpha, &x, &y, &mut out, n))? };
        exec.launch(&stream)?;
        stream.sync()?;
        replaying += started.elapsed();
        let error = worst_error(host_out.as_host_slice::<f32>()?, &x_host, &y_host, alpha);
        if error > 1e-5 {
            return Err(cuda_safe::Error::invalid_argument(format!(
                "replay {replay} (a = {alpha}) is wrong: largest error {error}"
            )));
        }
        worst = worst.max(error);
    }

    // The same cycle as stream operations, timed and checked the same way: each cycle synced,
    // then checked on the CPU outside the timing (while the GPU idles, as between replays).
    let mut streaming = std::time::Duration::ZERO;
    for cycle in 0..REPLAYS {
        let alpha = 0.5 + cycle as f32 / 250.0;
        let started = Instant::now();
        x.copy_from(&host_x)?;
        y.copy_from(&host_y)?;
        // SAFETY: as above.
        unsafe { launch(&stream, &config, &saxpy, (alpha, &x, &y, &mut out, n))? };
        host_out.copy_from(&out)?;
        stream.sync()?;
        streaming += started.elapsed();
        let error = worst_error(host_out.as_host_slice::<f32>()?, &x_host, &y_host, alpha);
        if error > 1e-5 {
            return Err(cuda_safe::Error::invalid_argument(format!(
                "stream cycle {cycle} (a = {alpha}) is wrong: largest error {error}"
            )));
        }
    }
    exec.close()?;

    println!(
        "SAXPY cycle over {N} floats (2 uploads, kernel, download) as one graph: captured and \
         instantiated in {:.2} ms, {REPLAYS} replays with a new a each at {:.1} us per replay \
         (the same cycle as stream operations: {:.1} us), largest error {worst:e}",
        built.as_secs_f64() * 1e3,
        replaying.as_secs_f64() * 1e6 / REPLAYS as f64,
        streaming.as_secs_f64() * 1e6 / REPLAYS as f64,
    );
    Ok(())
}
