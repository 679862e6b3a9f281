//! In-process A/B of the graph rows of `bench/floors/graph_floor.c`, and the `graphs` example's
//! cycle taken apart: the crate's call and the raw driver call alternate in one process, round
//! after round, on the same objects, so a difference under the cross-process noise shows.
//!
//! `diag_graph_ab [ROUNDS]` (default 21) prints, for each row, the median over rounds of the
//! crate's time, the raw time and the median of the per-round ratios:
//!
//! - `instantiate`: a captured chain of 100 kernels, `Graph::instantiate` against
//!   `cuGraphInstantiateWithFlags` on another capture of the same chain;
//! - `upload_sync`: `GraphExec::upload` + `Stream::sync` against `cuGraphUpload` +
//!   `cuStreamSynchronize` on a fresh executable of the chain each round;
//! - `kernel_node_set_params`: `GraphExec::set_kernel_args` against
//!   `cuGraphExecKernelNodeSetParams` (200 calls a round);
//! - `host_func_sync`: `Stream::launch_host_func` + sync against `cuLaunchHostFunc` + sync
//!   (200 a round);
//! - the `graphs` example's SAXPY cycle over 2^20 floats (two uploads from pinned memory, the
//!   kernel, a download): `cycle_stream` (stream operations), `cycle_graph` (the captured graph
//!   replayed, nothing updated) and `cycle_graph_update` (a kernel-node update before each
//!   replay, as the example does), 50 cycles a round, each against the stream's time.

use std::ffi::c_void;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

#[path = "../../cuda-safe/benches/common/check.rs"]
mod check;

use check::check;
use cuda_safe::sys::{CUDA_KERNEL_NODE_PARAMS, CUgraphExec, driver};
use cuda_safe::{
    Capture, CaptureMode, CodeKind, Device, Graph, Kernel, LaunchConfig, PinnedMemoryResource,
    Program, ProgramOptions, Result, Stream, launch,
};

