//! A loop that runs on the GPU until a device-side condition holds: Newton's iteration for the
//! square roots of a million numbers, `x <- (x + a / x) / 2`, repeated inside a conditional
//! *while* node until the largest relative residual `|x * x - a| / a` is under a tolerance.
//! A kernel of the loop's body reduces the residual and sets the node's condition
//! (`cudaGraphSetConditional`); the host launches the graph once and waits, never deciding
//! anything in between. Two data sets (roots of numbers up to 100, then up to 10^8) take
//! different numbers of iterations from the same graph; each result is checked against the
//! CPU's `sqrt`.
//!
//! ```text
//! cargo run --release -p cuda-safe --example graph_while
//! ```
//!
//! Needs a CUDA 12.4 driver (conditional nodes). With no driver or GPU, or an older one, it
//! prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use cuda_safe::{
    CodeKind, ConditionalHandle, Device, Graph, LaunchConfig, PinnedMemoryResource, Program,
    ProgramOptions, Result,
};

const KERNELS: &str = r#"
extern "C" __global__ void newton_step(float* x, const float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.5f * (x[i] + a[i] / x[i]);
}

// One block of 1024 threads: the largest relative residual, the iteration count, and whether
// to go round again.
extern "C" __global__ void residual(const float* x, const float* a, int n, float tolerance,
                                   int max_iterations, float* worst_out, int* iterations,
                                   cudaGraphConditionalHandle again) {
    __shared__ float worst[1024];
    float mine = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        mine = fmaxf(mine, fabsf(x[i] * x[i] - a[i]) / a[i]);
    }
    worst[threadIdx.x] = mine;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) worst[threadIdx.x] = fmaxf(worst[threadIdx.x], worst[threadIdx.x + half]);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        int done = *iterations + 1;
        *iterations = done;
        *worst_out = worst[0];
        cudaGraphSetConditional(again, worst[0] > tolerance && done < max_iterations ? 1 : 0);
    }
}
"#;

/// Numbers whose roots are taken.
const N: usize = 1 << 20;
/// The residual the loop stops under.
const TOLERANCE: f32 = 1e-5;
/// The loop stops after this many iterations whatever the residual.
const MAX_ITERATIONS: i32 = 100;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Deterministic numbers in [1, top).
fn numbers(n: usize, top: f32, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            1.0 + (seed >> 40) as f32 / (1u64 << 24) as f32 * (top - 1.0)
        })
        .collect()
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let context = device.context()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let pinned = PinnedMemoryResource::new(&device)?;
    let source = format!("{}{KERNELS}", ConditionalHandle::DEVICE_DECLARATION);
    let code = Program::new(&source, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?;
    let (step, residual) = (
        code.get_kernel("newton_step")?,
        code.get_kernel("residual")?,
    );

    // The input is copied in by the graph from pinned memory this function owns, declared
    // before the graph so it outlives it; the rest is shared with the graph.
    let mut input = pinned.allocate_zeroed::<f32>(N, &stream)?;
    let a = Arc::new(pool.allocate_array::<f32>(N, &stream)?);
    let x = Arc::new(pool.allocate_array::<f32>(N, &stream)?);
    let worst = Arc::new(pool.allocate_zeroed::<f32>(1, &stream)?);
    let iterations = Arc::new(pool.allocate_zeroed::<i32>(1, &stream)?);
    let n = i32::try_from(N).map_err(|_| cuda_safe::Error::invalid_argument("N fits an int"))?;

    let mut graph = Graph::new(&context)?;
    let again = graph.conditional_handle(Some(1))?;
    // The loop's body: one Newton step, then the residual, which decides whether to loop.
    let mut body = Graph::new(&context)?;
    let elements = LaunchConfig::for_num_elements(N, 256)?;
    let one_block = LaunchConfig::new(1, 1024);
    // SAFETY: newton_step updates n floats of x reading n of a; residual reads them, writes
    // one float and one int and sets `again`; every buffer holds what it is used for and is
    // kept by the graph.
    unsafe {
        let stepped = body.add_kernel(&[], &elements, &step, (&x, &a, n))?;
        body.add_kernel(
            &[stepped.node()],
            &one_block,
            &residual,
            (
                &x,
                &a,
                n,
                TOLERANCE,
                MAX_ITERATIONS,
                &worst,
                &iterations,
                again,
            ),
        )?;
    }
    // Before the loop: the input into a, the first guess x = a, the count to 0.
    // SAFETY: `input` holds N floats, outlives the graph (declared before it) and is only
    // written by the host between launches, after the stream has finished.
    let (into_a, into_x) = unsafe {
        (
            graph.add_memcpy_raw(&[], a.as_raw(), input.as_raw(), 4 * N)?,
            graph.add_memcpy_raw(&[], x.as_raw(), input.as_raw(), 4 * N)?,
        )
    };
    let reset = graph.add_memset(&[], &iterations, 0i32)?;
    graph.add_while(&[into_a, into_x, reset], &again, &body)?;
    drop(body);
    let exec = graph.instantiate()?;

    let mut report = Vec::new();
    for (top, seed) in [(100.0f32, 7u64), (1e8, 8)] {
        let values = numbers(N, top, seed);
        input.as_host_mut_slice::<f32>()?.copy_from_slice(&values);
        let started = Instant::now();
        exec.launch(&stream)?;
        stream.sync()?;
        let took = started.elapsed();
        let (count, residual) = (iterations.to_vec::<i32>()?[0], worst.to_vec::<f32>()?[0]);
        let roots = x.to_vec::<f32>()?;
        let error = roots
            .iter()
            .zip(&values)
            .map(|(&root, &value)| ((root - value.sqrt()) / value.sqrt()).abs())
            .fold(0f32, f32::max);
        if !(residual <= TOLERANCE && count < MAX_ITERATIONS && error < 1e-5) {
            return Err(cuda_safe::Error::invalid_argument(format!(
                "roots of numbers up to {top}: residual {residual:e} after {count} iterations, \
                 largest error against the CPU {error:e}"
            )));
        }
        report.push(format!(
            "up to {top:e}: {count} iterations in {:.0} us (residual {residual:.1e}, error {error:.1e})",
            took.as_secs_f64() * 1e6
        ));
    }
    exec.close()?;
    println!(
        "square roots of {N} numbers by Newton's method in one graph launch each, looping on \
         the GPU until the residual is under {TOLERANCE:e}: {}",
        report.join("; ")
    );
    Ok(())
}
