//! In-process A/B of the launch rows of `bench/floors/driver_floor.c`: the crate's `launch`
//! and the raw `cuLaunchKernel` it wraps alternate in one process, round after round, on the
//! same kernel and stream, so a difference under the cross-process noise shows.
//!
//! `diag_launch_ab [ROUNDS]` (default 21) prints, for an empty kernel and SAXPY's 5 arguments,
//! the median over rounds of the host's time per launch (2,000 launches queued back to back,
//! then a sync) for the crate and for the raw call, and the median of the per-round ratios
//! (crate / raw: above 1 is slower).

use std::ffi::c_void;
use std::process::ExitCode;
use std::time::Instant;

use cuda_safe::sys::{CUfunction, driver};
use cuda_safe::{CodeKind, Device, Error, LaunchConfig, Program, ProgramOptions, Result, launch};

/// Launches queued back to back per measurement.
const LAUNCHES: usize = 2000;

const SOURCE: &str = "extern \"C\" __global__ void empty() {}\n\
extern \"C\" __global__ void saxpy(float a, const float* x, const float* y, float* out, size_t n) {\n\
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n\
  if (i < n) out[i] = a * x[i] + y[i];\n}\n";

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run(rounds: usize) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    println!("INFO device {}", device.name()?);
    let stream = device.create_stream(Default::default())?;
    let code = Program::new(SOURCE, ProgramOptions::default())?
        .compile(CodeKind::Cubin)?
        .load()?;
    let (empty, saxpy) = (code.get_kernel("empty")?, code.get_kernel("saxpy")?);
    let pool = device.default_memory_resource()?;
    let n = 1024usize;
    let x = pool.allocate_from_host(&vec![1.0f32; n], &stream)?;
    let y = pool.allocate_from_host(&vec![2.0f32; n], &stream)?;
    let mut out = pool.allocate_zeroed::<f32>(n, &stream)?;
    let one = LaunchConfig::for_num_elements(1, 1)?;
    let config = LaunchConfig::for_num_elements(n, 256)?;
    let raw = driver()?;
    let raw_stream = stream.as_raw();
    let (xp, yp, op) = (x.as_raw(), y.as_raw(), out.as_raw());
    let a = 2.0f32;
    let grid = n.div_ceil(256) as u32;
    let launch_raw = |function: CUfunction, grid: u32, block: u32, params: *mut *mut c_void| {
        // SAFETY: a live kernel of this context, its parameters as `params` lays them out.
        let code = unsafe {
            raw.cuLaunchKernel(
                function,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                raw_stream,
                params,
                std::ptr::null_mut(),
            )
        }?;
        match code.0 {
            0 => Ok(()),
            other => Err(Error::unexpected("cuLaunchKernel", format!("code {other}"))),
        }
    };
    for name in ["empty", "saxpy_5args"] {
        let mut figures: [Vec<f64>; 2] = Default::default();
        for round in 0..rounds {
            for use_raw in [round % 2 == 1, round % 2 == 0] {
                stream.sync()?;
                let start = Instant::now();
                for _ in 0..LAUNCHES {
                    match (name, use_raw) {
                        ("empty", false) => {
                            // SAFETY: `empty` takes no argument.
                            unsafe { launch(&stream, &one, &empty, ())? }
                        }
                        ("empty", true) => {
                            launch_raw(empty.as_raw() as CUfunction, 1, 1, std::ptr::null_mut())?
                        }
                        (_, false) => {
                            // SAFETY: SAXPY over n floats of the three buffers.
                            unsafe { launch(&stream, &config, &saxpy, (a, &x, &y, &mut out, n))? }
                        }
                        (_, true) => {
                            let mut params: [*mut c_void; 5] = [
                                (&raw const a).cast_mut().cast(),
                                (&raw const xp).cast_mut().cast(),
                                (&raw const yp).cast_mut().cast(),
                                (&raw const op).cast_mut().cast(),
                                (&raw const n).cast_mut().cast(),
                            ];
                            launch_raw(
                                saxpy.as_raw() as CUfunction,
                                grid,
                                256,
                                params.as_mut_ptr(),
                            )?
                        }
                    }
                }
                figures[usize::from(use_raw)]
                    .push(start.elapsed().as_secs_f64() * 1e6 / LAUNCHES as f64);
            }
        }
        stream.sync()?;
        let [ours, raw_us] = &figures;
        let mut ratios: Vec<f64> = ours.iter().zip(raw_us).map(|(o, r)| o / r).collect();
        let (mut ours, mut raw_us) = (ours.clone(), raw_us.clone());
        println!(
            "AB launch_{name}_enqueue_us crate {:.3} raw {:.3} ratio {:.3} rounds {rounds}",
            median(&mut ours),
            median(&mut raw_us),
            median(&mut ratios)
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let rounds = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(21);
    match run(rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("diag_launch_ab: {error}");
            ExitCode::FAILURE
        }
    }
}