const ADD: &str = "extern \"C\" __global__ void add(int* p, int v) { atomicAdd(p, v); }\n";
const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\n";
const CHAIN: usize = 100;
const CALLS: usize = 200;
const CYCLES: usize = 50;
const N: usize = 1 << 20;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn us(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

/// One row's rounds: the crate's times, the raw ones.
#[derive(Default)]
struct Row {
    ours: Vec<f64>,
    raw: Vec<f64>,
}

impl Row {
    fn print(mut self, name: &str) {
        let mut ratios: Vec<f64> = self
            .ours
            .iter()
            .zip(&self.raw)
            .map(|(a, b)| a / b)
            .collect();
        let (ours, raw) = (median(&mut self.ours), median(&mut self.raw));
        let ratio = median(&mut ratios);
        println!("AB {name:<24} ours {ours:>10.3} us  raw {raw:>10.3} us  ratio {ratio:.3}");
        println!("FIG ab_{name}_ratio {ratio:.4} x");
    }
}

fn main() -> ExitCode {
    let rounds = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(21usize);
    match run(rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn kernel(device: &Device, source: &str, name: &str) -> Result<Kernel> {
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    Program::new(source, options)?
        .compile(CodeKind::Cubin)?
        .load()?
        .get_kernel(name)
}

/// A capture of the chain of `CHAIN` adds on `ptr`.
fn chain(stream: &Stream, add: &Kernel, ptr: u64) -> Result<Graph> {
    let one = LaunchConfig::new(1, 1);
    // SAFETY: the adds update the one int at `ptr`, which outlives every graph of this run.
    let capture = unsafe { Capture::begin(stream, CaptureMode::ThreadLocal)? };
    for _ in 0..CHAIN {
        // SAFETY: as above.
        unsafe { launch(stream, &one, add, (ptr, 1i32))? };
    }
    capture.end()
}

fn raw_instantiate(graph: &Graph) -> Result<CUgraphExec> {
    let mut exec: CUgraphExec = std::ptr::null_mut();
    // SAFETY: a valid graph and out-pointer.
    check("cuGraphInstantiateWithFlags", unsafe {
        driver()?.cuGraphInstantiateWithFlags(&mut exec, graph.as_raw(), 0)?
    })?;
    Ok(exec)
}

fn raw_destroy(exec: CUgraphExec) -> Result<()> {
    // SAFETY: an executable this run instantiated and no longer uses.
    check("cuGraphExecDestroy", unsafe {
        driver()?.cuGraphExecDestroy(exec)?
    })
}

unsafe extern "C" fn count(data: *mut c_void) {
    // SAFETY: `data` is the `AtomicUsize` the round keeps alive until its stream synced.
    unsafe { &*data.cast::<AtomicUsize>() }.fetch_add(1, Ordering::Relaxed);
}

fn run(rounds: usize) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let driver = driver()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let add = kernel(&device, ADD, "add")?;
    let counter = pool.allocate_zeroed::<i32>(1, &stream)?;
    stream.sync()?;
    let ptr = counter.as_raw();

    let (mut instantiate, mut upload) = (Row::default(), Row::default());
    let (mut set, mut host) = (Row::default(), Row::default());
    let hits = Arc::new(AtomicUsize::new(0));
    let one = LaunchConfig::new(1, 1);
    for round in 0..rounds {
        let ours_first = round % 2 == 0;
        for ours in [ours_first, !ours_first] {
            // Instantiate, then upload + sync of that fresh executable.
            let graph = chain(&stream, &add, ptr)?;
            if ours {
                let start = Instant::now();
                let mut exec = graph.instantiate()?;
                instantiate.ours.push(us(start));
                let start = Instant::now();
                exec.upload(&stream)?;
                stream.sync()?;
                upload.ours.push(us(start));
                let first = exec.graph().nodes()?[0];
                let node = exec.graph().kernel_node(first, &add, &one)?;
                let start = Instant::now();
                for call in 0..CALLS {
                    // SAFETY: the same kernel on the same counter.
                    unsafe { exec.set_kernel_args(&node, (ptr, 1 + (call % 2) as i32))? };
                }
                set.ours.push(us(start) / CALLS as f64);
                exec.close()?;
            } else {
                let start = Instant::now();
                let exec = raw_instantiate(&graph)?;
                instantiate.raw.push(us(start));
                let start = Instant::now();
                // SAFETY: a valid executable and stream.
                unsafe {
                    check(
                        "cuGraphUpload",
                        driver.cuGraphUpload(exec, stream.as_raw())?,
                    )?;
                    check(
                        "cuStreamSynchronize",
                        driver.cuStreamSynchronize(stream.as_raw())?,
                    )?;
                }
                upload.raw.push(us(start));
                let first = graph.nodes()?[0];
                let mut params = CUDA_KERNEL_NODE_PARAMS::default();
                // SAFETY: a kernel node of this graph and a valid out-struct.
                check("cuGraphKernelNodeGetParams_v2", unsafe {
                    driver.cuGraphKernelNodeGetParams_v2(first.as_raw(), &mut params)?
                })?;
                let start = Instant::now();
                for call in 0..CALLS {
                    let mut value = 1 + (call % 2) as i32;
                    let mut address = ptr;
                    let mut args: [*mut c_void; 2] =
                        [(&raw mut address).cast(), (&raw mut value).cast()];
                    params.kernelParams = args.as_mut_ptr();
                    // SAFETY: the node's own parameters with the same kernel and counter.
                    check("cuGraphExecKernelNodeSetParams_v2", unsafe {
                        driver.cuGraphExecKernelNodeSetParams_v2(exec, first.as_raw(), &params)?
                    })?;
                }
                set.raw.push(us(start) / CALLS as f64);
                raw_destroy(exec)?;
            }
            // Host functions.
            let start = Instant::now();
            for _ in 0..CALLS {
                if ours {
                    let counted = hits.clone();
                    stream.launch_host_func(move || {
                        counted.fetch_add(1, Ordering::Relaxed);
                    })?;
                } else {
                    let data = Arc::as_ptr(&hits).cast_mut().cast::<c_void>();
                    // SAFETY: `hits` outlives the sync below; `count` matches CUhostFn.
                    check("cuLaunchHostFunc", unsafe {
                        driver.cuLaunchHostFunc(stream.as_raw(), Some(count), data)?
                    })?;
                }
                stream.sync()?;
            }
            let row = if ours { &mut host.ours } else { &mut host.raw };
            row.push(us(start) / CALLS as f64);
        }
    }
    instantiate.print("instantiate");
    upload.print("upload_sync");
    set.print("kernel_node_set_params");
    host.print("host_func_sync");
    let calls = hits.load(Ordering::Relaxed);
    println!("host calls {calls} of {}", 2 * rounds * CALLS);

    cycle(&device, &stream, rounds)?;
    println!("DONE");
    Ok(())
}

/// The `graphs` example's cycle: stream operations against the captured graph, with and
/// without a kernel-node update per replay.
fn cycle(device: &Device, stream: &Stream, rounds: usize) -> Result<()> {
    let pool = device.default_memory_resource()?;
    let pinned = PinnedMemoryResource::new(device)?;
    let saxpy = kernel(device, SAXPY, "saxpy")?;
    let host_x = pinned.allocate_from_host(&vec![1.0f32; N], stream)?;
    let host_y = pinned.allocate_from_host(&vec![2.0f32; N], stream)?;
    let mut host_out = pinned.allocate_zeroed::<f32>(N, stream)?;
    let mut x = pool.allocate_array::<f32>(N, stream)?;
    let mut y = pool.allocate_array::<f32>(N, stream)?;
    let mut out = pool.allocate_array::<f32>(N, stream)?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    let n = N as i32;
    let mut node = None;
    // SAFETY: every buffer outlives the graph and executable (declared before them).
    let graph = unsafe {
        Graph::capture(stream, CaptureMode::ThreadLocal, |capture| {
            x.copy_from(&host_x)?;
            y.copy_from(&host_y)?;
            node = Some(capture.launch(&config, &saxpy, (1.0f32, &x, &y, &mut out, n))?);
            host_out.copy_from(&out)?;
            Ok(())
        })?
    };
    let node = node.ok_or_else(|| cuda_safe::Error::invalid_argument("no node"))?;
    let mut exec = graph.instantiate()?;
    exec.upload(stream)?;
    stream.sync()?;
    let (mut streamed, mut replayed, mut updated) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for variant in (0..3).map(|i| (i + round) % 3) {
            let start = Instant::now();
            for cycle in 0..CYCLES {
                match variant {
                    0 => {
                        x.copy_from(&host_x)?;
                        y.copy_from(&host_y)?;
                        // SAFETY: as the capture.
                        unsafe { launch(stream, &config, &saxpy, (1.0f32, &x, &y, &mut out, n))? };
                        host_out.copy_from(&out)?;
                    }
                    1 => exec.launch(stream)?,
                    _ => {
                        let alpha = 1.0 + (cycle % 2) as f32;
                        // SAFETY: as the capture, with another alpha.
                        unsafe { exec.set_kernel_args(&node, (alpha, &x, &y, &mut out, n))? };
                        exec.launch(stream)?;
                    }
                }
                stream.sync()?;
            }
            let per = us(start) / CYCLES as f64;
            [&mut streamed, &mut replayed, &mut updated][variant].push(per);
        }
    }
    let check = host_out.as_host_slice::<f32>()?;
    let right = check.iter().all(|&v| v == 3.0 || v == 4.0);
    let base = streamed.clone();
    for (name, times) in [
        ("cycle_stream", streamed),
        ("cycle_graph", replayed),
        ("cycle_graph_update", updated),
    ] {
        let mut row = Row {
            ours: times,
            raw: base.clone(),
        };
        let label = format!("{name} (vs stream)");
        let mut ratios: Vec<f64> = row.ours.iter().zip(&row.raw).map(|(a, b)| a / b).collect();
        println!(
            "AB {label:<24} {:>10.3} us per cycle  ratio {:.3}",
            median(&mut row.ours),
            median(&mut ratios)
        );
    }
    println!("cycle results {}", if right { "OK" } else { "WRONG" });
    exec.close()?;
    Ok(())
}
