//! CUDA graphs and host callbacks: the loops of `bench/floors/graph_floor.c` through
//! `cuda-safe`, with the floor's figure names. A chain of 100 tiny kernels (each adds 1 to one
//! int) is launched on a stream, captured, instantiated, uploaded and replayed; one kernel
//! node's arguments are updated in the executable; a host function makes a round trip. The
//! counter is checked against the number of kernels run.
//!
//! Beside them, with no floor (the C program has no clustered row): on sm_90 and newer, a chain
//! of 100 explicit kernel nodes of 2 blocks, plain and in clusters of 2, replayed in turns in
//! the same process (`chain100_explicit_graph_launch_plus_sync`,
//! `chain100_cluster_graph_launch_plus_sync`, and their median per-replay ratio
//! `chain100_cluster_over_plain`).
//!
//! Prints `FIG name value unit` lines. Run beside the C floor in one job
//! (`bench/run_benchmarks.sh`), which turns both into one table of ratios.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

#[path = "common/figures.rs"]
mod figures;
use figures::{fig, median, us};

use cuda_safe::{
    Buffer, Capture, CaptureMode, CodeKind, Device, Graph, GraphExec, Kernel, LaunchConfig,
    Program, ProgramOptions, Result, Stream, StreamOptions, launch,
};

/// The floor's kernel, byte for byte.
const SOURCE: &str = "extern \"C\" __global__ void add(int* p, int v) { atomicAdd(p, v); }\n";
/// Kernels in the chain.
const CHAIN: usize = 100;
/// Timed repetitions of each loop.
const REPS: usize = 200;

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
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
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

    // Explicit chains of 2-block nodes, plain and clustered (sm_90 on), replayed in turns.
    let clustered_right = clustered_chains(&device, &stream, &add, &mut times)?;

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
    let right =
        usize::try_from(got).is_ok_and(|got| got == expected) && calls == REPS && clustered_right;
    println!(
        "counter {got} expected {expected} host calls {calls}/{REPS} {}",
        if right { "OK" } else { "WRONG" }
    );
    exec.close()?;
    println!("DONE");
    Ok(right)
}

/// A chain of `CHAIN` explicit kernel nodes of `config`, each adding 1 per thread to `counter`.
fn chain(
    stream: &Stream,
    add: &Kernel,
    config: &LaunchConfig,
    counter: &std::sync::Arc<Buffer>,
) -> Result<GraphExec> {
    let mut graph = Graph::new(stream.context())?;
    let mut last = Vec::new();
    for _ in 0..CHAIN {
        // SAFETY: add(int*, int) updates the one int of `counter`, which the graph keeps.
        let node = unsafe { graph.add_kernel(&last, config, add, (counter, 1i32))? };
        last = vec![node.node()];
    }
    let exec = graph.instantiate()?;
    exec.upload(stream)?;
    Ok(exec)
}

/// Replays a chain of plain 2-block nodes and one of 2-block clusters in turns and reports
/// both and their ratio; `Ok(false)` when a counter came out wrong. Nothing on a device
/// without clusters.
fn clustered_chains(
    device: &Device,
    stream: &Stream,
    add: &Kernel,
    times: &mut [f64],
) -> Result<bool> {
    if device.compute_capability()?.0 < 9 {
        println!("no thread-block clusters before sm_90: no clustered rows");
        return Ok(true);
    }
    let pool = device.default_memory_resource()?;
    let (plain_counter, cluster_counter) = (
        std::sync::Arc::new(pool.allocate_zeroed::<i32>(1, stream)?),
        std::sync::Arc::new(pool.allocate_zeroed::<i32>(1, stream)?),
    );
    let plain = chain(stream, add, &LaunchConfig::new(2, 1), &plain_counter)?;
    let clustered = chain(
        stream,
        add,
        &LaunchConfig::clusters(1, 2, 1)?,
        &cluster_counter,
    )?;
    for _ in 0..10 {
        plain.launch(stream)?;
        clustered.launch(stream)?;
    }
    stream.sync()?;
    let mut cluster_times = vec![0f64; times.len()];
    let mut ratios = vec![0f64; times.len()];
    for ((plain_time, cluster_time), ratio) in
        times.iter_mut().zip(&mut cluster_times).zip(&mut ratios)
    {
        let start = Instant::now();
        plain.launch(stream)?;
        stream.sync()?;
        *plain_time = us(start);
        let start = Instant::now();
        clustered.launch(stream)?;
        stream.sync()?;
        *cluster_time = us(start);
        *ratio = *cluster_time / *plain_time;
    }
    fig(
        "chain100_explicit_graph_launch_plus_sync",
        median(times),
        "us",
    );
    fig(
        "chain100_cluster_graph_launch_plus_sync",
        median(&mut cluster_times),
        "us",
    );
    fig("chain100_cluster_over_plain", median(&mut ratios), "x");
    let replays = 10 + times.len();
    let expected = i32::try_from(2 * CHAIN * replays).unwrap_or(i32::MAX);
    let (plain_got, cluster_got) = (
        plain_counter.to_vec::<i32>()?[0],
        cluster_counter.to_vec::<i32>()?[0],
    );
    println!(
        "clustered chains: plain {plain_got}, clustered {cluster_got}, expected {expected} each"
    );
    Ok(plain_got == expected && cluster_got == expected)
}
