//! NVTX ranges around kernel launches, for Nsight Compute's NVTX filter: `inside_kernel` is
//! launched inside a push/pop range named `inside` (and a domain's start/end range), and
//! `outside_kernel` before and after it, outside every range. Profiled with
//!
//! ```text
//! cargo build --release -p cuda-safe --example nvtx_ranges
//! ncu --nvtx --nvtx-include "inside/" target/release/examples/nvtx_ranges
//! ```
//!
//! Nsight Compute profiles `inside_kernel` only (one result); without the filter it profiles all
//! three launches. Under Nsight Systems (`nsys profile --trace=cuda,nvtx`), the timeline shows
//! the ranges and the mark. Without a profiler the annotations cost one relaxed load each.
//!
//! With no driver or GPU it prints one line saying what is missing and exits with status 1.

use std::process::ExitCode;

use cuda_safe::nvtx::{self, Domain, EventAttributes};
use cuda_safe::{CodeKind, Device, LaunchConfig, Program, ProgramOptions, Result, launch};

const SOURCE: &str = r#"
extern "C" __global__ void inside_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}
extern "C" __global__ void outside_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] - 1.0f;
}
"#;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    println!("NVTX tool attached: {}", nvtx::is_enabled());
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let code = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?;
    let inside = code.get_kernel("inside_kernel")?;
    let outside = code.get_kernel("outside_kernel")?;

    const N: usize = 1 << 20;
    let mut x = pool.allocate_from_host(&vec![1.0f32; N], &stream)?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    let n = N as i32;

    // SAFETY: `outside_kernel` updates n floats, which `x` holds.
    unsafe { launch(&stream, &config, &outside, (&mut x, n))? };
    let example = Domain::new("cuda-safe-example");
    {
        let _inside = nvtx::range_with(&EventAttributes::new("inside").color(0xff76_b900));
        let _phase = example.range_start("phase");
        // SAFETY: `inside_kernel` updates n floats, which `x` holds.
        unsafe { launch(&stream, &config, &inside, (&mut x, n))? };
        nvtx::mark("launched inside");
    }
    // SAFETY: as the first launch.
    unsafe { launch(&stream, &config, &outside, (&mut x, n))? };

    let result = x.to_vec::<f32>()?;
    // (1 - 1) * 2 + 1 - 1 = 0
    assert!(result.iter().all(|&value| value == 0.0), "kernels ran");
    println!("three launches, one inside the range \"inside\": done");
    Ok(())
}
