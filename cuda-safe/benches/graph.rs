//! CUDA graphs and host callbacks: the loops of `bench/floors/graph_floor.c` through
//! `cuda-safe`, with the floor's figure names. A chain of 100 tiny kernels (each adds 1 to one
//! int) is launched on a stream, captured, instantiated, uploaded and replayed; one kernel
//! node's arguments are updated in the executable; a host function makes a round trip. The
//! counter is checked against the number of kernels run.
//!
//! Prints `FIG name value unit` lines. Run beside the C floor in one job
//! (`bench/run_benchmarks.sh`), which turns both into one table of ratios.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cuda_safe::{
    Capture, CaptureMode, CodeKind, Device, LaunchConfig, Program, ProgramOptions, Result,
    StreamOptions, launch,
};

/// The floor's kernel, byte for byte.
const SOURCE: &str = "extern \"C\" __global__ void add(int* p, int v) { atomicAdd(p, v); }\n";
/// Kernels in the chain.
const CHAIN: usize = 100;
/// Timed repetitions of each loop.
const REPS: usize = 200;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// Microseconds since `start`.
fn us(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs every loop; `Ok(false)` when the counter or the host calls came out wrong.
fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let options = ProgramOptions {
        arch: Some(format!("sm_{}", device.arch()?)),
        ..Default::default()
    };
    let code = Program::new(SOURCE, options)?
        .compile(CodeKind::Cubin)?
        .load()?;
    let add = code.get_kernel("add")?;
    let stream = device.create_stream(StreamOptions::default())?;
    let pool = device.default_memory_resource()?;
    let counter = pool.allocate_zeroed::<i32>(1, &stream)?;
    stream.sync()?;
    // The counter's address, as the floor passes it; the buffer outlives every launch below.
    let ptr = counter.as_raw();
    let one = LaunchConfig::new(1, 1);
    let mut expected = 0usize;
    let mut times = vec![0f64; REPS];

    // 100 stream launches + sync.
    for time in &mut times {
        let start = Instant::now();
        for _ in 0..CHAIN {
            // SAFETY: add(int*, int) updates the one int of `counter`.
            unsafe { launch(&stream, &one, &add, (ptr, 1i32))? };
        }
        stream.sync()?;
        *time = us(start);
        expected += CHAIN;
    }
    fig(
        "chain100_stream_launches_plus_sync",
        median(&mut times),
        "us",
    );

    // Capture, instantiate, upload.
    let start = Instant::now();
    // SAFETY: the graph replays adds on `counter`, which outlives the graph and executable.
    let capture = unsafe { Capture::begin(&stream, CaptureMode::ThreadLocal)? };
    for _ in 0..CHAIN {
        // SAFETY: as above.
        unsafe { launch(&stream, &one, &add, (ptr, 1i32))? };
    }
    let graph = capture.end()?;
    fig("chain100_capture", us(start), "us");
    let start = Instant::now();
    let mut exec = graph.instantiate()?;
    fig("chain100_instantiate", us(start), "us");
    let start = Instant::now();
    exec.upload(&stream)?;
    stream.sync()?;
    fig("chain100_upload_plus_sync", us(start), "us");

    // Replay.
    for _ in 0..10 {
        exec.launch(&stream)?;
        expected += CHAIN;
    }
    stream.sync()?;
    for time in &mut times {
        let start = Instant::now();
        exec.launch(&stream)?;
        stream.sync()?;
        *time = us(start);
        expected += CHAIN;
    }
    let replay = median(&mut times);
    fig("chain100_graph_launch_plus_sync", replay, "us");
    fig("chain100_graph_per_kernel", replay / CHAIN as f64, "us");
    let start = Instant::now();
    for _ in 0..REPS {
        exec.launch(&stream)?;
        expected += CHAIN;
    }
    fig("graph_launch_enqueue", us(start) / REPS as f64, "us");
    stream.sync()?;

    // Update one kernel node's arguments in place (the first node: v = 2, then back).
    let first = exec
        .graph()
        .nodes()?
        .first()
        .copied()
        .ok_or_else(|| cuda_safe::Error::invalid_argument("the captured graph has no node"))?;
    let node = exec.graph().kernel_node(first, &add, &one)?;
    for (rep, time) in times.iter_mut().enumerate() {
        let value = if rep % 2 == 1 { 1i32 } else { 2 };
        let start = Instant::now();
        // SAFETY: the same kernel on the same counter, with another increment.
        unsafe { exec.set_kernel_args(&node, (ptr, value))? };
        *time = us(start);
    }
    // SAFETY: as above.
    unsafe { exec.set_kernel_args(&node, (ptr, 1i32))? };
    fig(
        "graph_exec_kernel_node_set_params",
        median(&mut times),
        "us",
    );

    // Host function round trip.
    let hits = Arc::new(AtomicUsize::new(0));
    for time in &mut times {
        let counted = hits.clone();
        let start = Instant::now();
        stream.launch_host_func(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        })?;
        stream.sync()?;
        *time = us(start);
    }
    fig("host_func_plus_sync", median(&mut times), "us");

    let got = counter.to_vec::<i32>()?[0];
    let calls = hits.load(Ordering::Relaxed);
    let right = usize::try_from(got).is_ok_and(|got| got == expected) && calls == REPS;
    println!(
        "counter {got} expected {expected} host calls {calls}/{REPS} {}",
        if right { "OK" } else { "WRONG" }
    );
    exec.close()?;
    println!("DONE");
    Ok(right)
}
