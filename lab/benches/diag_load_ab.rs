//! In-process A/B of a CUBIN load and kernel lookup: `ObjectCode::from_cubin` (the image
//! checked first) + `get_kernel`, `ObjectCode::from_compiled` of code whose check already
//! passed (what a cache hit loads) + `get_kernel`, and the raw `cuLibraryLoadData` +
//! `cuLibraryGetKernel` of `driver_floor.c`, each followed by its unload, alternating in one
//! process round after round.
//!
//! `diag_load_ab [ROUNDS]` (default 21) prints the median per-load time of each and the median
//! of the per-round ratios against the raw path.

use std::process::ExitCode;
use std::time::Instant;

#[path = "common/raw_load.rs"]
mod raw_load;

use cuda_safe::sys::driver;
use cuda_safe::{CodeKind, Device, ObjectCode, Program, ProgramOptions, Result};
use raw_load::check;

const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, size_t n) {\n  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\n";
const LOADS: usize = 200;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
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

/// One raw load, lookup and unload of `cubin`.
fn raw(cubin: &[u8]) -> Result<()> {
    let (library, kernel) = raw_load::load_get(cubin, c"saxpy")?;
    // SAFETY: the library just loaded, unloaded once; its kernel is not used after.
    unsafe { check("cuLibraryUnload", driver()?.cuLibraryUnload(library)?)? };
    std::hint::black_box(kernel);
    Ok(())
}

fn run(rounds: usize) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    let compiled = Program::new(SAXPY, options)?.compile(CodeKind::Cubin)?;
    let code = compiled.code().clone();
    let cubin = code.bytes().to_vec();
    // The first load checks the image and marks `code` checked for every later load of it.
    drop(ObjectCode::from_compiled(&code)?.get_kernel("saxpy")?);
    let (mut checked, mut trusted, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for variant in (0..3).map(|i| (i + round) % 3) {
            let start = Instant::now();
            for _ in 0..LOADS {
                match variant {
                    0 => drop(ObjectCode::from_cubin(&cubin)?.get_kernel("saxpy")?),
                    1 => drop(ObjectCode::from_compiled(&code)?.get_kernel("saxpy")?),
                    _ => raw(&cubin)?,
                }
            }
            let per = start.elapsed().as_secs_f64() * 1e6 / LOADS as f64;
            [&mut checked, &mut trusted, &mut plain][variant].push(per);
        }
    }
    let ratio = |ours: &[f64]| {
        let mut ratios: Vec<f64> = ours.iter().zip(&plain).map(|(a, b)| a / b).collect();
        median(&mut ratios)
    };
    let (checked_ratio, trusted_ratio) = (ratio(&checked), ratio(&trusted));
    println!(
        "AB load_get_checked   ours {:>8.3} us  ratio {checked_ratio:.3}",
        median(&mut checked)
    );
    println!(
        "AB load_get_trusted   ours {:>8.3} us  ratio {trusted_ratio:.3}",
        median(&mut trusted)
    );
    println!("AB load_get_raw       raw  {:>8.3} us", median(&mut plain));
    println!("cubin {} bytes", cubin.len());
    Ok(())
}
