//! A graph launched from the device against the same graph launched from the host, in one
//! process: one kernel node (`step`: it counts, and while the count is under a limit held in
//! device memory it tail-launches its own graph again), instantiated for device launch and
//! uploaded, the kernel linked with the device runtime (`libcudadevrt.a`, found as
//! `LinkInput::device_runtime_path` says).
//!
//! - `device_graph_host_launch_us`: 1,000 launches from the host (`cuGraphLaunch`, the limit at
//!   0), then a sync: time per launch;
//! - `device_graph_tail_launch_us`: one launch from the host whose kernel tail-launches the
//!   graph again until it has run 1,000 times, then a sync: time per launch;
//! - `device_graph_host_over_tail`: the first over the second.
//!
//! Medians of 20 rounds; the counter is checked after each. Prints `FIG name value unit`
//! lines; `bench/run_benchmarks.sh` runs it in the rounds of `bench/floors/graph_floor.c`
//! (whose `graph_launch_enqueue` is the C cost of one host launch).

use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::{
    CodeKind, Device, DeviceGraphHandle, Graph, InstantiateOptions, LaunchConfig, Linker,
    LinkerOptions, Program, ProgramOptions, Result, StreamOptions,
};

/// The graph's one kernel. `own` holds the graph's own device handle.
const SOURCE: &str = r#"
extern "C" __global__ void step(int* count, const int* limit, const cudaGraphExec_t* own) {
    int done = atomicAdd(count, 1) + 1;
    if (done < *limit) {
        cudaGraphLaunch(*own, cudaStreamGraphTailLaunch);
    }
}
"#;
/// Launches per round.
const LAUNCHES: i32 = 1000;
/// Timed rounds of each way.
const ROUNDS: usize = 20;
/// Untimed rounds first.
const WARMUP: usize = 2;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
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

/// Runs both ways; `Ok(false)` when a round's count came out wrong.
fn run() -> Result<bool> {
    let device = Device::new(0)?;
    device.set_current()?;
    let rdc = ProgramOptions::default().relocatable_device_code(true);
    let ptx = Program::new(SOURCE, rdc)?.compile(CodeKind::Ptx)?;
    let mut linker = Linker::new(LinkerOptions::default())?;
    linker.add_compiled(ptx.code(), "device_graph.ptx")?;
    linker.add_device_runtime()?;
    let code = linker.link(CodeKind::Cubin)?.load()?;
    let step = code.get_kernel("step")?;

    let stream = device.create_stream(StreamOptions::default())?;
    let pool = device.default_memory_resource()?;
    let mut count = pool.allocate_zeroed::<i32>(1, &stream)?;
    let mut limit = pool.allocate_zeroed::<i32>(1, &stream)?;
    let mut own = pool.allocate_zeroed::<DeviceGraphHandle>(1, &stream)?;
    let mut graph = Graph::new(stream.context())?;
    // SAFETY: step(int*, const int*, const cudaGraphExec_t*) touches one element of each
    // buffer; the buffers outlive the executable, closed before they are dropped.
    unsafe {
        graph.add_kernel(
            &[],
            &LaunchConfig::new(1, 1),
            &step,
            (count.as_raw(), limit.as_raw(), own.as_raw()),
        )?
    };
    let exec = graph.instantiate_with(InstantiateOptions::default().device_launch(true))?;
    own.copy_from_host(&[exec.device_handle()?])?;
    exec.upload(&stream)?;
    stream.sync()?;

    let (mut host, mut tail) = (Vec::new(), Vec::new());
    let mut right = true;
    for round in 0..WARMUP + ROUNDS {
        // From the host: LAUNCHES launches, none relaunching.
        count.fill(0i32)?;
        limit.fill(0i32)?;
        stream.sync()?;
        let start = Instant::now();
        for _ in 0..LAUNCHES {
            exec.launch(&stream)?;
        }
        stream.sync()?;
        let from_host = start.elapsed().as_secs_f64() * 1e6 / f64::from(LAUNCHES);
        let host_count = count.to_vec::<i32>()?[0];

        // From the device: one launch, relaunched by its kernel until LAUNCHES have run.
        count.fill(0i32)?;
        limit.fill(LAUNCHES)?;
        stream.sync()?;
        let start = Instant::now();
        exec.launch(&stream)?;
        stream.sync()?;
        let from_device = start.elapsed().as_secs_f64() * 1e6 / f64::from(LAUNCHES);
        let tail_count = count.to_vec::<i32>()?[0];

        if host_count != LAUNCHES || tail_count != LAUNCHES {
            println!(
                "round {round}: counted {host_count} host and {tail_count} device launches, \
                 expected {LAUNCHES} each: WRONG"
            );
            right = false;
        }
        if round >= WARMUP {
            host.push(from_host);
            tail.push(from_device);
        }
    }
    let (host, tail) = (median(&mut host), median(&mut tail));
    fig("device_graph_host_launch_us", host, "us");
    fig("device_graph_tail_launch_us", tail, "us");
    fig("device_graph_host_over_tail", host / tail, "x");
    println!("counts {}", if right { "OK" } else { "WRONG" });
    exec.close()?;
    println!("DONE");
    Ok(right)
}
