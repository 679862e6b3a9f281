//! Where a fresh process's disk hit goes: each step timed first in a fresh process of its own
//! (11 per step), beside the same reads and driver calls made raw from this Rust binary.
//!
//! `diag_disk_hit` populates a cache (compiling the SAXPY of `disk_hit_floor.c` through
//! `KernelCache`), then prints the median of each step:
//!
//! - `raw_read`: `std::fs::read` of the entry file, as the floor reads its CUBIN;
//! - `raw_load_get`: `cuLibraryLoadData` + `cuLibraryGetKernel` of the entry's code, raw;
//! - `key`: `Program::cache_key_for_compiler` with the version given;
//! - `key_get`: that key and `FileStreamProgramCache::get`;
//! - `compile_cached`: the natural hit (`Program::compile_cached`, no version given);
//! - `load_get`: `CompiledProgram::load` + `get_kernel` after `compile_cached`;
//! - `kernel_cache`: `KernelCache::kernel`, the whole hit as a user writes it.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

#[path = "common/raw_load.rs"]
mod raw_load;

use cuda_safe::cache::{FileStreamProgramCache, ProgramCache};
use cuda_safe::{CodeKind, Device, Error, KernelCache, Program, ProgramOptions, Result};

const SAXPY: &str = "extern \"C\" __global__ void saxpy(float a, const float* __restrict__ x,\n    const float* __restrict__ y, float* out, size_t n) {\n  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a * x[i] + y[i];\n}\n";
const RUNS: usize = 11;
const STEPS: [&str; 7] = [
    "raw_read",
    "raw_load_get",
    "key",
    "key_get",
    "compile_cached",
    "load_get",
    "kernel_cache",
];

fn failed(what: impl std::fmt::Display) -> Error {
    Error::invalid_argument(what.to_string())
}

fn us(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

fn setup() -> Result<(Device, Program)> {
    let device = Device::new(0)?;
    device.set_current()?;
    let options = ProgramOptions::default().arch(format!("sm_{}", device.arch()?));
    Ok((device, Program::new(SAXPY, options)?))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [step, dir, version] if step.starts_with("--") => {
            step_in_child(&step[2..], Path::new(dir), version)
        }
        _ => parent(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One step, timed first in this fresh process; prints its microseconds.
fn step_in_child(step: &str, dir: &Path, version: &str) -> Result<()> {
    let (_device, program) = setup()?;
    let disk = FileStreamProgramCache::new(dir)?;
    if step == "raw_read" {
        // The entry's file name is its key: keying first warms what the other steps time cold.
        let key = program.cache_key_for_compiler(CodeKind::Cubin, version)?;
        let entry = disk.entry_path(&key);
        let start = Instant::now();
        std::hint::black_box(std::fs::read(&entry).map_err(failed)?);
        println!("{:.3}", us(start));
        return Ok(());
    }
    let start = Instant::now();
    match step {
        "raw_load_get" => {
            let code = disk.get(&program.cache_key_for_compiler(CodeKind::Cubin, version)?)?;
            let code = code.ok_or_else(|| failed("no entry"))?;
            let start = Instant::now();
            std::hint::black_box(raw_load::load_get(code.bytes(), c"saxpy")?);
            println!("{:.3}", us(start));
            return Ok(());
        }
        "key" => {
            std::hint::black_box(program.cache_key_for_compiler(CodeKind::Cubin, version)?);
        }
        "key_get" => {
            let key = program.cache_key_for_compiler(CodeKind::Cubin, version)?;
            std::hint::black_box(disk.get(&key)?.ok_or_else(|| failed("no entry"))?);
        }
        "compile_cached" => {
            std::hint::black_box(program.compile_cached(CodeKind::Cubin, &disk)?);
        }
        "load_get" => {
            let hit = program.compile_cached(CodeKind::Cubin, &disk)?;
            let start = Instant::now();
            std::hint::black_box(hit.load()?.get_kernel("saxpy")?);
            println!("{:.3}", us(start));
            return Ok(());
        }
        "kernel_cache" => {
            let kernels = KernelCache::new(disk);
            std::hint::black_box(kernels.kernel(&program, CodeKind::Cubin, "saxpy")?);
        }
        other => return Err(failed(format!("unknown step {other}"))),
    }
    println!("{:.3}", us(start));
    Ok(())
}

fn parent() -> Result<()> {
    let (_device, program) = setup()?;
    let dir = std::env::temp_dir().join(format!("cuda-safe-diag-disk-hit-{}", std::process::id()));
    let exe = std::env::current_exe().map_err(failed)?;
    {
        let kernels = KernelCache::new(FileStreamProgramCache::new(&dir)?);
        kernels.kernel(&program, CodeKind::Cubin, "saxpy")?;
    }
    let (major, minor) = cuda_safe::nvrtc_version()?;
    let version = format!("{major}.{minor}");
    let dir_text = dir.to_string_lossy().into_owned();
    for step in STEPS {
        let mut values = Vec::new();
        for _ in 0..RUNS {
            let output = Command::new(&exe)
                .args([format!("--{step}"), dir_text.clone(), version.clone()])
                .output()
                .map_err(failed)?;
            let text = String::from_utf8_lossy(&output.stdout);
            let value: f64 = text.trim().parse().map_err(|_| {
                failed(format!(
                    "{step}: {text}{}",
                    String::from_utf8_lossy(&output.stderr)
                ))
            })?;
            values.push(value);
        }
        values.sort_by(f64::total_cmp);
        println!(
            "STEP {step:<16} {:>9.2} us  [{:.2}-{:.2}]",
            values[RUNS / 2],
            values[0],
            values[RUNS - 1]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
